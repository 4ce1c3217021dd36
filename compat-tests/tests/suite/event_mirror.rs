//! The legacy event mirror writes swactor's exact shapes, and the benchmark's event stream reads back through it and the generated types.

use std::collections::BTreeMap;

use arbitrary::{Arbitrary, Unstructured};
use diagwire::v1::{self, RecordKind};
use diagwire_compat_tests::legacy::event::{DialOutcome, Event, EventRecord, NodeId};
use diagwire_compat_tests::{stream, validators};
use serde_json::{Value, json};

fn bench_stream() -> Vec<EventRecord> {
    stream::run(stream::BENCH_RECORDS, stream::BENCH_SEED)
}

fn tag(record: &EventRecord) -> &'static str {
    match &record.event {
        Event::SwimTransition { .. } => "SwimTransition",
        Event::DialStarted { .. } => "DialStarted",
        Event::DialOutcome { .. } => "DialOutcome",
        Event::IrohConnTypeChanged { .. } => "IrohConnTypeChanged",
        Event::RelayChanged { .. } => "RelayChanged",
        Event::RelaySessionStateChanged { .. } => "RelaySessionStateChanged",
        Event::RelaySessionOpened { .. } => "RelaySessionOpened",
        Event::RelaySessionClosed { .. } => "RelaySessionClosed",
        Event::GossipReceived { .. } => "GossipReceived",
        Event::SubprocessSpawned { .. } => "SubprocessSpawned",
        Event::SubprocessExited { .. } => "SubprocessExited",
        Event::SwimMetadataSent { .. } => "SwimMetadataSent",
        Event::SwimMetadataReceived { .. } => "SwimMetadataReceived",
        Event::ConnectionCacheHit { .. } => "ConnectionCacheHit",
        Event::ConnectionCacheMiss { .. } => "ConnectionCacheMiss",
        Event::ConnectionCacheInvalidated { .. } => "ConnectionCacheInvalidated",
        Event::NodeMapUpdate { .. } => "NodeMapUpdate",
        Event::MessageSent { .. } => "MessageSent",
        Event::MessageReceived { .. } => "MessageReceived",
        Event::ProbeSent { .. } => "ProbeSent",
        Event::ProbeReceived { .. } => "ProbeReceived",
        Event::SwimProbeSent { .. } => "SwimProbeSent",
        Event::SwimProbeAcked { .. } => "SwimProbeAcked",
        Event::SwimProbeTimedOut { .. } => "SwimProbeTimedOut",
        Event::InferenceResponseSent { .. } => "InferenceResponseSent",
        Event::Error { .. } => "Error",
        Event::Custom { .. } => "Custom",
    }
}

fn record(event: Event) -> EventRecord {
    EventRecord {
        node_id: NodeId([7; 32]),
        monotonic_seq: 42,
        wall_ms: 1_747_728_031_234,
        event,
    }
}

#[test]
fn mirror_writes_node_ids_as_arrays_of_32_integers() {
    let json = serde_json::to_value(record(Event::ConnectionCacheMiss {
        peer: NodeId([255; 32]),
    }))
    .unwrap();
    assert_eq!(json["node_id"], json!(vec![7; 32]));
    assert_eq!(json["peer"], json!(vec![255; 32]));
}

#[test]
fn mirror_flattens_the_event_beside_the_envelope_with_its_tag_in_type() {
    let json = serde_json::to_value(record(Event::DialStarted {
        peer: NodeId([1; 32]),
        attempt: 2,
        timeout_ms: 500,
    }))
    .unwrap();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "attempt",
            "monotonic_seq",
            "node_id",
            "peer",
            "timeout_ms",
            "type",
            "wall_ms"
        ]
    );
    assert_eq!(json["type"], "DialStarted");
}

