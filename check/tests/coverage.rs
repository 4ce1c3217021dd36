//! Coverage and absence statistics: what a bundle holds per node role, how every optional field
//! and every discriminated value was reported, and shifts against a baseline. Expected counts are
//! taken from the scenario's records themselves, not from the statistics under test.

mod common;

use diagwire::v1::*;
use diagwire_check::Coverage;
use diagwire_check::coverage::{DiffKind, Difference, Mode, Thresholds, compare};
use diagwire_testkit::scenario::{Params, Run, generate};

fn base() -> Run {
    generate(&Params::small(1))
}

fn longer() -> Run {
    let mut p = Params::small(4);
    p.duration_ms = 300_000;
    generate(&p)
}

#[track_caller]
fn coverage(run: Run) -> Coverage {
    let (_tmp, dir) = common::write(run);
    common::check_path(&dir)
        .coverage
        .expect("coverage asked for")
}

#[track_caller]
fn field(
    c: &Coverage,
    role: &str,
    t: &str,
    f: &str,
) -> (u64, diagwire_check::coverage::FieldStats) {
    c.roles[role]
        .field(t, f)
        .unwrap_or_else(|| panic!("{role}: no {t}.{f}"))
}

fn count(run: &Run, role: &str, pred: impl Fn(&Event) -> bool) -> u64 {
    run.nodes
        .iter()
        .filter(|n| n.identity.role == role)
        .flat_map(|n| &n.events)
        .filter(|e| pred(&e.event))
        .count() as u64
}

#[test]
fn record_kinds_and_event_types_are_counted_per_role() {
    let run = base();
    let c = coverage(run.clone());
    for role in ["orchestrator", "stage"] {
        let nodes: Vec<_> = run
            .nodes
            .iter()
            .filter(|n| n.identity.role == role)
            .collect();
        let r = &c.roles[role];
        assert_eq!(r.nodes.len(), nodes.len());
        let events: usize = nodes.iter().map(|n| n.events.len()).sum();
        let snapshots: usize = nodes.iter().map(|n| n.snapshots.len()).sum();
        assert_eq!(r.record_kinds["event"], events as u64);
        assert_eq!(r.record_kinds["snapshot"], snapshots as u64);
        assert_eq!(r.record_kinds["boot"], nodes.len() as u64);
        assert_eq!(
            r.event_types["DialOutcome"],
            count(&run, role, |e| matches!(e, Event::DialOutcome(_)))
        );
        assert_eq!(
            r.custom_kinds["clock_sample"],
            count(
                &run,
                role,
                |e| matches!(e, Event::Custom(c) if c.payload.tag() == "clock_sample")
            )
        );
    }
    assert_eq!(c.roles["orchestrator"].record_kinds["finalize"], 1);
    assert!(!c.roles["stage"].record_kinds.contains_key("finalize"));
    assert_eq!(c.roles["(bundle)"].record_kinds["manifest"], 1);
}

#[test]
fn values_the_transport_cannot_report_read_could_not_ask() {
    let run = base();
    let peers: u64 = run
        .nodes
        .iter()
        .filter(|n| n.identity.role == "stage")
        .flat_map(|n| &n.snapshots)
        .map(|s| s.body.iroh.as_ref().unwrap().peers.len() as u64)
        .sum();
    let sessions: u64 = run
        .nodes
        .iter()
        .filter(|n| n.identity.role == "stage")
        .map(|n| n.snapshots.len() as u64)
        .sum();
    let c = coverage(run);
    let (n, latency) = field(&c, "stage", "IrohPeer", "latency_ms");
    assert_eq!(n, peers);
    assert_eq!(
        (latency.api_gap, latency.not_observed, latency.reported),
        (peers, 0, 0)
    );
    let (_, conn) = field(&c, "stage", "IrohPeer", "conn_type");
    assert_eq!((conn.derived, conn.reported), (peers, 0));
    let (n, status) = field(&c, "stage", "RelaySession", "status");
    assert_eq!((n, status.derived), (sessions, sessions));
    let (_, send) = field(&c, "stage", "RelaySession", "last_send_at_ms");
    assert_eq!(send.api_gap, sessions);
}

