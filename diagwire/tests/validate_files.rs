//! Checking one record file: its shape for its kind, each record on its own, every problem located
//! by record, JSON pointer and line and column of the file, and the caps on what is kept.
//!
//! One case per rule; each runs through `check`, which compares the report with what the case
//! expects: counts, and each problem's kind, record, pointer, position and a part of its message.
#![cfg(feature = "validate")]

use std::sync::OnceLock;

use diagwire::ProblemKind;
use diagwire::v1::RecordKind;
use diagwire::validate::{Options, Report, Validator, Validators};

fn validators() -> &'static Validators {
    static V: OnceLock<Validators> = OnceLock::new();
    V.get_or_init(|| Validators::new().expect("validators"))
}

fn fixture(rel: &str) -> serde_json::Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../compat-tests/fixtures/wire")
        .join(rel);
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("fixture JSON")
}

/// A valid event record on one line.
fn event() -> String {
    fixture("event/dial-started.json").to_string()
}

/// The same event with `attempt` a string: the schema rejects it at `/attempt`.
fn bad_event() -> String {
    let mut e = fixture("event/dial-started.json");
    e["attempt"] = serde_json::json!("one");
    e.to_string()
}

/// A valid event holding an unknown key whose value nests `depth` arrays: the record nests
/// `depth + 1` levels.
fn nested_event(depth: usize) -> String {
    let e = event();
    format!(
        "{{\"x\":{}{},{}",
        "[".repeat(depth),
        "]".repeat(depth),
        &e[1..]
    )
}

/// A valid boot record on one line.
fn boot() -> String {
    fixture("boot/relay-node.json").to_string()
}

/// What a case expects of one problem: kind, record, pointer, (line, column), part of the message.
type Want = (
    ProblemKind,
    Option<usize>,
    &'static str,
    Option<(u64, u64)>,
    &'static str,
);

/// What a case expects of the report.
struct Expect {
    records: usize,
    invalid: usize,
    unreadable: usize,
    problems: Vec<Want>,
    /// (problems, records) left out by the caps.
    omitted: (usize, usize),
}

fn run(kind: RecordKind, text: &[u8], options: Options) -> Report {
    let mut report = Report::default();
    Validator::new(validators(), options).validate_text("f.json", text, kind, &mut report);
    report
}

#[track_caller]
fn check(kind: RecordKind, text: &[u8], options: Options, want: Expect) {
    let r = run(kind, text, options);
    let got: Vec<_> = r
        .problems
        .iter()
        .map(|p| {
            (
                p.kind,
                p.location.record,
                p.location.pointer.as_str(),
                p.location.position.map(|x| (x.line, x.column)),
            )
        })
        .collect();
    let wanted: Vec<_> = want
        .problems
        .iter()
        .map(|(k, rec, ptr, pos, _)| (*k, *rec, *ptr, *pos))
        .collect();
    assert_eq!(got, wanted, "{:#?}", r.problems);
    for (p, (.., message)) in r.problems.iter().zip(&want.problems) {
        assert!(
            p.message.contains(message),
            "{:?} does not contain {message:?}",
            p.message
        );
        assert_eq!(p.location.file, "f.json");
    }
    assert_eq!(
        (r.records, r.invalid_records, r.unreadable_files),
        (want.records, want.invalid, want.unreadable),
        "records, invalid, unreadable"
    );
    let omitted = r
        .omitted
        .iter()
        .fold((0, 0), |(p, n), o| (p + o.problems, n + o.records));
    assert_eq!(omitted, want.omitted, "omitted (problems, records)");
    assert_eq!(r.files, 1);
    assert_eq!(
        r.problem_count,
        r.problems.len() + omitted.0,
        "every problem is kept or counted"
    );
    // A file over the in-memory size is streamed record by record, to the same report.
    let streamed = run(
        kind,
        text,
        Options {
            in_memory_bytes: 0,
            ..options
        },
    );
    assert_eq!(streamed, r, "the streamed check differs");
    // The cross-check (schema and typed parse on every record) agrees on every case.
    let cross = run(
        kind,
        text,
        Options {
            cross_check: true,
            ..options
        },
    );
    assert!(
        !cross
            .problems
            .iter()
            .any(|p| p.kind == ProblemKind::ContractBug),
        "{:#?}",
        cross.problems
    );
    assert_eq!(
        (cross.records, cross.invalid_records),
        (r.records, r.invalid_records)
    );
}

