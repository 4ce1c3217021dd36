//! One test per preservation rule: what the generated types keep, write back, reject and report.

use std::collections::BTreeSet;

use diagwire::v1::{
    ConnType, Event, EventRecord, Identity, InferenceSendOutcome, IrohPeer, IrohState,
    LifecycleEvent, Record, RelaySessionStatus, Snapshot, SnapshotTrigger, VastaiBody,
    VastaiRecord,
};
use diagwire::{Provenance, Unavailable};
use diagwire_compat_tests::fixtures_dir;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The text of `fixtures/wire/<kind>/<name>`.
fn fixture(kind: &str, name: &str) -> String {
    let path = fixtures_dir().join("wire").join(kind).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).expect("fixture is JSON")
}

#[track_caller]
fn parse<T: DeserializeOwned>(text: &str) -> T {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("does not parse: {e}"))
}

fn written<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("serializes")
}

/// The iroh block of a snapshot fixture.
fn iroh_of(name: &str) -> IrohState {
    let snapshot: Snapshot = parse(&fixture("snapshot", name));
    snapshot.body.iroh.expect("the fixture has an iroh block")
}

fn peer<'a>(iroh: &'a IrohState, hex_prefix: &str) -> &'a IrohPeer {
    iroh.peers
        .iter()
        .find(|p| p.peer_node_id_hex.as_str().starts_with(hex_prefix))
        .unwrap_or_else(|| panic!("no peer {hex_prefix}…"))
}

#[test]
fn unknown_event_type_parses_into_other_with_exactly_its_tag_and_fields_and_writes_back() {
    let text = fixture("event", "unknown-event-type.json");
    let original = json_of(&text);
    let record: EventRecord = parse(&text);
    let Event::Other(other) = &record.event else {
        panic!("expected Event::Other, got {:?}", record.event);
    };
    assert_eq!(other.tag, "RelayPathMigrated");
    let envelope = ["node_id", "monotonic_seq", "wall_ms", "type"];
    let expected: serde_json::Map<String, Value> = original
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| !envelope.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let fields: serde_json::Map<String, Value> = other
        .fields
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(fields, expected);
    assert_eq!(written(&record), original);
}

#[test]
fn unknown_fields_on_a_known_event_are_kept_in_extra_and_written_back() {
    let text = fixture("event", "unknown-fields-on-known-event.json");
    let record: EventRecord = parse(&text);
    let Event::DialOutcome(dial) = &record.event else {
        panic!("expected DialOutcome, got {:?}", record.event);
    };
    let keys: Vec<&str> = dial.extra.keys().map(String::as_str).collect();
    assert_eq!(keys, ["path", "retry_budget_ms"]);
    assert_eq!(dial.extra["retry_budget_ms"], json!(30000));
    assert_eq!(
        dial.extra["path"],
        json!({"conn_type": "Direct", "addrs": ["198.51.100.4:41641"]})
    );
    assert_eq!(written(&record), json_of(&text));
}

#[test]
fn unknown_open_enum_value_parses_into_other_and_is_written_back() {
    let text = fixture("event", "unknown-open-enum-value.json");
    let record: EventRecord = parse(&text);
    let Event::InferenceResponseSent(sent) = &record.event else {
        panic!("expected InferenceResponseSent, got {:?}", record.event);
    };
    assert_eq!(
        sent.send_outcome,
        InferenceSendOutcome::Other("throttled".to_owned())
    );
    assert_eq!(written(&record)["send_outcome"], json!("throttled"));
    assert_eq!(written(&record), json_of(&text));
}

#[test]
fn unknown_keys_of_the_snapshot_envelope_and_body_are_kept() {
    let text = fixture("snapshot", "unknown-snap-fields-envelope-and-body.json");
    let original = json_of(&text);
    let snapshot: Snapshot = parse(&text);
    assert_eq!(
        snapshot.extra.get("schema_hint"),
        original.get("schema_hint")
    );
    let body_extra: Vec<&str> = snapshot.body.extra.keys().map(String::as_str).collect();
    assert_eq!(body_extra, ["future_counter"]);
    assert!(
        snapshot.body.app.is_some(),
        "`app` is a known block since 1.1.0"
    );
    assert_eq!(written(&snapshot), original);
}

