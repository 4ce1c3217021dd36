//! JSON → protobuf → JSON for every record kind, protobuf → JSON → protobuf byte for byte, and
//! every ordered pair of descriptors (releases and current) passing records through.

use std::fs;
use std::path::{Path, PathBuf};

use diagwire_proto::descriptor::Shape;
use diagwire_proto::{Codec, DESCRIPTORS, RecordKind, codec, decode, encode, stream};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `(kind, file, record)` for every wire fixture (valid ones only) and every record of the example
/// bundle; a batch file of the bundle is an `event_batch`.
fn records() -> Vec<(RecordKind, String, Value)> {
    let mut out = Vec::new();
    let wire = root().join("compat-tests/fixtures/wire");
    for kind in fs::read_dir(&wire).unwrap() {
        let kind = kind.unwrap().path();
        let k = RecordKind::from_name(&kind.file_name().unwrap().to_string_lossy()).unwrap();
        for f in fs::read_dir(&kind).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "json") {
                let v: Value = serde_json::from_slice(&fs::read(&f).unwrap()).unwrap();
                out.push((k, f.display().to_string(), v));
            }
        }
    }
    let bundle = root().join("examples/bundles/n3-relay-flap");
    let mut stack = vec![bundle];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
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
            let v: Value = serde_json::from_slice(&fs::read(&p).unwrap()).unwrap();
            out.push((kind, p.display().to_string(), v));
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out
}

#[test]
fn every_record_round_trips_exactly_in_both_directions() {
    let l = diagwire_proto::current();
    let recs = records();
    let kinds: Vec<RecordKind> = RecordKind::ALL
        .iter()
        .copied()
        .filter(|k| recs.iter().any(|r| r.0 == *k))
        .collect();
    assert_eq!(kinds, l.kinds(), "a fixture for every record kind");
    let (mut json_bytes, mut proto_bytes) = (0usize, 0usize);
    for (kind, file, v) in &recs {
        let b = encode(l, *kind, v).unwrap_or_else(|e| panic!("{file}: {e}"));
        let back = decode(l, *kind, &b).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(&back, v, "{file}: JSON → proto → JSON");
        let again = encode(l, *kind, &back).unwrap();
        assert_eq!(again, b, "{file}: proto → JSON → proto");
        json_bytes += serde_json::to_vec(v).unwrap().len();
        proto_bytes += b.len();
    }
    println!(
        "{} records: {json_bytes} JSON bytes, {proto_bytes} protobuf bytes ({:.1}%)",
        recs.len(),
        100.0 * proto_bytes as f64 / json_bytes as f64
    );
}

#[test]
fn unknown_keys_enum_values_and_variants_survive() {
    let l = diagwire_proto::current();
    let recs = records();
    let (_, file, ev) = recs
        .iter()
        .find(|r| r.0 == RecordKind::Event && r.2.get("type").is_some())
        .unwrap();
    let mut v = ev.clone();
    v["future_key"] = serde_json::json!({"nested": [1, 2.5, "x"]});
    let b = encode(l, RecordKind::Event, &v).unwrap();
    assert_eq!(
        decode(l, RecordKind::Event, &b).unwrap(),
        v,
        "{file}: unknown key"
    );
    let mut v = ev.clone();
    v["type"] = Value::from("SomethingNew");
    let b = encode(l, RecordKind::Event, &v).unwrap();
    assert_eq!(
        decode(l, RecordKind::Event, &b).unwrap(),
        v,
        "{file}: unknown variant"
    );
}