macro_rules! cases {
    ($($name:ident: $kind:ident, $text:expr, $options:expr => {
        records: $records:expr, invalid: $invalid:expr, unreadable: $unreadable:expr,
        problems: [$($want:expr),* $(,)?] $(, omitted: $omitted:expr)? $(,)?
    };)*) => {$(
        #[test]
        fn $name() {
            let text: Vec<u8> = $text.into();
            #[allow(unused_mut, unused_assignments)]
            let mut omitted = (0, 0);
            $(omitted = $omitted;)?
            check(RecordKind::$kind, &text, $options, Expect {
                records: $records,
                invalid: $invalid,
                unreadable: $unreadable,
                problems: vec![$($want),*],
                omitted,
            });
        }
    )*};
}

use ProblemKind::*;

fn d() -> Options {
    Options::default()
}

cases! {
    a_valid_events_file_has_every_record_valid: EventBatch,
        format!("[{},\n{},\n{}]\n", event(), event(), event()), d() => {
        records: 3, invalid: 0, unreadable: 0, problems: []
    };
    an_empty_events_array_holds_no_records: EventBatch, "[]", d() => {
        records: 0, invalid: 0, unreadable: 0, problems: []
    };
    a_bad_record_costs_only_itself: EventBatch,
        format!("[{},\n{},\n{}]", event(), bad_event(), event()), d() => {
        records: 3, invalid: 1, unreadable: 0,
        problems: [(Schema, Some(1), "/attempt", Some((2, 1)), "is not of type \"integer\"")]
    };
    an_events_file_holding_one_object_is_the_wrong_shape: EventBatch, event(), d() => {
        records: 0, invalid: 0, unreadable: 1,
        problems: [(Shape, None, "", Some((1, 1)), "an events file holds a JSON array of event records, not an object")]
    };
    an_events_file_of_json_lines_is_the_wrong_shape: EventBatch,
        format!("{}\n{}\n", event(), event()), d() => {
        records: 0, invalid: 0, unreadable: 1,
        problems: [(Shape, None, "", Some((1, 1)), "not an object")]
    };
    a_boot_file_holding_an_array_is_the_wrong_shape: Boot, "[]", d() => {
        records: 0, invalid: 0, unreadable: 1,
        problems: [(Shape, None, "", Some((1, 1)), "a boot file holds one boot record (a JSON object), not an array")]
    };
    a_snapshot_holding_an_array_is_the_wrong_shape: Snapshot, " []", d() => {
        records: 0, invalid: 0, unreadable: 1,
        problems: [(Shape, None, "", Some((1, 2)), "a snapshot file holds one snapshot record")]
    };
    a_finalize_file_holding_an_array_is_the_wrong_shape: Finalize, "[]", d() => {
        records: 0, invalid: 0, unreadable: 1,
        problems: [(Shape, None, "", Some((1, 1)), "a finalize file holds one finalize record")]
    };
    a_manifest_holding_an_array_is_the_wrong_shape: Manifest, "[]", d() => {
        records: 0, invalid: 0, unreadable: 1,
        problems: [(Shape, None, "", Some((1, 1)), "MANIFEST.json holds one manifest record (a JSON object), not an array")]
    };
    a_boot_file_holding_two_boots_is_the_wrong_shape: Boot, format!("{}\n{}\n", boot(), boot()), d() => {
        records: 1, invalid: 0, unreadable: 1,
        problems: [(Shape, None, "", Some((2, 1)), "a second JSON value after the end of the record")]
    };
    text_after_the_array_is_the_wrong_shape: EventBatch, format!("[{}] x", event()), d() => {
        records: 1, invalid: 0, unreadable: 1,
        problems: [(Shape, None, "", Some((1, event().len() as u64 + 4)), "text that is not JSON after the end of the array")]
    };
    an_event_file_holds_one_event_not_an_array: Event, format!("[{}]", event()), d() => {
        records: 0, invalid: 0, unreadable: 1,
        problems: [(Shape, None, "", Some((1, 1)), "an event file holds one event record (a JSON object), not an array")]
    };
    a_runs_listing_is_an_array: Runs, "[]", d() => {
        records: 1, invalid: 0, unreadable: 0, problems: []
    };
    an_empty_file_is_named_empty: Boot, "  \n", d() => {
        records: 0, invalid: 0, unreadable: 1,
        problems: [(Shape, None, "", None, "the file is empty; a boot file holds one boot record")]
    };
    a_byte_order_mark_is_named: Boot, format!("\u{feff}{}", boot()), d() => {
        records: 1, invalid: 0, unreadable: 1,
        problems: [(Encoding, None, "", None, "byte order mark")]
    };
    json_nested_deeper_than_the_readers_allow_is_named_not_called_not_json: Snapshot,
        format!("{}{}", "[".repeat(200), "]".repeat(200)), d() => {
        records: 0, invalid: 0, unreadable: 1,
        problems: [(Shape, None, "", Some((1, 1)), "not an array")]
    };
    a_record_nested_deeper_than_the_readers_allow_is_named: EventBatch,
        format!("[{}{}]", "[".repeat(130), "]".repeat(130)), d() => {
        records: 0, invalid: 0, unreadable: 1,
        problems: [(Parse, None, "", Some((1, 2)), "nest deeper than 126 levels")]
    };
    an_event_nested_as_deep_as_the_typed_readers_take_is_valid_in_memory_and_streamed: EventBatch,
        format!("[{}]", nested_event(127)), d() => {
        records: 1, invalid: 0, unreadable: 0, problems: []
    };
    an_event_nested_deeper_than_the_typed_readers_take_is_named: EventBatch,
        format!("[{}]", nested_event(128)), d() => {
        records: 0, invalid: 0, unreadable: 1,
        problems: [(Parse, None, "", Some((1, 2)), "nest deeper than 126 levels")]
    };
    a_value_nested_deeper_than_the_readers_allow_inside_a_record_is_named: Boot,
        format!("{{\"x\": {}{}}}", "[".repeat(130), "]".repeat(130)), d() => {
        records: 0, invalid: 0, unreadable: 1,
        problems: [(Parse, None, "", Some((1, 1)), "nest deeper than 127 levels")]
    };
    a_number_beyond_a_64_bit_float_is_named_not_called_not_json: Boot,
        boot().replacen("\"boot_sequence\":", "\"boot_sequence\": 1e400, \"x\":", 1), d() => {
        records: 1, invalid: 1, unreadable: 0,
        problems: [(Parse, Some(0), "", Some((1, boot().find("\"boot_sequence\"").unwrap() as u64 + 22)), "beyond the range of a 64-bit float")]
    };
    line_and_column_count_from_the_file_not_the_record: EventBatch,
        format!("[\n{},\n  {{\"node_id\": tru}}\n]", event()), d() => {
        records: 2, invalid: 1, unreadable: 0,
        problems: [(Encoding, Some(1), "", Some((3, 18)), "not JSON: expected ident")]
    };
    a_duplicate_key_is_located_at_its_pointer: Event,
        event().replacen("\"attempt\":", "\"attempt\":9,\"attempt\":", 1), d() => {
        records: 1, invalid: 1, unreadable: 0,
        problems: [(DuplicateKey, Some(0), "/attempt", Some((1, 1)), "the key `attempt` appears twice")]
    };
    invalid_utf8_is_located_by_line_and_column: EventBatch,
        [format!("[{},\n", event()).as_bytes(), b"{\"x\": \"\xff\"}]"].concat(), d() => {
        records: 2, invalid: 1, unreadable: 0,
        problems: [(Encoding, Some(1), "", Some((2, 8)), "not UTF-8")]
    };
    when_framing_breaks_what_was_read_before_is_counted: EventBatch,
        format!("[{},\n{},\n{{\"node_id\": [1, 2", event(), event()), d() => {
        records: 2, invalid: 0, unreadable: 1,
        problems: [(Encoding, None, "", Some((3, 1)), "the file ends inside it")]
    };
    a_missing_comma_stops_the_file_after_the_records_before_it: EventBatch,
        format!("[{} {}]", event(), event()), d() => {
        records: 1, invalid: 0, unreadable: 1,
        problems: [(Encoding, None, "", Some((1, event().len() as u64 + 3)), "expected `,` or `]` after a record")]
    };
    a_trailing_comma_is_not_json: EventBatch, format!("[{},]", event()), d() => {
        records: 1, invalid: 0, unreadable: 1,
        problems: [(Encoding, None, "", Some((1, event().len() as u64 + 3)), "a value, not a closing bracket")]
    };
    problems_are_capped_per_file_and_the_rest_counted: EventBatch,
        format!("[{}]", vec![bad_event(); 25].join(",")), Options { max_problems_per_file: 3, ..d() } => {
        records: 25, invalid: 25, unreadable: 0,
        problems: [
            (Schema, Some(0), "/attempt", Some((1, 2)), "integer"),
            (Schema, Some(1), "/attempt", Some((1, 3 + bad_event().len() as u64)), "integer"),
            (Schema, Some(2), "/attempt", Some((1, 4 + 2 * bad_event().len() as u64)), "integer"),
        ],
        omitted: (0, 22)
    };
    a_record_over_the_record_cap_stops_the_file: EventBatch,
        format!("[{}, {}]", bad_event(), event()), Options { max_record_bytes: event().len() - 1, ..d() } => {
        records: 0, invalid: 0, unreadable: 1,
        problems: [(Read(diagwire::problem::ReadErrorKind::TooLarge), None, "", Some((1, 2)), "larger than")]
    };
}

