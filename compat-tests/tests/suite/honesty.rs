//! Contract 1.2.0 closes the places where a reader of 1.1.0 records had to guess between "the value
//! is zero or unknown" and "the writer could not ask". One test per gap: a record in which the
//! reader can now tell the two apart, read through the generated `*_provenance` accessors where
//! the value has a discriminator, and the same record read by the 1.1.0 reader, which keeps what it
//! does not know and writes it back.

use diagwire::releases::v1_1_0;
use diagwire::v1::{
    ActorStats, ApiGap, AppState, Event, EventRecord, FlowState, GossipPayloadKind, Identity,
    LinkEstimate, NatBinding, NatClass, RelayCloseInitiator, RelayServer, Subprocess, ValueSource,
};
use diagwire::{Provenance, Unavailable};
use diagwire_compat_tests::fixtures_dir;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn fixture(kind: &str, name: &str) -> Value {
    let path = fixtures_dir().join("wire").join(kind).join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("fixture is JSON")
}

#[track_caller]
fn parse<T: DeserializeOwned>(value: &Value) -> T {
    serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("does not parse: {e}"))
}

/// The record read by `T` and written back is the record.
#[track_caller]
fn round_trips<T: DeserializeOwned + Serialize>(value: &Value) {
    let back = serde_json::to_value(parse::<T>(value)).expect("serializes");
    assert_eq!(&back, value);
}

fn relay_server(source: Option<&str>, active: u64) -> Value {
    let mut v = json!({
        "active_sessions": active, "total_opens": 0, "total_closes": 0,
        "bytes_rx_total": 0, "bytes_tx_total": 0, "scraped_at_ms": 1_779_733_879_000u64
    });
    if let Some(s) = source {
        v["counters_source"] = json!(s);
    }
    v
}

// Item 1: the skeleton relay writes zeros it never counted.
#[test]
fn a_skeleton_relay_s_zero_counters_read_could_not_ask_and_a_counting_relay_s_read_reported() {
    let skeleton: RelayServer = parse(&relay_server(Some("unavailable"), 0));
    for p in [
        skeleton.active_sessions_provenance(),
        skeleton.total_opens_provenance(),
        skeleton.total_closes_provenance(),
        skeleton.bytes_rx_total_provenance(),
        skeleton.bytes_tx_total_provenance(),
    ] {
        assert_eq!(p, Provenance::Unavailable(Unavailable::SourceUnavailable));
    }
    let idle: RelayServer = parse(&relay_server(Some("relay"), 0));
    assert_eq!(idle.active_sessions_provenance(), Provenance::Reported(&0));
    // A 1.1.0 writer said nothing: its counters read as the relay's own, as they always did.
    let old: RelayServer = parse(&relay_server(None, 3));
    assert_eq!(old.active_sessions_provenance(), Provenance::Reported(&3));
    round_trips::<v1_1_0::RelayServer>(&relay_server(Some("unavailable"), 0));
}

// Item 2: event gaps now resolve to a declared gap, and the event carries the list.
#[test]
fn a_handshake_without_an_offer_tells_could_not_ask_from_not_observed_through_its_own_gap_list() {
    let mut started = fixture("event", "v1-1-handshake-started-direct-no-offer.json");
    let plain: EventRecord = parse(&started);
    let Event::HandshakeStarted(h) = &plain.event else {
        panic!("not a HandshakeStarted")
    };
    assert!(h.api_gaps.is_empty());
    assert_eq!(
        h.cipher_suite_offered_provenance(&h.api_gaps),
        Provenance::Unavailable(Unavailable::NotObserved)
    );
    started["api_gaps"] = json!(["Handshake.cipher_suite_offered"]);
    let gapped: EventRecord = parse(&started);
    let Event::HandshakeStarted(h) = &gapped.event else {
        panic!("not a HandshakeStarted")
    };
    assert_eq!(h.api_gaps, vec![ApiGap::HandshakeCipherSuiteOffered]);
    assert_eq!(
        h.cipher_suite_offered_provenance(&h.api_gaps),
        Provenance::Unavailable(Unavailable::ApiGap("Handshake.cipher_suite_offered"))
    );
    round_trips::<v1_1_0::EventRecord>(&started);
}

