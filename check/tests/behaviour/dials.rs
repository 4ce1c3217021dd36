//! `DialStarted` and `DialOutcome` pair up per node, peer and attempt.

use super::*;

// dial.outcome_has_start, dial.start_has_outcome

#[test]
fn a_dial_outcome_without_its_start_is_found() {
    let mut run = base();
    run.node_mut("stage-0")
        .remove_first(is(dial_started))
        .unwrap();
    let f = violates(run, "dial.outcome_has_start");
    assert_eq!(f.len(), 1);
    assert_eq!(witness_types(&f[0]), ["DialOutcome"]);
}

#[test]
fn a_dial_start_without_its_outcome_is_found() {
    let mut run = base();
    let removed = run
        .node_mut("stage-0")
        .remove_first(is(dial_outcome))
        .unwrap();
    let f = violates(run, "dial.start_has_outcome");
    assert_eq!(f.len(), 1);
    assert_eq!(witness_types(&f[0]), ["DialStarted"]);
    let Event::DialOutcome(o) = removed.event else {
        unreachable!()
    };
    let peer: Vec<u64> = o.peer.0.iter().map(|b| u64::from(*b)).collect();
    let witness_peer: Vec<u64> = f[0].witness[0].value["peer"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(
        peer, witness_peer,
        "the open start is the one whose outcome was lost"
    );
}

#[test]
fn a_dial_still_in_flight_when_the_stream_ends_is_inconclusive() {
    let mut run = base();
    let peer = run.node("stage-1").id();
    run.node_mut("stage-0")
        .push(DialStarted::new(peer, 9, 5_000));
    let report = common::check_run(run);
    assert!(report.passed(), "{}", report.to_markdown());
    let r = report.rule("dial.start_has_outcome").unwrap();
    assert_eq!((r.inconclusive, r.findings_total), (1, 0));
}

#[test]
fn paired_dials_keep_both_rules() {
    let report = passes(base(), "dial.outcome_has_start");
    assert_eq!(
        report.rule("dial.start_has_outcome").unwrap().status(),
        Status::Passed
    );
}
