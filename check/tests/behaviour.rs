//! The behavioural contract, rule by rule: for each rule a bundle that breaks it once (the finding
//! names the rule and the records involved, and no other rule fires) and one that keeps it (the
//! rule had something to check and passed). The bundles are the synthetic scenario with one change.

mod common;

use diagwire::v1::*;
use diagwire_check::{CheckReport, Finding, Rulebook, Status};
use diagwire_testkit::scenario::{Params, Run, generate, is_clock_sample};
use serde_json::Value;
use std::path::PathBuf;

fn base() -> Run {
    generate(&Params::small(1))
}

/// The findings of `rule` on `run`, which must break that rule and no other.
#[track_caller]
fn violates(run: Run, rule: &str) -> Vec<Finding> {
    let report = common::check_run(run);
    let r = report.rule(rule).expect("a rule of the catalog");
    assert!(
        r.findings_total > 0,
        "`{rule}` found nothing:\n{}",
        report.to_markdown()
    );
    let others: Vec<&str> = report
        .rules
        .iter()
        .filter(|x| x.id != rule && x.findings_total > 0)
        .map(|x| x.id.as_str())
        .collect();
    assert!(
        others.is_empty(),
        "other rules fired too: {others:?}\n{}",
        report.to_markdown()
    );
    assert!(!report.passed());
    for f in &r.findings {
        assert_eq!(f.rule, rule);
        assert!(
            !f.message.is_empty() && !f.message.contains('\n'),
            "{}",
            f.message
        );
        assert!(f.location.file.ends_with(".json"), "{}", f.location);
    }
    r.findings.clone()
}

/// `run` keeps every rule, and `rule` had something to check.
#[track_caller]
fn passes(run: Run, rule: &str) -> CheckReport {
    let report = common::check_run(run);
    assert!(report.passed(), "{}", report.to_markdown());
    let r = report.rule(rule).expect("a rule of the catalog");
    assert_eq!(r.status(), Status::Passed, "{}", report.to_markdown());
    report
}