#[test]
fn a_1_0_0_reader_keeps_a_block_added_later_as_an_unknown_key_and_writes_it_back() {
    let text = fixture("snapshot", "unknown-snap-fields-envelope-and-body.json");
    let original = json_of(&text);
    let old: diagwire::releases::v1_0_0::Snapshot =
        serde_json::from_str(&text).expect("a 1.0.0 reader reads a 1.1.0 snapshot");
    let body_extra: Vec<&str> = old.body.extra.keys().map(String::as_str).collect();
    assert_eq!(body_extra, ["app", "future_counter"]);
    assert_eq!(Some(&old.body.extra["app"]), original["body"].get("app"));
    assert_eq!(written(&old), original);
}

#[test]
fn unknown_keys_of_an_iroh_peer_and_the_relay_session_are_kept() {
    let text = fixture("snapshot", "unknown-snap-iroh-peer-fields.json");
    let snapshot: Snapshot = parse(&text);
    let iroh = snapshot.body.iroh.as_ref().unwrap();
    assert_eq!(
        peer(iroh, "682fbae2").extra["path_stats"],
        json!({"lost": 2, "sent": 400})
    );
    assert_eq!(peer(iroh, "cffb3970").extra["rtt_variance_ms"], json!(4));
    let session = iroh.relay_session.as_ref().unwrap();
    assert_eq!(
        session.extra["last_handshake_at_ms"],
        json!(1779733892000u64)
    );
    assert_eq!(written(&snapshot), json_of(&text));
}

#[test]
fn unknown_keys_of_a_host_interface_and_its_counters_are_kept() {
    let text = fixture("snapshot", "unknown-host-fields.json");
    let snapshot: Snapshot = parse(&text);
    let network = snapshot
        .body
        .host
        .as_ref()
        .unwrap()
        .network
        .as_ref()
        .unwrap();
    let eth0 = network
        .interfaces
        .iter()
        .find(|i| i.name == "eth0")
        .unwrap();
    assert_eq!(eth0.extra["operstate"], json!("up"));
    assert_eq!(eth0.extra["flags"], json!("0x1003"));
    let counters = eth0.counters.as_ref().unwrap();
    assert_eq!(counters.extra["rx_fifo"], json!(0));
    assert_eq!(
        counters.extra["multicast"],
        json!({"rx": 12, "note": "future"})
    );
    assert_eq!(written(&snapshot), json_of(&text));
}

#[test]
fn unknown_snapshot_trigger_kind_is_kept_with_its_data() {
    for (name, tag, content) in [
        (
            "unknown-snap-trigger-kind.json",
            "Scheduled",
            Some(json!({"every_ms": 5000})),
        ),
        ("unknown-snap-trigger-kind-unit.json", "Manual", None),
    ] {
        let text = fixture("snapshot", name);
        let snapshot: Snapshot = parse(&text);
        let SnapshotTrigger::Other { tag: t, content: c } = &snapshot.trigger else {
            panic!(
                "{name}: expected SnapshotTrigger::Other, got {:?}",
                snapshot.trigger
            );
        };
        assert_eq!(t, tag, "{name}");
        assert_eq!(c.as_ref().map(|j| j.0.clone()), content, "{name}");
        assert_eq!(written(&snapshot), json_of(&text), "{name}");
    }
}

#[test]
fn unknown_vastai_body_t_is_kept_and_written_back() {
    let text = fixture("vastai", "unknown-body-t.json");
    let record: VastaiRecord = parse(&text);
    let VastaiBody::Other(other) = &record.body else {
        panic!("expected VastaiBody::Other, got {:?}", record.body);
    };
    assert_eq!(other.tag, "gpu_health");
    let keys: BTreeSet<&str> = other.fields.keys().map(String::as_str).collect();
    assert_eq!(keys, BTreeSet::from(["xid_errors", "ecc_uncorrected"]));
    assert_eq!(written(&record), json_of(&text));
}

