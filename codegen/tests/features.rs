//! The feature schemas (`tests/features/`): one small schema per profile construct, each rendered on
//! its own into `codegen-features/src/features/`, which compiles the output and tests its wire
//! behaviour (`codegen-features/tests/behaviour.rs`). The rendered modules are the generator's
//! snapshots: `cargo codegen --check` and the freshness test fail when one differs.

use std::fs;

use diagwire_codegen::{FEATURES_OUT, read_features, workspace_root};

#[test]
fn every_feature_schema_is_rendered_and_exercised() {
    let root = workspace_root();
    let behaviour = fs::read_to_string(root.join("codegen-features/tests/behaviour.rs"))
        .expect("codegen-features/tests/behaviour.rs");
    let files = read_features(&root).unwrap_or_else(|e| panic!("{e:#}"));
    assert!(files.len() >= 15, "only {} feature schemas", files.len());
    for (path, stem, _) in &files {
        let module = root.join(FEATURES_OUT).join(format!("{stem}.rs"));
        assert!(module.exists(), "{path} has no rendered module");
        assert!(
            behaviour.contains(&format!("{stem}::")),
            "{path}: no behaviour test uses `{stem}::`"
        );
    }
}

#[test]
fn feature_type_names_are_unique_across_files() {
    let files = read_features(&workspace_root()).unwrap_or_else(|e| panic!("{e:#}"));
    diagwire_schema::load(&files).unwrap_or_else(|e| panic!("{e:#}"));
}
