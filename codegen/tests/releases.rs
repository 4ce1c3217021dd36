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

/// A copy of the repository's releases (schemas, number tables and fingerprints) in a temporary
/// root.
fn copied_releases() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let from = workspace_root().join("schemas/releases");
    let to = dir.path().join("schemas/releases");
    for entry in std::fs::read_dir(&from).expect("releases") {
        let path = entry.expect("entry").path();
        let target = to.join(path.file_name().expect("name"));
        if path.is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            for file in std::fs::read_dir(&path).expect("release") {
                let file = file.expect("file").path();
                std::fs::copy(&file, target.join(file.file_name().expect("name"))).expect("copy");
            }
        } else {
            std::fs::create_dir_all(&to).expect("mkdir");
            std::fs::copy(&path, &target).expect("copy");
        }
    }
    dir
}

#[test]
fn a_release_number_table_is_frozen_with_its_schemas() {
    let dir = copied_releases();
    let root = dir.path();
    assert!(frozen_problems(root).expect("problems").is_empty());
    let oldest = diagwire_codegen::released_versions(root).expect("releases")[0].to_string();
    let table = root.join(format!("schemas/releases/{oldest}/proto-numbers.json"));
    // An edited table is caught like an edited schema.
    let text = std::fs::read_to_string(&table).expect("table");
    std::fs::write(&table, text.replacen(": 1,", ": 99,", 1)).expect("write");
    assert_eq!(
        frozen_problems(root).expect("problems"),
        [format!(
            "schemas/releases/{oldest}/proto-numbers.json changed after its release; released schemas are immutable: revert it and make the change in a new version"
        )]
    );
    // A table no fingerprint lists is caught too.
    std::fs::write(&table, text).expect("write");
    let frozen = root.join("schemas/releases/FROZEN");
    let lines: String = std::fs::read_to_string(&frozen)
        .expect("FROZEN")
        .lines()
        .filter(|l| !l.ends_with(&format!("{oldest}/proto-numbers.json")))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&frozen, lines).expect("write");
    assert_eq!(
        frozen_problems(root).expect("problems"),
        [format!(
            "schemas/releases/{oldest}/proto-numbers.json is not recorded in schemas/releases/FROZEN; cut releases with `cargo codegen release`"
        )]
    );
}
