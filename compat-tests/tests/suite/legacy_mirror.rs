//! Records written by a mirror of swactor's own types are schema-valid, parse, and write back equal.
//!
//! For every record kind, thousands of values of the `legacy` mirror types are drawn from a seeded
//! byte stream and serialized exactly as swactor serializes them. Each must satisfy the schema,
//! parse with `Record::parse` and serialize back to an equal JSON value, and the mirror (standing in
//! for an old swactor reader) must read diagwire's output back to the same JSON.
//! The reverse direction draws values of the generated types and checks that swactor's readers
//! accept everything except data they cannot know (a tag that is not theirs).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use arbitrary::{Arbitrary, Unstructured};
use diagwire::v1::{self, Record};
use diagwire_compat_tests::legacy::{
    collector, event as legacy_event, finalize, identity, manifest, snapshot, vastai,
};
use diagwire_compat_tests::rng::SplitMix64;
use diagwire_compat_tests::validators;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Values drawn per record kind in each direction.
const VALUES_PER_KIND: usize = 2_000;

fn seed_of(kind: &str, direction: u64) -> u64 {
    kind.bytes()
        .fold(0xcbf2_9ce4_8422_2325 ^ direction, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
}

/// Draws `VALUES_PER_KIND` values of `T` from the seeded stream of `kind`.
fn draw<T: for<'a> Arbitrary<'a>>(kind: &str, direction: u64, max_len: usize) -> Vec<T> {
    let mut rng = SplitMix64(seed_of(kind, direction));
    let mut out = Vec::with_capacity(VALUES_PER_KIND);
    while out.len() < VALUES_PER_KIND {
        let buf = rng.bytes(max_len);
        if let Ok(v) = T::arbitrary(&mut Unstructured::new(&buf)) {
            out.push(v);
        }
    }
    out
}

/// A JSON array of up to 24 values, swactor's batch shape (a plain `Vec` draws about one element).
#[derive(Debug, Serialize, Deserialize)]
#[serde(transparent)]
struct Batch<T>(Vec<T>);

impl<'a, T: Arbitrary<'a>> Arbitrary<'a> for Batch<T> {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let n = u.int_in_range(0..=24usize)?;
        (0..n)
            .map(|_| T::arbitrary(u))
            .collect::<arbitrary::Result<_>>()
            .map(Batch)
    }
}

/// Where two JSON values differ, one line per differing pointer.
fn diff(a: &Value, b: &Value) -> String {
    fn walk(a: Option<&Value>, b: Option<&Value>, path: &str, out: &mut String) {
        match (a, b) {
            (Some(Value::Object(x)), Some(Value::Object(y))) => {
                let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                for k in keys {
                    walk(x.get(k), y.get(k), &format!("{path}/{k}"), out);
                }
            }
            (Some(Value::Array(x)), Some(Value::Array(y))) => {
                for i in 0..x.len().max(y.len()) {
                    walk(x.get(i), y.get(i), &format!("{path}/{i}"), out);
                }
            }
            (x, y) if x == y => {}
            (x, y) => {
                let show = |v: Option<&Value>| v.map_or("(missing)".to_owned(), Value::to_string);
                let _ = writeln!(out, "    {path}: {} -> {}", show(x), show(y));
            }
        }
    }
    let mut out = String::new();
    walk(Some(a), Some(b), "", &mut out);
    out
}

/// The problems of one value written by the mirror, if any.
fn problems_of<T: Serialize + DeserializeOwned>(kind: &str, value: &T) -> Option<String> {
    let text = serde_json::to_string(value).expect("the mirror serializes");
    let original: Value = serde_json::from_str(&text).expect("the mirror writes JSON");
    let mut out = String::new();
    let violations = validators().violations(diagwire_compat_tests::kind(kind), &original);
    for v in &violations {
        let _ = writeln!(out, "  schema: {} {}", v.pointer, v.message);
    }
    match Record::parse(diagwire_compat_tests::kind(kind), &text) {
        Err(e) => {
            let _ = writeln!(out, "  typed parse failed: {e}");
        }
        Ok(record) => {
            let written = serde_json::to_string(&record).expect("diagwire serializes");
            let back: Value = serde_json::from_str(&written).expect("diagwire writes JSON");
            if back != original {
                let _ = writeln!(
                    out,
                    "  diagwire wrote back a different record:\n{}",
                    diff(&original, &back)
                );
            }
            match serde_json::from_str::<T>(&written) {
                Err(e) => {
                    let _ = writeln!(out, "  swactor cannot read what diagwire wrote: {e}");
                }
                Ok(again) => {
                    let again = serde_json::to_value(&again).expect("the mirror serializes");
                    if again != original {
                        let _ = writeln!(
                            out,
                            "  swactor read diagwire's output differently:\n{}",
                            diff(&original, &again)
                        );
                    }
                }
            }
        }
    }
    (!out.is_empty()).then(|| format!("{kind}: {text}\n{out}"))
}

