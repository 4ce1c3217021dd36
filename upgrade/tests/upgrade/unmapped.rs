//! What an upgrade lists as not mapped: each item's kind, its location in the simulator's
//! directory and what its message says.

use diagwire::problem::ReadErrorKind;
use diagwire::{Location, Problem, ProblemKind};
use serde_json::json;

#[cfg(unix)]
use crate::support::with_symbolic_links;
use crate::support::{STAGE0, Sim, alpha_events, alpha_snapshot, fixture, lines, sim, upgraded};

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
