//! A deterministic event stream with the mix of a real three-node run, for benchmarks and tests.
//!
//! The simulation is coarse but keeps the proportions of a real N=3 run: every node runs one SWIM
//! probe per protocol period (probe, ping, piggybacked gossip, ack, cached-connection lookups, the
//! occasional dial, timeout and transition), the HTTP sink adds a `clock_sample` after every
//! one-second flush, the probe scheduler and SWIM metadata tick every few seconds, the relay tunnel
//! flaps now and then, and the orchestrator drives inference requests through the two stages.
//! The same seed always gives the same records.

use serde_json::{Map, Value, json};

use crate::legacy::event::{ConnType, DialOutcome, Event, EventRecord, NodeId, PeerState};

/// Number of records the decode benchmark uses (about 2 MB of compact JSON).
pub const BENCH_RECORDS: usize = 6_000;

/// The seed the decode benchmark uses.
pub const BENCH_SEED: u64 = 0x5eed_d1a6;

use crate::rng::SplitMix64 as Rng;

fn random_node_id(rng: &mut Rng) -> NodeId {
    let mut out = [0u8; 32];
    for chunk in out.chunks_mut(8) {
        chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
    }
    NodeId(out)
}

const NODES: usize = 3;
const RELAY_URL: &str = "https://use1-1.relay.n0.iroh-canary.iroh.link./";
const START_MS: u64 = 1_747_728_000_000;
const PERIOD_MS: u64 = 1_000;

struct Node {
    id: NodeId,
    /// The aggregator's event counter.
    seq: u64,
    /// The HTTP sink's own counter, used by clock samples.
    sink_seq: u64,
    /// Offset of this node's wall clock from the simulation clock.
    skew_ms: u64,
    probe_seq: u64,
    next_target: usize,
    cached: [bool; NODES],
    generation: [u64; NODES],
    conn_type: [ConnType; NODES],
    opinion: [PeerState; NODES],
    metadata_version: u64,
    relay_connected: bool,
}

struct Sim {
    rng: Rng,
    nodes: Vec<Node>,
    out: Vec<EventRecord>,
    now: u64,
}

impl Sim {
    fn new(seed: u64) -> Self {
        let mut rng = Rng(seed);
        let nodes = (0..NODES)
            .map(|i| Node {
                id: random_node_id(&mut rng),
                seq: 0,
                sink_seq: 0,
                skew_ms: rng.range(0, 40) + 7 * i as u64,
                probe_seq: 0,
                next_target: (i + 1) % NODES,
                cached: [false; NODES],
                generation: [0; NODES],
                conn_type: [ConnType::Relay; NODES],
                opinion: [PeerState::Unknown; NODES],
                metadata_version: 0,
                relay_connected: false,
            })
            .collect();
        Sim {
            rng,
            nodes,
            out: Vec::new(),
            now: START_MS,
        }
    }

    fn id(&self, node: usize) -> NodeId {
        self.nodes[node].id
    }

    /// Records `event` on `node`, `dt` ms after the current simulation time.
    fn emit(&mut self, node: usize, dt: u64, event: Event) {
        let n = &mut self.nodes[node];
        n.seq += 1;
        self.out.push(EventRecord {
            node_id: n.id,
            monotonic_seq: n.seq,
            wall_ms: self.now + n.skew_ms + dt,
            event,
        });
    }

    fn boot(&mut self) {
        for x in 0..NODES {
            self.emit(
                x,
                0,
                Event::Custom {
                    kind: "iroh_api_missing".into(),
                    fields: json!({
                        "iroh_version": "0.35.0",
                        "fields": [
                            "RemoteInfo.conn_type",
                            "RemoteInfo.latency_ms",
                            "RemoteInfo.last_used_ms",
                            "RemoteInfo.last_received_ms",
                            "TransportAddrInfo.source",
                            "RelayTunnel.status"
                        ],
                        "note": "the linked iroh version does not report these values; read them as unavailable, not zero"
                    }),
                },
            );
            self.emit(
                x,
                1,
                Event::Error {
                    component: "host_introspect".into(),
                    message:
                        "nf_conntrack_count unreadable: No such file or directory (os error 2)"
                            .into(),
                    peer: None,
                },
            );
            self.emit(
                x,
                3,
                Event::RelayChanged {
                    old_url: None,
                    new_url: Some(RELAY_URL.into()),
                },
            );
            self.relay_status(x, 4, "unknown", "connecting");
            self.relay_status(x, 90, "connecting", "connected");
            if x == 0 {
                let our = self.id(0).to_hex();
                self.emit(
                    0,
                    120,
                    Event::Custom {
                        kind: "register_name".into(),
                        fields: json!({
                            "name": "orchestrator",
                            "actor_addr_hex": format!("{}:0000000000000001", &our[..16]),
                            "our_node_id_hex": our,
                            "wall_ms": self.now + 120,
                        }),
                    },
                );
            } else {
                let pid = 4_000 + x as u32 * 17;
                let command = format!(
                    "/opt/worker/bin/llama-stage --stage {} --model /models/q4.gguf",
                    x - 1
                );
                self.emit(
                    x,
                    100,
                    Event::Custom {
                        kind: "worker_starting".into(),
                        fields: json!({ "stage_index": x - 1, "command": command.clone() }),
                    },
                );
                self.emit(
                    x,
                    101,
                    Event::SubprocessSpawned {
                        label: format!("worker-stage-{}", x - 1),
                        pid,
                        command,
                    },
                );
                self.emit(
                    x,
                    2_400,
                    Event::Custom {
                        kind: "worker_ready".into(),
                        fields: json!({ "stage_index": x - 1, "pid": pid, "load_ms": 2_290, "layers": [0, 16] }),
                    },
                );
            }
        }
    }

