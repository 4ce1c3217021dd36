//! SWIM in the script: each member's probe rounds over a shuffled member list, indirect probes,
//! suspicion, death and dead-member reprobes, with the per-probe events and gossip receipts.

use std::collections::VecDeque;

use diagwire::v1::*;

use crate::script::*;
use crate::world::*;

impl Script<'_> {
    /// SWIM of node `n`: a direct probe per protocol period (round robin over a shuffled member
    /// list), indirect probes through up to k helpers, suspicion, death and dead-member reprobes.
    pub(crate) fn swim(&mut self, n: usize) {
        let SwimTiming {
            probe_interval_ticks: interval,
            probe_timeout_ticks: timeout,
            suspicion_timeout_ticks: suspicion,
            indirect_probes_k: k,
            dead_reprobe_interval_ticks: reprobe,
            ..
        } = SWIM;
        let (interval, timeout, suspicion, reprobe) = (
            interval * TICK,
            timeout * TICK,
            suspicion * TICK,
            reprobe * TICK,
        );
        let Some(first) = self.alive_at[n].iter().flatten().min().copied() else {
            return;
        };
        let mut state: [PeerState; NODES] = std::array::from_fn(|_| PeerState::Unknown);
        let mut since = [0u64; NODES];
        let mut next_reprobe = [0u64; NODES];
        let mut order: VecDeque<usize> = VecDeque::new();
        let mut seq = 0u64;
        let mut t = first + self.rng.range(150, 700);
        let end = self.end(n);
        while t < end {
            for (m, st) in state.iter_mut().enumerate() {
                if m != n
                    && *st == PeerState::Unknown
                    && self.alive_at[n][m].is_some_and(|a| a <= t)
                {
                    *st = PeerState::Alive;
                }
            }
            // Suspicion timeouts.
            for m in 0..NODES {
                if state[m] == PeerState::Suspect && since[m] + suspicion <= t {
                    let dead = since[m] + suspicion;
                    self.emit(
                        dead,
                        n,
                        swim_transition(
                            self.id(m),
                            PeerState::Suspect,
                            PeerState::Dead,
                            "suspicion timeout",
                        ),
                    );
                    state[m] = PeerState::Dead;
                    next_reprobe[m] = dead + reprobe;
                }
            }
            // Dead members are reprobed on their own timer.
            for m in 0..NODES {
                if state[m] == PeerState::Dead && next_reprobe[m] <= t {
                    seq += 1;
                    let at = next_reprobe[m];
                    if self.direct_probe(n, m, at, seq, timeout) {
                        self.emit(
                            at + 2 * lat(n, m) + 4,
                            n,
                            swim_transition(
                                self.id(m),
                                PeerState::Dead,
                                PeerState::Alive,
                                "dead reprobe acked",
                            ),
                        );
                        self.recovered[n] = self.recovered[n].max(at + 2 * lat(n, m) + 4);
                        state[m] = PeerState::Alive;
                    } else {
                        next_reprobe[m] += reprobe;
                    }
                }
            }
            if order.is_empty() {
                let mut members: Vec<usize> = (0..NODES)
                    .filter(|&m| matches!(state[m], PeerState::Alive | PeerState::Suspect))
                    .collect();
                for i in (1..members.len()).rev() {
                    let j = self.rng.range(0, i as u64) as usize;
                    members.swap(i, j);
                }
                order.extend(members);
            }
            if let Some(m) = order.pop_front()
                && matches!(state[m], PeerState::Alive | PeerState::Suspect)
            {
                seq += 1;
                let rtt = 2 * lat(n, m) + 2;
                if self.direct_probe(n, m, t, seq, timeout) {
                    if state[m] == PeerState::Suspect {
                        self.emit(
                            t + rtt + 2,
                            n,
                            swim_transition(
                                self.id(m),
                                PeerState::Suspect,
                                PeerState::Alive,
                                "ack received",
                            ),
                        );
                        self.recovered[n] = self.recovered[n].max(t + rtt + 2);
                        state[m] = PeerState::Alive;
                    }
                    if self.gossip_window(t) && self.rng.range(0, 2) == 0 {
                        let items = self.rng.range(1, 3) as u32;
                        self.emit(
                            t + rtt + 1,
                            n,
                            GossipReceived::new(
                                self.id(m),
                                GossipPayloadKind::SwimPiggyback,
                                66 * items,
                                items,
                            ),
                        );
                    }
                } else {
                    // Indirect round through up to k helpers.
                    seq += 1;
                    let at = t + timeout + 1;
                    let helpers: Vec<usize> = (0..NODES)
                        .filter(|&h| h != n && h != m && state[h] == PeerState::Alive)
                        .take(k as usize)
                        .collect();
                    let mut acked = None;
                    if !helpers.is_empty() {
                        self.emit(at, n, self.probe_sent(n, m, seq, SwimProbeKind::Indirect));
                        for &h in &helpers {
                            if link_up(self.specs, n, h, at) {
                                self.at(
                                    at + lat(n, h),
                                    h,
                                    Op::Touch(Touch::PingReq { from: n, seq }),
                                );
                                let via = at + lat(n, h);
                                if link_up(self.specs, h, m, via) {
                                    let back = via + 2 * lat(h, m) + lat(h, n) + 3;
                                    acked = Some(acked.map_or(back, |a: u64| a.min(back)));
                                }
                            }
                        }
                    }
                    match (helpers.is_empty(), acked) {
                        (false, Some(back)) => {
                            self.emit(
                                back,
                                n,
                                self.probe_acked(n, m, seq, SwimProbeKind::Indirect, at, back),
                            );
                        }
                        (false, None) => {
                            self.emit(
                                t + interval - 100,
                                n,
                                self.probe_timed_out(
                                    n,
                                    m,
                                    seq,
                                    SwimProbeKind::Indirect,
                                    at,
                                    (interval - 100 - timeout) / TICK,
                                ),
                            );
                        }
                        (true, _) => {}
                    }
                    if acked.is_none() && state[m] == PeerState::Alive {
                        let s = t + interval - 99;
                        self.emit(
                            s,
                            n,
                            swim_transition(
                                self.id(m),
                                PeerState::Alive,
                                PeerState::Suspect,
                                "probe timeout",
                            ),
                        );
                        state[m] = PeerState::Suspect;
                        since[m] = s;
                    }
                }
            }
            t += interval + self.rng.range(0, 3);
        }
    }

    /// A direct probe; returns whether it was acked.
    pub(crate) fn direct_probe(
        &mut self,
        n: usize,
        m: usize,
        t: u64,
        seq: u64,
        timeout: u64,
    ) -> bool {
        self.emit(t, n, self.probe_sent(n, m, seq, SwimProbeKind::Direct));
        if link_up(self.specs, n, m, t) {
            let l = lat(n, m);
            self.at(t + l, m, Op::Touch(Touch::Ping { from: n, seq }));
            let rtt = 2 * l + self.rng.range(1, 5);
            self.emit(
                t + rtt,
                n,
                self.probe_acked(n, m, seq, SwimProbeKind::Direct, t, t + rtt),
            );
            true
        } else {
            self.emit(
                t + timeout,
                n,
                self.probe_timed_out(
                    n,
                    m,
                    seq,
                    SwimProbeKind::Direct,
                    t,
                    SWIM.probe_timeout_ticks,
                ),
            );
            false
        }
    }

    /// The trace id of `n`'s SWIM probe `seq`, shared by its sent, acked and timed-out events.
    pub(crate) fn probe_trace(&self, n: usize, seq: u64) -> String {
        format!("{}-swim-{seq}", self.specs[n].short())
    }

    pub(crate) fn probe_sent(
        &self,
        n: usize,
        m: usize,
        seq: u64,
        kind: SwimProbeKind,
    ) -> SwimProbeSent {
        let mut sent = SwimProbeSent::new(self.id(m), seq, kind);
        sent.trace_id = Some(self.probe_trace(n, seq));
        sent
    }

    pub(crate) fn probe_acked(
        &self,
        n: usize,
        m: usize,
        seq: u64,
        kind: SwimProbeKind,
        sent: u64,
        received: u64,
    ) -> SwimProbeAcked {
        let mut acked = SwimProbeAcked::new(self.id(m), seq, kind);
        acked.sent_at_ms = Some(self.specs[n].wall(sent));
        acked.received_at_ms = Some(self.specs[n].wall(received));
        acked.rtt_ms = Some(received - sent);
        acked.rtt_source = Some(ValueSource::Derived);
        acked.outcome = Some(SwimProbeOutcome::Success);
        acked.trace_id = Some(self.probe_trace(n, seq));
        acked
    }

    pub(crate) fn probe_timed_out(
        &self,
        n: usize,
        m: usize,
        seq: u64,
        kind: SwimProbeKind,
        sent: u64,
        budget_ticks: u64,
    ) -> SwimProbeTimedOut {
        let mut timed_out = SwimProbeTimedOut::new(self.id(m), seq, kind, budget_ticks);
        timed_out.sent_at_ms = Some(self.specs[n].wall(sent));
        timed_out.outcome = Some(SwimProbeOutcome::Timeout);
        timed_out.timeout_budget_ms = Some(budget_ticks * TICK);
        timed_out.trace_id = Some(self.probe_trace(n, seq));
        timed_out
    }

    pub(crate) fn gossip_window(&self, t: u64) -> bool {
        t < 12_000 || (22_000..31_000).contains(&t) || (36_000..42_000).contains(&t)
    }
}
