//! Which contract generation a record proves its writer knows: the newest contract version that
//! added a field, an event type or an enum value the record carries ([`proven`]). A writer never
//! writes a key its contract does not have, so such a key proves the writer is at least that
//! generation; a record that carries nothing added after 1.0.0 proves nothing beyond 1.0.0.
//! Collector assembly declares each node's contract version from this (`docs/collector.md`).
//!
//! The marks are a table rather than a walk of the frozen releases so that a reader does not have
//! to build the release types (feature `releases`); `tests/generation.rs` checks the table against
//! the releases' shape tables, so it cannot drift from them.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

use crate::layout::{Encoding, FileKind};
use crate::shape::{PayloadShape, TypeKind, TypeShape, UnionStyle, ValueShape};
use crate::v1::CONTRACT;

/// What a mark of [`ADDED`] names in its definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mark {
    /// A key of a struct.
    Field,
    /// A tag of a union (an event type, a Custom kind).
    Tag,
    /// A value of an enum.
    Value,
}
use Mark::{Field, Tag, Value as EnumValue};

/// Every field, union tag and enum value the contract added after 1.0.0 to a definition that an
/// older release already had: `(definition, mark, name, the release that added it)`, sorted.
/// Definitions that are new altogether are reached only through one of these.
pub const ADDED: &[(&str, Mark, &str, &str)] = &[
    ("ActorStats", Field, "mailbox_source", "1.2.0"),
    (
        "ApiGap",
        EnumValue,
        "Handshake.cipher_suite_offered",
        "1.2.0",
    ),
    (
        "ApiGap",
        EnumValue,
        "Handshake.cipher_suite_selected",
        "1.2.0",
    ),
    ("ApiGap", EnumValue, "IrohState.flows", "1.1.0"),
    ("ApiGap", EnumValue, "IrohState.links", "1.1.0"),
    ("ApiGap", EnumValue, "IrohState.nat_bindings", "1.1.0"),
    ("ApiGap", EnumValue, "WirePacket.ecn", "1.2.0"),
    ("ApiGap", EnumValue, "WirePacket.ttl", "1.2.0"),
    ("AppState", Field, "worker_generation", "1.2.0"),
    ("CustomPayload", Tag, "pp.activation_received", "1.1.0"),
    ("CustomPayload", Tag, "pp.activation_sent", "1.1.0"),
    ("CustomPayload", Tag, "pp.token_emitted", "1.1.0"),
    ("CustomPayload", Tag, "pp.worker_complete", "1.1.0"),
    ("CustomPayload", Tag, "pp.worker_dispatch", "1.1.0"),
    ("Event", Tag, "HandshakeOutcome", "1.1.0"),
    ("Event", Tag, "HandshakeStarted", "1.1.0"),
    ("Event", Tag, "InferenceResponseReceived", "1.1.0"),
    ("Event", Tag, "SwimProbeLateAcked", "1.2.0"),
    ("Event", Tag, "WirePacket", "1.1.0"),
    ("Event", Tag, "edge_provision_started", "1.1.0"),
    ("Event", Tag, "edge_ready", "1.1.0"),
    ("Event", Tag, "execute_step_started", "1.1.0"),
    ("Event", Tag, "fault_detected", "1.1.0"),
    ("Event", Tag, "node_available", "1.1.0"),
    ("Event", Tag, "node_faulted", "1.1.0"),
    ("Event", Tag, "node_started", "1.1.0"),
    ("Event", Tag, "object_loaded", "1.1.0"),
    ("Event", Tag, "object_produced", "1.1.0"),
    ("Event", Tag, "pool_ready", "1.1.0"),
    ("Event", Tag, "prompt_injected", "1.1.0"),
    ("Event", Tag, "readiness_barrier_passed", "1.1.0"),
    ("Event", Tag, "run_completed", "1.1.0"),
    ("Event", Tag, "run_faulted", "1.1.0"),
    ("Event", Tag, "run_planned", "1.1.0"),
    ("Event", Tag, "run_torn_down", "1.1.0"),
    ("Event", Tag, "stage_provision_started", "1.1.0"),
    ("Event", Tag, "stage_ready", "1.1.0"),
    ("Event", Tag, "stage_stopped", "1.1.0"),
    ("Event", Tag, "step_completed", "1.1.0"),
    ("Event", Tag, "stop_run_sent", "1.1.0"),
    ("Event", Tag, "token_received", "1.1.0"),
    ("Event", Tag, "weights_download_started", "1.1.0"),
    ("Event", Tag, "weights_downloaded", "1.1.0"),
    ("Event", Tag, "weights_loaded", "1.1.0"),
    ("Finalize", Field, "diag_records_dropped", "1.3.0"),
    ("FlowState", Field, "stats_source", "1.2.0"),
    ("GossipPayloadKind", EnumValue, "name_registry", "1.2.0"),
    ("GossipReceived", Field, "trace_id", "1.2.0"),
    ("HandshakeOutcome", Field, "api_gaps", "1.2.0"),
    ("HandshakeStarted", Field, "api_gaps", "1.2.0"),
    ("Identity", Field, "host_provider", "1.1.0"),
    ("Identity", Field, "host_provider_source", "1.1.0"),
    ("Identity", Field, "provider_contract_id", "1.1.0"),
    ("Identity", Field, "provider_contract_id_source", "1.1.0"),
    ("Identity", Field, "provider_offer_id", "1.1.0"),
    ("InferenceResponseSent", Field, "parent_trace_id", "1.1.0"),
    ("InferenceResponseSent", Field, "trace_id", "1.1.0"),
    ("IrohState", Field, "flows", "1.1.0"),
    ("IrohState", Field, "links", "1.1.0"),
    ("IrohState", Field, "links_applied", "1.1.0"),
    ("IrohState", Field, "nat_bindings", "1.1.0"),
    ("LinkEstimate", Field, "estimate_source", "1.2.0"),
    ("Manifest", Field, "contract_version", "1.1.0"),
    ("Manifest", Field, "writer", "1.1.0"),
    ("ManifestNode", Field, "contract_version", "1.1.0"),
    ("MessageReceived", Field, "parent_trace_id", "1.1.0"),
    ("MessageReceived", Field, "trace_id", "1.1.0"),
    ("MessageSent", Field, "parent_trace_id", "1.1.0"),
    ("MessageSent", Field, "trace_id", "1.1.0"),
    ("NatBinding", Field, "nat_class", "1.2.0"),
    ("NatBinding", Field, "nat_class_source", "1.2.0"),
    ("NodeMapUpdate", Field, "parent_trace_id", "1.1.0"),
    ("PostAck", Field, "deduplicated", "1.3.0"),
    ("PostAck", Field, "duplicate", "1.3.0"),
    ("PostAck", Field, "problems", "1.3.0"),
    ("PostAck", Field, "problems_omitted", "1.3.0"),
    ("PostAck", Field, "quarantined", "1.3.0"),
    ("PostAck", Field, "seq", "1.3.0"),
    (
        "PpWorkerCompleteFields",
        Field,
        "worker_generation",
        "1.2.0",
    ),
    (
        "PpWorkerDispatchFields",
        Field,
        "worker_generation",
        "1.2.0",
    ),
    ("Probe", Field, "relay_url", "1.1.0"),
    ("Probe", Field, "target_port", "1.1.0"),
    ("RelayCloseInitiator", EnumValue, "peer", "1.1.0"),
    ("RelayCloseInitiator", EnumValue, "transport", "1.1.0"),
    ("RelayCloseInitiator", EnumValue, "unknown", "1.1.0"),
    ("RelayServer", Field, "counters_source", "1.2.0"),
    ("RunNodeSummary", Field, "conflicts", "1.3.0"),
    ("RunNodeSummary", Field, "deduplicated", "1.3.0"),
    ("RunNodeSummary", Field, "quarantined", "1.3.0"),
    ("RunSummary", Field, "quarantined", "1.3.0"),
    ("Snapshot", Field, "diag_records_dropped", "1.3.0"),
    ("SnapshotBody", Field, "actors", "1.1.0"),
    ("SnapshotBody", Field, "app", "1.1.0"),
    ("Subprocess", Field, "worker_generation", "1.2.0"),
    ("SubprocessExited", Field, "worker_generation", "1.2.0"),
    ("SubprocessSpawned", Field, "worker_generation", "1.2.0"),
    ("SwimMetadataReceived", Field, "trace_id", "1.2.0"),
    ("SwimMetadataSent", Field, "parent_trace_id", "1.1.0"),
    ("SwimProbeAcked", Field, "observer", "1.1.0"),
    ("SwimProbeAcked", Field, "outcome", "1.1.0"),
    ("SwimProbeAcked", Field, "received_at_ms", "1.1.0"),
    ("SwimProbeAcked", Field, "rtt_ms", "1.1.0"),
    ("SwimProbeAcked", Field, "rtt_source", "1.1.0"),
    ("SwimProbeAcked", Field, "sent_at_ms", "1.1.0"),
    ("SwimProbeAcked", Field, "timeout_budget_ms", "1.1.0"),
    ("SwimProbeAcked", Field, "trace_id", "1.1.0"),
    ("SwimProbeSent", Field, "trace_id", "1.1.0"),
    ("SwimProbeTimedOut", Field, "observer", "1.1.0"),
    ("SwimProbeTimedOut", Field, "outcome", "1.1.0"),
    ("SwimProbeTimedOut", Field, "rtt_ms", "1.1.0"),
    ("SwimProbeTimedOut", Field, "rtt_source", "1.1.0"),
    ("SwimProbeTimedOut", Field, "sent_at_ms", "1.1.0"),
    ("SwimProbeTimedOut", Field, "timeout_budget_ms", "1.1.0"),
    ("SwimProbeTimedOut", Field, "trace_id", "1.1.0"),
    ("ValueSource", EnumValue, "driver", "1.2.0"),
    ("ValueSource", EnumValue, "measured", "1.2.0"),
    ("ValueSource", EnumValue, "orchestrator", "1.2.0"),
    ("ValueSource", EnumValue, "relay", "1.2.0"),
    ("ValueSource", EnumValue, "unavailable", "1.2.0"),
    ("WirePacket", Field, "api_gaps", "1.2.0"),
];

