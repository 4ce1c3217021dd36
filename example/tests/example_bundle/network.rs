//! The network's story: dials and the connection cache, SWIM suspicion and death, relay sessions
//! and the relay's own reports, gossip, probes and kernel drop counters.

use std::collections::{BTreeMap, BTreeSet};

use diagwire::NodeId;
use diagwire::v1::{
    DialResult, Event, PeerState, ProbeKind, ProbeOutcome, RelaySessionStatus, Snapshot,
    SnapshotTrigger,
};

use crate::support::*;

#[test]
fn stages_time_out_dialing_the_orchestrator_while_dials_between_stages_succeed() {
    let p = parsed();
    let stages = p.stages();
    assert_eq!(stages.len(), 3);
    for stage in stages {
        let mut to_orchestrator = Vec::new();
        let mut between_stages = 0;
        for r in p.events_of(&stage) {
            if let Event::DialOutcome(d) = &r.event {
                if p.label(&d.peer) == "orchestrator" {
                    to_orchestrator.push(d.outcome.clone());
                } else {
                    assert_eq!(d.outcome, DialResult::Success, "{stage}");
                    between_stages += 1;
                }
            }
        }
        assert!(
            between_stages >= 2,
            "{stage}: {between_stages} dials to other stages"
        );
        assert!(
            to_orchestrator.contains(&DialResult::Timeout),
            "{stage}: {to_orchestrator:?}"
        );
        assert_eq!(
            to_orchestrator.last(),
            Some(&DialResult::Success),
            "{stage}"
        );
        let started = p
            .events_of(&stage)
            .iter()
            .filter(
                |r| matches!(&r.event, Event::DialStarted(d) if p.label(&d.peer) == "orchestrator"),
            )
            .count();
        // The redial after the orchestrator's process exited is still in flight at the end.
        assert_eq!(started, to_orchestrator.len() + 1, "{stage}");
        let last_dial = p
            .events_of(&stage)
            .iter()
            .rfind(|r| matches!(&r.event, Event::DialStarted(_) | Event::DialOutcome(_)))
            .expect("dials");
        assert!(
            matches!(&last_dial.event, Event::DialStarted(d) if p.label(&d.peer) == "orchestrator"),
            "{stage}"
        );
    }
}

#[test]
fn connection_cache_generations_count_the_successful_dials() {
    let p = parsed();
    for label in p.members() {
        let records = p.events_of(&label);
        let mut dials: BTreeMap<NodeId, u64> = BTreeMap::new();
        let mut checked = 0;
        for r in records {
            match &r.event {
                Event::DialOutcome(d) if d.outcome == DialResult::Success => {
                    *dials.entry(d.peer).or_default() += 1;
                }
                Event::ConnectionCacheHit(h) => {
                    checked += 1;
                    assert_eq!(
                        h.generation, dials[&h.peer],
                        "{label} seq {}",
                        r.monotonic_seq
                    );
                }
                Event::ConnectionCacheInvalidated(i) => {
                    checked += 1;
                    assert_eq!(
                        i.generation, dials[&i.peer],
                        "{label} seq {}",
                        r.monotonic_seq
                    );
                }
                _ => {}
            }
        }
        assert!(checked > 0, "{label}");
    }
}

#[test]
fn a_peer_goes_suspect_then_dead_with_a_transition_snapshot() {
    let p = parsed();
    let mut deaths = 0;
    for node in &p.manifest.nodes {
        let events = p.events_of(&node.label);
        for r in events {
            let Event::SwimTransition(t) = &r.event else {
                continue;
            };
            if t.to != PeerState::Dead {
                continue;
            }
            deaths += 1;
            assert_eq!(t.from, PeerState::Suspect);
            let suspected = events.iter().any(|e| {
                matches!(&e.event, Event::SwimTransition(s)
                    if s.peer == t.peer && s.to == PeerState::Suspect && e.wall_ms < r.wall_ms)
            });
            assert!(suspected, "{}: Dead without Suspect", node.label);
            let tag = format!("seq-{}", r.monotonic_seq);
            let snap = p
                .snapshots_of(&node.label)
                .iter()
                .find(|s| s.trigger == SnapshotTrigger::Transition(tag.clone()))
                .unwrap_or_else(|| panic!("{}: no snapshot {tag}", node.label));
            let view = snap
                .body
                .reachability
                .iter()
                .find(|v| v.peer_node_id_hex == t.peer.to_hex())
                .expect("peer in reachability");
            assert_eq!(view.current_swim_opinion, PeerState::Dead);
        }
    }
    assert!(deaths >= 1);
}

