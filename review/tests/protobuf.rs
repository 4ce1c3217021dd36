//! The protobuf side of the review on the real schemas: each tree finds its number table by the
//! repository's conventions, the layouts it compares are the ones `cargo codegen` generates, the
//! releases and the current schemas agree in the binary form, and a renumbered field in a copy of
//! the newest release is caught with a counterexample the codec confirms.

use std::path::{Path, PathBuf};

use diagwire_review::proto::{Side, Status};
use diagwire_review::tree::{NUMBER_FILE, NumberTable, Tree};
use diagwire_review::{compare, report};
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn releases() -> Vec<String> {
    diagwire_schema::released_versions(&repo())
        .expect("releases")
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn release(v: &str) -> Tree {
    Tree::load_dir(&repo().join("schemas/releases").join(v)).expect("release")
}

fn table(t: &Tree) -> &str {
    match &t.numbers {
        NumberTable::Found { path, .. } => path,
        other => panic!("{}: {other:?}", t.label),
    }
}

/// A layout without its package name, which only the `.proto` file's place decides.
fn unpackaged(mut v: Value) -> Value {
    v.as_object_mut().expect("a layout").remove("package");
    v
}

#[test]
fn the_review_compares_the_layouts_cargo_codegen_generates() {
    for v in releases() {
        let tree = release(&v);
        assert_eq!(table(&tree), format!("proto/releases/{v}.json"));
        let module = diagwire_schema::release_module(&v.parse().expect("version"));
        let generated = repo().join(format!(
            "generated/proto/diagwire/releases/{module}.layout.json"
        ));
        let generated: Value =
            serde_json::from_str(&std::fs::read_to_string(generated).expect("layout"))
                .expect("JSON");
        let side = Side::of(&tree).unwrap_or_else(|e| panic!("{v}: {e}"));
        assert_eq!(unpackaged(side.json), unpackaged(generated), "release {v}");
    }
    let mut current = Tree::load_dir(&repo().join("schemas")).expect("schemas");
    current.version = diagwire_schema::contract_version(&repo()).ok();
    assert_eq!(table(&current), "proto/numbers.json");
    let generated: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("generated/proto/diagwire/v1.layout.json"))
            .expect("layout"),
    )
    .expect("JSON");
    let side = Side::of(&current).expect("current");
    assert_eq!(unpackaged(side.json), unpackaged(generated), "current");
}

#[test]
fn every_release_agrees_with_the_current_schemas_in_the_binary_form() {
    let current = Tree::load_dir(&repo().join("schemas")).expect("schemas");
    for v in releases() {
        let c = compare(&release(&v), &current).expect("compare");
        assert_eq!(
            c.protobuf,
            Status::Compared {
                old: format!("proto/releases/{v}.json"),
                new: "proto/numbers.json".into(),
            }
        );
        let protobuf: Vec<&str> = c
            .findings
            .iter()
            .filter(|f| f.finding.rule.is_protobuf())
            .map(|f| f.finding.rule.id)
            .collect();
        assert!(protobuf.is_empty(), "release {v}: {protobuf:?}");
    }
}

#[test]
fn a_renumbered_field_in_a_copy_of_the_newest_release_is_caught_and_misread() {
    let newest = releases().pop().expect("a release");
    let dir = tempfile::tempdir().expect("temp dir");
    let from = repo().join("schemas/releases").join(&newest);
    for entry in std::fs::read_dir(&from).expect("release") {
        let path = entry.expect("entry").path();
        std::fs::copy(&path, dir.path().join(path.file_name().expect("name"))).expect("copy");
    }
    // Without a table of its own, the copy is compared in its JSON form only, and says so.
    let old = release(&newest);
    let plain = Tree::load_dir(dir.path()).expect("copy");
    let c = compare(&old, &plain).expect("compare");
    assert!(c.is_empty());
    let Status::Skipped(why) = &c.protobuf else {
        panic!("{:?}", c.protobuf)
    };
    assert!(why.contains(NUMBER_FILE), "{why}");
    let mut md = String::new();
    report::comparison_md(&c, &mut md);
    assert!(md.contains("Protobuf: not compared — "), "{md}");
    // With the release's numbers, one of them changed by hand.
    let frozen = std::fs::read_to_string(repo().join(format!("proto/releases/{newest}.json")))
        .expect("frozen numbers");
    let mut numbers: Value = serde_json::from_str(&frozen).expect("JSON");
    let t = &mut numbers["messages"]["DialStarted"]["numbers"];
    let fresh = t
        .as_object()
        .expect("DialStarted")
        .values()
        .filter_map(Value::as_u64)
        .max()
        .expect("numbers")
        + 1;
    t["timeout_ms"] = fresh.into();
    std::fs::write(
        dir.path().join(NUMBER_FILE),
        serde_json::to_string_pretty(&numbers).expect("JSON"),
    )
    .expect("write");
    let renumbered = Tree::load_dir(dir.path()).expect("copy");
    let c = compare(&old, &renumbered).expect("compare");
    let ids: Vec<String> = c
        .findings
        .iter()
        .map(|f| format!("{} {}", f.finding.rule.id, f.finding.at))
        .collect();
    assert_eq!(ids, ["PROTO_NUMBER_CHANGED event#DialStarted.timeout_ms"]);
    let x = c.findings[0]
        .counterexample
        .as_ref()
        .expect("a counterexample");
    assert!(x.confirmed, "{:?}", x.verdicts);
    assert_eq!(x.kind, "event");
    let mut md = String::new();
    report::comparison_md(&c, &mut md);
    assert!(md.contains("No differences in the JSON form."), "{md}");
    assert!(md.contains("#### Protobuf"), "{md}");
    assert!(md.contains("counterexample (confirmed)"), "{md}");
    let json = report::comparison_json(&c);
    assert_eq!(json["protobuf"]["compared"], true);
    assert_eq!(json["findings"][0]["form"], "protobuf");
}
