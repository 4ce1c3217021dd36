//! Building a bundle record by record with `bundle::Writer`: each record lands at its layout path,
//! the manifest is derived from the files (with the contract version and the writer), labels are
//! unique and safe, the archive is deterministic, and the bundle reads back and checks clean.
#![cfg(feature = "bundle")]

use std::path::Path;

use diagwire::bundle::read::{Limits, read_all};
use diagwire::bundle::{Finished, Writer, output};
use diagwire::layout::FileKind;
use diagwire::v1::{
    BundleWriter, DialStarted, EventRecord, Finalize, Identity, Manifest, ManifestNode, Record,
    Snapshot, SnapshotBody, SnapshotTrigger, VastaiRecord, WriterKind,
};
use diagwire::{CONTRACT_VERSION, NodeId, ProblemKind};

const RUN: &str = "run-sim-7";
const WALL: u64 = 1_779_733_878_000;
const ORCH: NodeId = NodeId([0x5f; 32]);
const STAGE: NodeId = NodeId([0xaf; 32]);
const OTHER_STAGE: NodeId = NodeId([0x80; 32]);
const VASTAI_NODE: &str = "vastai-stage-0";

fn sim() -> BundleWriter {
    BundleWriter::new(WriterKind::Sim, "swactor-sim", "0.3.1")
}

/// The boot record of `node`, in role `role` at `stage_index`, its `boot`-th start.
fn identity(node: NodeId, role: &str, stage_index: Option<u32>, boot: u32) -> Identity {
    let mut identity = Identity::new(node.to_hex(), node.short(), role, RUN, WALL - 60_000, boot);
    identity.stage_index = stage_index;
    identity
}

fn event(node: NodeId, seq: u64) -> EventRecord {
    EventRecord::new(
        node,
        seq,
        WALL + seq,
        DialStarted::new(NodeId([9; 32]), 1, 5_000),
    )
}

fn snapshot(of: &Identity, seq: u64) -> Snapshot {
    let id = format!("{}-{seq}", of.node_id_short);
    Snapshot::new(
        of.clone(),
        RUN,
        id,
        WALL + seq,
        seq,
        SnapshotTrigger::Periodic,
        SnapshotBody::new(vec![]),
    )
}

fn finalize(reason: &str) -> Finalize {
    let mut finalize = Finalize::new();
    finalize.exit_reason = Some(reason.to_owned());
    finalize
}

