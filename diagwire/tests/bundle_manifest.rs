//! The manifest check: a bundle's MANIFEST.json must agree with its files.
#![cfg(all(feature = "bundle", feature = "validate"))]

mod common;

use common::{Node, bundle, problems};
use diagwire::bundle::BundleContents;
use diagwire::bundle::output::write_dir;

fn two_nodes() -> BundleContents {
    let nodes = [
        Node {
            label: "orchestrator",
            boot: "boot/orchestrator-local-dev.json",
            events: vec![vec![
                "event/dial-started.json",
                "event/dial-outcome-timeout.json",
            ]],
            snapshots: vec!["snapshot/snap-trigger-periodic.json"],
            finalize: Some("finalize/exit-reason.json"),
        },
        Node {
            label: "stage-0",
            boot: "boot/stage-rental-id-only-in-container-id.json",
            events: vec![
                vec!["event/message-sent.json"],
                vec!["event/message-received.json"],
            ],
            snapshots: vec![],
            finalize: None,
        },
    ];
    bundle("run-manifest", &nodes, true)
}

fn problems_of(b: &BundleContents) -> Vec<String> {
    let dir = tempfile::tempdir().expect("temp dir");
    problems(&write_dir(b, dir.path()).expect("write"))
}

fn edit_manifest(b: &mut BundleContents, f: impl FnOnce(&mut serde_json::Value)) {
    let mut m: serde_json::Value =
        serde_json::from_slice(&b.files["MANIFEST.json"]).expect("manifest");
    f(&mut m);
    b.insert_json("MANIFEST.json", &m);
}

#[test]
fn a_manifest_that_agrees_with_the_files_has_no_problem() {
    assert_eq!(problems_of(&two_nodes()), Vec::<String>::new());
}

#[test]
fn a_listed_node_whose_directory_is_missing_is_reported() {
    let mut b = two_nodes();
    b.files.retain(|path, _| !path.starts_with("stage-0/"));
    let p = problems_of(&b);
    assert!(
        p.iter().any(|l| l.ends_with(
            "MANIFEST.json:0 /nodes/1/label: node `stage-0` is listed but its directory is missing"
        )),
        "{p:#?}"
    );
}

#[test]
fn a_node_directory_the_manifest_does_not_list_is_reported() {
    let mut b = two_nodes();
    edit_manifest(&mut b, |m| {
        m["nodes"].as_array_mut().expect("nodes").pop();
    });
    let p = problems_of(&b);
    assert!(
        p.iter()
            .any(|l| l.ends_with("/nodes: node directory `stage-0` is not listed in the manifest")),
        "{p:#?}"
    );
}

#[test]
fn a_count_that_differs_from_the_files_is_reported() {
    let mut b = two_nodes();
    edit_manifest(&mut b, |m| m["nodes"][1]["event_batches"] = 3.into());
    let p = problems_of(&b);
    assert!(
        p.iter().any(|l| l.ends_with(
            "/nodes/1/event_batches: manifest says 3 event batches, found 2 events files"
        )),
        "{p:#?}"
    );
}

#[test]
fn a_listed_file_that_is_missing_is_reported() {
    let mut b = two_nodes();
    b.files.remove("orchestrator/finalize.json");
    let p = problems_of(&b);
    assert!(p.iter().any(|l| l.ends_with("/nodes/0/finalize_recorded: manifest says true, `orchestrator/finalize.json` is missing")), "{p:#?}");
    assert!(
        p.iter().any(|l| l.ends_with(
            "/finalize_received: manifest says true, but no node has a finalize record"
        )),
        "{p:#?}"
    );
}

#[test]
fn a_bundle_without_a_manifest_is_reported() {
    let mut b = two_nodes();
    b.files.remove("MANIFEST.json");
    let p = problems_of(&b);
    assert!(
        p.iter()
            .any(|l| l.ends_with("MANIFEST.json: the bundle has no MANIFEST.json")),
        "{p:#?}"
    );
}

#[test]
fn a_bad_record_does_not_hide_the_other_files_problems() {
    let mut b = two_nodes();
    b.files.insert(
        "stage-0/events/events-000002.json".into(),
        b"[{\"type\": 7}]".to_vec(),
    );
    b.files
        .remove("orchestrator/snapshots/snapshot-000001.json");
    let p = problems_of(&b);
    assert!(
        p.iter()
            .any(|l| l.contains("stage-0/events/events-000002.json:0 ")),
        "{p:#?}"
    );
    assert!(
        p.iter().any(|l| l
            .ends_with("/nodes/0/snapshots: manifest says 1 snapshots, found 0 snapshot files")),
        "{p:#?}"
    );
}
