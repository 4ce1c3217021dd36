//! ARCHITECTURE.md stays true to the workspace: its first screen (the bird's eye view) names every
//! package, and its code map has a section for every package's folder and for no folder that is
//! gone.

use crate::common;

use common::repo;
use std::collections::BTreeSet;
use std::process::Command;

/// One package of the workspace: its name and its folder relative to the workspace root.
struct Package {
    name: String,
    folder: String,
}

/// The workspace's packages, as Cargo sees them.
fn packages() -> Vec<Package> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .current_dir(repo())
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let root = repo().canonicalize().expect("workspace root");
    meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            let manifest = std::path::Path::new(p["manifest_path"].as_str().expect("path"));
            let folder = manifest
                .parent()
                .expect("folder")
                .strip_prefix(&root)
                .expect("a member lives under the root");
            Package {
                name: p["name"].as_str().expect("name").to_owned(),
                folder: folder.to_string_lossy().into_owned(),
            }
        })
        .collect()
}

/// The text of ARCHITECTURE.md's section headed `heading` (up to the next `## `).
fn section(doc: &str, heading: &str) -> String {
    let start = doc
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has no section `{heading}`"));
    let rest = &doc[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    rest[..end].to_owned()
}

/// The folders the code map has a `### \`folder/\`` section for.
fn mapped_folders(doc: &str) -> BTreeSet<String> {
    section(doc, "Code map")
        .lines()
        .filter_map(|l| l.strip_prefix("### `"))
        .filter_map(|l| l.split_once("/`"))
        .map(|(folder, _)| folder.to_owned())
        .collect()
}

fn architecture() -> String {
    std::fs::read_to_string(repo().join("ARCHITECTURE.md")).expect("read ARCHITECTURE.md")
}

#[test]
fn the_bird_s_eye_view_names_every_package() {
    let view = section(&architecture(), "Bird's eye view");
    let missing: Vec<String> = packages()
        .into_iter()
        .filter(|p| !view.contains(&p.name))
        .map(|p| format!("{} ({}/)", p.name, p.folder))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's bird's eye view does not name: {missing:?}"
    );
}

#[test]
fn the_code_map_has_a_section_for_every_package_folder() {
    let mapped = mapped_folders(&architecture());
    // A package nested in another's folder (`serve/interop`) may be told in its parent's section.
    let missing: Vec<String> = packages()
        .into_iter()
        .filter(|p| {
            !std::iter::successors(Some(p.folder.as_str()), |f| {
                f.rsplit_once('/').map(|(a, _)| a)
            })
            .any(|f| mapped.contains(f))
        })
        .map(|p| format!("{}/ ({})", p.folder, p.name))
        .collect();
    assert!(
        missing.is_empty(),
        "the code map has no section for: {missing:?}"
    );
}

#[test]
fn every_folder_the_code_map_names_exists() {
    let gone: Vec<String> = mapped_folders(&architecture())
        .into_iter()
        .filter(|f| !repo().join(f).is_dir())
        .collect();
    assert!(
        gone.is_empty(),
        "the code map names folders that do not exist: {gone:?}"
    );
}
