//! Mirror of swactor's snapshot family (`diagnostics/snapshot.rs` newest, `reachability.rs`).
//!
//! Tier-block options and vectors are left out when empty; `PeerReachability` writes every key.

use std::collections::VecDeque;

use arbitrary::{Arbitrary, Result, Unstructured};
use serde::{Deserialize, Serialize};

use super::event::{ConnType, EventRecord, PeerState};
use super::identity::Identity;
use super::{finite_f64, hex64, mostly, ms_epoch, opt_mostly, opt_ms_epoch};

/// The gap names swactor's iroh introspector can declare.
pub const API_GAP_NAMES: &[&str] = &[
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

fn small_vec<T>(
    u: &mut Unstructured<'_>,
    max: usize,
    mut item: impl FnMut(&mut Unstructured<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let n = u.int_in_range(0..=max)?;
    (0..n).map(|_| item(u)).collect()
}

fn transition_tag(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(if bool::arbitrary(u)? {
        format!("seq-{}", u64::arbitrary(u)?)
    } else {
        String::arbitrary(u)?
    })
}

/// swactor `SnapshotTrigger`: adjacently tagged on `kind` / `data`.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
#[serde(tag = "kind", content = "data")]
pub enum SnapshotTrigger {
    /// The periodic timer fired.
    Periodic,
    /// A SWIM transition fired; the string correlates the event (`seq-<N>`).
    Transition(#[arbitrary(with = transition_tag)] String),
    /// The collector asked for a snapshot.
    OnDemand,
}

/// swactor `Snapshot`: the envelope posted to `/diag/snapshot`.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct Snapshot {
    /// The node's identity, re-embedded.
    pub identity: Identity,
    /// The run id.
    pub run_id: String,
    /// `<short id>-<n>`.
    pub snapshot_id: String,
    /// Capture time, ms since the epoch.
    #[arbitrary(with = ms_epoch)]
    pub wall_ms: u64,
    /// The event counter at capture.
    pub monotonic_seq: u64,
    /// Why the snapshot was taken.
    pub trigger: SnapshotTrigger,
    /// The snapshot body.
    pub body: SnapshotBody,
}

/// swactor `SnapshotBody`: reachability always, every other block only when present.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct SnapshotBody {
    /// Per-peer reachability log (always written).
    pub reachability: Vec<PeerReachability>,
    /// Event tail (prod leaves it empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<EventRecord>,
    /// Iroh-internal block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iroh: Option<Tier2IrohState>,
    /// SWIM-internal block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swim: Option<Tier2SwimState>,
    /// Host block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Tier3HostState>,
    /// Outbound probes block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<Tier3ProbeState>,
    /// vast.ai context block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vastai: Option<Tier3VastaiContext>,
    /// Process stats block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<Tier3ProcessStats>,
    /// Name registry block (newest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<Tier2Registry>,
    /// Relay server block (newest, relay role only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay_server: Option<Tier3RelayServer>,
    /// Subprocess block (newest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subprocess: Option<Tier3SubprocessState>,
}

// ---------------------------------------------------------------------------------------------
// Reachability (`reachability.rs`)

fn dial_outcome_debug(u: &mut Unstructured<'_>) -> Result<Option<String>> {
    Ok(match u.int_in_range(0..=5u8)? {
        0 => None,
        1 => Some("Success".to_owned()),
        2 => Some("Timeout".to_owned()),
        3 => Some("Refused".to_owned()),
        4 => Some("NoRoute".to_owned()),
        _ => Some(format!("Error({:?})", String::arbitrary(u)?)),
    })
}

/// swactor `StateTransition`: one entry of the per-peer SWIM history ring.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct StateTransition {
    /// Previous state.
    pub from: PeerState,
    /// New state.
    pub to: PeerState,
    /// When, ms since the epoch.
    #[arbitrary(with = ms_epoch)]
    pub at_ms: u64,
    /// Why.
    pub reason: String,
}

