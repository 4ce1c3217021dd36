//! Mirror of swactor's collector replies (`collector/protocol.rs`, `collector/handlers.rs`).
//!
//! `RecordKind` lists the newest generation's values, including the four `vastai_*` kinds.

use arbitrary::{Arbitrary, Result, Unstructured};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{any_json, hex64, ms_epoch, opt_ms_epoch};

/// swactor `ClockEcho`: collector timing for one POST.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Arbitrary)]
pub struct ClockEcho {
    /// The request's `x-node-send-ms` (0 when missing).
    pub node_send_ms_echoed: u64,
    /// Collector receive time.
    #[arbitrary(with = ms_epoch)]
    pub collector_recv_ms: u64,
    /// Collector send time.
    #[arbitrary(with = ms_epoch)]
    pub collector_send_ms: u64,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// swactor `Hints`: out-of-band signals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Arbitrary)]
pub struct Hints {
    /// Take a snapshot now (left out when false).
    #[serde(default, skip_serializing_if = "is_false")]
    pub snapshot_now: bool,
}

fn ack_body(u: &mut Unstructured<'_>) -> Result<Option<Value>> {
    // The collector attaches a body only on finalize, and never a JSON null.
    Ok(match u.int_in_range(0..=3u8)? {
        0 => Some(serde_json::json!({ "bundle_path": String::arbitrary(u)? })),
        1 => Some(super::any_json_object(u)?),
        _ => None,
    })
}

/// swactor `PostAck<serde_json::Value>`: the reply to every POST.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Arbitrary)]
pub struct PostAck {
    /// Clock echo.
    pub clock: ClockEcho,
    /// Hints, left out when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Hints>,
    /// Reply payload (finalize only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = ack_body)]
    pub body: Option<Value>,
}

/// swactor `RecordKind` (newest): snake_case strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Arbitrary)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// `boot`.
    Boot,
    /// `events`.
    Events,
    /// `snapshot`.
    Snapshot,
    /// `finalize`.
    Finalize,
    /// `vastai_instance`.
    VastaiInstance,
    /// `vastai_sample`.
    VastaiSample,
    /// `vastai_logs`.
    VastaiLogs,
    /// `vastai_lifecycle`.
    VastaiLifecycle,
}

/// swactor `LiveRecord`: the data of one SSE event (swactor only serializes it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Arbitrary)]
pub struct LiveRecord {
    /// The run.
    pub run_id: String,
    /// The raw `x-node-id`.
    #[arbitrary(with = hex64)]
    pub node_id: String,
    /// Record kind.
    pub kind: RecordKind,
    /// Collector receive time.
    #[arbitrary(with = ms_epoch)]
    pub recv_ms: u64,
    /// Collector file sequence.
    pub seq: u64,
    /// The stored record (`null` for an empty body).
    #[arbitrary(with = any_json)]
    pub body: Value,
}

/// The error reply `{"error": "<message>"}` (built with `json!` in swactor).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Arbitrary)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: String,
}

/// swactor's per-node entry of `GET /diag/runs` (`NodeSummary`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Arbitrary)]
pub struct NodeSummary {
    /// The raw `x-node-id`.
    #[arbitrary(with = hex64)]
    pub node_id: String,
    /// A boot record arrived.
    pub boot_recorded: bool,
    /// Number of events POSTs.
    pub event_batches: u64,
    /// Number of snapshots.
    pub snapshots: u64,
    /// A finalize record arrived.
    pub finalize_recorded: bool,
}

/// swactor's per-run entry of `GET /diag/runs` (`RunSummary`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Arbitrary)]
pub struct RunSummary {
    /// The run.
    pub run_id: String,
    /// Earliest collector receive time.
    #[arbitrary(with = opt_ms_epoch)]
    pub run_start_collector_ms: Option<u64>,
    /// Latest collector receive time.
    #[arbitrary(with = opt_ms_epoch)]
    pub run_end_collector_ms: Option<u64>,
    /// Any node finalized.
    pub finalize_received: bool,
    /// Nodes, sorted by id.
    pub nodes: Vec<NodeSummary>,
}
