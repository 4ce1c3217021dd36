//! The sections and columns swactor's newest post-processor renders: bandwidth by node, direction
//! and kind and by peer, the peer side's probe at the first Dead, the node whose connection cache
//! gave a relay session's last failure reason, acked/pending/p95 per RTT bucket — and absent values
//! said in words. One test per behaviour; each runs its cases through the check helpers of
//! `common`.

mod common;

use std::collections::BTreeMap;

use common::{Run, T0, check_json, check_md, check_no_question_marks, hex, id, identity, md, read};
use diagwire::v1::*;
use diagwire_summary::model::{Direction, MAX_ROLLUP_KEYS, OTHER_KINDS, OTHER_PEERS, Traffic};
use diagwire_summary::render;
use diagwire_testkit::scenario::{Params, generate, label_of};
use serde_json::json;

/// Messages and bytes per (node, direction, kind) and per (node, peer) as the run's own records
/// hold them: what the summary must report.
type Expected = (
    BTreeMap<(String, Direction, String), Traffic>,
    BTreeMap<(String, String), (Traffic, Traffic)>,
);

fn expected_bandwidth(run: &diagwire_testkit::scenario::Run) -> Expected {
    let labels: BTreeMap<String, String> = run
        .nodes
        .iter()
        .map(|n| (n.identity.node_id_hex.0.clone(), label_of(&n.identity)))
        .collect();
    let (mut by_kind, mut by_peer) = (BTreeMap::new(), BTreeMap::new());
    for n in &run.nodes {
        let node = label_of(&n.identity);
        for e in &n.events {
            let (dir, peer, kind, size) = match &e.event {
                Event::MessageSent(m) => (Direction::Sent, &m.peer, &m.kind, m.size),
                Event::MessageReceived(m) => (Direction::Received, &m.peer, &m.kind, m.size),
                _ => continue,
            };
            let t: &mut Traffic = by_kind
                .entry((node.clone(), dir, kind.clone()))
                .or_default();
            t.add(u64::from(size));
            let peer = labels[&peer.to_hex().0].clone();
            let p: &mut (Traffic, Traffic) = by_peer.entry((node.clone(), peer)).or_default();
            match dir {
                Direction::Sent => p.0.add(u64::from(size)),
                Direction::Received => p.1.add(u64::from(size)),
            }
        }
    }
    (by_kind, by_peer)
}

#[test]
fn bandwidth_is_rolled_up_by_node_direction_and_kind() {
    for seed in [1, 7] {
        let case = format!("scenario seed {seed}");
        let run = generate(&Params::small(seed));
        let (by_kind, by_peer) = expected_bandwidth(&run);
        assert!(!by_kind.is_empty(), "{case}: the scenario sends messages");
        let dir = tempfile::tempdir().expect("temp dir");
        let s = read(&run.write_dir(dir.path()).expect("write"));
        assert_eq!(s.bandwidth, by_kind, "{case}");
        let got: BTreeMap<(String, String), (Traffic, Traffic)> = s
            .bandwidth_peers
            .iter()
            .map(|(k, v)| (k.clone(), (v.sent, v.received)))
            .collect();
        assert_eq!(got, by_peer, "{case}");
        let ((node, d, kind), t) = by_kind.iter().next().expect("a row");
        check_md(
            &case,
            &s,
            &[
                "## Bandwidth (by node, by kind and peer)",
                &format!(
                    "| `{node}` | {} | {kind} | {} | {} |",
                    d.as_str(),
                    t.count,
                    t.bytes
                ),
            ],
        );
        check_json(
            &case,
            &s,
            "/bandwidth/by_kind/0",
            json!({"node": node, "direction": d.as_str(), "kind": kind,
                   "count": t.count, "bytes": t.bytes}),
        );
        let ((node, peer), (sent, received)) = by_peer.iter().next().expect("a row");
        check_json(
            &case,
            &s,
            "/bandwidth/by_peer/0",
            json!({"node": node, "peer": peer, "sent": sent.count, "sent_bytes": sent.bytes,
                   "received": received.count, "received_bytes": received.bytes}),
        );
        let page = diagwire_summary::html::page(&s);
        assert!(page.contains("id=\"bandwidth-plot\""), "{case}");
        assert!(page.contains(" bytes sent</title>"), "{case}");
    }
}