/// The `type` of every witness record.
fn witness_types(f: &Finding) -> Vec<String> {
    f.witness
        .iter()
        .map(|w| {
            w.value
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

fn is<T>(f: fn(&Event) -> Option<&T>) -> impl Fn(&Event) -> bool {
    move |e| f(e).is_some()
}

fn dial_started(e: &Event) -> Option<&DialStarted> {
    match e {
        Event::DialStarted(d) => Some(d),
        _ => None,
    }
}

fn dial_outcome(e: &Event) -> Option<&DialOutcome> {
    match e {
        Event::DialOutcome(d) => Some(d),
        _ => None,
    }
}

fn tag(t: &'static str) -> impl Fn(&Event) -> bool {
    move |e| e.tag() == t
}

#[test]
fn the_scenario_keeps_every_rule_and_exercises_every_rule() {
    let report = common::check_run(base());
    assert!(report.passed(), "{}", report.to_markdown());
    let idle: Vec<&str> = report.not_exercised().map(|r| r.id.as_str()).collect();
    assert!(idle.is_empty(), "not exercised: {idle:?}");
    assert_eq!(
        report.records,
        report.rule("bundle.readable").unwrap().checked
    );
}

// bundle.readable

#[test]
fn an_unreadable_record_is_a_finding_not_a_silent_skip() {
    let (_tmp, dir) = common::write(base());
    let broken = dir.join("stage-0/snapshots/snapshot-000003.json");
    std::fs::write(&broken, "{\"identity\": 7").unwrap();
    let report = common::check_path(&dir).report;
    let r = report.rule("bundle.readable").unwrap();
    assert_eq!(r.findings_total, 1, "{}", report.to_markdown());
    let f = &r.findings[0];
    assert!(
        f.location
            .file
            .ends_with("stage-0/snapshots/snapshot-000003.json")
    );
    assert!(f.message.contains("no rule saw it"), "{}", f.message);
    let others: Vec<&str> = report
        .rules
        .iter()
        .filter(|x| x.id != "bundle.readable" && x.findings_total > 0)
        .map(|x| x.id.as_str())
        .collect();
    assert!(others.is_empty(), "{others:?}");
    assert!(!report.passed());
    assert_eq!(report.unreadable, 1);
}

// identity.scope_fields

#[test]
fn an_object_event_without_its_sequence_breaks_the_scope_fields() {
    let mut run = base();
    let mut fault = FaultDetected::new(FaultReason::ProtocolError, FaultComponent::EdgeEstablisher);
    fault.run_id = Some("scenario-small".into());
    fault.edge_id = Some(101);
    fault.object_id = Some(10_001);
    run.node_mut("stage-0").push(fault);
    let f = violates(run, "identity.scope_fields");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].location.pointer, "/sequence");
    assert!(
        f[0].message.contains("`sequence` (for its object scope)"),
        "{}",
        f[0].message
    );
    assert_eq!(witness_types(&f[0]), ["fault_detected"]);
}

#[test]
fn a_stage_fault_outside_any_run_breaks_the_scope_fields() {
    let mut run = base();
    let mut fault = FaultDetected::new(FaultReason::StepFailed, FaultComponent::StageController);
    fault.stage_index = Some(1);
    run.node_mut("stage-1").push(fault);
    let f = violates(run, "identity.scope_fields");
    assert_eq!(f[0].location.pointer, "/run_id");
    assert!(
        f[0].message.contains("`run_id` (for its stage scope)"),
        "{}",
        f[0].message
    );
}

#[test]
fn a_fault_with_every_field_of_its_scopes_keeps_the_scope_fields() {
    let mut run = base();
    let mut fault = FaultDetected::new(FaultReason::ProtocolError, FaultComponent::EdgeEstablisher);
    fault.run_id = Some("scenario-small".into());
    fault.edge_id = Some(101);
    fault.object_id = Some(10_001);
    fault.sequence = Some(1);
    run.node_mut("stage-0").push(fault);
    passes(run, "identity.scope_fields");
}

// identity.node_directory

#[test]
fn an_event_of_another_node_in_a_node_directory_is_found() {
    let mut run = base();
    let intruder = run.node("orchestrator").id();
    let stage = run.node_mut("stage-0");
    let i = stage.find(tag("MessageSent")).unwrap();
    stage.events[i].node_id = intruder;
    let f = violates(run, "identity.node_directory");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].location.pointer, "/node_id");
    assert!(
        f[0].message.contains("directory `stage-0`"),
        "{}",
        f[0].message
    );
    assert_eq!(witness_types(&f[0]), ["MessageSent"]);
}

#[test]
fn records_naming_their_own_node_keep_the_node_directory() {
    passes(base(), "identity.node_directory");
}

// run.manifest_run_id

#[test]
fn a_lifecycle_event_of_another_run_is_found() {
    let mut run = base();
    let stage = run.node_mut("stage-1");
    let i = stage.find(tag("weights_downloaded")).unwrap();
    if let Event::WeightsDownloaded(w) = &mut stage.events[i].event {
        w.run_id = "run-from-yesterday".into();
    }
    let f = violates(run, "run.manifest_run_id");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].location.pointer, "/run_id");
    assert!(
        f[0].message
            .contains("run `run-from-yesterday`, but the bundle is run `scenario-small`"),
        "{}",
        f[0].message
    );
    assert_eq!(witness_types(&f[0]), ["weights_downloaded"]);
}

#[test]
fn a_snapshot_of_another_run_is_found() {
    let mut run = base();
    run.node_mut("orchestrator").snapshots[2].run_id = "other".into();
    let f = violates(run, "run.manifest_run_id");
    assert!(
        f[0].location
            .file
            .ends_with("orchestrator/snapshots/snapshot-000003.json")
    );
    assert_eq!(f[0].location.pointer, "/run_id");
}

