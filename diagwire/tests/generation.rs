//! What a record proves of its writer's contract generation (`diagwire::generation`): the marks
//! table against the frozen releases, one case per kind of mark, and the version a node declares.

use diagwire::generation::{declared, proven};
use serde_json::{Value, json};

/// A node id as events write it.
fn id() -> Value {
    json!(vec![7; 32])
}

/// A 1.0.0 boot record: every field of that contract, none added later.
fn legacy_boot() -> Value {
    json!({
        "binary_version": "0.4.2", "boot_sequence": 0, "container_id": "28411905",
        "datacenter_id": null, "git_sha": null, "home_relay_url_at_boot": null,
        "host_country": null, "host_ip_public": null, "hostname": "c1", "iroh_version": null,
        "node_id_hex": "ab".repeat(32), "node_id_short": "abababab",
        "process_start_unix_ms": 1, "role": "stage", "run_id": "r", "stage_count": 3,
        "stage_index": 0, "vastai_contract_id": null
    })
}

fn with(mut v: Value, key: &str, value: Value) -> Value {
    v.as_object_mut().unwrap().insert(key.into(), value);
    v
}

fn event(fields: Value) -> Value {
    let mut v = json!({"node_id": id(), "monotonic_seq": 1, "wall_ms": 1});
    for (k, x) in fields.as_object().unwrap() {
        v = with(v, k, x.clone());
    }
    v
}

/// Checks what `record`, of the kind named `kind`, proves.
#[track_caller]
fn check_proven(kind: &str, record: Value, want: Option<&str>) {
    assert_eq!(proven(kind, &record), want, "{record}");
}

#[test]
fn a_record_of_the_first_contract_proves_nothing_beyond_it() {
    check_proven("boot", legacy_boot(), None);
    check_proven(
        "event_batch",
        json!([event(
            json!({"type": "DialStarted", "peer": id(), "attempt": 1, "timeout_ms": 5})
        )]),
        None,
    );
}

#[test]
fn a_field_a_later_contract_added_proves_that_contract() {
    check_proven(
        "boot",
        with(legacy_boot(), "host_provider", json!("vastai")),
        Some("1.1.0"),
    );
    // Written as null, the key still proves the writer knew it.
    check_proven(
        "boot",
        with(legacy_boot(), "provider_offer_id", Value::Null),
        Some("1.1.0"),
    );
    check_proven(
        "finalize",
        json!({"exit_reason": "completed", "diag_records_dropped": 0}),
        Some("1.3.0"),
    );
}

#[test]
fn an_event_type_a_later_contract_added_proves_that_contract() {
    check_proven(
        "event_batch",
        json!([event(json!({"type": "HandshakeStarted", "peer": id()}))]),
        Some("1.1.0"),
    );
    check_proven(
        "event_batch",
        json!([event(
            json!({"type": "SwimProbeLateAcked", "target": id(), "sequence": 1})
        )]),
        Some("1.2.0"),
    );
}

#[test]
fn an_enum_value_a_later_contract_added_proves_that_contract() {
    check_proven(
        "event_batch",
        json!([event(json!({
            "type": "SwimProbeAcked", "target": id(), "sequence": 1, "kind": "direct",
            "rtt_ms": 3, "rtt_source": "measured"
        }))]),
        Some("1.2.0"),
    );
}

#[test]
fn the_newest_mark_of_all_the_records_is_what_they_prove() {
    check_proven(
        "event_batch",
        json!([
            event(
                json!({"type": "GossipReceived", "from": id(), "payload_kind": "swim_piggyback", "bytes": 1, "trace_id": "t"})
            ),
            event(json!({"type": "HandshakeStarted", "peer": id()})),
        ]),
        Some("1.2.0"),
    );
}

#[test]
fn keys_and_types_no_contract_knows_prove_nothing() {
    check_proven("boot", with(legacy_boot(), "future_key", json!(1)), None);
    check_proven(
        "event_batch",
        json!([event(json!({"type": "FutureThing", "host_provider": "x"}))]),
        None,
    );
    check_proven("no_such_kind", legacy_boot(), None);
}

