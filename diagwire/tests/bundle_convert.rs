//! `diagwire::bundle::convert::convert_each` streams: each file is read, converted and handed on
//! before the next one is read, so memory holds one file whatever the bundle holds.
#![cfg(all(feature = "bundle", feature = "proto"))]

use std::fs;
use std::path::Path;

use diagwire::bundle::convert::convert_each;
use diagwire::bundle::output::write_dir;
use diagwire::bundle::read::{BundleReader, Limits, read_all};
use diagwire::layout::Encoding;

/// A file removed while the first one is handed on is missing when its turn comes: nothing was
/// read ahead.
#[test]
fn convert_hands_on_each_file_before_reading_the_next() {
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/bundles/n3-relay-flap-oldest");
    let (contents, errors) = read_all(&example, Limits::default()).expect("the example opens");
    assert!(errors.is_empty(), "{errors:?}");
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = write_dir(&contents, tmp.path()).expect("write");
    let last = contents.files.keys().next_back().expect("files").clone();

    let mut reader = BundleReader::open(&run, Limits::default()).expect("opens");
    let mut handed = Vec::new();
    let problems = convert_each(&mut reader, Encoding::Protobuf, |path, _| {
        if handed.is_empty() {
            fs::remove_file(run.join(&last)).expect("remove");
        }
        handed.push(path.to_owned());
        Ok(())
    })
    .expect("converts");
    assert_eq!(handed.len(), contents.files.len() - 1);
    assert!(
        !handed
            .iter()
            .any(|p| p.starts_with(last.trim_end_matches(".json")))
    );
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].location.file.ends_with(&last), "{problems:?}");
}

/// An events file converts record by record to the bytes the codec writes for the whole file as
/// one `EventBatch`, and the binary bundle converts back, item by item, to the example's own bytes.
#[test]
fn events_files_convert_record_by_record_to_the_bytes_of_the_whole_file() {
    use diagwire::bundle::convert::convert;
    use diagwire::v1::RecordKind;
    for run in ["n3-relay-flap", "n3-relay-flap-oldest"] {
        let example = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/bundles")
            .join(run);
        let (json, errors) = read_all(&example, Limits::default()).expect("the example opens");
        assert!(errors.is_empty(), "{errors:?}");
        let mut reader = BundleReader::open(&example, Limits::default()).expect("opens");
        let (binary, problems) = convert(&mut reader, Encoding::Protobuf);
        assert!(problems.is_empty(), "{problems:?}");
        let mut events = 0;
        for (path, bytes) in &json.files {
            let Some(stem) = path
                .strip_suffix(".json")
                .filter(|p| p.contains("/events/"))
            else {
                continue;
            };
            let value: serde_json::Value = serde_json::from_slice(bytes).expect("JSON");
            let whole =
                diagwire::proto::encode(diagwire::proto::current(), RecordKind::EventBatch, &value)
                    .expect("encodes");
            assert_eq!(
                binary.files.get(&format!("{stem}.pb")),
                Some(&whole),
                "{path}"
            );
            events += 1;
        }
        assert!(events > 0);

        let tmp = tempfile::tempdir().expect("temp dir");
        let written = write_dir(&binary, tmp.path()).expect("write");
        let mut reader = BundleReader::open(&written, Limits::default()).expect("opens");
        let (back, problems) = convert(&mut reader, Encoding::Json);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(back.files, json.files, "{run}");
    }
}
