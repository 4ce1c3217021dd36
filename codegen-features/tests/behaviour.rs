//! Wire behaviour of each profile construct, exercised through the types generated from the feature schemas.

use diagwire_codegen_features::features::{
    adjacent_union_closed::{Trigger, TriggeredSample},
    adjacent_union_flattened::{Annotation, AnnotationBody, LabelFields},
    any_json::Blob,
    array_alias_record::{Reading, ReadingBatch},
    closed_string_enum::Priority,
    external_union::{Outcome, RedirectTarget},
    id_aliases::{NodeId, NodeIdHex, PeerLink},
    internal_union_closed::{Command, StartCommand, StopCommand},
    internal_union_flattened::{Entry, EntryKind, FileOpened},
    internal_union_nested::{LifecycleMessage, Message, ProcessStarted, ProcessStopped},
    internal_union_open::{Circle, Point, Shape},
    open_string_enum::LinkState,
    provenance::PathReport,
    struct_presence::PresenceProbe,
    tuple_and_array::Histogram,
};
use diagwire_runtime::{Extra, Json, Provenance, Unavailable, UnknownVariant};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

fn parse<T: DeserializeOwned>(wire: Value) -> T {
    serde_json::from_value(wire.clone()).unwrap_or_else(|e| panic!("{wire} does not parse: {e}"))
}

fn parse_err<T: DeserializeOwned + std::fmt::Debug>(wire: Value) -> String {
    match serde_json::from_value::<T>(wire.clone()) {
        Ok(v) => panic!("{wire} parsed as {v:?}"),
        Err(e) => e.to_string(),
    }
}

fn write<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("every generated type serializes")
}

/// Parses `wire` as `T` and writes it back: the result must be `wire` again.
fn assert_round_trip<T: DeserializeOwned + Serialize>(wire: Value) -> T {
    let value: T = parse(wire.clone());
    assert_eq!(write(&value), wire);
    value
}

fn extra(entries: Value) -> Extra {
    let Value::Object(map) = entries else {
        panic!("extra entries are an object")
    };
    Extra(map.into_iter().collect())
}

// --- struct presence ---------------------------------------------------------------------------

fn bare_probe() -> PresenceProbe {
    parse(json!({"name": "p"}))
}

#[test]
fn presence_required_key_missing_is_an_error() {
    assert_eq!(
        parse_err::<PresenceProbe>(json!({"nickname": null})),
        "missing field `name`"
    );
}

#[test]
fn presence_nullable_absent_is_written_as_null() {
    assert_eq!(write(&bare_probe())["nickname"], Value::Null);
    assert!(
        write(&bare_probe())
            .as_object()
            .is_some_and(|o| o.contains_key("nickname"))
    );
}

#[test]
fn presence_nullable_reads_missing_and_null_as_none() {
    assert_eq!(bare_probe().nickname, None);
    let probe: PresenceProbe = parse(json!({"name": "p", "nickname": null}));
    assert_eq!(probe.nickname, None);
}

#[test]
fn presence_omittable_absent_is_left_out() {
    assert!(
        !write(&bare_probe())
            .as_object()
            .is_some_and(|o| o.contains_key("port"))
    );
}

#[test]
fn presence_omittable_reads_null_as_none() {
    let probe: PresenceProbe = parse(json!({"name": "p", "port": null}));
    assert_eq!(probe.port, None);
}

#[test]
fn presence_omittable_present_is_written() {
    let probe: PresenceProbe = parse(json!({"name": "p", "port": 8080}));
    assert_eq!(probe.port, Some(8080));
    assert_eq!(write(&probe)["port"], json!(8080));
}

#[test]
fn presence_default_reads_missing_keys_as_zero() {
    let probe = bare_probe();
    assert_eq!(
        (probe.retries, probe.verbose, probe.labels),
        (0, false, Vec::<String>::new())
    );
}

#[test]
fn presence_default_is_always_written() {
    let wire = write(&bare_probe());
    assert_eq!(
        (&wire["retries"], &wire["verbose"], &wire["labels"]),
        (&json!(0), &json!(false), &json!([]))
    );
}

