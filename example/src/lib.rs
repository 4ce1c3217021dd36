//! The example bundles: `n3-relay-flap`, a deterministic, realistic run built from the contract
//! types, and `n3-relay-flap-oldest`, the same run as the oldest swactor generation records it.
//!
//! The run has a locally launched orchestrator, three pipeline stages on vast.ai rentals
//! (stage-0 in Germany, stage-1 in the Netherlands, stage-2 in the US, whose clock runs 1.3 s
//! ahead) and the iroh relay server they share, which reports its own sessions (role `relay`).
//! The orchestrator sits behind a NAT, so it reaches the stages only through the relay; the
//! stages reach each other directly.
//!
//! What happens, in collector time (run-relative seconds):
//!
//! * 0–13 s: the relay and the orchestrator boot, the stages at 6–8 s (host context in every boot
//!   record; stage-2's rental id was not forwarded, so it is only in `container_id`). Relay
//!   sessions open and go `unknown → connecting → connected`; the stages join through the
//!   orchestrator and dial each other (relayed first, then hole-punched to direct), each dial
//!   with its QUIC handshake. The run's lifecycle follows: pool ready, run planned, stages
//!   provisioned, weights loaded, edges ready, stages ready, the readiness barrier. Stage-0 serves
//!   a shard baked into its image and spawns nothing; stage-1 fetches its shard, its first Python
//!   worker is killed by the OOM killer (signal 9, a `fault_detected`) and the second reports
//!   `worker_ready`; stage-2 fetches its shard and serves it in process, and its `gpu-probe`
//!   (`nvidia-smi`) hangs, so its app block declares the GPU memory gaps.
//! * 13–21 s: inference requests flow orchestrator → stage-0 → stage-1 → stage-2 → orchestrator
//!   (`prompt_injected`, per-stage steps and objects, `pp.*` events, traced messages).
//! * 21 s: the relay restarts its listener for a certificate rotation and cannot bind it again
//!   until 35.5 s: it closes every session (`RelaySessionClosed`, initiator `relay`). Every
//!   node's relay session flips `connected → disconnected → connecting`; the orchestrator's
//!   `udp_relay` probe is refused (the stages' always times out). Stage-2's response to request 3
//!   times out (`InferenceResponseSent` with `send_outcome: timeout`, a `fault_detected`). The
//!   orchestrator's connections to the stages are lost; the stages' redials to the orchestrator
//!   time out (`DialOutcome: Timeout`) while the stages keep probing each other directly. SWIM
//!   probes across the relay time out, and every relay-only peer goes `Suspect`, then `Dead`,
//!   each transition with its `Transition` snapshot.
//! * 35.5 s: the relay is back; sessions reopen and reconnect, the pending dials succeed,
//!   dead-member reprobes are acked and the peers come back `Alive`; requests resume about 38 s.
//! * About 50 s: the run completes; the orchestrator stops the stages and reports the run torn
//!   down. At 53 s it takes an on-demand snapshot, flushes, posts its finalize and exits (the
//!   relay sees its session closed by the peer); the stages see their connections to it closed
//!   and redial, and those dials are still in flight when the collector assembles the bundle 5 s
//!   later, after the stages answered its `snapshot_now` hint.
//!
//! Each node posts an event batch about every second (with `clock_sample` records of the previous
//! replies, which reuse the sink's own sequence numbers as swactor's do) and a periodic snapshot
//! every 5 s. The SWIM recent-messages ring is cut to its last 6 entries (swactor keeps 64) to keep
//! the bundle small.
//!
//! The records are modelled, not observed, so the bundle's writer is a simulator
//! ([`WriterKind::Sim`], `diagwire-example`). What the collector stored goes through
//! [`diagwire::bundle::Writer`], which lays the files out, writes them as the collector does and
//! derives `MANIFEST.json` from them; this module only decides what each node posted and when.
//!
//! Generation is a pure function: no clock, no randomness source but a fixed-seed PRNG, no I/O.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use serde_json::json;

use diagwire::Json;
use diagwire::bundle::{BundleContents, Writer};
use diagwire::v1::*;

/// The run id of the example bundle, which is also the name of its directory.
pub const RUN_ID: &str = "n3-relay-flap";

/// The run id (and directory) of the same run as the oldest swactor generation records it.
pub const OLDEST_RUN_ID: &str = "n3-relay-flap-oldest";

/// Builds the example bundle: an orchestrator, three stages and their relay through a relay
/// outage, with its `MANIFEST.json`. The same bytes on every call.
pub fn n3_relay_flap() -> BundleContents {
    generate(Generation::Current)
}

/// The same run as the oldest swactor generation writes it (see `docs/legacy-wire.md`): its 14
/// event types only (no relay-session, gossip, subprocess, per-probe SWIM, inference-response,
/// lifecycle or handshake events, no `pp.*` kinds; the worker supervisor's `worker_starting` and
/// `worker_exited` instead of subprocess events), snapshots without the blocks and fields later
/// generations added (`relay_server`, `subprocess`, `app`, `actors`, the iroh block's version and
/// relay session, per-peer `conn_type_source`, kernel counters), the fixed five API gaps, no relay
/// node, and a manifest without a contract version, writer or vast.ai counts.
pub fn n3_relay_flap_oldest() -> BundleContents {
    generate(Generation::Oldest)
}

/// Which swactor generation writes the records.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Generation {
    /// Every record kind and field of the current contract.
    Current,
    /// The oldest generation's 14 event types and snapshot blocks.
    Oldest,
}

fn generate(generation: Generation) -> BundleContents {
    let specs = specs();
    let steps = Script::new(&specs).build();
    let mut run = Run::new(&specs, generation);
    run.play(steps);
    run.into_bundle()
}

// ---------------------------------------------------------------------------------------------
// The world: nodes, clocks, network.

/// Collector clock (ms since the epoch) at the orchestrator's process start; all run-relative
/// times below count from here in "true" time, which is the collector's clock.
const T0: u64 = 1_779_733_870_000;
const RELAY_URL: &str = "https://relay-eu.example.net./";
const RELAY_PROBE: &str = "relay-port-relay-eu.example.net";
const RELAY_PROBE_ADDR: &str = "203.0.113.200:3478";
const ECHO_PROBE: &str = "collector_udp_echo";
const ECHO_PROBE_ADDR: &str = "198.51.100.20:7777";
const COLLECTOR_HOST: &str = "collector.n3.example.net";
const IROH_VERSION: &str = "0.96.0";
const BINARY_VERSION: &str = "0.4.2";
const GIT_SHA: &str = "3f9c2a1d8e7b6a5c4d3e2f1a0b9c8d7e6f5a4b3c";

/// The relay server is down between these two instants.
const RELAY_DOWN: u64 = 21_000;
const RELAY_BACK: u64 = 35_500;
/// The orchestrator starts its finalize sequence here.
const FINALIZE_AT: u64 = 53_000;
/// The orchestrator's process exits here, after posting its finalize.
const ORCH_EXIT: u64 = FINALIZE_AT + 100;
/// No request starts later than this before the end of the run.
const RUN_DONE: u64 = 50_800;
/// How long the collector waits after a finalize before it assembles the bundle.
const FINALIZE_WAIT: u64 = 5_000;
/// Stages run their loops until here; what arrives after assembly is not in the bundle.
const STAGE_END: u64 = 59_500;

const DIAL_TIMEOUT: u64 = 5_000;
const SEND_TIMEOUT: u64 = 5_000;
const TICK: u64 = 100;
const SWIM_CONFIG: (u64, u64, u64, u32, u64, u32, u32) = (20, 3, 60, 2, 50, 3, 8);
const PROBE_PERIOD: u64 = 10_000;
const PROBE_TIMEOUT: u64 = 2_000;
/// The orchestrator starts a request this often while all its stages are alive.
const REQUEST_EVERY: u64 = 3_900;
/// The recent-messages ring is cut to this many entries.
const SWIM_RING: usize = 6;

const ORCH: usize = 0;
/// The SWIM members: the orchestrator and the three stages.
const NODES: usize = 4;
/// The relay server's node, which is no SWIM member.
const RELAY: usize = 4;
/// Why the relay closed every session at `RELAY_DOWN`.
const RELAY_CLOSE_REASON: &str = "listener_restart";
/// Edge ids: edge `EDGE0 + s` carries activations into stage `s`; `EDGE0 + 3` back to the
/// orchestrator.
const EDGE0: u64 = 100;
const LAST_EDGE: u64 = EDGE0 + 3;

/// One-way latency from each member to the relay server.
const RELAY_LAT: [u64; NODES] = [24, 17, 13, 46];
/// Bytes per second the relay receives from and sends to each member while its session is open.
const RELAY_RATE: [(u64, u64); NODES] = [
    (23_800, 21_100),
    (6_900, 7_400),
    (7_700, 6_800),
    (8_300, 9_100),
];

/// One-way latency between nodes in ms (orchestrator links go through the relay).
const LAT: [[u64; NODES]; NODES] = [
    [0, 52, 58, 97],
    [52, 0, 9, 44],
    [58, 9, 0, 41],
    [97, 44, 41, 0],
];

struct Rental {
    contract: &'static str,
    /// Whether the orchestrator forwarded the contract id (else it is only in `container_id`).
    forwarded: bool,
    ip: &'static str,
    country: &'static str,
    datacenter: &'static str,
    gpu: &'static str,
}

struct Spec {
    role: &'static str,
    stage: Option<u32>,
    id: NodeId,
    hex: NodeIdHex,
    /// Process start, run-relative true time.
    boot: u64,
    /// Node clock minus collector clock.
    clock_offset: i64,
    /// One-way latency to the collector.
    uplink: u64,
    /// Relay session: first connected (after boot), lost, reconnecting, reconnected.
    relay_up: u64,
    relay_lost: u64,
    relay_retry: u64,
    relay_back: u64,
    hostname: &'static str,
    rental: Option<Rental>,
    pid: u32,
    actor_addr: String,
    meta_hash: u64,
}

impl Spec {
    fn wall(&self, t: u64) -> u64 {
        (T0 as i64 + t as i64 + self.clock_offset) as u64
    }

    fn short(&self) -> String {
        self.hex.0[..8].to_owned()
    }

    fn is_stage(&self) -> bool {
        self.stage.is_some()
    }
}

/// What differs between the nodes; ids and addresses are drawn from the PRNG.
struct Plan {
    role: &'static str,
    stage: Option<u32>,
    boot: u64,
    clock_offset: i64,
    uplink: u64,
    /// Relay session: first connected, lost, reconnecting, reconnected.
    relay: [u64; 4],
    hostname: &'static str,
    rental: Option<Rental>,
    pid: u32,
}

