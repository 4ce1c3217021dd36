//! Writing scenario runs to disk and checking them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use diagwire::bundle::read::Limits;
use diagwire_check::{CheckReport, Checked, Options, Rulebook, check_bundle};
use diagwire_testkit::scenario::Run;

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Writes `run` into a fresh temporary directory; returns it (keep it alive) and the run directory.
pub fn write(run: Run) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = run.write_dir(tmp.path()).expect("write bundle");
    (tmp, dir)
}

/// Checks the bundle at `path` with the shipped rules.
pub fn check_path(path: &Path) -> Checked {
    check_bundle(
        path,
        Limits::default(),
        &Rulebook::builtin(),
        Options::default(),
        true,
    )
    .expect("bundle opens")
}

/// Writes and checks `run`.
pub fn check_run(run: Run) -> CheckReport {
    let (_tmp, dir) = write(run);
    check_path(&dir).report
}
