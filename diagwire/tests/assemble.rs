//! Assembling bundles from the collector's staging tree, the serve decision and staging retention.
//!
//! The assembly cases are a table, one `#[test]` per line: this staging tree gives these bundle
//! files, this manifest and these problems. Every case also checks what holds for every assembly:
//! `MANIFEST.json` is the returned manifest, it declares this crate's contract version and the
//! collector as its writer, and it has a time span exactly when it lists nodes.
#![cfg(feature = "bundle")]

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use diagwire::bundle::BundleContents;
use diagwire::bundle::assemble::{
    Assembled, CachedBundle, NodeFiles, NodeHoldings, RetentionPolicy, ServeDecision, StagedRun,
    StagingState, Tally, assemble, retention_plan, serve_decision,
};
use diagwire::v1::{BundleWriter, Manifest, ManifestNode, WriterKind};
use diagwire::{CONTRACT_VERSION, NodeIdHex, ProblemKind};

use ProblemKind::{Encoding, Layout, Parse};

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
/// A boot record of role `stage` and stage index 1 without its `run_id`.
const BAD_BOOT: &str = fixture!("boot/invalid/missing-run-id.json");
const BAD_EVENTS: &str = fixture!("event_batch/invalid/one-record-missing-duration-ms.json");

/// A boot record (pretty JSON, as staged) of node `id` with the given role and stage index.
fn boot(id: &str, role: &str, stage_index: Option<u32>) -> String {
    let mut value: serde_json::Value = serde_json::from_str(BOOT_TEMPLATE).unwrap();
    value["node_id_hex"] = id.into();
    value["node_id_short"] = id[..8].into();
    value["role"] = role.into();
    value["stage_index"] = stage_index.into();
    serde_json::to_string_pretty(&value).unwrap() + "\n"
}

/// The collector, as the writer of every assembled bundle.
fn collector() -> BundleWriter {
    BundleWriter::new(WriterKind::Collector, "swactor-collector", "0.9.0")
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
        assemble(self.root(), RUN, collector()).unwrap()
    }
}

fn labels(manifest: &Manifest) -> Vec<&str> {
    manifest.nodes.iter().map(|n| n.label.as_str()).collect()
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

/// A place in staging, `<run_id>/<parts…>`, as problems are located.
fn at(parts: &[&str]) -> String {
    std::iter::once(RUN)
        .chain(parts.iter().copied())
        .collect::<Vec<_>>()
        .join("/")
}

/// A manifest entry as assembly writes it: counts are numbers of files, `vastai_records` is
/// written for every node, and no node declares a contract version (staged files are copied as
/// they are, so the collector cannot vouch for one).
struct Row(ManifestNode);

/// A node listed under `label`, with nothing recorded yet.
fn listed(label: &str, id: &str) -> Row {
    let mut node = ManifestNode::new(NodeIdHex(id.to_owned()), label);
    node.vastai_records = Some(0);
    Row(node)
}

impl Row {
    /// With a boot record naming this role and stage index.
    fn booted(mut self, role: &str, stage_index: Option<u32>) -> Row {
        self.0.boot_recorded = true;
        self.0.role = Some(role.to_owned());
        self.0.stage_index = stage_index;
        self
    }

    fn events(mut self, batches: u64) -> Row {
        self.0.event_batches = batches;
        self
    }

    fn snapshots(mut self, snapshots: u64) -> Row {
        self.0.snapshots = snapshots;
        self
    }

    fn finalized(mut self) -> Row {
        self.0.finalize_recorded = true;
        self
    }

    fn vastai(mut self, records: u64) -> Row {
        self.0.vastai_records = Some(records);
        self
    }
}

/// What a staging tree assembles to.
struct Bundle {
    /// Every file of the bundle, sorted.
    files: &'static [&'static str],
    finalize_received: bool,
    /// The manifest's nodes, in its order.
    nodes: Vec<Row>,
    /// Every problem: its kind and the staging path it is about (in any order).
    problems: Vec<(ProblemKind, String)>,
}

/// Assembles the staging tree `setup` makes and checks it against `want`.
#[track_caller]
fn check_assembly(setup: impl FnOnce(&Staging), want: Bundle) -> Assembled {
    let staging = Staging::new();
    setup(&staging);
    let assembled = staging.assemble();
    assert_eq!(paths(&assembled), want.files, "the bundle's files");

    let m = &assembled.manifest;
    let nodes: Vec<ManifestNode> = want.nodes.into_iter().map(|r| r.0).collect();
    assert_eq!(m.nodes, nodes, "the manifest's nodes");
    assert_eq!(
        m.finalize_received, want.finalize_received,
        "finalize_received"
    );
    assert_eq!(m.run_id, RUN);
    assert_eq!(m.contract_version.as_deref(), Some(CONTRACT_VERSION));
    assert_eq!(m.writer, Some(collector()));
    let span = (m.run_start_collector_ms, m.run_end_collector_ms);
    match span {
        (Some(start), Some(end)) => assert!(!nodes.is_empty() && start <= end, "{span:?}"),
        (None, None) => assert!(nodes.is_empty(), "no time span"),
        _ => panic!("half a time span: {span:?}"),
    }
    let written: Manifest = serde_json::from_slice(file(&assembled, "MANIFEST.json")).unwrap();
    assert_eq!(&written, m, "MANIFEST.json is the returned manifest");

    let mut got: Vec<(ProblemKind, &str)> = assembled
        .problems
        .iter()
        .map(|p| (p.kind, p.location.file.as_str()))
        .collect();
    got.sort();
    let mut want: Vec<(ProblemKind, &str)> = want
        .problems
        .iter()
        .map(|(k, at)| (*k, at.as_str()))
        .collect();
    want.sort();
    assert_eq!(got, want, "the problems: {:#?}", assembled.problems);
    for p in &assembled.problems {
        assert!(
            p.location.record.is_none() && p.location.pointer.is_empty(),
            "{p:?}"
        );
        assert!(!p.message.is_empty(), "{p:?}");
    }
    assembled
}

fn then_check(assembled: &Assembled, more: impl FnOnce(&Assembled)) {
    more(assembled);
}

