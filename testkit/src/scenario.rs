//! A synthetic run, for tests and benchmarks: an orchestrator and N pipeline stages that boot, go
//! through the whole run lifecycle (planning, weights, edges, readiness, prompts and tokens,
//! terminal outcome, teardown), dial each other, exchange messages, flip SWIM opinions and
//! connection types, probe the collector and post event batches with clock samples and periodic
//! and transition snapshots, as swactor's nodes do.
//!
//! Every random draw comes from one fixed-seed generator, so a [`Params`] always gives the same
//! bundle; two seeds give two runs of the same scenario (the same distributions), which is what a
//! simulated and a production bundle of one scenario should look like. [`Params::dial_success_scale`]
//! plants a distribution shift. Stage clocks are skewed (one by 1.3 s) and the clock samples say
//! so, so ordering across nodes only holds once the clocks are aligned.
//!
//! A [`Run`] is plain data: tests change its records (drop an event, add a duplicate, break a
//! field) and then write it with the bundle `Writer`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use diagwire::NodeId;
use diagwire::bundle::Writer;
use diagwire::v1::*;

use diagwire_runtime::SplitMix64;

/// The knobs of a scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// The run id.
    pub run_id: String,
    /// The seed of every random draw.
    pub seed: u64,
    /// Who wrote the bundle: `Sim` adds the simulator-only `links_applied` block.
    pub writer: WriterKind,
    /// Pipeline stages (besides the orchestrator).
    pub stages: u32,
    /// Length of the run in ms.
    pub duration_ms: u64,
    /// Mean time between dials from one node to one peer, in ms.
    pub dial_every_ms: f64,
    /// Messages per second per node and message kind.
    pub messages_per_s: f64,
    /// Factor on the duration of successful dials (1 = the scenario's own distribution).
    pub dial_success_scale: f64,
    /// Prompt/token rounds of the pipeline.
    pub requests: u32,
    /// Records per posted event batch.
    pub batch: usize,
}

impl Params {
    /// A one-minute run with two stages: small, every rule has something to check.
    pub fn small(seed: u64) -> Params {
        Params {
            run_id: "scenario-small".into(),
            seed,
            writer: WriterKind::Collector,
            stages: 2,
            duration_ms: 60_000,
            dial_every_ms: 8_000.0,
            messages_per_s: 0.5,
            dial_success_scale: 1.0,
            requests: 5,
            batch: 64,
        }
    }

    /// A ten-minute run with three stages: enough samples for the parity statistics.
    pub fn parity(seed: u64, writer: WriterKind) -> Params {
        Params {
            run_id: "scenario-parity".into(),
            seed,
            writer,
            stages: 3,
            duration_ms: 600_000,
            dial_every_ms: 4_000.0,
            messages_per_s: 1.0,
            dial_success_scale: 1.0,
            requests: 40,
            batch: 128,
        }
    }

    /// A long run with busy links, for benchmarks: about `mb` megabytes of records.
    pub fn bulk(seed: u64, mb: u64) -> Params {
        // Measured: a node-second of this mix is about 10 kB of the uncompressed archive
        // (pretty-printed records and tar headers).
        let duration_ms = (mb * 1_000_000 / 4 / 10_000).max(60) * 1000;
        Params {
            run_id: "scenario-bulk".into(),
            seed,
            writer: WriterKind::Collector,
            stages: 3,
            duration_ms,
            dial_every_ms: 10_000.0,
            messages_per_s: 1.0,
            dial_success_scale: 1.0,
            requests: 200,
            batch: 512,
        }
    }
}

/// One node of a run: its boot record, its event stream (in stream order, clock samples
/// included) and its snapshots.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The boot record.
    pub identity: Identity,
    /// Boot records of earlier processes of the node (written as `boot/boot-NNNNNN.json`).
    pub earlier_boots: Vec<Identity>,
    /// Every event, in the order the node posted them.
    pub events: Vec<EventRecord>,
    /// Every snapshot, in order.
    pub snapshots: Vec<Snapshot>,
    /// The finalize record (the orchestrator's).
    pub finalize: Option<Finalize>,
}

