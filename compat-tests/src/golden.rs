//! Golden bundles: one per release, made from that release's valid wire fixtures when the release is
//! cut (`cargo run -p diagwire-compat-tests --example make_golden_bundle -- <version>`), stored as
//! `fixtures/<version>/golden.tar.gz` and never rewritten. Every later reader must read every one.

use std::path::{Path, PathBuf};

use diagwire::bundle::BundleContents;
use serde_json::{Value, json};

use crate::fixtures_dir;

/// Where the golden bundle of a release lives.
pub fn path(version: &str) -> PathBuf {
    fixtures_dir().join(version).join("golden.tar.gz")
}

/// The minor version a wire fixture needs: `v1-<minor>-…` names a fixture of the fields that minor
/// version added; every other fixture is of 1.0.0.
fn fixture_minor(name: &str) -> u64 {
    let file = Path::new(name)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    file.strip_prefix("v1-")
        .and_then(|rest| rest.split('-').next())
        .and_then(|m| m.parse().ok())
        .unwrap_or(0)
}

/// The valid wire fixtures of `kind` that a release of minor version `minor` knows.
fn valid_fixtures(kind: &str, minor: u64) -> Vec<Value> {
    crate::valid(kind)
        .into_iter()
        .filter(|f| fixture_minor(&f.name) <= minor)
        .map(|f| f.value())
        .collect()
}

/// The golden bundle of a release: one node per boot fixture of that release, its events batches
/// and snapshots spread over the nodes, the vast.ai records on the first node, and a manifest that
/// agrees with the files.
pub fn bundle_for(version: &str) -> BundleContents {
    let minor: u64 = version
        .split('.')
        .nth(1)
        .and_then(|m| m.parse().ok())
        .expect("a release version is major.minor.patch");
    let newer = minor > 0;
    let boots = valid_fixtures("boot", minor);
    let batches = valid_fixtures("event_batch", minor);
    let events = valid_fixtures("event", minor);
    let snapshots = valid_fixtures("snapshot", minor);
    let vastai = valid_fixtures("vastai", minor);
    let finalize = valid_fixtures("finalize", minor);
    let mut b = BundleContents::new(format!("golden-{version}"));
    let mut nodes = Vec::new();
    for (i, boot) in boots.iter().enumerate() {
        let label = format!("node-{i:02}");
        b.insert_json(format!("{label}/boot.json"), boot);
        let mut event_batches = 0;
        for (j, batch) in batches
            .iter()
            .enumerate()
            .filter(|(j, _)| j % boots.len() == i)
        {
            b.insert_json(format!("{label}/events/events-{:06}.json", j + 1), batch);
            event_batches += 1;
        }
        let mine: Vec<&Value> = events
            .iter()
            .enumerate()
            .filter(|(j, _)| j % boots.len() == i)
            .map(|(_, e)| e)
            .collect();
        if !mine.is_empty() {
            event_batches += 1;
            b.insert_json(
                format!("{label}/events/events-{:06}.json", 900_000 + i),
                &mine,
            );
        }
        let mut snaps = 0;
        for (j, s) in snapshots
            .iter()
            .enumerate()
            .filter(|(j, _)| j % boots.len() == i)
        {
            b.insert_json(format!("{label}/snapshots/snapshot-{:06}.json", j + 1), s);
            snaps += 1;
        }
        let mut vast = 0;
        if i == 0 {
            for (j, v) in vastai.iter().enumerate() {
                b.insert_json(format!("{label}/vastai/vastai_record-{:06}.json", j + 1), v);
                vast += 1;
            }
            b.insert_json(format!("{label}/finalize.json"), &finalize[0]);
        }
        nodes.push(json!({
            "node_id_hex": boot["node_id_hex"], "label": label, "role": boot["role"],
            "stage_index": boot["stage_index"], "boot_recorded": true, "event_batches": event_batches,
            "snapshots": snaps, "finalize_recorded": i == 0, "vastai_records": vast,
        }));
    }
    let mut manifest = json!({
        "run_id": format!("golden-{version}"), "run_start_collector_ms": 1779733878000u64,
        "run_end_collector_ms": 1779734178000u64, "finalize_received": true, "nodes": nodes,
    });
    if newer {
        manifest["contract_version"] = json!(version);
        manifest["writer"] =
            json!({"kind": "collector", "name": "diagwire-golden", "version": version});
    }
    b.insert_json("MANIFEST.json", &manifest);
    b
}
