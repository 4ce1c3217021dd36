//! Every section of the summary on a bundle built for it, asserting the numbers.

mod common;

use common::{Run, T0, hex, id, identity, md};
use diagwire::bundle::read::Limits;
use diagwire::v1::*;
use diagwire::{Json, NodeId};
use diagwire_summary::model::Bucket;
use diagwire_summary::{render, summarize};
use serde_json::json;

#[test]
fn run_and_nodes_count_what_each_node_posted() {
    let mut r = Run::new();
    r.boot(1, "orchestrator", None).boot(2, "stage", Some(0));
    r.events(
        1,
        vec![(10, Event::from(DialStarted::new(id(2), 1, 5_000)))],
    );
    r.snapshot(2, "stage", 5_000, SnapshotBody::new(vec![]));
    r.w.finalize(&hex(1), &Finalize::new());
    r.w.collector_span(T0, T0 + 6_000);
    let s = r.summary();
    let out = md(&s);
    assert!(out.contains("- 2 node(s); finalize received: yes"), "{out}");
    assert!(out.contains("(6.0 s)"), "{out}");
    assert!(
        out.contains("| `orchestrator` | orchestrator | 01010101 | 0 | 1 | yes |"),
        "{out}"
    );
    assert!(
        out.contains("| `stage-0` | stage | 02020202 | 1 | 0 | no |"),
        "{out}"
    );
    let declared = format!(
        "written against contract {} by sim `tests` 0",
        diagwire::v1::CONTRACT_VERSION
    );
    assert!(out.contains(&declared), "{out}");
}

#[test]
fn hosts_print_each_present_field_and_name_a_missing_boot() {
    let mut r = Run::new();
    let mut full = identity(1, "stage", Some(0));
    full.vastai_contract_id = Some("28411905".into());
    full.host_ip_public = Some("203.0.113.41".into());
    full.datacenter_id = Some("dc-fra-2".into());
    full.host_country = Some("DE".into());
    full.container_id = Some("28411905".into());
    full.hostname = Some("c28411905".into());
    full.home_relay_url_at_boot = Some("https://relay.example/".into());
    full.iroh_version = Some("0.96.0".into());
    full.git_sha = Some("3f9c2a1".into());
    r.w.boot(&full);
    r.boot(2, "orchestrator", None);
    // A node that posted events but never a boot record.
    r.events(3, vec![(5, Event::from(DialStarted::new(id(1), 1, 5_000)))]);
    let out = md(&r.summary());
    assert!(out.contains("- `stage-0`: rental 28411905, ip 203.0.113.41, dc dc-fra-2, country DE, container 28411905, hostname c28411905, relay https://relay.example/, iroh 0.96.0, git 3f9c2a1"), "{out}");
    assert!(
        out.contains("- `node-03030303`: boot record absent"),
        "{out}"
    );
}

fn peer_view(peers: &[(u8, ConnType)], probe_ok: bool) -> SnapshotBody {
    let mut iroh = IrohState::new();
    for (n, c) in peers {
        let mut p = IrohPeer::new(hex(*n));
        p.conn_type = Some(c.clone());
        iroh.peers.push(p);
    }
    let mut body = SnapshotBody::new(vec![]);
    body.iroh = Some(iroh);
    let mut probes = ProbeState::new();
    let outcome = if probe_ok {
        ProbeOutcome::Ok
    } else {
        ProbeOutcome::Timeout
    };
    probes.probes.push(Probe::new(
        "collector_udp_echo",
        ProbeKind::UdpEcho,
        outcome,
        3,
        2,
    ));
    body.probes = Some(probes);
    body
}

