//! One verdict of a bundle: what `validate` reports of a broken bundle, `summary`'s Validation
//! section and `check`'s `bundle.readable` report too — the same problems, in the same order, the
//! same count — for every kind of problem, from the bundle's directory and from its `.tar.gz`.
//! A run directory renamed since is a note of `validate`, and a problem of none of the three.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

const RUN: &str = "n3-relay-flap";

/// One broken bundle: how it is made from a copy of the example, and what its problems say.
/// Each is read as a directory named otherwise than its run (a note of `validate`, never a
/// problem) and as a `.tar.gz` whose run directory has the run's name.
struct Case {
    name: &'static str,
    /// Breaks the copy at `run` (the run directory).
    breaks: fn(&Path),
    /// A part of the message of each problem expected, in `validate`'s order.
    problems: &'static [&'static str],
}

const QUARANTINED_NODE: &str = "3305bb244a8a2fb7f98114dc9d59e9754c677694c4118443d9bd49cfcdd2bb95";

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "a record that does not parse",
            breaks: |run| {
                write(
                    run,
                    "stage-0/snapshots/snapshot-000003.json",
                    "{\"identity\": 7",
                )
            },
            problems: &["not JSON"],
        },
        Case {
            name: "a record its schema refuses",
            breaks: |run| {
                edit_json(run, "stage-1/boot.json", |v| {
                    v["node_id_hex"] = Value::from(7);
                })
            },
            problems: &["7 is not of type \"string\""],
        },
        Case {
            name: "a file outside the layout",
            breaks: |run| write(run, "stage-0/notes.txt", "written by hand"),
            problems: &["not part of the bundle layout"],
        },
        Case {
            name: "a numbered file spelled otherwise",
            breaks: |run| {
                fs::rename(
                    run.join("relay/snapshots/snapshot-000012.json"),
                    run.join("relay/snapshots/snapshot-12.json"),
                )
                .expect("rename")
            },
            problems: &[
                "the layout spells this name `snapshot-000012.json`",
                "manifest says 12 snapshots, found 11",
            ],
        },
        Case {
            name: "a node directory the manifest does not list",
            breaks: |run| {
                edit_json(run, "MANIFEST.json", |v| {
                    let nodes = v["nodes"].as_array_mut().expect("nodes");
                    nodes.retain(|n| n["label"] != "stage-2");
                })
            },
            problems: &["node directory `stage-2` is not listed in the manifest"],
        },
        Case {
            name: "a node the manifest lists without its directory",
            breaks: |run| fs::remove_dir_all(run.join("stage-2")).expect("remove"),
            problems: &[
                "node `stage-2` is listed but its directory is missing",
                "`stage-2/boot.json` is missing",
                "found 0 events files",
                "found 0 snapshot files",
            ],
        },
        Case {
            name: "a gap in a node's numbered files",
            breaks: |run| {
                fs::remove_file(run.join("stage-1/events/events-000002.json")).expect("remove")
            },
            problems: &[
                "event batches",
                "missing: `stage-1/events/events-000002.json`",
            ],
        },
        Case {
            name: "a boot record of another run",
            breaks: |run| {
                edit_json(run, "relay/boot.json", |v| {
                    v["run_id"] = Value::from("another-run");
                })
            },
            problems: &["the boot record says run `another-run`"],
        },
        Case {
            name: "a body the collector quarantined",
            breaks: |run| {
                let at = format!("@quarantine/{QUARANTINED_NODE}");
                write(run, &format!("{at}/000001-events.json"), "[{\"oops\": 1}]");
                write(
                    run,
                    &format!("{at}/000001-events.why.json"),
                    r#"{"route": "events", "problems": [{"pointer": "/0", "message": "not an event record"}]}"#,
                );
            },
            problems: &[
                "quarantined at ingest: posted to /diag/events: at /0: not an event record",
            ],
        },
        Case {
            name: "a renamed run directory (every directory here) is a note, not a problem",
            breaks: |_| {},
            problems: &[],
        },
    ]
}

