//! The world of the example run: its clock origin and constants, the nodes (role, id, clock offset,
//! relay session times, host), the network's latencies and which links the relay outage breaks.

use diagwire::v1::*;
use diagwire_runtime::{SplitMix64, short_hex};

/// Collector clock (ms since the epoch) at the orchestrator's process start; all run-relative
/// times below count from here in "true" time, which is the collector's clock.
pub(crate) const T0: u64 = 1_779_733_870_000;
pub(crate) const RELAY_URL: &str = "https://relay-eu.example.net./";
pub(crate) const RELAY_PROBE: &str = "relay-port-relay-eu.example.net";
pub(crate) const RELAY_PROBE_ADDR: &str = "203.0.113.200:3478";
pub(crate) const ECHO_PROBE: &str = "collector_udp_echo";
pub(crate) const ECHO_PROBE_ADDR: &str = "198.51.100.20:7777";
pub(crate) const COLLECTOR_HOST: &str = "collector.n3.example.net";
pub(crate) const IROH_VERSION: &str = "0.96.0";
pub(crate) const BINARY_VERSION: &str = "0.4.2";
pub(crate) const GIT_SHA: &str = "3f9c2a1d8e7b6a5c4d3e2f1a0b9c8d7e6f5a4b3c";

/// The relay server is down between these two instants.
pub(crate) const RELAY_DOWN: u64 = 21_000;
pub(crate) const RELAY_BACK: u64 = 35_500;
/// The orchestrator starts its finalize sequence here.
pub(crate) const FINALIZE_AT: u64 = 53_000;
/// The orchestrator's process exits here, after posting its finalize.
pub(crate) const ORCH_EXIT: u64 = FINALIZE_AT + 100;
/// No request starts later than this before the end of the run.
pub(crate) const RUN_DONE: u64 = 50_800;
/// How long the collector waits after a finalize before it assembles the bundle.
pub(crate) const FINALIZE_WAIT: u64 = 5_000;
/// Stages run their loops until here; what arrives after assembly is not in the bundle.
pub(crate) const STAGE_END: u64 = 59_500;

pub(crate) const DIAL_TIMEOUT: u64 = 5_000;
pub(crate) const SEND_TIMEOUT: u64 = 5_000;
pub(crate) const TICK: u64 = 100;
pub(crate) const PROBE_PERIOD: u64 = 10_000;
pub(crate) const PROBE_TIMEOUT: u64 = 2_000;
/// The orchestrator starts a request this often while all its stages are alive.
pub(crate) const REQUEST_EVERY: u64 = 3_900;
/// The recent-messages ring is cut to this many entries.
pub(crate) const SWIM_RING: usize = 6;

pub(crate) const ORCH: usize = 0;
/// The SWIM members: the orchestrator and the three stages.
pub(crate) const NODES: usize = 4;
/// The relay server's node, which is no SWIM member.
pub(crate) const RELAY: usize = 4;
/// Why the relay closed every session at `RELAY_DOWN`.
pub(crate) const RELAY_CLOSE_REASON: &str = "listener_restart";
/// Edge ids: edge `EDGE0 + s` carries activations into stage `s`; `EDGE0 + 3` back to the
/// orchestrator.
pub(crate) const EDGE0: u64 = 100;
pub(crate) const LAST_EDGE: u64 = EDGE0 + 3;

/// One-way latency from each member to the relay server.
pub(crate) const RELAY_LAT: [u64; NODES] = [24, 17, 13, 46];
/// Bytes per second the relay receives from and sends to each member while its session is open.
pub(crate) const RELAY_RATE: [(u64, u64); NODES] = [
    (23_800, 21_100),
    (6_900, 7_400),
    (7_700, 6_800),
    (8_300, 9_100),
];

/// One-way latency between nodes in ms (orchestrator links go through the relay).
pub(crate) const LAT: [[u64; NODES]; NODES] = [
    [0, 52, 58, 97],
    [52, 0, 9, 44],
    [58, 9, 0, 41],
    [97, 44, 41, 0],
];

pub(crate) struct Rental {
    pub(crate) contract: &'static str,
    /// Whether the orchestrator forwarded the contract id (else it is only in `container_id`).
    pub(crate) forwarded: bool,
    pub(crate) ip: &'static str,
    pub(crate) country: &'static str,
    pub(crate) datacenter: &'static str,
    pub(crate) gpu: &'static str,
}