#[test]
fn the_first_peer_to_go_dead_is_the_earliest_across_observers_with_both_sides_conn_type() {
    let mut r = Run::new();
    r.boot(1, "orchestrator", None)
        .boot(2, "stage", Some(0))
        .boot(3, "stage", Some(1));
    r.events(
        1,
        vec![(
            9_000,
            Event::from(SwimTransition::new(
                id(3),
                PeerState::Suspect,
                PeerState::Dead,
                "late",
            )),
        )],
    );
    r.events(
        2,
        vec![(
            7_000,
            Event::from(SwimTransition::new(
                id(3),
                PeerState::Suspect,
                PeerState::Dead,
                "suspicion timeout",
            )),
        )],
    );
    r.snapshot(2, "stage", 1_000, peer_view(&[(3, ConnType::Direct)], true));
    r.snapshot(2, "stage", 7_200, peer_view(&[(3, ConnType::Relay)], false));
    r.snapshot(3, "stage", 6_900, peer_view(&[(2, ConnType::Mixed)], true));
    let s = r.summary();
    let d = s.first_dead.as_ref().expect("a peer went dead");
    assert_eq!(
        (d.observer.as_str(), d.peer.as_str(), d.wall_ms),
        ("stage-0", "stage-1", T0 + 7_000)
    );
    assert_eq!(d.observer_conn.as_deref(), Some("Relay"));
    assert_eq!(d.peer_conn.as_deref(), Some("Mixed"));
    assert_eq!(d.observer_probe_ok, Some(false));
    assert!(
        md(&s).contains("`stage-0` saw `stage-1` go Dead at 1779733877000 (suspicion timeout)")
    );
}

#[test]
fn a_bundle_without_a_relay_node_prints_the_absence_line() {
    let mut r = Run::new();
    r.boot(1, "orchestrator", None);
    let out = md(&r.summary());
    assert!(
        out.contains("## Relay sessions\n\nNot observed: no node of the run has the role `relay`"),
        "{out}"
    );
}

#[test]
fn relay_sessions_join_the_relays_close_with_the_nodes_last_failure() {
    let mut r = Run::new();
    r.boot(9, "relay", None)
        .boot(1, "stage", Some(0))
        .boot(2, "stage", Some(1));
    let mut report = RelayServer::new(1, 3, 2, 9_000, 8_000);
    report.closes_by_reason = vec![("killed".into(), 1), ("idle".into(), 1)];
    let mut body = SnapshotBody::new(vec![]);
    body.relay_server = Some(report);
    r.snapshot(9, "relay", 20_000, body);
    r.events(
        9,
        vec![
            (
                10_000,
                Event::from(RelaySessionClosed::new(
                    hex(1),
                    T0,
                    T0 + 10_000,
                    10_000,
                    RelayCloseInitiator::Relay,
                    "idle",
                    10,
                    20,
                )),
            ),
            (
                15_000,
                Event::from(RelaySessionClosed::new(
                    hex(1),
                    T0 + 11_000,
                    T0 + 15_000,
                    4_000,
                    RelayCloseInitiator::Relay,
                    "killed",
                    300,
                    400,
                )),
            ),
        ],
    );
    let mut iroh = IrohState::new();
    let mut cache = ConnectionCache::new(hex(1), 3);
    cache.last_failure_at_ms = Some(T0 + 15_100);
    cache.last_failure_reason = Some("connection lost".into());
    iroh.connection_cache.push(cache);
    let mut body = SnapshotBody::new(vec![]);
    body.iroh = Some(iroh);
    r.snapshot(2, "stage", 16_000, body);
    let s = r.summary();
    assert_eq!(s.relay_closes.len(), 1, "one row per (relay, peer)");
    let c = &s.relay_closes[0];
    assert_eq!(
        (c.relay.as_str(), c.peer.as_str(), c.reason.as_str()),
        ("relay", "stage-0", "killed")
    );
    assert_eq!((c.duration_ms, c.bytes_in, c.bytes_out), (4_000, 300, 400));
    assert_eq!(
        c.node_last_failure_reason.as_deref(),
        Some("connection lost")
    );
    let out = md(&s);
    assert!(out.contains("`relay`: 1 active, 3 opened, 2 closed, 9000 bytes in, 8000 bytes out; closes by reason: killed 1, idle 1."), "{out}");
    assert!(
        out.contains(
            "| `relay` | `stage-0` | relay | killed | 4000 | 300 | 400 | connection lost |"
        ),
        "{out}"
    );
    assert!(!s.absent.iter().any(|a| a.section == "relay sessions"));
}

