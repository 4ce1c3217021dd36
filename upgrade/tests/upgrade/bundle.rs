//! What an upgraded bundle holds: its run id, its files, and the values at JSON pointers of them.

use diagwire::CONTRACT_VERSION;
use diagwire::layout::{self, FileKind, Role};
use diagwire_upgrade::WRITER_NAME;
use serde_json::{Value, json};

#[cfg(unix)]
use crate::support::with_symbolic_links;
use crate::support::{
    ORCHESTRATOR, STAGE0, STAGE1, Sim, alpha_events, alpha_snapshot, fixture, id_bytes, json_file,
    sim, stage_boot, upgraded,
};

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