#[test]
fn unknown_vastai_lifecycle_event_is_kept_and_written_back() {
    let text = fixture("vastai", "unknown-lifecycle-event.json");
    let record: VastaiRecord = parse(&text);
    let VastaiBody::Lifecycle(LifecycleEvent::Other(other)) = &record.body else {
        panic!("expected a lifecycle Other, got {:?}", record.body);
    };
    assert_eq!(other.tag, "contract_extended");
    let keys: BTreeSet<&str> = other.fields.keys().map(String::as_str).collect();
    assert_eq!(keys, BTreeSet::from(["contract_id", "extra_hours"]));
    assert_eq!(other.fields["contract_id"], json!(28731945));
    assert_eq!(other.fields["extra_hours"], json!(2.5));
    assert_eq!(written(&record), json_of(&text));
}

#[test]
fn explicit_nulls_in_nullable_fields_come_back_as_null() {
    let text = fixture("boot", "orchestrator-local-dev.json");
    let identity: Identity = parse(&text);
    assert_eq!(identity.stage_index, None);
    assert_eq!(identity.hostname, None);
    let back = written(&identity);
    for key in [
        "stage_index",
        "stage_count",
        "vastai_contract_id",
        "hostname",
        "container_id",
    ] {
        assert_eq!(
            back.get(key),
            Some(&Value::Null),
            "`{key}` must be written as null"
        );
    }

    let text = fixture("event", "error.json");
    let record: EventRecord = parse(&text);
    assert_eq!(written(&record).get("peer"), Some(&Value::Null));
}

#[test]
fn omittable_fields_that_are_absent_stay_omitted() {
    let iroh = iroh_of("snap-older-generation.json");
    let never_heard = peer(&iroh, "682fbae2");
    assert_eq!(never_heard.conn_type, None);
    let back = written(never_heard);
    for key in [
        "conn_type",
        "conn_type_source",
        "latency_ms",
        "addr_sources",
        "relay_urls",
    ] {
        assert!(
            back.get(key).is_none(),
            "`{key}` must stay omitted, got {back}"
        );
    }
    // The older generation has no relay session and no iroh version: they are not invented.
    assert!(iroh.relay_session.is_none() && iroh.iroh_version.is_none());
    let back = written(&iroh);
    for key in ["relay_session", "iroh_version"] {
        assert!(
            back.get(key).is_none(),
            "`{key}` must stay omitted, got {back}"
        );
    }
}

/// Every integer above 2^53 in a JSON value, as its decimal digits.
fn big_integers(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Number(n) => {
            if let Some(u) = n.as_u64().filter(|u| *u > 1u64 << 53) {
                out.push(u.to_string());
            }
        }
        Value::Array(items) => items.iter().for_each(|i| big_integers(i, out)),
        Value::Object(m) => m.values().for_each(|i| big_integers(i, out)),
        _ => {}
    }
}

#[test]
fn u64_values_above_2_pow_53_are_exact() {
    for (kind, name) in [
        ("snapshot", "snap-u64-above-2-53.json"),
        ("snapshot", "unknown-host-fields.json"),
        ("vastai", "host-sample-u64-above-2-53.json"),
        ("event", "swim-metadata-sent.json"),
        ("event", "unknown-event-type.json"),
    ] {
        let text = fixture(kind, name);
        let mut digits = Vec::new();
        big_integers(&json_of(&text), &mut digits);
        assert!(!digits.is_empty(), "{name} has no integer above 2^53");
        let record = Record::parse(diagwire_compat_tests::kind(kind), &text).expect("parses");
        let rewritten = serde_json::to_string(&record).unwrap();
        for d in &digits {
            assert_eq!(
                rewritten.matches(d.as_str()).count(),
                text.matches(d.as_str()).count(),
                "{name}: {d} is not written back exactly"
            );
        }
    }
    let iroh = iroh_of("snap-u64-above-2-53.json");
    let session = iroh.relay_session.unwrap();
    assert_eq!(session.tx_bytes_total, Some(18_446_744_073_709_551_557));
    assert_eq!(session.rx_bytes_total, Some(9_007_199_254_740_993));
}

