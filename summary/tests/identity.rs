//! The run a summary is about is what the bundle's records say, not where the bundle lies: a
//! directory and its archive summarize alike in every format, and a run directory named otherwise
//! (a renamed bundle) is neither the answer nor a problem.

use std::path::{Path, PathBuf};

use diagwire::bundle::output::{write_dir, write_tar_gz};
use diagwire::bundle::read::{Limits, read_all};
use diagwire_summary::{Summary, html, render, summarize};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/bundles/n3-relay-flap")
}

/// Every format of a summary, for comparing two of them.
fn formats(s: &Summary) -> [String; 3] {
    [
        render::markdown(s),
        serde_json::to_string_pretty(&render::json(s)).expect("json"),
        html::page(s),
    ]
}

#[test]
fn a_bundle_directory_and_its_archive_summarize_alike_in_every_format() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (contents, errors) = read_all(&example(), Limits::default()).expect("read example");
    assert!(errors.is_empty(), "{errors:?}");
    let archive = dir.path().join("n3-relay-flap.tar.gz");
    write_tar_gz(
        &contents,
        std::fs::File::create(&archive).expect("create archive"),
    )
    .expect("write archive");
    let from_dir = summarize(&example(), Limits::default()).expect("directory");
    let from_archive = summarize(&archive, Limits::default()).expect("archive");
    assert_eq!(formats(&from_dir), formats(&from_archive));
}

#[test]
fn a_run_directory_named_otherwise_is_no_problem_and_the_run_is_the_manifests() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut contents, _) = read_all(&example(), Limits::default()).expect("read example");
    contents.run_id = "copied-elsewhere".into();
    let copied = write_dir(&contents, dir.path()).expect("write copy");
    let s = summarize(&copied, Limits::default()).expect("summary");
    assert_eq!(s.run_id, "n3-relay-flap");
    assert!(s.problems.is_empty(), "{:?}", s.problems);
    assert_eq!(
        formats(&s),
        formats(&summarize(&example(), Limits::default()).expect("example"))
    );
}
