//! The upgrade of the simulator's prod-shape directory (legacy-wire §11.2) into the contract's bundle.
#![cfg(feature = "bundle")]

use std::fs;
use std::path::{Path, PathBuf};

use diagwire::bundle::BundleContents;
use diagwire::bundle::upgrade::{Unmapped, is_sim_prod_shape, upgrade};
use diagwire::v1;
use diagwire::validate::Validators;
use serde_json::{Value, json};

/// The fixture's stage 0 node (a hex directory name; restarted once).
const STAGE0: &str = "8b0e65c3525583c112232fd83de0f8423b654b3abc53adcf478b228e666ca400";
/// The fixture's stage 1 node (a hex directory name; crashed, no finalize).
const STAGE1: &str = "09fa77f2978b4d814b78a161e4d283dbd19a0e81836e9c0237fc677cc04bceb4";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../compat-tests/fixtures/sim-prod-shape/n3-basic")
}

fn upgraded() -> (BundleContents, Vec<Unmapped>) {
    upgrade(&fixture()).expect("the fixture upgrades")
}

fn json_file(bundle: &BundleContents, path: &str) -> Value {
    let bytes = bundle.files.get(path).unwrap_or_else(|| {
        panic!(
            "`{path}` not in the bundle: {:?}",
            bundle.files.keys().collect::<Vec<_>>()
        )
    });
    serde_json::from_slice(bytes).expect("output files are JSON")
}

/// Every event of a node, across its events files, in order.
fn events(bundle: &BundleContents, label: &str) -> Vec<Value> {
    let prefix = format!("{label}/events/");
    bundle
        .files
        .iter()
        .filter(|(p, _)| p.starts_with(&prefix))
        .flat_map(
            |(_, b)| match serde_json::from_slice::<Value>(b).expect("JSON") {
                Value::Array(a) => a,
                other => panic!("an events file that is not an array: {other}"),
            },
        )
        .collect()
}

fn event_at(bundle: &BundleContents, label: &str, seq_wall: (u64, u64)) -> Value {
    events(bundle, label)
        .into_iter()
        .find(|e| e["monotonic_seq"] == json!(seq_wall.0) && e["wall_ms"] == json!(seq_wall.1))
        .unwrap_or_else(|| panic!("no event {seq_wall:?} in {label}"))
}

fn id_bytes(hex: &str) -> Value {
    Value::Array(
        (0..32)
            .map(|i| json!(u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap()))
            .collect(),
    )
}

/// The unmapped entries whose path is `path` or starts with `path#`.
fn listed<'a>(unmapped: &'a [Unmapped], path: &str) -> Vec<&'a Unmapped> {
    unmapped
        .iter()
        .filter(|u| u.path == path || u.path.starts_with(&format!("{path}#")))
        .collect()
}

fn is_listed(unmapped: &[Unmapped], path: &str, needle: &str) -> bool {
    listed(unmapped, path)
        .iter()
        .any(|u| u.what.contains(needle))
}

/// The record kind a file of the upgraded bundle holds, by its place in the collector layout.
fn kind_of(path: &str) -> &'static str {
    if path == "MANIFEST.json" {
        "manifest"
    } else if path.ends_with("/boot.json") || path.contains("/boot/boot-") {
        "boot"
    } else if path.contains("/events/events-") {
        "event_batch"
    } else if path.contains("/snapshots/snapshot-") {
        "snapshot"
    } else if path.ends_with("/finalize.json") || path.contains("/finalize/finalize-") {
        "finalize"
    } else {
        panic!("`{path}` is outside the collector layout")
    }
}

