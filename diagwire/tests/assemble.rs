//! Assembling bundles from collector staging, the serve decision and staging retention (issue 3 item 2).
#![cfg(feature = "bundle")]

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use diagwire::bundle::assemble::{
    Assembled, CachedBundle, RetentionPolicy, ServeDecision, StagedRun, StagingState, assemble,
    retention_plan, serve_decision,
};
use diagwire::bundle::read::{BundleReader, Limits};
use diagwire::bundle::write::write_dir;
use diagwire::check::bundle::check_bundle;
use diagwire::v1::{Manifest, ManifestNode};
use diagwire::validate::Validators;
use serde_json::Value;

const RUN: &str = "run-2026-05-25-a7f3";

const ORCH: &str = "5f8a3c0e9b1d4f2a6c7e8091a2b3c4d5e6f708192a3b4c5d6e7f808192a3b4c5";
const STAGE_A: &str = "afae7c9954560276cd9bea9bfe46918bc12bffa6665b3fa9b6b146e7c54b5f97";
const STAGE_B: &str = "8039dee39733fbc3fb47085742683c99070993126b792617e35e38b0ede4b12f";
const STAGE_C: &str = "1b6e0c3d4f5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
const RELAY: &str = "c4e1f07a2b9d38e6a5f4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a2918d0e1";

macro_rules! fixture {
    ($path:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../compat-tests/fixtures/wire/",
            $path
        ))
    };
}

const BOOT_TEMPLATE: &str = fixture!("boot/stage-rental-id-only-in-container-id.json");
const EVENTS: &str = fixture!("event_batch/realistic-batch.json");
const EMPTY_EVENTS: &str = fixture!("event_batch/empty-batch.json");
const SNAPSHOT: &str = fixture!("snapshot/snap-minimal-empty-reachability.json");
const FINALIZE: &str = fixture!("finalize/exit-reason.json");
const FINALIZE_EMPTY: &str = fixture!("finalize/empty-object.json");
const VASTAI_INSTANCE: &str = fixture!("vastai/instance-pre-running-minimal.json");
const VASTAI_SAMPLE: &str = fixture!("vastai/host-sample-minimal.json");
const VASTAI_LOGS: &str = fixture!("vastai/logs-stdout.json");
const VASTAI_LIFECYCLE: &str = fixture!("vastai/lifecycle-deploy-start.json");
const BAD_BOOT: &str = fixture!("boot/invalid/missing-run-id.json");
const BAD_EVENTS: &str = fixture!("event_batch/invalid/one-record-missing-duration-ms.json");

/// A boot record (pretty JSON, as staged) of node `id` with the given role and stage index.
fn boot(id: &str, role: &str, stage_index: Option<u32>) -> String {
    let mut value: Value = serde_json::from_str(BOOT_TEMPLATE).unwrap();
    value["node_id_hex"] = id.into();
    value["node_id_short"] = id[..8].into();
    value["role"] = role.into();
    value["stage_index"] = stage_index.into();
    serde_json::to_string_pretty(&value).unwrap() + "\n"
}

/// A collector staging root holding run [`RUN`].
struct Staging(tempfile::TempDir);

impl Staging {
    fn new() -> Staging {
        let staging = Staging(tempfile::tempdir().unwrap());
        fs::create_dir_all(staging.run_dir()).unwrap();
        staging
    }

    fn root(&self) -> &Path {
        self.0.path()
    }

    fn run_dir(&self) -> PathBuf {
        self.root().join(RUN)
    }

    fn put(&self, node: &str, file: &str, bytes: impl AsRef<[u8]>) -> &Staging {
        let dir = self.run_dir().join(node);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(file), bytes).unwrap();
        self
    }

    fn put_at(&self, node: &str, file: &str, bytes: &str, mtime_ms: u64) -> &Staging {
        self.put(node, file, bytes);
        let f = fs::File::options()
            .write(true)
            .open(self.run_dir().join(node).join(file))
            .unwrap();
        f.set_modified(UNIX_EPOCH + Duration::from_millis(mtime_ms))
            .unwrap();
        self
    }

    fn remove(&self, node: &str, file: &str) {
        fs::remove_file(self.run_dir().join(node).join(file)).unwrap();
    }

    fn remove_node(&self, node: &str) {
        fs::remove_dir_all(self.run_dir().join(node)).unwrap();
    }

    fn assemble(&self) -> Assembled {
        assemble(self.root(), RUN).unwrap()
    }
}

fn labels(manifest: &Manifest) -> Vec<&str> {
    manifest.nodes.iter().map(|n| n.label.as_str()).collect()
}

fn node<'m>(manifest: &'m Manifest, id: &str) -> &'m ManifestNode {
    manifest
        .nodes
        .iter()
        .find(|n| n.node_id_hex.as_str() == id)
        .unwrap_or_else(|| panic!("node {id} not in the manifest"))
}