type Key = (&'static str, Mark, &'static str);

fn added() -> &'static HashMap<Key, &'static str> {
    static MAP: OnceLock<HashMap<Key, &'static str>> = OnceLock::new();
    MAP.get_or_init(|| ADDED.iter().map(|&(d, m, n, v)| ((d, m, n), v)).collect())
}

/// The newest contract version of [`ADDED`]: once a node's records prove it, nothing they hold
/// can prove more.
pub fn newest_mark() -> &'static str {
    ADDED
        .iter()
        .map(|a| a.3)
        .max_by(|a, b| crate::generation::cmp_versions(a, b))
        .unwrap_or("1.0.0")
}

/// Compares two `major.minor.patch` versions by number (text that does not read as a number
/// counts as 0).
pub fn cmp_versions(a: &str, b: &str) -> std::cmp::Ordering {
    fn parts(v: &str) -> [u64; 3] {
        let mut it = v
            .split(['.', '-', '+'])
            .map(|p| p.parse::<u64>().unwrap_or(0));
        [
            it.next().unwrap_or(0),
            it.next().unwrap_or(0),
            it.next().unwrap_or(0),
        ]
    }
    parts(a).cmp(&parts(b))
}

/// The newer of two proven generations (`None` is 1.0.0, nothing proven).
pub fn newer(a: Option<&'static str>, b: Option<&'static str>) -> Option<&'static str> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if cmp_versions(x, y).is_lt() { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

