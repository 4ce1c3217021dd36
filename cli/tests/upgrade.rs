//! The upgrade of the simulator's prod-shape directory into the contract's bundle, as a spec.
//!
//! Each table below is one concern: which directories are recognized, which are refused, what an
//! upgraded bundle holds, and what is listed as not mapped (and where). Every case is one test,
//! named after the behaviour it guards. Every upgrade a case runs is also held to the rules that
//! apply to all of them ([`upgraded`]): it validates clean, its manifest carries the contract
//! version and a `sim` writer and agrees with the files, and it is deterministic.

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use diagwire::bundle::read::Limits;
use diagwire::layout::{self, FileKind, Role};
use diagwire::problem::ReadErrorKind;
use diagwire::validate::Validators;
use diagwire::validate::bundle::{check_bundle, open};
use diagwire::{CONTRACT_VERSION, Location, Problem, ProblemKind, v1};
use diagwire_cli::upgrade::{Upgraded, WRITER_NAME, is_sim_prod_shape, upgrade};
use serde_json::{Value, json};
use tempfile::TempDir;

/// The fixture's stage 0 node (a hex directory name; restarted once).
const STAGE0: &str = "8b0e65c3525583c112232fd83de0f8423b654b3abc53adcf478b228e666ca400";
/// The fixture's stage 1 node (a hex directory name; crashed, no finalize).
const STAGE1: &str = "09fa77f2978b4d814b78a161e4d283dbd19a0e81836e9c0237fc677cc04bceb4";
/// The id derived for the fixture's `orchestrator` directory from the run id and the name. Pinned:
/// the derivation must give the same id on every platform and in every version.
const ORCHESTRATOR: &str = "6f6999d89a9882e003463ffa4e52dc585b7b79ed419606c3a5c6073736333579";

// Inputs.

/// A simulator directory to upgrade, with the temporary directories it lives in.
struct Sim {
    path: PathBuf,
    _keep: Vec<TempDir>,
}

/// `compat-tests/fixtures/sim-prod-shape/n3-basic`: three nodes, a restart, a crash, `sim/` files.
fn fixture() -> Sim {
    Sim {
        path: Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../compat-tests/fixtures/sim-prod-shape/n3-basic"),
        _keep: Vec::new(),
    }
}

/// A simulator prod-shape directory holding a manifest for run `t-run`, node `alpha` (no stage
/// index) with a boot record, and `files` on top (JSON values are written pretty, strings as they
/// are; a file given twice is the later one).
fn sim(files: &[(&str, Value)]) -> Sim {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut all = vec![
        manifest_with_run_id("t-run"),
        (
            "alpha/boot.json",
            json!({"schema_version": 1, "kind": "boot", "stage_index": null, "boot_sequence": 0,
                   "wall_ms": 100, "monotonic_seq": 0, "run_id": "t-run"}),
        ),
    ];
    all.extend(files.iter().cloned());
    for (path, content) in all {
        let p = dir.path().join(path);
        fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        let text = match content {
            Value::String(s) => s,
            v => serde_json::to_string_pretty(&v).expect("JSON"),
        };
        fs::write(p, text).expect("write");
    }
    Sim {
        path: dir.path().to_owned(),
        _keep: vec![dir],
    }
}

impl Sim {
    /// The same directory without one of its files.
    fn without(self, rel: &str) -> Sim {
        fs::remove_file(self.path.join(rel)).expect("remove");
        self
    }
}

/// The simulator's manifest of run `run_id`.
fn manifest_with_run_id(run_id: &str) -> (&'static str, Value) {
    (
        "MANIFEST.json",
        json!({"schema_version": 1, "kind": "manifest", "run_id": run_id, "duration_ms": 1000,
               "node_count": 1, "mutation_count": 0, "origin": "sim"}),
    )
}

/// `alpha/events/000000.json` holding `records`.
fn alpha_events(records: Value) -> (&'static str, Value) {
    (
        "alpha/events/000000.json",
        json!({"schema_version": 1, "kind": "events", "boot_sequence": 0, "records": records}),
    )
}

/// `alpha/snapshots/000000.json` with `trigger` and `body`.
fn alpha_snapshot(trigger: Value, body: Value) -> (&'static str, Value) {
    (
        "alpha/snapshots/000000.json",
        json!({"schema_version": 1, "kind": "snapshot", "snapshot_id": "alpha-0", "boot_sequence": 0,
               "wall_ms": 500, "monotonic_seq": 3, "trigger": trigger, "body": body}),
    )
}

/// A boot record of the simulator for a stage.
fn stage_boot(stage_index: u32) -> Value {
    json!({"schema_version": 1, "kind": "boot", "stage_index": stage_index, "boot_sequence": 0,
           "wall_ms": 0, "monotonic_seq": 0, "run_id": "t-run"})
}

fn empty_dir() -> Sim {
    let dir = tempfile::tempdir().expect("temp dir");
    Sim {
        path: dir.path().to_owned(),
        _keep: vec![dir],
    }
}

fn missing_path() -> Sim {
    let dir = tempfile::tempdir().expect("temp dir");
    Sim {
        path: dir.path().join("missing"),
        _keep: vec![dir],
    }
}

fn a_file() -> Sim {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("MANIFEST.json");
    fs::write(&path, manifest_with_run_id("t-run").1.to_string()).expect("write");
    Sim {
        path,
        _keep: vec![dir],
    }
}

/// A bundle the collector wrote: its records carry neither `schema_version` nor `kind`.
fn collector_bundle() -> Sim {
    let dir = tempfile::tempdir().expect("temp dir");
    let hex = "11".repeat(32);
    fs::write(
        dir.path().join("MANIFEST.json"),
        json!({"run_id": "r", "run_start_collector_ms": 1, "run_end_collector_ms": 2, "finalize_received": false,
               "nodes": [{"node_id_hex": hex, "label": "orchestrator", "role": "orchestrator", "stage_index": null,
                          "boot_recorded": true, "event_batches": 0, "snapshots": 0, "finalize_recorded": false}]})
        .to_string(),
    )
    .expect("write");
    fs::create_dir(dir.path().join("orchestrator")).expect("mkdir");
    fs::write(
        dir.path().join("orchestrator/boot.json"),
        json!({"node_id_hex": hex, "node_id_short": "11111111", "role": "orchestrator", "run_id": "r",
               "process_start_unix_ms": 1, "boot_sequence": 0})
        .to_string(),
    )
    .expect("write");
    Sim {
        path: dir.path().to_owned(),
        _keep: vec![dir],
    }
}

