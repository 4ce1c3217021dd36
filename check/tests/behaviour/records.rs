//! Rules judged on one record or one node directory: every record readable, the identity fields
//! of an event's scopes, one node per directory, the bundle's run everywhere, known enum values,
//! and what a SWIM acknowledgement may say.

use super::*;

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
