//! `readable`: every file and record of the layout could be read. Each record read counts as
//! checked; each file or record that could not be read is a finding (no other rule saw it).

use super::{Evaluator, Input, Stream, Tally};

/// The evaluator of `readable`.
#[derive(Debug)]
pub(crate) struct Readable;

impl Evaluator for Readable {
    fn take(&mut self, input: &Input<'_>, _: &Stream, out: &mut Tally<'_>) {
        match input {
            Input::Record => out.checked += 1,
            Input::Problem(p) => out.find(
                p.location.clone(),
                Vec::new(),
                format!("{} ({}), so no rule saw it", p.message, p.kind.as_str()),
            ),
            _ => {}
        }
    }
}
