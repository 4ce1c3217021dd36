//! The collector's quarantine in a bundle (`diagwire::quarantine`): validation and the records
//! walk report one problem per quarantined body, at the body, with the reason its `.why.json`
//! records (escaped), and the walk hands each body to its consumers. One case per layout of the
//! quarantine folder, each checked through both readers by one function.
#![cfg(all(feature = "bundle", feature = "validate"))]

use std::fs;
use std::path::Path;

use diagwire::bundle::Writer;
use diagwire::bundle::output::write_tar_gz;
use diagwire::bundle::read::{BundleReader, Limits, read_all};
use diagwire::bundle::records::{Consumer, Item, Walk, walk_into};
use diagwire::quarantine::{Quarantined, Why, WhyProblem};
use diagwire::v1::{BundleWriter, Identity, WriterKind};
use diagwire::validate::Validators;
use diagwire::{NodeId, Problem};

const RUN: &str = "run-q";
const NODE: &str = "afafafafafafafafafafafafafafafafafafafafafafafafafafafafafafafaf";

/// A file of the quarantine folder: its name under `@quarantine/<NODE>/` and its bytes.
type File = (&'static str, Vec<u8>);

fn why(route: &str, message: &str) -> Vec<u8> {
    let why = Why {
        route: route.into(),
        content_type: Some("application/json".into()),
        problems: vec![WhyProblem {
            pointer: String::new(),
            message: message.into(),
        }],
        problem: None,
    };
    serde_json::to_vec_pretty(&why).unwrap()
}

/// A clean one-node bundle with `files` in its quarantine folder.
fn bundle(dir: &Path, files: &[File]) -> std::path::PathBuf {
    let node = NodeId([0xaf; 32]);
    let mut w = Writer::new(RUN, BundleWriter::new(WriterKind::Collector, "test", "0"));
    w.boot(&Identity::new(
        node.to_hex(),
        node.short(),
        "stage",
        RUN,
        1,
        0,
    ));
    let (path, _) = w.write_dir(dir).unwrap();
    let q = path.join("@quarantine").join(NODE);
    fs::create_dir_all(&q).unwrap();
    for (name, bytes) in files {
        fs::write(q.join(name), bytes).unwrap();
    }
    path
}

/// What the walk hands on.
#[derive(Default)]
struct Seen {
    problems: Vec<Problem>,
    bodies: Vec<Quarantined>,
}

impl Consumer for Seen {
    fn record(&mut self, _: &Item<'_>) {}
    fn problem(&mut self, p: &Problem) {
        self.problems.push(p.clone());
    }
    fn quarantined(&mut self, body: &Quarantined) {
        self.bodies.push(body.clone());
    }
}

/// Checks that validation and the walk report `want`, on the bundle as a directory and as an
/// archive: per problem, the file it is located at (relative to the quarantine folder of the
/// node) and words its message holds.
#[track_caller]
fn check_quarantine(files: &[File], want: &[(&str, &str)]) {
    let dir = tempfile::tempdir().unwrap();
    let path = bundle(dir.path(), files);
    let (contents, errors) = read_all(&path, Limits::default()).unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    let archive = dir.path().join("bundle.tar.gz");
    write_tar_gz(&contents, fs::File::create(&archive).unwrap()).unwrap();
    check_both_readers(&path, want);
    check_both_readers(&archive, want);
}

#[track_caller]
fn check_both_readers(path: &Path, want: &[(&str, &str)]) {
    let at = |p: &Problem| -> (String, String) {
        let file = p.location.file.clone();
        let rel = file
            .split_once(&format!("@quarantine/{NODE}/"))
            .map_or(file.clone(), |(_, r)| r.to_owned());
        (rel, p.message.clone())
    };
    let validators = Validators::new().unwrap();
    let mut reader = BundleReader::open(path, Limits::default()).unwrap();
    let report =
        diagwire::validate::bundle::validate_bundle(&validators, &mut reader, &mut |_, _| {});
    let validated: Vec<(String, String)> = report.problems.iter().map(at).collect();

    let mut reader = BundleReader::open(path, Limits::default()).unwrap();
    let mut seen = Seen::default();
    walk_into(&mut reader, Walk::default(), &mut [&mut seen]);
    let walked: Vec<(String, String)> = seen.problems.iter().map(at).collect();

    assert_eq!(
        walked, validated,
        "the walk reports what validation reports"
    );
    assert_eq!(seen.bodies.len(), want.len(), "one body per problem");
    assert_eq!(validated.len(), want.len(), "{validated:#?}");
    for ((file, message), (want_file, words)) in validated.iter().zip(want) {
        assert_eq!(file, want_file);
        assert!(
            message.starts_with("quarantined at ingest: ") && message.contains(words),
            "{message:?} should hold {words:?}"
        );
        assert!(
            !message.chars().any(char::is_control),
            "escaped: {message:?}"
        );
    }
}

#[test]
fn a_body_with_its_reason_is_one_problem_at_the_body() {
    check_quarantine(
        &[
            ("000001-boot.json", b"[1]".to_vec()),
            ("000001-boot.why.json", why("boot", "not an object")),
        ],
        &[("000001-boot.json", "posted to /diag/boot: not an object")],
    );
}

#[test]
fn bodies_of_several_kinds_are_one_problem_each() {
    check_quarantine(
        &[
            ("000001-snapshot.json", b"{".to_vec()),
            ("000001-snapshot.why.json", why("snapshot", "not JSON")),
            ("000002-metrics.bin", b"x".to_vec()),
            (
                "000002-metrics.why.json",
                br#"{"route":"metrics","problem":"unknown record kind"}"#.to_vec(),
            ),
        ],
        &[
            ("000001-snapshot.json", "posted to /diag/snapshot: not JSON"),
            (
                "000002-metrics.bin",
                "posted to /diag/metrics: unknown record kind",
            ),
        ],
    );
}

#[test]
fn a_reason_with_control_characters_is_escaped() {
    check_quarantine(
        &[
            ("000001-boot.json", b"[1]".to_vec()),
            ("000001-boot.why.json", why("boot", "bad\u{1b}[2J\nline")),
        ],
        &[("000001-boot.json", "bad\\u{1b}[2J\\u{a}line")],
    );
}

#[test]
fn a_body_without_a_reason_says_so() {
    check_quarantine(
        &[("000001-boot.json", b"[1]".to_vec())],
        &[("000001-boot.json", "no `.why.json` says why")],
    );
}

#[test]
fn a_reason_that_does_not_read_says_so() {
    check_quarantine(
        &[
            ("000001-boot.json", b"[1]".to_vec()),
            ("000001-boot.why.json", b"not json".to_vec()),
        ],
        &[("000001-boot.json", "its reason does not read")],
    );
}

#[test]
fn a_reason_without_its_body_is_one_problem_at_the_reason() {
    check_quarantine(
        &[("000003-boot.why.json", why("boot", "not an object"))],
        &[("000003-boot.why.json", "a reason without its body")],
    );
}

#[test]
fn a_reason_longer_than_a_reader_reads_is_said_so_and_the_files_after_it_still_read() {
    let long = "x".repeat(diagwire::quarantine::MAX_WHY_BYTES);
    check_quarantine(
        &[
            ("000001-boot.json", b"[1]".to_vec()),
            ("000001-boot.why.json", why("boot", &long)),
            ("000002-boot.json", b"[2]".to_vec()),
            ("000002-boot.why.json", why("boot", "not an object")),
        ],
        &[
            ("000001-boot.json", "its reason is over 1048576 bytes"),
            ("000002-boot.json", "posted to /diag/boot: not an object"),
        ],
    );
}

#[test]
fn the_walk_hands_each_body_with_its_size_and_the_text_of_a_reason_that_reads() {
    let reason = why("boot", "not an object");
    let dir = tempfile::tempdir().unwrap();
    let path = bundle(
        dir.path(),
        &[
            ("000001-boot.json", b"[1, 2]".to_vec()),
            ("000001-boot.why.json", reason.clone()),
            ("000002-boot.json", b"[2]".to_vec()),
            ("000002-boot.why.json", b"not json".to_vec()),
            ("000003-boot.why.json", reason.clone()),
        ],
    );
    let mut reader = BundleReader::open(&path, Limits::default()).unwrap();
    let mut seen = Seen::default();
    walk_into(&mut reader, Walk::default(), &mut [&mut seen]);
    let got: Vec<(Option<u64>, Option<&str>)> = seen
        .bodies
        .iter()
        .map(|b| (b.bytes, b.reason.as_deref()))
        .collect();
    let text = std::str::from_utf8(&reason).unwrap();
    assert_eq!(
        got,
        [(Some(6), Some(text)), (Some(3), None), (None, Some(text))],
        "a body's size; a reason's text when it reads, also without its body"
    );
}
