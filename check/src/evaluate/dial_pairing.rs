//! `dial_pairing`: `DialStarted` and `DialOutcome` of one node, peer and attempt pair up. The
//! outcome side finds an outcome without an earlier unanswered start at once; the start side
//! decides at the end of the stream, when a start is still unanswered although its node's stream
//! went on past the attempt's budget and the grace (inconclusive otherwise).

use std::collections::{HashMap, VecDeque};

use diagwire::v1::Event;

use super::{End, Ev, Evaluator, Input, Stream, Tally};
use crate::rulebook::{DialPairing, DialSide};

/// A dial: node, peer, attempt.
type DialKey = (usize, [u8; 32], u32);

/// The evaluator of `dial_pairing`.
#[derive(Debug)]
pub(crate) struct DialPairingEval {
    p: DialPairing,
    starts: u64,
    /// Starts without an outcome yet, with their budgets, per node, peer and attempt; an outcome
    /// answers the most recent one (so a lost outcome leaves the start it belonged to open).
    open: HashMap<DialKey, VecDeque<(u64, Ev)>>,
}

impl DialPairingEval {
    /// The evaluator of these parameters.
    pub fn new(p: &DialPairing) -> Self {
        DialPairingEval {
            p: p.clone(),
            starts: 0,
            open: HashMap::new(),
        }
    }
}

impl Evaluator for DialPairingEval {
    fn take(&mut self, input: &Input<'_>, _: &Stream, out: &mut Tally<'_>) {
        let Input::Event(e) = input else { return };
        match &e.record.event {
            Event::DialStarted(s) => {
                self.starts += 1;
                self.open
                    .entry((e.node, s.peer.0, s.attempt))
                    .or_default()
                    .push_back((s.timeout_ms, e.ev()));
            }
            Event::DialOutcome(o) => {
                let matched = self
                    .open
                    .get_mut(&(e.node, o.peer.0, o.attempt))
                    .and_then(VecDeque::pop_back)
                    .is_some();
                if self.p.side == DialSide::Outcome {
                    out.checked += 1;
                    if !matched {
                        out.find(
                            e.loc.clone(),
                            vec![e.witness()],
                            format!(
                                "`DialOutcome` of attempt {} to peer {} has no earlier unmatched `DialStarted` of the same node, peer and attempt",
                                o.attempt,
                                o.peer.short()
                            ),
                        );
                    }
                }
            }
            _ => {}
        }
    }

    fn finish(self: Box<Self>, end: &End<'_>, out: &mut Tally<'_>) {
        if self.p.side != DialSide::Start {
            return;
        }
        let mut open: Vec<&(u64, Ev)> = self.open.values().flatten().collect();
        open.sort_by_key(|(_, e)| e.ord);
        out.checked = self.starts;
        for (timeout, start) in open {
            let deadline = start
                .wall
                .saturating_add(*timeout)
                .saturating_add(self.p.grace_ms);
            let last = end.stream.nodes[start.node].last_wall.unwrap_or(0);
            if last > deadline {
                out.find(
                    start.loc.clone(),
                    vec![start.witness()],
                    format!(
                        "`DialStarted` has no `DialOutcome` of the same node, peer and attempt, although the node's stream goes on {} ms past the attempt's {timeout} ms budget",
                        last - start.wall.saturating_add(*timeout)
                    ),
                );
            } else {
                out.inconclusive += 1;
            }
        }
    }
}
