//! `diagwire validate` as a collector or an engineer runs it: one case per rule of its output —
//! the located problem lines, the totals line, the formats and the exit status (0 clean, 1
//! problems found, 2 a path that could not be checked at all). What each kind of bad input
//! reports in detail is tested in the library (`validate_files`, `validate_bundle`); here each case
//! runs the binary through [`check`].

use crate::common;

use common::repo;
use std::process::Command;

/// A file the case writes before running, relative to its scratch directory.
struct Input {
    name: &'static str,
    bytes: Vec<u8>,
}

/// One invocation and what it must print.
struct Case {
    /// Files written to the scratch directory; `{dir}` in the arguments names it.
    inputs: Vec<Input>,
    args: &'static [&'static str],
    exit: i32,
    /// Lines (or parts of lines) that must appear in standard output and error, in this order.
    prints: &'static [&'static str],
    /// The last line of standard output.
    totals: &'static str,
}

fn fixture(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).expect("fixture")
}

fn dial_started() -> serde_json::Value {
    serde_json::from_str(&fixture(
        "compat-tests/fixtures/wire/event/dial-started.json",
    ))
    .expect("json")
}

fn input(name: &'static str, bytes: impl Into<Vec<u8>>) -> Input {
    Input {
        name,
        bytes: bytes.into(),
    }
}

#[track_caller]
fn check(case: Case) {
    let dir = tempfile::tempdir().expect("temp dir");
    for i in &case.inputs {
        std::fs::write(dir.path().join(i.name), &i.bytes).expect("write input");
    }
    let scratch = dir.path().to_str().expect("UTF-8 temp dir");
    let args: Vec<String> = case
        .args
        .iter()
        .map(|a| a.replace("{dir}", scratch))
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_diagwire"))
        .arg("validate")
        .args(&args)
        .current_dir(repo())
        .output()
        .expect("run diagwire");
    let stdout = String::from_utf8_lossy(&out.stdout).replace(scratch, "{dir}");
    let all = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)).replace(scratch, "{dir}");
    assert_eq!(out.status.code(), Some(case.exit), "{all}");
    let raw = |c: char| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c);
    assert!(
        !all.chars().any(raw),
        "a raw control character in:\n{all:?}"
    );
    let mut rest = all.as_str();
    for want in case.prints {
        let at = rest
            .find(want)
            .unwrap_or_else(|| panic!("`{want}` not printed (in this order) in:\n{all}"));
        rest = &rest[at + want.len()..];
    }
    assert_eq!(stdout.lines().last(), Some(case.totals), "{all}");
}