/// `name: |staging| { put files } => Bundle { … } [, then |assembled| more checks];`
macro_rules! assembles {
    ($(
        $(#[$meta:meta])*
        $name:ident: $setup:expr => $want:expr $(, then $then:expr)?;
    )*) => {$(
        $(#[$meta])*
        #[test]
        fn $name() {
            let _assembled = check_assembly($setup, $want);
            $(then_check(&_assembled, $then);)?
        }
    )*};
}

// ---------------------------------------------------------------------------------------------
// Assembly: layout

assembles! {
    a_run_without_a_finalize_record_is_assembled_with_finalize_received_false: |s| {
        s.put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
            .put(ORCH, "events-000001.json", EVENTS)
            .put(STAGE_A, "boot-000001.json", boot(STAGE_A, "stage", Some(0)));
    } => Bundle {
        files: &[
            "MANIFEST.json",
            "orchestrator/boot.json",
            "orchestrator/events/events-000001.json",
            "stage-0/boot.json",
        ],
        finalize_received: false,
        nodes: vec![
            listed("orchestrator", ORCH).booted("orchestrator", None).events(1),
            listed("stage-0", STAGE_A).booted("stage", Some(0)),
        ],
        problems: vec![],
    };

    a_finalize_file_on_disk_sets_finalize_received_and_its_node_finalize_recorded: |s| {
        s.put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
            .put(ORCH, "finalize-000001.json", FINALIZE)
            .put(STAGE_A, "boot-000001.json", boot(STAGE_A, "stage", Some(0)));
    } => Bundle {
        files: &[
            "MANIFEST.json",
            "orchestrator/boot.json",
            "orchestrator/finalize.json",
            "stage-0/boot.json",
        ],
        finalize_received: true,
        nodes: vec![
            listed("orchestrator", ORCH).booted("orchestrator", None).finalized(),
            listed("stage-0", STAGE_A).booted("stage", Some(0)),
        ],
        problems: vec![],
    };

    a_single_boot_record_is_written_as_boot_json_only: |s| {
        s.put(STAGE_A, "boot-000001.json", boot(STAGE_A, "stage", Some(0)));
    } => Bundle {
        files: &["MANIFEST.json", "stage-0/boot.json"],
        finalize_received: false,
        nodes: vec![listed("stage-0", STAGE_A).booted("stage", Some(0))],
        problems: vec![],
    }, then |a| {
        assert_eq!(file(a, "stage-0/boot.json"), boot(STAGE_A, "stage", Some(0)).as_bytes());
    };

    the_latest_boot_is_boot_json_and_earlier_boots_go_under_boot: |s| {
        s.put(STAGE_A, "boot-000001.json", boot(STAGE_A, "stage", Some(0)))
            .put(STAGE_A, "boot-000002.json", boot(STAGE_A, "stage", Some(1)));
    } => Bundle {
        files: &["MANIFEST.json", "stage-1/boot.json", "stage-1/boot/boot-000001.json"],
        finalize_received: false,
        nodes: vec![listed("stage-1", STAGE_A).booted("stage", Some(1))],
        problems: vec![],
    }, then |a| {
        assert_eq!(file(a, "stage-1/boot.json"), boot(STAGE_A, "stage", Some(1)).as_bytes());
        assert_eq!(
            file(a, "stage-1/boot/boot-000001.json"),
            boot(STAGE_A, "stage", Some(0)).as_bytes()
        );
    };

    the_latest_finalize_is_finalize_json_and_earlier_finalizes_go_under_finalize: |s| {
        s.put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
            .put(ORCH, "finalize-000001.json", FINALIZE_EMPTY)
            .put(ORCH, "finalize-000002.json", FINALIZE);
    } => Bundle {
        files: &[
            "MANIFEST.json",
            "orchestrator/boot.json",
            "orchestrator/finalize.json",
            "orchestrator/finalize/finalize-000001.json",
        ],
        finalize_received: true,
        nodes: vec![listed("orchestrator", ORCH).booted("orchestrator", None).finalized()],
        problems: vec![],
    }, then |a| {
        assert_eq!(file(a, "orchestrator/finalize.json"), FINALIZE.as_bytes());
        assert_eq!(
            file(a, "orchestrator/finalize/finalize-000001.json"),
            FINALIZE_EMPTY.as_bytes()
        );
    };

    events_snapshots_and_vastai_records_keep_their_staging_sequence_and_bytes: |s| {
        s.put(STAGE_A, "boot-000001.json", boot(STAGE_A, "stage", Some(0)))
            .put(STAGE_A, "events-000002.json", EVENTS)
            .put(STAGE_A, "events-000010.json", EMPTY_EVENTS)
            .put(STAGE_A, "snapshot-000003.json", SNAPSHOT)
            .put("vastai-stage-0", "vastai_sample-000004.json", VASTAI_SAMPLE)
            .put("vastai-stage-0", "vastai_logs-000001.json", VASTAI_LOGS);
    } => Bundle {
        files: &[
            "MANIFEST.json",
            "stage-0/boot.json",
            "stage-0/events/events-000002.json",
            "stage-0/events/events-000010.json",
            "stage-0/snapshots/snapshot-000003.json",
            "vastai-stage-0/vastai/vastai_logs-000001.json",
            "vastai-stage-0/vastai/vastai_sample-000004.json",
        ],
        finalize_received: false,
        nodes: vec![
            listed("stage-0", STAGE_A).booted("stage", Some(0)).events(2).snapshots(1),
            listed("vastai-stage-0", "vastai-stage-0").vastai(2),
        ],
        problems: vec![],
    }, then |a| {
        assert_eq!(file(a, "stage-0/events/events-000002.json"), EVENTS.as_bytes());
        assert_eq!(file(a, "stage-0/events/events-000010.json"), EMPTY_EVENTS.as_bytes());
        assert_eq!(file(a, "stage-0/snapshots/snapshot-000003.json"), SNAPSHOT.as_bytes());
        assert_eq!(
            file(a, "vastai-stage-0/vastai/vastai_sample-000004.json"),
            VASTAI_SAMPLE.as_bytes()
        );
        assert_eq!(
            file(a, "vastai-stage-0/vastai/vastai_logs-000001.json"),
            VASTAI_LOGS.as_bytes()
        );
    };
}

// ---------------------------------------------------------------------------------------------
// Assembly: labels

assembles! {
    node_labels_come_from_the_latest_boot_record: |s| {
        s.put(STAGE_A, "boot-000001.json", boot(STAGE_A, "relay", None))
            .put(STAGE_A, "boot-000002.json", boot(STAGE_A, "stage", Some(2)));
    } => Bundle {
        files: &["MANIFEST.json", "stage-2/boot.json", "stage-2/boot/boot-000001.json"],
        finalize_received: false,
        nodes: vec![listed("stage-2", STAGE_A).booted("stage", Some(2))],
        problems: vec![],
    };

    colliding_labels_get_the_first_eight_id_characters_appended: |s| {
        s.put(STAGE_A, "boot-000001.json", boot(STAGE_A, "stage", Some(0)))
            .put(STAGE_B, "boot-000001.json", boot(STAGE_B, "stage", Some(0)))
            .put(STAGE_C, "boot-000001.json", boot(STAGE_C, "stage", Some(1)));
    } => Bundle {
        files: &[
            "MANIFEST.json",
            "stage-0-8039dee3/boot.json",
            "stage-0-afae7c99/boot.json",
            "stage-1/boot.json",
        ],
        finalize_received: false,
        nodes: vec![
            listed("stage-0-8039dee3", STAGE_B).booted("stage", Some(0)),
            listed("stage-0-afae7c99", STAGE_A).booted("stage", Some(0)),
            listed("stage-1", STAGE_C).booted("stage", Some(1)),
        ],
        problems: vec![],
    };

    a_node_without_a_boot_record_is_labelled_node_and_its_id_prefix: |s| {
        s.put(RELAY, "events-000001.json", EVENTS);
    } => Bundle {
        files: &["MANIFEST.json", "node-c4e1f07a/events/events-000001.json"],
        finalize_received: false,
        nodes: vec![listed("node-c4e1f07a", RELAY).events(1)],
        problems: vec![],
    };

    vastai_synthetic_node_ids_are_used_verbatim_as_labels: |s| {
        s.put("vastai-external", "vastai_lifecycle-000001.json", VASTAI_LIFECYCLE)
            .put("vastai-external", "vastai_instance-000001.json", VASTAI_INSTANCE)
            .put("vastai-stage-1", "vastai_sample-000001.json", VASTAI_SAMPLE);
    } => Bundle {
        files: &[
            "MANIFEST.json",
            "vastai-external/vastai/vastai_instance-000001.json",
            "vastai-external/vastai/vastai_lifecycle-000001.json",
            "vastai-stage-1/vastai/vastai_sample-000001.json",
        ],
        finalize_received: false,
        nodes: vec![
            listed("vastai-external", "vastai-external").vastai(2),
            listed("vastai-stage-1", "vastai-stage-1").vastai(1),
        ],
        problems: vec![],
    };

    // The manifest keeps the role as the boot record wrote it; only the directory name changes.
    a_boot_role_that_is_not_a_safe_directory_name_is_made_safe_and_reported: |s| {
        s.put(RELAY, "boot-000001.json", boot(RELAY, "../../etc", None));
    } => Bundle {
        files: &[".._.._etc/boot.json", "MANIFEST.json"],
        finalize_received: false,
        nodes: vec![listed(".._.._etc", RELAY).booted("../../etc", None)],
        problems: vec![(Layout, at(&[RELAY]))],
    };

    a_role_named_like_the_manifest_does_not_replace_it: |s| {
        s.put(RELAY, "boot-000001.json", boot(RELAY, "MANIFEST.json", None));
    } => Bundle {
        files: &["MANIFEST.json", "MANIFEST.json-c4e1f07a/boot.json"],
        finalize_received: false,
        nodes: vec![listed("MANIFEST.json-c4e1f07a", RELAY).booted("MANIFEST.json", None)],
        problems: vec![],
    };
}

// ---------------------------------------------------------------------------------------------
// Assembly: the manifest

assembles! {
    manifest_counts_are_the_files_of_each_node: |s| {
        s.put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
            .put(ORCH, "boot-000002.json", boot(ORCH, "orchestrator", None))
            .put(ORCH, "events-000001.json", EVENTS)
            .put(ORCH, "events-000002.json", EMPTY_EVENTS)
            .put(ORCH, "events-000003.json", EVENTS)
            .put(ORCH, "snapshot-000001.json", SNAPSHOT)
            .put(ORCH, "finalize-000001.json", FINALIZE)
            .put("vastai-external", "vastai_instance-000001.json", VASTAI_INSTANCE)
            .put("vastai-external", "vastai_logs-000001.json", VASTAI_LOGS)
            .put("vastai-external", "vastai_lifecycle-000001.json", VASTAI_LIFECYCLE);
    } => Bundle {
        files: &[
            "MANIFEST.json",
            "orchestrator/boot.json",
            "orchestrator/boot/boot-000001.json",
            "orchestrator/events/events-000001.json",
            "orchestrator/events/events-000002.json",
            "orchestrator/events/events-000003.json",
            "orchestrator/finalize.json",
            "orchestrator/snapshots/snapshot-000001.json",
            "vastai-external/vastai/vastai_instance-000001.json",
            "vastai-external/vastai/vastai_lifecycle-000001.json",
            "vastai-external/vastai/vastai_logs-000001.json",
        ],
        finalize_received: true,
        nodes: vec![
            listed("orchestrator", ORCH)
                .booted("orchestrator", None)
                .events(3)
                .snapshots(1)
                .finalized(),
            listed("vastai-external", "vastai-external").vastai(3),
        ],
        problems: vec![],
    };

    manifest_nodes_are_sorted_by_label_then_id: |s| {
        s.put(STAGE_C, "boot-000001.json", boot(STAGE_C, "stage", Some(1)))
            .put(RELAY, "boot-000001.json", boot(RELAY, "relay", None))
            .put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
            .put(STAGE_A, "boot-000001.json", boot(STAGE_A, "stage", Some(0)))
            .put("vastai-external", "vastai_instance-000001.json", VASTAI_INSTANCE);
    } => Bundle {
        files: &[
            "MANIFEST.json",
            "orchestrator/boot.json",
            "relay/boot.json",
            "stage-0/boot.json",
            "stage-1/boot.json",
            "vastai-external/vastai/vastai_instance-000001.json",
        ],
        finalize_received: false,
        nodes: vec![
            listed("orchestrator", ORCH).booted("orchestrator", None),
            listed("relay", RELAY).booted("relay", None),
            listed("stage-0", STAGE_A).booted("stage", Some(0)),
            listed("stage-1", STAGE_C).booted("stage", Some(1)),
            listed("vastai-external", "vastai-external").vastai(1),
        ],
        problems: vec![],
    };

    #[cfg(feature = "validate")]
    manifest_json_is_the_returned_manifest_and_valid_against_its_schema: |s| {
        s.put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
            .put(ORCH, "finalize-000001.json", FINALIZE)
            .put(STAGE_A, "snapshot-000001.json", SNAPSHOT)
            .put("vastai-external", "vastai_instance-000001.json", VASTAI_INSTANCE);
    } => Bundle {
        files: &[
            "MANIFEST.json",
            "node-afae7c99/snapshots/snapshot-000001.json",
            "orchestrator/boot.json",
            "orchestrator/finalize.json",
            "vastai-external/vastai/vastai_instance-000001.json",
        ],
        finalize_received: true,
        nodes: vec![
            listed("node-afae7c99", STAGE_A).snapshots(1),
            listed("orchestrator", ORCH).booted("orchestrator", None).finalized(),
            listed("vastai-external", "vastai-external").vastai(1),
        ],
        problems: vec![],
    }, then |a| {
        let value: serde_json::Value = serde_json::from_slice(file(a, "MANIFEST.json")).unwrap();
        let validators = diagwire::validate::Validators::new().unwrap();
        assert_eq!(validators.violations(diagwire::v1::RecordKind::Manifest, &value), vec![]);
    };

    the_run_span_is_the_earliest_and_latest_file_modification_time: |s| {
        s.put_at(ORCH, "boot-000001.json", &boot(ORCH, "orchestrator", None), 1_779_733_878_000)
            .put_at(ORCH, "events-000001.json", EVENTS, 1_779_733_879_500)
            .put_at(STAGE_A, "snapshot-000001.json", SNAPSHOT, 1_779_733_877_250);
    } => Bundle {
        files: &[
            "MANIFEST.json",
            "node-afae7c99/snapshots/snapshot-000001.json",
            "orchestrator/boot.json",
            "orchestrator/events/events-000001.json",
        ],
        finalize_received: false,
        nodes: vec![
            listed("node-afae7c99", STAGE_A).snapshots(1),
            listed("orchestrator", ORCH).booted("orchestrator", None).events(1),
        ],
        problems: vec![],
    }, then |a| {
        let m = &a.manifest;
        assert_eq!(
            (m.run_start_collector_ms, m.run_end_collector_ms),
            (Some(1_779_733_877_250), Some(1_779_733_879_500))
        );
    };

    a_run_directory_without_record_files_has_no_nodes_and_a_null_span: |s| {
        fs::create_dir(s.run_dir().join(ORCH)).unwrap();
    } => Bundle {
        files: &["MANIFEST.json"],
        finalize_received: false,
        nodes: vec![],
        problems: vec![(Layout, at(&[ORCH]))],
    }, then |a| {
        let m = &a.manifest;
        assert_eq!((m.run_start_collector_ms, m.run_end_collector_ms), (None, None));
    };

    #[cfg(feature = "validate")]
    an_assembled_bundle_written_out_checks_clean_against_its_manifest: |s| {
        s.put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
            .put(ORCH, "boot-000002.json", boot(ORCH, "orchestrator", None))
            .put(ORCH, "events-000001.json", EVENTS)
            .put(ORCH, "snapshot-000001.json", SNAPSHOT)
            .put(ORCH, "finalize-000001.json", FINALIZE_EMPTY)
            .put(ORCH, "finalize-000002.json", FINALIZE)
            .put(STAGE_A, "boot-000001.json", boot(STAGE_A, "stage", Some(0)))
            .put(STAGE_B, "boot-000001.json", boot(STAGE_B, "stage", Some(0)))
            .put(STAGE_B, "events-000001.json", EMPTY_EVENTS)
            .put(RELAY, "events-000001.json", EVENTS)
            .put("vastai-external", "vastai_instance-000001.json", VASTAI_INSTANCE)
            .put("vastai-external", "vastai_lifecycle-000001.json", VASTAI_LIFECYCLE)
            .put("vastai-stage-0", "vastai_sample-000001.json", VASTAI_SAMPLE)
            .put("vastai-stage-0", "vastai_logs-000001.json", VASTAI_LOGS);
    } => Bundle {
        files: &[
            "MANIFEST.json",
            "node-c4e1f07a/events/events-000001.json",
            "orchestrator/boot.json",
            "orchestrator/boot/boot-000001.json",
            "orchestrator/events/events-000001.json",
            "orchestrator/finalize.json",
            "orchestrator/finalize/finalize-000001.json",
            "orchestrator/snapshots/snapshot-000001.json",
            "stage-0-8039dee3/boot.json",
            "stage-0-8039dee3/events/events-000001.json",
            "stage-0-afae7c99/boot.json",
            "vastai-external/vastai/vastai_instance-000001.json",
            "vastai-external/vastai/vastai_lifecycle-000001.json",
            "vastai-stage-0/vastai/vastai_logs-000001.json",
            "vastai-stage-0/vastai/vastai_sample-000001.json",
        ],
        finalize_received: true,
        nodes: vec![
            listed("node-c4e1f07a", RELAY).events(1),
            listed("orchestrator", ORCH)
                .booted("orchestrator", None)
                .events(1)
                .snapshots(1)
                .finalized(),
            listed("stage-0-8039dee3", STAGE_B).booted("stage", Some(0)).events(1),
            listed("stage-0-afae7c99", STAGE_A).booted("stage", Some(0)),
            listed("vastai-external", "vastai-external").vastai(2),
            listed("vastai-stage-0", "vastai-stage-0").vastai(2),
        ],
        problems: vec![],
    }, then |a| {
        use diagwire::bundle::read::{BundleReader, Limits};
        let out = tempfile::tempdir().unwrap();
        let dir = diagwire::bundle::output::write_dir(&a.contents, out.path()).unwrap();
        let mut reader = BundleReader::open(&dir, Limits::default()).unwrap();
        let validators = diagwire::validate::Validators::new().unwrap();
        let report =
            diagwire::validate::bundle::check_bundle(&validators, &mut reader, &mut |_, _| {});
        assert!(report.problems.is_empty(), "{:#?}", report.problems);
        assert_eq!(report.invalid_records, 0);
        assert!(report.records > 0);
    };
}

// ---------------------------------------------------------------------------------------------
// Assembly: bad input

assembles! {
    // The boot record lacks `run_id`, yet still names its node.
    a_file_that_does_not_parse_as_its_kind_is_copied_and_reported: |s| {
        s.put(STAGE_A, "boot-000001.json", BAD_BOOT)
            .put(STAGE_A, "events-000001.json", BAD_EVENTS)
            .put(STAGE_A, "events-000002.json", EVENTS);
    } => Bundle {
        files: &[
            "MANIFEST.json",
            "stage-1/boot.json",
            "stage-1/events/events-000001.json",
            "stage-1/events/events-000002.json",
        ],
        finalize_received: false,
        nodes: vec![listed("stage-1", STAGE_A).booted("stage", Some(1)).events(2)],
        problems: vec![
            (Parse, at(&[STAGE_A, "boot-000001.json"])),
            (Parse, at(&[STAGE_A, "events-000001.json"])),
        ],
    }, then |a| {
        assert_eq!(file(a, "stage-1/boot.json"), BAD_BOOT.as_bytes());
        assert_eq!(file(a, "stage-1/events/events-000001.json"), BAD_EVENTS.as_bytes());
        assert_eq!(file(a, "stage-1/events/events-000002.json"), EVENTS.as_bytes());
    };

    a_record_file_that_is_not_json_text_is_copied_and_reported: |s| {
        s.put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
            .put(ORCH, "finalize-000001.json", NOT_UTF8);
    } => Bundle {
        files: &["MANIFEST.json", "orchestrator/boot.json", "orchestrator/finalize.json"],
        finalize_received: true,
        nodes: vec![listed("orchestrator", ORCH).booted("orchestrator", None).finalized()],
        problems: vec![(Encoding, at(&[ORCH, "finalize-000001.json"]))],
    }, then |a| {
        assert_eq!(file(a, "orchestrator/finalize.json"), NOT_UTF8);
    };

    // A file beside the node directories, a file of no kind, a staged name spelled otherwise, a
    // kind that does not exist, a temporary file and a subdirectory.
    unknown_files_in_staging_are_reported_and_not_copied: |s| {
        s.put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
            .put(ORCH, "notes.txt", "hello")
            .put(ORCH, "boot-1.json", boot(ORCH, "orchestrator", None))
            .put(ORCH, "telemetry-000001.json", "{}")
            .put(ORCH, "events-000002.json.tmp", EVENTS);
        fs::create_dir(s.run_dir().join(ORCH).join("events")).unwrap();
        fs::write(s.run_dir().join("README"), "stray").unwrap();
    } => Bundle {
        files: &["MANIFEST.json", "orchestrator/boot.json"],
        finalize_received: false,
        nodes: vec![listed("orchestrator", ORCH).booted("orchestrator", None)],
        problems: vec![
            (Layout, at(&["README"])),
            (Layout, at(&[ORCH, "notes.txt"])),
            (Layout, at(&[ORCH, "boot-1.json"])),
            (Layout, at(&[ORCH, "telemetry-000001.json"])),
            (Layout, at(&[ORCH, "events-000002.json.tmp"])),
            (Layout, at(&[ORCH, "events"])),
        ],
    };

    // A link in a node directory is a link problem; a link beside the node directories is not a
    // node directory.
    #[cfg(unix)]
    symbolic_links_in_staging_are_reported_and_not_followed: |s| {
        let outside = s.root().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("secret"), "{}").unwrap();
        s.put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None));
        std::os::unix::fs::symlink(
            outside.join("secret"),
            s.run_dir().join(ORCH).join("finalize-000001.json"),
        )
        .unwrap();
        std::os::unix::fs::symlink(&outside, s.run_dir().join(STAGE_A)).unwrap();
    } => Bundle {
        files: &["MANIFEST.json", "orchestrator/boot.json"],
        finalize_received: false,
        nodes: vec![listed("orchestrator", ORCH).booted("orchestrator", None)],
        problems: vec![
            (
                ProblemKind::Read(diagwire::problem::ReadErrorKind::Link),
                at(&[ORCH, "finalize-000001.json"]),
            ),
            (Layout, at(&[STAGE_A])),
        ],
    };

    // The location shows the name with the bad byte replaced.
    #[cfg(unix)]
    a_file_name_that_is_not_utf8_is_reported_and_not_copied: |s| {
        use std::os::unix::ffi::OsStrExt;
        s.put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None));
        let name = std::ffi::OsStr::from_bytes(b"events-00000\xff.json");
        fs::write(s.run_dir().join(ORCH).join(name), EVENTS).unwrap();
    } => Bundle {
        files: &["MANIFEST.json", "orchestrator/boot.json"],
        finalize_received: false,
        nodes: vec![listed("orchestrator", ORCH).booted("orchestrator", None)],
        problems: vec![(Layout, at(&[ORCH, "events-00000\u{fffd}.json"]))],
    };
}