#[test]
fn every_swim_transition_has_its_transition_snapshot() {
    let p = parsed();
    for node in &p.manifest.nodes {
        let tags: BTreeSet<String> = p
            .snapshots_of(&node.label)
            .iter()
            .filter_map(|s| match &s.trigger {
                SnapshotTrigger::Transition(tag) => Some(tag.clone()),
                _ => None,
            })
            .collect();
        let expected: BTreeSet<String> = p
            .events_of(&node.label)
            .iter()
            .filter(|r| matches!(r.event, Event::SwimTransition(_)))
            .map(|r| format!("seq-{}", r.monotonic_seq))
            .collect();
        assert_eq!(tags, expected, "{}", node.label);
    }
}

#[test]
fn relay_sessions_flip_connected_disconnected_connecting_connected_on_every_node() {
    use RelaySessionStatus::{Connected, Connecting, Disconnected};
    let p = parsed();
    for label in p.members() {
        let flips: Vec<(RelaySessionStatus, RelaySessionStatus)> = p
            .events_of(&label)
            .iter()
            .filter_map(|r| match &r.event {
                Event::RelaySessionStateChanged(c) => {
                    Some((c.from_status.clone(), c.to_status.clone()))
                }
                _ => None,
            })
            .collect();
        let flap = [
            (Connected, Disconnected),
            (Disconnected, Connecting),
            (Connecting, Connected),
        ];
        assert!(flips.windows(3).any(|w| w == flap), "{label}: {flips:?}");
        // The snapshots cannot ask for the status (see the API gaps), so they all say unknown.
        let statuses: BTreeSet<String> = p
            .snapshots_of(&label)
            .iter()
            .filter_map(|s| s.body.iroh.as_ref()?.relay_session.as_ref())
            .map(|r| r.status.as_ref().to_owned())
            .collect();
        assert_eq!(statuses, BTreeSet::from(["unknown".to_owned()]), "{label}");
    }
}

#[test]
fn the_relay_reports_its_sessions_and_closes_them_when_its_listener_restarts() {
    let p = parsed();
    let events = p.events_of("relay");
    let opened = events
        .iter()
        .filter(|r| matches!(r.event, Event::RelaySessionOpened(_)))
        .count();
    let closes: Vec<(String, String, String)> = events
        .iter()
        .filter_map(|r| match &r.event {
            Event::RelaySessionClosed(c) => {
                assert_eq!(c.closed_at_ms - c.opened_at_ms, c.duration_ms);
                Some((
                    p.labels_by_hex[&c.peer_node_id_hex.0].clone(),
                    c.close_initiator.as_ref().to_owned(),
                    c.close_reason.clone(),
                ))
            }
            _ => None,
        })
        .collect();
    // Every member opens a session, loses it when the relay restarts, and opens it again.
    assert_eq!(opened, 8);
    let by_relay: BTreeSet<&str> = closes
        .iter()
        .filter(|c| c.1 == "relay" && c.2 == "listener_restart")
        .map(|c| c.0.as_str())
        .collect();
    assert_eq!(
        by_relay,
        BTreeSet::from(["orchestrator", "stage-0", "stage-1", "stage-2"])
    );
    assert!(closes.contains(&("orchestrator".into(), "peer".into(), "client_closed".into())));
    assert_eq!(closes.len(), 5);
    // The latest relay_server block agrees with the events.
    let last = p.snapshots_of("relay").last().expect("relay snapshots");
    let server = last.body.relay_server.as_ref().expect("relay_server block");
    assert_eq!(
        (
            server.total_opens,
            server.total_closes,
            server.active_sessions
        ),
        (8, 5, 3)
    );
    assert_eq!(
        server.closes_by_reason,
        [
            ("client_closed".to_owned(), 1),
            ("listener_restart".to_owned(), 4)
        ]
    );
    assert!(last.body.iroh.is_none() && last.body.swim.is_none());
    assert_eq!(p.boots["relay"].role, "relay");
}

