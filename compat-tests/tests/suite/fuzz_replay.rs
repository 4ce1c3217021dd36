//! The fuzz targets under plain `cargo test` on stable: every checked-in corpus input and every
//! regression input is replayed, then each target runs on generated inputs for a short time budget
//! (`ARBTEST_BUDGET_MS` sets it; arbtest prints the seed of a failure, reproduce it with
//! `.seed(…)`). Run with `--nocapture` to see how many inputs each generated run executed.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use arbitrary::Unstructured;
use diagwire::v1::RecordKind;
use diagwire_compat_tests::fuzzing::{
    TARGETS, arbitrary_record, assert_agreement, bound_crossings, bounded_sites, crossing_lengths,
    length_bounds,
};
use diagwire_compat_tests::rng::SplitMix64;
use diagwire_compat_tests::{kind, valid};

/// Time budget of the generated-input run of each target, in milliseconds, unless
/// `ARBTEST_BUDGET_MS` says otherwise.
const BUDGET_MS: u64 = 1_500;

fn budget_ms() -> u64 {
    std::env::var("ARBTEST_BUDGET_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(BUDGET_MS)
}

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
    let budget = budget_ms();
    let mut executions = 0u64;
    arbtest::arbtest(|u| {
        let data = u.bytes(u.len())?;
        executions += 1;
        f(data);
        Ok(())
    })
    .budget_ms(budget)
    .run();
    eprintln!("{name}: {executions} generated inputs in {budget} ms, no failure");
}

#[test]
fn every_fuzz_target_has_a_replay_test() {
    let listed = [
        "record_roundtrip",
        "schema_agreement",
        "bundle_targz",
        "bundle_dir",
        "cross_version",
        "record_file",
        "proto_decode",
        "schema_review",
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
fn record_file_corpus_replays() {
    replay("record_file");
}

#[test]
fn record_file_holds_on_generated_inputs() {
    generated("record_file");
}

#[test]
fn cross_version_corpus_replays() {
    replay("cross_version");
}

#[test]
fn cross_version_holds_on_generated_inputs() {
    generated("cross_version");
}

#[test]
fn proto_decode_corpus_replays() {
    replay("proto_decode");
}

#[test]
fn proto_decode_holds_on_generated_inputs() {
    generated("proto_decode");
}

#[test]
fn schema_review_corpus_replays() {
    replay("schema_review");
}

#[test]
fn schema_review_holds_on_generated_inputs() {
    generated("schema_review");
}

/// The wire fixture whose rings are longer than the writer keeps them.
const LONG_RINGS: &str = "snapshot/snap-swim-rings-longer-than-the-writer-keeps.json";

#[test]
fn every_record_kind_has_an_arbitrary_generator() {
    for kind in RecordKind::ALL {
        let made = (1..=64).any(|seed| {
            let data = SplitMix64(seed).bytes(4096);
            arbitrary_record(*kind, &mut Unstructured::new(&data)).is_some()
        });
        assert!(made, "`{kind}` has no generator in `arbitrary_record`");
    }
}

#[test]
fn the_writer_bounded_rings_are_crossed_at_the_bounds_of_every_release() {
    let at = |def: &str, field: &str| {
        crossing_lengths(&length_bounds()[&(def.to_owned(), field.to_owned())])
    };
    assert_eq!(
        at("PeerReachability", "swim_transition_history"),
        BTreeSet::from([31, 32, 33])
    );
    assert_eq!(
        at("SwimState", "recent_messages"),
        BTreeSet::from([63, 64, 65])
    );
    assert_eq!(at("NodeId", ""), BTreeSet::from([31, 32, 33]));
}

#[test]
fn every_bound_of_the_schemas_is_reached_by_a_fixture() {
    let mut reached = BTreeSet::new();
    for k in RecordKind::ALL {
        for f in valid(k.as_str()) {
            for site in bounded_sites(*k, &f.value()) {
                reached.insert(site.at);
            }
        }
    }
    let missing: Vec<_> = length_bounds()
        .keys()
        .filter(|at| !reached.contains(*at))
        .collect();
    assert!(
        missing.is_empty(),
        "no fixture holds these bounded fields: {missing:?}"
    );
}

#[test]
fn the_long_rings_fixture_is_bent_across_every_ring_bound_and_agrees() {
    let fixture = valid("snapshot")
        .into_iter()
        .find(|f| f.name.ends_with(LONG_RINGS.trim_start_matches("snapshot/")))
        .expect("the long-rings fixture exists");
    let snapshot = kind("snapshot");
    let value = fixture.value();
    let bent = bound_crossings(snapshot, &value, &mut Unstructured::new(&[]));
    let lengths = |pointer: &str| -> BTreeSet<usize> {
        bent.iter()
            .filter_map(|v| v.pointer(pointer).and_then(|a| a.as_array()).map(Vec::len))
            .collect()
    };
    let history = lengths("/body/reachability/0/swim_transition_history");
    let messages = lengths("/body/swim/recent_messages");
    assert!(
        history.is_superset(&BTreeSet::from([31, 32, 33])),
        "{history:?}"
    );
    assert!(
        messages.is_superset(&BTreeSet::from([63, 64, 65])),
        "{messages:?}"
    );
    for v in std::iter::once(&value).chain(&bent) {
        assert_agreement(snapshot, v);
    }
}