pub(crate) struct Spec {
    pub(crate) role: &'static str,
    pub(crate) stage: Option<u32>,
    pub(crate) id: NodeId,
    pub(crate) hex: NodeIdHex,
    /// Process start, run-relative true time.
    pub(crate) boot: u64,
    /// Node clock minus collector clock.
    pub(crate) clock_offset: i64,
    /// One-way latency to the collector.
    pub(crate) uplink: u64,
    /// Relay session: first connected (after boot), lost, reconnecting, reconnected.
    pub(crate) relay_up: u64,
    pub(crate) relay_lost: u64,
    pub(crate) relay_retry: u64,
    pub(crate) relay_back: u64,
    pub(crate) hostname: &'static str,
    pub(crate) rental: Option<Rental>,
    pub(crate) pid: u32,
    pub(crate) actor_addr: String,
    pub(crate) meta_hash: u64,
}

impl Spec {
    pub(crate) fn wall(&self, t: u64) -> u64 {
        (T0 as i64 + t as i64 + self.clock_offset) as u64
    }

    pub(crate) fn short(&self) -> String {
        short_hex(&self.hex.0).to_owned()
    }

    pub(crate) fn is_stage(&self) -> bool {
        self.stage.is_some()
    }
}

/// What differs between the nodes; ids and addresses are drawn from the PRNG.
pub(crate) struct Plan {
    pub(crate) role: &'static str,
    pub(crate) stage: Option<u32>,
    pub(crate) boot: u64,
    pub(crate) clock_offset: i64,
    pub(crate) uplink: u64,
    /// Relay session: first connected, lost, reconnecting, reconnected.
    pub(crate) relay: [u64; 4],
    pub(crate) hostname: &'static str,
    pub(crate) rental: Option<Rental>,
    pub(crate) pid: u32,
}

pub(crate) fn specs() -> Vec<Spec> {
    let mut rng = SplitMix64::new(0x6e33_7265_6c61_7901);
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
            let id = NodeId(bytes32(&mut rng));
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
                actor_addr: NodeId(bytes32(&mut rng)).to_hex().0,
                meta_hash: rng.next_u64(),
            }
        })
        .collect()
}

/// One-way latency between two nodes.
pub(crate) fn lat(a: usize, b: usize) -> u64 {
    LAT[a][b]
}

/// When the path between two nodes works again after the outage (both relay sessions are back).
pub(crate) fn link_back(specs: &[Spec], a: usize, b: usize) -> u64 {
    specs[a].relay_back.max(specs[b].relay_back) + 250
}

/// Whether a packet from `a` to `b` sent at `t` arrives: only relay-borne links break.
pub(crate) fn link_up(specs: &[Spec], a: usize, b: usize, t: u64) -> bool {
    if a != ORCH && b != ORCH {
        return true;
    }
    t < ORCH_EXIT && !(RELAY_DOWN..link_back(specs, a, b)).contains(&t)
}

/// Bytes the relay received from and sent to member `n` over `ms` milliseconds of its session.
pub(crate) fn relay_bytes(n: usize, ms: u64) -> (u64, u64) {
    let (rx, tx) = RELAY_RATE[n];
    (rx * ms / 1_000, tx * ms / 1_000)
}

pub(crate) fn all_gaps() -> Vec<ApiGap> {
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

/// The SWIM configuration every member runs, in ticks of [`TICK`].
pub(crate) struct SwimTiming {
    /// Ticks between two probe rounds.
    pub(crate) probe_interval_ticks: u64,
    /// Ticks to wait for a direct ack before probing indirectly.
    pub(crate) probe_timeout_ticks: u64,
    /// Ticks a peer stays Suspect before it is declared Dead.
    pub(crate) suspicion_timeout_ticks: u64,
    /// Peers asked to probe a target indirectly (k).
    pub(crate) indirect_probes_k: u32,
    /// Ticks between re-probes of a Dead peer.
    pub(crate) dead_reprobe_interval_ticks: u64,
    /// Gossip fan-out multiplier.
    pub(crate) gossip_fanout_lambda: u32,
    /// Most membership updates piggybacked on one message.
    pub(crate) max_piggyback: u32,
}

pub(crate) const SWIM: SwimTiming = SwimTiming {
    probe_interval_ticks: 20,
    probe_timeout_ticks: 3,
    suspicion_timeout_ticks: 60,
    indirect_probes_k: 2,
    dead_reprobe_interval_ticks: 50,
    gossip_fanout_lambda: 3,
    max_piggyback: 8,
};

impl SwimTiming {
    /// The configuration as the SWIM block of a snapshot reports it.
    pub(crate) fn config(&self) -> SwimConfig {
        SwimConfig::new(
            self.probe_interval_ticks,
            self.probe_timeout_ticks,
            self.suspicion_timeout_ticks,
            self.indirect_probes_k,
            self.dead_reprobe_interval_ticks,
            self.gossip_fanout_lambda,
            self.max_piggyback,
            "periodic",
        )
    }
}

/// 32 bytes, such as a node id, from four draws of the generator (little-endian each).
pub fn bytes32(rng: &mut SplitMix64) -> [u8; 32] {
    let mut out = [0u8; 32];
    for chunk in out.chunks_mut(8) {
        chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
    }
    out
}