    fn relay_status(&mut self, node: usize, dt: u64, from: &str, to: &str) {
        self.nodes[node].relay_connected = to == "connected";
        self.emit(
            node,
            dt,
            Event::RelaySessionStateChanged {
                relay_url: Some(RELAY_URL.into()),
                from_status: from.into(),
                to_status: to.into(),
                reason: None,
            },
        );
    }

    /// Everything a send from `x` to `y` records on `x`: the cache lookup, maybe a dial, the send.
    fn send(&mut self, x: usize, y: usize, dt: u64, kind: &str, size: u32) {
        let peer = self.id(y);
        if self.nodes[x].cached[y] {
            let generation = self.nodes[x].generation[y];
            self.emit(x, dt, Event::ConnectionCacheHit { peer, generation });
        } else {
            self.emit(x, dt, Event::ConnectionCacheMiss { peer });
            let mut attempt = 1;
            loop {
                self.emit(
                    x,
                    dt,
                    Event::DialStarted {
                        peer,
                        attempt,
                        timeout_ms: 10_000,
                    },
                );
                let roll = self.rng.range(0, 19);
                let (outcome, duration_ms) = match roll {
                    0 => (DialOutcome::Timeout, 10_000),
                    1 => (
                        DialOutcome::Error(
                            "connection lost: timed out waiting for handshake".into(),
                        ),
                        self.rng.range(50, 900),
                    ),
                    _ => (DialOutcome::Success, self.rng.range(20, 400)),
                };
                let ok = outcome == DialOutcome::Success;
                self.emit(
                    x,
                    dt + duration_ms,
                    Event::DialOutcome {
                        peer,
                        attempt,
                        outcome,
                        duration_ms,
                    },
                );
                if ok || attempt == 3 {
                    break;
                }
                attempt += 1;
            }
            self.nodes[x].cached[y] = true;
            self.nodes[x].generation[y] += 1;
            let generation = self.nodes[x].generation[y];
            self.emit(x, dt, Event::ConnectionCacheHit { peer, generation });
            let old = self.nodes[x].conn_type[y];
            let new = if self.rng.chance(3, 4) {
                ConnType::Direct
            } else {
                ConnType::Mixed
            };
            if old != new {
                self.nodes[x].conn_type[y] = new;
                self.emit(x, dt + 1, Event::IrohConnTypeChanged { peer, old, new });
            }
        }
        self.emit(
            x,
            dt,
            Event::MessageSent {
                peer,
                kind: kind.into(),
                size,
            },
        );
    }

    /// What `y` records when a message from `x` arrives, with its piggybacked gossip.
    fn receive(&mut self, y: usize, x: usize, dt: u64, kind: &str, size: u32, gossip: bool) {
        let peer = self.id(x);
        self.emit(
            y,
            dt,
            Event::MessageReceived {
                peer,
                kind: kind.into(),
                size,
            },
        );
        if gossip {
            let items = self.rng.range(0, 3) as u32;
            self.emit(
                y,
                dt,
                Event::GossipReceived {
                    source_peer: peer,
                    payload_kind: "swim_piggyback".into(),
                    payload_bytes: 12 + 46 * items,
                    item_count: items,
                },
            );
        }
    }

    fn transition(&mut self, x: usize, y: usize, dt: u64, to: PeerState, reason: &str) {
        let from = self.nodes[x].opinion[y];
        if from == to {
            return;
        }
        self.nodes[x].opinion[y] = to;
        let peer = self.id(y);
        self.emit(
            x,
            dt,
            Event::SwimTransition {
                peer,
                from,
                to,
                reason: reason.into(),
            },
        );
    }

