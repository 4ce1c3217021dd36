//! Every file of both example bundles parses as its record kind, round-trips through its type
//! unchanged and is valid against its schema; generation is deterministic.

use std::collections::{BTreeMap, BTreeSet};

use diagwire::bundle::BundleContents;
use diagwire::v1::{Record, RecordKind};
use diagwire::validate::Validators;
use diagwire_example::{n3_relay_flap, n3_relay_flap_oldest};
use serde_json::Value;

use crate::support::*;

#[test]
fn generator_is_deterministic() {
    assert_eq!(n3_relay_flap(), n3_relay_flap());
    assert_eq!(n3_relay_flap_oldest(), n3_relay_flap_oldest());
}

#[test]
fn every_file_parses_as_its_record_kind() {
    every_file_parses(&n3_relay_flap());
    every_file_parses(&n3_relay_flap_oldest());
}

fn every_file_parses(bundle: &BundleContents) {
    let mut failures = Vec::new();
    let mut kinds: BTreeMap<RecordKind, usize> = BTreeMap::new();
    for (path, bytes) in &bundle.files {
        let Some(kind) = kind_of(path) else {
            failures.push(format!("{path}: not a file of the collector layout"));
            continue;
        };
        let text = std::str::from_utf8(bytes).expect("UTF-8");
        match Record::parse(kind, text) {
            Ok(record) => {
                assert_eq!(record.kind(), kind, "{path}");
                *kinds.entry(kind).or_default() += 1;
            }
            Err(e) => failures.push(format!("{path}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(kinds.values().sum::<usize>(), bundle.files.len());
    for kind in [
        RecordKind::Manifest,
        RecordKind::Boot,
        RecordKind::EventBatch,
        RecordKind::Snapshot,
        RecordKind::Finalize,
    ] {
        assert!(kinds.contains_key(&kind), "no {kind:?} file in {kinds:?}");
    }
}

#[test]
fn every_file_round_trips_through_its_type_unchanged() {
    for (path, bytes) in n3_relay_flap()
        .files
        .iter()
        .chain(&n3_relay_flap_oldest().files)
    {
        let kind = kind_of(path).expect("known layout");
        let value: Value = serde_json::from_slice(bytes).expect("JSON");
        let record = Record::from_value(kind, value.clone()).expect("parses");
        assert_eq!(
            serde_json::to_value(&record).expect("serializes"),
            value,
            "{path}"
        );
    }
}

#[test]
fn every_file_is_valid_against_its_schema() {
    let validators = Validators::new().expect("schemas compile");
    let mut failures = Vec::new();
    let mut kinds = BTreeSet::new();
    for (path, bytes) in n3_relay_flap()
        .files
        .iter()
        .chain(&n3_relay_flap_oldest().files)
    {
        let kind = kind_of(path).expect("known layout");
        let value: Value = serde_json::from_slice(bytes).expect("JSON");
        for v in validators.violations(kind, &value) {
            failures.push(format!("{path} {}: {}", v.pointer, v.message));
        }
        kinds.insert(kind);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // No violations means something only if the validators know the kind: they reject `null`.
    assert_eq!(kinds.len(), 5, "{kinds:?}");
    for kind in kinds {
        assert!(
            !validators.violations(kind, &Value::Null).is_empty(),
            "{kind:?}"
        );
    }
}