#[test]
fn node_ids_are_integer_arrays_in_events_and_hex_strings_in_snapshots() {
    let record: EventRecord = parse(&fixture("event", "swim-transition.json"));
    let back = written(&record);
    for key in ["node_id", "peer"] {
        let items = back[key]
            .as_array()
            .unwrap_or_else(|| panic!("`{key}` is not an array"));
        assert_eq!(items.len(), 32);
        assert!(items.iter().all(|i| i.as_u64().is_some_and(|b| b <= 255)));
    }
    assert_eq!(back["node_id"], json!(record.node_id.0.to_vec()));

    let snapshot: Snapshot = parse(&fixture("snapshot", "snap-full-newest-generation.json"));
    let back = written(&snapshot);
    let is_hex64 = |v: &Value| {
        v.as_str()
            .is_some_and(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    assert!(is_hex64(&back["identity"]["node_id_hex"]));
    assert!(is_hex64(
        &back["body"]["reachability"][0]["peer_node_id_hex"]
    ));
    assert!(is_hex64(
        &back["body"]["iroh"]["peers"][0]["peer_node_id_hex"]
    ));
    let id = snapshot
        .identity
        .node_id_hex
        .to_node_id()
        .expect("a hex id");
    assert_eq!(id.to_hex().as_str(), snapshot.identity.node_id_hex.as_str());
}

#[test]
fn keys_in_alphabetical_order_parse_the_same_as_node_order() {
    for (kind, name) in [
        ("event", "swim-transition.json"),
        ("event", "dial-outcome-error.json"),
        ("event", "custom-clock-sample.json"),
        ("event", "unknown-event-type.json"),
        ("snapshot", "snap-full-newest-generation.json"),
        ("vastai", "lifecycle-contract-leased.json"),
    ] {
        let text = fixture(kind, name);
        // serde_json's map is sorted, so this is the collector's alphabetical rewrite.
        let sorted = serde_json::to_string(&json_of(&text)).unwrap();
        assert_ne!(
            sorted.replace([' ', '\n'], ""),
            text.replace([' ', '\n'], ""),
            "{name}"
        );
        let a = Record::parse(diagwire_compat_tests::kind(kind), &text).expect("node order parses");
        let b =
            Record::parse(diagwire_compat_tests::kind(kind), &sorted).expect("sorted order parses");
        assert_eq!(a, b, "{name}");
    }
    let sorted: EventRecord = parse(&fixture("event", "swim-transition-collector-sorted.json"));
    assert!(matches!(sorted.event, Event::SwimTransition(_)));
}

#[test]
fn a_duplicate_key_is_rejected_with_an_error_naming_it() {
    let id: Vec<u8> = vec![7; 32];
    let cases = [
        // A known field of the event, twice.
        (
            "attempt",
            format!(
                r#"{{"node_id":{id:?},"monotonic_seq":1,"wall_ms":2,"type":"DialStarted","peer":{id:?},"attempt":1,"attempt":2,"timeout_ms":10}}"#
            ),
        ),
        // An envelope field, twice.
        (
            "wall_ms",
            format!(
                r#"{{"node_id":{id:?},"monotonic_seq":1,"wall_ms":2,"wall_ms":3,"type":"ConnectionCacheMiss","peer":{id:?}}}"#
            ),
        ),
        // An unknown field, twice.
        (
            "future_key",
            format!(
                r#"{{"node_id":{id:?},"monotonic_seq":1,"wall_ms":2,"type":"ConnectionCacheMiss","peer":{id:?},"future_key":1,"future_key":2}}"#
            ),
        ),
        // The tag itself, twice.
        (
            "type",
            format!(
                r#"{{"node_id":{id:?},"monotonic_seq":1,"wall_ms":2,"type":"ConnectionCacheMiss","type":"ConnectionCacheMiss","peer":{id:?}}}"#
            ),
        ),
    ];
    for (key, text) in cases {
        let err = serde_json::from_str::<EventRecord>(&text)
            .expect_err(&format!("a duplicate `{key}` must be rejected"));
        assert!(
            err.to_string().contains(&format!("`{key}`")),
            "the error for a duplicate `{key}` does not name it: {err}"
        );
    }
}

#[test]
fn a_known_event_type_with_a_malformed_body_is_an_error_never_other() {
    for (name, names_the_problem) in [
        // `timeout_ms` as a string.
        ("known-type-malformed-body.json", "\"10000\""),
        ("known-type-missing-field.json", "`timeout_ms`"),
    ] {
        let text = fixture("event/invalid", name);
        match serde_json::from_str::<EventRecord>(&text) {
            Ok(r) => panic!("{name} parsed as {:?}", r.event),
            Err(e) => assert!(
                e.to_string().contains(names_the_problem),
                "{name}: the error does not point at the bad field: {e}"
            ),
        }
    }
}

#[test]
fn conn_type_with_a_derived_source_is_derived() {
    let iroh = iroh_of("snap-full-newest-generation.json");
    let relay = peer(&iroh, "11376b7e");
    assert_eq!(
        relay.conn_type_provenance(&iroh.api_gaps),
        Provenance::Derived(&ConnType::Relay)
    );
}

#[test]
fn conn_type_with_an_iroh_source_is_reported() {
    let iroh = iroh_of("snap-iroh-native-values-no-gaps.json");
    let mixed = peer(&iroh, "cffb3970");
    assert_eq!(
        mixed.conn_type_provenance(&iroh.api_gaps),
        Provenance::Reported(&ConnType::Mixed)
    );
}

#[test]
fn absent_conn_type_without_a_declared_gap_is_not_observed() {
    let iroh = iroh_of("snap-iroh-native-values-no-gaps.json");
    // A peer iroh has never heard of, in a scrape whose iroh reports conn_type natively.
    let never_heard: IrohPeer = parse(&format!(r#"{{"peer_node_id_hex":"{}"}}"#, "ab".repeat(32)));
    assert!(
        !iroh
            .api_gaps
            .iter()
            .any(|g| g.as_str() == "RemoteInfo.conn_type")
    );
    assert_eq!(
        never_heard.conn_type_provenance(&iroh.api_gaps),
        Provenance::Unavailable(Unavailable::NotObserved)
    );
}

#[test]
fn absent_conn_type_with_a_declared_gap_is_an_api_gap() {
    let iroh = iroh_of("snap-full-newest-generation.json");
    let never_heard = peer(&iroh, "682fbae2");
    assert_eq!(never_heard.conn_type, None);
    assert_eq!(
        never_heard.conn_type_provenance(&iroh.api_gaps),
        Provenance::Unavailable(Unavailable::ApiGap("RemoteInfo.conn_type"))
    );
}

#[test]
fn older_generation_conn_type_without_a_source_under_the_fixed_gaps_is_derived() {
    let iroh = iroh_of("snap-older-generation.json");
    let direct = peer(&iroh, "cffb3970");
    assert_eq!(direct.conn_type_source, None);
    assert_eq!(
        direct.conn_type_provenance(&iroh.api_gaps),
        Provenance::Derived(&ConnType::Direct)
    );
}

#[test]
fn relay_status_unknown_with_a_derived_source_is_derived_unknown() {
    let iroh = iroh_of("snap-iroh-relay-session-unknown-derived.json");
    let session = iroh.relay_session.as_ref().unwrap();
    assert_eq!(
        session.status_provenance(&iroh.api_gaps),
        Provenance::Derived(&RelaySessionStatus::Unknown)
    );
}

#[test]
fn absent_latency_with_a_declared_gap_is_an_api_gap() {
    let iroh = iroh_of("snap-full-newest-generation.json");
    let relay = peer(&iroh, "11376b7e");
    assert_eq!(relay.latency_ms, None);
    assert_eq!(
        relay.latency_ms_provenance(&iroh.api_gaps),
        Provenance::Unavailable(Unavailable::ApiGap("RemoteInfo.latency_ms"))
    );
    let native = iroh_of("snap-iroh-native-values-no-gaps.json");
    assert_eq!(
        peer(&native, "cffb3970").latency_ms_provenance(&native.api_gaps),
        Provenance::Reported(&23)
    );
}
