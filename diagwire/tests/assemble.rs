//! Assembling bundles from the collector's staging tree.
//!
//! The assembly cases are a table, one `#[test]` per line: this staging tree gives these bundle
//! files, this manifest and these problems. Every case also checks what holds for every assembly:
//! `MANIFEST.json` is the returned manifest, it declares the oldest contract version its nodes
//! declare (none when a node's records prove nothing beyond 1.0.0) and the collector as its
//! writer, and it has a time span exactly when it lists nodes. The serve decision
//! is tested in `serve_decision.rs`, staging retention in `retention.rs`.
#![cfg(feature = "bundle")]

#[path = "common/staging.rs"]
mod staging;

use std::fs;
use std::io::ErrorKind;

use diagwire::bundle::assemble::{Assembled, assemble};
use diagwire::v1::{Manifest, ManifestNode};
use diagwire::{NodeIdHex, ProblemKind};
use staging::*;

use ProblemKind::{Encoding, Layout, Parse};

/// A manifest entry as assembly writes it: counts are numbers of files, `vastai_records` is
/// written for every node, and a node declares the contract version its records prove (none for
/// records that prove nothing beyond 1.0.0, as these fixtures mostly are).
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

    /// Declaring this contract version.
    fn declares(mut self, version: &str) -> Row {
        self.0.contract_version = Some(version.to_owned());
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
    // The run declares the oldest of its nodes' versions, none when a node that posted contract
    // records (not only vast.ai records) declares none, or when there is no such node.
    let writers: Vec<Option<&str>> = nodes
        .iter()
        .filter(|n| n.boot_recorded || n.event_batches + n.snapshots > 0 || n.finalize_recorded)
        .map(|n| n.contract_version.as_deref())
        .collect();
    let oldest = match writers.iter().min() {
        Some(Some(_)) => writers.iter().flatten().min().copied(),
        _ => None,
    };
    assert_eq!(
        m.contract_version.as_deref(),
        oldest,
        "the run's contract version"
    );
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

/// A stage's boot record with one more key, of a later contract than the template's.
fn boot_with(id: &str, stage_index: u32, key: &str, value: &str) -> String {
    let mut v: serde_json::Value =
        serde_json::from_str(&boot(id, "stage", Some(stage_index))).unwrap();
    v[key] = value.into();
    serde_json::to_string_pretty(&v).unwrap() + "\n"
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

    a_node_whose_records_carry_a_field_of_1_1_declares_1_1_and_so_does_the_run: |s| {
        s.put(STAGE_A, "boot-000001.json", boot_with(STAGE_A, 0, "host_provider", "vastai"));
    } => Bundle {
        files: &["MANIFEST.json", "stage-0/boot.json"],
        finalize_received: false,
        nodes: vec![listed("stage-0", STAGE_A).booted("stage", Some(0)).declares("1.1.0")],
        problems: vec![],
    };

    a_node_whose_records_carry_a_value_of_1_2_declares_the_newest_1_2_patch: |s| {
        s.put(STAGE_A, "boot-000001.json", boot_with(STAGE_A, 0, "host_provider_source", "orchestrator"));
    } => Bundle {
        files: &["MANIFEST.json", "stage-0/boot.json"],
        finalize_received: false,
        nodes: vec![listed("stage-0", STAGE_A).booted("stage", Some(0)).declares("1.2.0")],
        problems: vec![],
    };

    a_run_with_a_1_0_0_writer_declares_none_while_its_newer_nodes_declare_theirs: |s| {
        s.put(STAGE_A, "boot-000001.json", boot_with(STAGE_A, 0, "host_provider", "vastai"))
            .put(STAGE_B, "boot-000001.json", boot(STAGE_B, "stage", Some(1)));
    } => Bundle {
        files: &["MANIFEST.json", "stage-0/boot.json", "stage-1/boot.json"],
        finalize_received: false,
        nodes: vec![
            listed("stage-0", STAGE_A).booted("stage", Some(0)).declares("1.1.0"),
            listed("stage-1", STAGE_B).booted("stage", Some(1)),
        ],
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
            diagwire::validate::bundle::validate_bundle(&validators, &mut reader, &mut |_, _| {});
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
