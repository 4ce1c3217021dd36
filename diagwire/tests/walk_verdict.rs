//! The record walk with a verdict (`Walk::verdict`): the records the verdict decoded in judging a
//! file (`Verdict::file_records`), or took from the walk's decode ahead (`Verdict::file_decoded`),
//! are the ones the consumers get, with the same calls in the same order as when the walk decodes
//! every file itself; a file the verdict did not decode whole (a problem, larger than
//! `DECODED_BYTES`), or whose records it says are where the file has no text, is decoded by the
//! walk. One case per kind of file, each walked through both readers.
#![cfg(all(feature = "bundle", feature = "validate"))]

mod common;

use std::cell::RefCell;
use std::ops::Range;

use common::{Node, bundle};
use diagwire::Problem;
use diagwire::bundle::BundleContents;
use diagwire::bundle::output::{write_dir, write_tar_gz};
use diagwire::bundle::read::{BundleReader, Limits, ReadError};
use diagwire::bundle::records::{Consumer, Decoded, Item, Verdict, Walk, walk_into};
use diagwire::v1::{Record, RecordKind};
use diagwire::validate::bundle::{BundleVerdict, DECODED_BYTES};
use diagwire::validate::{Options, Validators};
use serde_json::{Value, json};

fn two_nodes() -> BundleContents {
    let nodes = [
        Node {
            label: "orchestrator",
            boot: "boot/orchestrator-local-dev.json",
            events: vec![vec![
                "event/dial-started.json",
                "event/dial-outcome-timeout.json",
            ]],
            snapshots: vec!["snapshot/snap-trigger-periodic.json"],
            finalize: Some("finalize/exit-reason.json"),
        },
        Node {
            label: "stage-0",
            boot: "boot/stage-rental-id-only-in-container-id.json",
            events: vec![
                vec!["event/message-sent.json"],
                vec!["event/message-received.json"],
            ],
            snapshots: vec![],
            finalize: None,
        },
    ];
    bundle("run-walk", &nodes, true)
}

/// The records of the orchestrator's events file, edited by `f`.
fn edit_events(b: &mut BundleContents, f: impl FnOnce(&mut Vec<Value>)) {
    let path = "orchestrator/events/events-000001.json";
    let mut events: Vec<Value> = serde_json::from_slice(&b.files[path]).expect("events");
    f(&mut events);
    b.insert_json(path, &events);
}

/// How the verdict of a walk answers [`Verdict::file_records`].
#[derive(Clone, Copy)]
enum Records {
    /// As `BundleVerdict` does: it takes the records the walk decoded ahead.
    Kept,
    /// As `BundleVerdict` does when the walk decoded nothing ahead: it decodes each file itself.
    KeptOwnDecode,
    /// Never: the walk decodes every file.
    None,
    /// Each file's first record at a text past the file's end.
    OutsideTheFile,
    /// A boot file's record decoded from another text (its run id `other-run`).
    OtherBoot,
}

/// `BundleVerdict`, answering for records as `records` says; counts the files whose records it
/// handed on.
struct Judge<'v> {
    inner: BundleVerdict<'v>,
    records: Records,
    handed: usize,
}

