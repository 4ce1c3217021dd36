//! The compatibility matrix in protobuf: for every record kind and every ordered pair of (writer,
//! reader) among the contract readers, generated values of the writer's types go through the
//! reader's protobuf descriptor and back without losing anything.
//!
//! The writer's generated codec (`encode_record`, `decode_record`) writes the JSON's bytes and reads
//! the JSON's value for every generated value of the writer's types.
//!
//! A value of the writer's types is serialized to JSON, encoded with the writer's descriptor, decoded
//! with the reader's descriptor, encoded again with the reader's descriptor and decoded with the writer's
//! descriptor; the JSON must come back equal. A reader as old as the writer or older must also write the
//! writer's bytes back unchanged (what it does not know it keeps raw), and a newer reader must read
//! the older record as the same JSON. The pairs come from generated code
//! (`diagwire::release_pairs!`, in [`READERS`] order), so cutting a release edits nothing here.

use arbitrary::{Arbitrary, Unstructured};
use diagwire::proto::{Codec, Message, decode, decode_record, encode, encode_record};
use diagwire::releases::READERS;
use diagwire::v1::RecordKind;
use diagwire_compat_tests::rng::SplitMix64;
use serde::Serialize;

/// Generated values per cell of the matrix.
const VALUES_PER_CELL: u64 = 500;

/// The protobuf descriptor of contract reader `i`: its release's, or the current schemas' for a reader
/// of schemas not released yet.
fn codec_of(i: usize) -> &'static Codec {
    let version = READERS[i].version;
    diagwire::proto::codec(version)
        .or_else(|| (version == diagwire::v1::CONTRACT.version).then(diagwire::proto::current))
        .unwrap_or_else(|| panic!("no protobuf descriptor for contract reader {version}"))
}

/// One value of `W` through the writer's descriptor `w` and the reader's descriptor `r` (`older`: the
/// reader is the writer's release or an earlier one). `None` when the input made no value, else
/// whether the reader kept fields it does not know.
fn through<W>(
    kind: &str,
    (w, r, older): (&Codec, &Codec, bool),
    u: &mut Unstructured<'_>,
) -> Option<bool>
where
    W: for<'a> Arbitrary<'a>
        + Message
        + Serialize
        + serde::de::DeserializeOwned
        + PartialEq
        + std::fmt::Debug,
{
    let kind = RecordKind::from_name(kind).expect("a record kind of the matrix");
    let Ok(value) = W::arbitrary(u) else {
        return None;
    };
    let json = serde_json::to_value(&value).expect("a generated value serializes");
    let (wv, rv) = (&w.version, &r.version);
    let written = encode(w, kind, &json)
        .unwrap_or_else(|e| panic!("{wv} cannot encode its own `{kind}`: {e}\n{json}"));
    let generated = encode_record(w, kind, &value)
        .unwrap_or_else(|e| panic!("{wv} cannot encode its own `{kind}` value: {e}\n{json}"));
    assert_eq!(
        generated, written,
        "{wv} `{kind}`: the generated encoder wrote other bytes than the JSON's\n{json}"
    );
    let expected: W = serde_json::from_value(json.clone()).expect("a generated value reads back");
    let read: W = decode_record(w, kind, &written).unwrap_or_else(|e| {
        panic!("{wv} cannot decode its own `{kind}` into its type: {e}\n{json}")
    });
    assert_eq!(
        read, expected,
        "{wv} `{kind}`: the generated decoder read another value than the JSON's"
    );
    let seen = decode(r, kind, &written)
        .unwrap_or_else(|e| panic!("{wv}→{rv} `{kind}`: the reader cannot decode: {e}\n{json}"));
    let rewritten = encode(r, kind, &seen).unwrap_or_else(|e| {
        panic!("{wv}→{rv} `{kind}`: the reader cannot encode what it read: {e}\n{seen}")
    });
    let back = decode(w, kind, &rewritten).unwrap_or_else(|e| {
        panic!("{wv}→{rv} `{kind}`: the writer cannot decode what the reader wrote: {e}\n{json}")
    });
    assert_eq!(
        back, json,
        "{wv}→{rv} `{kind}`: the record changed through the reader\nread as {seen}"
    );
    if older {
        assert_eq!(
            rewritten, written,
            "{wv}→{rv} `{kind}`: the reader did not pass the bytes through unchanged\n{json}"
        );
    } else {
        assert_eq!(
            seen, json,
            "{wv}→{rv} `{kind}`: a newer reader read another record"
        );
    }
    Some(
        seen.to_string()
            .contains(diagwire::proto::UNKNOWN_FIELDS_KEY),
    )
}