#[test]
fn records_of_the_bundles_run_keep_the_manifest_run_id() {
    passes(base(), "run.manifest_run_id");
}

// fault.known_values

#[test]
fn a_fault_reason_outside_the_stable_set_is_found() {
    let mut run = base();
    let mut fault = NodeFaulted::new(
        run.node("stage-1").identity.node_id_hex.clone(),
        FaultReason::Other("gpu_fell_off_bus".into()),
        FaultComponent::GpuWorker,
    );
    fault.run_id = Some("scenario-small".into());
    run.node_mut("stage-1").push(fault);
    let f = violates(run, "fault.known_values");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].location.pointer, "/reason");
    assert!(
        f[0].message.contains("`gpu_fell_off_bus`"),
        "{}",
        f[0].message
    );
    assert_eq!(witness_types(&f[0]), ["node_faulted"]);
}

#[test]
fn a_fault_component_outside_the_stable_set_is_found() {
    let mut run = base();
    let mut fault = FaultDetected::new(
        FaultReason::Timeout,
        FaultComponent::Other("nvml_watchdog".into()),
    );
    fault.run_id = Some("scenario-small".into());
    run.node_mut("stage-0").push(fault);
    let f = violates(run, "fault.known_values");
    assert_eq!(f[0].location.pointer, "/component");
}

#[test]
fn faults_with_stable_values_keep_known_values() {
    passes(base(), "fault.known_values");
}

// swim.acked_not_timed_out

fn acked(outcome: SwimProbeOutcome) -> SwimProbeAcked {
    let mut a = SwimProbeAcked::new(diagwire::NodeId([9; 32]), 412, SwimProbeKind::Direct);
    a.outcome = Some(outcome);
    a
}

#[test]
fn an_acknowledged_probe_that_says_timeout_is_found() {
    let mut run = base();
    let a = acked(SwimProbeOutcome::Timeout);
    run.node_mut("stage-0").push(a);
    let f = violates(run, "swim.acked_not_timed_out");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].location.pointer, "/outcome");
    assert!(f[0].message.contains("`timeout`"), "{}", f[0].message);
    assert_eq!(witness_types(&f[0]), ["SwimProbeAcked"]);
}

#[test]
fn an_acknowledged_probe_that_succeeded_keeps_the_rule() {
    let mut run = base();
    let a = acked(SwimProbeOutcome::Success);
    run.node_mut("stage-0").push(a);
    passes(run, "swim.acked_not_timed_out");
}

// order.prompt_after_barrier

#[test]
fn a_prompt_before_the_readiness_barrier_is_found_with_both_events() {
    let mut run = base();
    run.node_mut("orchestrator")
        .move_after(tag("readiness_barrier_passed"), tag("run_completed"));
    let f = violates(run, "order.prompt_after_barrier");
    assert_eq!(
        f.len(),
        1,
        "only the first prompt of the run is the witness"
    );
    assert_eq!(
        witness_types(&f[0]),
        ["prompt_injected", "readiness_barrier_passed"]
    );
    assert!(
        f[0].message
            .contains("comes before the first `readiness_barrier_passed`"),
        "{}",
        f[0].message
    );
}

#[test]
fn a_prompt_without_any_barrier_is_found() {
    let mut run = base();
    run.node_mut("orchestrator")
        .remove_first(tag("readiness_barrier_passed"))
        .unwrap();
    let f = violates(run, "order.prompt_after_barrier");
    assert_eq!(witness_types(&f[0]), ["prompt_injected"]);
    assert!(f[0].message.contains("has no earlier"), "{}", f[0].message);
}

#[test]
fn prompts_after_the_barrier_keep_the_order() {
    passes(base(), "order.prompt_after_barrier");
}

// order.stage_ready_after_local_readiness

