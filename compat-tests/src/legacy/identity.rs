//! Mirror of swactor's boot identity (`diagnostics/identity.rs`): every `Option` is always written.

use arbitrary::{Arbitrary, Result, Unstructured};
use serde::{Deserialize, Serialize};

use super::{hex8, hex64, ms_epoch};

fn role_name(u: &mut Unstructured<'_>) -> Result<String> {
    super::mostly(u, &["orchestrator", "stage", "relay"])
}

/// swactor `Role`: a newtype over the role string, so it serializes as a bare string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Arbitrary)]
pub struct Role(#[arbitrary(with = role_name)] pub String);

fn opt_text(u: &mut Unstructured<'_>) -> Result<Option<String>> {
    Option::<String>::arbitrary(u)
}

fn opt_contract(u: &mut Unstructured<'_>) -> Result<Option<String>> {
    Ok(if bool::arbitrary(u)? {
        Some(u.int_in_range(20_000_000..=40_000_000u32)?.to_string())
    } else {
        None
    })
}

/// swactor `Identity`: the boot record, also embedded in every snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct Identity {
    /// Full hex of the node's public key.
    #[arbitrary(with = hex64)]
    pub node_id_hex: String,
    /// First 8 hex characters of the node id.
    #[arbitrary(with = hex8)]
    pub node_id_short: String,
    /// The role the node plays.
    pub role: Role,
    /// Pipeline stage index, `null` for non-stage roles.
    pub stage_index: Option<u32>,
    /// Number of stages, `null` when not applicable.
    pub stage_count: Option<u32>,
    /// The run id shared by every node of a run.
    pub run_id: String,
    /// The vast.ai contract id, `null` off vast.ai.
    #[arbitrary(with = opt_contract)]
    pub vastai_contract_id: Option<String>,
    /// Public IP of the host.
    #[arbitrary(with = opt_text)]
    pub host_ip_public: Option<String>,
    /// Country of the host.
    pub host_country: Option<String>,
    /// Datacenter id of the host.
    pub datacenter_id: Option<String>,
    /// `$HOSTNAME`.
    pub hostname: Option<String>,
    /// `$CONTAINER_ID` (on vast.ai the rental id).
    #[arbitrary(with = opt_contract)]
    pub container_id: Option<String>,
    /// Process start, ms since the epoch.
    #[arbitrary(with = ms_epoch)]
    pub process_start_unix_ms: u64,
    /// Restart counter (swactor writes 0).
    pub boot_sequence: u32,
    /// Package version of the binary.
    pub binary_version: Option<String>,
    /// Git SHA of the build.
    pub git_sha: Option<String>,
    /// Linked iroh version.
    pub iroh_version: Option<String>,
    /// Home relay URL at boot.
    pub home_relay_url_at_boot: Option<String>,
}
