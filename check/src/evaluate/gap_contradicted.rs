//! `gap_contradicted`: no value of a snapshot block is both reported natively (its source field
//! says so) and declared unaskable (the block's `api_gaps` names the field's gap).

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
            block_types: super::types_with(|f| f.gap.is_some() && f.source.is_some()),
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
                let said = inst.str_of(src);
                if let Some(said) = said.filter(|s| {
                    inst.declares(gap)
                        && inst.has(f.key)
                        && diagwire::REPORTED_SOURCES.contains(&s.as_ref())
                }) {
                    out.find(
                        b.at(&format!("{}/{}", inst.ptr, f.key)),
                        vec![
                            Witness {
                                location: b.at(&inst.ptr),
                                value: b.value_at(&inst.ptr),
                            },
                            Witness {
                                location: b.at(&format!("/{}", blocks::GAP_LIST)),
                                value: b.value_at(&format!("/{}", blocks::GAP_LIST)),
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