#[test]
fn a_stage_ready_before_its_weights_are_loaded_is_found() {
    let mut run = base();
    run.node_mut("stage-1")
        .remove_first(tag("weights_loaded"))
        .unwrap();
    let f = violates(run, "order.stage_ready_after_local_readiness");
    assert_eq!(f.len(), 1);
    assert_eq!(witness_types(&f[0]), ["stage_ready"]);
    assert!(
        f[0].message.contains("`weights_loaded`"),
        "{}",
        f[0].message
    );
    assert!(f[0].location.file.contains("/stage-1/events/"));
}

#[test]
fn a_stage_ready_before_an_edge_it_started_is_ready_is_found() {
    let mut run = base();
    let stage = run.node_mut("stage-0");
    let edge = match &stage.events[stage.find(tag("edge_ready")).unwrap()].event {
        Event::EdgeReady(e) => e.edge_id,
        _ => unreachable!(),
    };
    stage.move_after(tag("edge_ready"), tag("stage_ready"));
    let f = violates(run, "order.stage_ready_after_local_readiness");
    assert_eq!(f.len(), 1);
    assert_eq!(
        witness_types(&f[0]),
        ["stage_ready", "edge_provision_started", "edge_ready"]
    );
    assert!(
        f[0].message.contains(&format!("edge_id {edge} ")),
        "{}",
        f[0].message
    );
}

#[test]
fn stages_ready_after_weights_and_edges_keep_the_order() {
    passes(base(), "order.stage_ready_after_local_readiness");
}

// order.torn_down_after_teardown

#[test]
fn a_run_torn_down_before_its_stages_stopped_is_found() {
    let mut run = base();
    run.node_mut("orchestrator")
        .move_after(tag("run_torn_down"), tag("run_completed"));
    let f = violates(run, "order.torn_down_after_teardown");
    // One finding per node and kind of step, its last one: the orchestrator's last stop request
    // and each stage's stop.
    assert_eq!(f.len(), 3);
    for x in &f {
        assert_eq!(witness_types(x)[0], "run_torn_down");
    }
    let later: Vec<String> = f.iter().map(|x| witness_types(x)[1].clone()).collect();
    assert_eq!(later.iter().filter(|t| *t == "stop_run_sent").count(), 1);
    assert_eq!(later.iter().filter(|t| *t == "stage_stopped").count(), 2);
}

#[test]
fn teardown_across_skewed_clocks_is_ordered_by_the_clock_samples() {
    // Stage 2's wall clock runs 1.3 s ahead: its `stage_stopped` carries a wall time after the
    // orchestrator's `run_torn_down`, yet happened before it.
    let mut params = Params::small(3);
    params.stages = 3;
    let run = generate(&params);
    let report = passes(run.clone(), "order.torn_down_after_teardown");
    assert_eq!(
        report
            .rule("order.torn_down_after_teardown")
            .unwrap()
            .checked,
        1
    );
    // Without its clock samples the skew is not known, and the order looks broken.
    let mut run = run;
    run.node_mut("stage-2")
        .events
        .retain(|e| !is_clock_sample(e));
    let f = violates(run, "order.torn_down_after_teardown");
    assert_eq!(f.len(), 1);
    assert!(
        f[0].location.file.contains("/stage-2/events/"),
        "{}",
        f[0].location
    );
    assert_eq!(witness_types(&f[0]), ["run_torn_down", "stage_stopped"]);
}

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

// seq.monotonic

#[test]
fn a_sequence_number_going_back_is_found_with_the_two_records() {
    let mut run = base();
    let stage = run.node_mut("stage-0");
    let i = stage.find(tag("MessageReceived")).unwrap();
    let before = stage.events[..i]
        .iter()
        .rev()
        .find(|e| !is_clock_sample(e))
        .unwrap()
        .monotonic_seq;
    stage.events[i].monotonic_seq = before.saturating_sub(3).max(2);
    let f = violates(run, "seq.monotonic");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].witness.len(), 2);
    assert_eq!(witness_types(&f[0])[1], "MessageReceived");
    assert!(f[0].message.contains("goes back from"), "{}", f[0].message);
}