#[test]
fn a_packet_without_ttl_and_ecn_reads_could_not_ask_when_the_event_declares_the_gaps() {
    let mut packet = fixture("event", "v1-1-wire-packet-tx.json");
    packet["l3"] = json!({"src_ip": "172.17.0.2", "dst_ip": "203.0.113.7"});
    packet["api_gaps"] = json!(["WirePacket.ttl", "WirePacket.ecn"]);
    let record: EventRecord = parse(&packet);
    let Event::WirePacket(w) = &record.event else {
        panic!("not a WirePacket")
    };
    assert_eq!(
        w.l3.ttl_provenance(&w.api_gaps),
        Provenance::Unavailable(Unavailable::ApiGap("WirePacket.ttl"))
    );
    assert_eq!(
        w.l3.ecn_provenance(&w.api_gaps),
        Provenance::Unavailable(Unavailable::ApiGap("WirePacket.ecn"))
    );
    assert_eq!(
        w.l3.ttl_provenance(&[] as &[ApiGap]),
        Provenance::Unavailable(Unavailable::NotObserved)
    );
    round_trips::<v1_1_0::EventRecord>(&packet);
}

// Item 3: a native report names who reported it, and `unavailable` says "could not ask".
#[test]
fn provider_context_forwarded_by_the_orchestrator_reads_reported_and_an_unasked_one_could_not_ask()
{
    let mut boot = fixture("boot", "v1-1-vastai-provider-context-forwarded.json");
    boot["host_provider_source"] = json!("orchestrator");
    let forwarded: Identity = parse(&boot);
    assert_eq!(
        forwarded.host_provider_source,
        Some(ValueSource::Orchestrator)
    );
    assert!(forwarded.host_provider_provenance().is_reported());
    // The 1.1.0 spelling of the same meaning still reads as reported.
    boot["host_provider_source"] = json!("iroh");
    assert!(
        parse::<Identity>(&boot)
            .host_provider_provenance()
            .is_reported()
    );
    // A writer that could not ask the orchestrator leaves the value out and says why.
    let map = boot.as_object_mut().unwrap();
    map.remove("host_provider");
    map.insert("host_provider_source".into(), json!("unavailable"));
    let unasked: Identity = parse(&boot);
    assert_eq!(
        unasked.host_provider_provenance(),
        Provenance::Unavailable(Unavailable::SourceUnavailable)
    );
    boot.as_object_mut().unwrap().remove("host_provider_source");
    assert_eq!(
        parse::<Identity>(&boot).host_provider_provenance(),
        Provenance::Unavailable(Unavailable::NotObserved)
    );
}

#[test]
fn gpu_memory_read_from_the_driver_and_a_swim_round_trip_measured_by_swim_read_reported() {
    let app: AppState = parse(&json!({
        "stage_index": 1, "worker_status": "busy",
        "gpu_mem_used_bytes": 0, "gpu_mem_total_bytes": 25_769_803_776u64,
        "gpu_mem_source": "driver"
    }));
    assert_eq!(app.gpu_mem_source, Some(ValueSource::Driver));
    assert_eq!(
        app.gpu_mem_used_bytes_provenance(&app.api_gaps),
        Provenance::Reported(&0)
    );
    let unasked: AppState = parse(&json!({
        "stage_index": 1, "worker_status": "busy", "gpu_mem_source": "unavailable"
    }));
    assert_eq!(
        unasked.gpu_mem_used_bytes_provenance(&unasked.api_gaps),
        Provenance::Unavailable(Unavailable::SourceUnavailable)
    );
    let mut acked = fixture("event", "v1-1-swim-probe-acked-probe-record.json");
    acked["rtt_ms"] = json!(4);
    acked["rtt_source"] = json!("measured");
    let record: EventRecord = parse(&acked);
    let Event::SwimProbeAcked(a) = &record.event else {
        panic!("not a SwimProbeAcked")
    };
    assert_eq!(a.rtt_source, Some(ValueSource::Measured));
    assert_eq!(a.rtt_ms_provenance(), Provenance::Reported(&4));
    acked["rtt_source"] = json!("derived");
    let record: EventRecord = parse(&acked);
    let Event::SwimProbeAcked(a) = &record.event else {
        panic!("not a SwimProbeAcked")
    };
    assert_eq!(a.rtt_ms_provenance(), Provenance::Derived(&4));
}