#[test]
fn a_node_declares_the_newest_patch_of_the_minor_its_records_prove() {
    let cases: [(Option<&str>, Option<&str>); 4] = [
        (None, None),
        (Some("1.1.0"), Some("1.1.0")),
        (Some("1.2.0"), Some("1.2.0")),
        (Some("1.3.0"), Some(diagwire::CONTRACT_VERSION)),
    ];
    for (records, want) in cases {
        assert_eq!(
            declared(records).as_deref(),
            want,
            "records prove {records:?}"
        );
    }
}

/// The example bundles: the oldest generation's records prove nothing beyond 1.0.0, the current
/// generation's records prove 1.3.0 on every node (its snapshots and finalize carry
/// `diag_records_dropped`). Reading a bundle takes the feature `bundle`.
#[cfg(feature = "bundle")]
#[test]
fn the_example_bundles_prove_their_generation_node_by_node() {
    use diagwire::bundle::read::{Limits, read_all};
    use diagwire::layout::parse_bundle_path;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/bundles");
    for (bundle, want) in [
        ("n3-relay-flap-oldest", None),
        ("n3-relay-flap", Some("1.3.0")),
    ] {
        let (contents, errors) = read_all(&root.join(bundle), Limits::default()).unwrap();
        assert!(errors.is_empty(), "{errors:?}");
        let mut per_node = std::collections::BTreeMap::new();
        for (path, bytes) in &contents.files {
            let at = parse_bundle_path(path);
            let (Some(node), Some(kind)) = (at.node, at.role.file_kind()) else {
                continue;
            };
            let got = diagwire::generation::proven_file(kind, at.encoding, bytes);
            let entry = per_node.entry(node).or_insert(None);
            *entry = diagwire::generation::newer(*entry, got);
        }
        assert!(!per_node.is_empty());
        for (node, got) in per_node {
            assert_eq!(got, want, "{bundle}/{node}");
        }
    }
}

/// The marks table is exactly what the frozen releases lack of the current contract: every field,
/// union tag and enum value of a definition an older release has without it, with the oldest
/// release that has it (the current contract when none does).
#[cfg(feature = "releases")]
#[test]
fn the_marks_are_what_the_frozen_releases_lack() {
    use diagwire::generation::{ADDED, Mark};
    use diagwire::releases::{v1_0_0, v1_1_0, v1_2_0};
    use diagwire::shape::TypeKind;
    let releases = [&v1_0_0::CONTRACT, &v1_1_0::CONTRACT, &v1_2_0::CONTRACT];
    let marks = |t: &TypeKind| -> Vec<(Mark, &'static str)> {
        match t {
            TypeKind::Struct { fields, .. } => {
                fields.iter().map(|f| (Mark::Field, f.key)).collect()
            }
            TypeKind::Union { variants, .. } => {
                variants.iter().map(|v| (Mark::Tag, v.tag)).collect()
            }
            TypeKind::Enum { values, .. } => values.iter().map(|v| (Mark::Value, *v)).collect(),
            _ => Vec::new(),
        }
    };
    let mut want = Vec::new();
    for t in diagwire::v1::CONTRACT.types {
        for (mark, name) in marks(&t.kind) {
            let has = |c: &diagwire::Contract| {
                c.get(t.name)
                    .map(|old| marks(&old.kind).contains(&(mark, name)))
            };
            if !releases.iter().any(|c| has(c) == Some(false)) {
                continue;
            }
            let since = releases
                .iter()
                .find(|c| has(c) == Some(true))
                .map_or(diagwire::CONTRACT_VERSION, |c| c.version);
            want.push((t.name, mark, name, since));
        }
    }
    want.sort();
    let mut got = ADDED.to_vec();
    got.sort();
    assert_eq!(got, want);
    assert_eq!(ADDED.to_vec(), got, "the table is kept sorted");
}