/// A simulator directory whose node directory `beta` and `alpha/finalize.json` are symbolic links
/// to a directory outside it.
#[cfg(unix)]
fn with_symbolic_links() -> Sim {
    let outside = tempfile::tempdir().expect("temp dir");
    fs::write(outside.path().join("secret.json"), "{}").expect("write");
    let mut sim = sim(&[]);
    std::os::unix::fs::symlink(outside.path(), sim.path.join("beta")).expect("symlink");
    std::os::unix::fs::symlink(
        outside.path().join("secret.json"),
        sim.path.join("alpha/finalize.json"),
    )
    .expect("symlink");
    sim._keep.push(outside);
    sim
}

// What holds for every upgrade.

fn validators() -> &'static Validators {
    static VALIDATORS: OnceLock<Validators> = OnceLock::new();
    VALIDATORS.get_or_init(|| Validators::new().expect("the contract's schemas compile"))
}

/// What [`upgraded`] checked, for tests that want a minimum.
struct Checked {
    upgraded: Upgraded,
    /// Records the bundle check read.
    records: usize,
    /// Events files whose every record's `node_id` was compared with its node.
    events_files: usize,
    /// Manifest entries compared with their node's files.
    nodes: usize,
}

/// Upgrades `sim` and checks the rules every upgrade follows: it is deterministic; every file has
/// its place in the layout and no `schema_version` left; the bundle validates clean
/// (`check_bundle`, which also checks the manifest against the files); the manifest names the
/// contract version and a `sim` writer and is the one in `MANIFEST.json`; each manifest entry
/// agrees with its node's files and boot record; every event names its node; every problem is
/// located in the simulator's directory.
#[track_caller]
fn upgraded(sim: &Sim) -> Checked {
    let up = upgrade(&sim.path).expect("the directory upgrades");
    let again = upgrade(&sim.path).expect("the directory upgrades again");
    assert_eq!(up, again, "the upgrade is deterministic");
    let files = &up.contents.files;

    for (path, bytes) in files {
        let role = layout::parse_bundle_path(path).role;
        assert_ne!(role, Role::Unknown, "{path} is outside the layout");
        let text = std::str::from_utf8(bytes).expect("UTF-8");
        assert!(
            !text.contains("\"schema_version\""),
            "{path} still has `schema_version`"
        );
    }

    let out = tempfile::tempdir().expect("temp dir");
    let run_dir = diagwire::bundle::output::write_dir(&up.contents, out.path()).expect("writes");
    let mut reader = open(&run_dir, Limits::default()).expect("opens");
    let report = check_bundle(validators(), &mut reader, &mut |_, _| {});
    assert!(
        report.problems.is_empty(),
        "the upgraded bundle does not validate clean:\n{}",
        lines(&report.problems)
    );
    assert_eq!(report.invalid_records, 0);

    let manifest = &up.manifest;
    assert_eq!(manifest.run_id, up.contents.run_id);
    assert_eq!(manifest.contract_version.as_deref(), Some(CONTRACT_VERSION));
    let writer = manifest
        .writer
        .as_ref()
        .expect("the manifest names its writer");
    assert_eq!(writer.kind, v1::WriterKind::Sim);
    assert_eq!(writer.name, WRITER_NAME);
    assert_eq!(writer.version, env!("CARGO_PKG_VERSION"));
    let in_file: v1::Manifest =
        serde_json::from_slice(&files[layout::MANIFEST]).expect("MANIFEST.json parses");
    assert_eq!(&in_file, manifest, "MANIFEST.json is the returned manifest");

    let mut events_files = 0;
    for node in &manifest.nodes {
        let label = node.label.as_str();
        let count = |kind: FileKind| {
            files
                .keys()
                .filter(|p| {
                    let path = layout::parse_bundle_path(p);
                    path.node.as_deref() == Some(label) && path.role.file_kind() == Some(&kind)
                })
                .count() as u64
        };
        assert_eq!(node.event_batches, count(FileKind::Events), "{label}");
        assert_eq!(node.snapshots, count(FileKind::Snapshot), "{label}");
        let has = |file: &str| files.contains_key(&format!("{label}/{file}"));
        assert_eq!(node.boot_recorded, has("boot.json"), "{label}");
        assert_eq!(node.finalize_recorded, has("finalize.json"), "{label}");
        if node.boot_recorded {
            let boot = json_file(files, &format!("{label}/boot.json"));
            assert_eq!(
                boot["node_id_hex"],
                json!(node.node_id_hex.as_str()),
                "{label}"
            );
            assert_eq!(boot["role"], json!(node.role), "{label}");
            assert_eq!(boot["stage_index"], json!(node.stage_index), "{label}");
        }
        let id = id_bytes(node.node_id_hex.as_str());
        for seq in 1..=node.event_batches {
            let path = layout::bundle_path(label, &Role::Numbered(FileKind::Events, seq));
            let batch = json_file(files, &path);
            let events = batch.as_array().expect("an events file is an array");
            for event in events {
                assert_eq!(event["node_id"], id, "{path}: {event}");
            }
            events_files += 1;
        }
    }
    let batches: u64 = manifest.nodes.iter().map(|n| n.event_batches).sum();
    assert_eq!(
        events_files as u64, batches,
        "every events file was checked"
    );

    for p in &up.problems {
        let file = &p.location.file;
        assert!(
            !file.is_empty() && !file.starts_with('/') && !file.split('/').any(|c| c == ".."),
            "{p}: not a path relative to the simulator's directory"
        );
        assert!(
            fs::symlink_metadata(sim.path.join(file)).is_ok() || file == layout::MANIFEST,
            "{p}: names nothing in the simulator's directory"
        );
    }

    Checked {
        records: report.records,
        events_files,
        nodes: manifest.nodes.len(),
        upgraded: up,
    }
}