fn write(run: &Path, rel: &str, text: &str) {
    let path = run.join(rel);
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

fn edit_json(run: &Path, rel: &str, edit: impl FnOnce(&mut Value)) {
    let path = run.join(rel);
    let mut v: Value = serde_json::from_slice(&fs::read(&path).expect("read")).expect("JSON");
    edit(&mut v);
    fs::write(&path, serde_json::to_vec_pretty(&v).expect("JSON")).expect("write");
}

/// The case's bundle as a directory (named otherwise than its run, as a download is) and as a
/// `.tar.gz` of it.
fn make(case: &Case, dir: &Path) -> [PathBuf; 2] {
    let run = dir.join("downloaded");
    common::copy_tree(&common::repo().join("examples/bundles").join(RUN), &run);
    (case.breaks)(&run);
    let archive = dir.join("downloaded.tar.gz");
    let file = fs::File::create(&archive).expect("create");
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
        file,
        flate2::Compression::fast(),
    ));
    tar.append_dir_all(RUN, &run).expect("tar");
    tar.into_inner().expect("tar").finish().expect("gzip");
    [run, archive]
}

/// One problem as every output can say it: kind, file, record, pointer, message.
type Said = (String, String, Option<u64>, String, String);

fn json_of(args: &[&str], expected_status: i32, case: &str) -> Value {
    let out = common::diagwire(args);
    assert_eq!(
        out.status.code(),
        Some(expected_status),
        "{case}: {args:?}\n{}",
        common::text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{case}: {args:?}: {e}"))
}

fn said(p: &Value, message: &str) -> Said {
    (
        p["kind"].as_str().unwrap_or_default().to_owned(),
        p["file"].as_str().expect("file").to_owned(),
        p["record"].as_u64(),
        p["pointer"].as_str().expect("pointer").to_owned(),
        message.to_owned(),
    )
}

/// What the three commands report of `bundle`: `validate`'s problems, count and notes, then the
/// summary's and `bundle.readable`'s problems and counts.
fn check_one_verdict(case: &Case, bundle: &Path) {
    let shown = bundle.to_str().expect("UTF-8 path");
    let status = if case.problems.is_empty() { 0 } else { 1 };
    let label = format!("{} ({shown})", case.name);

    let validated = json_of(&["validate", shown, "--format", "json"], status, &label);
    let path = &validated["paths"][0];
    let problems: Vec<Said> = path["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|p| said(p, p["message"].as_str().expect("message")))
        .collect();
    let count = path["problem_count"].as_u64().expect("count");
    assert_eq!(count, problems.len() as u64, "{label}: {problems:#?}");
    assert_eq!(
        problems.len(),
        case.problems.len(),
        "{label}: {problems:#?}"
    );
    for ((.., message), part) in problems.iter().zip(case.problems) {
        assert!(
            message.contains(part),
            "{label}: `{message}` lacks `{part}`"
        );
    }
    let notes: Vec<&str> = path["notes"]
        .as_array()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter_map(|n| n["message"].as_str())
        .collect();
    // The directory is named otherwise than its run; the archive holds the run's own name.
    match bundle.is_dir() {
        true => assert!(
            notes.iter().any(|n| n.contains("a renamed bundle")),
            "{label}: {notes:?}"
        ),
        false => assert!(notes.is_empty(), "{label}: {notes:?}"),
    }

    let summary = json_of(&["summary", shown, "--format", "json"], status, &label);
    let validation = &summary["validation"];
    assert_eq!(validation["problems"].as_u64(), Some(count), "{label}");
    let listed: Vec<Said> = validation["first"]
        .as_array()
        .expect("first")
        .iter()
        .map(|p| said(p, p["message"].as_str().expect("message")))
        .collect();
    assert_eq!(listed, problems, "{label}: summary");

    let checked = json_of(&["check", shown, "--format", "json"], status, &label);
    let readable = checked["check"]["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .find(|r| r["id"] == "bundle.readable")
        .expect("bundle.readable")
        .clone();
    assert_eq!(readable["findings_total"].as_u64(), Some(count), "{label}");
    let findings: Vec<Said> = readable["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            let message = f["message"].as_str().expect("message");
            let (said_message, kind) = message
                .rsplit_once(" (")
                .and_then(|(m, rest)| Some((m, rest.split_once(')')?.0)))
                .expect("`message (kind)…`");
            let mut s = said(&f["location"], said_message);
            s.0 = kind.to_owned();
            s
        })
        .collect();
    assert_eq!(findings, problems, "{label}: check");
}

#[test]
fn validate_summary_and_check_report_one_verdict_of_every_broken_bundle() {
    for case in cases() {
        let dir = tempfile::tempdir().expect("temp dir");
        for bundle in make(&case, dir.path()) {
            check_one_verdict(&case, &bundle);
        }
    }
}
