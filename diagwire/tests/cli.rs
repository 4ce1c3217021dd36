//! The `diagwire validate` command: output lines, summary, formats and exit status.
#![cfg(feature = "cli")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn diagwire(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_diagwire"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run diagwire")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn temp_file(name: &str, contents: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("diagwire-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("write temp file");
    path
}

#[test]
fn valid_example_records_exit_zero_with_a_summary() {
    let o = diagwire(&[
        "validate",
        "examples/records/boot.json",
        "examples/records/events-000001.json",
        "examples/records/snapshot-000001.json",
        "examples/records/MANIFEST.json",
        "examples/records/finalize.json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).ends_with("5 path(s), 13 record(s): 13 valid, 0 invalid, 0 problem(s)\n"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn an_invalid_record_is_reported_with_file_index_and_pointer_and_exits_one() {
    let o = diagwire(&[
        "validate",
        "compat-tests/fixtures/wire/event/invalid/wall-ms-null.json",
        "--kind",
        "event",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.starts_with("compat-tests/fixtures/wire/event/invalid/wall-ms-null.json:0 /wall_ms: null is not of type \"integer\"\n"),
        "{out}"
    );
}

#[test]
fn a_bad_record_does_not_hide_the_good_ones_around_it() {
    let good =
        std::fs::read_to_string(repo().join("compat-tests/fixtures/wire/event/dial-started.json"))
            .expect("fixture");
    let good: serde_json::Value = serde_json::from_str(&good).expect("json");
    let mut bad = good.clone();
    bad["attempt"] = serde_json::json!("one");
    let batch = serde_json::json!([good, bad, good]);
    let path = temp_file("events-000007.json", &batch.to_string());
    let o = diagwire(&["validate", path.to_str().expect("utf-8 path")]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.contains(":1 /attempt: \"one\" is not of type \"integer\""),
        "{out}"
    );
    assert!(
        out.ends_with("1 path(s), 3 record(s): 2 valid, 1 invalid, 1 problem(s)\n"),
        "{out}"
    );
}

#[test]
fn json_lines_files_are_checked_line_by_line() {
    let good =
        std::fs::read_to_string(repo().join("compat-tests/fixtures/wire/event/dial-started.json"))
            .expect("fixture");
    let line: serde_json::Value = serde_json::from_str(&good).expect("json");
    let text = format!("{line}\nnot json\n{line}\n");
    let path = temp_file("stream.jsonl", &text);
    let o = diagwire(&[
        "validate",
        "--kind",
        "event",
        path.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains(":1 : not JSON"), "{out}");
    assert!(
        out.ends_with("3 record(s): 2 valid, 1 invalid, 1 problem(s)\n"),
        "{out}"
    );
}

#[test]
fn json_format_reports_the_same_problems_for_machines() {
    let o = diagwire(&[
        "validate",
        "--format",
        "json",
        "--kind",
        "event",
        "compat-tests/fixtures/wire/event/invalid/wall-ms-null.json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json output");
    assert_eq!(v["records"], 1);
    assert_eq!(v["invalid"], 1);
    assert_eq!(v["problems"][0]["pointer"], "/wall_ms");
    assert_eq!(v["problems"][0]["record"], 0);
}

#[test]
fn an_unknown_file_kind_cannot_run_and_exits_two() {
    let path = temp_file("mystery.json", "{}");
    let o = diagwire(&["validate", path.to_str().expect("utf-8 path")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("pass --kind"));
}

#[test]
fn a_missing_file_cannot_run_and_exits_two() {
    let o = diagwire(&["validate", "--kind", "boot", "no/such/file.json"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn invalid_utf8_is_a_located_problem_not_a_crash() {
    let dir = std::env::temp_dir().join(format!("diagwire-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("boot.json");
    std::fs::write(&path, b"{\"role\": \"\xff\"}").expect("write");
    let o = diagwire(&["validate", path.to_str().expect("utf-8 path")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("boot.json: not UTF-8: invalid byte at offset 10"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_duplicate_key_is_reported_at_its_pointer() {
    let good =
        std::fs::read_to_string(repo().join("compat-tests/fixtures/wire/event/dial-started.json"))
            .expect("fixture");
    let text = good.replacen("\"attempt\":", "\"attempt\": 9, \"attempt\":", 1);
    let path = temp_file("events-000009.json", &text);
    let o = diagwire(&["validate", path.to_str().expect("utf-8 path")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains(":0 /attempt: duplicate key `attempt`\n"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn deeply_nested_json_is_a_located_problem_not_a_crash() {
    let text = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let path = temp_file("snapshot-000001.json", &text);
    let o = diagwire(&["validate", path.to_str().expect("utf-8 path")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("snapshot-000001.json:0 : not JSON: recursion limit exceeded"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn the_example_bundle_validates_clean() {
    let o = diagwire(&["validate", "examples/bundles/n3-relay-flap"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).ends_with("1 path(s), 911 record(s): 911 valid, 0 invalid, 0 problem(s)\n"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn example_writes_a_bundle_that_validates_as_a_directory() {
    let out = std::env::temp_dir().join(format!("diagwire-cli-example-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = diagwire(&["example", out.to_str().expect("utf-8 path")]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let run = out.join("n3-relay-flap");
    let o = diagwire(&["validate", run.to_str().expect("utf-8 path")]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn a_simulator_prod_shape_directory_upgrades_and_then_validates() {
    let out = std::env::temp_dir().join(format!("diagwire-cli-upgrade-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = diagwire(&[
        "upgrade",
        "compat-tests/fixtures/sim-prod-shape/n3-basic",
        out.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let printed = stdout(&o);
    assert!(
        printed.contains("not mapped: sim/links_applied.json"),
        "{printed}"
    );
    let run = std::fs::read_dir(&out)
        .expect("out")
        .next()
        .expect("run dir")
        .expect("entry")
        .path();
    let o = diagwire(&["validate", run.to_str().expect("utf-8 path")]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).contains(" 0 invalid, 0 problem(s)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_truncated_bundle_archive_reports_its_problems_and_exits_one() {
    let src = repo().join("examples/bundles/n3-relay-flap");
    let dir = std::env::temp_dir().join(format!("diagwire-cli-trunc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let (bundle, _) =
        diagwire::bundle::read::read_all(&src, Default::default()).expect("read example");
    let mut bytes = Vec::new();
    diagwire::bundle::write::write_tar_gz(&bundle, &mut bytes).expect("tar.gz");
    let path = dir.join("cut.tar.gz");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).expect("write");
    let o = diagwire(&["validate", path.to_str().expect("utf-8 path")]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("cut.tar.gz!"), "{}", stdout(&o));
}

#[test]
fn a_file_that_is_not_a_bundle_cannot_run_and_exits_two() {
    let path = temp_file("not-a-bundle.tar.gz", "");
    std::fs::write(&path, [0x1f, 0x8b, 0, 1, 2, 3]).expect("write");
    let o = diagwire(&["validate", path.to_str().expect("utf-8 path")]);
    assert_eq!(o.status.code(), Some(2));
}