#[test]
fn relay_closes_name_the_canonical_side_whatever_spelling_the_relay_wrote() {
    let mut r = Run::new();
    r.boot(9, "relay", None)
        .boot(1, "stage", Some(0))
        .boot(2, "stage", Some(1));
    let close = |peer: u8, initiator: RelayCloseInitiator, reason: &str| {
        Event::from(RelaySessionClosed::new(
            hex(peer),
            T0,
            T0 + 10_000,
            10_000,
            initiator,
            reason,
            10,
            20,
        ))
    };
    r.events(
        9,
        vec![
            (
                10_000,
                close(1, RelayCloseInitiator::Remote, "client_closed"),
            ),
            (
                11_000,
                close(2, RelayCloseInitiator::IdleTimeout, "no traffic"),
            ),
        ],
    );
    let s = r.summary();
    let sides: Vec<(&str, &str)> = s
        .relay_closes
        .iter()
        .map(|c| (c.peer.as_str(), c.initiator.as_str()))
        .collect();
    assert_eq!(sides, [("stage-0", "peer"), ("stage-1", "relay")]);
}

#[test]
fn a_relay_that_cannot_count_its_sessions_is_not_reported_as_idle() {
    let mut r = Run::new();
    r.boot(9, "relay", None).boot(1, "stage", Some(0));
    let mut report = RelayServer::new(0, 0, 0, 0, 0);
    report.counters_source = Some(ValueSource::Unavailable);
    let mut body = SnapshotBody::new(vec![]);
    body.relay_server = Some(report);
    r.snapshot(9, "relay", 20_000, body);
    let s = r.summary();
    assert!(!s.relay_totals[0].counted);
    let out = md(&s);
    assert!(
        out.contains("`relay`: could not count its sessions (its session counters are placeholders, not an idle relay); closes by reason: none."),
        "{out}"
    );
    assert!(!out.contains("0 active"), "{out}");
    let j = render::json(&s);
    assert_eq!(j["relay_totals"][0]["counted"], false);
    assert!(j["relay_totals"][0]["active"].is_null());
}

#[test]
fn probe_outcomes_come_from_each_nodes_latest_probe_block() {
    let mut r = Run::new();
    r.boot(1, "stage", Some(0));
    r.snapshot(1, "stage", 1_000, peer_view(&[], true));
    r.snapshot(1, "stage", 2_000, peer_view(&[], false));
    let out = md(&r.summary());
    assert!(
        out.contains("| `stage-0` | udp_echo | collector_udp_echo | timeout | - | 2/3 |"),
        "{out}"
    );
    assert!(!out.contains("| ok |"), "{out}");
}

#[test]
fn probe_rtt_counts_every_probe_and_takes_nearest_rank_percentiles() {
    let mut r = Run::new();
    r.boot(1, "stage", Some(0)).boot(2, "stage", Some(1));
    let mut events = Vec::new();
    // Five acked with RTTs 10..50, one timed out, one pending; all sent in one 5-second bucket but one.
    for (i, rtt) in [10u64, 20, 30, 40, 50].iter().enumerate() {
        let t = 1_000 * i as u64;
        events.push((
            t,
            Event::from(SwimProbeSent::new(id(2), i as u64, SwimProbeKind::Direct)),
        ));
        events.push((
            t + rtt,
            Event::from(SwimProbeAcked::new(id(2), i as u64, SwimProbeKind::Direct)),
        ));
    }
    events.push((
        6_000,
        Event::from(SwimProbeSent::new(id(2), 9, SwimProbeKind::Direct)),
    ));
    let mut timeout = SwimProbeTimedOut::new(id(2), 9, SwimProbeKind::Direct, 3);
    timeout.timeout_budget_ms = Some(3_000);
    events.push((9_000, Event::from(timeout)));
    events.push((
        9_500,
        Event::from(SwimProbeSent::new(id(2), 10, SwimProbeKind::Direct)),
    ));
    r.events(1, events);
    let s = r.summary();
    let p = &s.rtt[&("stage-0".to_owned(), "stage-1".to_owned())];
    assert_eq!((p.probes, p.acked, p.timed_out), (7, 5, 1));
    assert_eq!(
        (
            p.rtts.percentile(50),
            p.rtts.percentile(95),
            p.rtts.percentile(99)
        ),
        (Some(30), Some(50), Some(50))
    );
    let out = md(&s);
    assert!(
        out.contains("| `stage-0` | `stage-1` | 7 | 5 | 1 | 1 | 30 | 50 | 50 | 3000 ms |"),
        "{out}"
    );
    let bucket0 = (T0 / 5_000) * 5;
    assert_eq!(
        s.rtt_buckets[&("stage-0".to_owned(), "stage-1".to_owned())][&bucket0].probes,
        5
    );
}

