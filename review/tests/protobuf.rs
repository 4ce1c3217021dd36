//! The protobuf side of the review on the real schemas: each tree finds its number table by the
//! repository's conventions, the descriptors it compares are the ones `cargo codegen` generates, the
//! releases and the current schemas agree in the binary form, and a renumbered field in a copy of
//! the newest release is caught with a counterexample the codec confirms.

use std::path::{Path, PathBuf};

use diagwire::proto::{DESCRIPTORS, Descriptor};
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

/// The generated descriptor of `version` (a release, or `"current"`).
fn generated(version: &str) -> &'static Descriptor {
    DESCRIPTORS
        .iter()
        .find(|(v, _)| *v == version)
        .map(|(_, d)| *d)
        .unwrap_or_else(|| panic!("no generated descriptor {version}"))
}

/// A descriptor with the package name of `like`, which only the `.proto` file's place decides.
fn packaged(mut d: Descriptor, like: &Descriptor) -> Descriptor {
    d.package = like.package.clone();
    d
}

#[test]
fn the_review_compares_the_descriptors_cargo_codegen_generates() {
    for v in releases() {
        let tree = release(&v);
        assert_eq!(
            table(&tree),
            format!("schemas/releases/{v}/proto-numbers.json")
        );
        let generated = generated(&v);
        let side = Side::of(&tree).unwrap_or_else(|e| panic!("{v}: {e}"));
        assert_eq!(
            &packaged(side.descriptor, generated),
            generated,
            "release {v}"
        );
    }
    let mut current = Tree::load_dir(&repo().join("schemas")).expect("schemas");
    current.version = diagwire_schema::contract_version(&repo()).ok();
    assert_eq!(table(&current), "schemas/proto-numbers.json");
    let generated = generated("current");
    let side = Side::of(&current).expect("current");
    assert_eq!(&packaged(side.descriptor, generated), generated, "current");
}

#[test]
fn every_release_agrees_with_the_current_schemas_in_the_binary_form() {
    let current = Tree::load_dir(&repo().join("schemas")).expect("schemas");
    for v in releases() {
        let c = compare(&release(&v), &current).expect("compare");
        assert_eq!(
            c.protobuf,
            Status::Compared {
                old: format!("schemas/releases/{v}/proto-numbers.json"),
                new: "schemas/proto-numbers.json".into(),
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
        // The schemas only: the release's number table stays behind.
        if path.file_name().is_some_and(|n| n == NUMBER_FILE) {
            continue;
        }
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
    let frozen = std::fs::read_to_string(from.join(NUMBER_FILE)).expect("frozen numbers");
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