impl Verdict for Judge<'_> {
    fn begin(&mut self, reader: &BundleReader) {
        self.inner.begin(reader)
    }
    fn entry(&mut self, error: &ReadError) -> Vec<Problem> {
        self.inner.entry(error)
    }
    fn file(&mut self, path: &str, location: &str, bytes: &[u8]) -> Vec<Problem> {
        self.inner.file(path, location, bytes)
    }
    fn file_records(
        &mut self,
        path: &str,
        location: &str,
        bytes: &[u8],
    ) -> (Vec<Problem>, Option<Decoded>) {
        let (problems, decoded) = self.inner.file_records(path, location, bytes);
        let decoded = match (self.records, decoded) {
            (_, None) | (Records::None, _) => None,
            (Records::Kept | Records::KeptOwnDecode, d) => d,
            (Records::OutsideTheFile, Some(d)) => {
                let mut moved = Decoded::default();
                let past = bytes.len() + 1..bytes.len() + 2;
                moved.push(past, boot_of_other_run(), false);
                Some(moved).filter(|_| !d.is_empty())
            }
            (Records::OtherBoot, Some(_)) if path.ends_with("/boot.json") => {
                let mut other = Decoded::default();
                let whole: Range<usize> = 0..bytes.len();
                other.push(whole, boot_of_other_run(), false);
                Some(other)
            }
            (Records::OtherBoot, d) => d,
        };
        self.handed += usize::from(decoded.is_some());
        (problems, decoded)
    }
    fn file_decoded(
        &mut self,
        path: &str,
        location: &str,
        bytes: &[u8],
        kind: RecordKind,
        records: Decoded,
    ) -> (Vec<Problem>, Option<Decoded>) {
        if !matches!(self.records, Records::Kept) {
            return self.file_records(path, location, bytes);
        }
        let (problems, decoded) = self
            .inner
            .file_decoded(path, location, bytes, kind, records);
        self.handed += usize::from(decoded.is_some());
        (problems, decoded)
    }
    fn finish(&mut self) -> (Vec<Problem>, usize) {
        self.inner.finish()
    }
}

fn boot_of_other_run() -> Record {
    let mut boot = common::fixture("boot/orchestrator-local-dev.json");
    boot["run_id"] = json!("other-run");
    Record::parse(RecordKind::Boot, &boot.to_string()).expect("a boot record")
}

/// Every call a consumer gets, in order, as text.
#[derive(Default)]
struct Calls(Vec<String>);

impl Consumer for Calls {
    fn record(&mut self, item: &Item<'_>) {
        self.0.push(format!(
            "record {} #{} node {:?} role {:?} unknown keys {}: {:?} as {}",
            item.path, item.index, item.node, item.role, item.unknown_keys, item.record, item.text
        ));
    }
    fn problem(&mut self, problem: &Problem) {
        self.0.push(format!("problem {problem}"));
    }
    fn omitted(&mut self, problems: usize) {
        self.0.push(format!("omitted {problems}"));
    }
}

/// The calls a walk of `b` with a verdict answering as `records` says hands its consumer, the
/// same through both readers (the archive's locations shown as the directory's, the temporary
/// directory as `<temp>`), and how many
/// files' records the verdict handed on.
fn walk_with(b: &BundleContents, records: Records) -> (Vec<String>, usize) {
    let validators = Validators::new().expect("validators");
    let dir = tempfile::tempdir().expect("temp dir");
    let run = write_dir(b, dir.path()).expect("write");
    let archive = dir.path().join("run.tar.gz");
    write_tar_gz(b, std::fs::File::create(&archive).expect("archive")).expect("write");
    let mut each = [run.clone(), archive.clone()].map(|path| {
        let judge = RefCell::new(Judge {
            inner: BundleVerdict::new(&validators, Options::default()),
            records,
            handed: 0,
        });
        let mut reader = BundleReader::open(&path, Limits::default()).expect("open");
        let mut calls = Calls::default();
        let settings = Walk {
            verdict: Some(&judge),
            ..Walk::default()
        };
        walk_into(&mut reader, settings, &mut [&mut calls]);
        let shown = |c: &String| {
            let archived = format!("{}!", archive.display());
            let temp = dir.path().display().to_string();
            c.replace(&archived, &format!("{temp}/"))
                .replace(&temp, "<temp>")
        };
        let calls: Vec<String> = calls.0.iter().map(shown).collect();
        (calls, judge.into_inner().handed)
    });
    let [(from_dir, handed_dir), (from_archive, handed_archive)] = &mut each;
    assert_eq!(from_dir, from_archive, "both readers hand the same calls");
    assert_eq!(handed_dir, handed_archive);
    (std::mem::take(from_dir), *handed_dir)
}

