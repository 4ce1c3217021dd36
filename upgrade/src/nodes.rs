//! The nodes as the upgrade holds them: each node directory's files as the scan found them, and
//! each node with its id and the boot records that fit the contract.

use diagwire::NodeId;
use diagwire::v1;

use crate::Object;

/// The files of one node directory of the simulator's layout, each as its relative path.
#[derive(Default)]
pub(crate) struct NodeDir {
    pub(crate) name: String,
    /// `(n, path)` per [`sim_record_file`]; oldest first.
    pub(crate) boots: Vec<(u64, String)>,
    pub(crate) finalizes: Vec<(u64, String)>,
    pub(crate) events: Vec<String>,
    pub(crate) snapshots: Vec<String>,
}

/// The top level of the simulator's directory.
pub(crate) struct Scanned {
    pub(crate) manifest: Option<Object>,
    pub(crate) dirs: Vec<NodeDir>,
}

/// One node while it is being upgraded.
pub(crate) struct Node {
    pub(crate) dir: NodeDir,
    pub(crate) id: NodeId,
    /// Its boot records that fit the contract, oldest first.
    pub(crate) identities: Vec<v1::Identity>,
    /// The role and stage index of the latest of them, or the directory name without one.
    pub(crate) role: String,
    pub(crate) stage_index: Option<u32>,
}

impl Node {
    /// The identity of boot `boot_sequence` (else the latest); whether it matched.
    pub(crate) fn identity_for(&self, boot_sequence: Option<u32>) -> Option<(&v1::Identity, bool)> {
        if let Some(seq) = boot_sequence
            && let Some(i) = self
                .identities
                .iter()
                .rev()
                .find(|i| i.boot_sequence == seq)
        {
            return Some((i, true));
        }
        self.identities.last().map(|i| (i, false))
    }

    /// An identity for snapshots of a node without a boot record that fits the contract.
    pub(crate) fn placeholder_identity(&self, run_id: &str) -> v1::Identity {
        let mut identity =
            v1::Identity::new(self.id.to_hex(), self.id.short(), &self.role, run_id, 0, 0);
        identity.stage_index = self.stage_index;
        identity
    }
}
