//! `known_values`: the values of the listed open string enums are among the contract's values.

use super::Fields;
use diagwire::shape::{TypeKind, ValueShape};
use diagwire::v1::CONTRACT;

use super::{Evaluator, EventIn, Input, Reads, Stream, Tally, tags_with, with_pointer};
use crate::rulebook::{KnownValues, event_fields};
use crate::verdict::Witness;

/// The evaluator of `known_values`.
#[derive(Debug)]
pub(crate) struct KnownValuesEval {
    p: KnownValues,
}

impl KnownValuesEval {
    /// The evaluator of these parameters.
    pub fn new(p: &KnownValues) -> Self {
        KnownValuesEval { p: p.clone() }
    }

    fn event(&self, e: &EventIn<'_>, v: &Fields<'_>, out: &mut Tally<'_>) {
        let tag = e.tag;
        let Some(fields) = event_fields(tag) else {
            return;
        };
        for f in fields {
            let ValueShape::Ref(t) = f.value else {
                continue;
            };
            if !self.p.types.iter().any(|n| n == t) {
                continue;
            }
            let Some(TypeKind::Enum { values, .. }) = CONTRACT.get(t).map(|x| x.kind) else {
                continue;
            };
            let Some(val) = v.str_of(f.key) else {
                continue;
            };
            out.checked += 1;
            if !values.contains(&val.as_ref()) {
                out.find(
                    with_pointer(e.loc, &format!("/{}", f.key)),
                    vec![Witness {
                        location: e.loc.clone(),
                        value: v.value(),
                    }],
                    format!(
                        "`{tag}.{}` is `{val}`, which is not one of the contract's `{t}` values ({})",
                        f.key,
                        values.join(", ")
                    ),
                );
            }
        }
    }
}

impl Evaluator for KnownValuesEval {
    fn reads(&self) -> Reads {
        Reads {
            event_values: tags_with(
                |f| matches!(f.value, ValueShape::Ref(t) if self.p.types.iter().any(|n| n == t)),
            ),
            blocks: false,
            block_types: Vec::new(),
        }
    }

    fn take(&mut self, input: &Input<'_>, _: &Stream, out: &mut Tally<'_>) {
        if let Input::Event(e) = input
            && let Some(v) = e.value
        {
            self.event(e, v, out);
        }
    }
}