#[test]
fn clock_samples_numbered_by_the_sink_are_excepted() {
    let report = passes(base(), "seq.monotonic");
    // The exception is what keeps the scenario passing: without it the sink's numbers break it.
    let text = diagwire_check::rulebook::BUILTIN_RULES.replace(
        r#""except_custom_kinds": ["clock_sample"]"#,
        r#""except_custom_kinds": []"#,
    );
    let strict = Rulebook::from_json(&text).unwrap();
    let (_tmp, dir) = common::write(base());
    let checked = diagwire_check::check_bundle(
        &dir,
        diagwire::bundle::read::Limits::default(),
        &strict,
        diagwire_check::Options::default(),
        false,
    )
    .unwrap();
    assert!(checked.report.rule("seq.monotonic").unwrap().findings_total > 0);
    assert!(report.rule("seq.monotonic").unwrap().checked > 100);
}

fn restart(run: &mut Run, label: &str) {
    let node = run.node_mut(label);
    let half = node.events.len() / 2;
    let mut seq = 0;
    for e in node.events[half..]
        .iter_mut()
        .filter(|e| !is_clock_sample(e))
    {
        seq += 1;
        e.monotonic_seq = seq;
    }
}

#[test]
fn a_restart_is_allowed_once_per_later_boot() {
    let mut run = base();
    restart(&mut run, "stage-1");
    let node = run.node_mut("stage-1");
    let mut first = node.identity.clone();
    first.boot_sequence = 0;
    node.identity.boot_sequence = 1;
    node.earlier_boots.push(first);
    passes(run, "seq.monotonic");
}

#[test]
fn a_restart_without_a_later_boot_is_found() {
    let mut run = base();
    restart(&mut run, "stage-1");
    let f = violates(run, "seq.monotonic");
    assert_eq!(f.len(), 1);
    assert!(
        f[0].message.contains("only 1 boot record(s)"),
        "{}",
        f[0].message
    );
}

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

// absence.derived_status_unknown

#[test]
fn a_derived_relay_status_other_than_unknown_is_found() {
    let mut run = base();
    let snap = &mut run.node_mut("stage-1").snapshots[1];
    let session = snap
        .body
        .iroh
        .as_mut()
        .unwrap()
        .relay_session
        .as_mut()
        .unwrap();
    session.status = RelaySessionStatus::Connected;
    let f = violates(run, "absence.derived_status_unknown");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].location.pointer, "/body/iroh/relay_session/status");
    assert!(
        f[0].location
            .file
            .ends_with("stage-1/snapshots/snapshot-000002.json")
    );
    assert_eq!(f[0].witness[0].location.pointer, "/body/iroh/relay_session");
    assert_eq!(f[0].witness[0].value["status"], "connected");
    assert_eq!(f[0].witness[0].value["status_source"], "derived");
}

#[test]
fn a_reported_relay_status_keeps_the_rule() {
    let mut run = base();
    let iroh = run.node_mut("stage-1").snapshots[1]
        .body
        .iroh
        .as_mut()
        .unwrap();
    let session = iroh.relay_session.as_mut().unwrap();
    session.status = RelaySessionStatus::Connected;
    session.status_source = ValueSource::Iroh;
    iroh.api_gaps.retain(|g| *g != ApiGap::RelayTunnelStatus);
    passes(run, "absence.derived_status_unknown");
}

