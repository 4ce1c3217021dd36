//! `gap_contradicted`: no value of a snapshot block is both reported natively (its source field
//! says so) and declared unaskable (the block's `api_gaps` names the field's gap).

use serde_json::Value;

use super::{Evaluator, Input, Reads, Stream, Tally};
use crate::blocks;
use crate::verdict::Witness;

/// The evaluator of `gap_contradicted`.
#[derive(Debug)]
pub(crate) struct GapContradicted;

impl Evaluator for GapContradicted {
    fn reads(&self) -> Reads {
        Reads {
            event_values: Vec::new(),
            blocks: true,
        }
    }

    fn take(&mut self, input: &Input<'_>, _: &Stream, out: &mut Tally<'_>) {
        let Input::Block(b) = input else { return };
        for inst in b.found {
            for f in inst.fields {
                let (Some(gap), Some(src)) = (f.gap, f.source) else {
                    continue;
                };
                out.checked += 1;
                let said = inst.obj.get(src).and_then(Value::as_str);
                if let Some(said) = said.filter(|s| {
                    inst.declares(gap) && inst.has(f.key) && diagwire::REPORTED_SOURCES.contains(s)
                }) {
                    out.find(
                        b.at(&format!("{}/{}", inst.ptr, f.key)),
                        vec![
                            Witness {
                                location: b.at(&inst.ptr),
                                value: Value::Object(inst.obj.clone()),
                            },
                            Witness {
                                location: b.at(&format!("/{}", blocks::GAP_LIST)),
                                value: b.value.get(blocks::GAP_LIST).cloned().unwrap_or(Value::Null),
                            },
                        ],
                        format!(
                            "`{}.{}` says it was reported natively (`{src}: {said}`) while the block's `api_gaps` declares `{gap}`, the gap that says it cannot be asked for",
                            inst.type_name, f.key
                        ),
                    );
                }
            }
        }
    }
}