macro_rules! cases {
    ($($name:ident: $case:expr;)*) => {
        $(#[test] fn $name() { check($case) })*
    };
}

cases! {
    valid_record_files_exit_zero_with_one_line_per_path: Case {
        inputs: vec![],
        args: &["examples/records/boot.json", "examples/records/events-000001.json",
            "examples/records/snapshot-000001.json", "examples/records/MANIFEST.json",
            "examples/records/finalize.json"],
        exit: 0,
        prints: &["examples/records/boot.json: 1 file(s), 1 record(s): 1 valid, 0 invalid, 0 problem(s)"],
        totals: "5 path(s), 5 file(s), 13 record(s): 13 valid, 0 invalid, 0 problem(s)",
    };

    an_invalid_record_is_located_by_file_record_pointer_and_text_position: Case {
        inputs: vec![],
        args: &["--kind", "event", "compat-tests/fixtures/wire/event/invalid/wall-ms-null.json"],
        exit: 1,
        prints: &["compat-tests/fixtures/wire/event/invalid/wall-ms-null.json:0 /wall_ms (line "],
        totals: "1 path(s), 1 file(s), 1 record(s): 0 valid, 1 invalid, 1 problem(s)",
    };

    a_bad_record_does_not_hide_the_good_ones_around_it: Case {
        inputs: vec![input("events-000007.json", {
            let good = dial_started();
            let mut bad = good.clone();
            bad["attempt"] = serde_json::json!("one");
            serde_json::json!([good, bad, good]).to_string()
        })],
        args: &["{dir}/events-000007.json"],
        exit: 1,
        prints: &["{dir}/events-000007.json:1 /attempt (line 1, column ", "\"one\" is not of type \"integer\""],
        totals: "1 path(s), 1 file(s), 3 record(s): 2 valid, 1 invalid, 1 problem(s)",
    };

    json_lines_are_not_an_events_file: Case {
        inputs: vec![input("stream.jsonl", {
            let line = dial_started().to_string();
            format!("{line}\n{line}\n")
        })],
        args: &["--kind", "event_batch", "{dir}/stream.jsonl"],
        exit: 1,
        prints: &["{dir}/stream.jsonl (line 1, column 1): an events file holds a JSON array of event records, not an object"],
        totals: "1 path(s), 1 file(s), 0 record(s): 0 valid, 0 invalid, 1 unreadable file(s), 1 problem(s)",
    };

    a_second_value_after_a_single_record_is_named: Case {
        inputs: vec![input("stream.jsonl", {
            let line = dial_started().to_string();
            format!("{line}\n{line}\n")
        })],
        args: &["--kind", "event", "{dir}/stream.jsonl"],
        exit: 1,
        prints: &["{dir}/stream.jsonl (line 2, column 1): a second JSON value after the end of the record"],
        totals: "1 path(s), 1 file(s), 1 record(s): 1 valid, 0 invalid, 1 unreadable file(s), 1 problem(s)",
    };

    a_boot_file_holding_an_array_is_the_wrong_shape: Case {
        inputs: vec![input("boot.json", "[]")],
        args: &["{dir}/boot.json"],
        exit: 1,
        prints: &["{dir}/boot.json (line 1, column 1): a boot file holds one boot record (a JSON object), not an array"],
        totals: "1 path(s), 1 file(s), 0 record(s): 0 valid, 0 invalid, 1 unreadable file(s), 1 problem(s)",
    };

    invalid_utf8_is_located_at_its_byte: Case {
        inputs: vec![input("boot.json", b"{\"role\": \"\xff\"}".to_vec())],
        args: &["{dir}/boot.json"],
        exit: 1,
        prints: &["{dir}/boot.json:0 (line 1, column 11): not UTF-8"],
        totals: "1 path(s), 1 file(s), 1 record(s): 0 valid, 1 invalid, 1 problem(s)",
    };

    a_duplicate_key_is_reported_at_its_pointer: Case {
        inputs: vec![input("events-000009.json", {
            let text = dial_started().to_string().replacen("\"attempt\":", "\"attempt\":9,\"attempt\":", 1);
            format!("[{text}]")
        })],
        args: &["{dir}/events-000009.json"],
        exit: 1,
        prints: &["{dir}/events-000009.json:0 /attempt (line 1, column ", "the key `attempt` appears twice in one object"],
        totals: "1 path(s), 1 file(s), 1 record(s): 0 valid, 1 invalid, 1 problem(s)",
    };

    json_nested_too_deep_is_a_located_problem_not_a_crash: Case {
        inputs: vec![input("snapshot-000001.json", format!("{}{}", "{\"a\":".repeat(100_000), "}".repeat(100_000)))],
        args: &["{dir}/snapshot-000001.json"],
        exit: 1,
        prints: &["{dir}/snapshot-000001.json (line 1, column ", "nest deeper than 127 levels"],
        totals: "1 path(s), 1 file(s), 0 record(s): 0 valid, 0 invalid, 1 unreadable file(s), 1 problem(s)",
    };

    control_characters_from_a_file_never_reach_the_terminal_raw: Case {
        inputs: vec![input("boot.json", r#"{"\u001b[31mred\u202e": 1, "\u001b[31mred\u202e": 2}"#)],
        args: &["{dir}/boot.json"],
        exit: 1,
        prints: &["/\\u{1b}[31mred\\u{202e} (line 1, column "],
        totals: "1 path(s), 1 file(s), 1 record(s): 0 valid, 1 invalid, 1 problem(s)",
    };

    json_format_reports_the_same_problems_for_machines: Case {
        inputs: vec![],
        args: &["--format", "json", "--kind", "event", "compat-tests/fixtures/wire/event/invalid/wall-ms-null.json"],
        exit: 1,
        prints: &["\"kind\": \"schema\"", "\"pointer\": \"/wall_ms\"", "\"record\": 0"],
        totals: "}",
    };

    a_file_whose_kind_cannot_be_told_cannot_be_checked_and_exits_two: Case {
        inputs: vec![input("mystery.json", "{}")],
        args: &["{dir}/mystery.json"],
        exit: 2,
        prints: &["{dir}/mystery.json: cannot tell the record kind from the file name", "pass --kind"],
        totals: "1 path(s), 0 file(s), 0 record(s): 0 valid, 0 invalid, 0 problem(s); 1 path(s) could not be checked",
    };

    a_missing_file_cannot_be_checked_and_exits_two: Case {
        inputs: vec![],
        args: &["--kind", "boot", "{dir}/no-such-file.json"],
        exit: 2,
        prints: &["{dir}/no-such-file.json: not found"],
        totals: "1 path(s), 0 file(s), 0 record(s): 0 valid, 0 invalid, 0 problem(s); 1 path(s) could not be checked",
    };

    the_worst_path_decides_the_exit_status: Case {
        inputs: vec![input("boot.json", "[]")],
        args: &["examples/records/boot.json", "{dir}/boot.json", "{dir}/gone/boot.json"],
        exit: 2,
        prints: &["{dir}/boot.json: 1 file(s), 0 record(s)", "{dir}/gone/boot.json: not found"],
        totals: "3 path(s), 2 file(s), 1 record(s): 1 valid, 0 invalid, 1 unreadable file(s), 1 problem(s); 1 path(s) could not be checked",
    };

    the_example_bundle_validates_clean: Case {
        inputs: vec![],
        args: &["examples/bundles/n3-relay-flap"],
        exit: 0,
        prints: &[],
        totals: "1 path(s), 328 file(s), 1196 record(s): 1196 valid, 0 invalid, 0 problem(s)",
    };

    a_file_that_is_not_a_bundle_cannot_be_checked_and_exits_two: Case {
        inputs: vec![input("not-a-bundle.tar.gz", vec![0x1f, 0x8b, 0, 1, 2, 3])],
        args: &["{dir}/not-a-bundle.tar.gz"],
        exit: 2,
        prints: &["{dir}/not-a-bundle.tar.gz: "],
        totals: "1 path(s), 0 file(s), 0 record(s): 0 valid, 0 invalid, 0 problem(s); 1 path(s) could not be checked",
    };
}

/// The example bundle's archive cut inside one file: the files before the cut are checked, the
/// damage is located inside the archive, and the files after it are missing from the manifest's
/// count.
#[test]
fn a_truncated_bundle_archive_reports_where_it_breaks_and_exits_one() {
    let cut = archive_cut_inside("n3-relay-flap/stage-0/snapshots/snapshot-000014.json");
    check(Case {
        inputs: vec![input("cut.tar.gz", cut)],
        args: &["{dir}/cut.tar.gz"],
        exit: 1,
        prints: &[
            "{dir}/cut.tar.gz!n3-relay-flap/stage-0/snapshots/snapshot-000014.json: corrupt or truncated gzip data",
            "{dir}/cut.tar.gz!n3-relay-flap/MANIFEST.json:0 /nodes/2/snapshots: manifest says 18 snapshots, found 14 snapshot files",
            "{dir}/cut.tar.gz!n3-relay-flap/MANIFEST.json:0 /nodes/3/label: node `stage-1` is listed but its directory is missing",
        ],
        totals: "1 path(s), 186 file(s), 614 record(s): 614 valid, 0 invalid, 10 problem(s)",
    })
}

/// The example bundle as a `.tar.gz` whose gzip stream ends halfway through the data of the member
/// `member`: the tar is cut there and compressed without the stream's end, so where the archive
/// breaks does not depend on how the compressor happened to lay out its blocks.
fn archive_cut_inside(member: &str) -> Vec<u8> {
    use std::io::{Read, Write};
    let (bundle, _) = diagwire::bundle::read::read_all(
        &repo().join("examples/bundles/n3-relay-flap"),
        Default::default(),
    )
    .expect("read example");
    let mut gz = Vec::new();
    diagwire::bundle::output::write_tar_gz(&bundle, &mut gz).expect("tar.gz");
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut tar)
        .expect("inflate");
    let mut archive = tar::Archive::new(&tar[..]);
    let end = archive
        .entries()
        .expect("entries")
        .map(|entry| entry.expect("entry"))
        .find(|entry| entry.path().expect("path").to_str() == Some(member))
        .map(|entry| entry.raw_file_position() + entry.size() / 2)
        .unwrap_or_else(|| panic!("{member} is not in the example bundle's archive"));
    let end = usize::try_from(end).expect("offset");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&tar[..end]).expect("deflate");
    encoder.flush().expect("flush");
    encoder.get_ref().clone()
}