/// `max_problems_per_file: 3` for the capping case above.
#[test]
fn the_per_file_cap_is_what_the_options_say() {
    let text = format!("[{}]", vec![bad_event(); 25].join(","));
    let r = run(
        RecordKind::EventBatch,
        text.as_bytes(),
        Options {
            max_problems_per_file: 3,
            ..d()
        },
    );
    assert_eq!(r.problems.len(), 3);
    assert_eq!(r.omitted[0].records, 22);
    let r = run(RecordKind::EventBatch, text.as_bytes(), d());
    assert_eq!(r.problems.len(), 20);
    assert_eq!(r.omitted[0].records, 5);
}

#[test]
fn the_run_cap_keeps_the_first_problems_of_all_files() {
    let text = format!("[{}]", vec![bad_event(); 10].join(","));
    let options = Options {
        max_problems: 15,
        ..d()
    };
    let mut validator = Validator::new(validators(), options);
    let mut report = Report::default();
    validator.validate_text(
        "a.json",
        text.as_bytes(),
        RecordKind::EventBatch,
        &mut report,
    );
    validator.validate_text(
        "b.json",
        text.as_bytes(),
        RecordKind::EventBatch,
        &mut report,
    );
    assert_eq!(report.problems.len(), 15);
    assert_eq!(report.invalid_records, 20);
    let omitted: Vec<_> = report
        .omitted
        .iter()
        .map(|o| (o.file.as_str(), o.records))
        .collect();
    assert_eq!(omitted, [("b.json", 5)]);
}