#[test]
fn a_value_absent_without_its_gap_reads_not_observed() {
    let mut run = base();
    let mut dropped = 0;
    for s in &mut run.node_mut("stage-0").snapshots {
        let iroh = s.body.iroh.as_mut().unwrap();
        iroh.api_gaps.retain(|g| *g != ApiGap::RemoteInfoLatencyMs);
        dropped += iroh.peers.len() as u64;
    }
    let c = coverage(run);
    let (n, latency) = field(&c, "stage", "IrohPeer", "latency_ms");
    assert_eq!(latency.not_observed, dropped);
    assert_eq!(latency.api_gap, n - dropped);
}

#[test]
fn a_required_zero_whose_source_says_unavailable_reads_could_not_ask() {
    let mut run = base();
    let mut skeleton = RelayServer::new(0, 0, 0, 0, 0);
    skeleton.counters_source = Some(ValueSource::Unavailable);
    let mut counting = RelayServer::new(0, 2, 2, 10, 10);
    counting.counters_source = Some(ValueSource::Relay);
    let snapshots = &mut run.node_mut("stage-0").snapshots;
    snapshots[0].body.relay_server = Some(skeleton);
    snapshots[1].body.relay_server = Some(counting);
    let c = coverage(run);
    let (n, active) = field(&c, "stage", "RelayServer", "active_sessions");
    assert_eq!(n, 2);
    assert_eq!(
        (
            active.source_unavailable,
            active.reported,
            active.api_gap,
            active.not_observed
        ),
        (1, 1, 0, 0)
    );
    assert_eq!(active.mix(), [1, 0, 1, 0]);
}

#[test]
fn optional_fields_count_present_null_and_left_out() {
    let run = base();
    let with_rtt = count(
        &run,
        "stage",
        |e| matches!(e, Event::ProbeReceived(p) if p.rtt_ms.is_some()),
    );
    let without = count(
        &run,
        "stage",
        |e| matches!(e, Event::ProbeReceived(p) if p.rtt_ms.is_none()),
    );
    let c = coverage(run);
    let (n, rtt) = field(&c, "stage", "ProbeReceived", "rtt_ms");
    assert_eq!(n, with_rtt + without);
    // 1.0.0 event fields are written as null when absent.
    assert_eq!((rtt.present, rtt.null, rtt.absent), (with_rtt, without, 0));
    let (_, relay) = field(&c, "stage", "IrohState", "home_relay_url");
    assert_eq!(relay.absent, 0);
}

#[test]
fn contract_coverage_names_what_was_never_seen() {
    let c = coverage(base());
    let k = &c.contract;
    assert!(k.fields_seen > 0 && k.fields_seen < k.fields_total);
    assert!(k.percent() > 0.0 && k.percent() < 100.0);
    assert!(k.unseen_event_types.iter().any(|t| t == "WirePacket"));
    assert!(!k.unseen_event_types.iter().any(|t| t == "DialOutcome"));
    assert!(k.unseen_fields.iter().any(|f| f == "IrohState.flows"));
    assert!(!k.unseen_fields.iter().any(|f| f == "IrohState.api_gaps"));
    assert_eq!(
        k.unseen_event_types.len() as u64,
        k.event_types_total - k.event_types_seen
    );
    let md = c.to_markdown();
    assert!(md.contains("| stage | `IrohPeer.latency_ms` |"), "{md}");
    assert!(md.contains("could not ask (gap)"));
    let json = c.to_json();
    assert_eq!(
        json["roles"]["stage"]["types"]["IrohPeer"]["fields"]["latency_ms"]["unavailable"]["api_gap"],
        serde_json::json!(field(&c, "stage", "IrohPeer", "latency_ms").1.api_gap)
    );
}