/// A finalize file that is not UTF-8.
const NOT_UTF8: &[u8] = b"{\"exit_reason\": \"\xff\xfe\"";

#[test]
fn a_run_without_a_staging_directory_is_not_found() {
    let staging = Staging::new();
    let err = assemble(staging.root(), "run-that-never-was", collector()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
}

#[test]
fn a_run_id_that_is_not_a_single_path_component_is_rejected() {
    let staging = Staging::new();
    let run_ids = ["", ".", "..", "../etc", "a/b", "a\\b", "a\0b"];
    for run_id in run_ids {
        let err = assemble(staging.root(), run_id, collector()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{run_id:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Serve decision
//
// The rule numbers are those of `serve_decision`'s documentation.

/// A node as the serve decision sees it, built file kind by file kind.
#[derive(Debug, Clone)]
struct Held {
    id: &'static str,
    label: &'static str,
    files: NodeFiles,
}

/// Node `id` under `label`, holding nothing yet.
fn held(id: &'static str, label: &'static str) -> Held {
    Held {
        id,
        label,
        files: NodeFiles::default(),
    }
}

impl Held {
    fn with(mut self, kind: fn(&mut NodeFiles) -> &mut Tally, files: u64, bytes: u64) -> Held {
        *kind(&mut self.files) = Tally { files, bytes };
        self
    }
    fn boot(self, files: u64, bytes: u64) -> Held {
        self.with(|f| &mut f.boot, files, bytes)
    }
    fn events(self, files: u64, bytes: u64) -> Held {
        self.with(|f| &mut f.events, files, bytes)
    }
    fn snapshots(self, files: u64, bytes: u64) -> Held {
        self.with(|f| &mut f.snapshots, files, bytes)
    }
    fn finalize(self, files: u64, bytes: u64) -> Held {
        self.with(|f| &mut f.finalize, files, bytes)
    }
    fn vastai(self, files: u64, bytes: u64) -> Held {
        self.with(|f| &mut f.vastai, files, bytes)
    }
    fn label(mut self, label: &'static str) -> Held {
        self.label = label;
        self
    }

    fn holdings(&self, known: Known) -> NodeHoldings {
        NodeHoldings {
            node_id_hex: NodeIdHex(self.id.to_owned()),
            label: self.label.to_owned(),
            counts: self.files.counts(),
            files: (known == Files).then_some(self.files),
        }
    }
}

/// What a side of the decision was built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Known {
    /// A manifest: counts only.
    Counts,
    /// A file listing: counts and sizes.
    Files,
}

use Known::{Counts, Files};

/// A cached bundle of these nodes, with `finalize_received` as the nodes say.
fn cache(known: Known, nodes: &[Held]) -> CachedBundle {
    CachedBundle {
        finalize_received: nodes.iter().any(|n| n.files.finalize.files > 0),
        nodes: nodes.iter().map(|n| n.holdings(known)).collect(),
    }
}

/// Staging of these nodes, with `finalize_on_disk` and `has_boot` as the nodes say.
fn staged(known: Known, nodes: &[Held]) -> StagingState {
    StagingState {
        finalize_on_disk: nodes.iter().any(|n| n.files.finalize.files > 0),
        has_boot: nodes.iter().any(|n| n.files.boot.files > 0),
        nodes: nodes.iter().map(|n| n.holdings(known)).collect(),
    }
}

fn orch() -> Held {
    held(ORCH, "orchestrator")
        .boot(1, 900)
        .events(2, 4_000)
        .snapshots(1, 700)
        .finalize(1, 60)
}

fn stage_a() -> Held {
    held(STAGE_A, "stage-0")
        .boot(1, 900)
        .events(1, 2_000)
        .snapshots(1, 700)
}

fn stage_b() -> Held {
    held(STAGE_B, "stage-1")
        .boot(1, 900)
        .events(1, 2_000)
        .snapshots(1, 700)
}

/// A vast.ai producer's records only: no boot record.
fn vastai_node() -> Held {
    held("vastai-external", "vastai-external").vastai(2, 300)
}

/// The run the table starts from: the orchestrator (which finalized) and two stages.
fn run3() -> Vec<Held> {
    vec![orch(), stage_a(), stage_b()]
}

/// [`run3`] with `f` applied to the node of id `id`.
fn run3_with(id: &str, f: fn(Held) -> Held) -> Vec<Held> {
    run3()
        .into_iter()
        .map(|n| if n.id == id { f(n) } else { n })
        .collect()
}

/// `name: (cached bundle, staging), … => decision;` — every pair gives the decision.
macro_rules! serves {
    ($($name:ident: $(($cached:expr, $staging:expr)),+ $(,)? => $decision:expr;)*) => {$(
        #[test]
        fn $name() {
            $(
                let (cached, staging): (Option<CachedBundle>, Option<StagingState>) =
                    ($cached, $staging);
                assert_eq!(
                    serve_decision(cached.as_ref(), staging.as_ref()),
                    $decision,
                    "cached {cached:#?}, staging {staging:#?}",
                );
            )+
        }
    )*};
}

use ServeDecision::{NotFound, Resynthesize, ServeCached};

serves! {
    // Rule 1.
    no_staging_is_not_found_even_with_a_cached_bundle:
        (Some(cache(Counts, &run3())), None), (None, None)
        => NotFound;
    // Rule 2.
    a_run_directory_without_nodes_is_not_found:
        (Some(cache(Counts, &run3())), Some(staged(Counts, &[]))), (None, Some(staged(Files, &[])))
        => NotFound;
    // Rule 2: a node holding only vast.ai records is a node, so its run is served.
    staging_without_a_boot_record_is_still_served:
        (None, Some(staged(Counts, &[vastai_node()]))) => Resynthesize;
    // Rule 2, then 5: a vast.ai-only node counts in the node ids like any other.
    a_node_with_only_vastai_records_counts_as_a_node:
        (Some(cache(Counts, &[orch()])), Some(staged(Counts, &[orch(), vastai_node()]))),
        (Some(cache(Files, &[orch(), vastai_node()])), Some(staged(Files, &[orch()])))
        => Resynthesize;
    // Rule 3.
    staging_without_a_cached_bundle_is_resynthesized:
        (None, Some(staged(Counts, &[stage_a(), stage_b()]))),
        (None, Some(staged(Files, &run3())))
        => Resynthesize;
    // Rule 4: only the flag differs, every node is as cached.
    a_finalize_deleted_since_the_cache_was_written_resynthesizes:
        (
            Some(cache(Counts, &run3())),
            Some(StagingState { finalize_on_disk: false, ..staged(Counts, &run3()) })
        )
        => Resynthesize;
    a_finalize_arriving_after_the_cache_was_written_resynthesizes:
        (
            Some(CachedBundle { finalize_received: false, ..cache(Counts, &run3()) }),
            Some(staged(Counts, &run3()))
        )
        => Resynthesize;
    // Rule 5.
    staging_with_more_nodes_than_the_cached_bundle_is_resynthesized:
        (
            Some(cache(Counts, &[orch(), stage_a()])),
            Some(staged(Counts, &run3()))
        )
        => Resynthesize;
    staging_with_fewer_nodes_than_the_cached_bundle_is_resynthesized:
        (
            Some(cache(Counts, &run3())),
            Some(staged(Counts, &[orch(), stage_a()]))
        )
        => Resynthesize;
    // Stage B replaced by a node with another id and the same label and files.
    an_equal_count_node_swap_is_resynthesized:
        (
            Some(cache(Counts, &run3())),
            Some(staged(Counts, &run3_with(STAGE_B, |n| Held { id: STAGE_C, ..n })))
        ),
        (
            Some(cache(Files, &run3())),
            Some(staged(Files, &run3_with(STAGE_B, |n| Held { id: STAGE_C, ..n })))
        )
        => Resynthesize;
    a_node_listed_twice_in_the_cached_bundle_is_resynthesized:
        (
            Some(cache(Counts, &[orch(), stage_a(), stage_a()])),
            Some(staged(Counts, &[orch(), stage_a()]))
        )
        => Resynthesize;
    // Rule 6.
    a_relabelled_node_is_resynthesized:
        (
            Some(cache(Counts, &run3())),
            Some(staged(Counts, &run3_with(STAGE_B, |n| n.label("stage-2"))))
        )
        => Resynthesize;
    // Rule 7: the finalizer's last snapshot landing after the canonical bundle was written.
    staging_that_grew_within_the_same_nodes_is_resynthesized:
        (
            Some(cache(Counts, &run3())),
            Some(staged(Counts, &run3_with(ORCH, |n| n.snapshots(2, 1_400))))
        ),
        (
            Some(cache(Files, &run3())),
            Some(staged(Files, &run3_with(ORCH, |n| n.snapshots(2, 1_400))))
        )
        => Resynthesize;
    every_count_of_a_node_is_compared:
        (
            Some(cache(Counts, &run3_with(STAGE_A, |n| n.boot(0, 0)))),
            Some(staged(Counts, &run3()))
        ),
        (
            Some(cache(Counts, &run3())),
            Some(staged(Counts, &run3_with(STAGE_A, |n| n.events(2, 4_000))))
        ),
        (
            Some(cache(Counts, &run3())),
            Some(staged(Counts, &run3_with(STAGE_A, |n| n.snapshots(0, 0))))
        ),
        // The flag stays true: the orchestrator finalized.
        (
            Some(cache(Counts, &run3())),
            Some(staged(Counts, &run3_with(STAGE_A, |n| n.finalize(1, 60))))
        ),
        (
            Some(cache(Counts, &run3())),
            Some(staged(Counts, &run3_with(STAGE_A, |n| n.vastai(1, 150))))
        )
        => Resynthesize;
    // Rule 8: as many files of every kind, more bytes.
    a_node_whose_events_file_grew_is_resynthesized:
        (
            Some(cache(Files, &run3())),
            Some(staged(Files, &run3_with(STAGE_A, |n| n.events(1, 2_500))))
        )
        => Resynthesize;
    // Rule 8: the counts record boot and finalize files only as present.
    a_second_boot_or_finalize_file_is_resynthesized_when_both_sides_know_their_files:
        (
            Some(cache(Files, &run3())),
            Some(staged(Files, &run3_with(STAGE_A, |n| n.boot(2, 1_800))))
        ),
        (
            Some(cache(Files, &run3())),
            Some(staged(Files, &run3_with(ORCH, |n| n.finalize(2, 120))))
        )
        => Resynthesize;
    // Rule 8 applies only when both sides know their files.
    sizes_are_not_compared_when_a_side_knows_only_counts:
        (
            Some(cache(Counts, &run3())),
            Some(staged(Files, &run3_with(STAGE_A, |n| n.events(1, 2_500).boot(2, 1_800))))
        ),
        (
            Some(cache(Files, &run3())),
            Some(staged(Counts, &run3_with(STAGE_A, |n| n.events(1, 2_500).boot(2, 1_800))))
        )
        => ServeCached;
    // Rule 9, whatever each side was built from and in whatever order it lists its nodes.
    unchanged_staging_serves_the_cache:
        (Some(cache(Counts, &run3())), Some(staged(Counts, &run3()))),
        (Some(cache(Files, &run3())), Some(staged(Files, &run3()))),
        (Some(cache(Counts, &run3())), Some(staged(Files, &run3()))),
        (Some(cache(Files, &run3())), Some(staged(Counts, &run3()))),
        (
            Some(cache(Files, &[stage_b(), orch(), stage_a()])),
            Some(staged(Files, &run3()))
        ),
        (
            Some(cache(Files, &[orch(), vastai_node()])),
            Some(staged(Files, &[vastai_node(), orch()]))
        )
        => ServeCached;
}

/// The decisions for a cache and staging state built both ways: from the two manifests, and from
/// the cached bundle's files and the assembled bundle.
#[track_caller]
fn decisions(cached: &Assembled, now: &Assembled) -> (ServeDecision, ServeDecision) {
    let by_manifest = serve_decision(
        Some(&CachedBundle::from_manifest(&cached.manifest)),
        Some(&StagingState::from_manifest(&now.manifest)),
    );
    let by_files = serve_decision(
        Some(&CachedBundle::from_contents(&cached.contents).expect("an assembled bundle")),
        Some(&StagingState::from_assembled(now)),
    );
    (by_manifest, by_files)
}

/// A finalized run of the orchestrator and one stage.
fn finalized_run(s: &Staging) {
    s.put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
        .put(ORCH, "events-000001.json", EMPTY_EVENTS)
        .put(ORCH, "finalize-000001.json", FINALIZE)
        .put(STAGE_A, "boot-000001.json", boot(STAGE_A, "stage", Some(0)))
        .put(STAGE_A, "snapshot-000001.json", SNAPSHOT);
}

#[test]
fn the_cache_read_from_its_files_knows_what_the_assembled_bundle_knows() {
    let staging = Staging::new();
    finalized_run(&staging);
    staging.put("vastai-external", "vastai_logs-000001.json", VASTAI_LOGS);
    let assembled = staging.assemble();

    let cached = CachedBundle::from_contents(&assembled.contents).unwrap();
    let state = StagingState::from_assembled(&assembled);
    assert_eq!(cached.nodes, state.nodes);
    assert_eq!(cached.node_count(), 3);
    assert_eq!(state.node_count(), 3);
    assert!(cached.finalize_received && state.finalize_on_disk && state.has_boot);

    // Without the sizes, it is what the manifest says.
    let mut counts_only = cached.clone();
    counts_only.nodes.iter_mut().for_each(|n| n.files = None);
    assert_eq!(
        counts_only,
        CachedBundle::from_manifest(&assembled.manifest)
    );
    let mut counts_only = state.clone();
    counts_only.nodes.iter_mut().for_each(|n| n.files = None);
    assert_eq!(
        counts_only,
        StagingState::from_manifest(&assembled.manifest)
    );

    let len = |s: &str| s.len() as u64;
    let orch = cached
        .nodes
        .iter()
        .find(|n| n.node_id_hex.0 == ORCH)
        .unwrap();
    let want = NodeFiles {
        boot: Tally {
            files: 1,
            bytes: len(&boot(ORCH, "orchestrator", None)),
        },
        events: Tally {
            files: 1,
            bytes: len(EMPTY_EVENTS),
        },
        finalize: Tally {
            files: 1,
            bytes: len(FINALIZE),
        },
        ..NodeFiles::default()
    };
    assert_eq!(orch.files, Some(want));
    let vastai = cached
        .nodes
        .iter()
        .find(|n| n.node_id_hex.0 == "vastai-external")
        .unwrap();
    assert_eq!(
        vastai.files.map(|f| f.vastai),
        Some(Tally {
            files: 1,
            bytes: len(VASTAI_LOGS)
        })
    );
    assert_eq!(serve_decision(Some(&cached), Some(&state)), ServeCached);
}

#[test]
fn a_cache_assembly_could_not_have_written_is_not_read_from_its_files() {
    let staging = Staging::new();
    finalized_run(&staging);
    let good = staging.assemble().contents;
    assert!(CachedBundle::from_contents(&good).is_some());

    type Change = fn(&mut BundleContents);
    let cases: [(&str, Change); 7] = [
        ("no MANIFEST.json", |c| {
            c.files.remove("MANIFEST.json");
        }),
        ("a MANIFEST.json that does not parse", |c| {
            c.files.insert("MANIFEST.json".into(), b"{".to_vec());
        }),
        ("a manifest of another run", |c| {
            c.run_id = "another-run".into()
        }),
        ("a file outside the layout", |c| {
            c.files
                .insert("orchestrator/notes.txt".into(), b"hi".to_vec());
        }),
        ("a file outside every node directory", |c| {
            c.files.insert("README".into(), b"hi".to_vec());
        }),
        ("a file of a node the manifest does not list", |c| {
            c.files
                .insert("stage-9/boot.json".into(), BOOT_TEMPLATE.into());
        }),
        ("a node whose files do not give its counts", |c| {
            c.files.remove("stage-0/snapshots/snapshot-000001.json");
        }),
    ];
    for (what, change) in cases {
        let mut contents = good.clone();
        change(&mut contents);
        assert_eq!(CachedBundle::from_contents(&contents), None, "{what}");
    }
}

/// The finalizer's answer to its own snapshot request lands in staging after the canonical bundle
/// was written.
#[test]
fn a_snapshot_landing_after_the_cache_was_written_is_resynthesized() {
    let staging = Staging::new();
    finalized_run(&staging);
    let cached = staging.assemble();
    assert_eq!(
        decisions(&cached, &staging.assemble()),
        (ServeCached, ServeCached)
    );

    staging.put(ORCH, "snapshot-000001.json", SNAPSHOT);
    assert_eq!(
        decisions(&cached, &staging.assemble()),
        (Resynthesize, Resynthesize)
    );
}

/// One stage node replaced by another with the same role and stage index (so the same label) and
/// the same files.
#[test]
fn a_node_swapped_for_another_on_disk_is_resynthesized() {
    let staging = Staging::new();
    finalized_run(&staging);
    let cached = staging.assemble();

    staging.remove_node(STAGE_A);
    staging
        .put(STAGE_B, "boot-000001.json", boot(STAGE_B, "stage", Some(0)))
        .put(STAGE_B, "snapshot-000001.json", SNAPSHOT);
    let now = staging.assemble();
    assert_eq!(labels(&now.manifest), labels(&cached.manifest));
    assert_eq!(decisions(&cached, &now), (Resynthesize, Resynthesize));
}

/// A staged file rewritten larger under its name: only the file listings see it, since a manifest
/// records no sizes.
#[test]
fn an_events_file_that_grew_in_place_is_seen_by_the_file_listings_only() {
    let staging = Staging::new();
    finalized_run(&staging);
    let cached = staging.assemble();

    staging.put(ORCH, "events-000001.json", EVENTS);
    assert!(EVENTS.len() > EMPTY_EVENTS.len());
    assert_eq!(
        decisions(&cached, &staging.assemble()),
        (ServeCached, Resynthesize)
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

/// A run id reused across a failed first lease and a successful second one: after every change to
/// staging, the served bundle is what staging holds.
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
    let mut cache_files: Option<CachedBundle> = None;
    for step in &steps {
        (step.change)(&staging);
        let assembled = staging.assemble();
        let manifest = &assembled.manifest;
        if step.writes_cache {
            cache = Some(CachedBundle::from_manifest(manifest));
            cache_files = CachedBundle::from_contents(&assembled.contents);
            assert!(cache_files.is_some(), "{}", step.what);
        }
        let state = StagingState::from_manifest(manifest);
        assert_eq!(
            serve_decision(cache.as_ref(), Some(&state)),
            step.decision,
            "{}",
            step.what
        );
        let state = StagingState::from_assembled(&assembled);
        assert_eq!(
            serve_decision(cache_files.as_ref(), Some(&state)),
            step.decision,
            "{} (from the files)",
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
    let err = assemble(staging.root(), RUN, collector()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(
        serve_decision(cache.as_ref(), None),
        ServeDecision::NotFound
    );
    assert_eq!(
        serve_decision(cache_files.as_ref(), None),
        ServeDecision::NotFound
    );
}

// ---------------------------------------------------------------------------------------------
// Retention

const DAY_MS: u64 = 24 * 60 * 60 * 1000;
const NOW: u64 = 1_779_733_878_000;

/// A run last written `age_ms` before [`NOW`].
fn run(run_id: &str, age_ms: u64, bytes: u64, finalized: bool) -> StagedRun {
    StagedRun {
        run_id: run_id.to_owned(),
        last_write_unix_ms: NOW - age_ms,
        bytes,
        finalized,
    }
}

/// A run last written `ahead_ms` after [`NOW`], as a skewed clock can make it.
fn future_run(run_id: &str, ahead_ms: u64, bytes: u64) -> StagedRun {
    StagedRun {
        last_write_unix_ms: NOW + ahead_ms,
        ..run(run_id, 0, bytes, false)
    }
}

/// Keep runs `keep_days` days under a cap of `cap` bytes.
fn policy(keep_days: u64, cap: u64) -> RetentionPolicy {
    RetentionPolicy {
        keep_unfinalized_ms: keep_days * DAY_MS,
        disk_cap_bytes: cap,
    }
}

/// `name: [runs], policy => [run ids deleted, in order];`
macro_rules! retains {
    ($($name:ident: [$($run:expr),* $(,)?], $policy:expr => [$($deleted:expr),* $(,)?];)*) => {$(
        #[test]
        fn $name() {
            let deleted: &[&str] = &[$($deleted),*];
            assert_eq!(retention_plan(&[$($run),*], &$policy, NOW), deleted);
        }
    )*};
}

retains! {
    under_the_cap_no_run_younger_than_the_window_is_deleted: [
        run("a", 29 * DAY_MS, 10, false),
        run("b", 29 * DAY_MS, 10, true),
        run("c", DAY_MS, 10, false),
        run("d", 0, 10, true),
    ], policy(30, 40) => [];
    runs_are_kept_until_the_window_has_fully_elapsed: [
        run("just-young", 30 * DAY_MS - 1, 1, false),
        run("just-old", 30 * DAY_MS, 1, false),
    ], policy(30, 1 << 40) => ["just-old"];
    runs_older_than_the_window_are_deleted_whether_finalized_or_not: [
        run("old-finalized", 40 * DAY_MS, 1, true),
        run("old-unfinalized", 31 * DAY_MS, 1, false),
        run("young", DAY_MS, 1, false),
    ], policy(30, 1 << 40) => ["old-finalized", "old-unfinalized"];
    // 120 bytes, cap 50: the three oldest go, whatever their state, the newest stays.
    over_the_cap_runs_are_deleted_oldest_first_until_under_it: [
        run("newest", 0, 30, false),
        run("oldest", 3 * DAY_MS, 30, false),
        run("middle", 2 * DAY_MS, 30, true),
        run("older", 2 * DAY_MS + 1, 30, false),
    ], policy(30, 50) => ["oldest", "older", "middle"];
    exactly_at_the_cap_nothing_young_is_deleted: [
        run("a", DAY_MS, 25, false),
        run("b", 0, 25, false),
    ], policy(30, 50) => [];
    over_the_cap_runs_written_at_the_same_time_go_in_run_id_order: [
        run("run-c", DAY_MS, 10, false),
        run("run-a", DAY_MS, 10, false),
        run("run-b", DAY_MS, 10, false),
    ], policy(30, 15) => ["run-a", "run-b"];
    expired_and_over_cap_runs_are_listed_oldest_first: [
        run("young-big", DAY_MS, 100, false),
        run("expired", 60 * DAY_MS, 1, true),
        run("young-small", 0, 1, false),
        run("young-older", 2 * DAY_MS, 100, false),
    ], policy(30, 150) => ["expired", "young-older"];
    a_last_write_in_the_future_counts_as_young:
        [future_run("skewed", DAY_MS, 1)], policy(30, 10) => [];
}

#[test]
fn the_default_policy_keeps_staging_thirty_days_under_a_fifty_gib_cap() {
    let default = RetentionPolicy::default();
    assert_eq!(default.keep_unfinalized_ms, 30 * DAY_MS);
    assert_eq!(default.disk_cap_bytes, 50 << 30);
}