fn paths(assembled: &Assembled) -> Vec<&str> {
    assembled
        .contents
        .files
        .keys()
        .map(String::as_str)
        .collect()
}

fn file<'a>(assembled: &'a Assembled, path: &str) -> &'a [u8] {
    assembled
        .contents
        .files
        .get(path)
        .unwrap_or_else(|| panic!("{path} not in the bundle: {:?}", paths(assembled)))
}

/// Asserts exactly one problem names `at` (a path relative to the staging root).
#[track_caller]
fn assert_one_problem(assembled: &Assembled, at: &str) {
    let hits = assembled
        .problems
        .iter()
        .filter(|p| p.starts_with(&format!("{at}: ")))
        .count();
    assert_eq!(hits, 1, "problems about {at}: {:#?}", assembled.problems);
}

// ---------------------------------------------------------------------------------------------
// Assembly: layout

#[test]
fn a_run_without_a_finalize_record_is_assembled_with_finalize_received_false() {
    let staging = Staging::new();
    staging
        .put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
        .put(ORCH, "events-000001.json", EVENTS)
        .put(STAGE_A, "boot-000001.json", boot(STAGE_A, "stage", Some(0)));
    let assembled = staging.assemble();
    assert!(!assembled.manifest.finalize_received);
    assert_eq!(
        paths(&assembled),
        [
            "MANIFEST.json",
            "orchestrator/boot.json",
            "orchestrator/events/events-000001.json",
            "stage-0/boot.json",
        ]
    );
    assert!(assembled.problems.is_empty(), "{:#?}", assembled.problems);
}

#[test]
fn a_finalize_file_on_disk_sets_finalize_received_and_its_node_finalize_recorded() {
    let staging = Staging::new();
    staging
        .put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
        .put(ORCH, "finalize-000001.json", FINALIZE)
        .put(STAGE_A, "boot-000001.json", boot(STAGE_A, "stage", Some(0)));
    let manifest = staging.assemble().manifest;
    assert!(manifest.finalize_received);
    assert!(node(&manifest, ORCH).finalize_recorded);
    assert!(!node(&manifest, STAGE_A).finalize_recorded);
}

#[test]
fn a_single_boot_record_is_written_as_boot_json_only() {
    let staging = Staging::new();
    let record = boot(STAGE_A, "stage", Some(0));
    staging.put(STAGE_A, "boot-000001.json", &record);
    let assembled = staging.assemble();
    assert_eq!(file(&assembled, "stage-0/boot.json"), record.as_bytes());
    assert!(
        !paths(&assembled)
            .iter()
            .any(|p| p.starts_with("stage-0/boot/"))
    );
}

#[test]
fn the_latest_boot_is_boot_json_and_earlier_boots_go_under_boot() {
    let staging = Staging::new();
    let first = boot(STAGE_A, "stage", Some(0));
    let second = boot(STAGE_A, "stage", Some(1));
    staging
        .put(STAGE_A, "boot-000001.json", &first)
        .put(STAGE_A, "boot-000002.json", &second);
    let assembled = staging.assemble();
    assert_eq!(
        paths(&assembled),
        [
            "MANIFEST.json",
            "stage-1/boot.json",
            "stage-1/boot/boot-000001.json"
        ]
    );
    assert_eq!(file(&assembled, "stage-1/boot.json"), second.as_bytes());
    assert_eq!(
        file(&assembled, "stage-1/boot/boot-000001.json"),
        first.as_bytes()
    );
}

#[test]
fn the_latest_finalize_is_finalize_json_and_earlier_finalizes_go_under_finalize() {
    let staging = Staging::new();
    staging
        .put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
        .put(ORCH, "finalize-000001.json", FINALIZE_EMPTY)
        .put(ORCH, "finalize-000002.json", FINALIZE);
    let assembled = staging.assemble();
    assert_eq!(
        file(&assembled, "orchestrator/finalize.json"),
        FINALIZE.as_bytes()
    );
    assert_eq!(
        file(&assembled, "orchestrator/finalize/finalize-000001.json"),
        FINALIZE_EMPTY.as_bytes()
    );
    assert!(node(&assembled.manifest, ORCH).finalize_recorded);
}