/// A copy of the example bundle in which every snapshot of a stage presents an inferred relay
/// status as an observation (`connected` with `status_source:
/// derived`): the bundle a writer that guesses would produce. Returns the directory and how many snapshots it changed.
fn example_with_guessed_relay_statuses() -> (tempfile::TempDir, PathBuf, u64) {
    let example = common::repo().join("examples/bundles/n3-relay-flap");
    let out = tempfile::tempdir().unwrap();
    let root = out.path().join("n3-relay-flap");
    let mut changed = 0;
    let mut stack = vec![example.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let to = root.join(path.strip_prefix(&example).unwrap());
            if path.is_dir() {
                std::fs::create_dir_all(&to).unwrap();
                stack.push(path);
                continue;
            }
            let mut bytes = std::fs::read(&path).unwrap();
            let is_snapshot = path.parent().is_some_and(|p| p.ends_with("snapshots"));
            let is_stage = path.strip_prefix(&example).is_ok_and(|p| {
                p.starts_with("stage-0") || p.starts_with("stage-1") || p.starts_with("stage-2")
            });
            if is_snapshot && is_stage {
                let mut v: Value = serde_json::from_slice(&bytes).unwrap();
                v["body"]["iroh"]["relay_session"]["status"] = "connected".into();
                bytes = serde_json::to_vec_pretty(&v).unwrap();
                changed += 1;
            }
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::write(&to, bytes).unwrap();
        }
    }
    (out, root, changed)
}

#[test]
fn the_example_bundle_keeps_every_rule_and_names_the_idle_ones() {
    let example = common::repo().join("examples/bundles/n3-relay-flap");
    let report = common::check_path(&example).report;
    assert!(report.passed(), "{}", report.to_markdown());
    // Every member's snapshot (23 + 3 × 18) has a relay session, derived and unknown.
    assert_eq!(
        report
            .rule("absence.derived_status_unknown")
            .unwrap()
            .checked,
        77
    );
    // The example has the whole run lifecycle, so every rule has something to check.
    let idle: Vec<&str> = report.not_exercised().map(|r| r.id.as_str()).collect();
    assert!(idle.is_empty(), "{idle:?}");
    for (id, checked) in [
        ("run.one_terminal_outcome", 1),
        ("order.prompt_after_barrier", 1),
        ("order.stage_ready_after_local_readiness", 3),
        ("fault.known_values", 4),
        ("dial.start_has_outcome", 25),
    ] {
        assert_eq!(report.rule(id).unwrap().checked, checked, "{id}");
    }
    // The three redials after the orchestrator exited are still in flight at the end.
    assert_eq!(
        report.rule("dial.start_has_outcome").unwrap().inconclusive,
        3
    );
    assert!(
        report
            .to_markdown()
            .contains("Every rule had something to check.")
    );
}

#[test]
fn the_oldest_generation_example_keeps_every_rule_and_names_the_idle_ones() {
    let example = common::repo().join("examples/bundles/n3-relay-flap-oldest");
    let report = common::check_path(&example).report;
    assert!(report.passed(), "{}", report.to_markdown());
    // That generation writes no lifecycle events, no relay session and no per-probe SWIM events:
    // those rules say so.
    let idle: Vec<&str> = report.not_exercised().map(|r| r.id.as_str()).collect();
    assert_eq!(
        idle,
        [
            "identity.scope_fields",
            "fault.known_values",
            "swim.acked_not_timed_out",
            "order.prompt_after_barrier",
            "order.stage_ready_after_local_readiness",
            "order.torn_down_after_teardown",
            "run.one_terminal_outcome",
            "run.terminal_outcome_recorded",
            "absence.derived_status_unknown",
        ]
    );
    assert!(report.to_markdown().contains("Never had anything to check"));
}

#[test]
fn a_bundle_guessing_its_relay_statuses_breaks_only_the_derived_status_rule() {
    let (_keep, bundle, changed) = example_with_guessed_relay_statuses();
    let report = common::check_path(&bundle).report;
    let failed: Vec<&str> = report
        .rules
        .iter()
        .filter(|r| r.status() == Status::Failed)
        .map(|r| r.id.as_str())
        .collect();
    assert_eq!(
        failed,
        ["absence.derived_status_unknown"],
        "{}",
        report.to_markdown()
    );
    assert_eq!(
        report
            .rule("absence.derived_status_unknown")
            .unwrap()
            .findings_total,
        changed
    );
    assert!(changed > 0);
}

// absence.iroh_version_agrees

