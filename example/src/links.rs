//! Connections between the members in the script: joins, dials (relayed, then hole-punched),
//! metadata exchange, the relay outage's lost connections and redials, and what the stages see
//! after the orchestrator exits.

use diagwire::v1::*;

use crate::script::*;
use crate::world::*;

impl Script<'_> {
    /// Joins through the orchestrator, then the stages find and dial each other.
    pub(crate) fn joins(&mut self) {
        let mut joined: Vec<usize> = Vec::new();
        for k in 1..NODES {
            let j = self.specs[k].boot + 900;
            let l = lat(ORCH, k);
            self.emit(j, k, dial_started(self.id(ORCH), 1));
            let d = self.rng.range(620, 980);
            self.dial_success(k, ORCH, j + d, 1, d);
            self.at(j + d + l, ORCH, Op::Touch(Touch::JoinRequest { from: k }));
            let orch_alive = j + d + l + 2;
            self.emit(
                orch_alive,
                ORCH,
                swim_transition(
                    self.id(k),
                    PeerState::Unknown,
                    PeerState::Alive,
                    "join_request",
                ),
            );
            self.alive_at[ORCH][k] = Some(orch_alive);
            self.metadata(orch_alive + 3, ORCH, k);
            let resp = j + d + 2 * l + 3;
            self.at(
                resp,
                k,
                Op::Touch(Touch::JoinResponse {
                    from: ORCH,
                    members: joined.len() as u64 + 2,
                }),
            );
            self.emit(
                resp + 1,
                k,
                swim_transition(
                    self.id(ORCH),
                    PeerState::Unknown,
                    PeerState::Alive,
                    "join_response",
                ),
            );
            self.alive_at[k][ORCH] = Some(resp + 1);
            self.metadata(resp + 4, k, ORCH);
            // The orchestrator dials back; its connection goes through the relay too.
            let back = orch_alive + 40;
            self.emit(back, ORCH, dial_started(self.id(k), 1));
            let dd = self.rng.range(540, 900);
            self.dial_success(ORCH, k, back + dd, 1, dd);
            // Earlier stages are named in the join response; they learn of `k` through gossip.
            for &i in &joined {
                self.emit(
                    resp + 6,
                    k,
                    NodeMapUpdate::new(self.id(i), "join_response", true),
                );
                self.stage_pair(k, i, resp + 20, "join_response");
                let g = orch_alive + self.rng.range(700, 1_100);
                self.emit(
                    g,
                    i,
                    GossipReceived::new(self.id(ORCH), GossipPayloadKind::SwimPiggyback, 132, 2),
                );
                self.emit(
                    g + 1,
                    i,
                    NodeMapUpdate::new(self.id(k), "swim_gossip", true),
                );
                self.stage_pair(i, k, g + 15, "gossip");
            }
            joined.push(k);
        }
    }

    /// Stage `a` dials stage `b` at `t`: relayed first, then hole-punched to a direct path.
    pub(crate) fn stage_pair(&mut self, a: usize, b: usize, t: u64, reason: &str) {
        self.emit(t, a, dial_started(self.id(b), 1));
        let d = 2 * lat(a, b) + self.rng.range(60, 140);
        self.dial_success(a, b, t + d, 1, d);
        let alive = t + d + 2 * lat(a, b) + 2;
        self.emit(
            alive,
            a,
            swim_transition(self.id(b), PeerState::Unknown, PeerState::Alive, reason),
        );
        self.alive_at[a][b] = Some(alive);
        self.metadata(alive + 3, a, b);
        let punch = t + d + self.rng.range(1_200, 2_600);
        self.emit(
            punch,
            a,
            conn_type_changed(self.id(b), ConnType::Relay, ConnType::Direct),
        );
    }

    /// `n` receives `from`'s SWIM metadata, which the gossip layer carried.
    pub(crate) fn metadata(&mut self, t: u64, n: usize, from: usize) {
        self.emit(
            t - 1,
            n,
            GossipReceived::new(
                self.id(from),
                GossipPayloadKind::Other("node_metadata".to_owned()),
                96,
                1,
            ),
        );
        self.emit(t, n, metadata_received(self.specs, from));
    }

    pub(crate) fn addr(&self, n: usize) -> String {
        match &self.specs[n].rental {
            Some(r) => format!("{}:41641", r.ip),
            None => "192.168.1.23:41641".to_owned(),
        }
    }

    /// A successful dial: the QUIC handshake at its end, then the outcome. Links to the
    /// orchestrator, and the first dial between two stages, go through the relay.
    pub(crate) fn dial_success(&mut self, a: usize, b: usize, t: u64, attempt: u32, duration: u64) {
        let hs = (2 * lat(a, b) + 14).min(duration - 1);
        let mut started = HandshakeStarted::new(
            self.id(b),
            HandshakeRole::Client,
            self.addr(a),
            self.addr(b),
        );
        if a == ORCH || b == ORCH || self.dials[a][b].is_empty() {
            started.via_relay = Some(RELAY_URL.to_owned());
        }
        self.emit(t - hs, a, started);
        let mut done = HandshakeOutcome::new(self.id(b), HandshakeResult::Success, hs - 1);
        done.cipher_suite_selected = Some("TLS13_AES_128_GCM_SHA256".to_owned());
        self.emit(t - 1, a, done);
        self.dials[a][b].push(t);
        self.emit(
            t,
            a,
            DialOutcome::new(self.id(b), attempt, DialResult::Success, duration),
        );
    }

    /// The relay outage: session flips, lost connections, redials.
    pub(crate) fn outage(&mut self) {
        for n in 0..NODES {
            let specs = self.specs;
            let s = &specs[n];
            let (lost, retry, back) = (s.relay_lost, s.relay_retry, s.relay_back);
            self.emit(
                lost,
                n,
                relay_change(
                    RelaySessionStatus::Connected,
                    RelaySessionStatus::Disconnected,
                ),
            );
            self.emit(
                retry,
                n,
                relay_change(
                    RelaySessionStatus::Disconnected,
                    RelaySessionStatus::Connecting,
                ),
            );
            self.emit(
                back,
                n,
                relay_change(
                    RelaySessionStatus::Connecting,
                    RelaySessionStatus::Connected,
                ),
            );
        }
        for k in 1..NODES {
            // The orchestrator notices its relayed connections are gone.
            let lo = RELAY_DOWN + self.rng.range(2_500, 3_300);
            self.conn_lost(ORCH, k, lo);
            // The stage notices, and redials until the relay is back.
            let tl = RELAY_DOWN + self.rng.range(2_600, 3_200);
            self.conn_lost(k, ORCH, tl);
            self.emit(tl + 150, k, ConnectionCacheMiss::new(self.id(ORCH)));
            let up = link_back(self.specs, k, ORCH);
            let mut d = tl + 151;
            let mut attempt = 1;
            loop {
                self.emit(d, k, dial_started(self.id(ORCH), attempt));
                if d + DIAL_TIMEOUT <= up {
                    let took = DIAL_TIMEOUT + self.rng.range(0, 3);
                    self.emit(
                        d + took,
                        k,
                        DialOutcome::new(self.id(ORCH), attempt, DialResult::Timeout, took),
                    );
                    d += took + 1_000;
                    attempt += 1;
                } else {
                    let done = (d + 400).max(up + self.rng.range(300, 700));
                    self.dial_success(k, ORCH, done, attempt, done - d);
                    self.emit(
                        done + 2,
                        k,
                        conn_type_changed(self.id(ORCH), ConnType::None, ConnType::Relay),
                    );
                    self.emit(
                        done + lat(k, ORCH) + 3,
                        ORCH,
                        conn_type_changed(self.id(k), ConnType::None, ConnType::Relay),
                    );
                    break;
                }
            }
        }
    }

    pub(crate) fn conn_lost(&mut self, a: usize, b: usize, t: u64) {
        self.conn_closed(a, b, t, "connection lost: timed out");
    }

    pub(crate) fn conn_closed(&mut self, a: usize, b: usize, t: u64, reason: &str) {
        self.emit(
            t,
            a,
            conn_type_changed(self.id(b), ConnType::Relay, ConnType::None),
        );
        self.emit(
            t + 1,
            a,
            ConnectionCacheInvalidated::new(self.id(b), self.generation(a, b, t), reason),
        );
    }

    /// After the orchestrator's process exits, each stage sees its connection to it closed and
    /// redials; the redials are still in flight when the collector assembles the bundle.
    pub(crate) fn after_exit(&mut self) {
        for k in 1..NODES {
            let seen = ORCH_EXIT + lat(ORCH, k) + self.rng.range(20, 60);
            self.conn_closed(k, ORCH, seen, "connection lost: closed by peer");
            self.emit(seen + 150, k, ConnectionCacheMiss::new(self.id(ORCH)));
            self.emit(seen + 151, k, dial_started(self.id(ORCH), 1));
        }
    }

    pub(crate) fn cache_hit(&mut self, a: usize, b: usize, t: u64) {
        self.emit(
            t,
            a,
            ConnectionCacheHit::new(self.id(b), self.generation(a, b, t)),
        );
    }
}
