//! How many terminal outcomes a run has: at most one, and one in a finalized bundle.

use super::*;

// run.one_terminal_outcome

#[test]
fn a_second_terminal_outcome_is_found_with_both_events() {
    let mut run = base();
    run.node_mut("orchestrator").push(RunFaulted::new(
        "scenario-small",
        FaultReason::Timeout,
        FaultComponent::Orchestrator,
    ));
    let f = violates(run, "run.one_terminal_outcome");
    assert_eq!(f.len(), 1);
    assert_eq!(witness_types(&f[0]), ["run_completed", "run_faulted"]);
    assert!(f[0].message.contains("has 2 events"), "{}", f[0].message);
}

#[test]
fn one_terminal_outcome_keeps_the_rule() {
    passes(base(), "run.one_terminal_outcome");
}

#[test]
fn the_golden_bundle_holds_two_completions_and_two_faults_for_one_run() {
    let golden = common::repo().join("compat-tests/fixtures/1.1.0/golden.tar.gz");
    let report = common::check_path(&golden).report;
    let r = report.rule("run.one_terminal_outcome").unwrap();
    assert_eq!(r.findings_total, 1, "{}", report.to_markdown());
    let f = &r.findings[0];
    assert!(
        f.message.contains("run_id \"1779733878\" has 4 events"),
        "{}",
        f.message
    );
    let types = witness_types(f);
    assert_eq!(types.len(), 2, "the minimal witness is the first two");
    assert!(
        types
            .iter()
            .all(|t| t == "run_completed" || t == "run_faulted")
    );
    assert!(f.location.file.contains("golden.tar.gz!"), "{}", f.location);
    // The fixture is frozen; everything else it breaks is listed here so that a change in what
    // the rules find in it is deliberate.
    let failed: Vec<&str> = report
        .rules
        .iter()
        .filter(|r| r.status() == Status::Failed)
        .map(|r| r.id.as_str())
        .collect();
    assert_eq!(
        failed,
        [
            "identity.node_directory",
            "run.manifest_run_id",
            "fault.known_values",
            "order.stage_ready_after_local_readiness",
            "run.one_terminal_outcome",
            "seq.monotonic",
            "dial.outcome_has_start",
            "dial.start_has_outcome",
            "absence.derived_status_unknown",
            "absence.iroh_version_agrees",
            "absence.no_silent_gap",
        ],
        "{}",
        report.to_markdown()
    );
}

// run.terminal_outcome_recorded

#[test]
fn a_finalized_run_without_its_terminal_outcome_is_found() {
    let mut run = base();
    run.node_mut("orchestrator")
        .remove_first(tag("run_completed"))
        .unwrap();
    let f = violates(run, "run.terminal_outcome_recorded");
    assert_eq!(f.len(), 1);
    assert!(
        f[0].message.contains("although the bundle was finalized"),
        "{}",
        f[0].message
    );
}

#[test]
fn a_run_assembled_without_a_finalize_is_not_held_to_a_terminal_outcome() {
    let mut run = base();
    let orch = run.node_mut("orchestrator");
    orch.remove_first(tag("run_completed")).unwrap();
    orch.finalize = None;
    let report = common::check_run(run);
    assert!(report.passed(), "{}", report.to_markdown());
    assert_eq!(
        report
            .rule("run.terminal_outcome_recorded")
            .unwrap()
            .status(),
        Status::NotExercised
    );
}