// Item 4: one side, one string.
#[test]
fn remote_and_peer_count_as_one_side_and_idle_timeout_as_a_relay_close_with_its_reason() {
    let closes = ["remote", "peer", "idle_timeout", "relay", "transport"];
    let mut peer = 0;
    let mut relay_idle = 0;
    for initiator in closes {
        let mut record = fixture("event", "relay-session-closed.json");
        record["close_initiator"] = json!(initiator);
        let r: EventRecord = parse(&record);
        let Event::RelaySessionClosed(c) = &r.event else {
            panic!("not a RelaySessionClosed")
        };
        match diagwire::canonical::relay_close(&c.close_initiator) {
            (RelayCloseInitiator::Peer, None) => peer += 1,
            (RelayCloseInitiator::Relay, Some("idle_timeout")) => relay_idle += 1,
            (RelayCloseInitiator::Relay | RelayCloseInitiator::Transport, None) => {}
            other => panic!("{initiator}: {other:?}"),
        }
        round_trips::<EventRecord>(&record);
    }
    assert_eq!((peer, relay_idle), (2, 1));
}

// Item 5: required numbers of 1.1.0 blocks gain a source that can say the zeros are placeholders.
#[test]
fn a_flow_whose_transport_hides_its_congestion_state_reads_could_not_ask_not_zero() {
    let hidden: FlowState = parse(&json!({
        "peer_node_id_hex": "ab".repeat(32), "remote_addr": "203.0.113.7:7843",
        "cwnd_packets": 0, "cwnd_packets_source": "unavailable",
        "rtt_estimate_ms": 0, "bytes_in_flight": 0, "retransmits_total": 0,
        "stats_source": "unavailable"
    }));
    let could_not_ask = Provenance::Unavailable(Unavailable::SourceUnavailable);
    assert_eq!(hidden.cwnd_packets_provenance(), could_not_ask);
    assert_eq!(hidden.rtt_estimate_ms_provenance(), could_not_ask);
    assert_eq!(hidden.bytes_in_flight_provenance(), could_not_ask);
    assert_eq!(hidden.retransmits_total_provenance(), could_not_ask);
    let idle: FlowState = parse(&json!({
        "peer_node_id_hex": "ab".repeat(32), "remote_addr": "203.0.113.7:7843",
        "cwnd_packets": 10, "cwnd_packets_source": "iroh",
        "rtt_estimate_ms": 12, "bytes_in_flight": 0, "retransmits_total": 0,
        "stats_source": "iroh"
    }));
    assert_eq!(idle.bytes_in_flight_provenance(), Provenance::Reported(&0));
    assert_eq!(
        idle.retransmits_total_provenance(),
        Provenance::Reported(&0)
    );
}

#[test]
fn a_link_without_an_estimate_and_an_actor_without_mailbox_counts_read_could_not_ask() {
    let link = |source: &str| -> LinkEstimate {
        parse(&json!({
            "peer_node_id_hex": "cd".repeat(32), "bandwidth_bps_observed": 0,
            "loss_rate_observed": 0.0, "one_way_delay_ms_estimated": 0,
            "measurement_window_ms": 5000, "estimate_source": source
        }))
    };
    let none = link("unavailable");
    assert_eq!(
        none.loss_rate_observed_provenance(),
        Provenance::Unavailable(Unavailable::SourceUnavailable)
    );
    assert_eq!(
        none.one_way_delay_ms_estimated_provenance(),
        Provenance::Unavailable(Unavailable::SourceUnavailable)
    );
    assert_eq!(
        link("measured").bandwidth_bps_observed_provenance(),
        Provenance::Reported(&0)
    );
    let actor = |source: &str| -> ActorStats {
        parse(&json!({
            "name": "swim", "mailbox_depth": 0, "total_msgs_processed": 41,
            "total_msgs_dropped": 0, "mailbox_source": source
        }))
    };
    assert_eq!(
        actor("unavailable").mailbox_depth_provenance(),
        Provenance::Unavailable(Unavailable::SourceUnavailable)
    );
    assert_eq!(
        actor("unavailable").total_msgs_dropped_provenance(),
        Provenance::Unavailable(Unavailable::SourceUnavailable)
    );
    assert_eq!(
        actor("measured").total_msgs_dropped_provenance(),
        Provenance::Reported(&0)
    );
}