#[test]
fn events_snapshots_and_vastai_records_keep_their_staging_sequence_and_bytes() {
    let staging = Staging::new();
    staging
        .put(STAGE_A, "boot-000001.json", boot(STAGE_A, "stage", Some(0)))
        .put(STAGE_A, "events-000002.json", EVENTS)
        .put(STAGE_A, "events-000010.json", EMPTY_EVENTS)
        .put(STAGE_A, "snapshot-000003.json", SNAPSHOT)
        .put("vastai-stage-0", "vastai_sample-000004.json", VASTAI_SAMPLE)
        .put("vastai-stage-0", "vastai_logs-000001.json", VASTAI_LOGS);
    let assembled = staging.assemble();
    assert_eq!(
        paths(&assembled),
        [
            "MANIFEST.json",
            "stage-0/boot.json",
            "stage-0/events/events-000002.json",
            "stage-0/events/events-000010.json",
            "stage-0/snapshots/snapshot-000003.json",
            "vastai-stage-0/vastai/vastai_logs-000001.json",
            "vastai-stage-0/vastai/vastai_sample-000004.json",
        ]
    );
    assert_eq!(
        file(&assembled, "stage-0/events/events-000002.json"),
        EVENTS.as_bytes()
    );
    assert_eq!(
        file(&assembled, "stage-0/snapshots/snapshot-000003.json"),
        SNAPSHOT.as_bytes()
    );
    assert_eq!(
        file(
            &assembled,
            "vastai-stage-0/vastai/vastai_sample-000004.json"
        ),
        VASTAI_SAMPLE.as_bytes()
    );
}

// ---------------------------------------------------------------------------------------------
// Assembly: labels

#[test]
fn node_labels_come_from_the_latest_boot_record() {
    let staging = Staging::new();
    staging
        .put(STAGE_A, "boot-000001.json", boot(STAGE_A, "relay", None))
        .put(STAGE_A, "boot-000002.json", boot(STAGE_A, "stage", Some(2)));
    let manifest = staging.assemble().manifest;
    let entry = node(&manifest, STAGE_A);
    assert_eq!(entry.label, "stage-2");
    assert_eq!(entry.role.as_deref(), Some("stage"));
    assert_eq!(entry.stage_index, Some(2));
}

#[test]
fn colliding_labels_get_the_first_eight_id_characters_appended() {
    let staging = Staging::new();
    staging
        .put(STAGE_A, "boot-000001.json", boot(STAGE_A, "stage", Some(0)))
        .put(STAGE_B, "boot-000001.json", boot(STAGE_B, "stage", Some(0)))
        .put(STAGE_C, "boot-000001.json", boot(STAGE_C, "stage", Some(1)));
    let assembled = staging.assemble();
    assert_eq!(
        labels(&assembled.manifest),
        ["stage-0-8039dee3", "stage-0-afae7c99", "stage-1"]
    );
    assert!(paths(&assembled).contains(&"stage-0-afae7c99/boot.json"));
    assert!(paths(&assembled).contains(&"stage-0-8039dee3/boot.json"));
}

#[test]
fn a_node_without_a_boot_record_is_labelled_node_and_its_id_prefix() {
    let staging = Staging::new();
    staging.put(RELAY, "events-000001.json", EVENTS);
    let manifest = staging.assemble().manifest;
    let entry = node(&manifest, RELAY);
    assert_eq!(entry.label, "node-c4e1f07a");
    assert!(!entry.boot_recorded);
    assert_eq!((entry.role.as_deref(), entry.stage_index), (None, None));
}

#[test]
fn vastai_synthetic_node_ids_are_used_verbatim_as_labels() {
    let staging = Staging::new();
    staging
        .put(
            "vastai-external",
            "vastai_lifecycle-000001.json",
            VASTAI_LIFECYCLE,
        )
        .put(
            "vastai-external",
            "vastai_instance-000001.json",
            VASTAI_INSTANCE,
        )
        .put("vastai-stage-1", "vastai_sample-000001.json", VASTAI_SAMPLE);
    let manifest = staging.assemble().manifest;
    assert_eq!(labels(&manifest), ["vastai-external", "vastai-stage-1"]);
    let external = node(&manifest, "vastai-external");
    assert_eq!(external.vastai_records, Some(2));
    assert_eq!(
        (external.role.as_deref(), external.stage_index),
        (None, None)
    );
}

#[test]
fn a_boot_role_that_is_not_a_safe_directory_name_is_made_safe_and_reported() {
    let staging = Staging::new();
    staging.put(RELAY, "boot-000001.json", boot(RELAY, "../../etc", None));
    let assembled = staging.assemble();
    assert_eq!(labels(&assembled.manifest), [".._.._etc"]);
    assert_eq!(paths(&assembled), [".._.._etc/boot.json", "MANIFEST.json"]);
    assert_one_problem(&assembled, &format!("{RUN}/{RELAY}"));
}

#[test]
fn a_role_named_like_the_manifest_does_not_replace_it() {
    let staging = Staging::new();
    staging.put(
        RELAY,
        "boot-000001.json",
        boot(RELAY, "MANIFEST.json", None),
    );
    let assembled = staging.assemble();
    assert_eq!(labels(&assembled.manifest), ["MANIFEST.json-c4e1f07a"]);
    let manifest: Manifest = serde_json::from_slice(file(&assembled, "MANIFEST.json")).unwrap();
    assert_eq!(manifest, assembled.manifest);
}

// ---------------------------------------------------------------------------------------------
// Assembly: the manifest

