//! `manifest_run`: every record names the bundle's run (the manifest's, or the run directory's
//! name without a manifest).

use std::collections::BTreeMap;

use serde_json::Value;

use super::{End, Evaluator, Input, Kept, Reads, Stream, Tally, note, tags_with};

/// The evaluator of `manifest_run`.
#[derive(Debug, Default)]
pub(crate) struct ManifestRun {
    /// Every run named, with its first record and how many records name it.
    runs: BTreeMap<String, (Kept, u64)>,
}

impl Evaluator for ManifestRun {
    fn reads(&self) -> Reads {
        Reads {
            event_values: tags_with(|f| f.key == "run_id"),
            blocks: false,
            block_types: Vec::new(),
        }
    }

    fn take(&mut self, input: &Input<'_>, _: &Stream, out: &mut Tally<'_>) {
        let runs = &mut self.runs;
        match input {
            Input::Boot { identity, loc, .. } => {
                out.checked += 1;
                note(runs, &identity.run_id, loc, "/run_id", || {
                    Value::String(identity.run_id.clone())
                });
            }
            Input::Snapshot {
                snapshot: s, loc, ..
            } => {
                out.checked += 2;
                note(runs, &s.run_id, loc, "/run_id", || {
                    Value::String(s.run_id.clone())
                });
                note(runs, &s.identity.run_id, loc, "/identity/run_id", || {
                    Value::String(s.identity.run_id.clone())
                });
            }
            Input::Event(e) => {
                let Some(v) = e.value else { return };
                if let Some(run) = v.str_of("run_id") {
                    out.checked += 1;
                    note(runs, &run, e.loc, "/run_id", || v.value());
                }
            }
            _ => {}
        }
    }

    fn finish(self: Box<Self>, end: &End<'_>, out: &mut Tally<'_>) {
        let expected = &end.run;
        for (run, (kept, n)) in self.runs {
            if run == *expected {
                continue;
            }
            out.find(
                kept.loc.clone(),
                vec![kept.witness()],
                format!("{n} record(s) name run `{run}`, but the bundle is run `{expected}`"),
            );
        }
    }
}