// Item 7: identity and trace fields, absent never read as generation 0 or as untraced-by-design.
#[test]
fn worker_generation_and_trace_id_are_read_where_written_and_absent_where_not() {
    let mut spawned = fixture("event", "subprocess-spawned.json");
    let old: EventRecord = parse(&spawned);
    let Event::SubprocessSpawned(s) = &old.event else {
        panic!("not a SubprocessSpawned")
    };
    assert_eq!(s.worker_generation, None);
    spawned["worker_generation"] = json!(0);
    let new: EventRecord = parse(&spawned);
    let Event::SubprocessSpawned(s) = &new.event else {
        panic!("not a SubprocessSpawned")
    };
    assert_eq!(s.worker_generation, Some(0));
    round_trips::<v1_1_0::EventRecord>(&spawned);

    let sub: Subprocess = parse(&json!({
        "label": "pp-worker", "pid": 4242, "status": "running", "worker_generation": 3
    }));
    assert_eq!(sub.worker_generation, Some(3));
    let app: AppState =
        parse(&json!({"stage_index": 0, "worker_status": "ready", "worker_generation": 2}));
    assert_eq!(app.worker_generation, Some(2));

    let trace = "0af7651916cd43dd8448eb211c80319c";
    for name in [
        "swim-metadata-received.json",
        "unknown-gossip-payload-kind.json",
    ] {
        let mut record = fixture("event", name);
        record["trace_id"] = json!(trace);
        let r: EventRecord = parse(&record);
        let got = match &r.event {
            Event::SwimMetadataReceived(m) => m.trace_id.clone(),
            Event::GossipReceived(g) => g.trace_id.clone(),
            other => panic!("{name}: {other:?}"),
        };
        assert_eq!(got.as_deref(), Some(trace));
        round_trips::<v1_1_0::EventRecord>(&record);
    }
}

// Item 8: name-registry gossip is a known kind for every writer.
#[test]
fn name_registry_gossip_is_a_known_payload_kind() {
    let mut record = fixture("event", "unknown-gossip-payload-kind.json");
    record["payload_kind"] = json!("name_registry");
    let r: EventRecord = parse(&record);
    let Event::GossipReceived(g) = &r.event else {
        panic!("not a GossipReceived")
    };
    assert_eq!(g.payload_kind, GossipPayloadKind::NameRegistry);
    let old: v1_1_0::EventRecord = parse(&record);
    let v1_1_0::Event::GossipReceived(g) = &old.event else {
        panic!("not a GossipReceived")
    };
    assert!(
        matches!(g.payload_kind, v1_1_0::GossipPayloadKind::Other(ref k) if k == "name_registry")
    );
}

// Item 9: the NAT class a parity judgement needs, and "could not classify" apart from "did not say".
#[test]
fn a_nat_binding_names_its_class_or_says_it_could_not_ask() {
    let binding = |extra: Value| -> NatBinding {
        let mut v =
            json!({"local_addr": "172.17.0.2:41641", "observed_remote_addr": "198.51.100.4:62011"});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        parse(&v)
    };
    let symmetric = binding(json!({"nat_class": "symmetric", "nat_class_source": "derived"}));
    assert_eq!(
        symmetric.nat_class_provenance(),
        Provenance::Derived(&NatClass::Symmetric)
    );
    assert_eq!(
        binding(json!({"nat_class_source": "unavailable"})).nat_class_provenance(),
        Provenance::Unavailable(Unavailable::SourceUnavailable)
    );
    assert_eq!(
        binding(json!({})).nat_class_provenance(),
        Provenance::Unavailable(Unavailable::NotObserved)
    );
    assert_eq!(
        binding(json!({"nat_class": "unknown", "nat_class_source": "iroh"})).nat_class_provenance(),
        Provenance::Reported(&NatClass::Unknown)
    );
}

