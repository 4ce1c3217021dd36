//! Every hand-composed legacy fixture: schema-valid, parses, and round-trips to the same JSON value;
//! every invalid fixture is rejected by both the schema and the typed parse.

use diagwire::v1::{Record, RecordKind};
use diagwire_compat_tests::{check_kind, invalid, valid, validators};

#[test]
fn boot_records_round_trip() {
    check_kind("boot");
}

#[test]
fn event_records_round_trip() {
    check_kind("event");
}

#[test]
fn event_batches_round_trip() {
    check_kind("event_batch");
}

#[test]
fn snapshots_round_trip() {
    check_kind("snapshot");
}

#[test]
fn finalize_records_round_trip() {
    check_kind("finalize");
}

#[test]
fn manifests_round_trip() {
    check_kind("manifest");
}

#[test]
fn post_acks_round_trip() {
    check_kind("post_ack");
}

#[test]
fn error_bodies_round_trip() {
    check_kind("error");
}

#[test]
fn runs_listings_round_trip() {
    check_kind("runs");
}

#[test]
fn live_records_round_trip() {
    check_kind("live");
}

#[test]
fn vastai_records_round_trip() {
    check_kind("vastai");
}

#[test]
fn every_record_kind_has_valid_and_invalid_fixtures() {
    let missing: Vec<String> = RecordKind::ALL
        .iter()
        .map(|k| k.as_str())
        .filter(|k| valid(k).is_empty() || invalid(k).is_empty())
        .map(|k| k.to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "record kinds without valid and invalid fixtures: {missing:?}"
    );
}

#[test]
fn a_snapshot_with_rings_longer_than_the_writer_keeps_is_valid_for_schema_and_types() {
    let fixture = valid("snapshot")
        .into_iter()
        .find(|f| {
            f.name
                .ends_with("snap-swim-rings-longer-than-the-writer-keeps.json")
        })
        .expect("the long-rings fixture exists");
    let value = fixture.value();
    let len = |pointer: &str| {
        value
            .pointer(pointer)
            .and_then(|v| v.as_array())
            .map(Vec::len)
    };
    assert_eq!(
        len("/body/reachability/0/swim_transition_history"),
        Some(33),
        "one more transition than the writer keeps"
    );
    assert_eq!(
        len("/body/swim/recent_messages"),
        Some(65),
        "one more message than the writer keeps"
    );
    let violations = validators().violations(RecordKind::Snapshot, &value);
    assert!(violations.is_empty(), "schema: {violations:?}");
    let parsed = Record::parse(RecordKind::Snapshot, &fixture.text);
    assert!(parsed.is_ok(), "typed parse: {:?}", parsed.err());
}
