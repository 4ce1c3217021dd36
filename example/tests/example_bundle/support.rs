//! What the example bundle's cases share: where the shipped copies live, a file's record kind, and
//! the current bundle read back into its types per node.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use diagwire::NodeId;
use diagwire::bundle::BundleContents;
use diagwire::layout::{MANIFEST, parse_bundle_path};
use diagwire::v1::{EventRecord, Identity, Manifest, RecordKind, Snapshot};
use diagwire_example::n3_relay_flap;

pub const REGENERATE: &str = "cargo run -p diagwire-example --example make_example_bundle";

pub fn shipped_dir(run_id: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .join("examples/bundles")
        .join(run_id)
}

/// The record kind of a file of the run directory, by its path; `None` outside the layout.
pub fn kind_of(path: &str) -> Option<RecordKind> {
    parse_bundle_path(path).role.record_kind()
}

/// The bundle read back into its types, per node label.
pub struct Parsed {
    pub manifest: Manifest,
    pub boots: BTreeMap<String, Identity>,
    pub events: BTreeMap<String, Vec<EventRecord>>,
    pub snapshots: BTreeMap<String, Vec<Snapshot>>,
    pub finalizes: BTreeSet<String>,
    pub labels_by_hex: BTreeMap<String, String>,
}

impl Parsed {
    pub fn new(bundle: &BundleContents) -> Parsed {
        let manifest: Manifest =
            serde_json::from_slice(&bundle.files[MANIFEST]).expect("manifest parses");
        let mut parsed = Parsed {
            labels_by_hex: manifest
                .nodes
                .iter()
                .map(|n| (n.node_id_hex.0.clone(), n.label.clone()))
                .collect(),
            manifest,
            boots: BTreeMap::new(),
            events: BTreeMap::new(),
            snapshots: BTreeMap::new(),
            finalizes: BTreeSet::new(),
        };
        for (path, bytes) in &bundle.files {
            let place = parse_bundle_path(path);
            let (Some(label), Some(kind)) = (place.node, place.role.record_kind()) else {
                continue;
            };
            match kind {
                RecordKind::Boot => {
                    let boot = serde_json::from_slice(bytes).expect("boot parses");
                    parsed.boots.insert(label, boot);
                }
                RecordKind::EventBatch => {
                    let batch: Vec<EventRecord> =
                        serde_json::from_slice(bytes).expect("batch parses");
                    parsed.events.entry(label).or_default().extend(batch);
                }
                RecordKind::Snapshot => {
                    let snap = serde_json::from_slice(bytes).expect("snapshot parses");
                    parsed.snapshots.entry(label).or_default().push(snap);
                }
                RecordKind::Finalize => {
                    parsed.finalizes.insert(label);
                }
                _ => {}
            }
        }
        parsed
    }

    pub fn label(&self, id: &NodeId) -> &str {
        self.labels_by_hex
            .get(id.to_hex().as_str())
            .map_or("?", String::as_str)
    }

    pub fn events_of(&self, label: &str) -> &[EventRecord] {
        self.events.get(label).map_or(&[], Vec::as_slice)
    }

    pub fn snapshots_of(&self, label: &str) -> &[Snapshot] {
        self.snapshots.get(label).map_or(&[], Vec::as_slice)
    }

    /// The SWIM members: every node but the relay.
    pub fn members(&self) -> Vec<String> {
        self.manifest
            .nodes
            .iter()
            .filter(|n| n.role.as_deref() != Some("relay"))
            .map(|n| n.label.clone())
            .collect()
    }

    pub fn stages(&self) -> Vec<String> {
        self.manifest
            .nodes
            .iter()
            .filter(|n| n.role.as_deref() == Some("stage"))
            .map(|n| n.label.clone())
            .collect()
    }
}

pub fn parsed() -> Parsed {
    Parsed::new(&n3_relay_flap())
}