/// Checks every drawn mirror value of `kind`; returns the JSON of every value for coverage checks.
#[track_caller]
fn check_mirror<T>(kind: &str, max_len: usize) -> Vec<Value>
where
    T: for<'a> Arbitrary<'a> + Serialize + DeserializeOwned,
{
    let values: Vec<T> = draw(kind, 1, max_len);
    let mut failures = Vec::new();
    let mut failed = 0;
    for v in &values {
        if let Some(p) = problems_of(kind, v) {
            failed += 1;
            if failures.len() < 5 {
                failures.push(p);
            }
        }
    }
    assert!(
        failed == 0,
        "{failed} of {} `{kind}` records written by the swactor mirror failed; the first ones:\n{}",
        values.len(),
        failures.join("\n")
    );
    values
        .iter()
        .map(|v| serde_json::to_value(v).unwrap())
        .collect()
}

/// Every distinct value found at `pointer` (with `*` matching any array index or object key).
fn values_at(records: &[Value], pointer: &str) -> BTreeSet<String> {
    fn walk(v: &Value, parts: &[&str], out: &mut BTreeSet<String>) {
        let Some((head, rest)) = parts.split_first() else {
            out.insert(match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
            return;
        };
        match (head, v) {
            (&"*", Value::Array(items)) => items.iter().for_each(|i| walk(i, rest, out)),
            (&"*", Value::Object(m)) => m.values().for_each(|i| walk(i, rest, out)),
            (&"keys", Value::Object(m)) if rest.is_empty() => {
                out.extend(m.keys().cloned());
            }
            (k, Value::Object(m)) => {
                if let Some(i) = m.get(*k) {
                    walk(i, rest, out);
                }
            }
            _ => {}
        }
    }
    let parts: Vec<&str> = pointer.split('/').filter(|p| !p.is_empty()).collect();
    let mut out = BTreeSet::new();
    for r in records {
        walk(r, &parts, &mut out);
    }
    out
}

#[track_caller]
fn assert_covers(records: &[Value], pointer: &str, expected: &[&str]) {
    let seen = values_at(records, pointer);
    let missing: Vec<&&str> = expected.iter().filter(|e| !seen.contains(**e)).collect();
    assert!(
        missing.is_empty(),
        "the drawn values never have {missing:?} at {pointer}"
    );
}

#[test]
fn boot_records_swactor_writes_are_valid_and_write_back_equal() {
    let records = check_mirror::<identity::Identity>("boot", 512);
    assert_covers(&records, "/stage_index", &["null"]);
    assert_covers(&records, "/role", &["orchestrator", "stage", "relay"]);
}

#[test]
fn event_records_swactor_writes_are_valid_and_write_back_equal() {
    let records = check_mirror::<legacy_event::EventRecord>("event", 512);
    let types = values_at(&records, "/type");
    assert!(
        types.len() >= 27,
        "only {} event types were drawn: {types:?}",
        types.len()
    );
}

#[test]
fn event_batches_swactor_writes_are_valid_and_write_back_equal() {
    check_mirror::<Batch<legacy_event::EventRecord>>("event_batch", 8192);
}

#[test]
fn snapshots_swactor_writes_are_valid_and_write_back_equal() {
    let records = check_mirror::<snapshot::Snapshot>("snapshot", 4096);
    assert_covers(
        &records,
        "/body/keys",
        &[
            "reachability",
            "events",
            "iroh",
            "swim",
            "host",
            "probes",
            "vastai",
            "process",
            "registry",
            "relay_server",
            "subprocess",
        ],
    );
    assert_covers(
        &records,
        "/trigger/kind",
        &["Periodic", "Transition", "OnDemand"],
    );
}

#[test]
fn finalize_records_swactor_writes_are_valid_and_write_back_equal() {
    check_mirror::<finalize::Finalize>("finalize", 64);
}

#[test]
fn manifests_swactor_writes_are_valid_and_write_back_equal() {
    check_mirror::<manifest::Manifest>("manifest", 1024);
}

#[test]
fn post_acks_swactor_writes_are_valid_and_write_back_equal() {
    let records = check_mirror::<collector::PostAck>("post_ack", 256);
    assert_covers(&records, "/keys", &["clock", "hints", "body"]);
}

#[test]
fn error_bodies_swactor_writes_are_valid_and_write_back_equal() {
    check_mirror::<collector::ErrorBody>("error", 64);
}

#[test]
fn runs_listings_swactor_writes_are_valid_and_write_back_equal() {
    check_mirror::<Batch<collector::RunSummary>>("runs", 2048);
}

#[test]
fn live_records_swactor_writes_are_valid_and_write_back_equal() {
    let records = check_mirror::<collector::LiveRecord>("live", 512);
    assert_covers(
        &records,
        "/kind",
        &[
            "boot",
            "events",
            "snapshot",
            "finalize",
            "vastai_instance",
            "vastai_sample",
            "vastai_logs",
            "vastai_lifecycle",
        ],
    );
}

#[test]
fn vastai_records_swactor_writes_are_valid_and_write_back_equal() {
    let records = check_mirror::<vastai::VastaiRecord>("vastai", 1024);
    assert_covers(
        &records,
        "/body/t",
        &["instance", "host_sample", "logs", "lifecycle"],
    );
    assert_covers(
        &records,
        "/body/event",
        &["deploy_start", "contract_leased", "teardown"],
    );
}

// ---------------------------------------------------------------------------------------------
// The reverse direction: what diagwire writes, swactor's readers read.

/// Every tag, closed-enum value and open-enum value any schema names.
fn known_names() -> BTreeSet<String> {
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    match (k.as_str(), x) {
                        ("const", Value::String(s)) => {
                            out.insert(s.clone());
                        }
                        ("enum" | "x-open-enum", Value::Array(items)) => {
                            out.extend(items.iter().filter_map(|i| i.as_str().map(str::to_owned)));
                        }
                        _ => walk(x, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    // Names swactor knows today: those of release 1.0.0, the contract of what it writes.
    for (_, text) in diagwire::releases::v1_0_0::SCHEMA_TEXTS {
        walk(
            &serde_json::from_str(text).expect("schema is JSON"),
            &mut out,
        );
    }
    out
}

/// The value serde names in an "unknown variant `X`" error.
fn unknown_variant_of(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown variant `")?;
    rest.split_once('`').map(|(name, _)| name)
}

/// Draws values of the generated type `G`, writes them with diagwire and reads them with the
/// swactor mirror `M`. Every read must succeed unless the record carries a tag or enum value
/// no schema knows (an `Other` that swactor, lacking a catch-all, cannot represent).
#[track_caller]
fn check_swactor_reads<G, M>(kind: &str, max_len: usize)
where
    G: for<'a> Arbitrary<'a> + Serialize,
    M: DeserializeOwned + Serialize,
{
    let known = known_names();
    let values: Vec<G> = draw(kind, 2, max_len);
    let mut read = 0usize;
    let mut unknown: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for v in &values {
        let text = serde_json::to_string(v).expect("diagwire serializes");
        match serde_json::from_str::<M>(&text) {
            Ok(m) => {
                read += 1;
                // What swactor reads it writes again as a record diagwire accepts.
                let again = serde_json::to_value(&m).expect("the mirror serializes");
                if let Err(e) = Record::from_value(diagwire_compat_tests::kind(kind), again) {
                    failures.push(format!(
                        "{kind}: {text}\n  diagwire rejects swactor's rewrite: {e}"
                    ));
                }
            }
            Err(e) => {
                let message = e.to_string();
                match unknown_variant_of(&message) {
                    Some(name) if !known.contains(name) => {
                        *unknown.entry(kind.to_owned()).or_default() += 1;
                    }
                    _ => failures.push(format!(
                        "{kind}: {text}\n  swactor cannot read it: {message}"
                    )),
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} `{kind}` records diagwire wrote were not read by swactor; the first ones:\n{}",
        failures.len(),
        values.len(),
        failures
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        read * 10 >= values.len(),
        "only {read} of {} drawn `{kind}` records held data swactor knows ({unknown:?} carried unknown tags)",
        values.len()
    );
}

#[test]
fn swactor_reads_the_boot_records_diagwire_writes() {
    check_swactor_reads::<v1::Identity, identity::Identity>("boot", 512);
}

#[test]
fn swactor_reads_the_event_records_diagwire_writes() {
    check_swactor_reads::<v1::EventRecord, legacy_event::EventRecord>("event", 512);
}

#[test]
fn swactor_reads_the_event_batches_diagwire_writes() {
    check_swactor_reads::<v1::EventBatch, Vec<legacy_event::EventRecord>>("event_batch", 512);
}

#[test]
fn swactor_reads_the_snapshots_diagwire_writes() {
    check_swactor_reads::<v1::Snapshot, snapshot::Snapshot>("snapshot", 2048);
}

#[test]
fn swactor_reads_the_manifests_diagwire_writes() {
    check_swactor_reads::<v1::Manifest, manifest::Manifest>("manifest", 1024);
}

#[test]
fn swactor_reads_the_post_acks_diagwire_writes() {
    check_swactor_reads::<v1::PostAck, collector::PostAck>("post_ack", 256);
}

#[test]
fn swactor_reads_the_vastai_records_diagwire_writes() {
    check_swactor_reads::<v1::VastaiRecord, vastai::VastaiRecord>("vastai", 1024);
}