#[test]
fn a_file_of_a_million_tiny_bad_records_is_counted_and_explained_only_up_to_the_cap() {
    let text = format!("[{}{{}}]", "{},".repeat(999_999));
    let r = run(RecordKind::EventBatch, text.as_bytes(), d());
    assert_eq!((r.records, r.invalid_records), (1_000_000, 1_000_000));
    assert!(r.problems.len() <= 20, "{}", r.problems.len());
    // Each explained record has several problems (every required key is missing).
    assert!(r.omitted[0].records >= 1_000_000 - 20);
}

#[test]
fn a_file_larger_than_the_in_memory_size_is_streamed_record_by_record() {
    let small = Options {
        in_memory_bytes: 64 << 10,
        ..d()
    };
    // 256 KiB of `0,`: more than is read whole, each element a record the type refuses.
    let n = 128 << 10;
    let text = format!("[{}0]", "0,".repeat(n - 1));
    let r = run(RecordKind::EventBatch, text.as_bytes(), small);
    assert_eq!((r.records, r.invalid_records), (n, n));
    assert_eq!(r.problems.len(), 20);
    // And a valid large file streams to the same verdict as the one typed pass.
    let big = format!("[{}]", vec![event(); 1_000].join(",\n"));
    assert!(big.len() as u64 > small.in_memory_bytes);
    let r = run(RecordKind::EventBatch, big.as_bytes(), small);
    assert_eq!(
        (r.records, r.invalid_records, r.problem_count),
        (1_000, 0, 0)
    );
}

#[test]
fn an_event_batch_given_a_single_object_by_kind_is_the_wrong_shape() {
    let r = run(RecordKind::EventBatch, event().as_bytes(), d());
    assert_eq!(r.problems[0].kind, ProblemKind::Shape);
    assert!(!r.is_clean());
}

/// A record file in the binary form given by path is read by its `.pb` extension: a good one
/// checks as its JSON would, a bad one is one located problem.
#[cfg(all(feature = "bundle", feature = "proto"))]
#[test]
fn a_binary_record_file_is_checked_by_its_extension() {
    use diagwire::layout::Encoding;
    let tmp = tempfile::tempdir().expect("tmp");
    let batch = serde_json::Value::Array(vec![serde_json::from_str(&event()).unwrap(); 3]);
    let bytes = diagwire::binary::encode_value(Encoding::Protobuf, RecordKind::EventBatch, &batch)
        .expect("encodes");
    let good = tmp.path().join("events-000001.pb");
    std::fs::write(&good, bytes).expect("write");
    let report = diagwire::validate::validate_file(validators(), &good, None);
    assert_eq!(
        (report.files, report.records, report.problems.len()),
        (1, 3, 0)
    );

    let bad = tmp.path().join("boot.pb");
    std::fs::write(&bad, [0x0a, 0x05, 0x01]).expect("write");
    let report = diagwire::validate::validate_file(validators(), &bad, None);
    assert_eq!((report.files, report.unreadable_files), (1, 1));
    let [p] = &report.problems[..] else {
        panic!("{:?}", report.problems)
    };
    assert_eq!(p.kind, ProblemKind::Encoding);
    assert_eq!(p.location.file, bad.display().to_string());
    assert!(
        p.message.contains("not the protobuf of a boot record"),
        "{p}"
    );
}