#[test]
fn manifest_counts_are_the_files_of_each_node() {
    let staging = Staging::new();
    staging
        .put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
        .put(ORCH, "boot-000002.json", boot(ORCH, "orchestrator", None))
        .put(ORCH, "events-000001.json", EVENTS)
        .put(ORCH, "events-000002.json", EMPTY_EVENTS)
        .put(ORCH, "events-000003.json", EVENTS)
        .put(ORCH, "snapshot-000001.json", SNAPSHOT)
        .put(ORCH, "finalize-000001.json", FINALIZE)
        .put(
            "vastai-external",
            "vastai_instance-000001.json",
            VASTAI_INSTANCE,
        )
        .put("vastai-external", "vastai_logs-000001.json", VASTAI_LOGS)
        .put(
            "vastai-external",
            "vastai_lifecycle-000001.json",
            VASTAI_LIFECYCLE,
        );
    let manifest = staging.assemble().manifest;
    let orch = node(&manifest, ORCH);
    assert_eq!(
        (
            orch.boot_recorded,
            orch.event_batches,
            orch.snapshots,
            orch.finalize_recorded,
            orch.vastai_records
        ),
        (true, 3, 1, true, Some(0))
    );
    let vastai = node(&manifest, "vastai-external");
    assert_eq!(
        (
            vastai.boot_recorded,
            vastai.event_batches,
            vastai.snapshots,
            vastai.finalize_recorded,
            vastai.vastai_records
        ),
        (false, 0, 0, false, Some(3))
    );
}

#[test]
fn manifest_nodes_are_sorted_by_label_then_id() {
    let staging = Staging::new();
    staging
        .put(STAGE_C, "boot-000001.json", boot(STAGE_C, "stage", Some(1)))
        .put(RELAY, "boot-000001.json", boot(RELAY, "relay", None))
        .put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
        .put(STAGE_A, "boot-000001.json", boot(STAGE_A, "stage", Some(0)))
        .put(
            "vastai-external",
            "vastai_instance-000001.json",
            VASTAI_INSTANCE,
        );
    let manifest = staging.assemble().manifest;
    assert_eq!(
        labels(&manifest),
        [
            "orchestrator",
            "relay",
            "stage-0",
            "stage-1",
            "vastai-external"
        ]
    );
}

#[test]
fn manifest_json_is_the_returned_manifest_and_valid_against_its_schema() {
    let staging = Staging::new();
    staging
        .put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
        .put(ORCH, "finalize-000001.json", FINALIZE)
        .put(STAGE_A, "snapshot-000001.json", SNAPSHOT)
        .put(
            "vastai-external",
            "vastai_instance-000001.json",
            VASTAI_INSTANCE,
        );
    let assembled = staging.assemble();
    let value: Value = serde_json::from_slice(file(&assembled, "MANIFEST.json")).unwrap();
    let validators = Validators::new().unwrap();
    assert_eq!(validators.violations("manifest", &value), Some(vec![]));
    assert_eq!(
        serde_json::from_value::<Manifest>(value).unwrap(),
        assembled.manifest
    );
    assert_eq!(assembled.manifest.run_id, RUN);
}

#[test]
fn the_run_span_is_the_earliest_and_latest_file_modification_time() {
    let staging = Staging::new();
    staging
        .put_at(
            ORCH,
            "boot-000001.json",
            &boot(ORCH, "orchestrator", None),
            1_779_733_878_000,
        )
        .put_at(ORCH, "events-000001.json", EVENTS, 1_779_733_879_500)
        .put_at(STAGE_A, "snapshot-000001.json", SNAPSHOT, 1_779_733_877_250);
    let manifest = staging.assemble().manifest;
    assert_eq!(manifest.run_start_collector_ms, Some(1_779_733_877_250));
    assert_eq!(manifest.run_end_collector_ms, Some(1_779_733_879_500));
}

#[test]
fn a_run_directory_without_record_files_has_no_nodes_and_a_null_span() {
    let staging = Staging::new();
    fs::create_dir(staging.run_dir().join(ORCH)).unwrap();
    let assembled = staging.assemble();
    assert!(assembled.manifest.nodes.is_empty());
    assert_eq!(
        (
            assembled.manifest.run_start_collector_ms,
            assembled.manifest.run_end_collector_ms
        ),
        (None, None)
    );
    assert_eq!(paths(&assembled), ["MANIFEST.json"]);
    assert_one_problem(&assembled, &format!("{RUN}/{ORCH}"));
}