/// swactor `PeerReachability`: every `Option` written, `null` when absent.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct PeerReachability {
    /// The remote peer.
    #[arbitrary(with = hex64)]
    pub peer_node_id_hex: String,
    /// Last inbound packet.
    #[arbitrary(with = opt_ms_epoch)]
    pub last_inbound_packet_at_ms: Option<u64>,
    /// Path of the last inbound packet (never set by prod).
    pub last_inbound_via: Option<String>,
    /// Last successful send.
    #[arbitrary(with = opt_ms_epoch)]
    pub last_outbound_success_at_ms: Option<u64>,
    /// Path of the last send (never set by prod).
    pub last_outbound_via: Option<String>,
    /// Last dial start.
    #[arbitrary(with = opt_ms_epoch)]
    pub last_dial_started_at_ms: Option<u64>,
    /// Debug text of the last dial outcome.
    #[arbitrary(with = dial_outcome_debug)]
    pub last_dial_outcome: Option<String>,
    /// Duration of the last dial.
    pub last_dial_duration_ms: Option<u64>,
    /// Current SWIM opinion.
    pub current_swim_opinion: PeerState,
    /// Since when.
    #[arbitrary(with = opt_ms_epoch)]
    pub current_swim_opinion_since_ms: Option<u64>,
    /// Recent transitions, oldest first.
    pub swim_transition_history: VecDeque<StateTransition>,
    /// Last metadata version seen.
    pub metadata_version_seen: Option<u64>,
    /// Relay URL from metadata (never set by prod).
    pub metadata_relay_url_seen: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// iroh block

fn api_gaps(u: &mut Unstructured<'_>) -> Result<Vec<String>> {
    small_vec(u, 5, |u| mostly(u, API_GAP_NAMES))
}

fn relay_status(u: &mut Unstructured<'_>) -> Result<String> {
    mostly(u, &["connected", "connecting", "disconnected", "unknown"])
}

fn value_source(u: &mut Unstructured<'_>) -> Result<String> {
    mostly(u, &["iroh", "derived"])
}

fn opt_value_source(u: &mut Unstructured<'_>) -> Result<Option<String>> {
    opt_mostly(u, &["iroh", "derived"])
}

/// swactor `Tier2IrohState`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct Tier2IrohState {
    /// Home relay URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home_relay_url: Option<String>,
    /// Per-peer iroh view.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peers: Vec<Tier2Peer>,
    /// iroh-metrics dump.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<MetricSample>,
    /// Connection cache summary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connection_cache: Vec<Tier2ConnectionCache>,
    /// Fields the linked iroh does not expose.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[arbitrary(with = api_gaps)]
    pub api_gaps: Vec<String>,
    /// Linked iroh version (newest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iroh_version: Option<String>,
    /// Home relay tunnel state (newest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay_session: Option<Tier2RelaySession>,
    /// Scrape time.
    #[serde(default)]
    #[arbitrary(with = ms_epoch)]
    pub scraped_at_ms: u64,
}

/// swactor `Tier2RelaySession`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct Tier2RelaySession {
    /// Relay URL in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay_url: Option<String>,
    /// `connected` / `connecting` / `disconnected` / `unknown`.
    #[arbitrary(with = relay_status)]
    pub status: String,
    /// `iroh` or `derived`.
    #[arbitrary(with = value_source)]
    pub status_source: String,
    /// Last status change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_ms_epoch)]
    pub status_changed_at_ms: Option<u64>,
    /// When the current status was entered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_ms_epoch)]
    pub status_entered_at_ms: Option<u64>,
    /// Last send over the tunnel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_ms_epoch)]
    pub last_send_at_ms: Option<u64>,
    /// Last receive over the tunnel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_ms_epoch)]
    pub last_recv_at_ms: Option<u64>,
    /// Bytes sent over the tunnel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_bytes_total: Option<u64>,
    /// Bytes received over the tunnel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_bytes_total: Option<u64>,
}

/// swactor `Tier2Peer`.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct Tier2Peer {
    /// The peer.
    #[arbitrary(with = hex64)]
    pub peer_node_id_hex: String,
    /// Path type; absent when iroh has never heard of the peer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conn_type: Option<ConnType>,
    /// Source of `conn_type` (newest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_value_source)]
    pub conn_type_source: Option<String>,
    /// Latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    /// Last use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_ms_epoch)]
    pub last_used_ms: Option<u64>,
    /// Last receive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_ms_epoch)]
    pub last_received_ms: Option<u64>,
    /// Direct addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub direct_addresses: Vec<TransportAddrWire>,
    /// Relay URLs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relay_urls: Vec<TransportAddrWire>,
    /// Per-address provenance; `Some(vec![])` is written as `[]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr_sources: Option<Vec<String>>,
}

/// swactor `Tier2ConnectionCache`.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct Tier2ConnectionCache {
    /// The peer.
    #[arbitrary(with = hex64)]
    pub peer_node_id_hex: String,
    /// Cache generation.
    pub generation: u64,
    /// Insert time of the current connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_ms_epoch)]
    pub created_at_ms: Option<u64>,
    /// Last successful send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_ms_epoch)]
    pub last_successful_send_at_ms: Option<u64>,
    /// Last failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_ms_epoch)]
    pub last_failure_at_ms: Option<u64>,
    /// Reason of the last failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure_reason: Option<String>,
    /// Path type at last use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_conn_type_at_last_use: Option<ConnType>,
}

