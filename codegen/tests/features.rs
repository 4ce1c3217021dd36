//! Snapshots of the generator's output for one small schema per profile construct (`tests/features/`).
//!
//! Each feature schema is lowered and rendered on its own through [`render_module`]; the source is
//! snapshotted with insta and must be exactly the module `cargo codegen` wrote into
//! `codegen-features/src/features/`, which that crate compiles and exercises.

use std::fs;

use diagwire_codegen::{FEATURES_OUT, read_features, render_module, workspace_root};

/// Every feature schema, by file name without `.schema.json`; each has its test below.
const FEATURES: &[&str] = &[
    "adjacent-union-closed",
    "adjacent-union-flattened",
    "any-json",
    "array-alias-record",
    "closed-string-enum",
    "external-union",
    "id-aliases",
    "internal-union-closed",
    "internal-union-flattened",
    "internal-union-nested",
    "internal-union-open",
    "open-string-enum",
    "provenance",
    "struct-presence",
    "tuple-and-array",
];

/// Renders `codegen/tests/features/<name>.schema.json` on its own and checks that the rendered
/// module is the one checked in under `codegen-features/src/features/`.
fn rendered(name: &str) -> String {
    let root = workspace_root();
    let files = read_features(&root).unwrap_or_else(|e| panic!("{e:#}"));
    let display = format!("codegen/tests/features/{name}.schema.json");
    let doc = files
        .iter()
        .find(|(path, _, _)| *path == display)
        .unwrap_or_else(|| panic!("{display} does not exist"));
    let mut modules = render_module(std::slice::from_ref(doc)).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(modules.len(), 1, "one document renders as one module");
    let (stem, source) = modules.remove(0);
    assert_eq!(stem, name.replace('-', "_"));
    let path = root.join(FEATURES_OUT).join(format!("{stem}.rs"));
    let on_disk = fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == source,
        "{} differs from what the generator renders for {display}; run `cargo codegen`",
        path.display()
    );
    source
}

#[test]
fn every_feature_schema_has_a_snapshot_test() {
    let files = read_features(&workspace_root()).unwrap_or_else(|e| panic!("{e:#}"));
    let on_disk: Vec<String> = files
        .iter()
        .map(|(path, _, _)| {
            let file = path.rsplit('/').next().unwrap_or_default();
            file.trim_end_matches(".schema.json").to_owned()
        })
        .collect();
    assert_eq!(on_disk, FEATURES);
}

#[test]
fn feature_type_names_are_unique_across_files() {
    let files = read_features(&workspace_root()).unwrap_or_else(|e| panic!("{e:#}"));
    diagwire_codegen::lower(&files).unwrap_or_else(|e| panic!("{e:#}"));
}

#[test]
fn struct_presence() {
    insta::assert_snapshot!(rendered("struct-presence"));
}

#[test]
fn open_string_enum() {
    insta::assert_snapshot!(rendered("open-string-enum"));
}

#[test]
fn closed_string_enum() {
    insta::assert_snapshot!(rendered("closed-string-enum"));
}

#[test]
fn internal_union_open() {
    insta::assert_snapshot!(rendered("internal-union-open"));
}

#[test]
fn internal_union_closed() {
    insta::assert_snapshot!(rendered("internal-union-closed"));
}

#[test]
fn internal_union_nested() {
    insta::assert_snapshot!(rendered("internal-union-nested"));
}

#[test]
fn adjacent_union_closed() {
    insta::assert_snapshot!(rendered("adjacent-union-closed"));
}

#[test]
fn adjacent_union_flattened() {
    insta::assert_snapshot!(rendered("adjacent-union-flattened"));
}

#[test]
fn internal_union_flattened() {
    insta::assert_snapshot!(rendered("internal-union-flattened"));
}

#[test]
fn external_union() {
    insta::assert_snapshot!(rendered("external-union"));
}

#[test]
fn tuple_and_array() {
    insta::assert_snapshot!(rendered("tuple-and-array"));
}

#[test]
fn id_aliases() {
    insta::assert_snapshot!(rendered("id-aliases"));
}

#[test]
fn provenance() {
    insta::assert_snapshot!(rendered("provenance"));
}

#[test]
fn array_alias_record() {
    insta::assert_snapshot!(rendered("array-alias-record"));
}

#[test]
fn any_json() {
    insta::assert_snapshot!(rendered("any-json"));
}