#[test]
fn an_assembled_bundle_written_out_checks_clean_against_its_manifest() {
    let staging = Staging::new();
    staging
        .put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
        .put(ORCH, "boot-000002.json", boot(ORCH, "orchestrator", None))
        .put(ORCH, "events-000001.json", EVENTS)
        .put(ORCH, "snapshot-000001.json", SNAPSHOT)
        .put(ORCH, "finalize-000001.json", FINALIZE_EMPTY)
        .put(ORCH, "finalize-000002.json", FINALIZE)
        .put(STAGE_A, "boot-000001.json", boot(STAGE_A, "stage", Some(0)))
        .put(STAGE_B, "boot-000001.json", boot(STAGE_B, "stage", Some(0)))
        .put(STAGE_B, "events-000001.json", EMPTY_EVENTS)
        .put(RELAY, "events-000001.json", EVENTS)
        .put(
            "vastai-external",
            "vastai_instance-000001.json",
            VASTAI_INSTANCE,
        )
        .put(
            "vastai-external",
            "vastai_lifecycle-000002.json",
            VASTAI_LIFECYCLE,
        )
        .put("vastai-stage-0", "vastai_sample-000001.json", VASTAI_SAMPLE)
        .put("vastai-stage-0", "vastai_logs-000001.json", VASTAI_LOGS);
    let assembled = staging.assemble();
    assert!(assembled.problems.is_empty(), "{:#?}", assembled.problems);
    let out = tempfile::tempdir().unwrap();
    let dir = write_dir(&assembled.contents, out.path()).unwrap();
    let mut reader = BundleReader::open(&dir, Limits::default()).unwrap();
    let report = check_bundle(&Validators::new().unwrap(), &mut reader, &mut |_, _| {});
    assert!(report.problems.is_empty(), "{:#?}", report.problems);
    assert_eq!(report.invalid_records, 0);
}

// ---------------------------------------------------------------------------------------------
// Assembly: bad input

#[test]
fn a_file_that_does_not_parse_as_its_kind_is_copied_and_reported() {
    let staging = Staging::new();
    staging
        .put(STAGE_A, "boot-000001.json", BAD_BOOT)
        .put(STAGE_A, "events-000001.json", BAD_EVENTS)
        .put(STAGE_A, "events-000002.json", EVENTS);
    let assembled = staging.assemble();
    // The boot record lacks `run_id`, yet still names its node (role `stage`, stage_index 1).
    assert_eq!(node(&assembled.manifest, STAGE_A).label, "stage-1");
    assert_eq!(file(&assembled, "stage-1/boot.json"), BAD_BOOT.as_bytes());
    assert_eq!(
        file(&assembled, "stage-1/events/events-000001.json"),
        BAD_EVENTS.as_bytes()
    );
    assert_eq!(
        file(&assembled, "stage-1/events/events-000002.json"),
        EVENTS.as_bytes()
    );
    assert_eq!(node(&assembled.manifest, STAGE_A).event_batches, 2);
    assert_one_problem(&assembled, &format!("{RUN}/{STAGE_A}/boot-000001.json"));
    assert_one_problem(&assembled, &format!("{RUN}/{STAGE_A}/events-000001.json"));
    assert_eq!(assembled.problems.len(), 2, "{:#?}", assembled.problems);
}

#[test]
fn a_record_file_that_is_not_json_text_is_copied_and_reported() {
    let staging = Staging::new();
    let garbage = b"{\"exit_reason\": \"\xff\xfe\"";
    staging
        .put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
        .put(ORCH, "finalize-000001.json", garbage);
    let assembled = staging.assemble();
    assert_eq!(file(&assembled, "orchestrator/finalize.json"), garbage);
    assert!(assembled.manifest.finalize_received);
    assert_one_problem(&assembled, &format!("{RUN}/{ORCH}/finalize-000001.json"));
    assert_eq!(assembled.problems.len(), 1, "{:#?}", assembled.problems);
}

#[test]
fn unknown_files_in_staging_are_reported_and_not_copied() {
    let staging = Staging::new();
    staging
        .put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
        .put(ORCH, "notes.txt", "hello")
        .put(ORCH, "boot-1.json", boot(ORCH, "orchestrator", None))
        .put(ORCH, "telemetry-000001.json", "{}")
        .put(ORCH, "events-000002.json.tmp", EVENTS);
    fs::create_dir(staging.run_dir().join(ORCH).join("events")).unwrap();
    fs::write(staging.run_dir().join("README"), "stray").unwrap();
    let assembled = staging.assemble();
    assert_eq!(
        paths(&assembled),
        ["MANIFEST.json", "orchestrator/boot.json"]
    );
    for at in [
        format!("{RUN}/README"),
        format!("{RUN}/{ORCH}/notes.txt"),
        format!("{RUN}/{ORCH}/boot-1.json"),
        format!("{RUN}/{ORCH}/telemetry-000001.json"),
        format!("{RUN}/{ORCH}/events-000002.json.tmp"),
        format!("{RUN}/{ORCH}/events"),
    ] {
        assert_one_problem(&assembled, &at);
    }
    assert_eq!(assembled.problems.len(), 6, "{:#?}", assembled.problems);
}