impl Node {
    /// The node's id.
    pub fn id(&self) -> NodeId {
        self.identity
            .node_id_hex
            .0
            .parse()
            .expect("OK because the scenario writes valid hex ids")
    }

    /// Index of the first event satisfying `pred`.
    pub fn find(&self, pred: impl Fn(&Event) -> bool) -> Option<usize> {
        self.events.iter().position(|e| pred(&e.event))
    }

    /// Removes and returns the first event satisfying `pred`.
    pub fn remove_first(&mut self, pred: impl Fn(&Event) -> bool) -> Option<EventRecord> {
        let i = self.find(pred)?;
        Some(self.events.remove(i))
    }

    /// Moves the first event satisfying `moved` to just after the first satisfying `anchor` (with
    /// the anchor's wall clock plus 1 ms) and renumbers the stream.
    pub fn move_after(&mut self, moved: impl Fn(&Event) -> bool, anchor: impl Fn(&Event) -> bool) {
        let Some(from) = self.find(moved) else {
            panic!("no event to move");
        };
        let mut e = self.events.remove(from);
        let to = self.find(anchor).expect("an anchor event");
        e.wall_ms = self.events[to].wall_ms + 1;
        self.events.insert(to + 1, e);
        self.renumber();
    }

    /// Numbers the node's events 1, 2, … in stream order (clock samples keep the sink's numbers).
    pub fn renumber(&mut self) {
        let mut seq = 0;
        for e in self.events.iter_mut().filter(|e| !is_clock_sample(e)) {
            seq += 1;
            e.monotonic_seq = seq;
        }
    }

    /// Appends an event after the node's last, with the next sequence number.
    pub fn push(&mut self, event: impl Into<Event>) -> &mut EventRecord {
        let seq = self
            .events
            .iter()
            .filter(|e| !is_clock_sample(e))
            .map(|e| e.monotonic_seq)
            .max()
            .unwrap_or(0)
            + 1;
        let wall = self.events.iter().map(|e| e.wall_ms).max().unwrap_or(0) + 1;
        self.events
            .push(EventRecord::new(self.id(), seq, wall, event));
        self.events
            .last_mut()
            .expect("OK because one was just pushed")
    }
}

/// Whether a record is a clock sample (numbered by the sink's own counter).
pub fn is_clock_sample(e: &EventRecord) -> bool {
    matches!(&e.event, Event::Custom(c) if matches!(c.payload, CustomPayload::ClockSample(_)))
}

/// A generated run.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The run id.
    pub run_id: String,
    /// Who wrote it.
    pub writer: BundleWriter,
    /// The orchestrator first, then the stages.
    pub nodes: Vec<Node>,
    /// Records per posted batch.
    pub batch: usize,
    /// The run's span on the collector's clock.
    pub span: (u64, u64),
}

impl Run {
    /// The node of that role (`orchestrator`) or stage index (`stage-1`).
    pub fn node_mut(&mut self, label: &str) -> &mut Node {
        self.nodes
            .iter_mut()
            .find(|n| label_of(&n.identity) == label)
            .unwrap_or_else(|| panic!("the scenario has no node `{label}`"))
    }

    /// The node of that label.
    pub fn node(&self, label: &str) -> &Node {
        self.nodes
            .iter()
            .find(|n| label_of(&n.identity) == label)
            .unwrap_or_else(|| panic!("the scenario has no node `{label}`"))
    }

    /// The bundle `Writer` holding every record.
    pub fn into_writer(self) -> Writer {
        let mut w = Writer::new(self.run_id, self.writer);
        w.collector_span(self.span.0, self.span.1);
        for n in &self.nodes {
            for b in &n.earlier_boots {
                w.boot(b);
            }
            w.boot(&n.identity);
            for chunk in n.events.chunks(self.batch.max(1)) {
                w.events(&n.identity.node_id_hex, chunk);
            }
            for s in &n.snapshots {
                w.snapshot(s);
            }
            if let Some(f) = &n.finalize {
                w.finalize(&n.identity.node_id_hex, f);
            }
        }
        w
    }

    /// Writes the bundle as `parent/<run_id>/…` and returns that directory.
    pub fn write_dir(self, parent: &Path) -> std::io::Result<PathBuf> {
        self.into_writer().write_dir(parent).map(|(d, _)| d)
    }