#[test]
fn presence_default_rejects_null() {
    assert_eq!(
        parse_err::<PresenceProbe>(json!({"name": "p", "retries": null})),
        "invalid type: null, expected u32"
    );
}

#[test]
fn presence_skip_default_reads_missing_keys_as_zero() {
    let probe = bare_probe();
    assert_eq!(
        (probe.dropped, probe.muted, probe.aliases),
        (0, false, Vec::<String>::new())
    );
}

#[test]
fn presence_skip_default_leaves_out_the_default() {
    let wire = write(&bare_probe());
    let keys: Vec<&String> = wire
        .as_object()
        .expect("a struct is an object")
        .keys()
        .collect();
    assert!(
        !keys
            .iter()
            .any(|k| ["dropped", "muted", "aliases"].contains(&k.as_str())),
        "{keys:?}"
    );
}

#[test]
fn presence_skip_default_writes_other_values() {
    assert_round_trip::<PresenceProbe>(json!({
        "name": "p", "nickname": null, "retries": 0, "verbose": false, "labels": [],
        "dropped": 3, "muted": true, "aliases": ["a"]
    }));
}

#[test]
fn presence_skip_default_rejects_null() {
    assert_eq!(
        parse_err::<PresenceProbe>(json!({"name": "p", "muted": null})),
        "invalid type: null, expected a boolean"
    );
}

#[test]
fn struct_keeps_unknown_keys_and_writes_them_back() {
    let probe = assert_round_trip::<PresenceProbe>(json!({
        "name": "p", "nickname": "n", "retries": 1, "verbose": true, "labels": ["x"],
        "added_later": {"nested": [1, 2]}
    }));
    assert_eq!(
        probe.extra,
        extra(json!({"added_later": {"nested": [1, 2]}}))
    );
}