/// A simulator prod-shape directory holding the manifest, node `alpha` (no stage index) with a boot
/// record, and `files` (JSON values are written pretty, strings as they are).
fn sim_dir(files: &[(&str, Value)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut all = vec![
        (
            "MANIFEST.json",
            json!({"schema_version": 1, "kind": "manifest", "run_id": "t-run", "duration_ms": 1000,
                   "node_count": 1, "mutation_count": 0, "origin": "sim"}),
        ),
        (
            "alpha/boot.json",
            json!({"schema_version": 1, "kind": "boot", "stage_index": null, "boot_sequence": 0,
                   "wall_ms": 100, "monotonic_seq": 0, "run_id": "t-run"}),
        ),
    ];
    all.extend(files.iter().cloned());
    for (path, content) in all {
        let p = dir.path().join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        let text = match content {
            Value::String(s) => s,
            v => serde_json::to_string_pretty(&v).unwrap(),
        };
        fs::write(p, text).unwrap();
    }
    dir
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

fn upgrade_dir(dir: &tempfile::TempDir) -> (BundleContents, Vec<Unmapped>) {
    upgrade(dir.path()).expect("the directory upgrades")
}

// Recognition.

#[test]
fn recognizes_the_simulators_prod_shape_directory() {
    assert!(is_sim_prod_shape(&fixture()));
}

#[test]
fn does_not_recognize_a_collector_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let hex = "11".repeat(32);
    fs::write(
        dir.path().join("MANIFEST.json"),
        json!({"run_id": "r", "run_start_collector_ms": 1, "run_end_collector_ms": 2, "finalize_received": false,
               "nodes": [{"node_id_hex": hex, "label": "orchestrator", "role": "orchestrator", "stage_index": null,
                          "boot_recorded": true, "event_batches": 0, "snapshots": 0, "finalize_recorded": false}]})
        .to_string(),
    )
    .unwrap();
    fs::create_dir(dir.path().join("orchestrator")).unwrap();
    fs::write(
        dir.path().join("orchestrator/boot.json"),
        json!({"node_id_hex": hex, "node_id_short": "11111111", "role": "orchestrator", "run_id": "r",
               "process_start_unix_ms": 1, "boot_sequence": 0})
        .to_string(),
    )
    .unwrap();
    assert!(!is_sim_prod_shape(dir.path()));
}

#[test]
fn does_not_recognize_an_empty_directory() {
    let dir = tempfile::tempdir().unwrap();
    assert!(!is_sim_prod_shape(dir.path()));
}

#[test]
fn recognizes_simulator_records_without_a_manifest() {
    let dir = sim_dir(&[]);
    fs::remove_file(dir.path().join("MANIFEST.json")).unwrap();
    assert!(is_sim_prod_shape(dir.path()));
}

#[test]
fn refuses_to_upgrade_a_directory_that_is_not_prod_shape() {
    let dir = tempfile::tempdir().unwrap();
    let err = upgrade(dir.path()).expect_err("an empty directory is not prod-shape");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
}

#[test]
fn refuses_a_path_that_does_not_exist() {
    let dir = tempfile::tempdir().unwrap();
    let err = upgrade(&dir.path().join("missing")).expect_err("nothing to upgrade");
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
}

// The output as a whole.

#[test]
fn every_upgraded_record_validates_and_parses() {
    let (bundle, _) = upgraded();
    let validators = Validators::new().unwrap();
    assert_eq!(bundle.run_id, "sim-n3-basic");
    for (path, bytes) in &bundle.files {
        let kind = kind_of(path);
        let value: Value = serde_json::from_slice(bytes).expect("JSON");
        let violations = validators.violations(kind, &value).unwrap();
        assert!(violations.is_empty(), "{path}: {violations:?}");
        let text = std::str::from_utf8(bytes).unwrap();
        v1::Record::parse(kind, text)
            .unwrap()
            .unwrap_or_else(|e| panic!("{path} does not parse: {e}"));
    }
}

#[test]
fn writes_the_collector_layout() {
    let (bundle, _) = upgraded();
    let paths: Vec<&str> = bundle.files.keys().map(String::as_str).collect();
    assert_eq!(
        paths,
        [
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
        ]
    );
}

#[test]
fn manifest_agrees_with_the_files() {
    let (bundle, _) = upgraded();
    let manifest = json_file(&bundle, "MANIFEST.json");
    assert_eq!(manifest["run_id"], "sim-n3-basic");
    assert_eq!(manifest["finalize_received"], true);
    let nodes = manifest["nodes"].as_array().unwrap();
    let labels: Vec<&str> = nodes.iter().map(|n| n["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["orchestrator", "stage-0", "stage-1"]);
    for node in nodes {
        let label = node["label"].as_str().unwrap();
        let count = |dir: &str| {
            bundle
                .files
                .keys()
                .filter(|p| p.starts_with(&format!("{label}/{dir}/")))
                .count()
        };
        assert_eq!(node["event_batches"], json!(count("events")), "{label}");
        assert_eq!(node["snapshots"], json!(count("snapshots")), "{label}");
        let has = |file: &str| bundle.files.contains_key(&format!("{label}/{file}"));
        assert_eq!(node["boot_recorded"], json!(has("boot.json")), "{label}");
        assert_eq!(
            node["finalize_recorded"],
            json!(has("finalize.json")),
            "{label}"
        );
        let boot = json_file(&bundle, &format!("{label}/boot.json"));
        assert_eq!(node["node_id_hex"], boot["node_id_hex"], "{label}");
        assert_eq!(node["role"], boot["role"], "{label}");
        assert_eq!(node["stage_index"], boot["stage_index"], "{label}");
    }
    assert_eq!(nodes[2]["finalize_recorded"], false, "stage 1 crashed");
}

#[test]
fn upgrade_is_deterministic() {
    assert_eq!(upgraded(), upgraded());
}

// What has no place is listed.

#[test]
fn lists_each_simulator_only_file() {
    let (_, unmapped) = upgraded();
    for path in [
        "sim/seed",
        "sim/spec.toml",
        "sim/links_applied.json",
        "sim/mutations.log",
        "detector/verdicts.json",
    ] {
        assert!(
            is_listed(&unmapped, path, "not copied"),
            "{path} not listed: {unmapped:#?}"
        );
    }
    assert!(is_listed(&unmapped, "sim/seed", "run seed (42)"));
    assert!(is_listed(
        &unmapped,
        "sim/links_applied.json",
        "(2 entries)"
    ));
    assert!(is_listed(
        &unmapped,
        "detector/verdicts.json",
        "detector's verdicts (2 entries)"
    ));
}

#[test]
fn simulator_only_files_are_not_copied() {
    let (bundle, _) = upgraded();
    let copied: Vec<&String> = bundle
        .files
        .keys()
        .filter(|p| p.starts_with("sim/") || p.starts_with("detector/"))
        .collect();
    assert!(copied.is_empty(), "{copied:?}");
}

#[test]
fn lists_the_envelope_keys_it_drops() {
    let (bundle, unmapped) = upgraded();
    for path in [
        "MANIFEST.json",
        "orchestrator/boot.json",
        "orchestrator/events/000000.json",
        "orchestrator/snapshots/000000.json",
        "orchestrator/finalize.json",
    ] {
        assert!(
            is_listed(&unmapped, path, "`schema_version` (1) and `kind`"),
            "{path}: {unmapped:#?}"
        );
    }
    for (path, bytes) in &bundle.files {
        let text = std::str::from_utf8(bytes).unwrap();
        assert!(
            !text.contains("\"schema_version\""),
            "{path} still has `schema_version`"
        );
    }
}

#[test]
fn keeps_and_lists_manifest_fields_the_contract_lacks() {
    let (bundle, unmapped) = upgraded();
    let manifest = json_file(&bundle, "MANIFEST.json");
    assert_eq!(manifest["duration_ms"], 60000);
    assert_eq!(manifest["mutation_count"], 2);
    assert_eq!(manifest["origin"], "sim");
    for key in ["duration_ms", "mutation_count", "origin"] {
        assert!(
            is_listed(&unmapped, "MANIFEST.json", &format!("key `/{key}`")),
            "{key}"
        );
    }
    assert!(
        manifest.get("node_count").is_none(),
        "node_count is what `nodes` lists"
    );
}

#[test]
fn lists_a_stray_file_and_does_not_copy_it() {
    let dir = sim_dir(&[
        ("alpha/notes.txt", json!("hello")),
        ("README.md", json!("# run")),
    ]);
    let (bundle, unmapped) = upgrade_dir(&dir);
    assert!(is_listed(&unmapped, "alpha/notes.txt", "not copied"));
    assert!(is_listed(&unmapped, "README.md", "not copied"));
    assert!(
        bundle
            .files
            .keys()
            .all(|p| !p.ends_with("notes.txt") && !p.ends_with("README.md"))
    );
}

#[test]
fn lists_a_file_that_is_not_json_and_skips_it() {
    let dir = sim_dir(&[(
        "alpha/events/000000.json",
        json!("{\"records\": [truncated"),
    )]);
    let (bundle, unmapped) = upgrade_dir(&dir);
    assert!(is_listed(&unmapped, "alpha/events/000000.json", "not JSON"));
    assert!(!bundle.files.keys().any(|p| p.contains("/events/")));
    assert_eq!(
        json_file(&bundle, "MANIFEST.json")["nodes"][0]["event_batches"],
        0
    );
}

#[cfg(unix)]
#[test]
fn does_not_follow_symbolic_links() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.json"), "{}").unwrap();
    let dir = sim_dir(&[]);
    std::os::unix::fs::symlink(outside.path(), dir.path().join("beta")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.json"),
        dir.path().join("alpha/finalize.json"),
    )
    .unwrap();
    let (bundle, unmapped) = upgrade_dir(&dir);
    assert!(is_listed(&unmapped, "beta", "symbolic link"));
    assert!(is_listed(&unmapped, "alpha/finalize.json", "symbolic link"));
    assert!(
        !bundle
            .files
            .keys()
            .any(|p| p.contains("finalize") || p.starts_with("beta"))
    );
}

// Node ids.

#[test]
fn hex_directory_name_becomes_the_node_id() {
    let (bundle, unmapped) = upgraded();
    let boot = json_file(&bundle, "stage-0/boot.json");
    assert_eq!(boot["node_id_hex"], STAGE0);
    assert_eq!(boot["node_id_short"], &STAGE0[..8]);
    assert!(
        listed(&unmapped, STAGE0)
            .iter()
            .all(|u| !u.what.contains("derived"))
    );
}

#[test]
fn other_directory_name_gets_a_stable_derived_node_id_and_is_listed() {
    let (bundle, unmapped) = upgraded();
    let boot = json_file(&bundle, "orchestrator/boot.json");
    let hex = boot["node_id_hex"].as_str().unwrap();
    assert!(
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    assert!(is_listed(
        &unmapped,
        "orchestrator",
        &format!("derived from the run id and the name: {hex}")
    ));
    let (again, _) = upgraded();
    assert_eq!(
        json_file(&again, "orchestrator/boot.json")["node_id_hex"],
        hex
    );
}

// Boot records.

#[test]
fn boot_becomes_an_identity_with_host_fields_null() {
    let (bundle, _) = upgraded();
    let boot = json_file(&bundle, "orchestrator/boot.json");
    assert_eq!(
        boot["role"], "orchestrator",
        "no stage index: the directory name"
    );
    assert_eq!(boot["stage_index"], Value::Null);
    assert_eq!(boot["run_id"], "sim-n3-basic");
    assert_eq!(boot["process_start_unix_ms"], 0, "from `wall_ms`");
    assert_eq!(boot["boot_sequence"], 0);
    for field in [
        "stage_count",
        "vastai_contract_id",
        "host_ip_public",
        "host_country",
        "datacenter_id",
        "hostname",
        "container_id",
        "binary_version",
        "git_sha",
        "iroh_version",
        "home_relay_url_at_boot",
    ] {
        assert_eq!(boot.get(field), Some(&Value::Null), "{field}");
    }
}

#[test]
fn stage_index_makes_the_role_stage_and_the_label_stage_n() {
    let (bundle, _) = upgraded();
    let boot = json_file(&bundle, "stage-1/boot.json");
    assert_eq!(boot["role"], "stage");
    assert_eq!(boot["stage_index"], 1);
    assert_eq!(boot["node_id_hex"], STAGE1);
}

#[test]
fn latest_boot_is_boot_json_and_earlier_boots_go_under_boot() {
    let (bundle, _) = upgraded();
    let latest = json_file(&bundle, "stage-0/boot.json");
    assert_eq!(latest["boot_sequence"], 1);
    assert_eq!(latest["process_start_unix_ms"], 30000);
    let earlier = json_file(&bundle, "stage-0/boot/boot-000001.json");
    assert_eq!(earlier["boot_sequence"], 0);
    assert_eq!(earlier["process_start_unix_ms"], 0);
}

#[test]
fn boot_keys_without_a_place_are_kept_and_listed() {
    let (bundle, unmapped) = upgraded();
    assert_eq!(
        json_file(&bundle, "orchestrator/boot.json")["monotonic_seq"],
        0
    );
    assert!(is_listed(
        &unmapped,
        "orchestrator/boot.json",
        "key `/monotonic_seq` (0)"
    ));
}

// Events.

#[test]
fn variant_becomes_type() {
    let (bundle, _) = upgraded();
    let dial = event_at(&bundle, "orchestrator", (2, 1000));
    assert_eq!(dial["type"], "DialStarted");
    assert!(dial.get("variant").is_none());
    assert_eq!(dial["attempt"], 1);
    assert_eq!(dial["timeout_ms"], 10000);
}

#[test]
fn custom_user_kind_becomes_kind_with_the_other_keys_under_fields() {
    let (bundle, _) = upgraded();
    let partition = event_at(&bundle, "orchestrator", (8, 20000));
    assert_eq!(partition["type"], "Custom");
    assert_eq!(partition["kind"], "partition");
    assert_eq!(
        partition["fields"],
        json!({"edges": [["orchestrator", STAGE1]]})
    );
    assert!(partition.get("user_kind").is_none() && partition.get("edges").is_none());
    let lifecycle = event_at(&bundle, "stage-1", (1, 0));
    assert_eq!(lifecycle["kind"], "stage_lifecycle");
    assert_eq!(
        lifecycle["fields"],
        json!({"from": "Cold", "to": "Registering"})
    );
}

#[test]
fn hex_peer_ids_become_node_id_byte_arrays() {
    let (bundle, _) = upgraded();
    let transition = event_at(&bundle, "orchestrator", (10, 32000));
    assert_eq!(transition["type"], "SwimTransition");
    assert_eq!(transition["peer"], id_bytes(STAGE1));
    assert_eq!(transition["to"], "Dead");
    let error = event_at(&bundle, "orchestrator", (1, 0));
    assert_eq!(error["peer"], Value::Null, "a null peer stays null");
}

#[test]
fn peer_named_by_directory_becomes_that_nodes_id() {
    let (bundle, _) = upgraded();
    let orchestrator = json_file(&bundle, "orchestrator/boot.json");
    let received = event_at(&bundle, "stage-0", (4, 5003));
    assert_eq!(received["type"], "MessageReceived");
    assert_eq!(
        received["peer"],
        id_bytes(orchestrator["node_id_hex"].as_str().unwrap())
    );
}

#[test]
fn envelope_node_id_is_the_emitting_node() {
    let (bundle, _) = upgraded();
    for (label, hex) in [("stage-0", STAGE0), ("stage-1", STAGE1)] {
        for event in events(&bundle, label) {
            assert_eq!(event["node_id"], id_bytes(hex), "{label}: {event}");
        }
    }
}

#[test]
fn register_name_fields_take_the_contracts_names() {
    let (bundle, _) = upgraded();
    let register = event_at(&bundle, "stage-1", (2, 0));
    assert_eq!(register["kind"], "register_name");
    assert_eq!(
        register["fields"],
        json!({
            "name": "pp-stage-1",
            "actor_addr_hex": "4fa0dbaab5c941be66f299a121e3391c26ac24373babff06fe9aee97ae42f2fa",
            "our_node_id_hex": STAGE1,
            "wall_ms": 0,
            "stage_index": 1,
        })
    );
}

#[test]
fn event_that_does_not_fit_its_type_is_kept_as_a_sim_custom_event() {
    let (bundle, unmapped) = upgraded();
    let sent = event_at(&bundle, "orchestrator", (6, 5001));
    assert_eq!(sent["type"], "Custom");
    assert_eq!(sent["kind"], "sim.SwimMetadataSent");
    assert_eq!(
        sent["fields"],
        json!({"version": 1, "payload_hash": "0x9f3c2a1b0e4d5f60"})
    );
    let entry = listed(&unmapped, "orchestrator/events/000000.json#/records/5");
    assert!(
        entry
            .iter()
            .any(|u| u.what.contains("/payload_hash") && u.what.contains("sim.SwimMetadataSent")),
        "{entry:#?}"
    );
}

#[test]
fn unknown_event_type_is_kept_and_listed() {
    let dir = sim_dir(&[alpha_events(json!([
        {"variant": "QuicPathValidated", "wall_ms": 200, "monotonic_seq": 1, "path": "direct"}
    ]))]);
    let (bundle, unmapped) = upgrade_dir(&dir);
    let event = &events(&bundle, "alpha")[0];
    assert_eq!(event["type"], "QuicPathValidated");
    assert_eq!(event["path"], "direct");
    assert!(is_listed(
        &unmapped,
        "alpha/events/000000.json#/records/0",
        "unknown to the contract"
    ));
}

#[test]
fn event_without_envelope_fields_is_dropped_and_listed() {
    let dir = sim_dir(&[alpha_events(json!([
        {"variant": "ConnectionCacheMiss", "monotonic_seq": 1, "peer": "alpha"},
        {"variant": "ConnectionCacheMiss", "wall_ms": 300, "monotonic_seq": 2, "peer": "alpha"}
    ]))]);
    let (bundle, unmapped) = upgrade_dir(&dir);
    let kept = events(&bundle, "alpha");
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["monotonic_seq"], 2);
    assert!(is_listed(
        &unmapped,
        "alpha/events/000000.json#/records/0",
        "dropped"
    ));
}

#[test]
fn event_keys_without_a_place_are_kept_and_listed() {
    let dir = sim_dir(&[alpha_events(json!([
        {"variant": "ConnectionCacheMiss", "wall_ms": 300, "monotonic_seq": 1, "peer": "alpha",
         "generation": 4, "reason": "first-dial"}
    ]))]);
    let (bundle, unmapped) = upgrade_dir(&dir);
    let event = &events(&bundle, "alpha")[0];
    assert_eq!(event["type"], "ConnectionCacheMiss");
    assert_eq!(event["generation"], 4);
    assert_eq!(event["reason"], "first-dial");
    for key in ["generation", "reason"] {
        assert!(is_listed(
            &unmapped,
            "alpha/events/000000.json#/records/0",
            &format!("key `/{key}`")
        ));
    }
}

// Snapshots.

#[test]
fn snapshot_embeds_the_identity_of_its_boot() {
    let (bundle, _) = upgraded();
    let first = json_file(&bundle, "stage-0/snapshots/snapshot-000001.json");
    assert_eq!(
        first["identity"],
        json_file(&bundle, "stage-0/boot/boot-000001.json")
    );
    let second = json_file(&bundle, "stage-0/snapshots/snapshot-000002.json");
    assert_eq!(second["identity"], json_file(&bundle, "stage-0/boot.json"));
    assert_eq!(second["snapshot_id"], format!("{}-1", &STAGE0[..8]));
    assert_eq!(second["run_id"], "sim-n3-basic");
    assert!(
        second.get("boot_sequence").is_none(),
        "the identity carries it"
    );
}

#[test]
fn string_trigger_becomes_the_contracts_trigger() {
    let (bundle, _) = upgraded();
    let periodic = json_file(&bundle, "orchestrator/snapshots/snapshot-000001.json");
    assert_eq!(periodic["trigger"], json!({"kind": "Periodic"}));
    let on_demand = json_file(&bundle, "orchestrator/snapshots/snapshot-000002.json");
    assert_eq!(on_demand["trigger"], json!({"kind": "OnDemand"}));
}

#[test]
fn external_form_trigger_becomes_the_contracts_trigger() {
    let dir = sim_dir(&[alpha_snapshot(json!({"Transition": "seq-3"}), json!({}))]);
    let (bundle, _) = upgrade_dir(&dir);
    let snapshot = json_file(&bundle, "alpha/snapshots/snapshot-000001.json");
    assert_eq!(
        snapshot["trigger"],
        json!({"kind": "Transition", "data": "seq-3"})
    );
}

#[test]
fn unknown_trigger_is_kept_as_an_unknown_kind_and_listed() {
    let dir = sim_dir(&[alpha_snapshot(json!("warmup"), json!({}))]);
    let (bundle, unmapped) = upgrade_dir(&dir);
    let snapshot = json_file(&bundle, "alpha/snapshots/snapshot-000001.json");
    assert_eq!(snapshot["trigger"], json!({"kind": "warmup"}));
    assert!(is_listed(
        &unmapped,
        "alpha/snapshots/000000.json#/trigger",
        "unknown trigger kind"
    ));
}

#[test]
fn body_block_that_fits_is_kept() {
    let (bundle, unmapped) = upgraded();
    let snapshot = json_file(&bundle, "stage-1/snapshots/snapshot-000001.json");
    assert_eq!(
        snapshot["body"]["process"],
        json!({"captured_at_ms": 5000}),
        "null values are absent values"
    );
    assert!(
        listed(&unmapped, &format!("{STAGE1}/snapshots/000000.json"))
            .iter()
            .all(|u| !u.what.contains("body block"))
    );
}

#[test]
fn host_network_fields_move_under_network() {
    let (bundle, _) = upgraded();
    let snapshot = json_file(&bundle, "orchestrator/snapshots/snapshot-000001.json");
    assert_eq!(
        snapshot["body"]["host"],
        json!({"network": {"ipv6_enabled": false, "refreshed_at_ms": 5000}, "scraped_at_ms": 5000})
    );
}

#[test]
fn body_block_that_does_not_fit_is_dropped_and_listed() {
    let dir = sim_dir(&[alpha_snapshot(
        json!("Periodic"),
        json!({"process": {"rss_bytes": "a lot", "captured_at_ms": 500}, "probes": {"scraped_at_ms": 500}}),
    )]);
    let (bundle, unmapped) = upgrade_dir(&dir);
    let snapshot = json_file(&bundle, "alpha/snapshots/snapshot-000001.json");
    assert!(snapshot["body"].get("process").is_none());
    assert_eq!(snapshot["body"]["probes"], json!({"scraped_at_ms": 500}));
    assert!(is_listed(
        &unmapped,
        "alpha/snapshots/000000.json#/body/process",
        "\"a lot\""
    ));
}

#[test]
fn missing_reachability_is_written_empty_and_listed() {
    let (bundle, unmapped) = upgraded();
    let snapshot = json_file(&bundle, "orchestrator/snapshots/snapshot-000001.json");
    assert_eq!(snapshot["body"]["reachability"], json!([]));
    assert!(is_listed(
        &unmapped,
        "orchestrator/snapshots/000000.json#/body",
        "no `reachability`"
    ));
}

// Finalize records.

#[test]
fn shutdown_reason_becomes_exit_reason() {
    let (bundle, _) = upgraded();
    let finalize = json_file(&bundle, "orchestrator/finalize.json");
    assert_eq!(finalize["exit_reason"], "end_of_run");
    assert!(finalize.get("shutdown_reason").is_none());
}

#[test]
fn latest_finalize_is_finalize_json_and_earlier_go_under_finalize() {
    let (bundle, _) = upgraded();
    assert_eq!(
        json_file(&bundle, "stage-0/finalize.json")["exit_reason"],
        "end_of_run"
    );
    assert_eq!(
        json_file(&bundle, "stage-0/finalize/finalize-000001.json")["exit_reason"],
        "restart"
    );
}

#[test]
fn finalize_keys_without_a_place_are_kept_and_listed() {
    let (bundle, unmapped) = upgraded();
    let finalize = json_file(&bundle, "orchestrator/finalize.json");
    assert_eq!(finalize["wall_ms"], 60000);
    assert_eq!(finalize["boot_sequence"], 0);
    for key in ["boot_sequence", "monotonic_seq", "run_id", "wall_ms"] {
        assert!(
            is_listed(
                &unmapped,
                "orchestrator/finalize.json",
                &format!("key `/{key}`")
            ),
            "{key}"
        );
    }
}

// Labels.

#[test]
fn colliding_labels_get_the_id_prefix() {
    let dir = sim_dir(&[
        (
            "alpha/boot.json",
            json!({"schema_version": 1, "kind": "boot", "stage_index": 0, "boot_sequence": 0,
                                   "wall_ms": 0, "monotonic_seq": 0, "run_id": "t-run"}),
        ),
        (
            "beta/boot.json",
            json!({"schema_version": 1, "kind": "boot", "stage_index": 0, "boot_sequence": 0,
                                  "wall_ms": 0, "monotonic_seq": 0, "run_id": "t-run"}),
        ),
    ]);
    let (bundle, _) = upgrade_dir(&dir);
    let manifest = json_file(&bundle, "MANIFEST.json");
    let labels: Vec<String> = manifest["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let label = n["label"].as_str().unwrap();
            let short = &n["node_id_hex"].as_str().unwrap()[..8];
            assert_eq!(label, format!("stage-0-{short}"));
            label.to_owned()
        })
        .collect();
    assert_eq!(labels.len(), 2);
    assert_ne!(labels[0], labels[1]);
}
