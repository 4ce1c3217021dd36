//! The fuzz targets under plain `cargo test` on stable: every checked-in corpus input and every
//! regression input is replayed, then each target runs on generated inputs for a short time budget
//! (`ARBTEST_BUDGET_MS`; arbtest prints the seed of a failure, reproduce it with `.seed(…)`).

use std::fs;
use std::path::{Path, PathBuf};

use diagwire_compat_tests::fuzzing::TARGETS;

/// Time budget of the generated-input run of each target, in milliseconds.
const BUDGET_MS: u64 = 1_500;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn body(name: &str) -> fn(&[u8]) {
    TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
        .unwrap_or_else(|| panic!("no fuzz target `{name}`"))
}

#[track_caller]
fn replay(name: &str) {
    let f = body(name);
    let corpus = inputs(&fuzz_dir().join("corpus").join(name));
    assert!(!corpus.is_empty(), "fuzz/corpus/{name} is empty");
    for path in corpus
        .iter()
        .chain(&inputs(&fuzz_dir().join("regressions").join(name)))
    {
        let data = fs::read(path).expect("read input");
        if let Err(e) = std::panic::catch_unwind(|| f(&data)) {
            std::panic::resume_unwind(Box::new(format!(
                "{}: {:?}",
                path.display(),
                e.downcast_ref::<String>()
            )));
        }
    }
}

#[track_caller]
fn generated(name: &str) {
    let f = body(name);
    arbtest::arbtest(|u| {
        let data = u.bytes(u.len())?;
        f(data);
        Ok(())
    })
    .budget_ms(BUDGET_MS)
    .run();
}

#[test]
fn every_fuzz_target_has_a_replay_test() {
    let listed = [
        "record_roundtrip",
        "schema_agreement",
        "bundle_targz",
        "bundle_dir",
        "cross_version",
    ];
    let names: Vec<&str> = TARGETS.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, listed);
}

#[test]
fn record_roundtrip_corpus_replays() {
    replay("record_roundtrip");
}

#[test]
fn record_roundtrip_holds_on_generated_inputs() {
    generated("record_roundtrip");
}

#[test]
fn schema_agreement_corpus_replays() {
    replay("schema_agreement");
}

#[test]
fn schema_agreement_holds_on_generated_inputs() {
    generated("schema_agreement");
}

#[test]
fn bundle_targz_corpus_replays() {
    replay("bundle_targz");
}

#[test]
fn bundle_targz_holds_on_generated_inputs() {
    generated("bundle_targz");
}

#[test]
fn bundle_dir_corpus_replays() {
    replay("bundle_dir");
}

#[test]
fn bundle_dir_holds_on_generated_inputs() {
    generated("bundle_dir");
}

#[test]
fn cross_version_corpus_replays() {
    replay("cross_version");
}

#[test]
fn cross_version_holds_on_generated_inputs() {
    generated("cross_version");
}
