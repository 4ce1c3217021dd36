//! The rule catalog, rule by rule: each rule has a fixture pair (`tests/rules/<ID>/old/` and `new/`,
//! a small contract before and after one change) and the findings it must produce
//! (`expected.txt`, one `RULE_ID place` per line). Every finding whose rule breaks a reader on the
//! wire must come with a counterexample the readers confirm (for a protobuf rule, the codec).
//! A fixture of a protobuf rule holds a `proto-numbers.json` on each side; the others hold none,
//! so their comparisons skip the protobuf rules.

use std::path::{Path, PathBuf};

use diagwire_codegen::proto::{Numbers, update_numbers};
use diagwire_review::catalog::{self, Effect};
use diagwire_review::compare;
use diagwire_review::proto::Status;
use diagwire_review::tree::{NUMBER_FILE, NumberTable, Tree};

fn rules_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rules")
}

/// Compares the fixture pair of `id` and checks its findings and counterexamples.
#[track_caller]
fn check(id: &str) {
    let dir = rules_dir().join(id);
    let old = Tree::load_dir(&dir.join("old")).unwrap_or_else(|e| panic!("{id}/old: {e:#}"));
    let new = Tree::load_dir(&dir.join("new")).unwrap_or_else(|e| panic!("{id}/new: {e:#}"));
    let c = compare(&old, &new).unwrap_or_else(|e| panic!("{id}: {e:#}"));
    let tables = ["old", "new"].map(|side| dir.join(side).join(NUMBER_FILE).is_file());
    match (&c.protobuf, tables) {
        (Status::Compared { .. }, [true, true]) | (Status::Skipped(_), [false, false]) => {}
        (status, _) => panic!("{id}: number tables {tables:?}, protobuf {status:?}"),
    }
    assert_eq!(
        id.starts_with("PROTO_"),
        tables == [true, true],
        "{id}: the fixtures of the protobuf rules, and only those, hold number tables"
    );
    let mut got: Vec<String> = c
        .findings
        .iter()
        .map(|f| format!("{} {}", f.finding.rule.id, f.finding.at))
        .collect();
    got.sort();
    let expected = std::fs::read_to_string(dir.join("expected.txt")).expect("expected.txt");
    let want: Vec<&str> = expected.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(got, want, "{id}: findings");
    let rule = catalog::rule(id).expect("a catalog rule");
    assert!(
        c.findings.iter().any(|f| f.finding.rule.id == id),
        "{id}: the fixture does not produce its own rule"
    );
    for f in &c.findings {
        let r = f.finding.rule;
        let wire_break = r.old_reader.breaks() || r.new_reader.breaks();
        let api_only = [r.old_reader, r.new_reader].iter().all(|e| !e.breaks());
        if *r == catalog::UNCLASSIFIED || api_only {
            continue;
        }
        assert!(wire_break);
        let x = f.counterexample.as_ref().unwrap_or_else(|| {
            panic!("{id}: `{}` at {} has no counterexample", r.id, f.finding.at)
        });
        assert!(
            x.confirmed,
            "{id}: the counterexample of `{}` is not confirmed: {} {:?}",
            r.id, x.record, x.verdicts
        );
    }
    let _ = (rule, Effect::Unaffected);
}

macro_rules! rules {
    ($($id:ident),* $(,)?) => {
        $(
            #[test]
            #[allow(non_snake_case)]
            fn $id() {
                check(stringify!($id));
            }
        )*

        const TESTED: &[&str] = &[$(stringify!($id)),*];
    };
}

rules!(
    RECORD_KIND_ADDED,
    RECORD_KIND_REMOVED,
    TYPE_ADDED,
    TYPE_REMOVED,
    TYPE_KIND_CHANGED,
    TYPE_MOVED,
    FIELD_ADDED_OPTIONAL,
    FIELD_ADDED_REQUIRED,
    FIELD_REMOVED_OPTIONAL,
    FIELD_REMOVED_REQUIRED,
    FIELD_RENAMED,
    FIELD_REQUIRED_TO_OPTIONAL,
    FIELD_OPTIONAL_TO_REQUIRED,
    FIELD_PRESENCE_SPELLING_CHANGED,
    FIELD_PRESENCE_DEFAULTED,
    FIELD_PRESENCE_UNDEFAULTED,
    FIELD_TYPE_CHANGED,
    INTEGER_WIDENED,
    INTEGER_NARROWED,
    BOUND_ADDED,
    BOUND_LOOSENED,
    ENUM_VALUE_ADDED_OPEN,
    ENUM_VALUE_ADDED_CLOSED,
    ENUM_VALUE_REMOVED_OPEN,
    ENUM_VALUE_REMOVED_CLOSED,
    ENUM_OPENED,
    ENUM_CLOSED,
    UNION_VARIANT_ADDED_OPEN,
    UNION_VARIANT_ADDED_CLOSED,
    UNION_VARIANT_REMOVED,
    UNION_OPENED,
    UNION_CLOSED,
    UNION_TAG_KEY_CHANGED,
    UNION_TAG_VALUE_CHANGED,
    UNION_STYLE_CHANGED,
    FLATTEN_CHANGED,
    FLATTEN_FIELD_RENAMED,
    PROVENANCE_WIDENED,
    PROVENANCE_NARROWED,
    FIELD_BECAME_DERIVED,
    FIELD_BECAME_DERIVED_DISCRIMINATED,
    FIELD_BECAME_REPORTED,
    UNIT_CHANGED,
    UNIT_RESPELLED,
    REQUIRED_FIELDS_REORDERED,
    ORDER_CHANGED,
    DESCRIPTION_CHANGED,
    PROTO_NUMBER_CHANGED,
    PROTO_NUMBER_REUSED,
    PROTO_WIRE_TYPE_CHANGED,
    PROTO_ENCODING_CHANGED,
    PROTO_INTEGER_WIDENED,
    PROTO_INTEGER_NARROWED,
    PROTO_ONEOF_MEMBER_REMOVED,
    PROTO_ONEOF_CHANGED,
    UNCLASSIFIED,
);