fn lines(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(|p| format!("  [{}] {p}", p.kind.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[track_caller]
fn json_file(files: &BTreeMap<String, Vec<u8>>, path: &str) -> Value {
    let Some(bytes) = files.get(path) else {
        panic!(
            "`{path}` not in the bundle: {:?}",
            files.keys().collect::<Vec<_>>()
        )
    };
    serde_json::from_slice(bytes).expect("output files are JSON")
}

/// A hex node id as the contract's byte array.
fn id_bytes(hex: &str) -> Value {
    Value::Array(
        (0..32)
            .map(|i| json!(u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex")))
            .collect(),
    )
}

// Recognition.

#[track_caller]
fn check_recognized(sim: Sim, expected: bool) {
    assert_eq!(is_sim_prod_shape(&sim.path), expected);
}

macro_rules! recognition {
    ($($name:ident: $sim:expr => $expected:expr;)*) => {
        $(#[test] fn $name() { check_recognized($sim, $expected); })*
    };
}

recognition! {
    recognizes_the_simulators_prod_shape_directory: fixture() => true;
    recognizes_simulator_records_without_a_manifest: sim(&[]).without("MANIFEST.json") => true;
    does_not_recognize_a_collector_bundle: collector_bundle() => false;
    does_not_recognize_an_empty_directory: empty_dir() => false;
}

// Refusals.

/// The upgrade of `sim` fails with an error of `kind` whose message contains `says`.
#[track_caller]
fn check_refused(sim: Sim, kind: ErrorKind, says: &str) {
    match upgrade(&sim.path) {
        Ok(up) => panic!(
            "upgraded into run {:?}; expected a refusal",
            up.contents.run_id
        ),
        Err(e) => {
            assert_eq!(e.kind(), kind, "{e}");
            assert!(e.to_string().contains(says), "{e:?} does not say {says:?}");
        }
    }
}

macro_rules! refusals {
    ($($name:ident: $sim:expr => $kind:ident, $says:expr;)*) => {
        $(#[test] fn $name() { check_refused($sim, ErrorKind::$kind, $says); })*
    };
}

refusals! {
    refuses_a_directory_that_is_not_prod_shape:
        empty_dir() => InvalidData, "not a simulator prod-shape directory";
    refuses_a_collector_bundle:
        collector_bundle() => InvalidData, "not a simulator prod-shape directory";
    refuses_a_path_that_does_not_exist: missing_path() => NotFound, "";
    refuses_a_file: a_file() => InvalidData, "not a directory";
    refuses_a_directory_without_a_run_id:
        sim(&[("MANIFEST.json", json!({"schema_version": 1, "kind": "manifest", "origin": "sim"})),
              ("alpha/boot.json", json!({"schema_version": 1, "kind": "boot", "boot_sequence": 0}))])
        => InvalidData, "no run id";
    refuses_a_run_id_with_a_newline:
        sim(&[manifest_with_run_id("t\nrun")]) => InvalidData, r#"run id "t\nrun" cannot name the bundle's directory"#;
    refuses_a_run_id_with_a_control_character:
        sim(&[manifest_with_run_id("t\u{1b}run")]) => InvalidData, "cannot name the bundle's directory";
    refuses_a_run_id_with_a_path_separator:
        sim(&[manifest_with_run_id("t/run")]) => InvalidData, "cannot name the bundle's directory";
    refuses_a_run_id_that_climbs_out:
        sim(&[manifest_with_run_id("..")]) => InvalidData, "cannot name the bundle's directory";
    refuses_an_empty_run_id:
        sim(&[manifest_with_run_id("")]) => InvalidData, "cannot name the bundle's directory";
    refuses_a_run_id_with_a_space:
        sim(&[manifest_with_run_id("t run")]) => InvalidData, "cannot name the bundle's directory";
    refuses_an_unsafe_run_id_from_a_boot_record:
        sim(&[("alpha/boot.json", json!({"schema_version": 1, "kind": "boot", "boot_sequence": 0,
                                          "wall_ms": 0, "run_id": "t\nrun"}))])
            .without("MANIFEST.json")
        => InvalidData, "cannot name the bundle's directory";
}

// What the upgraded bundle holds.

/// One expectation about the upgraded bundle.
enum Expect {
    /// The bundle's run id.
    RunId(&'static str),
    /// The bundle holds exactly these files.
    Files(&'static [&'static str]),
    /// What is at a JSON pointer of a file.
    At(&'static str, &'static str, Want),
}

enum Want {
    /// This value.
    Is(Value),
    /// Nothing.
    Absent,
    /// The same value as at a pointer of another file.
    SameAs(&'static str, &'static str),
    /// A value with a property, described.
    Satisfies(&'static str, fn(&Value) -> bool),
}

fn at(file: &'static str, pointer: &'static str, value: impl Into<Value>) -> Expect {
    Expect::At(file, pointer, Want::Is(value.into()))
}

fn absent(file: &'static str, pointer: &'static str) -> Expect {
    Expect::At(file, pointer, Want::Absent)
}

fn same_as(
    file: &'static str,
    pointer: &'static str,
    other: &'static str,
    other_pointer: &'static str,
) -> Expect {
    Expect::At(file, pointer, Want::SameAs(other, other_pointer))
}

fn satisfies(
    file: &'static str,
    pointer: &'static str,
    what: &'static str,
    test: fn(&Value) -> bool,
) -> Expect {
    Expect::At(file, pointer, Want::Satisfies(what, test))
}

#[track_caller]
fn check_bundle_holds(sim: Sim, expected: &[Expect]) {
    let up = upgraded(&sim).upgraded;
    let files = &up.contents.files;
    for expect in expected {
        match expect {
            Expect::RunId(run_id) => assert_eq!(up.contents.run_id, *run_id),
            Expect::Files(list) => {
                let paths: Vec<&str> = files.keys().map(String::as_str).collect();
                assert_eq!(paths, *list);
            }
            Expect::At(file, pointer, want) => {
                let value = json_file(files, file);
                let got = value.pointer(pointer);
                match want {
                    Want::Is(v) => assert_eq!(got, Some(v), "{file} {pointer}"),
                    Want::Absent => assert_eq!(got, None, "{file} {pointer}"),
                    Want::SameAs(other, other_pointer) => {
                        let other_value = json_file(files, other);
                        let expected = other_value.pointer(other_pointer);
                        assert!(expected.is_some(), "{other} {other_pointer} is absent");
                        assert_eq!(got, expected, "{file} {pointer} vs {other} {other_pointer}");
                    }
                    Want::Satisfies(what, test) => assert!(
                        got.is_some_and(test),
                        "{file} {pointer} is not {what}: {got:?}"
                    ),
                }
            }
        }
    }
}

macro_rules! bundle_cases {
    ($($(#[$meta:meta])* $name:ident: $sim:expr => [$($expect:expr),* $(,)?];)*) => {
        $($(#[$meta])* #[test] fn $name() { check_bundle_holds($sim, &[$($expect),*]); })*
    };
}

fn is_lowercase_hex_id(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        s.len() == 64
            && s.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    })
}

/// Every manifest entry is labelled `stage-0-<first 8 id chars>`, and there are two.
fn two_stage_0_labels_with_their_id_prefix(nodes: &Value) -> bool {
    let nodes = nodes.as_array().map(Vec::as_slice).unwrap_or_default();
    nodes.len() == 2
        && nodes.iter().all(|n| {
            let short = n["node_id_hex"].as_str().unwrap_or_default().get(..8);
            short.is_some_and(|s| n["label"] == json!(format!("stage-0-{s}")))
        })
}

/// The only manifest entry is a node without a boot record, labelled by its id.
fn one_node_labelled_by_its_id(nodes: &Value) -> bool {
    match nodes.as_array().map(Vec::as_slice) {
        Some([n]) => {
            let short = n["node_id_hex"].as_str().unwrap_or_default().get(..8);
            n["role"].is_null()
                && !n["boot_recorded"].as_bool().unwrap_or(true)
                && short.is_some_and(|s| n["label"] == json!(format!("node-{s}")))
        }
        _ => false,
    }
}

const ORCH_EVENTS: &str = "orchestrator/events/events-000001.json";
const STAGE0_EVENTS_BOOT1: &str = "stage-0/events/events-000002.json";
const STAGE0_EVENTS_BOOT0: &str = "stage-0/events/events-000001.json";
const STAGE1_EVENTS: &str = "stage-1/events/events-000001.json";
const ALPHA_EVENTS: &str = "alpha/events/events-000001.json";
const ALPHA_SNAPSHOT: &str = "alpha/snapshots/snapshot-000001.json";

bundle_cases! {
    // The bundle as a whole.
    run_id_names_the_bundle: fixture() => [Expect::RunId("sim-n3-basic")];
    run_id_comes_from_a_boot_record_without_a_manifest:
        sim(&[]).without("MANIFEST.json") => [Expect::RunId("t-run"), at("MANIFEST.json", "/run_id", "t-run")];
    writes_the_collector_layout: fixture() => [Expect::Files(&[
        "MANIFEST.json",
        "orchestrator/boot.json",
        "orchestrator/events/events-000001.json",
        "orchestrator/finalize.json",
        "orchestrator/snapshots/snapshot-000001.json",
        "orchestrator/snapshots/snapshot-000002.json",
        "stage-0/boot.json",
        "stage-0/boot/boot-000001.json",
        "stage-0/events/events-000001.json",
        "stage-0/events/events-000002.json",
        "stage-0/finalize.json",
        "stage-0/finalize/finalize-000001.json",
        "stage-0/snapshots/snapshot-000001.json",
        "stage-0/snapshots/snapshot-000002.json",
        "stage-1/boot.json",
        "stage-1/events/events-000001.json",
        "stage-1/snapshots/snapshot-000001.json",
    ])];
    manifest_lists_the_nodes_by_label_and_what_they_recorded: fixture() => [
        at("MANIFEST.json", "/run_id", "sim-n3-basic"),
        at("MANIFEST.json", "/finalize_received", true),
        at("MANIFEST.json", "/nodes/0/label", "orchestrator"),
        at("MANIFEST.json", "/nodes/1/label", "stage-0"),
        at("MANIFEST.json", "/nodes/2/label", "stage-1"),
        at("MANIFEST.json", "/nodes/1/event_batches", 2),
        at("MANIFEST.json", "/nodes/1/snapshots", 2),
        at("MANIFEST.json", "/nodes/2/finalize_recorded", false), // stage 1 crashed
        at("MANIFEST.json", "/run_start_collector_ms", Value::Null), // there was no collector
    ];
    manifest_names_the_contract_version_and_the_sim_writer: fixture() => [
        at("MANIFEST.json", "/contract_version", CONTRACT_VERSION),
        at("MANIFEST.json", "/writer/kind", "sim"),
        at("MANIFEST.json", "/writer/name", WRITER_NAME),
        at("MANIFEST.json", "/writer/version", env!("CARGO_PKG_VERSION")),
    ];
    manifest_keeps_the_simulators_fields_the_contract_lacks: fixture() => [
        at("MANIFEST.json", "/duration_ms", 60000),
        at("MANIFEST.json", "/mutation_count", 2),
        at("MANIFEST.json", "/origin", "sim"),
        absent("MANIFEST.json", "/node_count"), // what `nodes` lists
    ];
    manifest_derives_the_fields_the_contract_has: sim(&[(
        "MANIFEST.json",
        json!({"schema_version": 1, "kind": "manifest", "run_id": "t-run", "origin": "sim",
               "finalize_received": true, "nodes": []}),
    )]) => [
        at("MANIFEST.json", "/finalize_received", false),
        at("MANIFEST.json", "/nodes/0/label", "alpha"),
    ];

    // Files outside the layout.
    simulator_only_files_are_not_copied: fixture() => [
        absent("MANIFEST.json", "/nodes/3"), // neither `sim/` nor `detector/` is a node
    ];
    a_stray_file_is_not_copied: sim(&[
        ("alpha/notes.txt", json!("hello")),
        ("README.md", json!("# run")),
    ]) => [Expect::Files(&["MANIFEST.json", "alpha/boot.json"])];
    a_file_that_is_not_json_is_skipped:
        sim(&[("alpha/events/000000.json", json!("{\"records\": [truncated"))]) => [
            Expect::Files(&["MANIFEST.json", "alpha/boot.json"]),
            at("MANIFEST.json", "/nodes/0/event_batches", 0),
        ];
    #[cfg(unix)]
    symbolic_links_are_not_followed: with_symbolic_links() => [
        Expect::Files(&["MANIFEST.json", "alpha/boot.json"]),
    ];

    // Node ids and labels.
    hex_directory_name_becomes_the_node_id: fixture() => [
        at("stage-0/boot.json", "/node_id_hex", STAGE0),
        at("stage-0/boot.json", "/node_id_short", &STAGE0[..8]),
    ];
    other_directory_name_gets_a_stable_derived_node_id: fixture() => [
        satisfies("orchestrator/boot.json", "/node_id_hex", "a lowercase 64-character hex id", is_lowercase_hex_id),
        at("orchestrator/boot.json", "/node_id_hex", ORCHESTRATOR),
    ];
    colliding_labels_get_the_id_prefix: sim(&[
        ("alpha/boot.json", stage_boot(0)),
        ("beta/boot.json", stage_boot(0)),
    ]) => [satisfies("MANIFEST.json", "/nodes", "two nodes labelled stage-0-<id prefix>", two_stage_0_labels_with_their_id_prefix)];
    an_unsafe_directory_name_makes_a_safe_label: sim(&[
        ("my node/boot.json", json!({"schema_version": 1, "kind": "boot", "boot_sequence": 0, "wall_ms": 0})),
    ]) => [
        at("my_node/boot.json", "/role", "my node"),
        at("MANIFEST.json", "/nodes/1/label", "my_node"),
    ];
    a_node_without_a_boot_record_is_labelled_by_its_id: sim(&[
        ("gamma/snapshots/000000.json", json!({"schema_version": 1, "kind": "snapshot", "snapshot_id": "g-0",
                                               "wall_ms": 500, "monotonic_seq": 3, "trigger": "Periodic", "body": {}})),
    ]).without("alpha/boot.json") => [
        satisfies("MANIFEST.json", "/nodes", "one node without a boot record, labelled node-<id prefix>", one_node_labelled_by_its_id),
    ];

    // Boot records.
    boot_becomes_an_identity_with_host_fields_null: fixture() => [
        at("orchestrator/boot.json", "/role", "orchestrator"), // no stage index: the directory name
        at("orchestrator/boot.json", "/stage_index", Value::Null),
        at("orchestrator/boot.json", "/run_id", "sim-n3-basic"),
        at("orchestrator/boot.json", "/process_start_unix_ms", 0), // from `wall_ms`
        at("orchestrator/boot.json", "/boot_sequence", 0),
        at("orchestrator/boot.json", "/stage_count", Value::Null),
        at("orchestrator/boot.json", "/vastai_contract_id", Value::Null),
        at("orchestrator/boot.json", "/host_ip_public", Value::Null),
        at("orchestrator/boot.json", "/host_country", Value::Null),
        at("orchestrator/boot.json", "/datacenter_id", Value::Null),
        at("orchestrator/boot.json", "/hostname", Value::Null),
        at("orchestrator/boot.json", "/container_id", Value::Null),
        at("orchestrator/boot.json", "/binary_version", Value::Null),
        at("orchestrator/boot.json", "/git_sha", Value::Null),
        at("orchestrator/boot.json", "/iroh_version", Value::Null),
        at("orchestrator/boot.json", "/home_relay_url_at_boot", Value::Null),
    ];
    stage_index_makes_the_role_stage_and_the_label_stage_n: fixture() => [
        at("stage-1/boot.json", "/role", "stage"),
        at("stage-1/boot.json", "/stage_index", 1),
        at("stage-1/boot.json", "/node_id_hex", STAGE1),
    ];
    latest_boot_is_boot_json_and_earlier_boots_go_under_boot: fixture() => [
        at("stage-0/boot.json", "/boot_sequence", 1),
        at("stage-0/boot.json", "/process_start_unix_ms", 30000),
        at("stage-0/boot/boot-000001.json", "/boot_sequence", 0),
        at("stage-0/boot/boot-000001.json", "/process_start_unix_ms", 0),
    ];
    boot_keys_without_a_place_are_kept: fixture() => [
        at("orchestrator/boot.json", "/monotonic_seq", 0),
    ];
    a_boot_record_cannot_choose_its_node_id: sim(&[(
        "alpha/boot.json",
        json!({"schema_version": 1, "kind": "boot", "boot_sequence": 0, "wall_ms": 0,
               "node_id_hex": "22".repeat(32), "hostname": "sim-host"}),
    )]) => [
        same_as("alpha/boot.json", "/node_id_hex", "MANIFEST.json", "/nodes/0/node_id_hex"),
        at("alpha/boot.json", "/hostname", "sim-host"), // a field the identity has: the simulator's value
    ];

    // Events.
    variant_becomes_type: fixture() => [
        at(ORCH_EVENTS, "/1/monotonic_seq", 2),
        at(ORCH_EVENTS, "/1/wall_ms", 1000),
        at(ORCH_EVENTS, "/1/type", "DialStarted"),
        absent(ORCH_EVENTS, "/1/variant"),
        at(ORCH_EVENTS, "/1/attempt", 1),
        at(ORCH_EVENTS, "/1/timeout_ms", 10000),
    ];
    one_events_file_per_boot: fixture() => [
        at(STAGE0_EVENTS_BOOT0, "/0/wall_ms", 0),
        at(STAGE0_EVENTS_BOOT1, "/0/wall_ms", 30000),
    ];
    custom_user_kind_becomes_kind_with_the_other_keys_under_fields: fixture() => [
        at(ORCH_EVENTS, "/7/monotonic_seq", 8),
        at(ORCH_EVENTS, "/7/type", "Custom"),
        at(ORCH_EVENTS, "/7/kind", "partition"),
        at(ORCH_EVENTS, "/7/fields", json!({"edges": [["orchestrator", STAGE1]]})),
        absent(ORCH_EVENTS, "/7/user_kind"),
        absent(ORCH_EVENTS, "/7/edges"),
        at(STAGE1_EVENTS, "/0/kind", "stage_lifecycle"),
        at(STAGE1_EVENTS, "/0/fields", json!({"from": "Cold", "to": "Registering"})),
    ];
    hex_peer_ids_become_node_id_byte_arrays: fixture() => [
        at(ORCH_EVENTS, "/9/monotonic_seq", 10),
        at(ORCH_EVENTS, "/9/type", "SwimTransition"),
        at(ORCH_EVENTS, "/9/peer", id_bytes(STAGE1)),
        at(ORCH_EVENTS, "/9/to", "Dead"),
        at(ORCH_EVENTS, "/0/peer", Value::Null), // a null peer stays null
    ];
    peer_named_by_directory_becomes_that_nodes_id: fixture() => [
        at(STAGE0_EVENTS_BOOT0, "/3/type", "MessageReceived"),
        at(STAGE0_EVENTS_BOOT0, "/3/peer", id_bytes(ORCHESTRATOR)),
        same_as(STAGE0_EVENTS_BOOT0, "/3/peer", ORCH_EVENTS, "/0/node_id"),
    ];
    envelope_node_id_is_the_emitting_node: fixture() => [
        at(STAGE0_EVENTS_BOOT0, "/0/node_id", id_bytes(STAGE0)),
        at(STAGE1_EVENTS, "/0/node_id", id_bytes(STAGE1)),
        at(ORCH_EVENTS, "/0/node_id", id_bytes(ORCHESTRATOR)),
    ];
    register_name_fields_take_the_contracts_names: fixture() => [
        at(STAGE1_EVENTS, "/1/kind", "register_name"),
        at(STAGE1_EVENTS, "/1/fields", json!({
            "name": "pp-stage-1",
            "actor_addr_hex": "4fa0dbaab5c941be66f299a121e3391c26ac24373babff06fe9aee97ae42f2fa",
            "our_node_id_hex": STAGE1,
            "wall_ms": 0,
            "stage_index": 1,
        })),
    ];
    event_that_does_not_fit_its_type_is_kept_as_a_sim_custom_event: fixture() => [
        at(ORCH_EVENTS, "/5/monotonic_seq", 6),
        at(ORCH_EVENTS, "/5/type", "Custom"),
        at(ORCH_EVENTS, "/5/kind", "sim.SwimMetadataSent"),
        at(ORCH_EVENTS, "/5/fields", json!({"version": 1, "payload_hash": "0x9f3c2a1b0e4d5f60"})),
    ];
    unknown_event_type_is_kept: sim(&[alpha_events(json!([
        {"variant": "QuicPathValidated", "wall_ms": 200, "monotonic_seq": 1, "path": "direct"}
    ]))]) => [
        at(ALPHA_EVENTS, "/0/type", "QuicPathValidated"),
        at(ALPHA_EVENTS, "/0/path", "direct"),
    ];
    event_without_envelope_fields_is_dropped: sim(&[alpha_events(json!([
        {"variant": "ConnectionCacheMiss", "monotonic_seq": 1, "peer": "alpha"},
        {"variant": "ConnectionCacheMiss", "wall_ms": 300, "monotonic_seq": 2, "peer": "alpha"}
    ]))]) => [
        at(ALPHA_EVENTS, "/0/monotonic_seq", 2),
        absent(ALPHA_EVENTS, "/1"),
    ];
    event_keys_without_a_place_are_kept: sim(&[alpha_events(json!([
        {"variant": "ConnectionCacheMiss", "wall_ms": 300, "monotonic_seq": 1, "peer": "alpha",
         "generation": 4, "reason": "first-dial"}
    ]))]) => [
        at(ALPHA_EVENTS, "/0/type", "ConnectionCacheMiss"),
        at(ALPHA_EVENTS, "/0/generation", 4),
        at(ALPHA_EVENTS, "/0/reason", "first-dial"),
    ];
    event_keys_that_collide_with_the_envelope_are_dropped: sim(&[alpha_events(json!([
        {"variant": "ConnectionCacheMiss", "wall_ms": 300, "monotonic_seq": 1, "peer": "alpha",
         "node_id": "someone-else"}
    ]))]) => [
        same_as(ALPHA_EVENTS, "/0/node_id", ALPHA_EVENTS, "/0/peer"), // its own id, named by directory
    ];

    // Snapshots.
    snapshot_embeds_the_identity_of_its_boot: fixture() => [
        same_as("stage-0/snapshots/snapshot-000001.json", "/identity", "stage-0/boot/boot-000001.json", ""),
        same_as("stage-0/snapshots/snapshot-000002.json", "/identity", "stage-0/boot.json", ""),
        at("stage-0/snapshots/snapshot-000002.json", "/snapshot_id", format!("{}-1", &STAGE0[..8])),
        at("stage-0/snapshots/snapshot-000002.json", "/run_id", "sim-n3-basic"),
        absent("stage-0/snapshots/snapshot-000002.json", "/boot_sequence"), // the identity carries it
    ];
    string_trigger_becomes_the_contracts_trigger: fixture() => [
        at("orchestrator/snapshots/snapshot-000001.json", "/trigger", json!({"kind": "Periodic"})),
        at("orchestrator/snapshots/snapshot-000002.json", "/trigger", json!({"kind": "OnDemand"})),
    ];
    external_form_trigger_becomes_the_contracts_trigger:
        sim(&[alpha_snapshot(json!({"Transition": "seq-3"}), json!({}))]) => [
            at(ALPHA_SNAPSHOT, "/trigger", json!({"kind": "Transition", "data": "seq-3"})),
        ];
    unknown_trigger_is_kept_as_an_unknown_kind:
        sim(&[alpha_snapshot(json!("warmup"), json!({}))]) => [
            at(ALPHA_SNAPSHOT, "/trigger", json!({"kind": "warmup"})),
        ];
    body_block_that_fits_is_kept: fixture() => [
        // null values are absent values
        at("stage-1/snapshots/snapshot-000001.json", "/body/process", json!({"captured_at_ms": 5000})),
    ];
    host_network_fields_move_under_network: fixture() => [
        at("orchestrator/snapshots/snapshot-000001.json", "/body/host",
           json!({"network": {"ipv6_enabled": false, "refreshed_at_ms": 5000}, "scraped_at_ms": 5000})),
    ];
    body_block_that_does_not_fit_is_dropped: sim(&[alpha_snapshot(
        json!("Periodic"),
        json!({"process": {"rss_bytes": "a lot", "captured_at_ms": 500}, "probes": {"scraped_at_ms": 500}}),
    )]) => [
        absent(ALPHA_SNAPSHOT, "/body/process"),
        at(ALPHA_SNAPSHOT, "/body/probes", json!({"scraped_at_ms": 500})),
    ];
    missing_reachability_is_written_empty: fixture() => [
        at("orchestrator/snapshots/snapshot-000001.json", "/body/reachability", json!([])),
    ];
    a_snapshot_of_a_node_without_a_boot_record_embeds_a_placeholder_identity: sim(&[
        alpha_snapshot(json!("Periodic"), json!({})),
    ]).without("alpha/boot.json") => [
        satisfies("MANIFEST.json", "/nodes", "one node without a boot record, labelled node-<id prefix>", one_node_labelled_by_its_id),
        at("MANIFEST.json", "/nodes/0/snapshots", 1),
    ];

    // Finalize records.
    shutdown_reason_becomes_exit_reason: fixture() => [
        at("orchestrator/finalize.json", "/exit_reason", "end_of_run"),
        absent("orchestrator/finalize.json", "/shutdown_reason"),
    ];
    latest_finalize_is_finalize_json_and_earlier_go_under_finalize: fixture() => [
        at("stage-0/finalize.json", "/exit_reason", "end_of_run"),
        at("stage-0/finalize/finalize-000001.json", "/exit_reason", "restart"),
    ];
    finalize_keys_without_a_place_are_kept: fixture() => [
        at("orchestrator/finalize.json", "/wall_ms", 60000),
        at("orchestrator/finalize.json", "/boot_sequence", 0),
    ];
}

/// The snapshot of a node without a boot record embeds an identity naming the node, started at 0.
#[test]
fn a_placeholder_identity_names_the_node_and_starts_at_zero() {
    let sim = sim(&[alpha_snapshot(json!("Periodic"), json!({}))]).without("alpha/boot.json");
    let up = upgraded(&sim).upgraded;
    let node = &up.manifest.nodes[0];
    let path = layout::bundle_path(&node.label, &Role::Numbered(FileKind::Snapshot, 1));
    let snapshot = json_file(&up.contents.files, &path);
    assert_eq!(
        snapshot["identity"]["node_id_hex"],
        node.node_id_hex.as_str()
    );
    assert_eq!(snapshot["identity"]["role"], "alpha", "the directory name");
    assert_eq!(snapshot["identity"]["process_start_unix_ms"], 0);
}

/// The fixture exercises every record kind the upgrade writes: the checks that hold for every
/// upgrade read all of it.
#[test]
fn every_fixture_record_is_checked() {
    let checked = upgraded(&fixture());
    assert_eq!(checked.nodes, 3);
    assert_eq!(checked.events_files, 4);
    assert_eq!(checked.upgraded.contents.files.len(), 17);
    assert!(
        checked.records >= 38,
        "only {} records checked",
        checked.records
    );
}

// What is listed as not mapped.

/// One expectation about the list of what could not be mapped.
enum Item {
    /// A problem of this kind at this location whose message says each of these.
    Listed(ProblemKind, Location, &'static [&'static str]),
    /// No problem about this file says this.
    NotListed(&'static str, &'static str),
}

fn listed(kind: ProblemKind, location: Location, says: &'static [&'static str]) -> Item {
    Item::Listed(kind, location, says)
}

/// A file as a whole (or a directory).
fn file(path: &str) -> Location {
    Location::file(path)
}

/// A key of the one record of a file, or (`""`) the record itself.
fn record(path: &str, pointer: &str) -> Location {
    Location::record(path, 0, pointer)
}

/// Record `index` of an events file (an entry of its `records`), at a pointer into that record.
fn event(path: &str, index: usize, pointer: &str) -> Location {
    Location::record(path, index, pointer)
}

/// A key of an events file's envelope: a pointer into the file, no record.
fn envelope(path: &str, pointer: &str) -> Location {
    Location::at(path, None, pointer)
}

#[track_caller]
fn check_listed(sim: Sim, expected: &[Item]) {
    let problems = upgraded(&sim).upgraded.problems;
    for item in expected {
        match item {
            Item::Listed(kind, location, says) => {
                let found = problems.iter().any(|p| {
                    p.kind == *kind
                        && p.location == *location
                        && says.iter().all(|s| p.message.contains(s))
                });
                let near: Vec<Problem> = problems
                    .iter()
                    .filter(|p| p.location.file == location.file)
                    .cloned()
                    .collect();
                assert!(
                    found,
                    "no [{}] problem at {location:?} saying {says:?}; listed for that file:\n{}",
                    kind.as_str(),
                    lines(&near)
                );
            }
            Item::NotListed(file, says) => {
                let wrong: Vec<Problem> = problems
                    .iter()
                    .filter(|p| p.location.file == *file && p.message.contains(says))
                    .cloned()
                    .collect();
                assert!(wrong.is_empty(), "listed:\n{}", lines(&wrong));
            }
        }
    }
}

macro_rules! listed_cases {
    ($($(#[$meta:meta])* $name:ident: $sim:expr => [$($item:expr),* $(,)?];)*) => {
        $($(#[$meta])* #[test] fn $name() { check_listed($sim, &[$($item),*]); })*
    };
}

use ProblemKind::{Encoding, Layout, Manifest, Read, Schema, Shape, Unmapped};

const ORCH_SIM_EVENTS: &str = "orchestrator/events/000000.json";
const ALPHA_SIM_EVENTS: &str = "alpha/events/000000.json";
const ALPHA_SIM_SNAPSHOT: &str = "alpha/snapshots/000000.json";

listed_cases! {
    // Files outside the contract.
    lists_each_simulator_only_file: fixture() => [
        listed(Unmapped, file("sim/seed"), &["the simulator's run seed (42)", "not copied"]),
        listed(Unmapped, file("sim/spec.toml"), &["topology spec", "not copied"]),
        listed(Unmapped, file("sim/links_applied.json"), &["(2 entries)", "not copied"]),
        listed(Unmapped, file("sim/mutations.log"), &["mutation log (2 entries)", "not copied"]),
        listed(Unmapped, file("detector/verdicts.json"), &["the detector's verdicts (2 entries)", "not copied"]),
    ];
    lists_a_stray_file: sim(&[
        ("alpha/notes.txt", json!("hello")),
        ("README.md", json!("# run")),
    ]) => [
        listed(Layout, file("alpha/notes.txt"), &["not copied"]),
        listed(Layout, file("README.md"), &["not copied"]),
    ];
    lists_a_file_that_is_not_json:
        sim(&[("alpha/events/000000.json", json!("{\"records\": [truncated"))]) => [
            listed(Encoding, file(ALPHA_SIM_EVENTS), &["not JSON", "skipped"]),
        ];
    lists_an_events_file_without_records:
        sim(&[("alpha/events/000000.json", json!({"schema_version": 1, "kind": "events"}))]) => [
            listed(Shape, file(ALPHA_SIM_EVENTS), &["without a `records` array"]),
        ];
    #[cfg(unix)]
    lists_symbolic_links: with_symbolic_links() => [
        listed(Read(ReadErrorKind::Link), file("beta"), &["symbolic link", "not followed"]),
        listed(Read(ReadErrorKind::Link), file("alpha/finalize.json"), &["symbolic link", "not followed"]),
    ];

    // Keys the contract does not have.
    lists_the_envelope_keys_it_drops: fixture() => [
        listed(Unmapped, record("MANIFEST.json", "/schema_version"), &["`schema_version` (1) dropped"]),
        listed(Unmapped, record("MANIFEST.json", "/kind"), &["`kind` (\"manifest\") dropped"]),
        listed(Unmapped, record("orchestrator/boot.json", "/schema_version"), &["dropped"]),
        listed(Unmapped, record("orchestrator/boot.json", "/kind"), &["dropped"]),
        listed(Unmapped, envelope(ORCH_SIM_EVENTS, "/schema_version"), &["dropped"]),
        listed(Unmapped, envelope(ORCH_SIM_EVENTS, "/kind"), &["dropped"]),
        listed(Unmapped, record("orchestrator/snapshots/000000.json", "/schema_version"), &["dropped"]),
        listed(Unmapped, record("orchestrator/finalize.json", "/kind"), &["dropped"]),
    ];
    lists_the_events_envelope_keys_it_drops: fixture() => [
        listed(Unmapped, envelope(ORCH_SIM_EVENTS, "/boot_sequence"), &["`boot_sequence` (0) of the events envelope dropped"]),
    ];
    lists_manifest_fields_the_contract_lacks: fixture() => [
        listed(Unmapped, record("MANIFEST.json", "/duration_ms"), &["(60000)", "kept as an unknown key"]),
        listed(Unmapped, record("MANIFEST.json", "/mutation_count"), &["kept as an unknown key"]),
        listed(Unmapped, record("MANIFEST.json", "/origin"), &["kept as an unknown key"]),
    ];
    lists_boot_keys_without_a_place: fixture() => [
        listed(Unmapped, record("orchestrator/boot.json", "/monotonic_seq"), &["key `/monotonic_seq` (0)", "kept as an unknown key"]),
    ];
    lists_finalize_keys_without_a_place: fixture() => [
        listed(Unmapped, record("orchestrator/finalize.json", "/boot_sequence"), &["kept as an unknown key"]),
        listed(Unmapped, record("orchestrator/finalize.json", "/monotonic_seq"), &["kept as an unknown key"]),
        listed(Unmapped, record("orchestrator/finalize.json", "/run_id"), &["kept as an unknown key"]),
        listed(Unmapped, record("orchestrator/finalize.json", "/wall_ms"), &["kept as an unknown key"]),
    ];
    lists_event_keys_without_a_place: sim(&[alpha_events(json!([
        {"variant": "ConnectionCacheMiss", "wall_ms": 300, "monotonic_seq": 1, "peer": "alpha",
         "generation": 4, "reason": "first-dial"}
    ]))]) => [
        listed(Unmapped, event(ALPHA_SIM_EVENTS, 0, "/generation"), &["key `/generation` (4)", "`ConnectionCacheMiss` event"]),
        listed(Unmapped, event(ALPHA_SIM_EVENTS, 0, "/reason"), &["kept as an unknown key"]),
    ];
    lists_event_keys_that_collide_with_the_envelope: sim(&[alpha_events(json!([
        {"variant": "ConnectionCacheMiss", "wall_ms": 300, "monotonic_seq": 1, "peer": "alpha",
         "node_id": "someone-else"}
    ]))]) => [
        listed(Unmapped, event(ALPHA_SIM_EVENTS, 0, "/node_id"), &["collides with the contract's envelope", "dropped"]),
    ];

    // The manifest.
    lists_a_manifest_field_it_derives_instead: sim(&[(
        "MANIFEST.json",
        json!({"schema_version": 1, "kind": "manifest", "run_id": "t-run", "origin": "sim",
               "finalize_received": true}),
    )]) => [
        listed(Manifest, record("MANIFEST.json", "/finalize_received"), &["(true) replaced", "derives it from the files"]),
    ];
    lists_a_node_count_that_disagrees_with_the_directories: sim(&[(
        "MANIFEST.json",
        json!({"schema_version": 1, "kind": "manifest", "run_id": "t-run", "origin": "sim", "node_count": 5}),
    )]) => [
        listed(Manifest, record("MANIFEST.json", "/node_count"), &["`node_count` (5) disagrees with the 1 node directories"]),
    ];
    lists_a_missing_manifest: sim(&[]).without("MANIFEST.json") => [
        listed(Manifest, file("MANIFEST.json"), &["no readable manifest", "derived from the files"]),
    ];

    // Node ids and labels.
    does_not_list_a_hex_directory_name: fixture() => [
        Item::NotListed(STAGE0, "derived"),
    ];
    lists_a_derived_node_id: fixture() => [
        listed(Layout, file("orchestrator"), &[concat!("derived from the run id and the name: ",
            "6f6999d89a9882e003463ffa4e52dc585b7b79ed419606c3a5c6073736333579")]),
    ];
    lists_a_label_made_safe_under_the_directory_name: sim(&[
        ("my node/boot.json", json!({"schema_version": 1, "kind": "boot", "boot_sequence": 0, "wall_ms": 0})),
    ]) => [
        listed(Layout, file("my node"), &["\"my node\" is not a safe directory name", "\"my_node\""]),
    ];
    lists_a_node_id_a_boot_record_names: sim(&[(
        "alpha/boot.json",
        json!({"schema_version": 1, "kind": "boot", "boot_sequence": 0, "wall_ms": 0,
               "node_id_hex": "22".repeat(32)}),
    )]) => [
        listed(Unmapped, record("alpha/boot.json", "/node_id_hex"), &["replaced", "comes from its directory"]),
    ];
    lists_a_node_without_a_boot_record: sim(&[
        alpha_snapshot(json!("Periodic"), json!({})),
    ]).without("alpha/boot.json") => [
        listed(Layout, file("alpha"), &["no boot record", "`process_start_unix_ms` 0"]),
    ];

    // Boot records.
    lists_a_boot_value_that_does_not_fit: sim(&[(
        "alpha/boot.json",
        json!({"schema_version": 1, "kind": "boot", "boot_sequence": 0, "wall_ms": 0, "hostname": 7}),
    )]) => [
        listed(Schema, record("alpha/boot.json", "/hostname"), &["`hostname` 7 does not fit", "dropped"]),
    ];
    lists_a_boot_record_without_a_boot_sequence: sim(&[(
        "alpha/boot.json",
        json!({"schema_version": 1, "kind": "boot", "wall_ms": 0, "run_id": "t-run"}),
    )]) => [
        listed(Shape, record("alpha/boot.json", "/boot_sequence"), &["no usable `boot_sequence`; written as 0"]),
    ];

    // Events.
    lists_an_event_that_does_not_fit_its_type: fixture() => [
        listed(Schema, event(ORCH_SIM_EVENTS, 5, ""), &["/payload_hash", "sim.SwimMetadataSent"]),
    ];
    lists_an_unknown_event_type: sim(&[alpha_events(json!([
        {"variant": "QuicPathValidated", "wall_ms": 200, "monotonic_seq": 1, "path": "direct"}
    ]))]) => [
        listed(Unmapped, event(ALPHA_SIM_EVENTS, 0, "/variant"), &["`QuicPathValidated` is unknown to the contract"]),
    ];
    lists_an_event_without_envelope_fields: sim(&[alpha_events(json!([
        {"variant": "ConnectionCacheMiss", "monotonic_seq": 1, "peer": "alpha"},
        {"variant": "ConnectionCacheMiss", "wall_ms": 300, "monotonic_seq": 2, "peer": "alpha"}
    ]))]) => [
        listed(Shape, event(ALPHA_SIM_EVENTS, 0, ""), &["without an integer `wall_ms`", "dropped"]),
    ];

    // Snapshots.
    lists_an_unknown_trigger: sim(&[alpha_snapshot(json!("warmup"), json!({}))]) => [
        listed(Unmapped, record(ALPHA_SIM_SNAPSHOT, "/trigger"), &["unknown trigger kind `warmup`"]),
    ];
    lists_a_trigger_of_a_form_the_contract_does_not_know: sim(&[alpha_snapshot(json!(7), json!({}))]) => [
        listed(Unmapped, record(ALPHA_SIM_SNAPSHOT, "/trigger"), &["trigger 7 is not a form the contract knows", "`sim.trigger`"]),
    ];
    does_not_list_a_body_block_that_fits: fixture() => [
        Item::NotListed("09fa77f2978b4d814b78a161e4d283dbd19a0e81836e9c0237fc677cc04bceb4/snapshots/000000.json", "body block"),
    ];
    lists_a_body_block_that_does_not_fit: sim(&[alpha_snapshot(
        json!("Periodic"),
        json!({"process": {"rss_bytes": "a lot", "captured_at_ms": 500}, "probes": {"scraped_at_ms": 500}}),
    )]) => [
        listed(Schema, record(ALPHA_SIM_SNAPSHOT, "/body/process"), &["body block `process` does not fit", "\"a lot\"", "dropped"]),
    ];
    lists_the_missing_reachability: fixture() => [
        listed(Unmapped, record("orchestrator/snapshots/000000.json", "/body"), &["no `reachability`"]),
    ];
    lists_a_snapshot_of_an_unknown_boot: sim(&[(
        "alpha/snapshots/000000.json",
        json!({"schema_version": 1, "kind": "snapshot", "snapshot_id": "alpha-0", "boot_sequence": 9,
               "wall_ms": 500, "monotonic_seq": 3, "trigger": "Periodic", "body": {}}),
    )]) => [
        listed(Unmapped, record(ALPHA_SIM_SNAPSHOT, "/boot_sequence"), &["no boot record with `boot_sequence` 9"]),
        listed(Unmapped, record(ALPHA_SIM_SNAPSHOT, "/boot_sequence"), &["kept as an unknown key"]),
    ];
}

/// The fixture's list names each item once: no two entries share a location and a message.
#[test]
fn the_fixtures_list_has_no_duplicates() {
    let problems = upgraded(&fixture()).upgraded.problems;
    assert!(problems.len() >= 60, "only {} listed", problems.len());
    let mut seen = std::collections::BTreeSet::new();
    for p in &problems {
        assert!(seen.insert((&p.location, &p.message)), "listed twice: {p}");
    }
}
