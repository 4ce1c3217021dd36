//! The codec's paths held to each other: the direct encoder to the general one, and the
//! generated codec of every current type to the descriptor codec, over every wire fixture and
//! bundle record, generated and bent records, with every descriptor.

use std::path::Path;

use arbitrary::Unstructured;
use diagwire::proto::{
    Codec, DESCRIPTORS, Encoded, Message, codec, decode, decode_record, encode, encode_record,
    encoders,
};
use diagwire::v1::RecordKind;
use diagwire_compat_tests::fuzzing::arbitrary_record;
use diagwire_runtime::SplitMix64;
use serde_json::{Value, json};

/// Every wire fixture and every record of the example bundle, by kind.
fn records() -> Vec<(RecordKind, Value)> {
    let mut out = Vec::new();
    for kind in RecordKind::ALL {
        for f in diagwire_compat_tests::valid(kind.as_str()) {
            out.push((*kind, f.value()));
        }
    }
    out.extend(bundle_records());
    out
}

/// Every record of the example bundle, by kind.
fn bundle_records() -> Vec<(RecordKind, Value)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    let mut stack = vec![root.join("examples/bundles/n3-relay-flap")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let kind = match name.as_str() {
                "MANIFEST.json" => RecordKind::Manifest,
                "boot.json" => RecordKind::Boot,
                "finalize.json" => RecordKind::Finalize,
                n if n.starts_with("events-") => RecordKind::EventBatch,
                n if n.starts_with("snapshot") => RecordKind::Snapshot,
                _ => continue,
            };
            let v = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
            out.push((kind, v));
        }
    }
    out
}

/// Up to `per_kind` `Arbitrary` records of every kind, as JSON.
fn generated_records(per_kind: usize, rng: &mut SplitMix64) -> Vec<(RecordKind, Value)> {
    let mut out = Vec::new();
    for kind in RecordKind::ALL {
        for _ in 0..per_kind {
            let data = rng.bytes(4096);
            if let Some(v) = arbitrary_record(*kind, &mut Unstructured::new(&data)) {
                out.push((*kind, v));
            }
        }
    }
    out
}

/// `v` with some leaves swapped for values of other types and ranges, and some keys added.
fn bend(v: &Value, rng: &mut SplitMix64) -> Value {
    let odd = [
        Value::Null,
        json!(-1),
        json!(1.5),
        json!(0.0),
        json!(300),
        json!(u64::MAX),
        json!("x"),
        json!(""),
        json!([]),
        json!({}),
        json!(true),
        json!(false),
        json!([1, 2]),
    ];
    if rng.next_u64().is_multiple_of(23) {
        return odd[(rng.next_u64() % odd.len() as u64) as usize].clone();
    }
    match v {
        Value::Object(m) => {
            let mut m: serde_json::Map<String, Value> =
                m.iter().map(|(k, x)| (k.clone(), bend(x, rng))).collect();
            if rng.next_u64().is_multiple_of(17) {
                m.insert("zz_new".into(), json!({"a": [1, "b"]}));
            }
            if rng.next_u64().is_multiple_of(29)
                && let Some(k) = m.keys().next().cloned()
            {
                m.remove(&k);
            }
            Value::Object(m)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| bend(x, rng)).collect()),
        other => other.clone(),
    }
}

#[test]
fn direct_and_general_encoders_agree() {
    let mut values = records();
    // Decoded by every descriptor, these also give records with raw fields.
    let real = values.len();
    let mut rng = SplitMix64(0xd1ec7);
    values.extend(generated_records(100, &mut rng));
    let bent: Vec<(RecordKind, Value)> = values
        .iter()
        .flat_map(|(k, v)| (0..3).map(|_| (*k, bend(v, &mut rng))).collect::<Vec<_>>())
        .collect();
    values.extend(bent);
    let (mut direct, mut bailed) = (0, 0);
    for (version, _) in DESCRIPTORS {
        let l = codec(version).unwrap();
        for (i, (kind, v)) in values.iter().enumerate() {
            let kind = *kind;
            let Some(Encoded {
                direct: first,
                general,
            }) = encoders(l, kind, v)
            else {
                continue;
            };
            match first {
                Some(b) => {
                    direct += 1;
                    assert_eq!(
                        Ok(&b),
                        general.as_ref(),
                        "{version} `{kind}`: the direct encoder wrote other bytes\n{v}"
                    );
                }
                None => bailed += 1,
            }
            // A record carrying raw fields is the general encoder's.
            if let Ok(b) = general {
                let back = decode(l, kind, &b).unwrap();
                assert_eq!(&back, v);
                if i >= real {
                    continue;
                }
                for (older, _) in DESCRIPTORS {
                    let o = codec(older).unwrap();
                    if o.message_of(kind).is_none() {
                        continue;
                    }
                    let Ok(seen) = decode(o, kind, &b) else {
                        continue;
                    };
                    if let Some(Encoded {
                        direct: Some(d),
                        general,
                    }) = encoders(o, kind, &seen)
                    {
                        assert_eq!(Ok(d), general, "{version}→{older}");
                    }
                }
            }
        }
    }
    println!("{direct} records encoded directly, {bailed} left to the general encoder");
    assert!(direct > bailed);
}

