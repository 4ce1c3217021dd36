//! Bad input never panics: broken files become `bundle.readable` findings, hostile values are
//! handled with saturating arithmetic, and arbitrary schema-valid records go through the check,
//! the coverage and the parity profile.

mod common;

use std::time::Duration;

use diagwire::bundle::Writer;
use diagwire::bundle::read::Limits;
use diagwire::v1::*;
use diagwire::{NodeId, NodeIdHex};
use diagwire_check::parity::{self, Config};
use diagwire_testkit::scenario::{Params, generate};

#[test]
fn broken_files_are_findings_and_the_rest_is_still_checked() {
    let (_tmp, dir) = common::write(generate(&Params::small(2)));
    let junk: [(&str, &[u8]); 5] = [
        ("stage-0/snapshots/snapshot-000002.json", b"[1, 2"),
        (
            "stage-0/events/events-000002.json",
            b"{\"not\": \"an array\"}",
        ),
        (
            "stage-1/events/events-000003.json",
            b"[{\"node_id\": 5, \"type\": \"DialOutcome\"}]",
        ),
        ("stage-1/boot/boot-000001.json", b"{\"role\": 7}"),
        (
            "orchestrator/snapshots/snapshot-000004.json",
            &[0xff, 0xfe, 0x00, 0x80],
        ),
    ];
    for (path, bytes) in junk {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    let checked = common::check_path(&dir);
    let readable = checked.report.rule("bundle.readable").unwrap();
    assert_eq!(
        readable.findings_total,
        5,
        "{}",
        checked.report.to_markdown()
    );
    for (path, _) in junk {
        assert!(
            readable
                .findings
                .iter()
                .any(|f| f.location.file.ends_with(path)),
            "{path}"
        );
    }
    assert!(checked.report.rule("seq.monotonic").unwrap().checked > 100);
    assert_eq!(checked.coverage.unwrap().unreadable, 5);
    parity::profile(&dir, Limits::default(), &Config::builtin()).expect("profiles");
}

#[test]
fn what_is_not_a_bundle_is_an_error_not_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let garbage = tmp.path().join("garbage.tar.gz");
    std::fs::write(&garbage, [0x1f, 0x8b, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]).unwrap();
    for path in [
        garbage,
        tmp.path().join("missing"),
        tmp.path().to_path_buf(),
    ] {
        let r = diagwire_check::check_bundle(
            &path,
            Limits::default(),
            &diagwire_check::Rulebook::builtin(),
            diagwire_check::Options::default(),
            true,
        );
        match r {
            Err(_) => {}
            Ok(c) => assert!(c.report.unreadable > 0 || c.report.records == 0),
        }
    }
}

#[test]
fn extreme_values_are_handled_without_overflow() {
    let me = NodeId([3; 32]);
    let peer = NodeId([4; 32]);
    let mut identity = Identity::new(me.to_hex(), me.short(), "stage", "edge", u64::MAX, u32::MAX);
    identity.iroh_version = Some(String::new());
    let clock = CustomEvent::new(CustomPayload::ClockSample(ClockSampleFields::new(
        u64::MAX,
        0,
        u64::MAX,
    )));
    let batch = vec![
        EventRecord::new(
            me,
            u64::MAX,
            u64::MAX,
            DialStarted::new(peer, u32::MAX, u64::MAX),
        ),
        EventRecord::new(me, 0, 0, clock),
        EventRecord::new(
            me,
            1,
            u64::MAX,
            DialOutcome::new(peer, 0, DialResult::Error("x".into()), u64::MAX),
        ),
        EventRecord::new(me, 2, 0, RunTornDown::new("edge")),
        EventRecord::new(me, 3, u64::MAX, StageStopped::new("edge", u32::MAX)),
    ];
    let mut w = Writer::new("edge", BundleWriter::new(WriterKind::Node, "t", "0"));
    w.boot(&identity).events(&identity.node_id_hex, &batch);
    let mut snap = Snapshot::new(
        identity.clone(),
        "edge",
        "x",
        u64::MAX,
        u64::MAX,
        SnapshotTrigger::Periodic,
        SnapshotBody::new(Vec::new()),
    );
    let mut iroh = IrohState::new();
    iroh.peers = vec![IrohPeer::new(NodeIdHex("ab".repeat(32)))];
    snap.body.iroh = Some(iroh);
    w.snapshot(&snap);
    let tmp = tempfile::tempdir().unwrap();
    let (dir, _) = w.write_dir(tmp.path()).unwrap();
    let checked = common::check_path(&dir);
    let report = checked.report;
    assert!(report.rule("seq.monotonic").unwrap().findings_total >= 1);
    assert!(
        report
            .rule("dial.outcome_has_start")
            .unwrap()
            .findings_total
            >= 1
    );
    assert_eq!(
        report
            .rule("order.torn_down_after_teardown")
            .unwrap()
            .findings_total,
        1
    );
    let _ = report.to_markdown();
    let _ = checked.coverage.unwrap().to_markdown();
}

#[test]
fn arbitrary_records_go_through_check_coverage_and_parity() {
    arbtest::arbtest(|u| {
        let identity: Identity = u.arbitrary()?;
        let events: Vec<EventRecord> = u.arbitrary()?;
        let snapshots: Vec<Snapshot> = u.arbitrary()?;
        let manifest_run: String = u.arbitrary()?;
        let mut w = Writer::new(
            if manifest_run.is_empty() {
                "run".to_owned()
            } else {
                format!("run-{}", manifest_run.len())
            },
            BundleWriter::new(WriterKind::Sim, "arb", "0"),
        );
        w.boot(&identity).events(&identity.node_id_hex, &events);
        for s in &snapshots {
            w.snapshot(s);
        }
        let tmp = tempfile::tempdir().unwrap();
        let Ok((dir, _)) = w.write_dir(tmp.path()) else {
            return Ok(());
        };
        let checked = common::check_path(&dir);
        let _ = checked.report.to_json();
        let _ = checked.report.to_markdown();
        let cov = checked.coverage.unwrap();
        let _ = cov.to_json();
        let profile = parity::profile(&dir, Limits::default(), &Config::builtin()).unwrap();
        let report = parity::compare(&profile, &profile, &Config::builtin());
        // A bundle never differs from itself; it is at parity with itself when it has enough of
        // something to judge (a few arbitrary records often have not: nothing to compare).
        assert!(
            !report.shape.iter().any(|d| d.flagged) && report.failures().next().is_none(),
            "a bundle differs from itself"
        );
        assert_eq!(report.passed(), !report.nothing_to_compare());
        let _ = report.to_markdown();
        Ok(())
    })
    .budget(Duration::from_secs(3));
}
