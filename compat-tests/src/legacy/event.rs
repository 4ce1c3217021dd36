//! Plain serde mirror of swactor's event types (`diagnostics/event.rs`, 27-variant generation).
//!
//! These types serialize exactly as swactor's own derived types do: `NodeId` as an array of 32
//! integers, `Option` fields always written (`null` when absent), `Event` internally tagged on
//! `type` and flattened into the `EventRecord` envelope, `DialOutcome` externally tagged.
//! Like swactor's reader they ignore unknown keys, and an unknown `type` is an error.
//!
//! `Arbitrary` values are records swactor could write that the current schemas accept: node-id hex
//! strings are 64 lowercase hex characters, and a `Custom` event with one of the well-known kinds
//! carries fields of exactly that kind's shape.

use arbitrary::{Arbitrary, Unstructured};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

/// swactor `NodeId`: a 32-byte public key; the derived serializer writes an array of 32 integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Arbitrary)]
pub struct NodeId(pub [u8; 32]);

impl NodeId {
    /// The 64-character lowercase hex form, as snapshots and relay events write node ids.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// swactor `PeerState`: SWIM's opinion of a peer, a bare string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Arbitrary)]
pub enum PeerState {
    /// The peer answers probes.
    Alive,
    /// A probe went unanswered; the peer may be down.
    Suspect,
    /// The peer is considered gone.
    Dead,
    /// Heard of, no opinion yet.
    Unknown,
}

/// swactor `ConnType`: iroh's path type to a peer, a bare string (`None` is the literal string).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Arbitrary)]
pub enum ConnType {
    /// A direct UDP path.
    Direct,
    /// Through the relay.
    Relay,
    /// Both a direct and a relayed path.
    Mixed,
    /// Known peer, no active path.
    None,
}

/// swactor `DialOutcome`: externally tagged, so `"Timeout"` or `{"Error": "<text>"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Arbitrary)]
pub enum DialOutcome {
    /// Connected.
    Success,
    /// Timed out.
    Timeout,
    /// Refused by the peer.
    Refused,
    /// No route to the peer.
    NoRoute,
    /// Any other error, as text.
    Error(String),
}

/// swactor `EventRecord`: the ordering envelope with the event's keys flattened beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Arbitrary)]
pub struct EventRecord {
    /// The emitting node.
    pub node_id: NodeId,
    /// Per-process event counter.
    pub monotonic_seq: u64,
    /// The node's wall clock, ms since the epoch.
    pub wall_ms: u64,
    /// The event, whose `type` tag and fields sit at the envelope's level.
    #[serde(flatten)]
    #[arbitrary(with = arbitrary_event)]
    pub event: Event,
}

/// swactor `Event`: internally tagged on `type`; every `Option` field is written, as `null` when absent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Arbitrary)]
#[serde(tag = "type")]
pub enum Event {
    /// SWIM changed its opinion of a peer.
    SwimTransition {
        /// The peer.
        peer: NodeId,
        /// Opinion before.
        from: PeerState,
        /// Opinion after.
        to: PeerState,
        /// Why.
        reason: String,
    },
    /// A dial attempt started.
    DialStarted {
        /// The peer dialled.
        peer: NodeId,
        /// Attempt number.
        attempt: u32,
        /// The attempt's time budget.
        timeout_ms: u64,
    },
    /// A dial attempt finished.
    DialOutcome {
        /// The peer dialled.
        peer: NodeId,
        /// Attempt number.
        attempt: u32,
        /// The result.
        outcome: DialOutcome,
        /// How long the attempt took.
        duration_ms: u64,
    },
    /// iroh's path type to a peer changed.
    IrohConnTypeChanged {
        /// The peer.
        peer: NodeId,
        /// Path type before.
        old: ConnType,
        /// Path type after.
        new: ConnType,
    },
    /// The home relay changed.
    RelayChanged {
        /// The previous home relay, if any.
        old_url: Option<String>,
        /// The new home relay, if any.
        new_url: Option<String>,
    },
    /// The tunnel to the home relay changed status.
    RelaySessionStateChanged {
        /// The home relay, if any.
        relay_url: Option<String>,
        /// Status before.
        from_status: String,
        /// Status after.
        to_status: String,
        /// Reason, when the transport gives one.
        reason: Option<String>,
    },
    /// Relay side: a remote node opened a session.
    RelaySessionOpened {
        /// The remote node, hex.
        #[arbitrary(with = arbitrary_hex_id)]
        peer_node_id_hex: String,
        /// When the session opened.
        at_ms: u64,
    },
    /// Relay side: a session ended.
    RelaySessionClosed {
        /// The remote node, hex.
        #[arbitrary(with = arbitrary_hex_id)]
        peer_node_id_hex: String,
        /// When the session opened.
        opened_at_ms: u64,
        /// When the session closed.
        closed_at_ms: u64,
        /// Session length.
        duration_ms: u64,
        /// Who closed it.
        close_initiator: String,
        /// Why.
        close_reason: String,
        /// Bytes received in the session.
        bytes_rx: u64,
        /// Bytes sent in the session.
        bytes_tx: u64,
    },
    /// A payload arrived through gossip.
    GossipReceived {
        /// The peer it came from.
        source_peer: NodeId,
        /// What kind of payload.
        payload_kind: String,
        /// Payload size.
        payload_bytes: u32,
        /// Items in the payload.
        item_count: u32,
    },
    /// A child process was spawned.
    SubprocessSpawned {
        /// The child's label.
        label: String,
        /// Its pid.
        pid: u32,
        /// Its command line.
        command: String,
    },
    /// A child process exited.
    SubprocessExited {
        /// The child's label.
        label: String,
        /// Its pid.
        pid: u32,
        /// Its command line.
        command: String,
        /// Exit code, if it exited normally.
        exit_code: Option<i32>,
        /// Signal, if it was killed by one.
        exit_signal: Option<i32>,
        /// How long it ran, if known.
        uptime_ms: Option<u64>,
    },
    /// This node published SWIM metadata.
    SwimMetadataSent {
        /// Metadata version.
        version: u64,
        /// Hash of the payload.
        payload_hash: u64,
    },
    /// This node received a peer's SWIM metadata.
    SwimMetadataReceived {
        /// The peer.
        peer: NodeId,
        /// Metadata version.
        version: u64,
        /// Hash of the payload.
        payload_hash: u64,
    },
    /// A send reused a cached connection.
    ConnectionCacheHit {
        /// The peer.
        peer: NodeId,
        /// The cached connection's generation.
        generation: u64,
    },
    /// A send found no cached connection.
    ConnectionCacheMiss {
        /// The peer.
        peer: NodeId,
    },
    /// A cached connection was dropped.
    ConnectionCacheInvalidated {
        /// The peer.
        peer: NodeId,
        /// The dropped connection's generation.
        generation: u64,
        /// Why.
        reason: String,
    },
    /// The transport was offered addressing information.
    NodeMapUpdate {
        /// The peer.
        peer: NodeId,
        /// Where the information came from.
        from_source: String,
        /// Whether it was taken.
        accepted: bool,
    },
    /// A protocol message was sent.
    MessageSent {
        /// The peer.
        peer: NodeId,
        /// Message kind.
        kind: String,
        /// Encoded size.
        size: u32,
    },
    /// A protocol message was received.
    MessageReceived {
        /// The peer.
        peer: NodeId,
        /// Message kind.
        kind: String,
        /// Encoded size.
        size: u32,
    },
    /// An outbound reachability probe was sent.
    ProbeSent {
        /// Probe target.
        target: String,
        /// Probe kind.
        kind: String,
    },
    /// An outbound reachability probe finished.
    ProbeReceived {
        /// Probe target.
        target: String,
        /// Probe kind.
        kind: String,
        /// Round trip, if answered.
        rtt_ms: Option<u64>,
        /// Outcome.
        outcome: String,
    },
    /// SWIM started probing a peer.
    SwimProbeSent {
        /// The probed peer.
        target: NodeId,
        /// Probe sequence number.
        sequence: u64,
        /// `direct` or `indirect`.
        kind: String,
    },
    /// A SWIM probe was acknowledged.
    SwimProbeAcked {
        /// The probed peer.
        target: NodeId,
        /// Probe sequence number.
        sequence: u64,
        /// `direct` or `indirect`.
        kind: String,
    },
    /// A SWIM probe ran out of time.
    SwimProbeTimedOut {
        /// The probed peer.
        target: NodeId,
        /// Probe sequence number.
        sequence: u64,
        /// `direct` or `indirect`.
        kind: String,
        /// The configured budget.
        budget_ticks: u64,
    },
    /// The last stage tried to send an inference response upstream.
    InferenceResponseSent {
        /// The receiving peer.
        target_peer: NodeId,
        /// Request id.
        request_id: String,
        /// Response size.
        byte_size: u64,
        /// Transport result.
        send_outcome: String,
    },
    /// A component hit an error or an observation gap.
    Error {
        /// The component.
        component: String,
        /// The error text.
        message: String,
        /// The peer involved, if any.
        peer: Option<NodeId>,
    },
    /// A free-form event from a downstream crate.
    Custom {
        /// The custom kind.
        #[arbitrary(with = arbitrary_other_custom_kind)]
        kind: String,
        /// The payload, any JSON value (an object in practice).
        #[arbitrary(with = arbitrary_json_object)]
        fields: Value,
    },
}

/// The `Custom` kinds whose `fields` have a schema-defined shape.
pub const WELL_KNOWN_CUSTOM_KINDS: &[&str] = &[
    "clock_sample",
    "iroh_api_missing",
    "register_name",
    "worker_ready",
    "worker_starting",
    "worker_exited",
];

/// A 64-character lowercase hex node id.
pub fn arbitrary_hex_id(u: &mut Unstructured<'_>) -> arbitrary::Result<String> {
    Ok(NodeId::arbitrary(u)?.to_hex())
}

/// A `Custom` kind that is not one of [`WELL_KNOWN_CUSTOM_KINDS`].
pub fn arbitrary_other_custom_kind(u: &mut Unstructured<'_>) -> arbitrary::Result<String> {
    let s = String::arbitrary(u)?;
    Ok(if WELL_KNOWN_CUSTOM_KINDS.contains(&s.as_str()) {
        format!("downstream_{s}")
    } else {
        s
    })
}

/// A number that survives a JSON round trip exactly: an integer, or a multiple of 1/8.
fn arbitrary_number(u: &mut Unstructured<'_>) -> arbitrary::Result<Number> {
    Ok(match u.int_in_range(0..=2)? {
        0 => Number::from(u64::arbitrary(u)?),
        1 => Number::from(i64::arbitrary(u)?),
        _ => {
            Number::from_f64(f64::from(i32::arbitrary(u)?) / 8.0).unwrap_or_else(|| Number::from(0))
        }
    })
}

fn arbitrary_json(u: &mut Unstructured<'_>, depth: u32) -> arbitrary::Result<Value> {
    let last = if depth == 0 { 3 } else { 5 };
    Ok(match u.int_in_range(0..=last)? {
        0 => Value::Null,
        1 => Value::Bool(bool::arbitrary(u)?),
        2 => Value::Number(arbitrary_number(u)?),
        3 => Value::String(String::arbitrary(u)?),
        4 => {
            let n = u.int_in_range(0..=3)?;
            Value::Array(
                (0..n)
                    .map(|_| arbitrary_json(u, depth - 1))
                    .collect::<arbitrary::Result<_>>()?,
            )
        }
        _ => arbitrary_object(u, depth - 1)?,
    })
}

fn arbitrary_object(u: &mut Unstructured<'_>, depth: u32) -> arbitrary::Result<Value> {
    let n = u.int_in_range(0..=4)?;
    let mut map = Map::new();
    for _ in 0..n {
        map.insert(String::arbitrary(u)?, arbitrary_json(u, depth)?);
    }
    Ok(Value::Object(map))
}

/// A JSON object of up to four keys, nested up to two levels, with finite numbers only.
pub fn arbitrary_json_object(u: &mut Unstructured<'_>) -> arbitrary::Result<Value> {
    arbitrary_object(u, 2)
}

/// A `Custom` event of one of the well-known kinds, with `fields` of exactly that kind's shape.
pub fn arbitrary_well_known_custom(u: &mut Unstructured<'_>) -> arbitrary::Result<Event> {
    let kind = *u.choose(WELL_KNOWN_CUSTOM_KINDS)?;
    let mut fields = Map::new();
    match kind {
        "clock_sample" => {
            for key in [
                "node_send_ms_echoed",
                "collector_recv_ms",
                "collector_send_ms",
            ] {
                fields.insert(key.into(), Value::from(u64::arbitrary(u)?));
            }
        }
        "iroh_api_missing" => {
            fields.insert("iroh_version".into(), Value::from(String::arbitrary(u)?));
            fields.insert("fields".into(), Value::from(Vec::<String>::arbitrary(u)?));
            fields.insert("note".into(), Value::from(String::arbitrary(u)?));
        }
        "register_name" => {
            fields.insert("name".into(), Value::from(String::arbitrary(u)?));
            fields.insert("actor_addr_hex".into(), Value::from(String::arbitrary(u)?));
            fields.insert("our_node_id_hex".into(), Value::from(arbitrary_hex_id(u)?));
            fields.insert("wall_ms".into(), Value::from(u64::arbitrary(u)?));
            // Omittable: either absent or a number, never `null`.
            if let Some(stage) = Option::<u32>::arbitrary(u)? {
                fields.insert("stage_index".into(), Value::from(stage));
            }
        }
        _ => {
            return arbitrary_json_object(u).map(|fields| Event::Custom {
                kind: kind.into(),
                fields,
            });
        }
    }
    Ok(Event::Custom {
        kind: kind.into(),
        fields: Value::Object(fields),
    })
}

/// Any event; one in four is a well-known `Custom` kind (the derived `Event::arbitrary` never
/// produces those, because it picks the kind and the fields independently).
pub fn arbitrary_event(u: &mut Unstructured<'_>) -> arbitrary::Result<Event> {
    if u.ratio(1, 4)? {
        arbitrary_well_known_custom(u)
    } else {
        Event::arbitrary(u)
    }
}