#[test]
fn a_probe_acknowledged_after_its_timeout_is_counted_once_as_timed_out() {
    let mut r = Run::new();
    r.boot(1, "stage", Some(0)).boot(2, "stage", Some(1));
    let sent = |seq| Event::from(SwimProbeSent::new(id(2), seq, SwimProbeKind::Direct));
    let acked = |seq| Event::from(SwimProbeAcked::new(id(2), seq, SwimProbeKind::Direct));
    let timed_out = |seq| Event::from(SwimProbeTimedOut::new(id(2), seq, SwimProbeKind::Direct, 3));
    r.events(
        1,
        vec![
            (0, sent(1)),
            (40, acked(1)),
            (1_000, sent(2)),
            (4_000, timed_out(2)),
            (4_200, acked(2)),
        ],
    );
    let s = r.summary();
    let p = &s.rtt[&("stage-0".to_owned(), "stage-1".to_owned())];
    assert_eq!((p.probes, p.acked, p.timed_out), (2, 1, 1));
    let bucket0 = (T0 / 5_000) * 5;
    let b = &s.rtt_buckets[&("stage-0".to_owned(), "stage-1".to_owned())][&bucket0];
    assert_eq!((b.probes, b.timed_out), (2, 1));
}

fn host(udp_no_ports: u64, rx_dropped: u64) -> SnapshotBody {
    let mut net = HostNetwork::new();
    let mut udp = UdpKernelStats::new();
    udp.no_ports = Some(udp_no_ports);
    udp.in_errors = Some(4);
    net.udp_kernel_stats = Some(udp);
    let mut eth = NetInterface::new("eth0", true);
    eth.counters = Some(InterfaceCounters::new(1, 1, 0, rx_dropped, 1, 1, 0, 0));
    net.interfaces.push(eth);
    let mut h = HostState::new();
    h.network = Some(net);
    let mut body = SnapshotBody::new(vec![]);
    body.host = Some(h);
    body
}

#[test]
fn kernel_drops_list_only_counters_that_moved_between_first_and_last_host_snapshot() {
    let mut r = Run::new();
    r.boot(1, "stage", Some(0)).boot(2, "stage", Some(1));
    r.snapshot(1, "stage", 1_000, host(5, 0));
    r.snapshot(1, "stage", 5_000, host(9, 0));
    r.snapshot(1, "stage", 9_000, host(12, 40));
    r.snapshot(2, "stage", 1_000, host(1, 1));
    r.snapshot(2, "stage", 9_000, host(1, 1));
    let s = r.summary();
    assert_eq!(
        s.kernel_drops,
        vec![
            ("stage-0".to_owned(), "eth0.rx_dropped".to_owned(), 40),
            ("stage-0".to_owned(), "udp.no_ports".to_owned(), 7),
        ]
    );
}

#[test]
fn gossip_receipts_are_counted_by_node_and_kind_and_a_missing_kind_is_named() {
    let mut r = Run::new();
    r.boot(1, "stage", Some(0)).boot(2, "stage", Some(1));
    let swim = || GossipPayloadKind::SwimPiggyback;
    let names = || GossipPayloadKind::Other("name_registry".into());
    r.events(
        1,
        vec![
            (1, Event::from(GossipReceived::new(id(2), swim(), 100, 2))),
            (2, Event::from(GossipReceived::new(id(2), swim(), 50, 1))),
            (3, Event::from(GossipReceived::new(id(2), names(), 70, 3))),
        ],
    );
    r.events(
        2,
        vec![(4, Event::from(GossipReceived::new(id(1), swim(), 10, 1)))],
    );
    let out = md(&r.summary());
    assert!(
        out.contains("| `stage-0` | swim_piggyback | 2 | 150 | 3 |"),
        "{out}"
    );
    assert!(
        out.contains("| `stage-0` | name_registry | 1 | 70 | 3 |"),
        "{out}"
    );
    assert!(
        out.contains("- `stage-1` received no `name_registry` gossip from anyone."),
        "{out}"
    );
}