fn vastai_sample() -> VastaiRecord {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../compat-tests/fixtures/wire/vastai/host-sample-minimal.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every record of the two-node bundle, by the path it belongs at.
fn two_node_records() -> Vec<(&'static str, Record)> {
    let orch_first = identity(ORCH, "orchestrator", None, 0);
    let orch = identity(ORCH, "orchestrator", None, 1);
    let stage = identity(STAGE, "stage", Some(0), 0);
    vec![
        ("orchestrator/boot.json", Record::Boot(orch.clone())),
        (
            "orchestrator/boot/boot-000001.json",
            Record::Boot(orch_first),
        ),
        (
            "orchestrator/events/events-000001.json",
            Record::EventBatch(vec![event(ORCH, 1), event(ORCH, 2)]),
        ),
        (
            "orchestrator/events/events-000002.json",
            Record::EventBatch(vec![event(ORCH, 3)]),
        ),
        (
            "orchestrator/finalize.json",
            Record::Finalize(finalize("completed")),
        ),
        (
            "orchestrator/finalize/finalize-000001.json",
            Record::Finalize(finalize("first")),
        ),
        (
            "orchestrator/snapshots/snapshot-000001.json",
            Record::Snapshot(snapshot(&orch, 4)),
        ),
        ("stage-0/boot.json", Record::Boot(stage.clone())),
        (
            "stage-0/events/events-000001.json",
            Record::EventBatch(vec![event(STAGE, 1)]),
        ),
        (
            "stage-0/snapshots/snapshot-000001.json",
            Record::Snapshot(snapshot(&stage, 2)),
        ),
        (
            "stage-0/snapshots/snapshot-000002.json",
            Record::Snapshot(snapshot(&stage, 3)),
        ),
        (
            "vastai-stage-0/vastai/vastai_sample-000001.json",
            Record::Vastai(vastai_sample()),
        ),
    ]
}

/// An orchestrator that booted twice and finalized twice, a stage, and a vast.ai producer, added
/// in an interleaved order.
fn two_nodes() -> Writer {
    let orch_first = identity(ORCH, "orchestrator", None, 0);
    let orch = identity(ORCH, "orchestrator", None, 1);
    let stage = identity(STAGE, "stage", Some(0), 0);
    let mut w = Writer::new(RUN, sim());
    w.boot(&orch_first)
        .boot(&stage)
        .events(&ORCH.to_hex(), &[event(ORCH, 1), event(ORCH, 2)])
        .events(&STAGE.to_hex(), &[event(STAGE, 1)])
        .snapshot(&snapshot(&stage, 2))
        .boot(&orch)
        .events(&ORCH.to_hex(), &[event(ORCH, 3)])
        .snapshot(&snapshot(&orch, 4))
        .snapshot(&snapshot(&stage, 3))
        .vastai(VASTAI_NODE, "sample", &vastai_sample())
        .finalize(&ORCH.to_hex(), &finalize("first"))
        .finalize(&ORCH.to_hex(), &finalize("completed"))
        .collector_span(WALL, WALL + 2_000)
        .collector_span(WALL - 500, WALL + 1_500);
    w
}

/// The manifest entry of a node written through the typed methods.
fn entry(label: &str, node: NodeId, role: &str, stage_index: Option<u32>) -> ManifestNode {
    let mut n = ManifestNode::new(node.to_hex(), label);
    n.role = Some(role.to_owned());
    n.stage_index = stage_index;
    n.boot_recorded = true;
    n.vastai_records = Some(0);
    n.contract_version = Some(CONTRACT_VERSION.to_owned());
    n
}

fn labels(manifest: &Manifest) -> Vec<&str> {
    manifest.nodes.iter().map(|n| n.label.as_str()).collect()
}

#[test]
fn each_record_is_written_at_its_layout_path() {
    let done = two_nodes().finish();
    let mut want = two_node_records();
    want.sort_by_key(|(path, _)| *path);
    let mut paths: Vec<&str> = want.iter().map(|(path, _)| *path).collect();
    paths.insert(0, "MANIFEST.json");
    let got: Vec<&str> = done.contents.files.keys().map(String::as_str).collect();
    assert_eq!(got, paths);
    for (path, record) in &want {
        let text = std::str::from_utf8(&done.contents.files[*path]).unwrap();
        let kind = diagwire::layout::parse_bundle_path(path)
            .role
            .record_kind()
            .unwrap();
        assert_eq!(&Record::parse(kind, text).unwrap(), record, "{path}");
        assert!(text.ends_with("}\n") || text.ends_with("]\n"), "{path}");
    }
    assert!(done.problems.is_empty(), "{:#?}", done.problems);
}

#[test]
fn the_manifest_is_derived_from_the_files_with_the_contract_version_and_the_writer() {
    let done = two_nodes().finish();
    let mut orch = entry("orchestrator", ORCH, "orchestrator", None);
    orch.event_batches = 2;
    orch.snapshots = 1;
    orch.finalize_recorded = true;
    let mut stage = entry("stage-0", STAGE, "stage", Some(0));
    stage.event_batches = 1;
    stage.snapshots = 2;
    // A vast.ai producer posts no boot record and declares no contract version of its own.
    let mut vastai = ManifestNode::new(VASTAI_NODE.into(), VASTAI_NODE);
    vastai.vastai_records = Some(1);
    let mut want = Manifest::new(RUN);
    want.run_start_collector_ms = Some(WALL - 500);
    want.run_end_collector_ms = Some(WALL + 2_000);
    want.finalize_received = true;
    want.nodes = vec![orch, stage, vastai];
    want.contract_version = Some(CONTRACT_VERSION.to_owned());
    want.writer = Some(sim());
    assert_eq!(done.manifest, want);
    let written: Manifest = serde_json::from_slice(&done.contents.files["MANIFEST.json"]).unwrap();
    assert_eq!(written, want, "MANIFEST.json is the manifest returned");
}

#[test]
fn finalize_received_is_false_without_a_finalize_record() {
    let mut w = Writer::new(RUN, sim());
    w.boot(&identity(ORCH, "orchestrator", None, 0))
        .events(&ORCH.to_hex(), &[]);
    let done = w.finish();
    assert!(!done.manifest.finalize_received);
    assert!(!done.manifest.nodes[0].finalize_recorded);
    assert_eq!(
        (
            done.manifest.run_start_collector_ms,
            done.manifest.run_end_collector_ms
        ),
        (None, None),
        "no span was given"
    );
}

#[test]
fn labels_several_nodes_want_get_the_first_eight_id_characters_appended() {
    let mut w = Writer::new(RUN, sim());
    w.boot(&identity(STAGE, "stage", Some(0), 0))
        .boot(&identity(OTHER_STAGE, "stage", Some(0), 0))
        .boot(&identity(ORCH, "stage", Some(1), 0));
    let done = w.finish();
    assert_eq!(
        labels(&done.manifest),
        ["stage-0-80808080", "stage-0-afafafaf", "stage-1"]
    );
    assert!(
        done.contents
            .files
            .contains_key("stage-0-afafafaf/boot.json")
    );
    assert!(
        done.contents
            .files
            .contains_key("stage-0-80808080/boot.json")
    );
    assert!(done.problems.is_empty(), "{:#?}", done.problems);
}

#[test]
fn a_label_that_is_not_a_safe_directory_name_is_made_safe_and_reported() {
    let mut w = Writer::new(RUN, sim());
    w.boot(&identity(ORCH, "../up", None, 0))
        .boot(&identity(STAGE, "", None, 0));
    let done = w.finish();
    assert_eq!(labels(&done.manifest), [".._up", "node-afafafaf"]);
    let problems: Vec<_> = done
        .problems
        .iter()
        .map(|p| (p.kind, p.location.file.as_str()))
        .collect();
    let at = format!("{RUN}/{}", ORCH.to_hex());
    assert_eq!(problems, [(ProblemKind::Layout, at.as_str())]);
    assert_eq!(done.manifest.nodes[0].role.as_deref(), Some("../up"));
}

#[test]
fn writing_the_same_bundle_twice_as_tar_gz_gives_the_same_bytes() {
    let mut first = Vec::new();
    two_nodes().write_tar_gz(&mut first).unwrap();
    let mut second = Vec::new();
    let manifest = two_nodes().write_tar_gz(&mut second).unwrap();
    assert_eq!(first, second);
    assert_eq!(manifest, two_nodes().finish().manifest);
    // And the same bytes as the contents written by the plain archive writer.
    let mut direct = Vec::new();
    output::write_tar_gz(&two_nodes().finish().contents, &mut direct).unwrap();
    assert_eq!(first, direct);
}

#[test]
fn the_bundle_reads_back_as_written_from_a_directory_and_an_archive() {
    let tmp = tempfile::tempdir().unwrap();
    let Finished { contents, .. } = two_nodes().finish();
    let (dir, manifest) = two_nodes().write_dir(&tmp.path().join("out")).unwrap();
    assert_eq!(dir, tmp.path().join("out").join(RUN));
    assert_eq!(manifest, two_nodes().finish().manifest);
    let archive = tmp.path().join("bundle.tar.gz");
    two_nodes()
        .write_tar_gz(std::fs::File::create(&archive).unwrap())
        .unwrap();
    for path in [dir, archive] {
        let (read, errors) = read_all(&path, Limits::default()).unwrap();
        assert_eq!(errors, vec![], "{}", path.display());
        assert_eq!(read, contents, "{}", path.display());
    }
}

#[cfg(feature = "validate")]
#[test]
fn the_bundle_validates_clean_against_its_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, _) = two_nodes().write_dir(tmp.path()).unwrap();
    let archive = tmp.path().join("bundle.tar.gz");
    two_nodes()
        .write_tar_gz(std::fs::File::create(&archive).unwrap())
        .unwrap();
    let validators = diagwire::validate::Validators::new().unwrap();
    for path in [dir, archive] {
        let mut reader =
            diagwire::bundle::read::BundleReader::open(&path, Limits::default()).unwrap();
        let report =
            diagwire::validate::bundle::validate_bundle(&validators, &mut reader, &mut |_, _| {});
        assert!(
            report.problems.is_empty(),
            "{}: {:#?}",
            path.display(),
            report.problems
        );
        assert_eq!(report.invalid_records, 0);
        // 1 manifest, 3 boot, 4 event, 2 finalize, 3 snapshot and 1 vast.ai records.
        assert_eq!(report.records, 14, "{}", path.display());
    }
}