/// Checks that the walk of `b` hands its consumer the same calls whether the verdict hands on
/// the records it decoded or the walk decodes them, and that the verdict handed on the records of
/// `decoded` files.
#[track_caller]
fn check_same_calls(b: &BundleContents, decoded: usize) {
    let (walked, none) = walk_with(b, Records::None);
    assert_eq!(none, 0);
    assert!(
        walked.iter().any(|c| c.starts_with("record ")),
        "{walked:#?}"
    );
    for records in [Records::Kept, Records::KeptOwnDecode] {
        let (kept, handed) = walk_with(b, records);
        assert_eq!(kept, walked);
        assert_eq!(handed, decoded, "files whose records the verdict handed on");
    }
}

#[test]
fn records_decoded_ahead_as_another_kind_are_not_taken_for_the_file() {
    let b = two_nodes();
    let dir = tempfile::tempdir().expect("temp dir");
    let run = write_dir(&b, dir.path()).expect("write");
    let validators = Validators::new().expect("validators");
    let mut verdict = BundleVerdict::new(&validators, Options::default());
    verdict.begin(&BundleReader::open(&run, Limits::default()).expect("open"));
    let path = "orchestrator/events/events-000001.json";
    let bytes = &b.files[path];
    let location = run.join(path).display().to_string();
    let mut boot = Decoded::default();
    boot.push(0..bytes.len(), boot_of_other_run(), false);
    // Decoded ahead as a boot record: the verdict decodes the events file itself.
    let (problems, decoded) = verdict.file_decoded(path, &location, bytes, RecordKind::Boot, boot);
    assert_eq!(problems, vec![]);
    assert_eq!(decoded.map(|d| d.len()), Some(2), "the file's two events");
}

#[test]
fn a_clean_bundles_records_are_decoded_once_and_handed_on_as_the_walk_would() {
    check_same_calls(&two_nodes(), 8);
}

#[test]
fn a_record_with_unknown_keys_says_so_when_the_verdict_decoded_it() {
    let mut b = two_nodes();
    edit_events(&mut b, |events| events[1]["x_not_in_the_schema"] = json!(1));
    check_same_calls(&b, 8);
    let (calls, _) = walk_with(&b, Records::Kept);
    let unknown: Vec<&String> = calls
        .iter()
        .filter(|c| c.contains("unknown keys true"))
        .collect();
    assert_eq!(unknown.len(), 1, "{calls:#?}");
    assert!(unknown[0].contains("events-000001.json #1 "), "{unknown:?}");
}

#[test]
fn a_file_with_a_refused_record_is_decoded_by_the_walk_its_problems_after_its_records() {
    let mut b = two_nodes();
    edit_events(&mut b, |events| {
        events.insert(1, json!({"not": "an event"}))
    });
    check_same_calls(&b, 7);
    let (calls, _) = walk_with(&b, Records::Kept);
    let at = |words: &str| calls.iter().position(|c| c.contains(words));
    let (second, problem) = (at("events-000001.json #2 "), at("events-000001.json:1"));
    assert!(
        second.is_some() && problem.is_some() && second < problem,
        "{calls:#?}"
    );
}

#[test]
fn a_file_larger_than_the_verdict_keeps_records_of_is_decoded_by_the_walk() {
    let mut b = two_nodes();
    edit_events(&mut b, |events| {
        let one = events[0].clone();
        while serde_json::to_vec(&events).expect("JSON").len() as u64 <= DECODED_BYTES {
            events.extend(std::iter::repeat_n(one.clone(), 100));
        }
    });
    check_same_calls(&b, 7);
}

#[test]
fn records_said_to_be_outside_their_file_are_decoded_by_the_walk() {
    let b = two_nodes();
    let (walked, _) = walk_with(&b, Records::None);
    let (outside, handed) = walk_with(&b, Records::OutsideTheFile);
    assert_eq!(handed, 8);
    assert_eq!(outside, walked);
}

#[test]
fn the_consumers_get_the_record_the_verdict_decoded_without_a_second_decode() {
    let b = two_nodes();
    let (calls, _) = walk_with(&b, Records::OtherBoot);
    let boots: Vec<&String> = calls.iter().filter(|c| c.contains("/boot.json")).collect();
    assert_eq!(boots.len(), 2, "{calls:#?}");
    for boot in boots {
        assert!(boot.contains("\"other-run\""), "{boot}");
    }
}