#[test]
fn bandwidth_says_when_no_instrumented_transport_carried_traffic() {
    let mut run = generate(&Params::small(3));
    for n in &mut run.nodes {
        n.events
            .retain(|e| !matches!(e.event, Event::MessageSent(_) | Event::MessageReceived(_)));
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let s = read(&run.write_dir(dir.path()).expect("write"));
    let case = "a run without messages";
    check_md(
        case,
        &s,
        &[
            "## Bandwidth (by node, by kind and peer)\n\nNo instrumented transport carried traffic: the bundle has no `MessageSent` or `MessageReceived` event.\n",
            "- bandwidth: no `MessageSent`/`MessageReceived` events: no instrumented transport carried traffic",
        ],
    );
    check_json(
        case,
        &s,
        "/bandwidth",
        json!({"by_kind": [], "by_peer": []}),
    );
    let page = diagwire_summary::html::page(&s);
    assert!(
        page.contains("<section id=\"bandwidth-plot\"><h2>Bytes per node by direction</h2><p>No instrumented transport carried traffic"),
        "{case}"
    );
}

#[test]
fn bandwidth_stays_bounded_whatever_the_number_of_kinds_and_peers() {
    let mut r = Run::new();
    r.boot(1, "stage", Some(0)).boot(2, "stage", Some(1));
    let n = MAX_ROLLUP_KEYS as u64 + 500;
    // Every message of a kind and to a peer of its own (peers unknown to the bundle are named by
    // their first four bytes, so those differ).
    let peer = |i: u64| {
        let mut bytes = [7u8; 32];
        bytes[..4].copy_from_slice(&(i as u32).to_be_bytes());
        diagwire::NodeId::from(bytes)
    };
    let events: Vec<(u64, Event)> = (0..n)
        .map(|i| {
            (
                i,
                Event::from(MessageSent::new(peer(i), format!("k{i}"), 10)),
            )
        })
        .collect();
    r.events(1, events);
    let s = r.summary();
    assert_eq!(s.bandwidth.len(), MAX_ROLLUP_KEYS + 1);
    assert_eq!(s.bandwidth_peers.len(), MAX_ROLLUP_KEYS + 1);
    let total: u64 = s.bandwidth.values().map(|t| t.count).sum();
    assert_eq!(total, n, "every message is counted by kind");
    let total: u64 = s.bandwidth_peers.values().map(|t| t.sent.count).sum();
    assert_eq!(total, n, "every message is counted by peer");
    let other = &s.bandwidth[&(
        "stage-0".to_owned(),
        Direction::Sent,
        OTHER_KINDS.to_owned(),
    )];
    assert_eq!((other.count, other.bytes), (500, 5_000));
    let other = &s.bandwidth_peers[&("stage-0".to_owned(), OTHER_PEERS.to_owned())];
    assert_eq!((other.sent.count, other.sent.bytes), (500, 5_000));
}

fn probes(ok: bool) -> ProbeState {
    let mut probes = ProbeState::new();
    let outcome = if ok {
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
    probes
}

/// The peer's side at the transition: a snapshot with an ok probe, with only failed ones, without
/// a probe block, or no snapshot at all.
enum PeerSide {
    Probe(bool),
    NoProbeBlock,
    NoSnapshot,
}

#[test]
fn first_dead_shows_whether_the_peer_side_had_an_ok_probe() {
    let cases = [
        ("peer ok", PeerSide::Probe(true), Some(true), "yes"),
        ("peer failing", PeerSide::Probe(false), Some(false), "no"),
        (
            "peer without probes",
            PeerSide::NoProbeBlock,
            None,
            "not known: not reported (`stage-1`'s nearest snapshot has no probe block: no probe scheduler)",
        ),
        (
            "peer without snapshots",
            PeerSide::NoSnapshot,
            None,
            "not known: not reported (`stage-1` posted no snapshot)",
        ),
    ];
    for (case, side, want, words) in cases {
        let mut r = Run::new();
        r.boot(1, "stage", Some(0)).boot(2, "stage", Some(1));
        r.events(
            1,
            vec![(
                7_000,
                Event::from(SwimTransition::new(
                    id(2),
                    PeerState::Suspect,
                    PeerState::Dead,
                    "suspicion timeout",
                )),
            )],
        );
        let mut observer = SnapshotBody::new(vec![]);
        observer.probes = Some(probes(false));
        r.snapshot(1, "stage", 7_100, observer);
        match side {
            PeerSide::Probe(ok) => {
                let mut body = SnapshotBody::new(vec![]);
                body.probes = Some(probes(ok));
                r.snapshot(2, "stage", 6_900, body);
            }
            PeerSide::NoProbeBlock => {
                r.snapshot(2, "stage", 6_900, SnapshotBody::new(vec![]));
            }
            PeerSide::NoSnapshot => {}
        }
        let s = r.summary();
        let d = s.first_dead.as_ref().expect("a peer went dead");
        assert_eq!(d.peer_probe_ok, want, "{case}");
        assert_eq!(d.observer_probe_ok, Some(false), "{case}");
        check_md(
            case,
            &s,
            &[&format!(
                "A probe was ok then on `stage-0`'s side: no; on the peer `stage-1`'s side: {words}."
            )],
        );
        check_json(case, &s, "/first_dead/peer_probe_ok", json!(want));
        check_no_question_marks(case, &s);
    }
}

#[test]
fn relay_sessions_name_the_node_whose_cache_gave_the_last_failure_reason() {
    // (case, stage-1's failure time, orchestrator's failure time, expected reason and node)
    let cases = [
        (
            "the stage failed last",
            15_200,
            15_100,
            "stage lost it",
            "stage-1",
        ),
        (
            "the orchestrator failed last",
            15_100,
            15_300,
            "orchestrator lost it",
            "orchestrator",
        ),
    ];
    for (case, stage_at, orch_at, reason, from) in cases {
        let mut r = Run::new();
        r.boot(9, "relay", None)
            .boot(1, "stage", Some(0))
            .boot(2, "stage", Some(1))
            .boot(3, "orchestrator", None);
        r.events(
            9,
            vec![(
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
            )],
        );
        for (n, role, at, why) in [
            (2, "stage", stage_at, "stage lost it"),
            (3, "orchestrator", orch_at, "orchestrator lost it"),
        ] {
            let mut iroh = IrohState::new();
            let mut cache = ConnectionCache::new(hex(1), 3);
            cache.last_failure_at_ms = Some(T0 + at);
            cache.last_failure_reason = Some(why.into());
            iroh.connection_cache.push(cache);
            let mut body = SnapshotBody::new(vec![]);
            body.iroh = Some(iroh);
            r.snapshot(n, role, 16_000, body);
        }
        let s = r.summary();
        let c = &s.relay_closes[0];
        assert_eq!(
            (
                c.node_last_failure_reason.as_deref(),
                c.node_last_failure_from.as_deref()
            ),
            (Some(reason), Some(from)),
            "{case}"
        );
        check_md(
            case,
            &s,
            &[
                "| node-side last failure | from the cache of |",
                &format!(
                    "| `relay` | `stage-0` | relay | killed | 4000 | 300 | 400 | {reason} | `{from}` |"
                ),
            ],
        );
        check_json(
            case,
            &s,
            "/relay_sessions/0/node_last_failure_from",
            json!(from),
        );
    }
}

#[test]
fn rtt_buckets_show_acked_pending_and_p95() {
    let mut r = Run::new();
    r.boot(1, "stage", Some(0)).boot(2, "stage", Some(1));
    let sent = |seq| Event::from(SwimProbeSent::new(id(2), seq, SwimProbeKind::Direct));
    let acked = |seq| Event::from(SwimProbeAcked::new(id(2), seq, SwimProbeKind::Direct));
    let timed_out = |seq| Event::from(SwimProbeTimedOut::new(id(2), seq, SwimProbeKind::Direct, 3));
    let mut events = Vec::new();
    // First bucket: RTTs 10, 20, …, 200 (p95 by nearest rank is the 19th: 190), one pending.
    for i in 0..20u64 {
        events.push((i * 200, sent(i)));
        events.push((i * 200 + (i + 1) * 10, acked(i)));
    }
    events.push((4_500, sent(100)));
    // Second bucket: one acked at 50 ms, one timed out, two pending.
    events.push((5_000, sent(200)));
    events.push((5_050, acked(200)));
    events.push((5_100, sent(201)));
    events.push((8_000, timed_out(201)));
    events.push((6_000, sent(202)));
    events.push((6_100, sent(203)));
    r.events(1, events);
    let s = r.summary();
    let b0 = T0 / 1_000;
    // (bucket, probes, acked, timed out, pending, median, p95, p99)
    let cases = [
        (b0, 21, 20, 0, 1, "100", "190", "200"),
        (b0 + 5, 4, 1, 1, 2, "50", "50", "50"),
    ];
    for (i, (bucket, probes, acked, timed_out, pending, p50, p95, p99)) in
        cases.into_iter().enumerate()
    {
        let case = format!("bucket {bucket}");
        let x = &s.rtt_buckets[&("stage-0".to_owned(), "stage-1".to_owned())][&bucket];
        assert_eq!(
            (x.probes, x.acked, x.timed_out, x.pending),
            (probes, acked, timed_out, pending),
            "{case}"
        );
        check_md(
            &case,
            &s,
            &[
                "| observer | target | bucket | probes | acked | timed out | pending | median ms | p95 ms | p99 ms |",
                &format!(
                    "| `stage-0` | `stage-1` | {bucket} | {probes} | {acked} | {timed_out} | {pending} | {p50} | {p95} | {p99} |"
                ),
            ],
        );
        let row = render::json(&s)["probe_rtt_buckets"][i].clone();
        assert_eq!(
            (
                &row["acked"],
                &row["pending"],
                &row["p95_ms"],
                &row["bucket_s"]
            ),
            (
                &json!(acked),
                &json!(pending),
                &json!(p95.parse::<u64>().unwrap()),
                &json!(bucket)
            ),
            "{case}"
        );
    }
}

/// One way a value can be absent, and how the summary must say it.
/// The contract versions a manifest declares.
#[derive(Clone, Copy, PartialEq)]
enum Declared {
    /// The run's and the node's, with the writer (a current writer's).
    Run,
    /// The node's only: a run of writers of several generations, one of which declares none.
    Node,
    /// None, and no writer (a legacy writer's).
    Neither,
}

struct AbsentCase {
    name: &'static str,
    /// Changes the boot record of the node under test (node 1, role `stage`).
    boot: fn(&mut Identity),
    /// Which contract versions the manifest declares.
    declared: Declared,
    /// Fragments the Markdown must hold.
    md: &'static [&'static str],
    /// (JSON pointer, value) pairs the JSON must hold.
    json: &'static [(&'static str, &'static str)],
}

fn vastai(b: &mut Identity) {
    b.host_provider = Some(HostProvider::Vastai);
    b.host_provider_source = Some(ValueSource::Derived);
    b.host_ip_public = Some("203.0.113.1".into());
    b.datacenter_id = Some("dc-1".into());
    b.host_country = Some("DE".into());
    b.container_id = Some("28411905".into());
    b.hostname = Some("c1".into());
    b.home_relay_url_at_boot = Some("https://relay.example/".into());
    b.iroh_version = Some("0.96.0".into());
    b.git_sha = Some("3f9c2a1".into());
}

#[test]
fn absent_values_are_said_in_words_not_question_marks() {
    let cases = [
        AbsentCase {
            name: "a local host",
            boot: |b| {
                b.host_provider = Some(HostProvider::Local);
                b.host_provider_source = Some(ValueSource::Derived);
                b.hostname = Some("nuc".into());
            },
            declared: Declared::Run,
            md: &[
                "- `stage-0`: rental not applicable (a `local` host has no provider rental), ip, dc, country not applicable (a `local` host has no cloud provider metadata), container not reported (`$CONTAINER_ID` was not set; not in a container), hostname nuc, relay not reported (iroh had not picked a home relay at boot), iroh not reported (the binary does not link iroh or did not record its version), git not reported (not provided at build or launch time)",
            ],
            json: &[
                ("/hosts/0/absent/0/field", "rental"),
                ("/hosts/0/absent/0/kind", "not_applicable"),
                ("/hosts/0/absent/1/field", "ip"),
            ],
        },
        AbsentCase {
            name: "a vast.ai host whose orchestrator forwarded no rental",
            boot: vastai,
            declared: Declared::Run,
            md: &[
                "- `stage-0`: rental not reported (the orchestrator did not forward one), ip 203.0.113.1",
            ],
            json: &[("/hosts/0/absent/0/kind", "not_reported")],
        },
        AbsentCase {
            name: "a writer that could not ask for the rental",
            boot: |b| {
                vastai(b);
                b.provider_contract_id_source = Some(ValueSource::Unavailable);
            },
            declared: Declared::Run,
            md: &[
                "- `stage-0`: rental unavailable (the writer could not ask the orchestrator for it), ip",
            ],
            json: &[("/hosts/0/absent/0/kind", "unavailable")],
        },
        AbsentCase {
            name: "a relay node has no home relay",
            boot: |b| {
                vastai(b);
                b.provider_contract_id = Some("cx22-1".into());
                b.role = "relay".into();
                b.home_relay_url_at_boot = None;
            },
            declared: Declared::Run,
            md: &["relay not applicable (a relay server has no home relay of its own)"],
            json: &[
                ("/hosts/0/absent/0/field", "relay"),
                ("/hosts/0/absent/0/kind", "not_applicable"),
            ],
        },
        AbsentCase {
            name: "a newer node in a run of several generations reads as its own generation",
            boot: vastai,
            declared: Declared::Node,
            md: &[
                "- contract version: not reported by this writer generation (a contract 1.0.0 writer; the field came in 1.1.0; read the bundle as contract 1.0.0)",
                "- `stage-0`: rental not reported (the orchestrator did not forward one), ip 203.0.113.1",
            ],
            json: &[
                ("/run/absent/0/field", "contract_version"),
                ("/hosts/0/absent/0/kind", "not_reported"),
            ],
        },
        AbsentCase {
            name: "a writer older than contract 1.1.0",
            boot: vastai,
            declared: Declared::Neither,
            md: &[
                "- contract version: not reported by this writer generation (a contract 1.0.0 writer; the field came in 1.1.0; read the bundle as contract 1.0.0)",
                "- writer: not reported by this writer generation (a contract 1.0.0 writer; the field came in 1.1.0; in practice the swactor collector)",
                "- `stage-0`: rental not reported by this writer generation (a contract 1.0.0 writer; the field came in 1.1.0; on vast.ai such writers left the rental id in the container id), ip",
            ],
            json: &[
                ("/run/absent/0/field", "contract_version"),
                ("/run/absent/0/kind", "writer_generation"),
                ("/run/absent/1/field", "writer"),
                ("/hosts/0/absent/0/kind", "writer_generation"),
            ],
        },
    ];
    for c in cases {
        let mut r = Run::new();
        let mut b = identity(1, "stage", Some(0));
        (c.boot)(&mut b);
        r.w.boot(&b);
        let dir = tempfile::tempdir().expect("temp dir");
        let mut done = r.w.finish();
        if c.declared != Declared::Run {
            // A writer older than contract 1.1.0 declares no version, for the run or a node; in
            // a run of several generations the newer nodes still declare theirs.
            done.manifest.contract_version = None;
            done.manifest.writer = None;
            if c.declared == Declared::Neither {
                for node in &mut done.manifest.nodes {
                    node.contract_version = None;
                }
            }
            done.contents.insert_json("MANIFEST.json", &done.manifest);
        }
        let path = diagwire::bundle::output::write_dir(&done.contents, dir.path()).expect("write");
        let s = read(&path);
        check_md(c.name, &s, c.md);
        for (pointer, want) in c.json {
            check_json(c.name, &s, pointer, json!(want));
        }
        check_no_question_marks(c.name, &s);
    }
}

#[test]
fn conn_types_at_the_first_dead_say_why_they_are_absent() {
    // (case, the observer's iroh block: None = none, Some(gap declared))
    let cases = [
        (
            "no iroh block",
            None,
            "not reported (`stage-0`'s nearest snapshot has no iroh block: no transport introspector)",
        ),
        (
            "an api gap",
            Some(true),
            "unavailable (the linked transport cannot report it: api gap `RemoteInfo.conn_type`)",
        ),
        (
            "a peer iroh never heard of",
            Some(false),
            "not reported (iroh has never heard of the peer)",
        ),
    ];
    for (case, iroh, words) in cases {
        let mut r = Run::new();
        r.boot(1, "stage", Some(0)).boot(2, "stage", Some(1));
        r.events(
            1,
            vec![(
                7_000,
                Event::from(SwimTransition::new(
                    id(2),
                    PeerState::Suspect,
                    PeerState::Dead,
                    "suspicion timeout",
                )),
            )],
        );
        let mut body = SnapshotBody::new(vec![]);
        if let Some(gap) = iroh {
            let mut state = IrohState::new();
            state.peers.push(IrohPeer::new(hex(2)));
            if gap {
                state.api_gaps.push(ApiGap::RemoteInfoConnType);
            }
            body.iroh = Some(state);
        }
        r.snapshot(1, "stage", 7_000, body);
        let s = r.summary();
        check_md(
            case,
            &s,
            &[&format!(
                "conn_type from the nearest snapshots: `stage-0` → `stage-1` {words}, "
            )],
        );
        check_no_question_marks(case, &s);
        assert!(
            md(&s).contains("`stage-1` → `stage-0` not reported (`stage-1` posted no snapshot)")
        );
    }
}