fn specs() -> Vec<Spec> {
    let mut rng = Rng(0x6e33_7265_6c61_7901);
    let plans = [
        Plan {
            role: "orchestrator",
            stage: None,
            boot: 0,
            clock_offset: 3,
            uplink: 21,
            relay: [560, 21_240, 23_310, 35_720],
            hostname: "nuc-lab-01",
            rental: None,
            pid: 48_211,
        },
        Plan {
            role: "stage",
            stage: Some(0),
            boot: 6_200,
            clock_offset: -37,
            uplink: 14,
            relay: [6_660, 21_610, 23_880, 36_150],
            hostname: "c28411905",
            rental: Some(Rental {
                contract: "28411905",
                forwarded: true,
                ip: "203.0.113.41",
                country: "DE",
                datacenter: "dc-fra-2",
                gpu: "RTX 4090",
            }),
            pid: 57,
        },
        Plan {
            role: "stage",
            stage: Some(1),
            boot: 6_900,
            clock_offset: 12,
            uplink: 11,
            relay: [7_320, 21_380, 23_640, 35_910],
            hostname: "c28411906",
            rental: Some(Rental {
                contract: "28411906",
                forwarded: true,
                ip: "198.51.100.77",
                country: "NL",
                datacenter: "dc-ams-1",
                gpu: "RTX 4090",
            }),
            pid: 61,
        },
        Plan {
            role: "stage",
            stage: Some(2),
            boot: 7_600,
            clock_offset: 1_284,
            uplink: 49,
            relay: [8_350, 21_900, 24_170, 36_480],
            hostname: "c28411907",
            rental: Some(Rental {
                contract: "28411907",
                forwarded: false,
                ip: "203.0.113.118",
                country: "US",
                datacenter: "dc-iad-4",
                gpu: "RTX A6000",
            }),
            pid: 57,
        },
        Plan {
            role: "relay",
            stage: None,
            boot: 0,
            clock_offset: -6,
            uplink: 9,
            relay: [0; 4],
            hostname: "relay-eu-1",
            rental: None,
            pid: 1_187,
        },
    ];
    plans
        .into_iter()
        .map(|p| {
            let id = NodeId(rng.bytes32());
            let hex = id.to_hex();
            Spec {
                role: p.role,
                stage: p.stage,
                id,
                hex,
                boot: p.boot,
                clock_offset: p.clock_offset,
                uplink: p.uplink,
                relay_up: p.relay[0],
                relay_lost: p.relay[1],
                relay_retry: p.relay[2],
                relay_back: p.relay[3],
                hostname: p.hostname,
                rental: p.rental,
                pid: p.pid,
                actor_addr: NodeId(rng.bytes32()).to_hex().0,
                meta_hash: rng.next(),
            }
        })
        .collect()
}

/// One-way latency between two nodes.
fn lat(a: usize, b: usize) -> u64 {
    LAT[a][b]
}

/// When the path between two nodes works again after the outage (both relay sessions are back).
fn link_back(specs: &[Spec], a: usize, b: usize) -> u64 {
    specs[a].relay_back.max(specs[b].relay_back) + 250
}

/// Whether a packet from `a` to `b` sent at `t` arrives: only relay-borne links break.
fn link_up(specs: &[Spec], a: usize, b: usize, t: u64) -> bool {
    if a != ORCH && b != ORCH {
        return true;
    }
    t < ORCH_EXIT && !(RELAY_DOWN..link_back(specs, a, b)).contains(&t)
}

/// The fixed five API gaps the oldest generation lists.
fn oldest_gaps() -> Vec<ApiGap> {
    all_gaps().into_iter().take(5).collect()
}

/// Bytes the relay received from and sent to member `n` over `ms` milliseconds of its session.
fn relay_bytes(n: usize, ms: u64) -> (u64, u64) {
    let (rx, tx) = RELAY_RATE[n];
    (rx * ms / 1_000, tx * ms / 1_000)
}

fn all_gaps() -> Vec<ApiGap> {
    vec![
        ApiGap::RemoteInfoConnType,
        ApiGap::RemoteInfoLatencyMs,
        ApiGap::RemoteInfoLastUsedMs,
        ApiGap::RemoteInfoLastReceivedMs,
        ApiGap::TransportAddrInfoSource,
        ApiGap::RelayTunnelStatus,
        ApiGap::RelayTunnelLastSendAtMs,
        ApiGap::RelayTunnelLastRecvAtMs,
        ApiGap::RelayTunnelTxBytesTotal,
        ApiGap::RelayTunnelRxBytesTotal,
    ]
}