#[test]
fn inference_responses_list_each_send_with_its_outcome() {
    let mut r = Run::new();
    r.boot(1, "orchestrator", None).boot(2, "stage", Some(0));
    r.events(
        2,
        vec![
            (
                100,
                Event::from(InferenceResponseSent::new(
                    id(1),
                    "req-1",
                    4_000,
                    InferenceSendOutcome::Success,
                )),
            ),
            (
                200,
                Event::from(InferenceResponseSent::new(
                    id(1),
                    "req-2",
                    3_900,
                    InferenceSendOutcome::Timeout,
                )),
            ),
        ],
    );
    let out = md(&r.summary());
    assert!(
        out.contains("| `stage-0` | `orchestrator` | req-2 | 3900 | timeout | 1779733870200 |"),
        "{out}"
    );
}

#[test]
fn the_dial_table_accounts_for_every_dial_started_and_shows_the_drift() {
    let mut r = Run::new();
    r.boot(1, "orchestrator", None)
        .boot(2, "stage", Some(0))
        .boot(3, "stage", Some(1));
    r.events(
        2,
        vec![
            (1, Event::from(DialStarted::new(id(1), 1, 5_000))),
            (
                5_001,
                Event::from(DialOutcome::new(id(1), 1, DialResult::Timeout, 5_000)),
            ),
            (5_002, Event::from(DialStarted::new(id(1), 2, 5_000))),
            (5_003, Event::from(DialStarted::new(id(3), 1, 5_000))),
            (
                5_050,
                Event::from(DialOutcome::new(id(3), 1, DialResult::Success, 47)),
            ),
        ],
    );
    r.events(
        3,
        vec![
            (7, Event::from(DialStarted::new(id(1), 1, 5_000))),
            (
                90,
                Event::from(DialOutcome::new(
                    id(1),
                    1,
                    DialResult::Error("refused by peer".into()),
                    83,
                )),
            ),
        ],
    );
    let s = r.summary();
    let started: u64 = s.dials.values().map(|d| d.started).sum();
    assert_eq!(started, 4, "every DialStarted is in the table");
    let o = &s.dials["orchestrator"];
    assert_eq!((o.started, o.succeeded, o.failed), (3, 0, 2));
    let out = md(&s);
    assert!(
        out.contains("| `orchestrator` | 3 | 0 | 2 | 1 | Timeout | 1779733875001 |"),
        "{out}"
    );
    assert!(
        out.contains("| `stage-1` | 1 | 1 | 0 | 0 | Success | 1779733875050 |"),
        "{out}"
    );
    assert!(out.contains("| **total** | 4 | 1 | 2 | 1 | | |"), "{out}");
}

#[test]
fn event_totals_count_each_type_and_each_custom_kind() {
    let mut r = Run::new();
    r.boot(1, "stage", Some(0));
    r.events(
        1,
        vec![
            (
                1,
                Event::from(CustomEvent::new(CustomPayload::WorkerReady(Json(
                    json!({}),
                )))),
            ),
            (
                2,
                Event::from(CustomEvent::new(CustomPayload::WorkerReady(Json(
                    json!({}),
                )))),
            ),
            (3, Event::from(DialStarted::new(id(2), 1, 1))),
        ],
    );
    let s = r.summary();
    assert_eq!(s.event_totals["Custom(worker_ready)"], 2);
    assert_eq!(s.event_totals["DialStarted"], 1);
}

fn sub(label: &str, pid: u32, rss: u64, cpu: u64) -> SnapshotBody {
    let mut p = Subprocess::new(label, pid, SubprocessStatus::Running);
    p.rss_bytes = Some(rss);
    p.cpu_ms = Some(cpu);
    let mut state = SubprocessState::new();
    state.subprocesses.push(p);
    let mut body = SnapshotBody::new(vec![]);
    body.subprocess = Some(state);
    body
}