fn addr_usage(u: &mut Unstructured<'_>) -> Result<String> {
    mostly(u, &["active", "inactive"])
}

/// swactor `TransportAddrWire`.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct TransportAddrWire {
    /// `ip:port` or a relay URL.
    pub addr: String,
    /// `active` or `inactive`.
    #[arbitrary(with = addr_usage)]
    pub usage: String,
}

/// swactor `MetricSample`.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct MetricSample {
    /// Metric group.
    pub group: String,
    /// Metric name.
    pub name: String,
    /// The value.
    pub value: MetricValueWire,
}

/// swactor `MetricValueWire`: adjacently tagged on `type` / `value`.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
#[serde(tag = "type", content = "value")]
pub enum MetricValueWire {
    /// A counter.
    Counter(u64),
    /// A gauge.
    Gauge(i64),
    /// A histogram summary.
    Histogram {
        /// Number of observations.
        count: u64,
        /// Sum of observations.
        #[arbitrary(with = finite_f64)]
        sum: f64,
    },
}

// ---------------------------------------------------------------------------------------------
// SWIM and registry blocks

fn probe_mode(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=2u8)? {
        0 => "periodic".to_owned(),
        1 => format!("reactive({})", u32::arbitrary(u)?),
        _ => String::arbitrary(u)?,
    })
}

fn swim_message_kind(u: &mut Unstructured<'_>) -> Result<String> {
    mostly(
        u,
        &[
            "ping",
            "ack",
            "ping_req",
            "indirect_ack",
            "join_request",
            "join_response",
        ],
    )
}

/// swactor `Tier2SwimState`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct Tier2SwimState {
    /// Configured timeouts and fanouts.
    pub config: Tier2SwimConfig,
    /// This node.
    #[arbitrary(with = hex64)]
    pub self_node_id_hex: String,
    /// Local incarnation.
    pub self_incarnation: u64,
    /// Local metadata generation.
    pub metadata_local_version: u64,
    /// Per-peer SWIM view.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peers: Vec<Tier2SwimPeer>,
    /// Recently received messages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recent_messages: Vec<Tier2SwimMessage>,
    /// Scrape time.
    #[serde(default)]
    #[arbitrary(with = ms_epoch)]
    pub scraped_at_ms: u64,
}

/// swactor `Tier2SwimConfig`: every key required.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct Tier2SwimConfig {
    /// Probe interval.
    pub probe_interval_ticks: u64,
    /// Probe timeout.
    pub probe_timeout_ticks: u64,
    /// Suspicion timeout.
    pub suspicion_timeout_ticks: u64,
    /// Indirect probes per round.
    pub indirect_probes_k: u32,
    /// Dead re-probe interval.
    pub dead_reprobe_interval_ticks: u64,
    /// Gossip fanout multiplier.
    pub gossip_fanout_lambda: u32,
    /// Max piggybacked updates.
    pub max_piggyback: u32,
    /// `periodic` or `reactive(<interval>)`.
    #[arbitrary(with = probe_mode)]
    pub probe_mode: String,
}

/// swactor `Tier2SwimPeer`.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct Tier2SwimPeer {
    /// The peer.
    #[arbitrary(with = hex64)]
    pub peer_node_id_hex: String,
    /// SWIM state.
    pub state: PeerState,
    /// Peer incarnation.
    pub incarnation: u64,
    /// Last ping sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_ms_epoch)]
    pub last_ping_sent_at_ms: Option<u64>,
    /// Last ack received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_ms_epoch)]
    pub last_ack_received_at_ms: Option<u64>,
    /// Last ping received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_ms_epoch)]
    pub last_ping_received_at_ms: Option<u64>,
    /// Suspect timer start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_ms_epoch)]
    pub suspect_started_at_ms: Option<u64>,
    /// Metadata generation seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_version_seen: Option<u64>,
}

/// swactor `Tier2SwimMessage`.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct Tier2SwimMessage {
    /// Message kind.
    #[arbitrary(with = swim_message_kind)]
    pub kind: String,
    /// Sender (or requester / target, per kind).
    #[arbitrary(with = hex64)]
    pub peer_node_id_hex: String,
    /// Receive time.
    #[arbitrary(with = ms_epoch)]
    pub at_ms: u64,
    /// Protocol sequence (member count for `join_response`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<u64>,
}