/// Runs every cell of one record type: `VALUES_PER_CELL` values per ordered reader pair, and checks
/// that the pairs were all of them.
macro_rules! kind {
    ($name:ident, $kind:literal, $t:ident) => {
        #[test]
        fn $name() {
            let n = READERS.len();
            let mut cells = 0;
            let mut kept_unknown = 0u64;
            macro_rules! cell {
                ($w:ty, $r:ty) => {{
                    // `release_pairs!` runs the writers in reader order, and each one's readers.
                    let (wi, ri) = (cells / n, cells % n);
                    let codecs = (codec_of(wi), codec_of(ri), ri <= wi);
                    let mut rng = SplitMix64(0x9b0f ^ (line!() as u64) ^ (cells as u64) << 32);
                    let mut checked = 0;
                    for _ in 0..VALUES_PER_CELL {
                        let data = rng.bytes(4096);
                        if let Some(kept) =
                            through::<$w>($kind, codecs, &mut Unstructured::new(&data))
                        {
                            checked += 1;
                            kept_unknown += u64::from(kept);
                        }
                    }
                    assert!(
                        checked >= VALUES_PER_CELL * 9 / 10,
                        "only {checked} of {VALUES_PER_CELL} inputs made a value"
                    );
                    cells += 1;
                }};
            }
            diagwire::release_pairs!(cell, $t);
            assert_eq!(cells, n * n, "every ordered reader pair");
            eprintln!(
                "{}: {cells} cells of {VALUES_PER_CELL} values, {kept_unknown} read with fields \
                 unknown to the reader",
                $kind
            );
        }
    };
}

kind!(boot_records_cross_every_release_pair, "boot", Identity);
kind!(event_records_cross_every_release_pair, "event", EventRecord);
kind!(
    event_batches_cross_every_release_pair,
    "event_batch",
    EventBatch
);
kind!(snapshots_cross_every_release_pair, "snapshot", Snapshot);
kind!(
    finalize_records_cross_every_release_pair,
    "finalize",
    Finalize
);
kind!(manifests_cross_every_release_pair, "manifest", Manifest);
kind!(post_acks_cross_every_release_pair, "post_ack", PostAck);
kind!(error_bodies_cross_every_release_pair, "error", ErrorBody);
kind!(runs_listings_cross_every_release_pair, "runs", RunsListing);
kind!(live_records_cross_every_release_pair, "live", LiveRecord);
kind!(
    vastai_records_cross_every_release_pair,
    "vastai",
    VastaiRecord
);

#[test]
fn the_matrix_covers_every_record_kind_and_every_reader() {
    assert_eq!(
        RecordKind::ALL.len(),
        11,
        "a record kind was added: give it a row above"
    );
    assert!(
        READERS.len() >= 2,
        "the matrix needs at least two readers, has {}",
        READERS.len()
    );
    for (i, reader) in READERS.iter().enumerate() {
        let l = codec_of(i);
        for kind in RecordKind::ALL {
            assert!(
                l.message_of(*kind).is_some(),
                "contract reader {} has no protobuf message for `{kind}`",
                reader.version
            );
        }
    }
}