#[test]
fn each_stage_worker_lands_in_its_bucket() {
    let mut r = Run::new();
    r.boot(1, "stage", Some(0))
        .boot(2, "stage", Some(1))
        .boot(3, "stage", Some(2))
        .boot(4, "stage", Some(3));
    // stage-0 never spawned anything.
    // stage-1: spawned and exited with a signal.
    let mut exit = SubprocessExited::new("worker", 41, "python worker.py");
    exit.exit_signal = Some(9);
    exit.uptime_ms = Some(1_200);
    r.events(
        2,
        vec![
            (
                1,
                Event::from(SubprocessSpawned::new("worker", 41, "python worker.py")),
            ),
            (1_201, Event::from(exit)),
        ],
    );
    // stage-2: spawned, never ready, RSS growing.
    r.events(
        3,
        vec![(
            1,
            Event::from(SubprocessSpawned::new("worker", 42, "python worker.py")),
        )],
    );
    r.snapshot(3, "stage", 5_000, sub("worker", 42, 1_000, 10));
    r.snapshot(3, "stage", 10_000, sub("worker", 42, 9_000, 4_000));
    // stage-3: spawned and ready.
    r.events(
        4,
        vec![
            (
                1,
                Event::from(SubprocessSpawned::new("worker", 43, "python worker.py")),
            ),
            (
                900,
                Event::from(CustomEvent::new(CustomPayload::WorkerReady(Json(
                    json!({}),
                )))),
            ),
        ],
    );
    let s = r.summary();
    let bucket = |node: &str| {
        s.subprocesses
            .iter()
            .find(|r| r.node == node)
            .map(|r| r.bucket)
    };
    assert_eq!(bucket("stage-0"), Some(Bucket::NeverSpawned));
    assert_eq!(bucket("stage-1"), Some(Bucket::Exited));
    assert_eq!(bucket("stage-2"), Some(Bucket::Stuck));
    assert_eq!(bucket("stage-3"), Some(Bucket::Healthy));
    let out = md(&s);
    assert!(out.contains("exited with signal 9 after 1200 ms"), "{out}");
    assert!(
        out.contains("RSS bytes 1000 → 9000 CPU ms 10 → 4000"),
        "{out}"
    );
}

#[test]
fn a_bundle_with_unknown_event_types_and_fields_completes_and_counts_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut r = Run::new();
    r.boot(1, "stage", Some(0));
    let done = r.w.finish();
    let mut contents = done.contents;
    let node = NodeId::from([1; 32]);
    let ids: Vec<u8> = node.0.to_vec();
    let events = json!([
        {"node_id": ids, "monotonic_seq": 1, "wall_ms": T0, "type": "FutureThing", "detail": 1},
        {"node_id": ids, "monotonic_seq": 2, "wall_ms": T0 + 1, "type": "FutureThing"},
        {"node_id": ids, "monotonic_seq": 3, "wall_ms": T0 + 2, "type": "DialStarted",
         "peer": ids, "attempt": 1, "timeout_ms": 5, "future_key": true},
    ]);
    contents.insert_json("stage-0/events/events-000001.json", &events);
    let path = diagwire::bundle::output::write_dir(&contents, dir.path()).expect("write");
    let s = summarize(&path, Limits::default()).expect("a summary");
    assert_eq!(s.unknown_event_types["FutureThing"], 2);
    assert_eq!(s.unknown_fields["event /future_key"], 1);
    assert_eq!(s.event_totals["DialStarted"], 1);
    let out = md(&s);
    assert!(out.contains("- event type `FutureThing`: 2"), "{out}");
}

#[test]
fn validation_counts_files_that_do_not_read_and_locates_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut r = Run::new();
    r.boot(1, "stage", Some(0));
    let mut contents = r.w.finish().contents;
    contents.files.insert(
        "stage-0/snapshots/snapshot-000001.json".into(),
        b"{\"not\": \"a snapshot\"}".to_vec(),
    );
    let path = diagwire::bundle::output::write_dir(&contents, dir.path()).expect("write");
    let s = summarize(&path, Limits::default()).expect("a summary");
    assert_eq!(s.problem_counts.get("parse"), Some(&1));
    assert!(
        s.problems[0]
            .location
            .file
            .ends_with("stage-0/snapshots/snapshot-000001.json")
    );
    assert!(md(&s).contains("- parse: 1"));
}

