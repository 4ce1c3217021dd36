//! `diagwire upgrade`: what the command writes and prints, and its exit status. What an upgrade
//! maps and lists is the library's, specified in `upgrade/tests/upgrade/`; here the command must
//! write exactly the library's bundle and print exactly its list.

use crate::common;

use common::{repo, text};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `compat-tests/fixtures/sim-prod-shape/n3-basic`: three nodes, a restart, a crash, `sim/` files.
fn fixture() -> PathBuf {
    repo().join("compat-tests/fixtures/sim-prod-shape/n3-basic")
}

fn diagwire(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_diagwire"))
        .arg("upgrade")
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run diagwire")
}

/// The command writes the library's files under OUT/<run id>, prints each item not mapped on a
/// line of its own, then the totals, and exits 0.
#[test]
fn writes_the_librarys_bundle_and_prints_its_list() {
    let upgraded = diagwire_upgrade::upgrade(&fixture()).expect("the fixture upgrades");
    let out = tempfile::tempdir().expect("temp dir");
    let o = diagwire(&[&fixture(), out.path()]);
    // Items not mapped are something found: exit status 1.
    let status = if upgraded.problems.is_empty() { 0 } else { 1 };
    assert_eq!(o.status.code(), Some(status), "{}", text(&o.stderr));

    let run_dir = out.path().join(&upgraded.contents.run_id);
    for (path, bytes) in &upgraded.contents.files {
        let written = fs::read(run_dir.join(path)).expect("the file is written");
        assert_eq!(&written, bytes, "{path}");
    }

    let stdout = text(&o.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let expected: Vec<String> = upgraded
        .problems
        .iter()
        .map(|p| format!("not mapped: {p}"))
        .collect();
    assert_eq!(lines[..lines.len() - 1], expected);
    assert_eq!(
        lines[lines.len() - 1],
        format!(
            "wrote {} file(s) to {}; {} item(s) not mapped",
            upgraded.contents.files.len(),
            run_dir.display(),
            upgraded.problems.len()
        )
    );
}

/// A path the library refuses is an error on standard error naming the path, with exit status 2.
#[test]
fn a_refused_input_is_an_error_with_status_2() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = tempfile::tempdir().expect("temp dir");
    let o = diagwire(&[dir.path(), out.path()]);
    assert_eq!(o.status.code(), Some(2));
    let stderr = text(&o.stderr);
    assert!(
        stderr.starts_with(&format!("error: {}: ", dir.path().display()))
            && stderr.contains("not a simulator prod-shape directory"),
        "{stderr}"
    );
    assert!(o.stdout.is_empty());
    assert_eq!(fs::read_dir(out.path()).expect("out").count(), 0);
}