#[test]
fn every_ordered_pair_of_descriptors_passes_records_through() {
    let codecs: Vec<(&str, &Codec)> = DESCRIPTORS
        .iter()
        .map(|(v, _)| (*v, codec(v).unwrap()))
        .collect();
    assert!(codecs.len() >= 3);
    let recs = records();
    let mut passed_unknown = 0;
    for (wi, (wv, w)) in codecs.iter().enumerate() {
        for (ri, (rv, r)) in codecs.iter().enumerate() {
            for (kind, file, v) in &recs {
                if !w.kinds().contains(kind) || !r.kinds().contains(kind) {
                    continue;
                }
                let wb = encode(w, *kind, v).unwrap_or_else(|e| panic!("{wv} {file}: {e}"));
                let seen =
                    decode(r, *kind, &wb).unwrap_or_else(|e| panic!("{wv}→{rv} {file}: {e}"));
                if ri <= wi {
                    // An older (or the same) reader writes the writer's bytes back unchanged.
                    let rb =
                        encode(r, *kind, &seen).unwrap_or_else(|e| panic!("{wv}→{rv} {file}: {e}"));
                    assert_eq!(rb, wb, "{wv}→{rv} {file}: passed through unchanged");
                    assert_eq!(&decode(w, *kind, &rb).unwrap(), v, "{wv}→{rv} {file}");
                    if seen
                        .to_string()
                        .contains(diagwire_proto::UNKNOWN_FIELDS_KEY)
                    {
                        passed_unknown += 1;
                    }
                } else {
                    // A newer reader sees what the older writer wrote.
                    assert_eq!(&seen, v, "{wv}→{rv} {file}");
                }
            }
        }
    }
    println!("{passed_unknown} records carried fields unknown to their reader");
}

#[test]
fn a_1_0_0_reader_passes_a_newer_binary_record_with_unknown_fields_through() {
    let old = codec("1.0.0").unwrap();
    for newer in ["1.1.0", "current"] {
        let new = codec(newer).unwrap();
        let recs = records();
        let mut found = 0;
        for (kind, file, v) in &recs {
            if !old.kinds().contains(kind) {
                continue;
            }
            let nb = encode(new, *kind, v).unwrap();
            let seen = decode(old, *kind, &nb).unwrap();
            if !seen
                .to_string()
                .contains(diagwire_proto::UNKNOWN_FIELDS_KEY)
            {
                continue;
            }
            found += 1;
            let ob = encode(old, *kind, &seen).unwrap();
            assert_eq!(ob, nb, "{newer} {file}");
            assert_eq!(&decode(new, *kind, &ob).unwrap(), v, "{newer} {file}");
        }
        assert!(
            found > 0,
            "some {newer} record has fields 1.0.0 does not know"
        );
    }
}

#[test]
fn a_stream_of_records_decodes_to_the_same_records() {
    let l = diagwire_proto::current();
    let recs: Vec<Value> = records()
        .into_iter()
        .filter(|r| r.0 == RecordKind::Event)
        .map(|r| r.2)
        .collect();
    let s = stream::encode_stream(l, RecordKind::Event, &recs).unwrap();
    let back: Vec<Value> = stream::decode_stream(l, RecordKind::Event, &s)
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(back, recs);
    // A truncated stream yields the whole records, then a located error.
    let cut = &s[..s.len() - 3];
    let got: Vec<_> = stream::decode_stream(l, RecordKind::Event, cut).collect();
    assert_eq!(got.len(), recs.len());
    let e = got.last().unwrap().as_ref().unwrap_err();
    assert!(
        e.path.starts_with(&format!("record {}", recs.len() - 1)),
        "{e}"
    );
}

#[test]
fn arbitrary_bytes_never_panic_and_errors_are_located() {
    let l = diagwire_proto::current();
    let recs = records();
    // Deterministic pseudo-random mutations of real encodings, and truncations.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut errors = 0;
    for (kind, _, v) in recs.iter().take(200) {
        let b = encode(l, *kind, v).unwrap();
        for cut in [0, 1, b.len() / 2, b.len().saturating_sub(1)] {
            let _ = decode(l, *kind, &b[..cut.min(b.len())]);
        }
        for _ in 0..20 {
            let mut m = b.clone();
            if m.is_empty() {
                continue;
            }
            for _ in 0..1 + next() % 4 {
                let i = (next() as usize) % m.len();
                m[i] = next() as u8;
            }
            if let Err(e) = decode(l, *kind, &m) {
                errors += 1;
                assert!(!e.message.is_empty());
                assert!(e.offset <= m.len(), "{e}");
            }
        }
    }
    assert!(errors > 0);
    // A huge announced length is refused, not allocated.
    let e = decode(l, RecordKind::Event, &[0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]).unwrap_err();
    assert_eq!(e.offset, 0, "{e}");
}