/// The protobuf findings of each JSON rule's fixture when both sides are numbered as `cargo codegen`
/// numbers them (every name keeps its number; a removed name is reserved): what the change does to
/// protobuf readers. A fixture not listed must have none: additions, removals, presence, enum and
/// union openness, tag keys and styles do not change how the binary form carries what both sides
/// know.
const PROTOBUF_OF_JSON_FIXTURES: &[(&str, &[&str])] = &[
    (
        "FIELD_TYPE_CHANGED",
        &["PROTO_WIRE_TYPE_CHANGED sample#Sample.id"],
    ),
    (
        "FLATTEN_CHANGED",
        &["PROTO_ENCODING_CHANGED sample#Envelope.@body"],
    ),
    (
        "INTEGER_NARROWED",
        &["PROTO_INTEGER_NARROWED sample#Sample.size"],
    ),
    (
        "INTEGER_WIDENED",
        &["PROTO_INTEGER_WIDENED sample#Sample.count"],
    ),
    (
        "TYPE_KIND_CHANGED",
        &["PROTO_WIRE_TYPE_CHANGED sample#Sample.mood"],
    ),
    (
        "UNION_TAG_VALUE_CHANGED",
        &["PROTO_ONEOF_MEMBER_REMOVED sample#Body.Ping"],
    ),
    (
        "UNION_VARIANT_REMOVED",
        &["PROTO_ONEOF_MEMBER_REMOVED sample#Shape.square"],
    ),
];

#[test]
fn numbered_as_codegen_numbers_them_the_json_fixtures_show_what_protobuf_readers_see() {
    for r in catalog::ALL.iter().filter(|r| !r.is_protobuf()) {
        let dir = rules_dir().join(r.id);
        let mut old = Tree::load_dir(&dir.join("old")).expect("old");
        let mut new = Tree::load_dir(&dir.join("new")).expect("new");
        let o = update_numbers(&Numbers::default(), &[&old.model]);
        let n = update_numbers(&o, &[&old.model, &new.model]);
        old.numbers = NumberTable::Found {
            path: "old".into(),
            numbers: o,
        };
        new.numbers = NumberTable::Found {
            path: "new".into(),
            numbers: n,
        };
        let c = compare(&old, &new).unwrap_or_else(|e| panic!("{}: {e:#}", r.id));
        assert!(
            matches!(c.protobuf, Status::Compared { .. }),
            "{}: {:?}",
            r.id,
            c.protobuf
        );
        let protobuf: Vec<_> = c
            .findings
            .iter()
            .filter(|f| f.finding.rule.is_protobuf())
            .collect();
        let got: Vec<String> = protobuf
            .iter()
            .map(|f| format!("{} {}", f.finding.rule.id, f.finding.at))
            .collect();
        let want = PROTOBUF_OF_JSON_FIXTURES
            .iter()
            .find(|(id, _)| *id == r.id)
            .map_or(&[][..], |(_, w)| *w);
        assert_eq!(got, want, "{}: protobuf findings", r.id);
        for f in protobuf {
            // An absorbed union's field has no counterexample of its own: its variants' do.
            if f.finding
                .at
                .member
                .as_deref()
                .is_some_and(|m| m.starts_with('@'))
            {
                continue;
            }
            let x = f.counterexample.as_ref().unwrap_or_else(|| {
                panic!("{}: `{}` has no counterexample", r.id, f.finding.rule.id)
            });
            assert!(x.confirmed, "{}: {:?}", r.id, x.verdicts);
        }
    }
}

#[test]
fn every_rule_has_a_fixture_and_a_test() {
    for r in catalog::ALL {
        assert!(
            rules_dir().join(r.id).join("expected.txt").exists(),
            "rule `{}` has no fixture",
            r.id
        );
        assert!(TESTED.contains(&r.id), "rule `{}` has no test", r.id);
    }
}

#[test]
fn every_fixture_names_a_rule() {
    for entry in std::fs::read_dir(rules_dir()).expect("tests/rules") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        assert!(
            catalog::rule(&name).is_some(),
            "tests/rules/{name} names no rule"
        );
    }
}

#[test]
fn the_rules_page_is_up_to_date() {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/review-rules.md");
    let on_disk = std::fs::read_to_string(&page).unwrap_or_default();
    assert!(
        on_disk == diagwire_review::report::catalog_md(),
        "docs/review-rules.md is stale: run `cargo diagwire review --catalog > docs/review-rules.md`"
    );
}
