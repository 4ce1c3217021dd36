//! The protobuf encoding behind the feature `proto`: a record read back from its binary form is the
//! same record for the typed reader.
#![cfg(feature = "proto")]

use diagwire::proto;
use diagwire::v1::{Record, RecordKind};

#[test]
fn a_record_read_back_from_protobuf_parses_to_the_same_typed_record() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../compat-tests/fixtures/wire/event"
    );
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).expect("fixtures") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("fixture");
        let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        let bytes = proto::encode(proto::current(), RecordKind::Event, &json).expect("encode");
        let back = proto::decode(proto::current(), RecordKind::Event, &bytes).expect("decode");
        let a = Record::parse(RecordKind::Event, &text).expect("typed parse");
        let b =
            Record::from_value(RecordKind::Event, back).expect("typed parse of the decoded JSON");
        assert_eq!(a, b, "{}", path.display());
        seen += 1;
    }
    assert!(seen > 10);
}
