//! `monotonic`: `monotonic_seq` never goes back within a node's stream, except for a restart from
//! 0 or 1 that one of the node's boot records explains (`Custom` kinds numbered by another counter
//! are left out).

use std::collections::HashMap;

use diagwire::Location;

use super::{End, Ev, Evaluator, Input, Stream, Tally};
use crate::rulebook::Monotonic;

/// The evaluator of `monotonic`.
#[derive(Debug)]
pub(crate) struct MonotonicEval {
    p: Monotonic,
    /// Per node: the latest `monotonic_seq`, where and what it was.
    last: HashMap<usize, (u64, Location, String)>,
    /// Restarts, each to be explained by a boot record of its node.
    restarts: Vec<(usize, Ev, Ev)>,
}

impl MonotonicEval {
    /// The evaluator of these parameters.
    pub fn new(p: &Monotonic) -> Self {
        MonotonicEval {
            p: p.clone(),
            last: HashMap::new(),
            restarts: Vec::new(),
        }
    }
}

impl Evaluator for MonotonicEval {
    fn take(&mut self, input: &Input<'_>, stream: &Stream, out: &mut Tally<'_>) {
        let Input::Event(e) = input else { return };
        if e.custom_kind
            .is_some_and(|k| self.p.except_custom_kinds.iter().any(|x| x == k))
        {
            return;
        }
        let (node, seq) = (e.node, e.record.monotonic_seq);
        let Some((prev, prev_loc, prev_text)) = self.last.get_mut(&node) else {
            self.last
                .insert(node, (seq, e.loc.clone(), e.text.to_owned()));
            return;
        };
        out.checked += 1;
        if seq < *prev {
            let before = Ev {
                node,
                seq: *prev,
                wall: 0,
                ord: 0,
                loc: prev_loc.clone(),
                text: prev_text.clone(),
            };
            if seq <= 1 {
                self.restarts.push((node, before, e.ev()));
            } else {
                out.find(
                    e.loc.clone(),
                    vec![before.witness(), e.witness()],
                    format!(
                        "`monotonic_seq` goes back from {prev} to {seq} in the stream of node `{}`",
                        stream.label(node)
                    ),
                );
            }
        }
        *prev = seq;
        prev_loc.clone_from(e.loc);
        prev_text.clear();
        prev_text.push_str(e.text);
    }

    fn finish(self: Box<Self>, end: &End<'_>, out: &mut Tally<'_>) {
        let mut used: HashMap<usize, u64> = HashMap::new();
        for (node, before, after) in self.restarts {
            let info = &end.stream.nodes[node];
            let allowed = info.boots.saturating_sub(1);
            let u = used.entry(node).or_default();
            if *u < allowed {
                *u += 1;
                continue;
            }
            out.find(
                after.loc.clone(),
                vec![before.witness(), after.witness()],
                format!(
                    "`monotonic_seq` restarts from {} at {} in the stream of node `{}`, which has only {} boot record(s) to explain a restart",
                    before.seq, after.seq, info.label, info.boots
                ),
            );
        }
    }
}