    /// One SWIM protocol period of node `x`.
    fn swim_round(&mut self, x: usize) {
        let y = self.nodes[x].next_target;
        self.nodes[x].next_target = if (y + 1) % NODES == x {
            (y + 2) % NODES
        } else {
            (y + 1) % NODES
        };
        let z = (0..NODES).find(|&n| n != x && n != y).expect("three nodes");
        self.nodes[x].probe_seq += 1;
        let sequence = self.nodes[x].probe_seq;
        let target = self.id(y);
        let dt = self.rng.range(0, 40);
        self.emit(
            x,
            dt,
            Event::SwimProbeSent {
                target,
                sequence,
                kind: "direct".into(),
            },
        );
        let ping = self.rng.range(70, 240) as u32;
        self.send(x, y, dt, "swim_ping", ping);
        if self.rng.chance(1, 40) {
            // No ack in the direct phase: ask the third node to probe for us.
            self.emit(
                x,
                dt + 300,
                Event::SwimProbeTimedOut {
                    target,
                    sequence,
                    kind: "direct".into(),
                    budget_ticks: 3,
                },
            );
            self.emit(
                x,
                dt + 301,
                Event::SwimProbeSent {
                    target,
                    sequence,
                    kind: "indirect".into(),
                },
            );
            self.send(x, z, dt + 301, "swim_ping_req", ping + 34);
            self.receive(z, x, dt + 330, "swim_ping_req", ping + 34, true);
            if self.rng.chance(1, 2) {
                self.send(z, x, dt + 420, "swim_indirect_ack", 64);
                self.receive(x, z, dt + 450, "swim_indirect_ack", 64, true);
                self.emit(
                    x,
                    dt + 451,
                    Event::SwimProbeAcked {
                        target,
                        sequence,
                        kind: "indirect".into(),
                    },
                );
            } else {
                self.emit(
                    x,
                    dt + 900,
                    Event::SwimProbeTimedOut {
                        target,
                        sequence,
                        kind: "indirect".into(),
                        budget_ticks: 6,
                    },
                );
                self.transition(
                    x,
                    y,
                    dt + 900,
                    PeerState::Suspect,
                    "indirect probe timed out",
                );
                self.nodes[x].cached[y] = false;
                let generation = self.nodes[x].generation[y];
                self.emit(
                    x,
                    dt + 901,
                    Event::ConnectionCacheInvalidated {
                        peer: target,
                        generation,
                        reason: "probe_timeout".into(),
                    },
                );
            }
            return;
        }
        let rtt = self.rng.range(2, 60);
        self.receive(y, x, dt + rtt / 2, "swim_ping", ping, true);
        let ack = self.rng.range(50, 180) as u32;
        self.send(y, x, dt + rtt / 2 + 1, "swim_ack", ack);
        self.receive(x, y, dt + rtt, "swim_ack", ack, true);
        self.emit(
            x,
            dt + rtt,
            Event::SwimProbeAcked {
                target,
                sequence,
                kind: "direct".into(),
            },
        );
        let reason = if self.nodes[x].opinion[y] == PeerState::Unknown {
            "joined"
        } else {
            "refuted suspicion"
        };
        self.transition(x, y, dt + rtt, PeerState::Alive, reason);
    }

    /// The sink's flush: a clock sample with the sink's own sequence number.
    fn clock_sample(&mut self, x: usize) {
        let one_way = self.rng.range(3, 45);
        let turnaround = self.rng.range(0, 3);
        let n = &mut self.nodes[x];
        n.sink_seq += 1;
        let sent = self.now + 995;
        let recv = sent + one_way;
        let reply = recv + turnaround;
        self.out.push(EventRecord {
            node_id: n.id,
            monotonic_seq: n.sink_seq,
            wall_ms: reply + one_way + n.skew_ms,
            event: Event::Custom {
                kind: "clock_sample".into(),
                fields: json!({
                    "node_send_ms_echoed": sent + n.skew_ms,
                    "collector_recv_ms": recv,
                    "collector_send_ms": reply,
                }),
            },
        });
    }

    fn probes(&mut self, x: usize) {
        for (kind, target) in [
            ("udp_echo", "collector (203.0.113.10:47000)"),
            (
                "udp_relay",
                "use1-1.relay.n0.iroh-canary.iroh.link (3.208.61.88:3478)",
            ),
        ] {
            self.emit(
                x,
                500,
                Event::ProbeSent {
                    target: target.into(),
                    kind: kind.into(),
                },
            );
            let (rtt_ms, outcome) = if self.rng.chance(1, 25) {
                (None, "timeout")
            } else {
                (Some(self.rng.range(8, 90)), "ok")
            };
            self.emit(
                x,
                500 + rtt_ms.unwrap_or(2_000),
                Event::ProbeReceived {
                    target: target.into(),
                    kind: kind.into(),
                    rtt_ms,
                    outcome: outcome.into(),
                },
            );
        }
    }