    /// Writes the bundle as a deterministic `.tar.gz` at `path`.
    pub fn write_tar_gz(self, path: &Path) -> std::io::Result<()> {
        let f = std::io::BufWriter::new(std::fs::File::create(path)?);
        self.into_writer().write_tar_gz(f).map(|_| ())
    }
}

/// The node label the bundle layout gives a boot record.
pub fn label_of(identity: &Identity) -> String {
    diagwire::layout::node_label(
        Some(&identity.role),
        identity.stage_index,
        &identity.node_id_hex.0,
    )
}

/// The iroh version every scenario node links.
pub const IROH_VERSION: &str = "0.96.0";
const T0: u64 = 1_780_000_000_000;
const RELAY: &str = "https://relay.scenario.example./";
const DIAL_TIMEOUT: u64 = 5_000;
const GAPS: [&str; 10] = [
    "RemoteInfo.conn_type",
    "RemoteInfo.latency_ms",
    "RemoteInfo.last_used_ms",
    "RemoteInfo.last_received_ms",
    "TransportAddrInfo.source",
    "RelayTunnel.status",
    "RelayTunnel.last_send_at_ms",
    "RelayTunnel.last_recv_at_ms",
    "RelayTunnel.tx_bytes_total",
    "RelayTunnel.rx_bytes_total",
];
const KINDS: [(&str, f64, f64); 3] = [
    ("activations", 65_536.0, 0.3),
    ("swim_gossip", 300.0, 0.4),
    ("inference_request", 2_048.0, 0.2),
];
const PROBES: [(&str, ProbeKind); 2] = [
    ("collector_udp_echo", ProbeKind::UdpEcho),
    ("relay-port-relay.scenario.example", ProbeKind::UdpRelay),
];

/// What happens on a node at one instant of true (collector) time.
#[derive(Debug, Clone)]
enum Act {
    Emit(Box<Event>),
    Snap(SnapshotTrigger),
    /// A snapshot right after the SWIM transition emitted just before.
    SnapAfterTransition,
}

#[derive(Debug, Clone)]
struct PeerState {
    opinion: diagwire::v1::PeerState,
    since: Option<u64>,
    history: Vec<StateTransition>,
    conn: ConnType,
    last_dial_started: Option<u64>,
    last_dial_outcome: Option<String>,
    last_dial_duration: Option<u64>,
    last_in: Option<u64>,
    last_out: Option<u64>,
    generation: u64,
}

struct Plan {
    acts: Vec<(u64, u32, Act)>,
    order: u32,
}

impl Plan {
    fn at(&mut self, t: u64, act: Act) {
        self.order += 1;
        self.acts.push((t, self.order, act));
    }
    fn emit(&mut self, t: u64, e: impl Into<Event>) {
        self.at(t, Act::Emit(Box::new(e.into())));
    }
}

fn skew(i: usize) -> i64 {
    [0, 40, -25, 1_300, 15][i % 5]
}

fn wall(t: u64, i: usize) -> u64 {
    (T0 as i64 + t as i64 + skew(i)) as u64
}