/// swactor `Tier2Registry` (newest).
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct Tier2Registry {
    /// Known names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<Tier2RegistryEntry>,
    /// Tombstone count.
    pub tombstone_count: u64,
    /// Registry logical clock.
    pub clock: u64,
    /// Scrape time.
    #[serde(default)]
    #[arbitrary(with = ms_epoch)]
    pub scraped_at_ms: u64,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// swactor `Tier2RegistryEntry`.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct Tier2RegistryEntry {
    /// Registered name.
    pub name: String,
    /// Actor address, hex.
    #[arbitrary(with = hex64)]
    pub actor_addr_hex: String,
    /// Owning node, hex.
    #[arbitrary(with = hex64)]
    pub owner_node_id_hex: String,
    /// Per-name generation.
    pub generation: u64,
    /// Logical insert time.
    #[serde(default)]
    pub logical_timestamp: u64,
    /// Tombstoned name (left out when false).
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_tombstone: bool,
}

// ---------------------------------------------------------------------------------------------
// Host block

fn route_family(u: &mut Unstructured<'_>) -> Result<String> {
    mostly(u, &["v4", "v6"])
}

/// swactor `Tier3HostState`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct Tier3HostState {
    /// Host network scrape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Tier3HostNetwork>,
    /// DNS results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dns: Vec<Tier3DnsResolution>,
    /// Scrape time.
    #[serde(default)]
    #[arbitrary(with = ms_epoch)]
    pub scraped_at_ms: u64,
}

/// swactor `Tier3HostNetwork`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct Tier3HostNetwork {
    /// Interfaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<Tier3Interface>,
    /// Kernel routes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default_routes: Vec<Tier3Route>,
    /// UDP sockets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub udp_sockets: Vec<Tier3UdpSocket>,
    /// Conntrack rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conntrack_count: Option<u64>,
    /// IPv6 enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv6_enabled: Option<bool>,
    /// resolv.conf nameservers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resolv_conf_nameservers: Vec<String>,
    /// Kernel UDP counters (newest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_kernel_stats: Option<Tier3UdpKernelStats>,
    /// Refresh time.
    #[serde(default)]
    #[arbitrary(with = ms_epoch)]
    pub refreshed_at_ms: u64,
}

/// swactor `Tier3UdpKernelStats` (newest).
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct Tier3UdpKernelStats {
    /// InDatagrams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_datagrams: Option<u64>,
    /// NoPorts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_ports: Option<u64>,
    /// InErrors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_errors: Option<u64>,
    /// OutDatagrams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_datagrams: Option<u64>,
    /// RcvbufErrors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcvbuf_errors: Option<u64>,
    /// SndbufErrors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf_errors: Option<u64>,
}

/// swactor `Tier3Interface`.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct Tier3Interface {
    /// Interface name.
    pub name: String,
    /// Bound addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<String>,
    /// MTU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// Link up.
    pub up: bool,
    /// Kernel counters (newest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Tier3InterfaceCounters>,
}

/// swactor `Tier3InterfaceCounters` (newest): every counter required.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct Tier3InterfaceCounters {
    /// Received bytes.
    pub rx_bytes: u64,
    /// Received packets.
    pub rx_packets: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Receive drops.
    pub rx_dropped: u64,
    /// Sent bytes.
    pub tx_bytes: u64,
    /// Sent packets.
    pub tx_packets: u64,
    /// Send errors.
    pub tx_errors: u64,
    /// Send drops.
    pub tx_dropped: u64,
}

/// swactor `Tier3Route`.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct Tier3Route {
    /// `v4` or `v6`.
    #[arbitrary(with = route_family)]
    pub family: String,
    /// Destination prefix.
    pub destination: String,
    /// Gateway, left out for the unspecified address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<String>,
    /// Interface.
    pub interface: String,
}

/// swactor `Tier3UdpSocket`.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct Tier3UdpSocket {
    /// Local address.
    pub local_addr: String,
    /// Remote address.
    pub remote_addr: String,
    /// Kernel state, hex.
    pub state: String,
    /// Socket inode.
    pub inode: u64,
}

/// swactor `Tier3DnsResolution`.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct Tier3DnsResolution {
    /// Resolved name.
    pub hostname: String,
    /// A records.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub a_records: Vec<String>,
    /// AAAA records.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aaaa_records: Vec<String>,
    /// TTL (never set today).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds: Option<u32>,
    /// Nameserver used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver_used: Option<String>,
    /// Resolution time.
    #[arbitrary(with = ms_epoch)]
    pub resolved_at_ms: u64,
    /// Last resolver error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Probes, vast.ai context, process, relay server, subprocess blocks

