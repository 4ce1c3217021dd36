//! A bundle's identity is its manifest, not the name it lies under: the example bundle copied to
//! a directory of another name (as engineers rename what they download) validates clean with a
//! note saying so, summarizes as its `.tar.gz` does, and keeps its behavioural verdict.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use diagwire::bundle::output::write_tar_gz;
use diagwire::bundle::read::{Limits, read_all};
use serde_json::Value;

const RUN: &str = "n3-relay-flap";

/// The name the copy lies under.
const RENAMED: &str = "incident-n3r";

/// The example bundle, its copy under [`RENAMED`] and the same bundle as `n3.tar.gz`.
struct Bundles {
    _dir: tempfile::TempDir,
    example: PathBuf,
    renamed: PathBuf,
    archive: PathBuf,
}

fn bundles() -> Bundles {
    let dir = tempfile::tempdir().expect("temp dir");
    let example = common::repo().join("examples/bundles").join(RUN);
    let renamed = dir.path().join(RENAMED);
    common::copy_tree(&example, &renamed);
    let (contents, errors) = read_all(&example, Limits::default()).expect("the example opens");
    assert!(errors.is_empty(), "{errors:?}");
    let archive = dir.path().join("n3.tar.gz");
    write_tar_gz(&contents, fs::File::create(&archive).expect("create")).expect("tar");
    Bundles {
        _dir: dir,
        example,
        renamed,
        archive,
    }
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

/// `value` without the keys that hold paths (where the bundle was read from).
fn without_paths(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for key in ["bundle", "source", "file", "path"] {
                map.remove(key);
            }
            map.values_mut().for_each(without_paths);
        }
        Value::Array(items) => items.iter_mut().for_each(without_paths),
        _ => {}
    }
}

/// The exit status and, paths aside, the JSON a command prints.
fn json_of(args: &[&str]) -> (Option<i32>, Value) {
    let out = common::diagwire(args);
    let mut value: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}\n{}", common::text(&out.stdout)));
    without_paths(&mut value);
    (out.status.code(), value)
}

#[test]
fn a_renamed_bundle_validates_clean_with_a_note_naming_its_run() {
    let b = bundles();
    let out = common::diagwire(&["validate", &shown(&b.renamed)]);
    let printed = common::text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{printed}");
    assert!(
        printed.contains(&format!(
            "{RENAMED}/MANIFEST.json:0 /run_id: note: the run directory is named `{RENAMED}`, the run is `{RUN}`"
        )),
        "{printed}"
    );
    assert!(printed.contains(", 0 problem(s)"), "{printed}");

    let (status, json) = json_of(&["validate", &shown(&b.renamed), "--format", "json"]);
    assert_eq!(status, Some(0));
    assert_eq!(json["problem_count"], 0);
    let notes = json["paths"][0]["notes"].as_array().expect("notes");
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0]["pointer"], "/run_id");
}

#[test]
fn a_renamed_bundle_summarizes_as_its_archive_does() {
    let b = bundles();
    let (status, renamed) = json_of(&["summary", &shown(&b.renamed), "--format", "json"]);
    let (archive_status, archive) = json_of(&["summary", &shown(&b.archive), "--format", "json"]);
    assert_eq!((status, archive_status), (Some(0), Some(0)));
    assert_eq!(renamed["run"]["run_id"], RUN);
    assert_eq!(renamed["validation"]["problems"], 0);
    assert!(
        renamed == archive,
        "the summaries differ beyond their paths"
    );
}

#[test]
fn a_renamed_bundle_keeps_its_behavioural_verdict() {
    let b = bundles();
    let (status, renamed) = json_of(&["check", &shown(&b.renamed), "--format", "json"]);
    let (example_status, example) = json_of(&["check", &shown(&b.example), "--format", "json"]);
    assert_eq!(status, example_status);
    assert_eq!(renamed["check"]["run_id"], RUN);
    assert!(renamed == example, "the verdicts differ beyond their paths");
}