#[test]
fn files_added_as_bytes_keep_their_sequence_and_make_the_node_untyped() {
    let mut w = Writer::new(RUN, sim());
    w.boot(&identity(STAGE, "stage", Some(0), 0));
    let node = STAGE.to_hex();
    w.add_file(&node.0, FileKind::Events, Some(7), b"[]\n".to_vec());
    w.add_file(&node.0, FileKind::Events, None, b"[]\n".to_vec());
    // A later boot file read leniently: it renames the node.
    let later = serde_json::to_vec(&identity(STAGE, "stage", Some(3), 1)).unwrap();
    w.add_file(&node.0, FileKind::Boot, Some(2), later.clone());
    let done = w.finish();
    let got: Vec<&str> = done.contents.files.keys().map(String::as_str).collect();
    assert_eq!(
        got,
        [
            "MANIFEST.json",
            "stage-3/boot.json",
            "stage-3/boot/boot-000001.json",
            "stage-3/events/events-000007.json",
            "stage-3/events/events-000008.json",
        ]
    );
    assert_eq!(done.contents.files["stage-3/boot.json"], later);
    let n = &done.manifest.nodes[0];
    assert_eq!(
        (n.label.as_str(), n.stage_index, n.event_batches),
        ("stage-3", Some(3), 2)
    );
    assert_eq!(
        n.contract_version, None,
        "bytes added as they are carry no contract version"
    );
    assert_eq!(
        done.manifest.contract_version.as_deref(),
        Some(CONTRACT_VERSION)
    );
}