#[test]
fn a_snapshot_reporting_another_iroh_version_is_found() {
    let mut run = base();
    run.node_mut("stage-1").snapshots[3]
        .body
        .iroh
        .as_mut()
        .unwrap()
        .iroh_version = Some("0.97.0".into());
    let f = violates(run, "absence.iroh_version_agrees");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].witness.len(), 2);
    assert!(
        f[0].message.contains("`0.96.0` (boot record)"),
        "{}",
        f[0].message
    );
    assert!(
        f[0].message.contains("`0.97.0` (snapshot iroh block)"),
        "{}",
        f[0].message
    );
    assert_eq!(f[0].location.pointer, "/body/iroh/iroh_version");
}

#[test]
fn an_iroh_api_missing_event_with_a_literal_version_is_found() {
    let mut run = base();
    let node = run.node_mut("stage-0");
    for e in &mut node.events {
        if let Event::Custom(c) = &mut e.event {
            if let CustomPayload::IrohApiMissing(m) = &mut c.payload {
                m.iroh_version = "0.96".into();
            }
        }
    }
    let f = violates(run, "absence.iroh_version_agrees");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].location.pointer, "/fields/iroh_version");
    assert!(f[0].message.contains("`0.96`"), "{}", f[0].message);
}

#[test]
fn one_iroh_version_everywhere_keeps_the_rule() {
    passes(base(), "absence.iroh_version_agrees");
}

// absence.gap_not_contradicted

#[test]
fn a_value_reported_natively_while_its_gap_is_declared_is_found() {
    let mut run = base();
    let iroh = run.node_mut("stage-0").snapshots[2]
        .body
        .iroh
        .as_mut()
        .unwrap();
    iroh.peers[0].conn_type_source = Some(ValueSource::Iroh);
    let f = violates(run, "absence.gap_not_contradicted");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].location.pointer, "/body/iroh/peers/0/conn_type");
    assert_eq!(f[0].witness[1].location.pointer, "/body/iroh/api_gaps");
    assert!(
        f[0].message.contains("`RemoteInfo.conn_type`"),
        "{}",
        f[0].message
    );
}

#[test]
fn a_value_the_driver_reported_while_its_gap_is_declared_is_found() {
    let mut run = base();
    let mut app = AppState::new(0, WorkerStatus::Busy);
    app.gpu_mem_used_bytes = Some(1 << 30);
    app.gpu_mem_source = Some(ValueSource::Driver);
    app.api_gaps.push(CaptureGap::AppStateGpuMemUsedBytes);
    app.api_gaps.push(CaptureGap::AppStateGpuMemTotalBytes);
    run.node_mut("stage-0").snapshots[2].body.app = Some(app);
    let f = violates(run, "absence.gap_not_contradicted");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].location.pointer, "/body/app/gpu_mem_used_bytes");
    assert!(
        f[0].message.contains("`gpu_mem_source: driver`"),
        "{}",
        f[0].message
    );
}

#[test]
fn a_reported_value_without_its_gap_keeps_the_rule() {
    let mut run = base();
    let iroh = run.node_mut("stage-0").snapshots[2]
        .body
        .iroh
        .as_mut()
        .unwrap();
    iroh.peers[0].conn_type_source = Some(ValueSource::Iroh);
    iroh.api_gaps.retain(|g| *g != ApiGap::RemoteInfoConnType);
    passes(run, "absence.gap_not_contradicted");
}

// absence.no_silent_gap

fn drop_latency_gap(run: &mut Run, label: &str) {
    for s in &mut run.node_mut(label).snapshots {
        s.body
            .iroh
            .as_mut()
            .unwrap()
            .api_gaps
            .retain(|g| *g != ApiGap::RemoteInfoLatencyMs);
    }
}