fn probe_kind(u: &mut Unstructured<'_>) -> Result<String> {
    mostly(u, &["udp_echo", "udp_relay", "stun"])
}

fn probe_outcome(u: &mut Unstructured<'_>) -> Result<String> {
    mostly(
        u,
        &["pending", "ok", "timeout", "refused", "error", "unresolved"],
    )
}

fn tokio_flavor(u: &mut Unstructured<'_>) -> Result<String> {
    mostly(u, &["current_thread", "multi_thread", "unknown"])
}

fn subprocess_status(u: &mut Unstructured<'_>) -> Result<String> {
    mostly(u, &["running", "exited", "unknown"])
}

/// swactor `Tier3ProbeState`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct Tier3ProbeState {
    /// Per-target probe state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<Tier3Probe>,
    /// Scrape time.
    #[serde(default)]
    #[arbitrary(with = ms_epoch)]
    pub scraped_at_ms: u64,
}

/// swactor `Tier3Probe`.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct Tier3Probe {
    /// Target label.
    pub target: String,
    /// Probe kind.
    #[arbitrary(with = probe_kind)]
    pub kind: String,
    /// Resolved address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_addr: Option<String>,
    /// Start of the last attempt (0 before the first).
    #[serde(default)]
    pub last_attempted_at_ms: u64,
    /// Outcome of the last attempt.
    #[arbitrary(with = probe_outcome)]
    pub last_outcome: String,
    /// RTT of the last success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_rtt_ms: Option<u64>,
    /// Last error text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Attempts.
    pub attempts: u64,
    /// Successes.
    pub successes: u64,
}

/// swactor `Tier3VastaiContext`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct Tier3VastaiContext {
    /// `$CONTAINER_ID`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    /// `$HOSTNAME`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Captured environment variables, `[key, value]` pairs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_vars: Vec<(String, String)>,
    /// Capture start.
    #[serde(default)]
    #[arbitrary(with = ms_epoch)]
    pub process_start_ms: u64,
    /// Capture time.
    #[serde(default)]
    #[arbitrary(with = ms_epoch)]
    pub captured_at_ms: u64,
}

/// swactor `Tier3ProcessStats`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct Tier3ProcessStats {
    /// Resident set size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// Virtual size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm_size_bytes: Option<u64>,
    /// Open descriptors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_fd_count: Option<u64>,
    /// CPU time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ms: Option<u64>,
    /// Tokio runtime flavor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokio: Option<Tier3TokioStats>,
    /// Capture time.
    #[serde(default)]
    #[arbitrary(with = ms_epoch)]
    pub captured_at_ms: u64,
}

/// swactor `Tier3TokioStats`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct Tier3TokioStats {
    /// `current_thread` or `multi_thread`.
    #[arbitrary(with = tokio_flavor)]
    pub flavor: String,
}

/// swactor `Tier3RelayServer` (newest).
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct Tier3RelayServer {
    /// Open sessions.
    pub active_sessions: u64,
    /// Sessions opened.
    pub total_opens: u64,
    /// Sessions closed.
    pub total_closes: u64,
    /// Bytes received.
    pub bytes_rx_total: u64,
    /// Bytes sent.
    pub bytes_tx_total: u64,
    /// Closes by reason, `[reason, count]` pairs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub closes_by_reason: Vec<(String, u64)>,
    /// Scrape time.
    #[serde(default)]
    #[arbitrary(with = ms_epoch)]
    pub scraped_at_ms: u64,
}

/// swactor `Tier3SubprocessState` (newest).
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct Tier3SubprocessState {
    /// Registered subprocesses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subprocesses: Vec<Tier3Subprocess>,
    /// Scrape time.
    #[serde(default)]
    #[arbitrary(with = ms_epoch)]
    pub scraped_at_ms: u64,
}

/// swactor `Tier3Subprocess` (newest).
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct Tier3Subprocess {
    /// Caller-supplied label.
    pub label: String,
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_pid: Option<u32>,
    /// `running` / `exited` / `unknown`.
    #[arbitrary(with = subprocess_status)]
    pub status: String,
    /// Registration time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_ms_epoch)]
    pub spawn_at_ms: Option<u64>,
    /// Exit time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_ms_epoch)]
    pub exit_at_ms: Option<u64>,
    /// Exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Terminating signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_signal: Option<i32>,
    /// Resident set size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// Virtual size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm_size_bytes: Option<u64>,
    /// Open descriptors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_fd_count: Option<u64>,
    /// CPU time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ms: Option<u64>,
    /// Command line, truncated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmdline: Option<String>,
}
