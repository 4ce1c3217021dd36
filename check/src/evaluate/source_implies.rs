//! `source_implies`: in a struct of a snapshot block, a source field with the `when` value implies
//! a value of its field (`must_be`), so that an inference is not taken for an observation.

use serde_json::Value;

use super::{BlockIn, Evaluator, Input, Reads, Stream, Tally};
use crate::rulebook::SourceImplies;
use crate::verdict::Witness;

/// The evaluator of `source_implies`.
#[derive(Debug)]
pub(crate) struct SourceImpliesEval {
    p: SourceImplies,
}

impl SourceImpliesEval {
    /// The evaluator of these parameters.
    pub fn new(p: &SourceImplies) -> Self {
        SourceImpliesEval { p: p.clone() }
    }

    fn block(&self, b: &BlockIn<'_>, out: &mut Tally<'_>) {
        let si = &self.p;
        for inst in b.found.iter().filter(|i| i.type_name == si.type_name) {
            out.checked += 1;
            let source = inst.str_of(&si.source);
            if source.as_deref() == Some(si.when.as_str())
                && inst.str_of(&si.field).as_deref() != Some(si.must_be.as_str())
            {
                let obj = b.value_at(&inst.ptr);
                let shown = obj
                    .get(&si.field)
                    .map_or_else(|| "absent".to_owned(), Value::to_string);
                out.find(
                    b.at(&format!("{}/{}", inst.ptr, si.field)),
                    vec![Witness {
                        location: b.at(&inst.ptr),
                        value: obj,
                    }],
                    format!(
                        "`{}.{}` is {shown} with `{}: {}`, but a {} value must read `{}` so that an inference is not taken for an observation",
                        si.type_name, si.field, si.source, si.when, si.when, si.must_be
                    ),
                );
            }
        }
    }
}

impl Evaluator for SourceImpliesEval {
    fn reads(&self) -> Reads {
        Reads {
            event_values: Vec::new(),
            blocks: true,
            block_types: diagwire::v1::CONTRACT
                .get(&self.p.type_name)
                .map(|t| t.name)
                .into_iter()
                .collect(),
        }
    }

    fn take(&mut self, input: &Input<'_>, _: &Stream, out: &mut Tally<'_>) {
        if let Input::Block(b) = input {
            self.block(b, out);
        }
    }
}
