//! Checking a bundle as a whole: the manifest, the boot records, the directories and the sequence
//! numbers against each other, files outside the layout, and where problems are located.
//!
//! Every case starts from one clean bundle written by `bundle::Writer` into a fresh directory,
//! changes it the way the case says, checks it, and compares the problems (kind, location relative
//! to the directory, part of the message) with what the case expects.
#![cfg(all(feature = "bundle", feature = "validate"))]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use diagwire::NodeId;
use diagwire::ProblemKind;
use diagwire::bundle::Writer;
use diagwire::bundle::read::{BundleReader, Limits};
use diagwire::v1::{
    BundleWriter, DialStarted, EventRecord, Finalize, Identity, Snapshot, SnapshotBody,
    SnapshotTrigger, WriterKind,
};
use diagwire::validate::{Options, Report, Validator, Validators};

const RUN: &str = "run-7";
const WALL: u64 = 1_779_733_878_000;
const ORCH: NodeId = NodeId([0x5f; 32]);
const STAGE: NodeId = NodeId([0xaf; 32]);

fn validators() -> &'static Validators {
    static V: OnceLock<Validators> = OnceLock::new();
    V.get_or_init(|| Validators::new().expect("validators"))
}

fn identity(node: NodeId, role: &str, stage_index: Option<u32>) -> Identity {
    let mut identity = Identity::new(node.to_hex(), node.short(), role, RUN, WALL - 60_000, 0);
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
    Snapshot::new(
        of.clone(),
        RUN,
        format!("{}-{seq}", of.node_id_short),
        WALL + seq,
        seq,
        SnapshotTrigger::Periodic,
        SnapshotBody::new(vec![]),
    )
}

/// The clean bundle: an orchestrator with two events files, a snapshot and a finalize record; a
/// stage with one events file and three snapshots.
fn write_clean(parent: &Path) -> PathBuf {
    let orch = identity(ORCH, "orchestrator", None);
    let stage = identity(STAGE, "stage", Some(0));
    let mut w = Writer::new(RUN, BundleWriter::new(WriterKind::Sim, "sim", "1"));
    w.boot(&orch)
        .boot(&stage)
        .events(&ORCH.to_hex(), &[event(ORCH, 1), event(ORCH, 2)])
        .events(&ORCH.to_hex(), &[event(ORCH, 3)])
        .events(&STAGE.to_hex(), &[event(STAGE, 1)])
        .snapshot(&snapshot(&orch, 4))
        .snapshot(&snapshot(&stage, 2))
        .snapshot(&snapshot(&stage, 3))
        .snapshot(&snapshot(&stage, 4))
        .finalize(&ORCH.to_hex(), &Finalize::new());
    w.write_dir(parent).expect("write").0
}

/// Edits a JSON file of the bundle in place.
fn edit_json(run: &Path, rel: &str, f: impl FnOnce(&mut serde_json::Value)) {
    let path = run.join(rel);
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    f(&mut v);
    std::fs::write(&path, serde_json::to_vec_pretty(&v).expect("json")).expect("write");
}

fn copy(run: &Path, from: &str, to: &str) {
    let to = run.join(to);
    std::fs::create_dir_all(to.parent().expect("parent")).expect("dir");
    std::fs::copy(run.join(from), to).expect("copy");
}

/// (kind, location relative to the directory the bundle was written in, part of the message).
type Want = (ProblemKind, &'static str, &'static str);

fn check_with(run: &Path, given: &Path, limits: Limits) -> Report {
    let mut reader = BundleReader::open(given, limits).expect("opens");
    let mut report = Report::default();
    let _ = run;
    Validator::new(validators(), Options::default()).validate_bundle(
        &mut reader,
        &mut |_, _| {},
        &mut report,
    );
    report
}

#[track_caller]
fn check(change: impl FnOnce(&Path), limits: Limits, want: &[Want]) {
    let tmp = tempfile::tempdir().expect("tmp");
    let run = write_clean(tmp.path());
    change(&run);
    let report = check_with(&run, &run, limits);
    let top = format!("{}/", tmp.path().display());
    let got: Vec<(ProblemKind, String)> = report
        .problems
        .iter()
        .map(|p| {
            let mut at = p.location.clone();
            at.file = at.file.strip_prefix(&top).unwrap_or(&at.file).to_owned();
            (p.kind, at.to_string())
        })
        .collect();
    let wanted: Vec<(ProblemKind, String)> = want
        .iter()
        .map(|(k, at, _)| (*k, (*at).to_owned()))
        .collect();
    assert_eq!(got, wanted, "{:#?}", report.problems);
    for (p, (_, _, message)) in report.problems.iter().zip(want) {
        assert!(
            p.message.contains(message),
            "{:?} lacks {message:?}",
            p.message
        );
    }
}

