//! Helpers shared by the bundle tests: fixture records and bundles built from them.
#![allow(dead_code)]

use std::path::Path;

use diagwire::bundle::BundleContents;
use diagwire::bundle::read::Limits;
use diagwire::validate::Validators;
use diagwire::validate::bundle::{open, validate_bundle};
use serde_json::{Value, json};

pub fn fixture(rel: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../compat-tests/fixtures/wire")
        .join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("fixture JSON")
}

/// One node of a bundle under construction: its label, boot record and files.
pub struct Node {
    pub label: &'static str,
    pub boot: &'static str,
    pub events: Vec<Vec<&'static str>>,
    pub snapshots: Vec<&'static str>,
    pub finalize: Option<&'static str>,
}

/// A collector-layout bundle of `nodes`, with a manifest that agrees with the files; `newest` adds
/// the newest generation's `vastai_records`.
pub fn bundle(run_id: &str, nodes: &[Node], newest: bool) -> BundleContents {
    let mut b = BundleContents::new(run_id);
    let mut listed = Vec::new();
    for n in nodes {
        let mut boot = fixture(n.boot);
        // A node's boot record names the run it belongs to.
        boot["run_id"] = json!(run_id);
        b.insert_json(format!("{}/boot.json", n.label), &boot);
        for (i, batch) in n.events.iter().enumerate() {
            let records: Vec<Value> = batch.iter().map(|f| fixture(f)).collect();
            b.insert_json(
                format!("{}/events/events-{:06}.json", n.label, i + 1),
                &records,
            );
        }
        for (i, s) in n.snapshots.iter().enumerate() {
            b.insert_json(
                format!("{}/snapshots/snapshot-{:06}.json", n.label, i + 1),
                &fixture(s),
            );
        }
        if let Some(f) = n.finalize {
            b.insert_json(format!("{}/finalize.json", n.label), &fixture(f));
        }
        let mut entry = json!({
            "node_id_hex": boot["node_id_hex"], "label": n.label, "role": boot["role"],
            "stage_index": boot["stage_index"], "boot_recorded": true,
            "event_batches": n.events.len(), "snapshots": n.snapshots.len(),
            "finalize_recorded": n.finalize.is_some(),
        });
        if newest {
            entry["vastai_records"] = json!(0);
        }
        listed.push(entry);
    }
    let manifest = json!({
        "run_id": run_id, "run_start_collector_ms": 1779733878000u64, "run_end_collector_ms": 1779734178000u64,
        "finalize_received": nodes.iter().any(|n| n.finalize.is_some()), "nodes": listed,
    });
    b.insert_json("MANIFEST.json", &manifest);
    b
}

pub fn problems(path: &Path) -> Vec<String> {
    let v = Validators::new().expect("validators");
    let mut reader = open(path, Limits::default()).unwrap_or_else(|e| panic!("{e}"));
    let r = validate_bundle(&v, &mut reader, &mut |_, _| {});
    assert!(r.records > 0, "no records checked in {}", path.display());
    r.problems.iter().map(ToString::to_string).collect()
}