/// Generates the run.
// Nodes are indices into several parallel tables (ids, plans, latencies).
#[allow(clippy::needless_range_loop)]
pub fn generate(p: &Params) -> Run {
    let mut rng = SplitMix64::new(p.seed);
    let n = p.stages as usize + 1;
    let ids: Vec<NodeId> = (0..n)
        .map(|_| {
            let mut b = [0u8; 32];
            for chunk in b.chunks_mut(8) {
                chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
            }
            NodeId(b)
        })
        .collect();
    let hex: Vec<NodeIdHex> = ids.iter().map(NodeId::to_hex).collect();
    let run = p.run_id.as_str();
    let end = p.duration_ms;
    let mut plans: Vec<Plan> = (0..n)
        .map(|_| Plan {
            acts: Vec::new(),
            order: 0,
        })
        .collect();

    // Boot and the run lifecycle.
    let stages = p.stages;
    let edge_in = |s: u32| u64::from(s) + 100;
    let last_edge = edge_in(stages);
    for (i, plan) in plans.iter_mut().enumerate() {
        let t0 = 100 + 100 * i as u64;
        let mut started = NodeStarted::new(hex[i].clone());
        started.run_id = Some(run.to_owned());
        plan.emit(t0, started);
        plan.emit(t0 + 10, custom_iroh_missing());
        let mut available = NodeAvailable::new(hex[i].clone());
        available.run_id = Some(run.to_owned());
        plan.emit(t0 + 300, available);
    }
    let orch = &mut plans[0];
    orch.emit(2_000, PoolReady::new(run, hex.clone()));
    orch.emit(2_010, RunPlanned::new(run, stages));
    for s in 0..stages {
        orch.emit(
            2_020 + u64::from(s),
            StageProvisionStarted::new(run, s, hex[s as usize + 1].clone()),
        );
    }
    orch.emit(2_100, EdgeProvisionStarted::new(run, edge_in(0)));
    orch.emit(2_180, EdgeReady::new(run, edge_in(0), 1));
    orch.emit(2_110, EdgeProvisionStarted::new(run, last_edge));
    orch.emit(2_190, EdgeReady::new(run, last_edge, 2));
    let mut ready_at = 0u64;
    for s in 0..stages {
        let i = s as usize + 1;
        let plan = &mut plans[i];
        let dl = 2_200 + rng.below(400);
        plan.emit(2_100, WeightsDownloadStarted::new(run, s));
        plan.emit(dl, WeightsDownloaded::new(run, s));
        let loaded = dl + 300 + rng.below(300);
        plan.emit(loaded, WeightsLoaded::new(run, s, 1));
        let mut edges_ready = 0;
        for (k, edge) in [edge_in(s), edge_in(s + 1)].into_iter().enumerate() {
            let mut started = EdgeProvisionStarted::new(run, edge);
            started.stage_index = Some(s);
            plan.emit(2_200 + k as u64, started);
            let at = 2_400 + rng.below(500);
            let mut ready = EdgeReady::new(run, edge, 10 + k as u64);
            ready.stage_index = Some(s);
            plan.emit(at, ready);
            edges_ready = edges_ready.max(at);
        }
        let stage_ready = loaded.max(edges_ready) + 50;
        plan.emit(stage_ready, StageReady::new(run, s));
        ready_at = ready_at.max(stage_ready);
    }
    let barrier = ready_at + 200;
    plans[0].emit(barrier, ReadinessBarrierPassed::new(run));
    let work_end = end.saturating_sub(8_000).max(barrier + 1_000);
    let step = (work_end - barrier) / u64::from(p.requests.max(1) + 1);
    for r in 0..u64::from(p.requests) {
        let t = barrier + 100 + r * step.max(10);
        let object = 10_000 + r * 10;
        plans[0].emit(t, PromptInjected::new(run, edge_in(0), object, r));
        for s in 0..stages {
            let i = s as usize + 1;
            let ts = t + 20 + 30 * u64::from(s);
            let inbound = object + u64::from(s);
            plans[i].emit(ts, ObjectLoaded::new(run, s, edge_in(s), 10, inbound, r, 1));
            let mut started = ExecuteStepStarted::new(run, s, r * 100 + u64::from(s), 1);
            started.sequence = Some(r);
            plans[i].emit(ts + 1, started);
            plans[i].emit(
                ts + 20,
                ObjectProduced::new(run, s, edge_in(s + 1), 11, inbound + 1, r, 1),
            );
            let mut done = StepCompleted::new(run, s, r * 100 + u64::from(s), 1);
            done.sequence = Some(r);
            plans[i].emit(ts + 21, done);
        }
        let back = t + 30 + 30 * u64::from(stages);
        plans[0].emit(
            back,
            TokenReceived::new(run, last_edge, object + u64::from(stages), r),
        );
    }
    // A transient fault the stage recovers from: an edge send that ran past its budget.
    if stages > 0 {
        let mut fault = FaultDetected::new(FaultReason::Timeout, FaultComponent::Transport);
        fault.run_id = Some(run.to_owned());
        fault.stage_index = Some(0);
        fault.edge_id = Some(edge_in(1));
        fault.node_id_hex = Some(hex[1].clone());
        fault.detail = Some("send on the outbound edge timed out once; retried".to_owned());
        plans[1].emit(barrier + 150, fault);
    }
    let finish = end.saturating_sub(4_000);
    plans[0].emit(finish, RunCompleted::new(run));
    for s in 0..stages {
        plans[0].emit(
            finish + 10 + u64::from(s),
            StopRunSent::new(run, s, hex[s as usize + 1].clone()),
        );
        plans[s as usize + 1].emit(finish + 200 + rng.below(150), StageStopped::new(run, s));
    }
    plans[0].emit(finish + 800, RunTornDown::new(run));

    // Transport: dials, messages, SWIM, cache, connection types, probes.
    let lat = |a: usize, b: usize| 5 + ((a * 7 + b * 13) % 40) as u64;
    let quiet = end.saturating_sub(7_000);
    for a in 0..n {
        for b in 0..n {
            if a == b {
                continue;
            }
            // Dials.
            let mut t = 500 + (rng.exponential(p.dial_every_ms) as u64);
            while t < quiet {
                let u = rng.next_f64();
                let (outcome, d) = if u < 0.85 {
                    (
                        DialResult::Success,
                        (rng.lognormal(60.0, 0.5) * p.dial_success_scale).round() as u64,
                    )
                } else if u < 0.95 {
                    (DialResult::Timeout, DIAL_TIMEOUT)
                } else {
                    (DialResult::Refused, rng.lognormal(20.0, 0.4).round() as u64)
                };
                plans[a].emit(t, DialStarted::new(ids[b], 1, DIAL_TIMEOUT));
                plans[a].emit(t + d, DialOutcome::new(ids[b], 1, outcome, d));
                t += d + 1 + rng.exponential(p.dial_every_ms) as u64;
            }
            // SWIM opinions.
            let mut t = 3_000 + rng.exponential(60_000.0) as u64;
            while t < quiet {
                let suspect = rng.lognormal(3_000.0, 0.3) as u64;
                plans[a].emit(
                    t,
                    SwimTransition::new(
                        ids[b],
                        diagwire::v1::PeerState::Alive,
                        diagwire::v1::PeerState::Suspect,
                        "probe_timeout",
                    ),
                );
                plans[a].at(t + 1, Act::SnapAfterTransition);
                let back = t + suspect;
                if back >= quiet {
                    break;
                }
                // The acknowledgement that brings the peer back, just before the transition.
                let mut acked =
                    SwimProbeAcked::new(ids[b], t / 1_000, diagwire::v1::SwimProbeKind::Direct);
                acked.outcome = Some(diagwire::v1::SwimProbeOutcome::Success);
                plans[a].emit(back - 1, acked);
                plans[a].emit(
                    back,
                    SwimTransition::new(
                        ids[b],
                        diagwire::v1::PeerState::Suspect,
                        diagwire::v1::PeerState::Alive,
                        "ack",
                    ),
                );
                plans[a].at(back + 1, Act::SnapAfterTransition);
                t = back + rng.exponential(60_000.0) as u64;
            }
        }
        // Messages.
        for (kind, median, sigma) in KINDS {
            let mut t = 1_000 + rng.exponential(1000.0 / p.messages_per_s) as u64;
            while t < quiet {
                let mut b = rng.below(n as u64 - 1) as usize;
                if b >= a {
                    b += 1;
                }
                let size = rng.lognormal(median, sigma).round().clamp(1.0, 4e9) as u32;
                plans[a].emit(t, MessageSent::new(ids[b], kind, size));
                plans[b].emit(t + lat(a, b), MessageReceived::new(ids[a], kind, size));
                t += 1 + rng.exponential(1000.0 / p.messages_per_s) as u64;
            }
        }
        // Cache invalidations (about 1 a minute) and connection-type flips (about 2 a minute).
        for (rate, flip) in [(60_000.0, false), (30_000.0, true)] {
            let mut t = 2_000 + rng.exponential(rate) as u64;
            while t < quiet {
                let mut b = rng.below(n as u64 - 1) as usize;
                if b >= a {
                    b += 1;
                }
                if flip {
                    // The old and new types are filled in from the peer's state when played.
                    plans[a].emit(
                        t,
                        IrohConnTypeChanged::new(ids[b], ConnType::Direct, ConnType::Relay),
                    );
                } else {
                    plans[a].emit(t, ConnectionCacheInvalidated::new(ids[b], 0, "send_failed"));
                }
                t += rng.exponential(rate) as u64;
            }
        }
        // Probes every 10 s.
        let mut t = 1_500 + rng.below(1_000);
        while t < quiet {
            for (target, kind) in PROBES {
                plans[a].emit(t, ProbeSent::new(target, kind.clone()));
                let u = rng.next_f64();
                let outcome = if u < 0.9 {
                    ProbeOutcome::Ok
                } else if u < 0.98 {
                    ProbeOutcome::Timeout
                } else {
                    ProbeOutcome::Refused
                };
                let mut got = ProbeReceived::new(target, kind.clone(), outcome.clone());
                let d = if outcome == ProbeOutcome::Ok {
                    let rtt = rng.lognormal(25.0, 0.3).round() as u64;
                    got.rtt_ms = Some(rtt);
                    rtt
                } else {
                    2_000
                };
                plans[a].emit(t + d, got);
            }
            t += 10_000;
        }
        // Periodic snapshots, and the closing on-demand one.
        let mut t = 1_000 + 100 * a as u64;
        while t < end.saturating_sub(2_500) {
            plans[a].at(t, Act::Snap(SnapshotTrigger::Periodic));
            t += 5_000;
        }
        plans[a].at(
            end.saturating_sub(2_000) + 10 * a as u64,
            Act::Snap(SnapshotTrigger::OnDemand),
        );
    }

    let mut nodes = Vec::new();
    for (i, mut plan) in plans.into_iter().enumerate() {
        plan.acts.sort_by_key(|(t, o, _)| (*t, *o));
        let (role, stage) = if i == 0 {
            ("orchestrator", None)
        } else {
            ("stage", Some(i as u32 - 1))
        };
        let mut identity = Identity::new(
            hex[i].clone(),
            ids[i].short(),
            role,
            run,
            wall(50 + 100 * i as u64, i),
            0,
        );
        identity.stage_index = stage;
        identity.stage_count = Some(stages);
        identity.iroh_version = Some(IROH_VERSION.to_owned());
        identity.binary_version = Some("0.5.0".to_owned());
        identity.home_relay_url_at_boot = Some(RELAY.to_owned());
        identity.hostname = Some(format!("host-{i}"));
        let node = play(p, &mut rng, i, &ids, &hex, identity, plan.acts);
        nodes.push(node);
    }
    Run {
        run_id: p.run_id.clone(),
        writer: BundleWriter::new(
            p.writer.clone(),
            match p.writer {
                WriterKind::Sim => "swactor-sim",
                _ => "swactor-collector",
            },
            "0.5.0",
        ),
        nodes,
        batch: p.batch,
        span: (T0, T0 + end + 5_000),
    }
}