/// Counts of the generated codec: records it wrote and read itself, and those it left to the
/// descriptor codec.
#[derive(Default, Debug)]
struct Generated {
    written: usize,
    left_written: usize,
    read: usize,
    left_read: usize,
}

/// The generated codec of `T` against the descriptor codec on the JSON record `v`: `decode_record`
/// reads what `T` reads from [`decode`]'s JSON (or fails with it), and `encode_record` of what
/// `T` reads from `v` writes the bytes [`encode`] writes for that value's JSON. Returns whether
/// the generated code wrote and read the record itself.
fn generated<T>(l: &Codec, kind: RecordKind, v: &Value) -> (bool, bool)
where
    T: Message + serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let mut wrote = false;
    if let Ok(t) = T::deserialize(v) {
        let json = serde_json::to_value(&t).unwrap();
        let want = encode(l, kind, &json).ok();
        assert_eq!(
            encode_record(l, kind, &t).ok(),
            want,
            "{} `{kind}`\n{json}",
            l.version
        );
        let mut own = Vec::new();
        wrote = l.holds::<T>(kind) && t.body(&mut own).is_ok();
        if wrote {
            assert_eq!(Some(own), want, "{} `{kind}`\n{json}", l.version);
        }
    }
    let Ok(bytes) = encode(l, kind, v) else {
        return (wrote, false);
    };
    let via_json = decode(l, kind, &bytes)
        .ok()
        .and_then(|j| T::deserialize(&j).ok());
    assert_eq!(
        decode_record::<T>(l, kind, &bytes).ok(),
        via_json,
        "{} `{kind}`\n{v}",
        l.version
    );
    let read = l.holds::<T>(kind) && T::read_body(&bytes).is_ok();
    (wrote, read)
}

fn generated_as_current(l: &Codec, kind: RecordKind, v: &Value) -> (bool, bool) {
    use diagwire::v1::*;
    match kind.as_str() {
        "boot" => generated::<Identity>(l, kind, v),
        "error" => generated::<ErrorBody>(l, kind, v),
        "event" => generated::<EventRecord>(l, kind, v),
        "event_batch" => generated::<EventBatch>(l, kind, v),
        "finalize" => generated::<Finalize>(l, kind, v),
        "live" => generated::<LiveRecord>(l, kind, v),
        "manifest" => generated::<Manifest>(l, kind, v),
        "post_ack" => generated::<PostAck>(l, kind, v),
        "runs" => generated::<RunsListing>(l, kind, v),
        "snapshot" => generated::<Snapshot>(l, kind, v),
        "vastai" => generated::<VastaiRecord>(l, kind, v),
        other => panic!("a record kind the test does not know: {other}"),
    }
}

#[test]
fn generated_and_descriptor_codecs_agree() {
    let current = diagwire::proto::current();
    // What a writer of this contract writes, the generated codec writes and reads itself; so
    // does it a record with a key its type does not know and a value its enum does not know,
    // which travel in `unknown_json`.
    let mut own = bundle_records();
    own.push((
        RecordKind::Event,
        json!({"node_id": vec![7; 32], "monotonic_seq": 3, "wall_ms": 1_700_000_000_000u64,
               "type": "DialStarted", "peer": vec![9; 32], "attempt": 1, "timeout_ms": 500,
               "zz_new": {"a": [1, "b"]}}),
    ));
    own.push((
        RecordKind::Event,
        json!({"node_id": vec![7; 32], "monotonic_seq": 4, "wall_ms": 1_700_000_000_001u64,
               "type": "GossipReceived", "source_peer": vec![9; 32],
               "payload_kind": "carrier_pigeon", "payload_bytes": 120, "item_count": 2}),
    ));
    for (kind, v) in &own {
        assert_eq!(
            generated_as_current(current, *kind, v),
            (true, true),
            "a `{kind}` record left the generated codec\n{v}"
        );
    }
    // Every other record, bent ones and those of other descriptors, goes through the generated
    // codec with the same bytes and value, or is left to the descriptor codec.
    let mut rng = SplitMix64(0x6e4e7a);
    let mut values = records();
    values.extend(generated_records(50, &mut rng));
    let bent: Vec<(RecordKind, Value)> = values
        .iter()
        .map(|(k, v)| (*k, bend(v, &mut rng)))
        .collect();
    values.extend(bent);
    let mut n = Generated::default();
    for (version, _) in DESCRIPTORS {
        let l = codec(version).unwrap();
        for (kind, v) in &values {
            if l.message_of(*kind).is_none() {
                continue;
            }
            let (w, r) = generated_as_current(l, *kind, v);
            if w {
                n.written += 1
            } else {
                n.left_written += 1
            }
            if r { n.read += 1 } else { n.left_read += 1 }
        }
    }
    println!("generated codec: {n:?}");
    assert!(
        n.written > 0 && n.left_written > 0 && n.read > 0 && n.left_read > 0,
        "{n:?}"
    );
}