/// The newest contract version that added something `value`, a record of the kind named `kind`
/// (`boot`, `event_batch`, …), carries; `None` when it carries nothing added after 1.0.0 (or the
/// kind is unknown).
pub fn proven(kind: &str, value: &Value) -> Option<&'static str> {
    let def = CONTRACT.record(kind)?.def;
    let mut found = None;
    walk_def(def, value, &mut found);
    found
}

/// The largest record file [`proven_file`] reads: its JSON is held as a value while it is walked,
/// so larger files (never a well-behaved node's batch or snapshot) are not read, keeping memory
/// bounded.
pub const MAX_EXAMINED_BYTES: usize = 4 << 20;

/// [`proven`] of a record file's bytes: JSON, or the binary form decoded first. A file that does
/// not read as a record, or is over [`MAX_EXAMINED_BYTES`], proves nothing.
pub fn proven_file(kind: &FileKind, encoding: Encoding, bytes: &[u8]) -> Option<&'static str> {
    if bytes.len() > MAX_EXAMINED_BYTES {
        return None;
    }
    let record_kind = kind.record_kind();
    let text = crate::binary::json_text(encoding, record_kind, bytes).ok()?;
    let value: Value = serde_json::from_slice(&text).ok()?;
    proven(record_kind.as_str(), &value)
}