    fn metadata(&mut self, x: usize) {
        self.nodes[x].metadata_version += 1;
        let version = self.nodes[x].metadata_version;
        // Hashes are full u64 values, many above 2^53.
        let payload_hash = self.rng.next_u64();
        self.emit(
            x,
            700,
            Event::SwimMetadataSent {
                version,
                payload_hash,
            },
        );
        for y in (0..NODES).filter(|&y| y != x) {
            let peer = self.id(x);
            self.emit(
                y,
                760,
                Event::SwimMetadataReceived {
                    peer,
                    version,
                    payload_hash,
                },
            );
            let accepted = self.rng.chance(9, 10);
            self.emit(
                y,
                761,
                Event::NodeMapUpdate {
                    peer,
                    from_source: "swim_metadata".into(),
                    accepted,
                },
            );
        }
    }

    /// The orchestrator sends a request down the pipeline and the last stage answers.
    fn inference(&mut self, request: u64) {
        let size = self.rng.range(4_000, 40_000) as u32;
        self.send(0, 1, 200, "inference_request", size);
        self.receive(1, 0, 230, "inference_request", size, false);
        self.send(1, 2, 600, "activation", size * 3);
        self.receive(2, 1, 640, "activation", size * 3, false);
        let byte_size = self.rng.range(200, 3_000);
        let send_outcome = if self.rng.chance(1, 30) {
            "timeout"
        } else {
            "success"
        };
        let target_peer = self.id(0);
        self.send(2, 0, 900, "inference_response", byte_size as u32);
        self.emit(
            2,
            901,
            Event::InferenceResponseSent {
                target_peer,
                request_id: format!("req-{request:08x}"),
                byte_size,
                send_outcome: send_outcome.into(),
            },
        );
        if send_outcome == "success" {
            self.receive(0, 2, 930, "inference_response", byte_size as u32, false);
        }
    }

    fn run(mut self, records: usize) -> Vec<EventRecord> {
        self.boot();
        let mut tick = 0u64;
        let mut request = 0u64;
        while self.out.len() < records {
            self.now += PERIOD_MS;
            tick += 1;
            for x in 0..NODES {
                self.swim_round(x);
                if tick % 5 == x as u64 {
                    self.probes(x);
                }
                if tick % 10 == 3 * x as u64 {
                    self.metadata(x);
                }
                if self.rng.chance(1, 45) {
                    // An idle connection is dropped; the next send redials.
                    let y = (x + 1 + self.rng.range(0, 1) as usize) % NODES;
                    if self.nodes[x].cached[y] {
                        self.nodes[x].cached[y] = false;
                        let generation = self.nodes[x].generation[y];
                        let peer = self.id(y);
                        self.emit(
                            x,
                            820,
                            Event::ConnectionCacheInvalidated {
                                peer,
                                generation,
                                reason: "idle_timeout".into(),
                            },
                        );
                    }
                }
                if self.rng.chance(1, 90) && self.nodes[x].relay_connected {
                    self.relay_status(x, 850, "connected", "connecting");
                } else if !self.nodes[x].relay_connected && self.rng.chance(1, 2) {
                    self.relay_status(x, 850, "connecting", "connected");
                }
                self.clock_sample(x);
            }
            if tick.is_multiple_of(2) {
                request += 1;
                self.inference(request);
            }
        }
        self.out.truncate(records);
        self.out
    }
}

/// The first `records` records of a simulated three-node run.
///
/// The three nodes' records are interleaved in one list; a real batch file holds one node's
/// records, but the records themselves, and so the cost of decoding them, are the same.
pub fn run(records: usize, seed: u64) -> Vec<EventRecord> {
    Sim::new(seed).run(records)
}

/// The records as one compact JSON array with keys in the order swactor's serializer writes them
/// (the body of `POST /diag/events`).
pub fn node_order_json(records: &[EventRecord]) -> String {
    serde_json::to_string(records).expect("event records serialize")
}

/// The records as one compact JSON array with every object's keys in alphabetical order, as the
/// collector rewrites every record file.
pub fn collector_order_json(records: &[EventRecord]) -> String {
    let value = serde_json::to_value(records).expect("event records serialize");
    serde_json::to_string(&sort_keys(value)).expect("a JSON value serializes")
}

/// `value` with the keys of every object, at every depth, in alphabetical order.
pub fn sort_keys(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let mut out = Map::new();
            for (k, v) in entries {
                out.insert(k, sort_keys(v));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sort_keys).collect()),
        other => other,
    }
}
