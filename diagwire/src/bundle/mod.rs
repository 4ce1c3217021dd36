//! swactor diagnostics bundles: reading (directory or `.tar.gz`), writing (directory or a
//! deterministic `.tar.gz`), assembling from the collector's staging tree, and the example bundle.
//!
//! The layout is the collector's (legacy-wire §7.2):
//!
//! ```text
//! <run_id>/MANIFEST.json
//! <run_id>/<label>/boot.json, boot/boot-NNNNNN.json, events/events-NNNNNN.json,
//!                  snapshots/snapshot-NNNNNN.json, finalize.json, finalize/finalize-NNNNNN.json,
//!                  vastai/vastai_<kind>-NNNNNN.json
//! ```

use std::collections::BTreeMap;

pub mod assemble;
pub mod example;
pub mod read;
pub mod upgrade;
pub mod write;

/// A bundle held in memory: the files of the run directory by relative path (`/`-separated, without
/// the `<run_id>/` prefix), each as its bytes. What writers write and assemblers build.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BundleContents {
    /// The run id, which is also the name of the top-level directory.
    pub run_id: String,
    /// Files by path relative to the run directory, e.g. `MANIFEST.json`, `stage-0/boot.json`.
    pub files: BTreeMap<String, Vec<u8>>,
}

impl BundleContents {
    /// An empty bundle for a run.
    pub fn new(run_id: impl Into<String>) -> Self {
        BundleContents {
            run_id: run_id.into(),
            files: BTreeMap::new(),
        }
    }

    /// Adds a file holding `value` as pretty-printed JSON, as the collector writes it.
    pub fn insert_json(&mut self, path: impl Into<String>, value: &impl serde::Serialize) {
        let mut bytes =
            serde_json::to_vec_pretty(value).expect("OK because contract types always serialize");
        bytes.push(b'\n');
        self.files.insert(path.into(), bytes);
    }
}

/// The directory label of a node (legacy-wire §7.2): `stage-<index>` for a stage with an index,
/// else the role when it is not empty, else `node-<first 8 characters of the id>`.
/// The caller appends `-<first 8 characters>` to labels that collide.
pub fn node_label(role: Option<&str>, stage_index: Option<u32>, node_id: &str) -> String {
    match (role, stage_index) {
        (Some("stage"), Some(i)) => format!("stage-{i}"),
        (Some(r), _) if !r.is_empty() => r.to_owned(),
        _ => format!("node-{}", node_id.chars().take(8).collect::<String>()),
    }
}