#[test]
fn terminal_control_characters_from_the_bundle_are_escaped() {
    let mut r = Run::new();
    let mut i = identity(1, "stage", Some(0));
    i.hostname = Some("evil\n1 path(s), 0 problem(s)\u{1b}[2J".into());
    r.w.boot(&i);
    let out = md(&r.summary());
    assert!(!out.contains('\u{1b}'), "{out:?}");
    assert!(
        out.contains("hostname evil\\u{a}1 path(s), 0 problem(s)\\u{1b}[2J"),
        "{out}"
    );
}

#[test]
fn the_json_shape_has_every_documented_key_with_labels_as_keys() {
    let mut r = Run::new();
    r.boot(1, "orchestrator", None).boot(2, "stage", Some(0));
    r.events(2, vec![(1, Event::from(DialStarted::new(id(1), 1, 5_000)))]);
    let v = render::json(&r.summary());
    for key in [
        "run",
        "hosts",
        "first_dead",
        "relay_sessions",
        "dials",
        "subprocesses",
        "gossip",
        "kernel_drops",
        "probe_rtt",
        "inference_responses",
        "event_totals",
        "absent",
        "validation",
    ] {
        assert!(v.get(key).is_some(), "no `{key}`: {v}");
    }
    for key in ["run_id", "nodes", "finalize_received", "start_ms", "end_ms"] {
        assert!(v["run"].get(key).is_some(), "no `run.{key}`");
    }
    for key in [
        "node",
        "rental",
        "ip",
        "datacenter",
        "country",
        "container",
        "hostname",
        "relay",
        "iroh_version",
        "git_sha",
    ] {
        assert!(v["hosts"][0].get(key).is_some(), "no `hosts[].{key}`");
    }
    assert!(v["hosts"][0]["rental"].is_null());
    assert_eq!(v["dials"][0]["peer"], "orchestrator");
    for key in [
        "peer",
        "started",
        "succeeded",
        "failed",
        "in_flight",
        "last_outcome",
        "last_outcome_ms",
    ] {
        assert!(v["dials"][0].get(key).is_some(), "no `dials[].{key}`");
    }
    assert_eq!(v["subprocesses"][0]["bucket"], "never_spawned");
    assert!(v["first_dead"].is_null());
}

#[test]
fn the_html_page_is_self_contained_deterministic_and_scriptless() {
    let mk = || {
        let mut r = Run::new();
        r.boot(1, "orchestrator", None).boot(2, "stage", Some(0));
        r.events(
            1,
            vec![
                (
                    1_000,
                    Event::from(SwimTransition::new(
                        id(2),
                        PeerState::Alive,
                        PeerState::Dead,
                        "timeout",
                    )),
                ),
                (
                    2_000,
                    Event::from(DialOutcome::new(id(2), 1, DialResult::Timeout, 5_000)),
                ),
            ],
        );
        r.summary()
    };
    let (a, b) = (
        diagwire_summary::html::page(&mk()),
        diagwire_summary::html::page(&mk()),
    );
    assert_eq!(a, b);
    assert!(!a.contains("<script"));
    assert!(
        !a.contains("http://")
            || a.matches("http://").count()
                == a.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
    for id in [
        "timeline",
        "dial-outcomes",
        "rtt-distribution",
        "kernel-drops",
        "per-peer-dials",
    ] {
        assert!(a.contains(&format!("id=\"{id}\"")), "no section {id}");
    }
}

#[test]
fn the_html_page_stays_bounded_whatever_the_number_of_points() {
    let mut r = Run::new();
    r.boot(1, "orchestrator", None).boot(2, "stage", Some(0));
    let events: Vec<(u64, Event)> = (0..20_000u64)
        .map(|i| {
            (
                i,
                Event::from(DialOutcome::new(
                    id(2),
                    1,
                    if i % 3 == 0 {
                        DialResult::Success
                    } else {
                        DialResult::Timeout
                    },
                    1,
                )),
            )
        })
        .collect();
    r.events(1, events);
    let page = diagwire_summary::html::page(&r.summary());
    assert!(page.len() < 3_000_000, "{} bytes", page.len());
    assert!(page.contains("Showing the first 4000 of 20000 dial outcomes."));
}