#[cfg(unix)]
#[test]
fn symbolic_links_in_staging_are_reported_and_not_followed() {
    let staging = Staging::new();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret"), "{}").unwrap();
    staging.put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None));
    std::os::unix::fs::symlink(
        outside.path().join("secret"),
        staging.run_dir().join(ORCH).join("finalize-000001.json"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), staging.run_dir().join(STAGE_A)).unwrap();
    let assembled = staging.assemble();
    assert_eq!(
        paths(&assembled),
        ["MANIFEST.json", "orchestrator/boot.json"]
    );
    assert!(!assembled.manifest.finalize_received);
    assert_one_problem(&assembled, &format!("{RUN}/{ORCH}/finalize-000001.json"));
    assert_one_problem(&assembled, &format!("{RUN}/{STAGE_A}"));
}

#[cfg(unix)]
#[test]
fn a_file_name_that_is_not_utf8_is_reported_and_not_copied() {
    use std::os::unix::ffi::OsStrExt;
    let staging = Staging::new();
    staging.put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None));
    let name = std::ffi::OsStr::from_bytes(b"events-00000\xff.json");
    fs::write(staging.run_dir().join(ORCH).join(name), EVENTS).unwrap();
    let assembled = staging.assemble();
    assert_eq!(
        paths(&assembled),
        ["MANIFEST.json", "orchestrator/boot.json"]
    );
    assert_one_problem(
        &assembled,
        &format!("{RUN}/{ORCH}/events-00000\u{fffd}.json"),
    );
    assert_eq!(assembled.problems.len(), 1, "{:#?}", assembled.problems);
}

#[test]
fn a_run_without_a_staging_directory_is_not_found() {
    let staging = Staging::new();
    let err = assemble(staging.root(), "run-that-never-was").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
}

