//! How absent values are reported: a derived status reads unknown, the iroh versions agree, a
//! declared gap is not contradicted, and no gap stays silent.

use super::*;

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
        if let Event::Custom(c) = &mut e.event
            && let CustomPayload::IrohApiMissing(m) = &mut c.payload
        {
            m.iroh_version = "0.96".into();
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