/// The fields of a message's bytes, each whole (key and value).
fn split(mut bytes: &[u8]) -> Vec<Vec<u8>> {
    use prost::encoding::{WireType, decode_key, decode_varint};
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let before = bytes;
        let (_, wire) = decode_key(&mut bytes).unwrap();
        let len = match wire {
            WireType::Varint => {
                decode_varint(&mut bytes).unwrap();
                0
            }
            WireType::SixtyFourBit => 8,
            WireType::ThirtyTwoBit => 4,
            WireType::LengthDelimited => decode_varint(&mut bytes).unwrap() as usize,
            _ => panic!("no groups here"),
        };
        bytes = &bytes[len..];
        out.push(before[..before.len() - bytes.len()].to_vec());
    }
    out
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn unknown_fields_out_of_number_order_come_back_as_they_were() {
    let (old, new) = (codec("1.0.0").unwrap(), diagwire_proto::current());
    let mut reordered = 0;
    for (kind, file, v) in records() {
        let seen = decode(old, kind, &encode(new, kind, &v).unwrap()).unwrap();
        let Some(raw) = seen
            .get(diagwire_proto::UNKNOWN_FIELDS_KEY)
            .and_then(Value::as_object)
        else {
            continue;
        };
        for (message, h) in raw {
            let fields = split(&unhex(h.as_str().unwrap()));
            if fields.len() < 2 {
                continue;
            }
            // The unknown fields in reverse order, as bytes from some other writer may hold them.
            let hex: String = fields
                .iter()
                .rev()
                .flatten()
                .map(|b| format!("{b:02x}"))
                .collect();
            let mut doctored = seen.clone();
            doctored[diagwire_proto::UNKNOWN_FIELDS_KEY][message] = Value::from(hex);
            let b = encode(old, kind, &doctored).unwrap();
            assert_eq!(decode(old, kind, &b).unwrap(), doctored, "{file}");
            assert_eq!(encode(old, kind, &doctored).unwrap(), b, "{file}");
            reordered += 1;
        }
    }
    assert!(
        reordered > 0,
        "some record has two fields 1.0.0 does not know"
    );
}

#[test]
fn a_known_field_kept_raw_is_not_written_twice() {
    use prost::encoding::{WireType, encode_key, encode_varint};
    let l = diagwire_proto::current();
    let recs = records();
    let (_, file, ev) = recs
        .iter()
        .find(|r| r.0 == RecordKind::Event && r.2.get("type").is_some())
        .unwrap();
    let message = l.message_of(RecordKind::Event).unwrap();
    let Some(Shape::Struct { fields, .. }) = l.descriptor().message(message).map(|m| &m.shape)
    else {
        panic!("`{message}` is a struct message");
    };
    let flattened = fields.iter().find(|f| f.flatten).map(|f| f.number).unwrap();
    // The event's union field with a varint instead of its message: the reader keeps it raw.
    let mut bytes = Vec::new();
    for field in split(&encode(l, RecordKind::Event, ev).unwrap()) {
        let mut key = &field[..];
        let (n, _) = prost::encoding::decode_key(&mut key).unwrap();
        if n == flattened {
            encode_key(n, WireType::Varint, &mut bytes);
            encode_varint(7, &mut bytes);
        } else {
            bytes.extend(field);
        }
    }
    let seen = decode(l, RecordKind::Event, &bytes).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert!(
        seen.get(diagwire_proto::UNKNOWN_FIELDS_KEY).is_some(),
        "{seen}"
    );
    let again = encode(l, RecordKind::Event, &seen).unwrap();
    assert_eq!(
        decode(l, RecordKind::Event, &again).unwrap(),
        seen,
        "{file}"
    );
    assert_eq!(
        encode(l, RecordKind::Event, &seen).unwrap(),
        again,
        "{file}"
    );
}
