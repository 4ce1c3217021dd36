//! Mirror of swactor's bundle manifest (`collector/protocol.rs` `Manifest`, `ManifestNode`).
//!
//! The newest collector adds `vastai_records` to each node; its protocol file was not available,
//! so the attribute follows the collector's accounting (a plain counter, always written).

use arbitrary::{Arbitrary, Result, Unstructured};
use serde::{Deserialize, Serialize};

use super::{hex64, mostly, opt_ms_epoch};

fn manifest_node_id(u: &mut Unstructured<'_>) -> Result<String> {
    // swactor nodes send their hex id; vast.ai producers send a synthetic id.
    Ok(match u.int_in_range(0..=5u8)? {
        0 => "vastai-external".to_owned(),
        1 => format!("vastai-stage-{}", u8::arbitrary(u)?),
        _ => hex64(u)?,
    })
}

fn label(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=3u8)? {
        0 => format!("stage-{}", u8::arbitrary(u)?),
        1 => format!("node-{}", super::hex8(u)?),
        _ => mostly(u, &["orchestrator", "relay", "vastai-external"])?,
    })
}

fn opt_role(u: &mut Unstructured<'_>) -> Result<Option<String>> {
    super::opt_mostly(u, &["orchestrator", "stage", "relay"])
}

/// swactor `ManifestNode`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Arbitrary)]
pub struct ManifestNode {
    /// The raw `x-node-id` header value.
    #[arbitrary(with = manifest_node_id)]
    pub node_id_hex: String,
    /// Directory label inside the bundle.
    #[arbitrary(with = label)]
    pub label: String,
    /// Role from the boot identity.
    #[arbitrary(with = opt_role)]
    pub role: Option<String>,
    /// Stage index from the boot identity.
    pub stage_index: Option<u32>,
    /// A boot record arrived.
    pub boot_recorded: bool,
    /// Number of events POSTs.
    pub event_batches: u64,
    /// Number of snapshots.
    pub snapshots: u64,
    /// A finalize record arrived.
    pub finalize_recorded: bool,
    /// Number of vast.ai monitoring records (newest).
    #[serde(default)]
    pub vastai_records: u64,
}

/// swactor `Manifest`: `MANIFEST.json` at the bundle root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Arbitrary)]
pub struct Manifest {
    /// The run id.
    pub run_id: String,
    /// Earliest collector receive time.
    #[arbitrary(with = opt_ms_epoch)]
    pub run_start_collector_ms: Option<u64>,
    /// Latest collector receive time.
    #[arbitrary(with = opt_ms_epoch)]
    pub run_end_collector_ms: Option<u64>,
    /// Any node finalized.
    pub finalize_received: bool,
    /// One entry per node.
    pub nodes: Vec<ManifestNode>,
}