#[test]
fn struct_rejects_a_duplicate_key() {
    let err = serde_json::from_str::<PresenceProbe>(r#"{"name": "p", "name": "q"}"#).unwrap_err();
    assert!(
        err.to_string().starts_with("duplicate field `name`"),
        "{err}"
    );
}

// --- string enums ------------------------------------------------------------------------------

#[test]
fn open_enum_known_value_parses_into_its_variant() {
    assert_eq!(parse::<LinkState>(json!("half-open")), LinkState::HalfOpen);
    assert_eq!(write(&LinkState::HalfOpen), json!("half-open"));
}

#[test]
fn open_enum_unknown_value_is_kept_in_other_and_written_back() {
    let state = assert_round_trip::<LinkState>(json!("flapping"));
    assert_eq!(state, LinkState::Other("flapping".into()));
}

#[test]
fn a_wire_string_reads_as_the_enum_a_reader_would_parse() {
    assert_eq!(LinkState::from_wire("half-open"), Some(LinkState::HalfOpen));
    assert_eq!(
        LinkState::from_wire("flapping"),
        Some(LinkState::Other("flapping".into()))
    );
    assert_eq!(Priority::from_wire("high"), Some(Priority::High));
    assert_eq!(Priority::from_wire("urgent"), None);
}

#[test]
fn closed_enum_known_value_round_trips() {
    assert_eq!(
        assert_round_trip::<Priority>(json!("medium")),
        Priority::Medium
    );
}

#[test]
fn closed_enum_unknown_value_is_an_error() {
    assert_eq!(
        parse_err::<Priority>(json!("urgent")),
        "unknown variant `urgent`, expected one of `low`, `medium`, `high`"
    );
}

// --- internal unions ---------------------------------------------------------------------------

#[test]
fn internal_union_known_tag_parses_into_its_variant() {
    let shape = assert_round_trip::<Shape>(json!({"type": "circle", "radius": 4}));
    assert_eq!(shape, Shape::Circle(Circle::new(4)));
}

#[test]
fn internal_union_tag_may_follow_the_variant_keys() {
    let shape: Shape = parse(json!({"radius": 4, "type": "circle"}));
    assert_eq!(shape, Shape::Circle(Circle::new(4)));
}

#[test]
fn internal_union_variant_without_properties_round_trips() {
    let shape = assert_round_trip::<Shape>(json!({"type": "point"}));
    assert_eq!(shape, Shape::Point(Point::new()));
}

#[test]
fn internal_union_variant_keeps_unknown_keys() {
    let shape = assert_round_trip::<Shape>(json!({"type": "circle", "radius": 4, "color": "red"}));
    let Shape::Circle(circle) = shape else {
        panic!("{shape:?} is not a circle")
    };
    assert_eq!(circle.extra, extra(json!({"color": "red"})));
}

#[test]
fn internal_union_unknown_tag_is_kept_in_other_with_every_key() {
    let shape = assert_round_trip::<Shape>(json!({"type": "hexagon", "side": 2, "filled": true}));
    assert_eq!(
        shape,
        Shape::Other(UnknownVariant {
            tag: "hexagon".into(),
            fields: extra(json!({"side": 2, "filled": true}))
        })
    );
}

#[test]
fn internal_union_known_tag_with_a_malformed_body_is_an_error_not_other() {
    let err = parse_err::<Shape>(json!({"type": "circle", "radius": "big"}));
    assert!(
        err.starts_with("invalid type: string \"big\", expected u32"),
        "{err}"
    );
    assert_eq!(
        parse_err::<Shape>(json!({"type": "circle"})),
        "missing field `radius`"
    );
}

#[test]
fn internal_union_without_its_tag_is_an_error() {
    assert_eq!(
        parse_err::<Shape>(json!({"radius": 4})),
        "missing field `type`"
    );
}

#[test]
fn closed_internal_union_round_trips_each_variant() {
    let start = assert_round_trip::<Command>(json!({"op": "start", "delay_ms": 250}));
    let mut want = StartCommand::new();
    want.delay_ms = Some(250);
    assert_eq!(start, Command::Start(want));
    let stop = assert_round_trip::<Command>(json!({"op": "stop", "force": true}));
    assert_eq!(
        stop,
        Command::Stop({
            let mut stop = StopCommand::new();
            stop.force = true;
            stop
        })
    );
}

#[test]
fn closed_internal_union_unknown_tag_is_an_error() {
    assert_eq!(
        parse_err::<Command>(json!({"op": "pause"})),
        "unknown variant `pause`, expected `start` or `stop`"
    );
}

// --- nested internal union ---------------------------------------------------------------------

#[test]
fn nested_union_inner_variant_round_trips() {
    let message =
        assert_round_trip::<Message>(json!({"t": "lifecycle", "event": "started", "pid": 7}));
    assert_eq!(
        message,
        Message::Lifecycle(LifecycleMessage::Started(ProcessStarted::new(7)))
    );
}

#[test]
fn nested_union_inner_tag_may_come_before_the_outer_tag() {
    let message: Message = parse(json!({"event": "stopped", "exit_code": null, "t": "lifecycle"}));
    assert_eq!(
        message,
        Message::Lifecycle(LifecycleMessage::Stopped(ProcessStopped::new()))
    );
}

#[test]
fn nested_union_unknown_inner_event_is_kept_in_the_inner_other() {
    let message =
        assert_round_trip::<Message>(json!({"t": "lifecycle", "event": "paused", "for_ms": 5}));
    assert_eq!(
        message,
        Message::Lifecycle(LifecycleMessage::Other(UnknownVariant {
            tag: "paused".into(),
            fields: extra(json!({"for_ms": 5})),
        }))
    );
}

#[test]
fn nested_union_unknown_outer_kind_is_kept_in_the_outer_other() {
    let message =
        assert_round_trip::<Message>(json!({"t": "metrics", "event": "started", "cpu": 3}));
    assert_eq!(
        message,
        Message::Other(UnknownVariant {
            tag: "metrics".into(),
            fields: extra(json!({"event": "started", "cpu": 3}))
        })
    );
}

#[test]
fn nested_union_outer_variant_beside_the_nested_one_round_trips() {
    assert_round_trip::<Message>(json!({"t": "ping", "seq": 9}));
}

// --- adjacent union used as a property type ----------------------------------------------------

#[test]
fn adjacent_unit_variant_is_written_without_content() {
    let sample =
        assert_round_trip::<TriggeredSample>(json!({"trigger": {"kind": "Periodic"}, "value": 1}));
    assert_eq!(sample.trigger, Trigger::Periodic);
}

#[test]
fn adjacent_unit_variant_with_content_is_an_error() {
    let err = parse_err::<Trigger>(json!({"kind": "Periodic", "data": 1}));
    assert_eq!(err, "unexpected `data` for `kind: Periodic`");
}

#[test]
fn adjacent_data_variant_round_trips() {
    let trigger = assert_round_trip::<Trigger>(json!({"kind": "Transition", "data": "seq-7"}));
    assert_eq!(trigger, Trigger::Transition("seq-7".into()));
}

#[test]
fn adjacent_data_variant_without_content_is_an_error() {
    assert_eq!(
        parse_err::<Trigger>(json!({"kind": "Transition"})),
        "missing field `data`"
    );
}

#[test]
fn adjacent_unknown_kind_is_kept_with_its_content() {
    let trigger = assert_round_trip::<Trigger>(json!({"kind": "Threshold", "data": {"above": 90}}));
    assert_eq!(
        trigger,
        Trigger::Other {
            tag: "Threshold".into(),
            content: Some(Json(json!({"above": 90})))
        }
    );
}

#[test]
fn adjacent_unknown_kind_without_content_is_kept_as_a_unit() {
    let trigger = assert_round_trip::<Trigger>(json!({"kind": "Manual"}));
    assert_eq!(
        trigger,
        Trigger::Other {
            tag: "Manual".into(),
            content: None
        }
    );
}

#[test]
fn adjacent_union_used_as_a_property_rejects_other_keys() {
    assert_eq!(
        parse_err::<TriggeredSample>(
            json!({"trigger": {"kind": "Periodic", "note": "x"}, "value": 1})
        ),
        "unknown field `note` in `Trigger`"
    );
}

// --- adjacent union absorbed by a struct -------------------------------------------------------

#[test]
fn flattened_adjacent_union_sits_beside_the_struct_keys() {
    let note = assert_round_trip::<Annotation>(
        json!({"author": "ana", "kind": "note", "fields": "hello"}),
    );
    assert_eq!(note.body, AnnotationBody::Note("hello".into()));
    let label = assert_round_trip::<Annotation>(json!({
        "author": "ana", "kind": "label", "fields": {"key": "k", "value": "v"}
    }));
    let want = LabelFields::new("k", "v");
    assert_eq!(label.body, AnnotationBody::Label(want));
}

#[test]
fn flattened_adjacent_struct_keeps_unknown_keys_in_its_own_extra() {
    let note = assert_round_trip::<Annotation>(json!({
        "author": "ana", "kind": "note", "fields": "hello", "pinned": true
    }));
    assert_eq!(note.extra, extra(json!({"pinned": true})));
}

#[test]
fn flattened_adjacent_unknown_kind_is_kept_with_its_fields() {
    let other =
        assert_round_trip::<Annotation>(json!({"author": "ana", "kind": "vote", "fields": [1, 2]}));
    assert_eq!(
        other.body,
        AnnotationBody::Other {
            tag: "vote".into(),
            content: Json(json!([1, 2]))
        }
    );
}

#[test]
fn flattened_adjacent_unknown_kind_requires_its_fields() {
    assert_eq!(
        parse_err::<Annotation>(json!({"author": "ana", "kind": "vote"})),
        "missing field `fields`"
    );
}

// --- internal union absorbed by an envelope ----------------------------------------------------

#[test]
fn envelope_absorbs_the_internal_union() {
    let entry = assert_round_trip::<Entry>(json!({"seq": 3, "type": "Opened", "path": "/tmp/x"}));
    assert_eq!(entry.seq, 3);
    assert_eq!(entry.entry, EntryKind::Opened(FileOpened::new("/tmp/x")));
}

#[test]
fn envelope_unknown_keys_go_to_the_variant() {
    let entry = assert_round_trip::<Entry>(
        json!({"seq": 3, "mode": "rw", "type": "Opened", "path": "/tmp/x"}),
    );
    let EntryKind::Opened(opened) = entry.entry else {
        panic!("not an Opened entry")
    };
    assert_eq!(opened.extra, extra(json!({"mode": "rw"})));
}

#[test]
fn envelope_unknown_type_keeps_every_key_but_the_envelope_ones() {
    let entry =
        assert_round_trip::<Entry>(json!({"seq": 4, "type": "Renamed", "from": "a", "to": "b"}));
    assert_eq!(
        entry.entry,
        EntryKind::Other(UnknownVariant {
            tag: "Renamed".into(),
            fields: extra(json!({"from": "a", "to": "b"}))
        })
    );
}

#[test]
fn envelope_without_its_own_key_is_an_error() {
    assert_eq!(
        parse_err::<Entry>(json!({"type": "Closed", "bytes": 1})),
        "missing field `seq`"
    );
}

// --- external union ----------------------------------------------------------------------------

#[test]
fn external_unit_variant_is_a_bare_string() {
    assert_eq!(
        assert_round_trip::<Outcome>(json!("Timeout")),
        Outcome::Timeout
    );
}

#[test]
fn external_data_variant_is_a_one_key_object() {
    assert_eq!(
        assert_round_trip::<Outcome>(json!({"Error": "refused"})),
        Outcome::Error("refused".into())
    );
    let redirect = assert_round_trip::<Outcome>(json!({"Redirect": {"url": "https://b"}}));
    let want = RedirectTarget::new("https://b");
    assert_eq!(redirect, Outcome::Redirect(want));
}

#[test]
fn external_unknown_variant_is_an_error() {
    assert_eq!(
        parse_err::<Outcome>(json!("Cancelled")),
        "unknown variant `Cancelled`, expected one of `Success`, `Timeout`, `Error`, `Redirect`"
    );
}

#[test]
fn external_object_with_two_keys_is_an_error() {
    assert_eq!(
        parse_err::<Outcome>(json!({"Error": "a", "Redirect": {"url": "b"}})),
        "invalid length 2, expected `Outcome`: one of the strings or a one-key object"
    );
}

// --- tuples and arrays -------------------------------------------------------------------------

fn histogram() -> Value {
    json!({
        "range": ["p99", true],
        "buckets": [["a", 1], ["b", 18446744073709551615u64]],
        "series": [1, 2, 3],
        "grid": [["x"], []],
        "peers": [{"name": "n1"}]
    })
}

#[test]
fn tuples_and_arrays_round_trip() {
    let h = assert_round_trip::<Histogram>(histogram());
    assert_eq!(h.range, ("p99".to_owned(), true));
    assert_eq!(h.buckets[1], ("b".to_owned(), u64::MAX));
    assert_eq!(h.grid, vec![vec!["x".to_owned()], vec![]]);
}

#[test]
fn tuple_with_the_wrong_length_is_an_error() {
    let mut wire = histogram();
    wire["range"] = json!(["p99", true, 1]);
    assert_eq!(
        parse_err::<Histogram>(wire),
        "invalid length 3, expected fewer elements in array"
    );
}

// --- id aliases --------------------------------------------------------------------------------

#[test]
fn node_ids_keep_their_two_encodings() {
    let bytes: Vec<u8> = (0..32).collect();
    let hex = "ab".repeat(32);
    let link = assert_round_trip::<PeerLink>(json!({"from": bytes, "to": hex}));
    assert_eq!(link.from, NodeId(std::array::from_fn(|i| i as u8)));
    assert_eq!(link.to, NodeIdHex(hex));
    assert_eq!(link.via, None);
}

#[test]
fn node_id_with_31_bytes_is_an_error() {
    let bytes: Vec<u8> = (0..31).collect();
    assert_eq!(
        parse_err::<PeerLink>(json!({"from": bytes, "to": "ab".repeat(32)})),
        "invalid length 31, expected a node id: an array of 32 integers 0-255"
    );
}

// --- provenance --------------------------------------------------------------------------------

const GAPS: &[&str] = &["RemoteInfo.conn_type", "RemoteInfo.latency_ms"];
const NO_GAPS: &[&str] = &[];

fn report(wire: Value) -> PathReport {
    parse(wire)
}

#[test]
fn provenance_source_iroh_means_reported() {
    let r = report(json!({"conn_type": "Direct", "conn_type_source": "iroh"}));
    assert_eq!(
        r.conn_type_provenance(GAPS),
        Provenance::Reported(&"Direct".to_owned())
    );
}

#[test]
fn provenance_source_derived_means_derived() {
    let r = report(json!({"conn_type": "Direct", "conn_type_source": "derived"}));
    assert_eq!(
        r.conn_type_provenance(NO_GAPS),
        Provenance::Derived(&"Direct".to_owned())
    );
}

#[test]
fn provenance_unknown_source_means_derived() {
    let r = report(json!({"relay_url": "https://r", "relay_url_source": "guessed"}));
    assert_eq!(
        r.relay_url_provenance(),
        Provenance::Derived(&"https://r".to_owned())
    );
}

#[test]
fn provenance_present_without_source_and_a_declared_gap_means_derived() {
    let r = report(json!({"latency_ms": 12}));
    assert_eq!(r.latency_ms_provenance(GAPS), Provenance::Derived(&12));
}

#[test]
fn provenance_present_without_source_or_declared_gap_means_reported() {
    let r = report(json!({"latency_ms": 12, "relay_url": "https://r"}));
    assert_eq!(r.latency_ms_provenance(NO_GAPS), Provenance::Reported(&12));
    assert_eq!(
        r.relay_url_provenance(),
        Provenance::Reported(&"https://r".to_owned())
    );
}

#[test]
fn provenance_absent_with_a_declared_gap_means_could_not_ask() {
    let r = report(json!({}));
    assert_eq!(
        r.latency_ms_provenance(GAPS),
        Provenance::Unavailable(Unavailable::ApiGap("RemoteInfo.latency_ms"))
    );
    assert_eq!(
        r.conn_type_provenance(GAPS),
        Provenance::Unavailable(Unavailable::ApiGap("RemoteInfo.conn_type"))
    );
}

#[test]
fn provenance_absent_without_a_declared_gap_means_not_observed() {
    let r = report(json!({"relay_url": null}));
    assert_eq!(
        r.latency_ms_provenance(NO_GAPS),
        Provenance::Unavailable(Unavailable::NotObserved)
    );
    assert_eq!(
        r.relay_url_provenance(),
        Provenance::Unavailable(Unavailable::NotObserved)
    );
}

#[test]
fn provenance_reads_the_gap_list_the_record_carries() {
    let r = report(json!({"api_gaps": ["RemoteInfo.latency_ms"]}));
    assert_eq!(
        r.latency_ms_provenance(&r.api_gaps),
        Provenance::Unavailable(Unavailable::ApiGap("RemoteInfo.latency_ms"))
    );
}

// --- array alias record ------------------------------------------------------------------------

#[test]
fn array_alias_record_is_a_json_array() {
    let batch = assert_round_trip::<ReadingBatch>(json!([
        {"sensor": "t0", "value": -1500},
        {"sensor": "t1", "value": 21000, "calibrated": true}
    ]));
    assert_eq!(batch.len(), 2);
    assert_eq!(batch[0], Reading::new("t0", -1500));
}

// --- any JSON ----------------------------------------------------------------------------------

#[test]
fn any_json_keeps_any_value_verbatim() {
    let payload = json!({"deep": [1, "two", null, {"three": 3.5}]});
    let blob = assert_round_trip::<Blob>(json!({"payload": payload, "schema_hint": null}));
    assert_eq!(blob.payload, Json(payload));
}

#[test]
fn any_json_required_accepts_null_as_a_value() {
    let blob = assert_round_trip::<Blob>(json!({"payload": null, "schema_hint": null}));
    assert_eq!(blob.payload, Json(Value::Null));
}

#[test]
fn any_json_nullable_is_written_as_null_when_absent() {
    let blob: Blob = parse(json!({"payload": 1}));
    assert_eq!(blob.schema_hint, None);
    assert_eq!(write(&blob), json!({"payload": 1, "schema_hint": null}));
}

#[test]
fn any_json_omittable_is_left_out_when_absent() {
    let blob =
        assert_round_trip::<Blob>(json!({"payload": 1, "schema_hint": "v2", "trace": ["a"]}));
    assert_eq!(blob.trace, Some(Json(json!(["a"]))));
    let without: Blob = parse(json!({"payload": 1, "trace": null}));
    assert_eq!(write(&without), json!({"payload": 1, "schema_hint": null}));
}
