//! `convert` holds one record of an events file at a time, in both directions: one table of
//! events files that a whole-file JSON value would not survive or that hold records that do not
//! convert, each converted by the binary under a 2 GiB address-space cap. Each must end with the
//! documented exit status (1 when a file was copied unchanged, 0 when everything converted), never
//! an abort, say where the records that do not convert are, and copy their file unchanged.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use diagwire::v1::RecordKind;
use serde_json::Value;

/// The longest a case may run.
const LIMIT: Duration = Duration::from_secs(600);

/// The example bundle the cases start from.
const RUN: &str = "n3-relay-flap-oldest";

/// The events file most cases break, inside the run directory (without its extension).
const EVENTS: &str = "stage-0/events/events-000001";

/// A snapshot file, inside the run directory (without its extension).
const SNAPSHOT: &str = "stage-0/snapshots/snapshot-000001";

/// One events file: how the bundle holding it is made in the work folder (its path returned),
/// the encoding to convert to, the exit status, what the output must say, and whether the file is
/// copied unchanged (else converted: one record per [`small_item`] it holds).
struct Case {
    name: &'static str,
    /// The record file the case breaks, inside the run directory (without its extension).
    file: &'static str,
    make: fn(&Path) -> PathBuf,
    to: &'static str,
    status: i32,
    says: &'static [&'static str],
    unchanged: bool,
}

const CASES: &[Case] = &[
    Case {
        file: SNAPSHOT,
        name: "a_63_mib_snapshot_of_one_object_holding_zeros_is_copied_unchanged",
        make: |work| {
            let n = (63 << 20) / 2 - 8;
            let mut bytes = Vec::with_capacity(2 * n + 16);
            bytes.extend_from_slice(b"{\"zeros\": [0");
            bytes.extend(std::iter::repeat_n(b",0".as_slice(), n - 1).flatten());
            bytes.extend_from_slice(b"]}");
            let bundle = work.join("in").join(RUN);
            common::copy_tree(&example(), &bundle);
            fs::write(bundle.join(format!("{SNAPSHOT}.json")), bytes).expect("write");
            bundle
        },
        to: "pb",
        status: 1,
        says: &[
            "snapshot-000001.json: holds more than 4194304 JSON values, more than convert holds of one record; copied unchanged",
        ],
        unchanged: true,
    },
    Case {
        file: EVENTS,
        name: "a_63_mib_events_file_of_zeros_is_copied_unchanged_with_its_records_located",
        make: |work| {
            let n = (63 << 20) / 2;
            let mut bytes = Vec::with_capacity(2 * n + 1);
            bytes.push(b'[');
            for i in 0..n {
                bytes.extend_from_slice(if i == 0 { b"0" } else { b",0" });
            }
            bytes.push(b']');
            json_bundle(work, &bytes)
        },
        to: "pb",
        status: 1,
        says: &[
            "events-000001.json:0 (line 1, column 2): not an event record",
            "events-000001.json:19 (line 1, column 40): not an event record",
            "more record(s) of this file do not convert (the first 20 are listed)",
            "; the file is copied unchanged",
        ],
        unchanged: true,
    },
    Case {
        file: EVENTS,
        name: "one_record_that_is_no_event_among_events_is_located_by_index_line_and_column",
        make: |work| {
            let example = example().join(format!("{EVENTS}.json"));
            let mut records: Vec<Value> =
                serde_json::from_slice(&fs::read(example).expect("read")).expect("JSON");
            records[2] = Value::String("not an event".into());
            json_bundle(
                work,
                serde_json::to_string_pretty(&records)
                    .expect("JSON")
                    .as_bytes(),
            )
        },
        to: "pb",
        status: 1,
        says: &["events-000001.json:2 (line ", "not an event record"],
        unchanged: true,
    },
    Case {
        file: EVENTS,
        name: "a_binary_events_file_of_empty_items_is_copied_unchanged_with_its_items_located",
        make: |work| binary_bundle(work, &b"\x0a\x00".repeat(2 << 20)),
        to: "json",
        status: 1,
        says: &[
            "events-000001.pb:0: not the protobuf of an event record",
            "events-000001.pb:19: not the protobuf of an event record",
            "more record(s) of this file do not convert (the first 20 are listed)",
        ],
        unchanged: true,
    },
    Case {
        file: EVENTS,
        name: "a_4_mib_binary_events_file_converts_item_by_item",
        make: |work| {
            let item = small_item();
            binary_bundle(work, &item.repeat((4 << 20) / item.len()))
        },
        to: "json",
        status: 0,
        says: &["0 problem(s)"],
        unchanged: false,
    },
];

