//! What the collector's ingest does with a post: the body's content type picks JSON or the binary
//! form, the staged file keeps that encoding, a post that is not its record is refused with nothing
//! written, and a bundle assembled from a staging tree holding both forms reads as one.
//!
//! The posts are a table: `name: content type, body => staged file name | refused (kind, message)`.
#![cfg(all(feature = "bundle", feature = "proto"))]

use std::path::Path;

use diagwire::bundle::assemble::{assemble, stage_post};
use diagwire::bundle::{Writer, read::Limits};
use diagwire::layout::{Encoding, FileKind};
use diagwire::v1::{BundleWriter, DialStarted, EventRecord, RecordKind, WriterKind};
use diagwire::{NodeId, ProblemKind};

const RUN: &str = "run-ingest";
const NODE: NodeId = NodeId([0x42; 32]);

fn batch() -> serde_json::Value {
    let e = EventRecord::new(
        NODE,
        1,
        1_779_733_878_000,
        DialStarted::new(NodeId([7; 32]), 1, 5_000),
    );
    serde_json::to_value(vec![e]).expect("json")
}

fn json_body() -> Vec<u8> {
    serde_json::to_vec(&batch()).expect("json")
}

fn binary_body() -> Vec<u8> {
    diagwire::binary::encode_value(Encoding::Protobuf, RecordKind::EventBatch, &batch())
        .expect("encodes")
}

enum Want {
    Staged(&'static str),
    Refused(ProblemKind, &'static str),
}
use Want::{Refused, Staged};

#[track_caller]
fn check_post(content_type: &str, body: Vec<u8>, want: Want) {
    let tmp = tempfile::tempdir().expect("tmp");
    let node = NODE.to_hex().0;
    let got = stage_post(
        tmp.path(),
        RUN,
        &node,
        &FileKind::Events,
        1,
        content_type,
        &body,
    );
    let dir = tmp.path().join(RUN).join(&node);
    let on_disk: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    match want {
        Staged(name) => {
            let path = got.expect("staged");
            assert_eq!(path, dir.join(name));
            assert_eq!(
                std::fs::read(&path).expect("read"),
                body,
                "stored as posted"
            );
            assert_eq!(on_disk, [name]);
        }
        Refused(kind, message) => {
            let p = got.expect_err("refused");
            assert_eq!(p.kind, kind, "{p}");
            assert!(p.message.contains(message), "{p}");
            assert!(on_disk.is_empty(), "nothing written: {on_disk:?}");
        }
    }
}

macro_rules! posts {
    ($($name:ident: $ct:expr, $body:expr => $want:expr;)*) => {$(
        #[test]
        fn $name() {
            check_post($ct, $body, $want);
        }
    )*};
}

posts! {
    a_json_post_is_staged_as_json: "application/json", json_body() => Staged("events-000001.json");
    a_json_post_with_a_charset_is_staged_as_json:
        "application/json; charset=utf-8", json_body() => Staged("events-000001.json");
    a_protobuf_post_is_staged_in_the_binary_form:
        "application/x-protobuf", binary_body() => Staged("events-000001.pb");
    the_other_protobuf_spellings_are_accepted:
        "Application/Protobuf", binary_body() => Staged("events-000001.pb");
    a_content_type_neither_json_nor_protobuf_is_refused:
        "text/plain", json_body() => Refused(ProblemKind::Encoding, "is neither application/json nor application/x-protobuf");
    json_posted_as_protobuf_is_refused:
        "application/x-protobuf", json_body() => Refused(ProblemKind::Encoding, "not the protobuf of a event_batch record");
    protobuf_posted_as_json_is_refused:
        "application/json", binary_body() => Refused(ProblemKind::Encoding, "not UTF-8, so not JSON");
    a_json_body_that_is_not_its_record_is_refused:
        "application/json", b"{}".to_vec() => Refused(ProblemKind::Parse, "not a event_batch record");
}

#[test]
fn a_staging_tree_of_both_forms_assembles_into_one_bundle_that_validates() {
    let tmp = tempfile::tempdir().expect("tmp");
    let staging = tmp.path().join("staging");
    let node = NODE.to_hex().0;
    let post = |seq, encoding: Encoding, body: &[u8]| {
        stage_post(
            &staging,
            RUN,
            &node,
            &FileKind::Events,
            seq,
            encoding.content_type(),
            body,
        )
        .expect("staged");
    };
    post(1, Encoding::Json, &json_body());
    post(2, Encoding::Protobuf, &binary_body());
    let me = BundleWriter::new(WriterKind::Collector, "collector", "1");
    let assembled = assemble(&staging, RUN, me).expect("assembles");
    assert!(assembled.problems.is_empty(), "{:?}", assembled.problems);
    let label = &assembled.manifest.nodes[0].label;
    let paths: Vec<&str> = assembled
        .contents
        .files
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        paths,
        [
            "MANIFEST.json".to_owned(),
            format!("{label}/events/events-000001.json"),
            format!("{label}/events/events-000002.pb"),
        ]
    );
    assert_eq!(assembled.manifest.nodes[0].event_batches, 2);
    let dir = diagwire::bundle::output::write_dir(&assembled.contents, &tmp.path().join("out"))
        .expect("write");
    let report = validate(&dir);
    // The manifest and the two events files, one record each, all valid.
    assert_eq!((report.files, report.records), (3, 3));
    assert!(report.is_clean(), "{:?}", report.problems);
}

/// A bundle the writer writes in the binary form has `.pb` record files and a JSON manifest, and
/// reads back as the same records.
#[test]
fn the_writer_writes_the_binary_form_when_asked() {
    let records: Vec<EventRecord> = serde_json::from_value(batch()).expect("typed");
    let mut w = Writer::new(RUN, BundleWriter::new(WriterKind::Sim, "sim", "1"));
    w.encoding(Encoding::Protobuf)
        .events(&NODE.to_hex(), &records);
    let done = w.finish();
    assert!(done.problems.is_empty());
    let paths: Vec<String> = done.contents.files.keys().cloned().collect();
    let label = &done.manifest.nodes[0].label;
    assert_eq!(
        paths,
        [
            "MANIFEST.json".to_owned(),
            format!("{label}/events/events-000001.pb")
        ]
    );
    let bytes = &done.contents.files[&format!("{label}/events/events-000001.pb")];
    let text = diagwire::binary::json_text(Encoding::Protobuf, RecordKind::EventBatch, bytes)
        .expect("decodes");
    let back: Vec<EventRecord> = serde_json::from_slice(&text).expect("typed");
    assert_eq!(back, records);
}

fn validate(dir: &Path) -> diagwire::validate::Report {
    let validators = diagwire::validate::Validators::new().expect("validators");
    let mut reader = diagwire::validate::bundle::open(dir, Limits::default()).expect("opens");
    diagwire::validate::bundle::validate_bundle(&validators, &mut reader, &mut |_, _| {})
}