fn custom_iroh_missing() -> Event {
    let fields = IrohApiMissingFields::new(
        IROH_VERSION,
        GAPS.iter().map(|g| (*g).to_owned()).collect(),
        "the linked iroh exposes none of these; read them as could-not-ask",
    );
    Event::Custom(CustomEvent::new(CustomPayload::IrohApiMissing(fields)))
}

#[allow(clippy::too_many_arguments)]
fn play(
    p: &Params,
    rng: &mut SplitMix64,
    i: usize,
    ids: &[NodeId],
    hex: &[NodeIdHex],
    identity: Identity,
    acts: Vec<(u64, u32, Act)>,
) -> Node {
    let n = ids.len();
    let mut peers: BTreeMap<usize, PeerState> = (0..n)
        .filter(|&b| b != i)
        .map(|b| {
            (
                b,
                PeerState {
                    opinion: diagwire::v1::PeerState::Alive,
                    since: Some(wall(400, i)),
                    history: Vec::new(),
                    conn: if b % 2 == 0 {
                        ConnType::Direct
                    } else {
                        ConnType::Relay
                    },
                    last_dial_started: None,
                    last_dial_outcome: None,
                    last_dial_duration: None,
                    last_in: None,
                    last_out: None,
                    generation: 0,
                },
            )
        })
        .collect();
    let index = |id: &NodeId| ids.iter().position(|x| x == id);
    let mut probes: BTreeMap<&str, Probe> = BTreeMap::new();
    let mut seq = 0u64;
    let mut events: Vec<(u64, EventRecord)> = Vec::new();
    let mut snapshots = Vec::new();
    let mut last_transition_seq = 0;
    for (t, _, act) in acts {
        let w = wall(t, i);
        match act {
            Act::Emit(e) => {
                let mut e = *e;
                match &mut e {
                    Event::DialStarted(d) => {
                        if let Some(ps) = index(&d.peer).and_then(|b| peers.get_mut(&b)) {
                            ps.last_dial_started = Some(w);
                        }
                    }
                    Event::DialOutcome(d) => {
                        if let Some(ps) = index(&d.peer).and_then(|b| peers.get_mut(&b)) {
                            ps.last_dial_outcome = Some(
                                match &d.outcome {
                                    DialResult::Success => "Success",
                                    DialResult::Timeout => "Timeout",
                                    DialResult::Refused => "Refused",
                                    _ => "NoRoute",
                                }
                                .to_owned(),
                            );
                            ps.last_dial_duration = Some(d.duration_ms);
                        }
                    }
                    Event::SwimTransition(s) => {
                        if let Some(ps) = index(&s.peer).and_then(|b| peers.get_mut(&b)) {
                            ps.history.push(StateTransition::new(
                                ps.opinion.clone(),
                                s.to.clone(),
                                w,
                                s.reason.clone(),
                            ));
                            if ps.history.len() > 32 {
                                ps.history.remove(0);
                            }
                            ps.opinion = s.to.clone();
                            ps.since = Some(w);
                        }
                    }
                    Event::IrohConnTypeChanged(c) => {
                        if let Some(ps) = index(&c.peer).and_then(|b| peers.get_mut(&b)) {
                            c.old = ps.conn.clone();
                            c.new = if ps.conn == ConnType::Direct {
                                ConnType::Relay
                            } else {
                                ConnType::Direct
                            };
                            ps.conn = c.new.clone();
                        }
                    }
                    Event::ConnectionCacheInvalidated(c) => {
                        if let Some(ps) = index(&c.peer).and_then(|b| peers.get_mut(&b)) {
                            ps.generation += 1;
                            c.generation = ps.generation;
                        }
                    }
                    Event::MessageReceived(m) => {
                        if let Some(ps) = index(&m.peer).and_then(|b| peers.get_mut(&b)) {
                            ps.last_in = Some(w);
                        }
                    }
                    Event::MessageSent(m) => {
                        if let Some(ps) = index(&m.peer).and_then(|b| peers.get_mut(&b)) {
                            ps.last_out = Some(w);
                        }
                    }
                    Event::ProbeReceived(r) => {
                        let target = PROBES
                            .iter()
                            .find(|(name, _)| *name == r.target)
                            .map_or("", |(name, _)| *name);
                        let pr = probes.entry(target).or_insert_with(|| {
                            Probe::new(
                                r.target.clone(),
                                r.kind.clone(),
                                ProbeOutcome::Pending,
                                0,
                                0,
                            )
                        });
                        pr.attempts += 1;
                        if r.outcome == ProbeOutcome::Ok {
                            pr.successes += 1;
                            pr.last_rtt_ms = r.rtt_ms;
                        }
                        pr.last_outcome = r.outcome.clone();
                        pr.last_attempted_at_ms = w;
                    }
                    _ => {}
                }
                seq += 1;
                if matches!(e, Event::SwimTransition(_)) {
                    last_transition_seq = seq;
                }
                events.push((t, EventRecord::new(ids[i], seq, w, e)));
            }
            Act::Snap(trigger) => snapshots.push(snapshot(
                p,
                hex,
                &identity,
                &peers,
                &probes,
                seq,
                w,
                trigger,
                snapshots.len(),
            )),
            Act::SnapAfterTransition => {
                let trigger = SnapshotTrigger::Transition(format!("seq-{last_transition_seq}"));
                snapshots.push(snapshot(
                    p,
                    hex,
                    &identity,
                    &peers,
                    &probes,
                    seq,
                    w,
                    trigger,
                    snapshots.len(),
                ));
            }
        }
    }
    // Batches of about a second each, with the clock sample of the previous post at the end of
    // the next one (numbered by the sink's own counter).
    let mut stream = Vec::new();
    let mut sink = 0u64;
    let mut window_end = 1_000u64;
    let mut pending: Option<EventRecord> = None;
    for (t, e) in events {
        while t >= window_end {
            if let Some(cs) = pending.take() {
                stream.push(cs);
            }
            let d1 = 5 + rng.below(25);
            let d2 = 5 + rng.below(25);
            sink += 1;
            let fields = ClockSampleFields::new(
                wall(window_end, i),
                T0 + window_end + d1,
                T0 + window_end + d1 + 1,
            );
            pending = Some(EventRecord::new(
                ids[i],
                sink,
                wall(window_end + d1 + 1 + d2, i),
                CustomEvent::new(CustomPayload::ClockSample(fields)),
            ));
            window_end += 1_000;
        }
        stream.push(e);
    }
    stream.extend(pending);
    Node {
        identity,
        earlier_boots: Vec::new(),
        events: stream,
        snapshots,
        finalize: (i == 0).then(|| {
            let mut f = Finalize::new();
            f.exit_reason = Some("completed".to_owned());
            f
        }),
    }
}