/// A tiny deterministic PRNG (splitmix64) for jitter and node ids; the bundle bench uses it too.
pub struct Rng(pub u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    /// 32 bytes, such as a node id.
    pub fn bytes32(&mut self) -> [u8; 32] {
        let mut out = [0u8; 32];
        for chunk in out.chunks_mut(8) {
            chunk.copy_from_slice(&self.next().to_le_bytes());
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// The script: what each node does and when, decided up front.

/// A state change without an event of its own (a received SWIM message).
#[derive(Clone, Copy)]
enum Touch {
    Ping { from: usize, seq: u64 },
    PingReq { from: usize, seq: u64 },
    JoinRequest { from: usize },
    JoinResponse { from: usize, members: u64 },
}

// Steps live only while the script plays; boxing the event would cost an allocation per event.
#[allow(clippy::large_enum_variant)]
enum Op {
    Boot,
    Emit(Event),
    Touch(Touch),
    Flush,
    Snapshot(SnapshotTrigger),
    ClockSample(ClockSampleFields),
    Finalize(String),
}

struct Step {
    t: u64,
    node: usize,
    op: Op,
}

struct Script<'a> {
    specs: &'a [Spec],
    steps: Vec<Step>,
    rng: Rng,
    /// `alive_at[n][m]`: when `n` first considers `m` alive (after joining or learning of it).
    alive_at: [[Option<u64>; NODES]; NODES],
    /// When `n`'s dials to `m` succeeded: the connection generation at a time is how many did.
    dials: [[Vec<u64>; NODES]; NODES],
    /// When `n` last saw a peer come back alive after the relay went down.
    recovered: [u64; NODES],
    /// When each stage's weights were loaded, and by which worker generation.
    loaded: [Option<(u64, u64)>; NODES],
    /// Where each stage's shard download ran (start, end), when it downloaded one.
    downloads: [Option<(u64, u64)>; NODES],
    /// When the orchestrator passed the readiness barrier.
    barrier: u64,
}

impl<'a> Script<'a> {
    fn new(specs: &'a [Spec]) -> Self {
        Script {
            specs,
            steps: Vec::new(),
            rng: Rng(0x0b5e_55ed_f1a9_0003),
            alive_at: [[None; NODES]; NODES],
            dials: Default::default(),
            recovered: [0; NODES],
            loaded: [None; NODES],
            downloads: [None; NODES],
            barrier: 0,
        }
    }

    fn at(&mut self, t: u64, node: usize, op: Op) {
        self.steps.push(Step { t, node, op });
    }

    fn emit(&mut self, t: u64, node: usize, event: impl Into<Event>) {
        self.at(t, node, Op::Emit(event.into()));
    }

    /// The generation of `a`'s cached connection to `b` at `t`.
    fn generation(&self, a: usize, b: usize, t: u64) -> u64 {
        self.dials[a][b].iter().filter(|&&d| d <= t).count() as u64
    }

    fn id(&self, n: usize) -> NodeId {
        self.specs[n].id
    }

    fn end(&self, n: usize) -> u64 {
        if n == ORCH { FINALIZE_AT } else { STAGE_END }
    }

    fn build(mut self) -> Vec<Step> {
        for n in 0..NODES {
            self.boot(n);
        }
        self.joins();
        for n in 0..NODES {
            self.swim(n);
        }
        self.outage();
        self.readiness();
        let (exit_reason, last_token) = self.requests();
        self.teardown(last_token);
        self.relay_server();
        self.after_exit();
        self.at(FINALIZE_AT, ORCH, Op::Snapshot(SnapshotTrigger::OnDemand));
        self.at(FINALIZE_AT + 40, ORCH, Op::Flush);
        self.at(FINALIZE_AT + 80, ORCH, Op::Finalize(exit_reason));
        self.steps
    }

    /// Boot, relay session, registration, subprocesses, host notices and the periodic loops.
    fn boot(&mut self, n: usize) {
        let specs = self.specs;
        let s = &specs[n];
        let b = s.boot;
        let end = self.end(n);
        let (relay_up, wall_reg, is_stage) = (s.relay_up, s.wall(b + 300), s.is_stage());
        let name = match s.stage {
            Some(i) => format!("n3/stage-{i}"),
            None => "n3/orchestrator".to_owned(),
        };
        let mut register =
            RegisterNameFields::new(name, s.actor_addr.clone(), s.hex.clone(), wall_reg);
        register.stage_index = s.stage;
        let meta_hash = s.meta_hash;
        self.at(b + 120, n, Op::Boot);
        let mut started = NodeStarted::new(s.hex.clone());
        started.run_id = Some(RUN_ID.to_owned());
        self.emit(b + 125, n, started);
        self.emit(
            b + 130,
            n,
            custom(CustomPayload::IrohApiMissing(IrohApiMissingFields::new(
                IROH_VERSION,
                all_gaps().iter().map(|g| g.as_ref().to_owned()).collect(),
                "iroh 0.96 exposes none of these; read them as could-not-ask, never as zero",
            ))),
        );
        self.emit(
            b + 140,
            n,
            relay_change(RelaySessionStatus::Unknown, RelaySessionStatus::Connecting),
        );
        self.emit(
            relay_up,
            n,
            relay_change(
                RelaySessionStatus::Connecting,
                RelaySessionStatus::Connected,
            ),
        );
        if n == ORCH {
            let mut changed = RelayChanged::new();
            changed.new_url = Some(RELAY_URL.to_owned());
            self.emit(relay_up + 3, n, changed);
        }
        if is_stage {
            self.emit(
                b + 260,
                n,
                ErrorEvent::new(
                    "host_introspect",
                    "nf_conntrack_count unreadable: No such file or directory (os error 2)",
                ),
            );
        }
        self.emit(b + 300, n, custom(CustomPayload::RegisterName(register)));
        self.emit(b + 310, n, SwimMetadataSent::new(1, meta_hash));
        if is_stage {
            self.subprocesses(n);
        }
        // Periodic snapshots every 5 s, batches about every second, probes every 10 s.
        let mut k = 1;
        loop {
            let t = b + 5_000 * k + self.rng.range(0, 3);
            if t >= end {
                break;
            }
            self.at(t, n, Op::Snapshot(SnapshotTrigger::Periodic));
            k += 1;
        }
        let mut t = b + 1_000;
        while t < end {
            self.at(t, n, Op::Flush);
            t += 1_000 + self.rng.range(0, 30);
        }
        let mut t = b + 1_500;
        while t < end {
            self.probe_round(n, t);
            t += PROBE_PERIOD;
        }
    }

    /// Each stage's weights and subprocesses. Stage-0 serves a shard baked into its image in the
    /// node process and spawns nothing. Stage-1 fetches its shard, and its Python worker is killed
    /// by the kernel's OOM killer while loading; the second worker loads and reports
    /// `worker_ready`. Stage-2 fetches its shard and serves it in process; its `gpu-probe`
    /// (`nvidia-smi`), which should answer within a second, hangs in the driver, so its GPU
    /// memory is not reported.
    fn subprocesses(&mut self, n: usize) {
        let specs = self.specs;
        let s = &specs[n];
        let i = s.stage.unwrap_or(0);
        let pid = s.pid;
        let spawn = s.boot + 400;
        if i == 0 {
            self.loaded[n] = Some((spawn + 1_000 + self.rng.range(0, 300), 1));
            return;
        }
        let fetch_cmd = format!(
            "/opt/venv/bin/python -m n3.fetch_shard --stage {i} --dest /workspace/shard-{i}"
        );
        let fetch_pid = pid + 4;
        let fetch_ms = 1_600 + self.rng.range(0, 600);
        self.emit(
            spawn,
            n,
            SubprocessSpawned::new("shard-fetch", fetch_pid, fetch_cmd.clone()),
        );
        let mut exited = SubprocessExited::new("shard-fetch", fetch_pid, fetch_cmd);
        exited.exit_code = Some(0);
        exited.uptime_ms = Some(fetch_ms);
        self.emit(spawn + fetch_ms, n, exited);
        self.downloads[n] = Some((spawn + 2, spawn + fetch_ms + 1));
        let fetched = spawn + fetch_ms;
        if i == 2 {
            self.loaded[n] = Some((fetched + 1_100 + self.rng.range(0, 300), 1));
            let probe_at = fetched + 1_500;
            let probe_cmd = "nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader";
            self.emit(
                probe_at,
                n,
                SubprocessSpawned::new("gpu-probe", pid + 40, probe_cmd),
            );
            self.emit(
                probe_at + 5_000,
                n,
                ErrorEvent::new(
                    "app_introspect",
                    "gpu-probe (nvidia-smi) has not answered within 5000 ms; AppState.gpu_mem_used_bytes and AppState.gpu_mem_total_bytes are not reported",
                ),
            );
            return;
        }
        let worker_cmd = format!(
            "/opt/venv/bin/python -m n3.worker --stage {i} --shard /workspace/shard-{i} --listen 127.0.0.1:7100"
        );
        let first_at = fetched + 120;
        let first_pid = pid + 31;
        self.emit(
            first_at,
            n,
            SubprocessSpawned::new("worker", first_pid, worker_cmd.clone()),
        );
        let killed_after = 1_050 + self.rng.range(0, 200);
        let mut killed = SubprocessExited::new("worker", first_pid, worker_cmd.clone());
        killed.exit_signal = Some(9);
        killed.uptime_ms = Some(killed_after);
        self.emit(first_at + killed_after, n, killed);
        let mut fault = FaultDetected::new(FaultReason::OutOfMemory, FaultComponent::GpuWorkerCtl);
        fault.run_id = Some(RUN_ID.to_owned());
        fault.stage_index = Some(i);
        fault.worker_generation = Some(1);
        fault.node_id_hex = Some(s.hex.clone());
        fault.detail = Some(
            "worker generation 1 killed by the OOM killer (signal 9) while loading; respawning with --max-batch 4"
                .to_owned(),
        );
        self.emit(first_at + killed_after + 3, n, fault);
        let worker_at = first_at + killed_after + 180;
        let worker_pid = first_pid + 3;
        self.emit(
            worker_at,
            n,
            SubprocessSpawned::new("worker", worker_pid, format!("{worker_cmd} --max-batch 4")),
        );
        let load_ms = 1_200 + self.rng.range(0, 600);
        self.emit(
            worker_at + load_ms,
            n,
            custom(CustomPayload::WorkerReady(Json(json!({
                "label": "worker",
                "pid": worker_pid,
                "stage_index": i,
                "model": format!("llama-3.1-8b-pp3-shard-{i}"),
                "load_ms": load_ms,
            })))),
        );
        self.loaded[n] = Some((worker_at + load_ms + 4, 2));
    }

    /// One round of the two outbound probes.
    fn probe_round(&mut self, n: usize, t: u64) {
        let uplink = self.specs[n].uplink;
        let echo_target = format!("{ECHO_PROBE} ({ECHO_PROBE_ADDR})");
        self.emit(t, n, probe_sent(&echo_target, ProbeKind::UdpEcho));
        let rtt = 2 * uplink + self.rng.range(1, 6);
        self.emit(
            t + rtt,
            n,
            probe_received(
                &echo_target,
                ProbeKind::UdpEcho,
                Some(rtt),
                ProbeOutcome::Ok,
            ),
        );
        let t = t + 20;
        let relay_target = format!("{RELAY_PROBE} ({RELAY_PROBE_ADDR})");
        self.emit(t, n, probe_sent(&relay_target, ProbeKind::UdpRelay));
        if n != ORCH {
            // vast.ai's edge drops the relay's UDP port: no answer at all.
            self.emit(
                t + PROBE_TIMEOUT,
                n,
                probe_received(
                    &relay_target,
                    ProbeKind::UdpRelay,
                    None,
                    ProbeOutcome::Timeout,
                ),
            );
        } else if (RELAY_DOWN..RELAY_BACK).contains(&t) {
            // The relay host is up but its server process is not: ICMP port unreachable.
            self.emit(
                t + 31,
                n,
                probe_received(
                    &relay_target,
                    ProbeKind::UdpRelay,
                    None,
                    ProbeOutcome::Refused,
                ),
            );
        } else {
            let rtt = 26 + self.rng.range(0, 9);
            self.emit(
                t + rtt,
                n,
                probe_received(
                    &relay_target,
                    ProbeKind::UdpRelay,
                    Some(rtt),
                    ProbeOutcome::Ok,
                ),
            );
        }
    }

    /// Joins through the orchestrator, then the stages find and dial each other.
    fn joins(&mut self) {
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
    fn stage_pair(&mut self, a: usize, b: usize, t: u64, reason: &str) {
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
    fn metadata(&mut self, t: u64, n: usize, from: usize) {
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

    fn addr(&self, n: usize) -> String {
        match &self.specs[n].rental {
            Some(r) => format!("{}:41641", r.ip),
            None => "192.168.1.23:41641".to_owned(),
        }
    }

    /// A successful dial: the QUIC handshake at its end, then the outcome. Links to the
    /// orchestrator, and the first dial between two stages, go through the relay.
    fn dial_success(&mut self, a: usize, b: usize, t: u64, attempt: u32, duration: u64) {
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

    /// SWIM of node `n`: a direct probe per protocol period (round robin over a shuffled member
    /// list), indirect probes through up to k helpers, suspicion, death and dead-member reprobes.
    fn swim(&mut self, n: usize) {
        let (interval, timeout, suspicion, k, reprobe, _, _) = SWIM_CONFIG;
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
            if let Some(m) = order.pop_front() {
                if matches!(state[m], PeerState::Alive | PeerState::Suspect) {
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
            }
            t += interval + self.rng.range(0, 3);
        }
    }

    /// A direct probe; returns whether it was acked.
    fn direct_probe(&mut self, n: usize, m: usize, t: u64, seq: u64, timeout: u64) -> bool {
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
                self.probe_timed_out(n, m, seq, SwimProbeKind::Direct, t, SWIM_CONFIG.1),
            );
            false
        }
    }

    /// The trace id of `n`'s SWIM probe `seq`, shared by its sent, acked and timed-out events.
    fn probe_trace(&self, n: usize, seq: u64) -> String {
        format!("{}-swim-{seq}", self.specs[n].short())
    }

    fn probe_sent(&self, n: usize, m: usize, seq: u64, kind: SwimProbeKind) -> SwimProbeSent {
        let mut sent = SwimProbeSent::new(self.id(m), seq, kind);
        sent.trace_id = Some(self.probe_trace(n, seq));
        sent
    }

    fn probe_acked(
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

    fn probe_timed_out(
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

    fn gossip_window(&self, t: u64) -> bool {
        t < 12_000 || (22_000..31_000).contains(&t) || (36_000..42_000).contains(&t)
    }

    /// The relay outage: session flips, lost connections, redials.
    fn outage(&mut self) {
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

    fn conn_lost(&mut self, a: usize, b: usize, t: u64) {
        self.conn_closed(a, b, t, "connection lost: timed out");
    }

    fn conn_closed(&mut self, a: usize, b: usize, t: u64, reason: &str) {
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

    /// The run's lifecycle up to the readiness barrier: the pool, the plan, each stage's weights
    /// and edges, each stage ready, then the barrier.
    // Node indexes address several per-node tables at once, not one slice.
    #[allow(clippy::needless_range_loop)]
    fn readiness(&mut self) {
        let specs = self.specs;
        for k in 0..NODES {
            let at = self.alive_at[k]
                .iter()
                .flatten()
                .min()
                .copied()
                .unwrap_or(specs[k].boot + 1_000);
            let mut available = NodeAvailable::new(specs[k].hex.clone());
            available.run_id = Some(RUN_ID.to_owned());
            self.emit(at + 5, k, available);
        }
        let pool = (1..NODES)
            .filter_map(|k| self.alive_at[ORCH][k])
            .max()
            .unwrap_or(0)
            + 30;
        let hexes = (0..NODES).map(|k| specs[k].hex.clone()).collect();
        self.emit(pool, ORCH, PoolReady::new(RUN_ID, hexes));
        self.emit(pool + 10, ORCH, RunPlanned::new(RUN_ID, 3));
        for k in 1..NODES {
            let stage = k as u32 - 1;
            self.emit(
                pool + 10 + k as u64,
                ORCH,
                StageProvisionStarted::new(RUN_ID, stage, specs[k].hex.clone()),
            );
        }
        for (edge, ring) in [(EDGE0, 1), (LAST_EDGE, 2)] {
            self.emit(pool + 20, ORCH, EdgeProvisionStarted::new(RUN_ID, edge));
            let ready = pool + 20 + 2 * lat(ORCH, if edge == EDGE0 { 1 } else { 3 }) + 30;
            self.emit(ready, ORCH, EdgeReady::new(RUN_ID, edge, ring));
        }
        let mut barrier = 0;
        for k in 1..NODES {
            let stage = k as u32 - 1;
            if let Some((from, to)) = self.downloads[k] {
                self.emit(from, k, WeightsDownloadStarted::new(RUN_ID, stage));
                self.emit(to, k, WeightsDownloaded::new(RUN_ID, stage));
            }
            let (loaded, generation) = self.loaded[k].unwrap_or((pool, 1));
            self.emit(loaded, k, WeightsLoaded::new(RUN_ID, stage, generation));
            let provisioned = pool + 10 + k as u64 + lat(ORCH, k);
            let mut ready_at = loaded;
            for (j, edge) in [EDGE0 + u64::from(stage), EDGE0 + u64::from(stage) + 1]
                .into_iter()
                .enumerate()
            {
                let mut started = EdgeProvisionStarted::new(RUN_ID, edge);
                started.stage_index = Some(stage);
                let at = provisioned + 5 + j as u64;
                self.emit(at, k, started);
                let ready = at + 60 + self.rng.range(0, 80);
                let mut done = EdgeReady::new(RUN_ID, edge, 10 * k as u64 + j as u64);
                done.stage_index = Some(stage);
                self.emit(ready, k, done);
                ready_at = ready_at.max(ready);
            }
            let ready = ready_at + 30;
            self.emit(ready, k, StageReady::new(RUN_ID, stage));
            barrier = barrier.max(ready + lat(k, ORCH) + 20);
        }
        self.emit(barrier, ORCH, ReadinessBarrierPassed::new(RUN_ID));
        self.barrier = barrier;
    }

    /// Inference requests through the pipeline; stage-2 answers the orchestrator.
    /// Returns the orchestrator's exit reason and when the last token arrived.
    fn requests(&mut self) -> (String, u64) {
        // The orchestrator pauses while its relay session is down and until every stage is alive.
        let mut starts = Vec::new();
        let mut t = self.barrier + 300;
        while t < self.specs[ORCH].relay_lost {
            starts.push(t);
            t += REQUEST_EVERY;
        }
        let mut t = self.recovered[ORCH].max(self.specs[ORCH].relay_back) + 1_000;
        while t + 2_500 < RUN_DONE {
            starts.push(t);
            t += REQUEST_EVERY;
        }
        let mut unanswered = Vec::new();
        let mut redial = true;
        let mut last_token = 0;
        for (i, &t0) in starts.iter().enumerate() {
            let rid = format!("req-{:04}", i + 1);
            let seq = i as u64 + 1;
            let object = 1_000 * seq;
            let mut t = t0;
            if t0 > RELAY_BACK && redial {
                // The orchestrator's cached connection to stage-0 was invalidated in the outage.
                redial = false;
                self.emit(t, ORCH, ConnectionCacheMiss::new(self.id(1)));
                self.emit(t + 1, ORCH, dial_started(self.id(1), 1));
                let d = self.rng.range(380, 520);
                self.dial_success(ORCH, 1, t + 1 + d, 1, d);
                t += d + 2;
            } else {
                self.cache_hit(ORCH, 1, t);
            }
            let size = 1_800 + self.rng.range(0, 400) as u32;
            let trace = |hop: u32| format!("{rid}/{hop}");
            self.emit(t, ORCH, PromptInjected::new(RUN_ID, EDGE0, object, seq));
            self.emit(
                t + 1,
                ORCH,
                traced(
                    message(true, self.id(1), "inference_request", size),
                    trace(0),
                    None,
                ),
            );
            t += 1 + lat(ORCH, 1);
            self.emit(
                t,
                1,
                traced(
                    message(false, self.id(ORCH), "inference_request", size),
                    trace(0),
                    None,
                ),
            );
            for k in 1..NODES {
                let stage = k as u32 - 1;
                let generation = self.loaded[k].map_or(1, |(_, g)| g);
                let inbound = EDGE0 + u64::from(stage);
                let ring = 10 * k as u64;
                self.emit(
                    t + 1,
                    k,
                    ObjectLoaded::new(
                        RUN_ID,
                        stage,
                        inbound,
                        ring,
                        object + u64::from(stage),
                        seq,
                        generation,
                    ),
                );
                let step = 100 * seq + u64::from(stage);
                let mut started = ExecuteStepStarted::new(RUN_ID, stage, step, generation);
                started.sequence = Some(seq);
                self.emit(t + 2, k, started);
                let compute = self.rng.range(330, 420);
                if k == 2 {
                    let depth = self.rng.range(0, 2) as u32;
                    self.emit(
                        t + 3,
                        k,
                        custom(CustomPayload::PpWorkerDispatch(
                            PpWorkerDispatchFields::new("forward", depth, rid.clone()),
                        )),
                    );
                    let worked = compute - 9;
                    self.emit(
                        t + 3 + worked,
                        k,
                        custom(CustomPayload::PpWorkerComplete(
                            PpWorkerCompleteFields::new(
                                worked as f64 - 0.25,
                                "forward",
                                rid.clone(),
                            ),
                        )),
                    );
                }
                t += compute;
                let mut done = StepCompleted::new(RUN_ID, stage, step, generation);
                done.sequence = Some(seq);
                self.emit(t, k, done);
                self.emit(
                    t + 1,
                    k,
                    ObjectProduced::new(
                        RUN_ID,
                        stage,
                        inbound + 1,
                        ring + 1,
                        object + u64::from(stage) + 1,
                        seq,
                        generation,
                    ),
                );
                if k == 3 {
                    let decode = 38.0 + self.rng.range(0, 16) as f64 / 4.0;
                    let token = 128_000 + self.rng.range(0, 2_000) as u32;
                    self.emit(
                        t + 2,
                        k,
                        custom(CustomPayload::PpTokenEmitted(PpTokenEmittedFields::new(
                            decode,
                            0,
                            rid.clone(),
                            token,
                        ))),
                    );
                    break;
                }
                self.cache_hit(k, k + 1, t + 2);
                self.emit(
                    t + 3,
                    k,
                    custom(CustomPayload::PpActivationSent(
                        PpActivationSentFields::new(262_144, stage, true, rid.clone(), stage + 1),
                    )),
                );
                self.emit(
                    t + 3,
                    k,
                    traced(
                        message(true, self.id(k + 1), "activations", 262_144),
                        trace(k as u32),
                        Some(trace(k as u32 - 1)),
                    ),
                );
                t += 3 + lat(k, k + 1);
                self.emit(
                    t,
                    k + 1,
                    traced(
                        message(false, self.id(k), "activations", 262_144),
                        trace(k as u32),
                        Some(trace(k as u32 - 1)),
                    ),
                );
                self.emit(
                    t,
                    k + 1,
                    custom(CustomPayload::PpActivationReceived(
                        PpActivationReceivedFields::new(
                            262_144,
                            stage,
                            true,
                            rid.clone(),
                            stage + 1,
                        ),
                    )),
                );
            }
            t += self.rng.range(20, 40);
            let bytes = 3_900 + self.rng.range(0, 700);
            self.cache_hit(3, ORCH, t);
            let (at, outcome) = if link_up(self.specs, 3, ORCH, t) {
                let at = t + 2 * lat(3, ORCH) + 3;
                let got = t + lat(3, ORCH);
                self.emit(
                    got,
                    ORCH,
                    traced(
                        message(false, self.id(3), "inference_response", bytes as u32),
                        trace(3),
                        Some(trace(2)),
                    ),
                );
                let mut received = InferenceResponseReceived::new(self.id(3), rid.clone(), bytes);
                received.trace_id = Some(trace(3));
                received.parent_trace_id = Some(trace(2));
                self.emit(got + 1, ORCH, received);
                self.emit(
                    got + 2,
                    ORCH,
                    TokenReceived::new(RUN_ID, LAST_EDGE, object + 3, seq),
                );
                last_token = got + 2;
                (at, InferenceSendOutcome::Success)
            } else {
                unanswered.push(rid.clone());
                let mut fault = FaultDetected::new(FaultReason::Timeout, FaultComponent::Transport);
                fault.run_id = Some(RUN_ID.to_owned());
                fault.stage_index = Some(2);
                fault.edge_id = Some(LAST_EDGE);
                fault.node_id_hex = Some(self.specs[ORCH].hex.clone());
                fault.detail = Some(format!(
                    "response to {rid} not acknowledged by the orchestrator within {SEND_TIMEOUT} ms"
                ));
                self.emit(t + SEND_TIMEOUT + 1, 3, fault);
                (t + SEND_TIMEOUT, InferenceSendOutcome::Timeout)
            };
            let mut sent = InferenceResponseSent::new(self.id(ORCH), rid.clone(), bytes, outcome);
            sent.trace_id = Some(trace(3));
            sent.parent_trace_id = Some(trace(2));
            self.emit(at, 3, sent);
        }
        let reason = format!(
            "pipeline finished: {} of {} requests answered ({}: no response)",
            starts.len() - unanswered.len(),
            starts.len(),
            unanswered.join(", ")
        );
        (reason, last_token)
    }

    /// The run completes after its last token; the orchestrator stops every stage and reports
    /// the run torn down once each stage stopped.
    fn teardown(&mut self, last_token: u64) {
        let done = last_token + 60;
        self.emit(done, ORCH, RunCompleted::new(RUN_ID));
        let mut torn = done;
        for k in 1..NODES {
            let stage = k as u32 - 1;
            let sent = done + 10 + k as u64;
            self.emit(
                sent,
                ORCH,
                StopRunSent::new(RUN_ID, stage, self.specs[k].hex.clone()),
            );
            let stopped = sent + lat(ORCH, k) + 120 + self.rng.range(0, 150);
            self.emit(stopped, k, StageStopped::new(RUN_ID, stage));
            torn = torn.max(stopped + lat(k, ORCH) + 300);
        }
        self.emit(torn, ORCH, RunTornDown::new(RUN_ID));
    }

    /// The relay server: its boot and loops, a session per member, every session closed by the
    /// relay when its listener restarts at `RELAY_DOWN`, reopened when it is back, and the
    /// orchestrator's closed by the orchestrator when its process exits.
    fn relay_server(&mut self) {
        let n = RELAY;
        self.at(120, n, Op::Boot);
        let mut k = 1;
        loop {
            let t = 5_000 * k + self.rng.range(0, 3);
            if t >= STAGE_END {
                break;
            }
            self.at(t, n, Op::Snapshot(SnapshotTrigger::Periodic));
            k += 1;
        }
        let mut t = 1_000;
        while t < STAGE_END {
            self.at(t, n, Op::Flush);
            t += 2_000 + self.rng.range(0, 30);
        }
        let specs = self.specs;
        let mut closes = Vec::new();
        for m in 0..NODES {
            let s = &specs[m];
            let hex = s.hex.clone();
            let opened = s.relay_up - RELAY_LAT[m];
            self.emit(
                opened,
                n,
                RelaySessionOpened::new(hex.clone(), specs[n].wall(opened)),
            );
            let closed = RELAY_DOWN + 3 * m as u64;
            closes.push((
                closed,
                m,
                opened,
                RelayCloseInitiator::Relay,
                RELAY_CLOSE_REASON,
            ));
            let reopened = s.relay_back - RELAY_LAT[m];
            self.emit(
                reopened,
                n,
                RelaySessionOpened::new(hex, specs[n].wall(reopened)),
            );
            if m == ORCH {
                closes.push((
                    ORCH_EXIT + RELAY_LAT[m],
                    m,
                    reopened,
                    RelayCloseInitiator::Peer,
                    "client_closed",
                ));
            }
        }
        for (closed, m, opened, initiator, reason) in closes {
            let (rx, tx) = relay_bytes(m, closed - opened);
            self.emit(
                closed,
                n,
                RelaySessionClosed::new(
                    specs[m].hex.clone(),
                    specs[n].wall(opened),
                    specs[n].wall(closed),
                    closed - opened,
                    initiator,
                    reason,
                    rx,
                    tx,
                ),
            );
        }
        self.emit(
            RELAY_DOWN + 40,
            n,
            ErrorEvent::new(
                "relay_server",
                "listener restart for certificate rotation: bind 0.0.0.0:443: Address in use (os error 98); retrying every 2 s",
            ),
        );
    }

    /// After the orchestrator's process exits, each stage sees its connection to it closed and
    /// redials; the redials are still in flight when the collector assembles the bundle.
    fn after_exit(&mut self) {
        for k in 1..NODES {
            let seen = ORCH_EXIT + lat(ORCH, k) + self.rng.range(20, 60);
            self.conn_closed(k, ORCH, seen, "connection lost: closed by peer");
            self.emit(seen + 150, k, ConnectionCacheMiss::new(self.id(ORCH)));
            self.emit(seen + 151, k, dial_started(self.id(ORCH), 1));
        }
    }

    fn cache_hit(&mut self, a: usize, b: usize, t: u64) {
        self.emit(
            t,
            a,
            ConnectionCacheHit::new(self.id(b), self.generation(a, b, t)),
        );
    }
}

fn custom(payload: CustomPayload) -> Event {
    CustomEvent::new(payload).into()
}

fn relay_change(from: RelaySessionStatus, to: RelaySessionStatus) -> Event {
    let mut change = RelaySessionStateChanged::new(from, to);
    change.relay_url = Some(RELAY_URL.to_owned());
    change.into()
}

fn dial_started(peer: NodeId, attempt: u32) -> Event {
    DialStarted::new(peer, attempt, DIAL_TIMEOUT).into()
}

fn swim_transition(peer: NodeId, from: PeerState, to: PeerState, reason: &str) -> Event {
    SwimTransition::new(peer, from, to, reason).into()
}

fn metadata_received(specs: &[Spec], from: usize) -> Event {
    SwimMetadataReceived::new(specs[from].id, 1, specs[from].meta_hash).into()
}

fn conn_type_changed(peer: NodeId, old: ConnType, new: ConnType) -> Event {
    IrohConnTypeChanged::new(peer, old, new).into()
}

/// Sets the causal trace ids of a message event.
fn traced(event: Event, trace_id: String, parent: Option<String>) -> Event {
    match event {
        Event::MessageSent(mut m) => {
            m.trace_id = Some(trace_id);
            m.parent_trace_id = parent;
            m.into()
        }
        Event::MessageReceived(mut m) => {
            m.trace_id = Some(trace_id);
            m.parent_trace_id = parent;
            m.into()
        }
        other => other,
    }
}

fn message(sent: bool, peer: NodeId, kind: &str, size: u32) -> Event {
    if sent {
        MessageSent::new(peer, kind, size).into()
    } else {
        MessageReceived::new(peer, kind, size).into()
    }
}

fn probe_sent(target: &str, kind: ProbeKind) -> Event {
    ProbeSent::new(target, kind).into()
}

fn probe_received(
    target: &str,
    kind: ProbeKind,
    rtt_ms: Option<u64>,
    outcome: ProbeOutcome,
) -> Event {
    let mut received = ProbeReceived::new(target, kind, outcome);
    received.rtt_ms = rtt_ms;
    received.into()
}

// ---------------------------------------------------------------------------------------------
// Playing the script: node state, sinks, the collector.

#[derive(Default)]
struct PeerView {
    last_inbound: Option<u64>,
    last_outbound_ok: Option<u64>,
    dial_started: Option<u64>,
    dial_outcome: Option<String>,
    dial_duration: Option<u64>,
    opinion: Option<PeerState>,
    since: Option<u64>,
    history: Vec<StateTransition>,
    metadata_seen: Option<u64>,
    ping_sent: Option<u64>,
    ack_received: Option<u64>,
    ping_received: Option<u64>,
    suspect_since: Option<u64>,
    conn: Option<ConnType>,
    generation: u64,
    created: Option<u64>,
    last_send: Option<u64>,
    failure_at: Option<u64>,
    failure_reason: Option<String>,
    conn_at_last_use: Option<ConnType>,
}

struct Sub {
    label: String,
    pid: u32,
    cmdline: String,
    spawn_at: u64,
    /// When it exited, with its exit code or the signal that killed it.
    exit: Option<(u64, Option<i32>, Option<i32>)>,
}

/// What a relay server knows of its sessions.
#[derive(Default)]
struct RelayView {
    /// Open sessions: member index → relay wall time of the open.
    open: BTreeMap<usize, u64>,
    opens: u64,
    closes: u64,
    /// Bytes of closed sessions.
    bytes: (u64, u64),
    by_reason: BTreeMap<String, u64>,
}

struct ProbeSlot {
    target: &'static str,
    kind: ProbeKind,
    addr: &'static str,
    last_attempted: u64,
    last_outcome: ProbeOutcome,
    last_rtt: Option<u64>,
    last_error: Option<String>,
    attempts: u64,
    successes: u64,
}

struct NodeState {
    seq: u64,
    sink_seq: u64,
    snap_n: u64,
    pending: Vec<EventRecord>,
    boot: Option<Identity>,
    batches: Vec<Vec<EventRecord>>,
    snapshots: Vec<Snapshot>,
    finalize: Option<Finalize>,
    done: bool,
    hinted: bool,
    peers: BTreeMap<usize, PeerView>,
    relay_status: RelaySessionStatus,
    relay_changed: Option<u64>,
    home_relay: Option<String>,
    recent: VecDeque<SwimMessage>,
    subs: Vec<Sub>,
    probes: Vec<ProbeSlot>,
    relay: RelayView,
    /// Requests between `ObjectLoaded` and `StepCompleted`.
    in_flight: u32,
    /// Steps this node completed.
    steps: u64,
    /// Whether the stage was stopped.
    stopped: bool,
    rng: Rng,
}

impl NodeState {
    fn new(n: usize) -> Self {
        let slot = |target, kind, addr| ProbeSlot {
            target,
            kind,
            addr,
            last_attempted: 0,
            last_outcome: ProbeOutcome::Pending,
            last_rtt: None,
            last_error: None,
            attempts: 0,
            successes: 0,
        };
        NodeState {
            seq: 0,
            sink_seq: 0,
            snap_n: 0,
            pending: Vec::new(),
            boot: None,
            batches: Vec::new(),
            snapshots: Vec::new(),
            finalize: None,
            done: false,
            hinted: false,
            peers: BTreeMap::new(),
            relay_status: RelaySessionStatus::Unknown,
            relay_changed: None,
            home_relay: None,
            recent: VecDeque::new(),
            subs: Vec::new(),
            relay: RelayView::default(),
            in_flight: 0,
            steps: 0,
            stopped: false,
            probes: vec![
                slot(ECHO_PROBE, ProbeKind::UdpEcho, ECHO_PROBE_ADDR),
                slot(RELAY_PROBE, ProbeKind::UdpRelay, RELAY_PROBE_ADDR),
            ],
            rng: Rng(0x5eed_0000 + n as u64),
        }
    }

    fn receive(
        &mut self,
        kind: SwimMessageKind,
        peer: NodeIdHex,
        at_ms: u64,
        sequence: Option<u64>,
    ) {
        if self.recent.len() == SWIM_RING {
            self.recent.pop_front();
        }
        let mut message = SwimMessage::new(kind, peer, at_ms);
        message.sequence = sequence;
        self.recent.push_back(message);
    }
}

struct Run<'a> {
    specs: &'a [Spec],
    generation: Generation,
    nodes: Vec<NodeState>,
    queue: BinaryHeap<Reverse<(u64, u64, usize)>>,
    ops: Vec<Option<Step>>,
    finalize_recv: Option<u64>,
    assemble_at: Option<u64>,
    first_recv: Option<u64>,
    last_recv: Option<u64>,
    net: Rng,
}

impl<'a> Run<'a> {
    fn new(specs: &'a [Spec], generation: Generation) -> Self {
        Run {
            specs,
            generation,
            nodes: (0..specs.len()).map(NodeState::new).collect(),
            queue: BinaryHeap::new(),
            ops: Vec::new(),
            finalize_recv: None,
            assemble_at: None,
            first_recv: None,
            last_recv: None,
            net: Rng(0xc011_ec70_2000_0001),
        }
    }

    fn push(&mut self, step: Step) {
        let i = self.ops.len();
        self.queue.push(Reverse((step.t, i as u64, i)));
        self.ops.push(Some(step));
    }

    fn play(&mut self, steps: Vec<Step>) {
        for s in steps {
            self.push(s);
        }
        while let Some(Reverse((t, _, i))) = self.queue.pop() {
            if self.assemble_at.is_some_and(|a| t > a) {
                break;
            }
            let Some(step) = self.ops[i].take() else {
                continue;
            };
            let n = step.node;
            if self.nodes[n].done {
                continue;
            }
            // The oldest generation has no relay observability: its relay posts nothing.
            if n == RELAY && self.generation == Generation::Oldest {
                continue;
            }
            match step.op {
                Op::Boot => {
                    let identity = self.identity(n);
                    if self.post(n, t).is_some() {
                        self.nodes[n].boot = Some(identity);
                    }
                }
                Op::Emit(event) => self.record(n, t, event),
                Op::Touch(touch) => self.touch(n, t, touch),
                Op::Flush => self.flush(n, t),
                Op::Snapshot(trigger) => self.snapshot(n, t, trigger),
                Op::ClockSample(fields) => {
                    let node = &mut self.nodes[n];
                    node.sink_seq += 1;
                    node.pending.push(EventRecord::new(
                        self.specs[n].id,
                        node.sink_seq,
                        self.specs[n].wall(t),
                        custom(CustomPayload::ClockSample(fields)),
                    ));
                }
                Op::Finalize(reason) => {
                    let recv = t + self.specs[n].uplink + self.net.range(0, 3);
                    self.received(recv);
                    self.finalize_recv = Some(recv);
                    self.assemble_at = Some(recv + FINALIZE_WAIT + 38);
                    let mut finalize = Finalize::new();
                    finalize.exit_reason = Some(reason);
                    self.nodes[n].finalize = Some(finalize);
                    self.nodes[n].done = true;
                }
            }
        }
    }

    fn received(&mut self, recv: u64) {
        self.first_recv = Some(self.first_recv.map_or(recv, |f| f.min(recv)));
        self.last_recv = Some(self.last_recv.map_or(recv, |l| l.max(recv)));
    }

    /// A POST from node `n` at `t`: whether (and when) the collector stored it before assembly.
    /// Schedules the clock sample of the reply and answers a pending `snapshot_now` hint.
    fn post(&mut self, n: usize, t: u64) -> Option<u64> {
        let uplink = self.specs[n].uplink;
        let recv = t + uplink + self.net.range(0, 4);
        if self.assemble_at.is_some_and(|a| recv > a) {
            return None;
        }
        self.received(recv);
        let send = recv + self.net.range(1, 3);
        let reply = send + uplink + self.net.range(0, 4);
        self.push(Step {
            t: reply,
            node: n,
            op: Op::ClockSample(ClockSampleFields::new(
                self.specs[n].wall(t),
                T0 + recv,
                T0 + send,
            )),
        });
        if n != ORCH && self.finalize_recv.is_some_and(|f| recv > f) && !self.nodes[n].hinted {
            self.nodes[n].hinted = true;
            self.push(Step {
                t: reply + 1,
                node: n,
                op: Op::Snapshot(SnapshotTrigger::OnDemand),
            });
        }
        Some(recv)
    }

    fn flush(&mut self, n: usize, t: u64) {
        if self.nodes[n].pending.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut self.nodes[n].pending);
        if self.post(n, t).is_some() {
            self.nodes[n].batches.push(batch);
        }
    }

    fn snapshot(&mut self, n: usize, t: u64, trigger: SnapshotTrigger) {
        let snap = self.capture(n, t, trigger);
        self.nodes[n].snap_n += 1;
        if self.post(n, t).is_some() {
            self.nodes[n].snapshots.push(snap);
        }
    }

    fn record(&mut self, n: usize, t: u64, event: Event) {
        let w = self.specs[n].wall(t);
        self.apply(n, w, &event);
        let event = match self.generation {
            Generation::Current => event,
            Generation::Oldest => match self.oldest_event(n, event) {
                Some(event) => event,
                None => return,
            },
        };
        let node = &mut self.nodes[n];
        node.seq += 1;
        let seq = node.seq;
        let transition = matches!(event, Event::SwimTransition(_));
        node.pending
            .push(EventRecord::new(self.specs[n].id, seq, w, event));
        if transition {
            self.snapshot(n, t, SnapshotTrigger::Transition(format!("seq-{seq}")));
        }
    }

    fn run_id(&self) -> &'static str {
        match self.generation {
            Generation::Current => RUN_ID,
            Generation::Oldest => OLDEST_RUN_ID,
        }
    }

    fn index_of(&self, id: &NodeId) -> usize {
        self.specs.iter().position(|s| s.id == *id).unwrap_or(ORCH)
    }

    /// The event as the oldest generation writes it, if it writes it at all.
    fn oldest_event(&self, n: usize, event: Event) -> Option<Event> {
        let stage_index = self.specs[n].stage;
        Some(match event {
            Event::MessageSent(mut m) => {
                m.trace_id = None;
                m.parent_trace_id = None;
                m.into()
            }
            Event::MessageReceived(mut m) => {
                m.trace_id = None;
                m.parent_trace_id = None;
                m.into()
            }
            Event::SubprocessSpawned(e) if e.label == "worker" => {
                custom(CustomPayload::WorkerStarting(Json(json!({
                    "command": e.command,
                    "stage_index": stage_index,
                }))))
            }
            Event::SubprocessExited(e) if e.label == "worker" => {
                let status = match (e.exit_code, e.exit_signal) {
                    (Some(code), _) => format!("exit status: {code}"),
                    (None, Some(9)) => "signal: 9 (SIGKILL)".to_owned(),
                    (None, Some(sig)) => format!("signal: {sig}"),
                    (None, None) => "unknown".to_owned(),
                };
                custom(CustomPayload::WorkerExited(Json(json!({
                    "python_traceback": null,
                    "stage_index": stage_index,
                    "status": status,
                    "stderr_tail": ["Killed"],
                    "uptime_ms": e.uptime_ms,
                }))))
            }
            Event::Custom(c) => match c.payload {
                CustomPayload::IrohApiMissing(mut f) => {
                    f.fields = oldest_gaps()
                        .iter()
                        .map(|g| g.as_ref().to_owned())
                        .collect();
                    custom(CustomPayload::IrohApiMissing(f))
                }
                CustomPayload::ClockSample(_)
                | CustomPayload::RegisterName(_)
                | CustomPayload::WorkerReady(_) => Event::Custom(c),
                _ => return None,
            },
            Event::Error(e) if e.component == "app_introspect" => return None,
            e @ (Event::SwimTransition(_)
            | Event::DialStarted(_)
            | Event::DialOutcome(_)
            | Event::IrohConnTypeChanged(_)
            | Event::RelayChanged(_)
            | Event::SwimMetadataSent(_)
            | Event::SwimMetadataReceived(_)
            | Event::ConnectionCacheHit(_)
            | Event::ConnectionCacheMiss(_)
            | Event::ConnectionCacheInvalidated(_)
            | Event::NodeMapUpdate(_)
            | Event::ProbeSent(_)
            | Event::ProbeReceived(_)
            | Event::Error(_)) => e,
            _ => return None,
        })
    }

    /// Updates node `n`'s view from one of its own events at wall time `w`.
    fn apply(&mut self, n: usize, w: u64, event: &Event) {
        let peer_of = |id: &NodeId| self.index_of(id);
        match event {
            Event::SwimTransition(e) => {
                let m = peer_of(&e.peer);
                let p = self.nodes[n].peers.entry(m).or_default();
                p.opinion = Some(e.to.clone());
                p.since = Some(w);
                p.history.push(StateTransition::new(
                    e.from.clone(),
                    e.to.clone(),
                    w,
                    e.reason.clone(),
                ));
                p.suspect_since = (e.to == PeerState::Suspect).then_some(w);
            }
            Event::DialStarted(e) => {
                let m = peer_of(&e.peer);
                self.nodes[n].peers.entry(m).or_default().dial_started = Some(w);
            }
            Event::DialOutcome(e) => {
                let m = peer_of(&e.peer);
                let p = self.nodes[n].peers.entry(m).or_default();
                p.dial_outcome = Some(
                    match &e.outcome {
                        DialResult::Success => "Success",
                        DialResult::Timeout => "Timeout",
                        DialResult::Refused => "Refused",
                        DialResult::NoRoute => "NoRoute",
                        DialResult::Error(_) => "Error",
                    }
                    .to_owned(),
                );
                p.dial_duration = Some(e.duration_ms);
                if e.outcome == DialResult::Success {
                    p.generation += 1;
                    p.created = Some(w);
                    p.last_outbound_ok = Some(w);
                    if p.conn.is_none() {
                        p.conn = Some(ConnType::Relay);
                    }
                }
            }
            Event::IrohConnTypeChanged(e) => {
                let m = peer_of(&e.peer);
                self.nodes[n].peers.entry(m).or_default().conn = Some(e.new.clone());
            }
            Event::ConnectionCacheInvalidated(e) => {
                let m = peer_of(&e.peer);
                let p = self.nodes[n].peers.entry(m).or_default();
                p.failure_at = Some(w);
                p.failure_reason = Some(e.reason.clone());
            }
            Event::MessageSent(e) => {
                let m = peer_of(&e.peer);
                let p = self.nodes[n].peers.entry(m).or_default();
                p.last_outbound_ok = Some(w);
                p.last_send = Some(w);
                p.conn_at_last_use = p.conn.clone();
            }
            Event::MessageReceived(e) => {
                let m = peer_of(&e.peer);
                self.nodes[n].peers.entry(m).or_default().last_inbound = Some(w);
            }
            Event::GossipReceived(e) => {
                let m = peer_of(&e.source_peer);
                self.nodes[n].peers.entry(m).or_default().last_inbound = Some(w);
            }
            Event::SwimProbeSent(e) if e.kind == SwimProbeKind::Direct => {
                let m = peer_of(&e.target);
                self.nodes[n].peers.entry(m).or_default().ping_sent = Some(w);
            }
            Event::SwimProbeAcked(e) => {
                let m = peer_of(&e.target);
                let hex = self.specs[m].hex.clone();
                let node = &mut self.nodes[n];
                let p = node.peers.entry(m).or_default();
                p.ack_received = Some(w);
                p.last_inbound = Some(w);
                p.last_outbound_ok = Some(w);
                let kind = if e.kind == SwimProbeKind::Direct {
                    SwimMessageKind::Ack
                } else {
                    SwimMessageKind::IndirectAck
                };
                node.receive(kind, hex, w, Some(e.sequence));
            }
            Event::SwimMetadataReceived(e) => {
                let m = peer_of(&e.peer);
                self.nodes[n].peers.entry(m).or_default().metadata_seen = Some(e.version);
            }
            Event::RelaySessionStateChanged(e) => {
                self.nodes[n].relay_status = e.to_status.clone();
                self.nodes[n].relay_changed = Some(w);
            }
            Event::RelayChanged(e) => {
                self.nodes[n].home_relay = e.new_url.clone();
            }
            Event::SubprocessSpawned(e) => self.nodes[n].subs.push(Sub {
                label: e.label.clone(),
                pid: e.pid,
                cmdline: e.command.clone(),
                spawn_at: w,
                exit: None,
            }),
            Event::SubprocessExited(e) => {
                if let Some(s) = self.nodes[n].subs.iter_mut().find(|s| s.pid == e.pid) {
                    s.exit = Some((w, e.exit_code, e.exit_signal));
                }
            }
            Event::RelaySessionOpened(e) => {
                let m = self
                    .specs
                    .iter()
                    .position(|s| s.hex == e.peer_node_id_hex)
                    .unwrap_or(ORCH);
                let relay = &mut self.nodes[n].relay;
                relay.open.insert(m, e.at_ms);
                relay.opens += 1;
            }
            Event::RelaySessionClosed(e) => {
                let m = self
                    .specs
                    .iter()
                    .position(|s| s.hex == e.peer_node_id_hex)
                    .unwrap_or(ORCH);
                let relay = &mut self.nodes[n].relay;
                relay.open.remove(&m);
                relay.closes += 1;
                relay.bytes.0 += e.bytes_rx;
                relay.bytes.1 += e.bytes_tx;
                *relay.by_reason.entry(e.close_reason.clone()).or_default() += 1;
            }
            Event::ObjectLoaded(_) => self.nodes[n].in_flight += 1,
            Event::StepCompleted(_) => {
                let node = &mut self.nodes[n];
                node.in_flight = node.in_flight.saturating_sub(1);
                node.steps += 1;
            }
            Event::StageStopped(_) => self.nodes[n].stopped = true,
            Event::ProbeSent(e) => {
                if let Some(p) = self.nodes[n].probes.iter_mut().find(|p| p.kind == e.kind) {
                    p.last_attempted = w;
                    p.attempts += 1;
                }
            }
            Event::ProbeReceived(e) => {
                if let Some(p) = self.nodes[n].probes.iter_mut().find(|p| p.kind == e.kind) {
                    p.last_outcome = e.outcome.clone();
                    p.last_rtt = e.rtt_ms;
                    p.last_error = match e.outcome {
                        ProbeOutcome::Ok => None,
                        ProbeOutcome::Refused => {
                            Some("Connection refused (os error 111)".to_owned())
                        }
                        _ => Some(format!("no reply within {PROBE_TIMEOUT} ms")),
                    };
                    if e.outcome == ProbeOutcome::Ok {
                        p.successes += 1;
                    }
                }
            }
            _ => {}
        }
    }

    fn touch(&mut self, n: usize, t: u64, touch: Touch) {
        let w = self.specs[n].wall(t);
        let (from, kind, sequence) = match touch {
            Touch::Ping { from, seq } => (from, SwimMessageKind::Ping, Some(seq)),
            Touch::PingReq { from, seq } => (from, SwimMessageKind::PingReq, Some(seq)),
            Touch::JoinRequest { from } => (from, SwimMessageKind::JoinRequest, None),
            Touch::JoinResponse { from, members } => {
                (from, SwimMessageKind::JoinResponse, Some(members))
            }
        };
        let hex = self.specs[from].hex.clone();
        let node = &mut self.nodes[n];
        let p = node.peers.entry(from).or_default();
        p.last_inbound = Some(w);
        if matches!(touch, Touch::Ping { .. }) {
            p.ping_received = Some(w);
        }
        node.receive(kind, hex, w, sequence);
    }

    fn identity(&self, n: usize) -> Identity {
        let s = &self.specs[n];
        let rental = s.rental.as_ref();
        let mut identity = Identity::new(
            s.hex.clone(),
            s.short(),
            s.role,
            self.run_id(),
            s.wall(s.boot),
            0,
        );
        identity.stage_index = s.stage;
        identity.stage_count = s.stage.map(|_| 3);
        identity.vastai_contract_id = rental
            .filter(|r| r.forwarded)
            .map(|r| r.contract.to_owned());
        identity.host_ip_public = rental.map(|r| r.ip.to_owned());
        identity.host_country = rental.map(|r| r.country.to_owned());
        identity.datacenter_id = rental.map(|r| r.datacenter.to_owned());
        identity.hostname = Some(s.hostname.to_owned());
        identity.container_id = rental.map(|r| r.contract.to_owned());
        identity.binary_version = Some(BINARY_VERSION.to_owned());
        identity.git_sha = Some(GIT_SHA.to_owned());
        identity.iroh_version = Some(IROH_VERSION.to_owned());
        identity.home_relay_url_at_boot = s.is_stage().then(|| RELAY_URL.to_owned());
        if n == RELAY {
            identity.host_ip_public = Some("203.0.113.200".to_owned());
            identity.host_country = Some("DE".to_owned());
            identity.datacenter_id = Some("fsn1-dc14".to_owned());
        }
        if self.generation == Generation::Current {
            // Host-provider context (contract 1.1.0): what the node derived from its environment.
            let provider = match (n, rental) {
                (RELAY, _) => Some((
                    HostProvider::Other("hetzner".to_owned()),
                    Some("cx22-4471209"),
                )),
                (_, Some(_)) => Some((HostProvider::Vastai, None)),
                (_, None) => Some((HostProvider::Local, None)),
            };
            if let Some((provider, contract)) = provider {
                identity.host_provider = Some(provider);
                identity.host_provider_source = Some(ValueSource::Derived);
                identity.provider_contract_id = contract.map(str::to_owned);
                identity.provider_contract_id_source = contract.map(|_| ValueSource::Derived);
            }
        }
        identity
    }

    /// Node `n`'s snapshot at true time `t`.
    fn capture(&mut self, n: usize, t: u64, trigger: SnapshotTrigger) -> Snapshot {
        if n == RELAY {
            return self.capture_relay(t, trigger);
        }
        let generation = self.generation;
        let run_id = self.run_id();
        let s = &self.specs[n];
        let w = s.wall(t);
        let identity = self.identity(n);
        let node = &mut self.nodes[n];
        let scrape = |node: &mut NodeState, lo: u64, hi: u64| w - node.rng.range(lo, hi);
        let mut known: Vec<usize> = node.peers.keys().copied().collect();
        known.sort_by(|a, b| self.specs[*a].hex.0.cmp(&self.specs[*b].hex.0));

        let reachability = known
            .iter()
            .map(|m| {
                let p = &node.peers[m];
                let mut r = PeerReachability::new(
                    self.specs[*m].hex.clone(),
                    p.opinion.clone().unwrap_or(PeerState::Unknown),
                    p.history.clone(),
                );
                r.last_inbound_packet_at_ms = p.last_inbound;
                r.last_outbound_success_at_ms = p.last_outbound_ok;
                r.last_dial_started_at_ms = p.dial_started;
                r.last_dial_outcome = p.dial_outcome.clone();
                r.last_dial_duration_ms = p.dial_duration;
                r.current_swim_opinion_since_ms = p.since;
                r.metadata_version_seen = p.metadata_seen;
                r
            })
            .collect();

        let iroh_peers = known
            .iter()
            .map(|m| {
                let p = &node.peers[m];
                let peer_spec = &self.specs[*m];
                let relay_active = p.conn == Some(ConnType::Relay);
                let direct_addr = match &peer_spec.rental {
                    Some(r) => format!("{}:41641", r.ip),
                    None => "192.168.1.23:41641".to_owned(),
                };
                let usage = |active: bool| {
                    if active {
                        AddrUsage::Active
                    } else {
                        AddrUsage::Inactive
                    }
                };
                let mut peer = IrohPeer::new(peer_spec.hex.clone());
                peer.conn_type = p.conn.clone();
                peer.conn_type_source = p.conn.as_ref().map(|_| ValueSource::Derived);
                if p.conn.is_some() {
                    peer.direct_addresses = vec![TransportAddr::new(
                        direct_addr,
                        usage(p.conn == Some(ConnType::Direct)),
                    )];
                    peer.relay_urls = vec![TransportAddr::new(RELAY_URL, usage(relay_active))];
                }
                peer
            })
            .collect::<Vec<_>>();
        let direct = node
            .peers
            .values()
            .filter(|p| p.conn == Some(ConnType::Direct))
            .count();
        let relayed = node
            .peers
            .values()
            .filter(|p| p.conn == Some(ConnType::Relay))
            .count();
        let age = t.saturating_sub(s.boot);
        let counter = |group: &str, name: &str, value: u64| {
            MetricSample::new(group, name, MetricValue::Counter(value))
        };
        let gauge = |group: &str, name: &str, value: i64| {
            MetricSample::new(group, name, MetricValue::Gauge(value))
        };
        let punches = node
            .peers
            .values()
            .filter(|p| p.conn == Some(ConnType::Direct))
            .count() as u64;
        let mut metrics = vec![
            counter(
                "magicsock",
                "send_relay",
                age * (relayed as u64 * 7 + 1) / 1_000,
            ),
            gauge("magicsock", "num_direct_conns", direct as i64),
            gauge("magicsock", "num_relay_conns", relayed as i64),
        ];
        if punches > 0 {
            metrics.push(MetricSample::new(
                "magicsock",
                "holepunch_rtt_ms",
                MetricValue::Histogram(Histogram::new(punches, punches as f64 * 37.25 + 4.5)),
            ));
        }
        let connection_cache = known
            .iter()
            .filter(|m| node.peers[m].generation > 0)
            .map(|m| {
                let p = &node.peers[m];
                let mut cache = ConnectionCache::new(self.specs[*m].hex.clone(), p.generation);
                cache.created_at_ms = p.created;
                cache.last_successful_send_at_ms = p.last_send;
                cache.last_failure_at_ms = p.failure_at;
                cache.last_failure_reason = p.failure_reason.clone();
                cache.observed_conn_type_at_last_use = p.conn_at_last_use.clone();
                cache
            })
            .collect();
        // The node's transport cannot report the relay tunnel's status (`RelayTunnel.status` is
        // among its API gaps), so the snapshot says `unknown` with a derived source; the relay
        // session events carry what the node saw.
        let mut relay_session =
            RelaySession::new(RelaySessionStatus::Unknown, ValueSource::Derived);
        relay_session.relay_url = Some(RELAY_URL.to_owned());
        let mut iroh = IrohState::new();
        iroh.home_relay_url = if n == ORCH {
            node.home_relay.clone()
        } else {
            Some(RELAY_URL.to_owned())
        };
        iroh.peers = iroh_peers;
        iroh.metrics = metrics;
        iroh.connection_cache = connection_cache;
        iroh.api_gaps = all_gaps();
        iroh.iroh_version = Some(IROH_VERSION.to_owned());
        iroh.relay_session = Some(relay_session);
        iroh.scraped_at_ms = scrape(node, 8, 20);

        let (pi, pt, st, k, dr, fl, mp) = SWIM_CONFIG;
        let config = SwimConfig::new(pi, pt, st, k, dr, fl, mp, "periodic");
        let mut swim = SwimState::new(config, s.hex.clone(), 1, 1);
        swim.peers = known
            .iter()
            .filter(|m| node.peers[m].opinion.is_some())
            .map(|m| {
                let p = &node.peers[m];
                let state = p.opinion.clone().unwrap_or(PeerState::Unknown);
                let mut peer = SwimPeer::new(self.specs[*m].hex.clone(), state, 1);
                peer.last_ping_sent_at_ms = p.ping_sent;
                peer.last_ack_received_at_ms = p.ack_received;
                peer.last_ping_received_at_ms = p.ping_received;
                peer.suspect_started_at_ms = p.suspect_since;
                peer.metadata_version_seen = p.metadata_seen;
                peer
            })
            .collect();
        swim.recent_messages = node.recent.iter().cloned().collect();
        swim.scraped_at_ms = scrape(node, 4, 7);

        let host = host_state(s, n, t, scrape(node, 20, 45));
        let mut probes = ProbeState::new();
        probes.probes = node
            .probes
            .iter()
            .map(|p| {
                let mut probe = Probe::new(
                    p.target,
                    p.kind.clone(),
                    p.last_outcome.clone(),
                    p.attempts,
                    p.successes,
                );
                probe.resolved_addr = Some(p.addr.to_owned());
                probe.last_attempted_at_ms = p.last_attempted;
                probe.last_rtt_ms = p.last_rtt;
                probe.last_error = p.last_error.clone();
                if generation == Generation::Current {
                    let (port, relay) = match p.kind {
                        ProbeKind::UdpRelay => (3478, Some(RELAY_URL.to_owned())),
                        _ => (7777, None),
                    };
                    probe.target_port = Some(port);
                    probe.relay_url = relay;
                }
                probe
            })
            .collect();
        probes.scraped_at_ms = scrape(node, 2, 4);
        let vastai = s.rental.as_ref().map(|r| {
            let mut vastai = VastaiContext::new();
            vastai.container_id = Some(r.contract.to_owned());
            vastai.hostname = Some(s.hostname.to_owned());
            vastai.env_vars = [
                ("CONTAINER_ID", r.contract.to_owned()),
                ("CUDA_VERSION", "12.4.1".to_owned()),
                ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility".to_owned()),
                ("NVIDIA_VISIBLE_DEVICES", "all".to_owned()),
                ("VAST_CONTAINERLABEL", format!("C.{}", r.contract)),
                ("VAST_GPU_NAME", r.gpu.to_owned()),
            ]
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect();
            vastai.process_start_ms = w - 1;
            vastai.captured_at_ms = w - 1;
            vastai
        });
        let mut process = ProcessStats::new();
        process.rss_bytes = Some(38_000_000 + age * 410 + node.rng.range(0, 90_000));
        process.vm_size_bytes = Some(1_209_000_000 + age * 96);
        process.open_fd_count = Some(31 + (node.peers.len() as u64) * 3 + node.rng.range(0, 2));
        process.cpu_ms = Some(age * 23 / 100 + 140);
        process.tokio = Some(TokioStats::new(TokioFlavor::MultiThread));
        process.captured_at_ms = w - 1;
        let subprocess = s.is_stage().then(|| {
            let mut subprocesses: Vec<Subprocess> = node
                .subs
                .iter()
                .map(|sub| {
                    let status = match sub.exit {
                        Some(_) => SubprocessStatus::Exited,
                        None => SubprocessStatus::Running,
                    };
                    let mut out = Subprocess::new(sub.label.clone(), sub.pid, status);
                    out.cmdline = Some(sub.cmdline.clone());
                    match sub.exit {
                        Some((exit_at, code, signal)) => {
                            out.exit_at_ms = Some(exit_at);
                            out.exit_code = code;
                            out.exit_signal = signal;
                        }
                        None => {
                            let up = w.saturating_sub(sub.spawn_at);
                            out.parent_pid = Some(s.pid);
                            out.spawn_at_ms = Some(sub.spawn_at);
                            // (RSS, virtual size, open fds, CPU per 100 ms of uptime)
                            let (rss, vm, fds, cpu) = match sub.label.as_str() {
                                "worker" => (
                                    412_000_000 + up.min(2_400) * 2_310_000,
                                    14_800_000_000,
                                    57,
                                    93,
                                ),
                                // Hung in the driver: its memory stays put, its CPU time climbs.
                                "gpu-probe" => (9_420_000 + up / 5_000 * 4_096, 211_000_000, 6, 97),
                                _ => (61_000_000 + up * 9_000, 402_000_000, 14, 41),
                            };
                            out.rss_bytes = Some(rss);
                            out.vm_size_bytes = Some(vm);
                            out.open_fd_count = Some(fds);
                            out.cpu_ms = Some(up * cpu / 100);
                        }
                    }
                    out
                })
                .collect();
            subprocesses.sort_by(|a, b| a.label.cmp(&b.label).then(a.pid.cmp(&b.pid)));
            let mut state = SubprocessState::new();
            state.subprocesses = subprocesses;
            state.scraped_at_ms = w - 2;
            state
        });

        // The application block of a stage: its worker's status, requests and GPU memory. Stage-2
        // cannot ask its GPU (its `gpu-probe` hangs), so it declares the gaps.
        let app = s.stage.map(|i| {
            let loaded = node.steps > 0 || node.in_flight > 0;
            let status = if node.stopped {
                WorkerStatus::Stopped
            } else if node.in_flight > 0 {
                WorkerStatus::Busy
            } else if loaded || age > 6_000 {
                WorkerStatus::Ready
            } else {
                WorkerStatus::Loading
            };
            let mut app = AppState::new(i, status);
            app.in_flight_requests = Some(node.in_flight);
            app.worker_queue_depth = Some(node.in_flight.saturating_sub(1));
            app.kv_cache_blocks_max = Some(2_048);
            app.kv_cache_blocks_used = Some(if node.stopped {
                0
            } else {
                96 + node.steps as u32 * 40
            });
            if i == 2 {
                app.api_gaps = vec![
                    CaptureGap::AppStateGpuMemUsedBytes,
                    CaptureGap::AppStateGpuMemTotalBytes,
                ];
            } else {
                app.gpu_mem_source = Some(ValueSource::Driver);
                app.gpu_mem_total_bytes = Some(25_757_220_864);
                app.gpu_mem_used_bytes = Some(if age > 5_000 {
                    17_180_000_000 + node.steps * 1_048_576
                } else {
                    1_310_000_000
                });
            }
            app.scraped_at_ms = Some(w - 3);
            app
        });
        // The actor runtime: mailboxes and the scheduler; without `tokio_unstable` the runtime
        // cannot say how old its oldest pending task is.
        let actor = |name: &str, depth: u64, processed: u64, p50: f64, p99: f64| {
            let mut a = ActorStats::new(name, depth, processed, 0);
            a.mailbox_source = Some(ValueSource::Measured);
            a.oldest_msg_age_ms = (depth > 0).then_some(depth * 37);
            a.p50_process_ms = Some(p50);
            a.p99_process_ms = Some(p99);
            a
        };
        let backlog = if n == ORCH && (RELAY_DOWN..RELAY_BACK + 1_000).contains(&t) {
            (t - RELAY_DOWN) / 1_500
        } else {
            0
        };
        let mut scheduler = SchedulerStats::new();
        scheduler.task_count = Some(41 + node.peers.len() as u64 * 6 + backlog);
        let mut actors = ActorState::new();
        actors.actors = vec![
            actor("diag_sink", 0, age / 1_000, 0.5, 2.25),
            actor(
                "pipeline",
                backlog,
                node.steps * 3 + age / 4_000,
                1.5,
                12.75,
            ),
            actor("reachability", 0, age / 250, 0.25, 1.5),
            actor("swim", 0, age / 180, 0.25, 3.5),
        ];
        actors.scheduler = Some(scheduler);
        actors.api_gaps = vec![CaptureGap::SchedulerStatsOldestPendingTaskAgeMs];
        actors.scraped_at_ms = Some(w - 2);

        let mut body = SnapshotBody::new(reachability);
        body.iroh = Some(iroh);
        body.swim = Some(swim);
        body.host = Some(host);
        body.probes = Some(probes);
        body.vastai = vastai;
        body.process = Some(process);
        body.subprocess = subprocess;
        body.app = app;
        body.actors = Some(actors);
        if generation == Generation::Oldest {
            oldest_body(&mut body);
        }
        let snapshot_id = format!("{}-{}", s.short(), node.snap_n);
        Snapshot::new(identity, run_id, snapshot_id, w, node.seq, trigger, body)
    }

    /// The relay server's snapshot: no SWIM, iroh endpoint or probes, its sessions instead.
    fn capture_relay(&mut self, t: u64, trigger: SnapshotTrigger) -> Snapshot {
        let n = RELAY;
        let s = &self.specs[n];
        let w = s.wall(t);
        let identity = self.identity(n);
        let node = &mut self.nodes[n];
        let age = t.saturating_sub(s.boot);
        let relay = &node.relay;
        let (mut rx, mut tx) = relay.bytes;
        for (&m, &opened) in &relay.open {
            let (r, x) = relay_bytes(m, w.saturating_sub(opened));
            rx += r;
            tx += x;
        }
        let mut server =
            RelayServer::new(relay.open.len() as u64, relay.opens, relay.closes, rx, tx);
        server.counters_source = Some(ValueSource::Relay);
        server.closes_by_reason = relay
            .by_reason
            .iter()
            .map(|(r, c)| (r.clone(), *c))
            .collect();
        let mut process = ProcessStats::new();
        process.rss_bytes =
            Some(21_500_000 + relay.open.len() as u64 * 180_000 + node.rng.range(0, 40_000));
        process.vm_size_bytes = Some(612_000_000);
        process.open_fd_count = Some(19 + relay.open.len() as u64 * 2);
        process.cpu_ms = Some(age * 4 / 100 + 60);
        process.tokio = Some(TokioStats::new(TokioFlavor::MultiThread));
        process.captured_at_ms = w - 1;
        let scraped = w - node.rng.range(20, 45);
        let mut body = SnapshotBody::new(Vec::new());
        body.host = Some(host_state(s, n, t, scraped));
        body.process = Some(process);
        body.relay_server = Some(server);
        let snapshot_id = format!("{}-{}", s.short(), node.snap_n);
        Snapshot::new(identity, RUN_ID, snapshot_id, w, node.seq, trigger, body)
    }

    /// The bundle of what the collector stored: each node's latest boot record, its event batches
    /// and snapshots in the order they arrived, its finalize record. The collector's time span is
    /// from the first POST it received to the last.
    fn into_bundle(self) -> BundleContents {
        let writer = BundleWriter::new(
            WriterKind::Sim,
            "diagwire-example",
            env!("CARGO_PKG_VERSION"),
        );
        let mut bundle = Writer::new(self.run_id(), writer);
        for (s, node) in self.specs.iter().zip(&self.nodes) {
            if let Some(boot) = &node.boot {
                bundle.boot(boot);
            }
            for batch in &node.batches {
                bundle.events(&s.hex, batch);
            }
            for snapshot in &node.snapshots {
                bundle.snapshot(snapshot);
            }
            if let Some(finalize) = &node.finalize {
                bundle.finalize(&s.hex, finalize);
            }
        }
        if let (Some(first), Some(last)) = (self.first_recv, self.last_recv) {
            bundle.collector_span(T0 + first, T0 + last);
        }
        let done = bundle.finish();
        assert!(
            done.problems.is_empty(),
            "the example's labels are safe and no file is added twice: {:?}",
            done.problems
        );
        let mut contents = done.contents;
        if self.generation == Generation::Oldest {
            // The oldest collector's manifest: no contract version, writer or vast.ai counts.
            let mut manifest = done.manifest;
            manifest.contract_version = None;
            manifest.writer = None;
            for node in &mut manifest.nodes {
                node.contract_version = None;
                node.vastai_records = None;
            }
            contents.insert_json(diagwire::layout::MANIFEST, &manifest);
        }
        contents
    }
}

/// Strips a snapshot body to what the oldest generation writes.
fn oldest_body(body: &mut SnapshotBody) {
    body.registry = None;
    body.relay_server = None;
    body.subprocess = None;
    body.app = None;
    body.actors = None;
    if let Some(iroh) = &mut body.iroh {
        iroh.iroh_version = None;
        iroh.relay_session = None;
        iroh.api_gaps = oldest_gaps();
        for peer in &mut iroh.peers {
            peer.conn_type_source = None;
        }
    }
    if let Some(net) = body.host.as_mut().and_then(|h| h.network.as_mut()) {
        net.udp_kernel_stats = None;
        for interface in &mut net.interfaces {
            interface.counters = None;
        }
    }
    if let Some(probes) = &mut body.probes {
        for probe in &mut probes.probes {
            probe.target_port = None;
            probe.relay_url = None;
        }
    }
}

/// The host block: network state as of the last 10-second refresh, and DNS.
fn host_state(s: &Spec, n: usize, t: u64, scraped_at_ms: u64) -> HostState {
    let mut host = HostState::new();
    host.scraped_at_ms = scraped_at_ms;
    let first = s.boot + 1_000;
    if t < first {
        return host;
    }
    let refreshed = first + (t - first) / 10_000 * 10_000;
    let secs = (refreshed - s.boot) / 1_000;
    let refreshed_at_ms = s.wall(refreshed);
    // Per-second rates; stage-1 sits on a lossy host whose NIC and socket buffers drop.
    let lossy = n == 2;
    let interface = |name: &str, addresses: &[&str], mtu: u32, counters: InterfaceCounters| {
        let mut interface = NetInterface::new(name, true);
        interface.addresses = addresses.iter().map(|a| (*a).to_owned()).collect();
        interface.mtu = Some(mtu);
        interface.counters = Some(counters);
        interface
    };
    let eth = |name: &str, addresses: &[&str], base: u64| {
        let counters = InterfaceCounters::new(
            base * 1_000 + secs * 48_200,
            base + secs * 171,
            0,
            if lossy {
                40 + secs * 23 / 10
            } else if n == RELAY {
                7
            } else {
                3 + secs / 20
            },
            base * 800 + secs * 39_700,
            base * 4 / 5 + secs * 158,
            0,
            if lossy { secs / 12 } else { 0 },
        );
        interface(name, addresses, 1_500, counters)
    };
    let lo = interface(
        "lo",
        &["127.0.0.1/8", "::1/128"],
        65_536,
        InterfaceCounters::new(
            88_000 + secs * 6_100,
            900 + secs * 41,
            0,
            0,
            88_000 + secs * 6_100,
            900 + secs * 41,
            0,
            0,
        ),
    );
    let route = |family: RouteFamily, destination: &str, gateway: Option<&str>, interface: &str| {
        let mut route = Route::new(family, destination, interface);
        route.gateway = gateway.map(str::to_owned);
        route
    };
    let socket = |local: &str, inode: u64| UdpSocket::new(local, "0.0.0.0:0", "07", inode);
    let mut udp = UdpKernelStats::new();
    udp.in_datagrams = Some(12_400 + secs * 57);
    udp.no_ports = Some(match n {
        ORCH => 31 + secs / 4,
        RELAY => 410,
        _ => 2 + secs / 30,
    });
    udp.in_errors = Some(if lossy { 6 + secs * 4 / 5 } else { 0 });
    udp.out_datagrams = Some(11_900 + secs * 61);
    udp.rcvbuf_errors = Some(if lossy { 6 + secs * 4 / 5 } else { 0 });
    udp.sndbuf_errors = Some(0);
    let mut network = HostNetwork::new();
    if n == ORCH {
        network.interfaces = vec![
            eth(
                "enp3s0",
                &["192.168.1.23/24", "fe80::a00:27ff:fe4e:66a1/64"],
                930_000,
            ),
            lo,
        ];
        network.default_routes = vec![
            route(RouteFamily::V4, "0.0.0.0/0", Some("192.168.1.1"), "enp3s0"),
            route(RouteFamily::V4, "192.168.1.0/24", None, "enp3s0"),
            route(RouteFamily::V6, "::/0", Some("fe80::1"), "enp3s0"),
        ];
        network.udp_sockets = vec![socket("0.0.0.0:41641", 2_231_877)];
        network.conntrack_count = Some(286 + secs * 3 / 2);
        network.ipv6_enabled = Some(true);
        network.resolv_conf_nameservers = vec!["127.0.0.53".to_owned()];
    } else if n == RELAY {
        network.interfaces = vec![
            eth(
                "eth0",
                &["203.0.113.200/24", "2001:db8:200::2/64"],
                2_400_000,
            ),
            lo,
        ];
        network.default_routes = vec![
            route(RouteFamily::V4, "0.0.0.0/0", Some("203.0.113.1"), "eth0"),
            route(RouteFamily::V6, "::/0", Some("fe80::1"), "eth0"),
        ];
        network.udp_sockets = vec![socket("0.0.0.0:3478", 77_120), socket("[::]:3478", 77_121)];
        network.conntrack_count = Some(1_204 + secs / 2);
        network.ipv6_enabled = Some(true);
        network.resolv_conf_nameservers = vec!["185.12.64.1".to_owned(), "185.12.64.2".to_owned()];
    } else {
        network.interfaces = vec![eth("eth0", &["172.17.0.2/16"], 410_000)];
        network.default_routes = vec![
            route(RouteFamily::V4, "0.0.0.0/0", Some("172.17.0.1"), "eth0"),
            route(RouteFamily::V4, "172.17.0.0/16", None, "eth0"),
        ];
        network.udp_sockets = vec![socket("0.0.0.0:41641", 91_344 + n as u64)];
        network.ipv6_enabled = Some(false);
        network.resolv_conf_nameservers = vec!["8.8.8.8".to_owned(), "1.1.1.1".to_owned()];
    }
    network.udp_kernel_stats = Some(udp);
    network.refreshed_at_ms = refreshed_at_ms;
    let resolver = match n {
        ORCH => "127.0.0.53",
        RELAY => "185.12.64.1",
        _ => "8.8.8.8",
    };
    let mut dns = DnsResolution::new(COLLECTOR_HOST, refreshed_at_ms);
    dns.a_records = vec!["198.51.100.20".to_owned()];
    dns.resolver_used = Some(resolver.to_owned());
    host.network = Some(network);
    host.dns = vec![dns];
    host
}
