//! Released schemas are immutable, and a schema change needs a new version.

use diagwire_codegen::release::{frozen_problems, unreleased_change};
use diagwire_codegen::workspace_root;

#[test]
fn released_schemas_are_frozen() {
    let problems = frozen_problems(&workspace_root()).unwrap_or_else(|e| panic!("{e:#}"));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn schemas_changed_since_the_current_release_need_a_new_version() {
    if let Some(problem) = unreleased_change(&workspace_root()).unwrap_or_else(|e| panic!("{e:#}"))
    {
        panic!("{problem}");
    }
}

#[test]
fn the_current_version_has_a_changelog_section() {
    let root = workspace_root();
    let version = diagwire_codegen::contract_version(&root).expect("schemas/VERSION");
    let changelog = std::fs::read_to_string(root.join("CHANGELOG.md")).expect("CHANGELOG.md");
    assert!(
        changelog
            .lines()
            .any(|l| l.starts_with(&format!("## {version} "))),
        "CHANGELOG.md has no `## {version} …` section"
    );
}

#[test]
fn the_current_version_is_a_semantic_version_not_below_the_last_release() {
    let root = workspace_root();
    let version = diagwire_codegen::contract_version(&root).unwrap_or_else(|e| panic!("{e:#}"));
    let releases = diagwire_codegen::released_versions(&root).unwrap_or_else(|e| panic!("{e:#}"));
    let last = releases.last().expect("at least one release is frozen");
    assert!(
        version >= *last,
        "schemas/VERSION {version} is below the last release {last}"
    );
}

#[test]
fn releases_sort_by_semantic_version_with_pre_releases_first() {
    let dir = tempfile::tempdir().expect("temp dir");
    for v in [
        "1.10.0",
        "1.2.0",
        "1.1.0",
        "1.1.0-rc.1",
        "1.1.0-rc.10",
        "1.1.0-rc.2",
    ] {
        std::fs::create_dir_all(dir.path().join("schemas/releases").join(v)).expect("mkdir");
    }
    let got: Vec<String> = diagwire_codegen::released_versions(dir.path())
        .unwrap_or_else(|e| panic!("{e:#}"))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        got,
        [
            "1.1.0-rc.1",
            "1.1.0-rc.2",
            "1.1.0-rc.10",
            "1.1.0",
            "1.2.0",
            "1.10.0"
        ]
    );
}

#[test]
fn a_release_folder_that_is_not_a_semantic_version_is_an_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("schemas/releases/1.1")).expect("mkdir");
    let e = diagwire_codegen::released_versions(dir.path()).expect_err("1.1 is not semver");
    assert!(
        format!("{e:#}").contains("schemas/releases/1.1: not a semantic version"),
        "{e:#}"
    );
}
