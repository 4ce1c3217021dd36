//! A record's view (`diagwire::view`) read against two readings that do not go through it: the
//! generated types, which keep every key they do not name as an unknown key (and count it), and
//! serde_json's `Value` of the same text.
//!
//! * Unknown keys: a record the typed decode finds none in has none in its view; in one it finds
//!   some, taking out every key the view reports leaves none, and each key reported is one the
//!   types do not name (kept alone, the decode counts it).
//! * Instances: at each struct instance's pointer the value's object holds what the instance says
//!   of each of its fields (absent, `null` or present, and its string).
//!
//! Over every record of the shipped example bundles and the 1.1.0 golden archive, and a snapshot
//! with hostile unknown keys (an object holding an array, a key that needs escaping).

#![cfg(feature = "bundle")]

use std::path::{Path, PathBuf};

use diagwire::bundle::read::{BundleReader, Limits};
use diagwire::bundle::records::walk;
use diagwire::shape::ValueShape;
use diagwire::v1::{CONTRACT, Record, RecordKind};
use diagwire::view::{Buffer, Shapes, Slot, Tape, unknown_keys};
use diagwire_runtime::unknown_keys_read;
use serde_json::Value;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

fn bundles() -> Vec<PathBuf> {
    let mut out = vec![repo().join("compat-tests/fixtures/1.1.0/golden.tar.gz")];
    for entry in std::fs::read_dir(repo().join("examples/bundles")).unwrap() {
        out.push(entry.unwrap().path());
    }
    out.sort();
    out
}

/// Whether the typed decode of `text` keeps a key as unknown.
fn types_keep_unknown(kind: RecordKind, text: &str) -> bool {
    let before = unknown_keys_read();
    Record::parse(kind, text).expect("the record still reads");
    unknown_keys_read() != before
}

/// `value` less the keys at `pointers`.
fn without(value: &Value, pointers: &[String]) -> Value {
    let mut out = value.clone();
    for p in pointers {
        let (parent, last) = p.rsplit_once('/').unwrap();
        let key = last.replace("~1", "/").replace("~0", "~");
        out.pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .unwrap_or_else(|| panic!("no object at {parent:?}"))
            .remove(&key)
            .unwrap_or_else(|| panic!("no key at {p:?}"));
    }
    out
}

/// Whether the typed record holds a union value of a variant its types do not know: the types
/// keep such a value's keys too, and the view leaves it to the caller (an unknown type, not
/// unknown keys).
fn holds_unknown_variant(kind: RecordKind, text: &str) -> bool {
    let record = Record::parse(kind, text).expect("the record reads");
    format!("{record:?}").contains("UnknownVariant")
}

/// Checks one record's view against its two other readings; returns how many struct instances
/// and unknown keys it holds, and whether its keys could be checked (no unknown variant).
fn check_record(kind: RecordKind, text: &str, at: &str) -> (usize, usize, bool) {
    let value: Value = serde_json::from_str(text).unwrap();
    let tape = Tape::read(text, Buffer::default()).expect("the tape reads every record");
    let reported = unknown_keys(&CONTRACT, kind.as_str(), &tape);
    let keys_checked = !holds_unknown_variant(kind, text);
    if keys_checked {
        assert_eq!(
            reported.is_empty(),
            !types_keep_unknown(kind, text),
            "{at}: the view reports {reported:?}"
        );
        if !reported.is_empty() {
            let rest = without(&value, &reported).to_string();
            assert!(!types_keep_unknown(kind, &rest), "{at}: a key is missed");
            for (i, p) in reported.iter().enumerate() {
                let mut others = reported.clone();
                others.remove(i);
                let alone = without(&value, &others).to_string();
                assert!(types_keep_unknown(kind, &alone), "{at}: {p} is a known key");
            }
        }
    }
    let def = CONTRACT.record(kind.as_str()).unwrap().def;
    let mut found = 0;
    Shapes::of(&CONTRACT).instances(&ValueShape::Ref(def), &tape, &mut |inst| {
        found += 1;
        let ptr = inst.ptr();
        let obj = value
            .pointer(&ptr)
            .and_then(Value::as_object)
            .unwrap_or_else(|| panic!("{at}: no object at {ptr:?}"));
        for (i, f) in inst.fields.iter().enumerate() {
            let expected = match obj.get(f.key) {
                None => Slot::Absent,
                Some(Value::Null) => Slot::Null,
                Some(_) => Slot::Present,
            };
            assert_eq!(inst.slot(i), expected, "{at}: {ptr}/{}", f.key);
            assert_eq!(
                inst.str_of(f.key).as_deref(),
                obj.get(f.key).and_then(Value::as_str),
                "{at}: {ptr}/{}",
                f.key
            );
        }
    });
    (found, reported.len(), keys_checked)
}

/// A snapshot of an example bundle, with unknown keys planted in its first iroh peer.
fn hostile_snapshot() -> String {
    let path = repo().join("examples/bundles/n3-relay-flap");
    let mut reader = BundleReader::open(&path, Limits::default()).unwrap();
    let mut text = None;
    walk(
        &mut reader,
        |item| {
            if text.is_none()
                && item.record.kind() == RecordKind::Snapshot
                && item.text.contains("\"peers\": [\n")
            {
                text = Some(item.text.to_owned());
            }
        },
        |_| {},
    );
    let mut value: Value =
        serde_json::from_str(&text.expect("a snapshot with iroh peers")).unwrap();
    let peer = value
        .pointer_mut("/body/iroh/peers/0")
        .and_then(Value::as_object_mut)
        .expect("an iroh peer");
    peer.insert("x_peer".into(), serde_json::json!({"a": [1, "b"]}));
    peer.insert("x\"esc/aped~".into(), Value::Null);
    value.to_string()
}

#[test]
fn the_view_reads_each_record_as_its_types_and_serde_json_read_it() {
    let (mut records, mut instances, mut unknown, mut unchecked) = (0, 0, 0, 0);
    for path in bundles() {
        let mut reader = BundleReader::open(&path, Limits::default()).unwrap();
        walk(
            &mut reader,
            |item| {
                let at = format!("{}: {}:{}", path.display(), item.path, item.index);
                let (i, u, checked) = check_record(item.record.kind(), item.text, &at);
                instances += i;
                unknown += u;
                unchecked += usize::from(!checked);
                records += 1;
            },
            |_| {},
        );
    }
    // The golden archive holds unknown keys of every kind and a few unknown variants.
    assert!(
        records > 1000 && instances > records && unknown >= 50 && unchecked * 100 < records,
        "{records} records, {instances} instances, {unknown} unknown keys, {unchecked} unchecked"
    );
    let (_, planted, _) = check_record(RecordKind::Snapshot, &hostile_snapshot(), "planted");
    assert_eq!(planted, 2);
}

#[test]
fn a_planted_key_is_reported_at_its_escaped_pointer() {
    let text = hostile_snapshot();
    let tape = Tape::read(&text, Buffer::default()).unwrap();
    let mut reported = unknown_keys(&CONTRACT, "snapshot", &tape);
    reported.sort();
    assert_eq!(
        reported,
        [
            "/body/iroh/peers/0/x\"esc~1aped~0",
            "/body/iroh/peers/0/x_peer"
        ]
    );
}