#[test]
fn unknown_keys_are_counted_where_they_sit() {
    let mut run = base();
    let s = &mut run.node_mut("stage-1").snapshots[0];
    s.body
        .iroh
        .as_mut()
        .unwrap()
        .extra
        .insert("x_future".into(), serde_json::json!(1));
    let c = coverage(run);
    assert_eq!(
        c.roles["stage"].unknown_keys["snapshot:/body/iroh/x_future"],
        1
    );
}

fn flagged(d: &[Difference]) -> Vec<(DiffKind, String, String)> {
    d.iter()
        .filter(|x| x.flagged)
        .map(|x| (x.kind, x.role.clone(), x.subject.clone()))
        .collect()
}

#[test]
fn a_bundle_compared_with_itself_has_no_difference() {
    let a = coverage(base());
    let b = coverage(base());
    assert!(compare(&a, &b, Mode::Baseline, &[], &Thresholds::default()).is_empty());
}

#[test]
fn a_field_that_quietly_disappeared_since_the_baseline_is_flagged() {
    let baseline = coverage(base());
    let mut run = base();
    for n in &mut run.nodes {
        for e in &mut n.events {
            if let Event::ProbeReceived(p) = &mut e.event {
                p.rtt_ms = None;
            }
        }
    }
    let current = coverage(run);
    let d = compare(
        &current,
        &baseline,
        Mode::Baseline,
        &[],
        &Thresholds::default(),
    );
    assert_eq!(
        flagged(&d),
        [
            (
                DiffKind::Field,
                "orchestrator".into(),
                "ProbeReceived.rtt_ms".into()
            ),
            (
                DiffKind::Field,
                "stage".into(),
                "ProbeReceived.rtt_ms".into()
            ),
        ]
    );
}

#[test]
fn a_presence_share_that_moved_is_flagged_with_its_test() {
    let baseline = coverage(longer());
    let mut run = longer();
    let mut k = 0;
    for n in run.nodes.iter_mut().filter(|n| n.identity.role == "stage") {
        for e in &mut n.events {
            if let Event::ProbeReceived(p) = &mut e.event {
                k += 1;
                if k % 2 == 0 {
                    p.rtt_ms = None;
                }
            }
        }
    }
    let current = coverage(run);
    let d = compare(
        &current,
        &baseline,
        Mode::Baseline,
        &[],
        &Thresholds::default(),
    );
    let hit = d
        .iter()
        .find(|x| x.flagged && x.subject == "ProbeReceived.rtt_ms")
        .expect("the share of ProbeReceived.rtt_ms moved");
    assert_eq!(
        (hit.kind, hit.role.as_str()),
        (DiffKind::PresenceShare, "stage")
    );
    assert!(
        hit.p_adjusted.unwrap() < 0.01 && hit.effect.unwrap() < -0.3,
        "{hit:?}"
    );
    assert_eq!(flagged(&d).len(), 1, "{d:?}");
}

#[test]
fn an_event_type_gone_since_the_baseline_is_flagged_and_a_new_one_is_not() {
    let baseline = coverage(longer());
    let mut run = longer();
    for n in &mut run.nodes {
        n.events
            .retain(|e| !matches!(e.event, Event::ConnectionCacheInvalidated(_)));
    }
    let peer = run.node("stage-0").id();
    run.node_mut("stage-1").push(GossipReceived::new(
        peer,
        GossipPayloadKind::SwimPiggyback,
        40,
        2,
    ));
    let current = coverage(run);
    let d = compare(
        &current,
        &baseline,
        Mode::Baseline,
        &[],
        &Thresholds::default(),
    );
    assert!(flagged(&d).contains(&(
        DiffKind::EventType,
        "stage".into(),
        "ConnectionCacheInvalidated".into()
    )));
    let new = d
        .iter()
        .find(|x| x.subject == "GossipReceived")
        .expect("listed");
    assert!(!new.flagged, "what appeared is information");
}
