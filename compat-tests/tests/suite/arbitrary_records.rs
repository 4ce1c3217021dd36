//! `Arbitrary` values of every record type serialize to schema-valid JSON and read back equal.

use arbitrary::{Arbitrary, Unstructured};
use diagwire::v1::{self, Record};
use diagwire_compat_tests::rng::SplitMix64;
use diagwire_compat_tests::validators;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Values generated per record kind.
const CASES: usize = 400;

#[track_caller]
fn check<T>(kind: &str)
where
    T: for<'a> Arbitrary<'a> + Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let mut problems = Vec::new();
    let mut checked = 0;
    for case in 0..CASES {
        let data = SplitMix64(case as u64 + 1).bytes(4096);
        let Ok(value) = T::arbitrary(&mut Unstructured::new(&data)) else {
            continue;
        };
        checked += 1;
        let json = serde_json::to_value(&value).expect("serialize");
        for v in validators().violations(diagwire_compat_tests::kind(kind), &json) {
            problems.push(format!(
                "case {case}: schema {}: {}\n  {json}",
                v.pointer, v.message
            ));
        }
        let text = json.to_string();
        match serde_json::from_str::<T>(&text) {
            Ok(back) if back == value => {}
            Ok(back) => problems.push(format!(
                "case {case}: read back differently\n  {value:?}\n  {back:?}"
            )),
            Err(e) => problems.push(format!("case {case}: does not read back: {e}\n  {text}")),
        }
        assert!(
            Record::parse(diagwire_compat_tests::kind(kind), &text).is_ok(),
            "case {case}: Record::parse"
        );
    }
    assert!(
        checked >= CASES * 9 / 10,
        "`{kind}`: only {checked} of {CASES} inputs made a value"
    );
    problems.truncate(5);
    assert!(problems.is_empty(), "`{kind}`:\n{}", problems.join("\n"));
}

#[test]
fn arbitrary_boot_records_are_schema_valid_and_round_trip() {
    check::<v1::Identity>("boot");
}

#[test]
fn arbitrary_event_records_are_schema_valid_and_round_trip() {
    check::<v1::EventRecord>("event");
}

#[test]
fn arbitrary_event_batches_are_schema_valid_and_round_trip() {
    check::<v1::EventBatch>("event_batch");
}

#[test]
fn arbitrary_snapshots_are_schema_valid_and_round_trip() {
    check::<v1::Snapshot>("snapshot");
}

#[test]
fn arbitrary_finalize_records_are_schema_valid_and_round_trip() {
    check::<v1::Finalize>("finalize");
}

#[test]
fn arbitrary_manifests_are_schema_valid_and_round_trip() {
    check::<v1::Manifest>("manifest");
}

#[test]
fn arbitrary_post_acks_are_schema_valid_and_round_trip() {
    check::<v1::PostAck>("post_ack");
}

#[test]
fn arbitrary_error_bodies_are_schema_valid_and_round_trip() {
    check::<v1::ErrorBody>("error");
}

#[test]
fn arbitrary_runs_listings_are_schema_valid_and_round_trip() {
    check::<v1::RunsListing>("runs");
}

#[test]
fn arbitrary_live_records_are_schema_valid_and_round_trip() {
    check::<v1::LiveRecord>("live");
}

#[test]
fn arbitrary_vastai_records_are_schema_valid_and_round_trip() {
    check::<v1::VastaiRecord>("vastai");
}