/// Declares a node's contract version from what its records prove: nothing for a node whose
/// records prove nothing beyond 1.0.0 (a 1.0.0 writer declares none), else the newest release this
/// crate knows of the proven minor version (a patch release changes nothing on the wire, so the
/// records cannot tell patches apart, and the newest one's documentation applies).
pub fn declared(proven: Option<&str>) -> Option<String> {
    let proven = proven?;
    let minor = |v: &str| {
        let mut it = v.split('.');
        (it.next().map(str::to_owned), it.next().map(str::to_owned))
    };
    let newest = std::iter::once(crate::CONTRACT_VERSION)
        .chain(crate::releases::RELEASES.iter().copied())
        .filter(|v| minor(v) == minor(proven))
        .max_by(|a, b| cmp_versions(a, b))
        .unwrap_or(proven);
    Some(newest.to_owned())
}

fn note(key: Key, found: &mut Option<&'static str>) {
    if let Some(v) = added().get(&key) {
        *found = newer(*found, Some(v));
    }
}

fn walk_def(name: &str, value: &Value, found: &mut Option<&'static str>) {
    if let Some(t) = CONTRACT.get(name) {
        walk_type(t, value, found);
    }
}

fn walk_value(shape: &ValueShape, value: &Value, found: &mut Option<&'static str>) {
    match (shape, value) {
        (ValueShape::Ref(name), _) => walk_def(name, value, found),
        (ValueShape::Vec(item), Value::Array(items)) => {
            for v in items {
                walk_value(item, v, found);
            }
        }
        (ValueShape::Tuple(items), Value::Array(values)) => {
            for (s, v) in items.iter().zip(values) {
                walk_value(s, v, found);
            }
        }
        _ => {}
    }
}

fn walk_type(t: &'static TypeShape, value: &Value, found: &mut Option<&'static str>) {
    match &t.kind {
        TypeKind::Struct {
            fields, flatten, ..
        } => {
            let Value::Object(obj) = value else {
                return;
            };
            for (k, v) in obj {
                if let Some(f) = fields.iter().find(|f| f.key == k) {
                    note((t.name, Field, f.key), found);
                    walk_value(&f.value, v, found);
                }
            }
            if let Some(u) = flatten.and_then(|u| CONTRACT.get(u)) {
                walk_type(u, value, found);
            }
        }
        TypeKind::Union {
            style,
            tag,
            content,
            variants,
            ..
        } => {
            // The variant's tag and where its payload sits: beside the tag (internal), under the
            // content key (adjacent), or as the one key's value (external, or a bare string).
            let (tag_value, payload) = match style {
                UnionStyle::External => match value {
                    Value::String(s) => (s.as_str(), None),
                    Value::Object(obj) if obj.len() == 1 => {
                        let (k, v) = obj.iter().next().expect("OK because it has one key");
                        (k.as_str(), Some(v))
                    }
                    _ => return,
                },
                _ => match value.get(tag).and_then(Value::as_str) {
                    Some(s) => (s, content.and_then(|c| value.get(c))),
                    None => return,
                },
            };
            let Some(variant) = variants.iter().find(|v| v.tag == tag_value) else {
                return;
            };
            note((t.name, Tag, variant.tag), found);
            match &variant.payload {
                PayloadShape::Def(name) => walk_def(name, payload.unwrap_or(value), found),
                PayloadShape::Value(shape) => {
                    if let Some(v) = payload {
                        walk_value(shape, v, found);
                    }
                }
                PayloadShape::Unit => {}
            }
        }
        TypeKind::Enum { values, .. } => {
            if let Some(s) = value.as_str() {
                if let Some(known) = values.iter().find(|v| **v == s) {
                    note((t.name, EnumValue, known), found);
                }
            }
        }
        TypeKind::Array(item) => {
            if let Value::Array(items) = value {
                for v in items {
                    walk_value(item, v, found);
                }
            }
        }
        TypeKind::NodeId | TypeKind::NodeIdHex => {}
    }
}