#[test]
fn a_value_absent_everywhere_without_a_gap_or_an_error_is_a_silent_gap() {
    let mut run = base();
    drop_latency_gap(&mut run, "stage-0");
    let snapshots = run.node("stage-0").snapshots.len();
    let f = violates(run, "absence.no_silent_gap");
    assert_eq!(f.len(), 1, "one finding per node and gap");
    assert!(
        f[0].message.contains(&format!(
            "in {snapshots} snapshot(s) of `stage-0` no `IrohPeer` has `latency_ms`"
        )),
        "{}",
        f[0].message
    );
    assert_eq!(f[0].location.pointer, "/body/iroh/peers/0");
}

#[test]
fn an_error_event_naming_the_gap_keeps_the_rule() {
    let mut run = base();
    drop_latency_gap(&mut run, "stage-0");
    run.node_mut("stage-0").push(ErrorEvent::new(
        "iroh_introspect",
        "RemoteInfo.latency_ms is not exposed by the linked iroh; reported as absent",
    ));
    passes(run, "absence.no_silent_gap");
}

// Rules that had nothing to check.

#[test]
fn a_bundle_without_events_passes_only_vacuously_and_says_so() {
    let mut run = base();
    for n in &mut run.nodes {
        n.events.clear();
        n.snapshots.clear();
    }
    let report = common::check_run(run);
    assert!(report.passed());
    let idle: Vec<&str> = report.not_exercised().map(|r| r.id.as_str()).collect();
    for id in [
        "seq.monotonic",
        "dial.outcome_has_start",
        "order.prompt_after_barrier",
        "absence.no_silent_gap",
        "run.one_terminal_outcome",
    ] {
        assert!(
            idle.contains(&id),
            "{id} should not count as passed: {idle:?}"
        );
    }
    let json = report.to_json();
    let statuses: Vec<&str> = json["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert!(statuses.contains(&"not_exercised") && statuses.contains(&"passed"));
}

#[test]
fn a_rule_below_violation_level_is_reported_without_failing_the_check() {
    let text = diagwire_check::rulebook::BUILTIN_RULES.replacen(
        r#""id": "absence.derived_status_unknown",
      "title": "A derived relay status reads unknown",
      "scope": "object",
      "level": "violation""#,
        r#""id": "absence.derived_status_unknown",
      "title": "A derived relay status reads unknown",
      "scope": "object",
      "level": "improvement""#,
        1,
    );
    let catalog = Rulebook::from_json(&text).unwrap();
    assert_eq!(
        catalog.get("absence.derived_status_unknown").unwrap().level,
        diagwire_check::Level::Improvement
    );
    let (_keep, example, _) = example_with_guessed_relay_statuses();
    let checked = diagwire_check::check_bundle(
        &example,
        diagwire::bundle::read::Limits::default(),
        &catalog,
        diagwire_check::Options::default(),
        false,
    )
    .unwrap();
    assert!(checked.report.passed());
    assert!(
        checked
            .report
            .rule("absence.derived_status_unknown")
            .unwrap()
            .findings_total
            > 0
    );
}

#[test]
fn findings_kept_per_rule_are_capped_and_the_rest_counted() {
    let (_keep, example, _) = example_with_guessed_relay_statuses();
    let checked = diagwire_check::check_bundle(
        &example,
        diagwire::bundle::read::Limits::default(),
        &Rulebook::builtin(),
        diagwire_check::Options {
            max_findings_per_rule: 3,
        },
        false,
    )
    .unwrap();
    let r = checked
        .report
        .rule("absence.derived_status_unknown")
        .unwrap();
    assert_eq!(r.findings.len(), 3);
    assert!(r.findings_total > 3);
    assert!(
        checked
            .report
            .to_markdown()
            .contains(&format!("and {} more", r.findings_total - 3))
    );
}

#[test]
fn every_rule_of_the_catalog_has_cases_in_this_file() {
    let source = include_str!("behaviour.rs");
    for rule in &Rulebook::builtin().rules {
        assert!(
            source.matches(&format!("\"{}\"", rule.id)).count() >= 2,
            "rule `{}` needs a breaking and a keeping case here",
            rule.id
        );
    }
}
