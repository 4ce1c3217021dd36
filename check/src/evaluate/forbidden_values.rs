//! `forbidden_values`: a field of one event type never holds the listed values, although its type
//! (shared with another event) allows them.

use super::Fields;

use super::{Evaluator, EventIn, Input, Reads, Stream, Tally, known_tag, with_pointer};
use crate::rulebook::ForbiddenValues;
use crate::verdict::Witness;

/// The evaluator of `forbidden_values`.
#[derive(Debug)]
pub(crate) struct ForbiddenValuesEval {
    p: ForbiddenValues,
}

impl ForbiddenValuesEval {
    /// The evaluator of these parameters.
    pub fn new(p: &ForbiddenValues) -> Self {
        ForbiddenValuesEval { p: p.clone() }
    }

    fn event(&self, e: &EventIn<'_>, v: &Fields<'_>, out: &mut Tally<'_>) {
        let (f, tag) = (&self.p, e.tag);
        if tag != f.event {
            return;
        }
        out.checked += 1;
        let Some(val) = v.str_of(&f.field) else {
            return;
        };
        if f.values.iter().any(|x| *x == val) {
            out.find(
                with_pointer(e.loc, &format!("/{}", f.field)),
                vec![Witness {
                    location: e.loc.clone(),
                    value: v.value(),
                }],
                format!(
                    "`{tag}.{}` is `{val}`, which this event never holds (never: {})",
                    f.field,
                    f.values.join(", ")
                ),
            );
        }
    }
}

impl Evaluator for ForbiddenValuesEval {
    fn reads(&self) -> Reads {
        Reads {
            event_values: known_tag(&self.p.event).into_iter().collect(),
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