#[test]
fn mirror_writes_absent_options_as_null() {
    let json = serde_json::to_value(record(Event::SubprocessExited {
        label: "unknown-pid-77".into(),
        pid: 77,
        command: String::new(),
        exit_code: None,
        exit_signal: Some(9),
        uptime_ms: None,
    }))
    .unwrap();
    assert_eq!(json["exit_code"], Value::Null);
    assert_eq!(json["uptime_ms"], Value::Null);
    assert_eq!(json["exit_signal"], 9);
    assert!(json.as_object().unwrap().contains_key("exit_code"));
}

#[test]
fn mirror_writes_dial_outcomes_externally_tagged() {
    assert_eq!(
        serde_json::to_value(DialOutcome::Timeout).unwrap(),
        json!("Timeout")
    );
    assert_eq!(
        serde_json::to_value(DialOutcome::Error("timed out".into())).unwrap(),
        json!({"Error": "timed out"})
    );
}

#[test]
fn mirror_writes_custom_fields_under_kind_and_fields() {
    let json = serde_json::to_value(record(Event::Custom {
        kind: "clock_sample".into(),
        fields: json!({"node_send_ms_echoed": 1, "collector_recv_ms": 2, "collector_send_ms": 3}),
    }))
    .unwrap();
    assert_eq!(json["type"], "Custom");
    assert_eq!(json["kind"], "clock_sample");
    assert_eq!(json["fields"]["collector_send_ms"], 3);
}

#[test]
fn mirror_ignores_unknown_keys() {
    let mut json = serde_json::to_value(record(Event::ConnectionCacheMiss {
        peer: NodeId([3; 32]),
    }))
    .unwrap();
    json["added_by_a_newer_writer"] = json!(true);
    let back: EventRecord = serde_json::from_value(json).unwrap();
    assert_eq!(
        back,
        record(Event::ConnectionCacheMiss {
            peer: NodeId([3; 32])
        })
    );
}

#[test]
fn mirror_rejects_an_unknown_event_type() {
    let mut json = serde_json::to_value(record(Event::ConnectionCacheMiss {
        peer: NodeId([3; 32]),
    }))
    .unwrap();
    json["type"] = json!("TypeFromTheFuture");
    assert!(serde_json::from_value::<EventRecord>(json).is_err());
}

#[test]
fn stream_is_deterministic() {
    assert_eq!(stream::run(500, 1), stream::run(500, 1));
    assert_ne!(stream::run(500, 1), stream::run(500, 2));
}

#[test]
fn stream_has_the_event_mix_of_a_three_node_run() {
    let records = bench_stream();
    assert_eq!(records.len(), stream::BENCH_RECORDS);
    let mut nodes: Vec<NodeId> = records.iter().map(|r| r.node_id).collect();
    nodes.sort_by_key(|n| n.0);
    nodes.dedup();
    assert_eq!(nodes.len(), 3);
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &records {
        *counts.entry(tag(r)).or_default() += 1;
    }
    for expected in [
        "MessageSent",
        "MessageReceived",
        "SwimProbeSent",
        "SwimProbeAcked",
        "SwimProbeTimedOut",
        "GossipReceived",
        "ConnectionCacheHit",
        "ConnectionCacheMiss",
        "ConnectionCacheInvalidated",
        "DialStarted",
        "DialOutcome",
        "IrohConnTypeChanged",
        "SwimTransition",
        "RelayChanged",
        "RelaySessionStateChanged",
        "SwimMetadataSent",
        "SwimMetadataReceived",
        "NodeMapUpdate",
        "ProbeSent",
        "ProbeReceived",
        "InferenceResponseSent",
        "SubprocessSpawned",
        "Error",
        "Custom",
    ] {
        assert!(
            counts.contains_key(expected),
            "no `{expected}` in the stream: {counts:?}"
        );
    }
    let most = counts.iter().max_by_key(|(_, n)| **n).unwrap().0;
    assert!(
        matches!(*most, "MessageSent" | "MessageReceived"),
        "{counts:?}"
    );
}