#[test]
fn gossip_comes_in_two_kinds_and_the_orchestrator_gets_no_piggyback() {
    let p = parsed();
    let kinds = |label: &str| -> BTreeSet<String> {
        p.events_of(label)
            .iter()
            .filter_map(|r| match &r.event {
                Event::GossipReceived(g) => Some(g.payload_kind.as_ref().to_owned()),
                _ => None,
            })
            .collect()
    };
    let both = BTreeSet::from(["node_metadata".to_owned(), "swim_piggyback".to_owned()]);
    for stage in p.stages() {
        assert_eq!(kinds(&stage), both, "{stage}");
    }
    assert_eq!(
        kinds("orchestrator"),
        BTreeSet::from(["node_metadata".to_owned()])
    );
}

#[test]
fn probes_report_udp_echo_ok_and_udp_relay_timeouts_and_refusals() {
    let p = parsed();
    let mut outcomes = BTreeSet::new();
    for r in p.events.values().flatten() {
        if let Event::ProbeReceived(pr) = &r.event {
            outcomes.insert((pr.kind.as_ref().to_owned(), pr.outcome.as_ref().to_owned()));
        }
    }
    for expected in [
        ("udp_echo", "ok"),
        ("udp_relay", "timeout"),
        ("udp_relay", "refused"),
    ] {
        assert!(
            outcomes.contains(&(expected.0.to_owned(), expected.1.to_owned())),
            "{expected:?} not in {outcomes:?}"
        );
    }
    let last = p.snapshots_of("stage-0").last().expect("snapshots");
    let probes = &last.body.probes.as_ref().expect("probes").probes;
    let relay = probes
        .iter()
        .find(|pr| pr.kind == ProbeKind::UdpRelay)
        .expect("udp_relay probe");
    assert_eq!(relay.last_outcome, ProbeOutcome::Timeout);
    assert_eq!(relay.successes, 0);
    assert!(relay.attempts > 0);
}

#[test]
fn kernel_drop_counters_rise_over_the_run() {
    let p = parsed();
    let network = |s: &Snapshot| s.body.host.as_ref().and_then(|h| h.network.clone());
    let mut rising = 0;
    for node in &p.manifest.nodes {
        let nets: Vec<_> = p
            .snapshots_of(&node.label)
            .iter()
            .filter_map(network)
            .collect();
        let (first, last) = (nets.first().expect("host"), nets.last().expect("host"));
        let drops = |n: &diagwire::v1::HostNetwork| {
            n.interfaces
                .iter()
                .filter_map(|i| i.counters.as_ref())
                .map(|c| c.rx_dropped)
                .sum::<u64>()
        };
        let rcvbuf = |n: &diagwire::v1::HostNetwork| {
            n.udp_kernel_stats
                .as_ref()
                .and_then(|u| u.rcvbuf_errors)
                .expect("udp_kernel_stats.rcvbuf_errors")
        };
        assert!(drops(last) >= drops(first), "{}", node.label);
        assert!(rcvbuf(last) >= rcvbuf(first), "{}", node.label);
        if drops(last) > drops(first) && rcvbuf(last) > rcvbuf(first) {
            rising += 1;
        }
    }
    assert!(rising >= 1);
}