macro_rules! cases {
    ($($name:ident: |$run:ident| $change:block $(limits $limits:expr,)? => [$($want:expr),* $(,)?];)*) => {$(
        #[test]
        fn $name() {
            #[allow(unused_mut, unused_assignments)]
            let mut limits = Limits::default();
            $(limits = $limits;)?
            check(|$run: &Path| $change, limits, &[$($want),*]);
        }
    )*};
}

use ProblemKind::*;

cases! {
    the_clean_bundle_has_no_problems: |run| { let _ = run; } => [];
    a_missing_snapshot_is_named_by_its_file: |run| {
        std::fs::remove_file(run.join("stage-0/snapshots/snapshot-000001.json")).expect("rm");
    } => [
        (Manifest, "run-7/MANIFEST.json:0 /nodes/1/snapshots", "manifest says 3 snapshots, found 2"),
        (Layout, "run-7/stage-0/snapshots/snapshot-000001.json", "missing: `stage-0/snapshots/snapshot-000001.json`"),
    ];
    a_jump_in_sequence_numbers_names_the_missing_files: |run| {
        copy(run, "orchestrator/events/events-000002.json", "orchestrator/events/events-000999.json");
        edit_json(run, "MANIFEST.json", |m| m["nodes"][0]["event_batches"] = 3.into());
    } => [
        (Layout, "run-7/orchestrator/events/events-000003.json", "`orchestrator/events/events-000007.json` and 991 more (3 numbers from 1 to 999 are present, 996 missing)"),
    ];
    a_number_spelled_differently_is_reported_with_its_canonical_name: |run| {
        copy(run, "stage-0/events/events-000001.json", "stage-0/events/events-2.json");
    } => [
        (Layout, "run-7/stage-0/events/events-2.json", "the layout spells this name `events-000002.json`"),
    ];
    a_file_in_the_wrong_folder_is_reported_with_its_folder: |run| {
        copy(run, "stage-0/events/events-000001.json", "stage-0/snapshots/events-000002.json");
    } => [
        (Layout, "run-7/stage-0/snapshots/events-000002.json", "this file belongs in `events/`"),
    ];
    stray_files_are_reported_wherever_they_are: |run| {
        std::fs::write(run.join("notes.txt"), "\u{1b}[2J garbage").expect("write");
        std::fs::write(run.join("stage-0/core"), [0u8, 1, 2]).expect("write");
    } => [
        (Layout, "run-7/notes.txt", "the run directory holds MANIFEST.json and one directory per node"),
        (Layout, "run-7/stage-0/core", "a node directory holds boot.json"),
    ];
    a_manifest_and_boot_record_disagreeing_on_the_node_id_is_reported: |run| {
        edit_json(run, "MANIFEST.json", |m| m["nodes"][1]["node_id_hex"] = NodeId([1; 32]).to_hex().0.into());
    } => [
        (Manifest, "run-7/MANIFEST.json:0 /nodes/1/node_id_hex", "`stage-0/boot.json` says"),
    ];
    a_manifest_and_boot_record_disagreeing_on_the_role_is_reported: |run| {
        edit_json(run, "MANIFEST.json", |m| m["nodes"][0]["role"] = "relay".into());
    } => [
        (Manifest, "run-7/MANIFEST.json:0 /nodes/0/role", "manifest says role \"relay\", `orchestrator/boot.json` says \"orchestrator\""),
    ];
    a_manifest_naming_another_run_than_its_boot_records_is_reported: |run| {
        edit_json(run, "MANIFEST.json", |m| m["run_id"] = "run-8".into());
    } => [
        (Manifest, "run-7/orchestrator/boot.json:0 /run_id", "the boot record says run `run-7`, the manifest says `run-8`"),
        (Manifest, "run-7/stage-0/boot.json:0 /run_id", "the boot record says run `run-7`"),
    ];
    a_directory_not_named_after_its_boot_record_is_reported: |run| {
        edit_json(run, "stage-0/boot.json", |b| b["stage_index"] = 3.into());
        edit_json(run, "MANIFEST.json", |m| m["nodes"][1]["stage_index"] = 3.into());
    } => [
        (Layout, "run-7/stage-0/boot.json:0", "gives the label `stage-3`"),
    ];
    a_file_present_but_refused_is_not_called_missing: |run| {
        std::fs::write(run.join("stage-0/snapshots/snapshot-000002.json"), vec![b' '; 4096]).expect("write");
    } limits Limits { max_file_bytes: 2048, ..Limits::default() }, => [
        (Read(diagwire::problem::ReadErrorKind::TooLarge), "run-7/stage-0/snapshots/snapshot-000002.json", "over the per-file limit"),
    ];
    a_manifest_holding_an_array_is_named_not_called_missing: |run| {
        std::fs::write(run.join("MANIFEST.json"), "[]").expect("write");
    } => [
        (Shape, "run-7/MANIFEST.json (line 1, column 1)", "MANIFEST.json holds one manifest record (a JSON object), not an array"),
    ];
    a_bundle_without_a_manifest_says_so: |run| {
        std::fs::remove_file(run.join("MANIFEST.json")).expect("rm");
    } => [
        (Manifest, "run-7/MANIFEST.json", "the bundle has no MANIFEST.json"),
    ];
}