#[test]
fn a_run_id_that_is_not_a_single_path_component_is_rejected() {
    let staging = Staging::new();
    for run_id in ["", ".", "..", "../etc", "a/b"] {
        let err = assemble(staging.root(), run_id).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{run_id:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Serve decision

const STAGED: StagingState = StagingState {
    node_count: 3,
    finalize_on_disk: true,
    has_boot: true,
};
const CACHED: CachedBundle = CachedBundle {
    node_count: 3,
    finalize_received: true,
};

#[test]
fn no_staging_is_not_found_even_with_a_cached_bundle() {
    assert_eq!(serve_decision(Some(&CACHED), None), ServeDecision::NotFound);
    assert_eq!(serve_decision(None, None), ServeDecision::NotFound);
}

#[test]
fn a_run_directory_without_nodes_is_not_found() {
    let empty = StagingState {
        node_count: 0,
        finalize_on_disk: false,
        has_boot: false,
    };
    assert_eq!(
        serve_decision(Some(&CACHED), Some(&empty)),
        ServeDecision::NotFound
    );
}

#[test]
fn staging_without_a_cached_bundle_is_resynthesized() {
    let unfinalized = StagingState {
        finalize_on_disk: false,
        ..STAGED
    };
    assert_eq!(
        serve_decision(None, Some(&unfinalized)),
        ServeDecision::Resynthesize
    );
}

#[test]
fn staging_without_a_boot_record_is_still_served() {
    let vastai_only = StagingState {
        node_count: 1,
        finalize_on_disk: false,
        has_boot: false,
    };
    assert_eq!(
        serve_decision(None, Some(&vastai_only)),
        ServeDecision::Resynthesize
    );
}

#[test]
fn a_cached_bundle_that_matches_staging_is_served() {
    assert_eq!(
        serve_decision(Some(&CACHED), Some(&STAGED)),
        ServeDecision::ServeCached
    );
}

#[test]
fn staging_with_more_nodes_than_the_cached_bundle_is_resynthesized() {
    let grown = StagingState {
        node_count: 5,
        ..STAGED
    };
    assert_eq!(
        serve_decision(Some(&CACHED), Some(&grown)),
        ServeDecision::Resynthesize
    );
}

#[test]
fn staging_with_fewer_nodes_than_the_cached_bundle_is_resynthesized() {
    let shrunk = StagingState {
        node_count: 2,
        ..STAGED
    };
    assert_eq!(
        serve_decision(Some(&CACHED), Some(&shrunk)),
        ServeDecision::Resynthesize
    );
}

#[test]
fn a_finalize_deleted_since_the_cache_was_written_resynthesizes() {
    let deleted = StagingState {
        finalize_on_disk: false,
        ..STAGED
    };
    assert_eq!(
        serve_decision(Some(&CACHED), Some(&deleted)),
        ServeDecision::Resynthesize
    );
}

#[test]
fn a_finalize_arriving_after_the_cache_was_written_resynthesizes() {
    let stale = CachedBundle {
        finalize_received: false,
        ..CACHED
    };
    assert_eq!(
        serve_decision(Some(&stale), Some(&STAGED)),
        ServeDecision::Resynthesize
    );
}

/// Counts by staged kind prefix in a node's staging directory, read straight from the disk.
fn on_disk(staging: &Staging, node_id: &str) -> (bool, u64, u64, bool, u64) {
    let names: Vec<String> = fs::read_dir(staging.run_dir().join(node_id))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let count = |prefix: &str| names.iter().filter(|n| n.starts_with(prefix)).count() as u64;
    (
        count("boot-") > 0,
        count("events-"),
        count("snapshot-"),
        count("finalize-") > 0,
        count("vastai_"),
    )
}

/// Asserts that a manifest describes exactly what is in staging now.
#[track_caller]
fn assert_manifest_matches_disk(staging: &Staging, manifest: &Manifest, step: &str) {
    let mut dirs: Vec<String> = fs::read_dir(staging.run_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    dirs.sort();
    let mut listed: Vec<String> = manifest
        .nodes
        .iter()
        .map(|n| n.node_id_hex.as_str().to_owned())
        .collect();
    listed.sort();
    assert_eq!(listed, dirs, "{step}: nodes");
    for n in &manifest.nodes {
        let counts = (
            n.boot_recorded,
            n.event_batches,
            n.snapshots,
            n.finalize_recorded,
            n.vastai_records.unwrap_or(0),
        );
        assert_eq!(
            counts,
            on_disk(staging, n.node_id_hex.as_str()),
            "{step}: {}",
            n.label
        );
    }
    let finalize_on_disk = dirs.iter().any(|d| on_disk(staging, d).3);
    assert_eq!(
        manifest.finalize_received, finalize_on_disk,
        "{step}: finalize_received"
    );
}

/// Seed 003 §2.5: a run id reused across a failed first lease and a successful second one.
#[test]
fn run_id_reuse_serves_what_staging_holds_at_every_step() {
    struct Step {
        what: &'static str,
        change: fn(&Staging),
        /// The collector writes the canonical bundle after this step (it received finalize).
        writes_cache: bool,
        decision: ServeDecision,
        labels: &'static [&'static str],
        finalize_received: bool,
    }
    let steps = [
        Step {
            what: "first lease staged, no finalize yet",
            change: |s| {
                s.put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
                    .put(ORCH, "events-000001.json", EVENTS)
                    .put(STAGE_A, "boot-000001.json", boot(STAGE_A, "stage", Some(0)))
                    .put(STAGE_A, "snapshot-000001.json", SNAPSHOT);
            },
            writes_cache: false,
            decision: ServeDecision::Resynthesize,
            labels: &["orchestrator", "stage-0"],
            finalize_received: false,
        },
        Step {
            what: "finalize arrives and the canonical bundle is cached",
            change: |s| {
                s.put(ORCH, "finalize-000001.json", FINALIZE);
            },
            writes_cache: true,
            decision: ServeDecision::ServeCached,
            labels: &["orchestrator", "stage-0"],
            finalize_received: true,
        },
        Step {
            what: "second lease grows staging under the same run id",
            change: |s| {
                s.put(STAGE_B, "boot-000001.json", boot(STAGE_B, "stage", Some(0)))
                    .put(STAGE_B, "events-000001.json", EVENTS)
                    .put(STAGE_C, "boot-000001.json", boot(STAGE_C, "stage", Some(1)))
                    .put(STAGE_C, "snapshot-000001.json", SNAPSHOT)
                    .put("vastai-stage-1", "vastai_sample-000001.json", VASTAI_SAMPLE)
                    .put(ORCH, "snapshot-000001.json", SNAPSHOT);
            },
            writes_cache: false,
            decision: ServeDecision::Resynthesize,
            labels: &[
                "orchestrator",
                "stage-0-8039dee3",
                "stage-0-afae7c99",
                "stage-1",
                "vastai-stage-1",
            ],
            finalize_received: true,
        },
        Step {
            what: "the first-lease stage directory is deleted",
            change: |s| s.remove_node(STAGE_A),
            writes_cache: false,
            decision: ServeDecision::Resynthesize,
            labels: &["orchestrator", "stage-0", "stage-1", "vastai-stage-1"],
            finalize_received: true,
        },
        Step {
            what: "the finalize file is deleted",
            change: |s| s.remove(ORCH, "finalize-000001.json"),
            writes_cache: false,
            decision: ServeDecision::Resynthesize,
            labels: &["orchestrator", "stage-0", "stage-1", "vastai-stage-1"],
            finalize_received: false,
        },
    ];

    let staging = Staging::new();
    let mut cache: Option<CachedBundle> = None;
    for step in &steps {
        (step.change)(&staging);
        let assembled = staging.assemble();
        let manifest = &assembled.manifest;
        if step.writes_cache {
            cache = Some(CachedBundle::from_manifest(manifest));
        }
        let state = StagingState::from_manifest(manifest);
        assert_eq!(
            serve_decision(cache.as_ref(), Some(&state)),
            step.decision,
            "{}",
            step.what
        );
        assert_eq!(labels(manifest), step.labels, "{}", step.what);
        assert_eq!(
            manifest.finalize_received, step.finalize_received,
            "{}",
            step.what
        );
        assert_manifest_matches_disk(&staging, manifest, step.what);
        assert!(
            assembled.problems.is_empty(),
            "{}: {:#?}",
            step.what,
            assembled.problems
        );
    }

    fs::remove_dir_all(staging.run_dir()).unwrap();
    let err = assemble(staging.root(), RUN).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(
        serve_decision(cache.as_ref(), None),
        ServeDecision::NotFound
    );
}

// ---------------------------------------------------------------------------------------------
// Retention

const DAY_MS: u64 = 24 * 60 * 60 * 1000;
const NOW: u64 = 1_779_733_878_000;

fn run(run_id: &str, age_ms: u64, bytes: u64, finalized: bool) -> StagedRun {
    StagedRun {
        run_id: run_id.to_owned(),
        last_write_unix_ms: NOW - age_ms,
        bytes,
        finalized,
    }
}

fn policy(keep_days: u64, cap: u64) -> RetentionPolicy {
    RetentionPolicy {
        keep_unfinalized_ms: keep_days * DAY_MS,
        disk_cap_bytes: cap,
    }
}

#[test]
fn the_default_policy_keeps_staging_thirty_days_under_a_fifty_gib_cap() {
    let default = RetentionPolicy::default();
    assert_eq!(default.keep_unfinalized_ms, 30 * DAY_MS);
    assert_eq!(default.disk_cap_bytes, 50 << 30);
}

#[test]
fn under_the_cap_no_run_younger_than_the_window_is_deleted() {
    let runs = [
        run("a", 29 * DAY_MS, 10, false),
        run("b", 29 * DAY_MS, 10, true),
        run("c", DAY_MS, 10, false),
        run("d", 0, 10, true),
    ];
    assert!(retention_plan(&runs, &policy(30, 40), NOW).is_empty());
}

#[test]
fn runs_are_kept_until_the_window_has_fully_elapsed() {
    let runs = [
        run("just-young", 30 * DAY_MS - 1, 1, false),
        run("just-old", 30 * DAY_MS, 1, false),
    ];
    assert_eq!(
        retention_plan(&runs, &policy(30, 1 << 40), NOW),
        ["just-old"]
    );
}

#[test]
fn runs_older_than_the_window_are_deleted_whether_finalized_or_not() {
    let runs = [
        run("old-finalized", 40 * DAY_MS, 1, true),
        run("old-unfinalized", 31 * DAY_MS, 1, false),
        run("young", DAY_MS, 1, false),
    ];
    assert_eq!(
        retention_plan(&runs, &policy(30, 1 << 40), NOW),
        ["old-finalized", "old-unfinalized"]
    );
}

#[test]
fn over_the_cap_runs_are_deleted_oldest_first_until_under_it() {
    let runs = [
        run("newest", 0, 30, false),
        run("oldest", 3 * DAY_MS, 30, false),
        run("middle", 2 * DAY_MS, 30, true),
        run("older", 2 * DAY_MS + 1, 30, false),
    ];
    // 120 bytes, cap 50: the three oldest go, whatever their state, the newest stays.
    assert_eq!(
        retention_plan(&runs, &policy(30, 50), NOW),
        ["oldest", "older", "middle"]
    );
}

#[test]
fn exactly_at_the_cap_nothing_young_is_deleted() {
    let runs = [run("a", DAY_MS, 25, false), run("b", 0, 25, false)];
    assert!(retention_plan(&runs, &policy(30, 50), NOW).is_empty());
}

#[test]
fn over_the_cap_runs_written_at_the_same_time_go_in_run_id_order() {
    let runs = [
        run("run-c", DAY_MS, 10, false),
        run("run-a", DAY_MS, 10, false),
        run("run-b", DAY_MS, 10, false),
    ];
    assert_eq!(
        retention_plan(&runs, &policy(30, 15), NOW),
        ["run-a", "run-b"]
    );
}

#[test]
fn expired_and_over_cap_runs_are_listed_oldest_first() {
    let runs = [
        run("young-big", DAY_MS, 100, false),
        run("expired", 60 * DAY_MS, 1, true),
        run("young-small", 0, 1, false),
        run("young-older", 2 * DAY_MS, 100, false),
    ];
    assert_eq!(
        retention_plan(&runs, &policy(30, 150), NOW),
        ["expired", "young-older"]
    );
}

#[test]
fn a_last_write_in_the_future_counts_as_young() {
    let future = StagedRun {
        run_id: "skewed".to_owned(),
        last_write_unix_ms: NOW + DAY_MS,
        bytes: 1,
        finalized: false,
    };
    assert!(retention_plan(&[future], &policy(30, 10), NOW).is_empty());
}
