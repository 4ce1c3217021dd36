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
