//! The TSV views and the two-bundle comparison, on bundles built for them.

use diagwire::NodeId;
use diagwire::bundle::Writer;
use diagwire::bundle::read::Limits;
use diagwire::v1::*;
use diagwire_summary::{compare, summarize, tsv};

const T0: u64 = 1_779_733_870_000;

fn id(n: u8) -> NodeId {
    NodeId::from([n; 32])
}

fn identity(n: u8, stage: u32) -> Identity {
    let mut i = Identity::new(id(n).to_hex(), id(n).short(), "stage", "run-1", T0, 0);
    i.stage_index = Some(stage);
    i
}

/// Two stages; stage-0 snapshots its opinion of stage-1 at 1 s and 2 s and dials it `dials` times.
fn bundle(dir: &std::path::Path, dials: u32, dead: bool) -> std::path::PathBuf {
    let mut w = Writer::new("run-1", BundleWriter::new(WriterKind::Sim, "tests", "0"));
    w.boot(&identity(1, 0)).boot(&identity(2, 1));
    let mut events = Vec::new();
    for a in 0..dials {
        events.push(EventRecord::new(
            id(1),
            u64::from(a) + 1,
            T0 + 10,
            DialStarted::new(id(2), a, 5_000),
        ));
    }
    if dead {
        events.push(EventRecord::new(
            id(1),
            99,
            T0 + 500,
            SwimTransition::new(id(2), PeerState::Suspect, PeerState::Dead, "timeout\tlate"),
        ));
    }
    w.events(&id(1).to_hex(), &events);
    for (t, opinion) in [(1_000, PeerState::Alive), (2_000, PeerState::Suspect)] {
        let r = PeerReachability::new(id(2).to_hex(), opinion, vec![]);
        let s = Snapshot::new(
            identity(1, 0),
            "run-1",
            format!("s{t}"),
            T0 + t,
            1,
            SnapshotTrigger::Periodic,
            SnapshotBody::new(vec![r]),
        );
        w.snapshot(&s);
    }
    w.write_dir(dir).expect("write").0
}

#[test]
fn the_reachability_matrix_has_a_column_per_label_and_a_row_per_snapshot() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = bundle(dir.path(), 1, false);
    let mut out = Vec::new();
    tsv::reachability(&path, Limits::default(), &mut out, &mut |p| panic!("{p}")).expect("tsv");
    let text = String::from_utf8(out).expect("UTF-8");
    assert_eq!(
        text,
        "time_ms\tobserver\tstage-0\tstage-1\n1779733871000\tstage-0\t-\tAlive\n1779733872000\tstage-0\t-\tSuspect\n"
    );
}

#[test]
fn the_timeline_lists_events_naming_another_node_with_fields_escaped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = bundle(dir.path(), 2, true);
    let mut out = Vec::new();
    tsv::timeline(&path, Limits::default(), &mut out, &mut |p| panic!("{p}")).expect("tsv");
    let text = String::from_utf8(out).expect("UTF-8");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "time_ms\tsource\tkind\tpeer\tdetails");
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!(
        lines[1],
        "1779733870010\tstage-0\tDialStarted\tstage-1\tattempt 0, timeout 5000 ms"
    );
    assert_eq!(
        lines[3],
        "1779733870500\tstage-0\tSwimTransition\tstage-1\tSuspect → Dead (timeout\\tlate)"
    );
}

#[test]
fn compare_marks_what_changed_and_what_did_not() {
    let (da, db) = (
        tempfile::tempdir().expect("a"),
        tempfile::tempdir().expect("b"),
    );
    let a = summarize(&bundle(da.path(), 1, false), Limits::default()).expect("a");
    let b = summarize(&bundle(db.path(), 3, true), Limits::default()).expect("b");
    let out = compare::markdown(&a, &b);
    assert!(out.contains("= stage-0\n= stage-1\n"), "{out}");
    assert!(out.contains("* stage-0 DialStarted: 1 → 3 (+2)"), "{out}");
    assert!(out.contains("+ stage-0 SwimTransition: 1"), "{out}");
    assert!(
        out.contains("* A: none\n* B: stage-0 saw stage-1 (timeout\\u{9}late)"),
        "{out}"
    );
    assert!(
        out.contains("* stage-1: started 1 succeeded 0 failed 0 | started 3 succeeded 0 failed 0"),
        "{out}"
    );
    let same = compare::markdown(&a, &a);
    assert!(
        !same
            .lines()
            .any(|l| l.starts_with('*') || l.starts_with('+') || l.starts_with('-')),
        "{same}"
    );
    assert!(compare::differs(&out) && !compare::differs(&same));
}

#[test]
fn compare_prints_rtt_percentiles_as_values_not_debug_text() {
    let dir = tempfile::tempdir().expect("dir");
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/bundles/n3-relay-flap");
    let a = summarize(&example, Limits::default()).expect("example");
    let b = summarize(&bundle(dir.path(), 1, false), Limits::default()).expect("b");
    let out = compare::markdown(&a, &b);
    assert!(!out.contains("Some("), "{out}");
    assert!(out.contains(" ms p99 "), "{out}");
}