#[test]
fn locations_inside_a_run_directory_below_the_given_path_are_real_paths() {
    let tmp = tempfile::tempdir().expect("tmp");
    let run = write_clean(tmp.path());
    std::fs::remove_file(run.join("stage-0/snapshots/snapshot-000002.json")).expect("rm");
    let report = check_with(&run, tmp.path(), Limits::default());
    for p in &report.problems {
        assert!(
            p.location.file.starts_with(&run.display().to_string()),
            "{}",
            p.location
        );
    }
    let missing = report
        .problems
        .iter()
        .find(|p| p.kind == Layout)
        .expect("the gap");
    assert_eq!(
        missing.location.file,
        run.join("stage-0/snapshots/snapshot-000002.json")
            .display()
            .to_string()
    );
    assert!(Path::new(&run.join("stage-0/boot.json")).exists());
}

#[test]
fn locations_inside_an_archive_carry_the_full_inner_path() {
    let tmp = tempfile::tempdir().expect("tmp");
    let run = write_clean(tmp.path());
    edit_json(&run, "stage-0/boot.json", |b| {
        b["boot_sequence"] = "x".into()
    });
    let (contents, _) = diagwire::bundle::read::read_all(&run, Limits::default()).expect("read");
    let archive = tmp.path().join("renamed.tar.gz");
    diagwire::bundle::output::write_tar_gz(
        &contents,
        std::fs::File::create(&archive).expect("create"),
    )
    .expect("tar");
    let report = check_with(&run, &archive, Limits::default());
    let files: Vec<&str> = report
        .problems
        .iter()
        .map(|p| p.location.file.as_str())
        .collect();
    let want = format!("{}!run-7/stage-0/boot.json", archive.display());
    assert!(!files.is_empty());
    assert!(files.iter().all(|f| *f == want), "{files:?}");
}

#[test]
fn a_bundle_under_the_caps_reports_every_problem_and_counts_the_rest() {
    let tmp = tempfile::tempdir().expect("tmp");
    let run = write_clean(tmp.path());
    let bad: Vec<serde_json::Value> = (0..50).map(|_| serde_json::json!({})).collect();
    std::fs::write(
        run.join("stage-0/events/events-000001.json"),
        serde_json::to_vec(&bad).expect("json"),
    )
    .expect("write");
    let report = check_with(&run, &run, Limits::default());
    assert_eq!(report.invalid_records, 50);
    assert_eq!(report.problems.len(), 20);
    assert!(report.omitted.iter().any(|o| o.records > 0));
    assert!(!report.is_clean());
}

/// The same checks on record files in the binary form: a `.pb` file is read as the record it
/// encodes, problems name the `.pb` file, and a record in both forms is reported.
#[cfg(feature = "proto")]
mod binary {
    use super::*;
    use diagwire::layout::{Encoding, kind_of_file_name};

    /// The binary form of the JSON file at `rel`, after `edit`.
    fn encoded(run: &Path, rel: &str, edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
        let path = run.join(rel);
        let mut v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
        edit(&mut v);
        let name = path.file_name().and_then(|n| n.to_str()).expect("name");
        let kind = kind_of_file_name(name).expect("a record file");
        diagwire::binary::encode_value(Encoding::Protobuf, kind, &v).expect("encodes")
    }

    /// Replaces the JSON file at `rel` by its binary form (`….pb`), after `edit`.
    fn to_binary(run: &Path, rel: &str, edit: impl FnOnce(&mut serde_json::Value)) {
        let bytes = encoded(run, rel, edit);
        let path = run.join(rel);
        std::fs::remove_file(&path).expect("rm");
        std::fs::write(path.with_extension("pb"), bytes).expect("write");
    }

    /// Every record file of the bundle in the binary form.
    fn all_to_binary(run: &Path) {
        for entry in walk(run) {
            let rel = entry
                .strip_prefix(run)
                .expect("inside")
                .to_str()
                .expect("utf-8");
            if rel != "MANIFEST.json" {
                to_binary(run, rel, |_| {});
            }
        }
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).expect("dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
        out
    }