/// The keys of every object of a JSON array, in the order the text has them.
fn key_orders(text: &str) -> Vec<Vec<String>> {
    struct Keys(Vec<String>);
    impl<'de> serde::Deserialize<'de> for Keys {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Keys;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<Keys, A::Error> {
                    let mut keys = Vec::new();
                    while let Some(k) = map.next_key::<String>()? {
                        map.next_value::<serde::de::IgnoredAny>()?;
                        keys.push(k);
                    }
                    Ok(Keys(keys))
                }
            }
            d.deserialize_map(V)
        }
    }
    let records: Vec<Keys> = serde_json::from_str(text).unwrap();
    records.into_iter().map(|k| k.0).collect()
}

#[test]
fn stream_node_order_writes_the_envelope_then_the_type_then_the_fields() {
    for keys in key_orders(&stream::node_order_json(&stream::run(200, 3))) {
        assert_eq!(
            keys[..4],
            ["node_id", "monotonic_seq", "wall_ms", "type"],
            "{keys:?}"
        );
    }
}

#[test]
fn stream_collector_order_sorts_the_keys_of_every_record() {
    for keys in key_orders(&stream::collector_order_json(&stream::run(200, 3))) {
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
    }
}

#[test]
fn stream_records_are_schema_valid() {
    let text = stream::node_order_json(&bench_stream());
    let batch: Value = serde_json::from_str(&text).unwrap();
    let violations = validators().violations(RecordKind::EventBatch, &batch);
    assert!(
        violations.is_empty(),
        "{:?}",
        &violations[..violations.len().min(5)]
    );
}

#[test]
fn stream_records_read_back_through_the_mirror_in_both_key_orders() {
    let records = bench_stream();
    for text in [
        stream::node_order_json(&records),
        stream::collector_order_json(&records),
    ] {
        let back: Vec<EventRecord> = serde_json::from_str(&text).unwrap();
        assert!(back == records);
    }
}

#[test]
fn stream_records_read_into_known_generated_variants_and_write_back_an_equal_value() {
    let records = bench_stream();
    for text in [
        stream::node_order_json(&records),
        stream::collector_order_json(&records),
    ] {
        let typed: Vec<v1::EventRecord> = serde_json::from_str(&text).unwrap();
        for (i, r) in typed.iter().enumerate() {
            assert!(
                !matches!(r.event, v1::Event::Other(_)),
                "record {i} read as an unknown type"
            );
            if let v1::Event::Custom(c) = &r.event {
                assert!(
                    !matches!(c.payload, v1::CustomPayload::Other { .. }),
                    "record {i}: unknown kind"
                );
            }
        }
        let original: Value = serde_json::from_str(&text).unwrap();
        assert!(serde_json::to_value(&typed).unwrap() == original);
    }
}

/// A deterministic byte source (splitmix64), so a failing case reproduces from its number.
fn bytes(case: u64, len: usize) -> Vec<u8> {
    let mut rng = diagwire_compat_tests::rng::SplitMix64::new(case);
    (0..len).map(|_| rng.next_u64() as u8).collect()
}

#[test]
fn arbitrary_mirror_records_are_schema_valid_and_write_back_unchanged_through_the_generated_types()
{
    let mut problems = Vec::new();
    let mut checked = 0;
    for case in 0..500u64 {
        let data = bytes(case, 2048);
        let Ok(r) = EventRecord::arbitrary(&mut Unstructured::new(&data)) else {
            continue;
        };
        checked += 1;
        let json = serde_json::to_value(&r).unwrap();
        for v in validators().violations(RecordKind::Event, &json) {
            problems.push(format!(
                "case {case}: schema {}: {}\n  {json}",
                v.pointer, v.message
            ));
        }
        match serde_json::from_value::<v1::EventRecord>(json.clone()) {
            Ok(typed) if serde_json::to_value(&typed).unwrap() == json => {}
            Ok(typed) => problems.push(format!(
                "case {case}: written back differently\n  {json}\n  {typed:?}"
            )),
            Err(e) => problems.push(format!(
                "case {case}: generated types reject it: {e}\n  {json}"
            )),
        }
    }
    assert!(checked >= 450, "only {checked} of 500 inputs made a record");
    problems.truncate(5);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