#[allow(clippy::too_many_arguments)]
fn snapshot(
    p: &Params,
    hex: &[NodeIdHex],
    identity: &Identity,
    peers: &BTreeMap<usize, PeerState>,
    probes: &BTreeMap<&str, Probe>,
    seq: u64,
    w: u64,
    trigger: SnapshotTrigger,
    count: usize,
) -> Snapshot {
    let reachability = peers
        .iter()
        .map(|(b, ps)| {
            let mut r =
                PeerReachability::new(hex[*b].clone(), ps.opinion.clone(), ps.history.clone());
            r.current_swim_opinion_since_ms = ps.since;
            r.last_dial_started_at_ms = ps.last_dial_started;
            r.last_dial_outcome.clone_from(&ps.last_dial_outcome);
            r.last_dial_duration_ms = ps.last_dial_duration;
            r.last_inbound_packet_at_ms = ps.last_in;
            r.last_outbound_success_at_ms = ps.last_out;
            r
        })
        .collect();
    let mut body = SnapshotBody::new(reachability);
    let mut iroh = IrohState::new();
    iroh.home_relay_url = Some(RELAY.to_owned());
    iroh.api_gaps = GAPS
        .iter()
        .map(|g| serde_json::from_value(serde_json::Value::String((*g).to_owned())))
        .collect::<Result<_, _>>()
        .expect("OK because an open enum reads any string");
    iroh.iroh_version = Some(IROH_VERSION.to_owned());
    iroh.scraped_at_ms = w;
    iroh.peers = peers
        .iter()
        .map(|(b, ps)| {
            let mut peer = IrohPeer::new(hex[*b].clone());
            peer.conn_type = Some(ps.conn.clone());
            peer.conn_type_source = Some(ValueSource::Derived);
            peer
        })
        .collect();
    let mut session = RelaySession::new(RelaySessionStatus::Unknown, ValueSource::Derived);
    session.relay_url = Some(RELAY.to_owned());
    iroh.relay_session = Some(session);
    if p.writer == WriterKind::Sim {
        iroh.links_applied = peers
            .keys()
            .map(|b| LinkApplied::new(hex[*b].clone(), 100_000_000, 20, 2, 0))
            .collect();
    }
    body.iroh = Some(iroh);
    let mut probe_state = ProbeState::new();
    probe_state.probes = probes.values().cloned().collect();
    probe_state.scraped_at_ms = w;
    body.probes = Some(probe_state);
    Snapshot::new(
        identity.clone(),
        identity.run_id.clone(),
        format!("{}-{}", identity.node_id_short, count + 1),
        w,
        seq,
        trigger,
        body,
    )
}