    cases! {
        a_bundle_in_the_binary_form_has_no_problems: |run| { all_to_binary(run); } => [];
        a_bundle_mixing_json_and_binary_files_has_no_problems: |run| {
            to_binary(run, "stage-0/boot.json", |_| {});
            to_binary(run, "orchestrator/events/events-000002.json", |_| {});
        } => [];
        a_record_written_in_both_forms_is_reported_at_the_second_file: |run| {
            let bytes = encoded(run, "stage-0/events/events-000001.json", |_| {});
            std::fs::write(run.join("stage-0/events/events-000001.pb"), bytes).expect("write");
        } => [
            (Layout, "run-7/stage-0/events/events-000001.pb", "holds the same record as `stage-0/events/events-000001.json`"),
        ];
        a_binary_file_that_does_not_decode_is_located_and_its_neighbours_still_read: |run| {
            all_to_binary(run);
            std::fs::write(run.join("stage-0/snapshots/snapshot-000002.pb"), [0x0a, 0xff, 0xff]).expect("write");
        } => [
            (Encoding, "run-7/stage-0/snapshots/snapshot-000002.pb", "not the protobuf of a snapshot record"),
        ];
        a_binary_record_breaking_its_schema_is_located_by_json_pointer: |run| {
            to_binary(run, "stage-0/boot.json", |b| b["boot_sequence"] = "x".into());
        } => [
            (Schema, "run-7/stage-0/boot.pb:0 /boot_sequence", "is not of type"),
        ];
        a_missing_binary_file_is_named_in_the_binary_form: |run| {
            all_to_binary(run);
            std::fs::remove_file(run.join("stage-0/snapshots/snapshot-000001.pb")).expect("rm");
        } => [
            (Manifest, "run-7/MANIFEST.json:0 /nodes/1/snapshots", "manifest says 3 snapshots, found 2"),
            (Layout, "run-7/stage-0/snapshots/snapshot-000001.pb", "missing: `stage-0/snapshots/snapshot-000001.pb`"),
        ];
        a_binary_file_over_its_cap_is_refused_undecoded: |run| {
            std::fs::remove_file(run.join("stage-0/snapshots/snapshot-000003.json")).expect("rm");
            std::fs::write(
                run.join("stage-0/snapshots/snapshot-000003.pb"),
                vec![0u8; diagwire::binary::MAX_BINARY_FILE_BYTES + 1],
            ).expect("write");
        } => [
            (Encoding, "run-7/stage-0/snapshots/snapshot-000003.pb", "larger than the 4194304 bytes a binary record file may have"),
        ];
        a_binary_manifest_is_no_manifest: |run| {
            std::fs::rename(run.join("MANIFEST.json"), run.join("MANIFEST.pb")).expect("mv");
        } => [
            (Layout, "run-7/MANIFEST.pb", "the run directory holds MANIFEST.json"),
            (Manifest, "run-7/MANIFEST.json", "the bundle has no MANIFEST.json"),
        ];
    }

    #[test]
    fn a_binary_bundle_counts_the_same_files_and_records_as_its_json_form() {
        let tmp = tempfile::tempdir().expect("tmp");
        let run = write_clean(tmp.path());
        let json = check_with(&run, &run, Limits::default());
        all_to_binary(&run);
        let binary = check_with(&run, &run, Limits::default());
        assert_eq!((binary.files, binary.records), (json.files, json.records));
        assert_eq!((json.files, json.records), (11, 12));
    }
}

/// A run directory renamed (a downloaded bundle kept under another name) is a note, not a problem:
/// the manifest names the run, and the bundle is otherwise clean.
#[test]
fn a_renamed_run_directory_is_a_note_not_a_problem() {
    let tmp = tempfile::tempdir().expect("tmp");
    let run = write_clean(tmp.path());
    let renamed = tmp.path().join("incident-copy");
    std::fs::rename(&run, &renamed).expect("rename");
    let report = check_with(&renamed, &renamed, Limits::default());
    assert!(report.is_clean(), "{:#?}", report.problems);
    let top = format!("{}/", tmp.path().display());
    let notes: Vec<(String, &str)> = report
        .notes
        .iter()
        .map(|n| {
            let at = n.location.to_string();
            (
                at.strip_prefix(&top).unwrap_or(&at).to_owned(),
                n.message.as_str(),
            )
        })
        .collect();
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert_eq!(notes[0].0, "incident-copy/MANIFEST.json:0 /run_id");
    assert!(
        notes[0]
            .1
            .contains("the run directory is named `incident-copy`, the run is `run-7`"),
        "{}",
        notes[0].1
    );
}