fn example() -> PathBuf {
    common::repo().join("examples/bundles").join(RUN)
}

/// The smallest event of [`EVENTS`] as an item of a binary events file: an `EventBatch` of one.
fn small_item() -> Vec<u8> {
    let example = example().join(format!("{EVENTS}.json"));
    let records: Vec<Value> =
        serde_json::from_slice(&fs::read(example).expect("read")).expect("JSON");
    records
        .into_iter()
        .map(|r| {
            diagwire::proto::encode(
                diagwire::proto::current(),
                RecordKind::EventBatch,
                &Value::Array(vec![r]),
            )
            .expect("encodes")
        })
        .min_by_key(Vec::len)
        .expect("events")
}

/// The example bundle with its events file [`EVENTS`] holding `bytes`.
fn json_bundle(work: &Path, bytes: &[u8]) -> PathBuf {
    let bundle = work.join("in").join(RUN);
    common::copy_tree(&example(), &bundle);
    fs::write(bundle.join(format!("{EVENTS}.json")), bytes).expect("write");
    bundle
}

/// The example bundle in the binary form with its events file [`EVENTS`] holding `bytes`.
fn binary_bundle(work: &Path, bytes: &[u8]) -> PathBuf {
    let out = work.join("in");
    let ran = common::diagwire(&[
        "convert",
        &example().display().to_string(),
        "--to",
        "pb",
        &out.display().to_string(),
    ]);
    assert!(ran.status.success(), "{}", common::text(&ran.stdout));
    let bundle = out.join(RUN);
    fs::write(bundle.join(format!("{EVENTS}.pb")), bytes).expect("write");
    bundle
}

/// How many records a pretty-printed events file holds (its elements start two spaces in).
fn pretty_records(bytes: &[u8]) -> usize {
    bytes.windows(4).filter(|w| *w == b"\n  {").count()
}

fn check(case: &Case) -> Result<(), String> {
    let work = tempfile::tempdir().expect("temp dir");
    let bundle = (case.make)(work.path());
    let from = if case.to == "pb" { "json" } else { "pb" };
    let input = fs::read(bundle.join(format!("{}.{from}", case.file))).expect("read");
    let args: Vec<String> = [
        "convert",
        bundle.to_str().expect("UTF-8"),
        "--to",
        case.to,
        "out",
    ]
    .map(str::to_owned)
    .to_vec();
    let ran = common::run_with_memory_cap(work.path(), &args, LIMIT);
    let mut failures = Vec::new();
    match ran.code {
        None => failures.push("ended by a signal (an abort)".to_owned()),
        Some(code) if code != case.status => {
            failures.push(format!("exit status {code}, not {}", case.status))
        }
        Some(_) => {}
    }
    for phrase in case.says {
        if !ran.printed.contains(phrase) {
            failures.push(format!("does not say {phrase:?}"));
        }
    }
    if ran.code.is_some() {
        let run = work.path().join("out").join(RUN);
        if case.unchanged {
            if fs::read(run.join(format!("{}.{from}", case.file))).ok() != Some(input) {
                failures.push("the file is not copied unchanged".to_owned());
            }
        } else {
            match fs::read(run.join(format!("{}.{}", case.file, case.to))) {
                Ok(out) => {
                    let want = input.len() / small_item().len();
                    if pretty_records(&out) != want {
                        failures.push(format!(
                            "{} records converted, not {want}",
                            pretty_records(&out)
                        ));
                    }
                }
                Err(e) => failures.push(format!("no converted file: {e}")),
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        let shown: String = ran.printed.chars().take(4000).collect();
        Err(format!(
            "{}: {}\n--- printed:\n{shown}",
            case.name,
            failures.join("; ")
        ))
    }
}

#[test]
fn convert_holds_one_record_of_an_events_file_at_a_time() {
    let failures: Vec<String> = CASES.iter().filter_map(|c| check(c).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