#[test]
fn a_file_added_twice_with_one_sequence_number_replaces_the_first_and_is_reported() {
    let mut w = Writer::new(RUN, sim());
    let node = STAGE.to_hex();
    w.boot(&identity(STAGE, "stage", Some(0), 0));
    w.events(&node, &[event(STAGE, 1)]);
    w.add_file(&node.0, FileKind::Events, Some(1), b"[]\n".to_vec());
    let done = w.finish();
    let events: Vec<_> = done
        .contents
        .files
        .iter()
        .filter(|(path, _)| path.contains("/events/"))
        .collect();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].1, b"[]\n");
    assert_eq!(done.manifest.nodes[0].event_batches, 1);
    let problems: Vec<_> = done
        .problems
        .iter()
        .map(|p| (p.kind, p.location.file.clone()))
        .collect();
    assert_eq!(
        problems,
        [(ProblemKind::Layout, format!("{RUN}/{}", node.0))]
    );
    assert!(done.problems[0].message.contains("added twice"));
}

#[test]
fn a_vastai_kind_that_cannot_name_a_file_is_made_safe_and_reads_back() {
    let mut w = Writer::new(RUN, sim());
    w.vastai(VASTAI_NODE, "host-sample", &vastai_sample())
        .vastai(VASTAI_NODE, "", &vastai_sample());
    let done = w.finish();
    let got: Vec<&str> = done.contents.files.keys().map(String::as_str).collect();
    assert_eq!(
        got,
        [
            "MANIFEST.json",
            "vastai-stage-0/vastai/vastai__-000001.json",
            "vastai-stage-0/vastai/vastai_host_sample-000001.json",
        ]
    );
    assert_eq!(done.manifest.nodes[0].vastai_records, Some(2));
    assert_eq!(done.problems.len(), 2, "{:#?}", done.problems);
    for path in got.iter().skip(1) {
        assert!(
            matches!(
                diagwire::layout::parse_bundle_path(path).role,
                diagwire::layout::Role::Numbered(FileKind::Vastai(_), 1)
            ),
            "{path} reads back as a vast.ai record"
        );
    }
}