// Item 6: the timeout event is written at the timeout, so a late acknowledgement is its own event.
#[test]
fn a_late_acknowledgement_is_its_own_event_and_the_timeout_says_nothing_about_it() {
    let timed_out = fixture("event", "v1-1-swim-probe-timed-out-probe-record.json");
    let t: EventRecord = parse(&timed_out);
    let Event::SwimProbeTimedOut(t) = &t.event else {
        panic!("not a SwimProbeTimedOut")
    };
    let mut late = timed_out.clone();
    let map = late.as_object_mut().unwrap();
    map.retain(|k, _| {
        [
            "node_id",
            "monotonic_seq",
            "wall_ms",
            "target",
            "sequence",
            "kind",
            "trace_id",
        ]
        .contains(&k.as_str())
    });
    map.insert("type".into(), json!("SwimProbeLateAcked"));
    map.insert("rtt_ms".into(), json!(3_180));
    let l: EventRecord = parse(&late);
    let Event::SwimProbeLateAcked(l) = &l.event else {
        panic!("not a SwimProbeLateAcked")
    };
    // Joined on (target, sequence, kind), as every probe event is.
    assert_eq!(
        (&l.target, l.sequence, &l.kind),
        (&t.target, t.sequence, &t.kind)
    );
    assert_eq!(l.rtt_ms, 3_180);
    // A 1.1.0 reader keeps the new event whole and writes it back.
    let old: v1_1_0::EventRecord = parse(&late);
    assert!(matches!(old.event, v1_1_0::Event::Other(ref o) if o.tag == "SwimProbeLateAcked"));
    round_trips::<v1_1_0::EventRecord>(&late);
}

/// The units of every field called `name` in a contract's shape table.
fn units_of(
    contract: &diagwire::Contract,
    name: &str,
) -> Vec<(&'static str, Option<&'static str>)> {
    contract
        .types
        .iter()
        .filter_map(|t| match t.kind {
            diagwire::shape::TypeKind::Struct { fields, .. } => Some((t.name, fields)),
            _ => None,
        })
        .flat_map(|(ty, fields)| {
            fields
                .iter()
                .filter(move |f| f.key == name)
                .map(move |f| (ty, f.unit))
        })
        .collect()
}

#[test]
fn a_process_id_and_a_signal_are_one_quantity_in_the_snapshot_block_and_the_events() {
    for (name, unit) in [
        ("pid", "pid"),
        ("parent_pid", "pid"),
        ("exit_signal", "signal"),
    ] {
        let now = units_of(&diagwire::v1::CONTRACT, name);
        assert!(!now.is_empty(), "{name}");
        assert!(now.iter().all(|(_, u)| *u == Some(unit)), "{name}: {now:?}");
    }
    // 1.2.0 spelled them two ways, which a reader had to know were one.
    let then = units_of(&diagwire::releases::v1_2_0::CONTRACT, "pid");
    assert!(then.contains(&("Subprocess", Some("id"))), "{then:?}");
    // The numbers did not change: a 1.2.0 record reads the same.
    let block = json!({"label": "pp-worker", "pid": 4242, "status": "exited", "exit_signal": 9});
    let now: Subprocess = parse(&block);
    assert_eq!((now.pid, now.exit_signal), (4242, Some(9)));
    round_trips::<diagwire::releases::v1_2_0::Subprocess>(&block);
}

#[test]
fn the_gap_names_of_an_iroh_api_missing_event_read_as_declared_gaps() {
    let names = [
        "RemoteInfo.conn_type",
        "RelayTunnel.status",
        "Handshake.cipher_suite_offered",
    ];
    for name in names {
        let gap = ApiGap::from_wire(name).expect("an open enum reads every name");
        assert!(!matches!(gap, ApiGap::Other(_)), "{name} is a declared gap");
        assert_eq!(gap.as_str(), name);
    }
    assert_eq!(
        ApiGap::from_wire("Future.value"),
        Some(ApiGap::Other("Future.value".into()))
    );
}
