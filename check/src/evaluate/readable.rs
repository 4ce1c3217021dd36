//! `readable`: the bundle validates. Each record read counts as checked; each problem of the
//! bundle's validation is a finding — a file or record that could not be read (no other rule saw
//! it), or a part of the bundle that does not fit the others (files outside the layout, a
//! manifest that disagrees with the files) — and the problems it found beyond its caps are
//! counted.

use diagwire::ProblemKind;

use super::{Evaluator, Input, Stream, Tally};

/// The evaluator of `readable`.
#[derive(Debug)]
pub(crate) struct Readable;

impl Evaluator for Readable {
    fn take(&mut self, input: &Input<'_>, _: &Stream, out: &mut Tally<'_>) {
        match input {
            Input::Record => out.checked += 1,
            Input::Problem(p) => {
                let why = match p.kind {
                    ProblemKind::Layout | ProblemKind::Manifest => {
                        "as `diagwire validate` reports it"
                    }
                    _ => "so no rule saw it",
                };
                out.find(
                    p.location.clone(),
                    Vec::new(),
                    format!("{} ({}), {why}", p.message, p.kind.as_str()),
                )
            }
            Input::Omitted(n) => out.total += n,
            _ => {}
        }
    }
}
