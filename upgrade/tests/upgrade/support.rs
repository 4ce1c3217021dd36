//! The inputs of the upgrade's cases (the checked-in fixture and small simulator directories built
//! in temporary folders) and the rules every upgrade follows, checked on each one ([`upgraded`]).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use diagwire::bundle::read::Limits;
use diagwire::layout::{self, FileKind, Role};
use diagwire::validate::Validators;
use diagwire::validate::bundle::{open, validate_bundle};
use diagwire::{CONTRACT_VERSION, Problem, v1};
use diagwire_upgrade::{Upgraded, WRITER_NAME, upgrade};
use serde_json::{Value, json};
use tempfile::TempDir;

/// The fixture's stage 0 node (a hex directory name; restarted once).
pub const STAGE0: &str = "8b0e65c3525583c112232fd83de0f8423b654b3abc53adcf478b228e666ca400";
/// The fixture's stage 1 node (a hex directory name; crashed, no finalize).
pub const STAGE1: &str = "09fa77f2978b4d814b78a161e4d283dbd19a0e81836e9c0237fc677cc04bceb4";
/// The id derived for the fixture's `orchestrator` directory from the run id and the name. Pinned:
/// the derivation must give the same id on every platform and in every version.
pub const ORCHESTRATOR: &str = "6f6999d89a9882e003463ffa4e52dc585b7b79ed419606c3a5c6073736333579";

// Inputs.

/// A simulator directory to upgrade, with the temporary directories it lives in.
pub struct Sim {
    pub path: PathBuf,
    pub _keep: Vec<TempDir>,
}

/// `compat-tests/fixtures/sim-prod-shape/n3-basic`: three nodes, a restart, a crash, `sim/` files.
pub fn fixture() -> Sim {
    Sim {
        path: Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../compat-tests/fixtures/sim-prod-shape/n3-basic"),
        _keep: Vec::new(),
    }
}

/// A simulator prod-shape directory holding a manifest for run `t-run`, node `alpha` (no stage
/// index) with a boot record, and `files` on top (JSON values are written pretty, strings as they
/// are; a file given twice is the later one).
pub fn sim(files: &[(&str, Value)]) -> Sim {
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
    pub fn without(self, rel: &str) -> Sim {
        fs::remove_file(self.path.join(rel)).expect("remove");
        self
    }
}

/// The simulator's manifest of run `run_id`.
pub fn manifest_with_run_id(run_id: &str) -> (&'static str, Value) {
    (
        "MANIFEST.json",
        json!({"schema_version": 1, "kind": "manifest", "run_id": run_id, "duration_ms": 1000,
               "node_count": 1, "mutation_count": 0, "origin": "sim"}),
    )
}

/// `alpha/events/000000.json` holding `records`.
pub fn alpha_events(records: Value) -> (&'static str, Value) {
    (
        "alpha/events/000000.json",
        json!({"schema_version": 1, "kind": "events", "boot_sequence": 0, "records": records}),
    )
}

/// `alpha/snapshots/000000.json` with `trigger` and `body`.
pub fn alpha_snapshot(trigger: Value, body: Value) -> (&'static str, Value) {
    (
        "alpha/snapshots/000000.json",
        json!({"schema_version": 1, "kind": "snapshot", "snapshot_id": "alpha-0", "boot_sequence": 0,
               "wall_ms": 500, "monotonic_seq": 3, "trigger": trigger, "body": body}),
    )
}

/// A boot record of the simulator for a stage.
pub fn stage_boot(stage_index: u32) -> Value {
    json!({"schema_version": 1, "kind": "boot", "stage_index": stage_index, "boot_sequence": 0,
           "wall_ms": 0, "monotonic_seq": 0, "run_id": "t-run"})
}

pub fn empty_dir() -> Sim {
    let dir = tempfile::tempdir().expect("temp dir");
    Sim {
        path: dir.path().to_owned(),
        _keep: vec![dir],
    }
}

pub fn missing_path() -> Sim {
    let dir = tempfile::tempdir().expect("temp dir");
    Sim {
        path: dir.path().join("missing"),
        _keep: vec![dir],
    }
}

pub fn a_file() -> Sim {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("MANIFEST.json");
    fs::write(&path, manifest_with_run_id("t-run").1.to_string()).expect("write");
    Sim {
        path,
        _keep: vec![dir],
    }
}

/// A bundle the collector wrote: its records carry neither `schema_version` nor `kind`.
pub fn collector_bundle() -> Sim {
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
pub fn with_symbolic_links() -> Sim {
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

pub fn validators() -> &'static Validators {
    static VALIDATORS: OnceLock<Validators> = OnceLock::new();
    VALIDATORS.get_or_init(|| Validators::new().expect("the contract's schemas compile"))
}

/// What [`upgraded`] checked, for tests that want a minimum.
pub struct Checked {
    pub upgraded: Upgraded,
    /// Records the bundle check read.
    pub records: usize,
    /// Events files whose every record's `node_id` was compared with its node.
    pub events_files: usize,
    /// Manifest entries compared with their node's files.
    pub nodes: usize,
}

/// Upgrades `sim` and checks the rules every upgrade follows: it is deterministic; every file has
/// its place in the layout and no `schema_version` left; the bundle validates clean
/// (`validate_bundle`, which also checks the manifest against the files); the manifest names the
/// contract version and a `sim` writer and is the one in `MANIFEST.json`; each manifest entry
/// agrees with its node's files and boot record; every event names its node; every problem is
/// located in the simulator's directory.
#[track_caller]
pub fn upgraded(sim: &Sim) -> Checked {
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
    let report = validate_bundle(validators(), &mut reader, &mut |_, _| {});
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

pub fn lines(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(|p| format!("  [{}] {p}", p.kind.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[track_caller]
pub fn json_file(files: &BTreeMap<String, Vec<u8>>, path: &str) -> Value {
    let Some(bytes) = files.get(path) else {
        panic!(
            "`{path}` not in the bundle: {:?}",
            files.keys().collect::<Vec<_>>()
        )
    };
    serde_json::from_slice(bytes).expect("output files are JSON")
}

/// A hex node id as the contract's byte array.
pub fn id_bytes(hex: &str) -> Value {
    Value::Array(
        (0..32)
            .map(|i| json!(u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex")))
            .collect(),
    )
}
