//! Every command that prints ends quietly when the reader of its standard output goes away, as
//! `cat` does: killed by SIGPIPE, with no panic message. One case per printing command (and per
//! output of one that has several), each run as the real binary with its standard output a pipe
//! of one page that the test closes after reading 10 bytes. Each case prints far more than a page,
//! so it is still writing when the reader goes away; a case that finished writing before would end
//! with an exit status instead of the signal, and fail.
#![cfg(target_os = "linux")]

use crate::common;

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

/// SIGPIPE's number on Linux.
const SIGPIPE: i32 = 13;

/// The longest a case may take once its reader went away.
const LIMIT: Duration = Duration::from_secs(120);

const EXAMPLE: &str = "n3-relay-flap";

/// One printing command: its arguments, run from the repository's root, in which `EXAMPLE` and
/// `OLDEST` stand for the two example bundles and `work/` for the work folder (see [`work`]).
struct Case {
    name: &'static str,
    args: &'static [&'static str],
}

fn cases() -> Vec<Case> {
    let mut cases = vec![
        Case {
            name: "validate_of_a_bundle_with_many_problems",
            args: &["validate", "work/bad/n3-relay-flap"],
        },
        Case {
            name: "summary_in_markdown",
            args: &["summary", "EXAMPLE"],
        },
        Case {
            name: "summary_in_json",
            args: &["summary", "EXAMPLE", "--format", "json"],
        },
        Case {
            name: "summary_in_html",
            args: &["summary", "EXAMPLE", "--format", "html"],
        },
        Case {
            name: "check_of_a_bundle_with_violations",
            args: &["check", "work/reversed/n3-relay-flap"],
        },
        Case {
            name: "check_with_coverage",
            args: &["check", "EXAMPLE", "--coverage"],
        },
        Case {
            name: "check_in_json",
            args: &["check", "EXAMPLE", "--format", "json"],
        },
        Case {
            name: "check_with_coverage_in_json",
            args: &["check", "EXAMPLE", "--coverage", "--format", "json"],
        },
        Case {
            name: "parity",
            args: &["parity", "OLDEST", "EXAMPLE"],
        },
        Case {
            name: "compare",
            args: &["compare", "work/bad/n3-relay-flap", "EXAMPLE"],
        },
        Case {
            name: "diff_of_two_releases",
            args: &["diff", "1.0.0", "current"],
        },
        Case {
            name: "review_catalog",
            args: &["review", "--catalog"],
        },
        Case {
            name: "changelog_since_the_first_release",
            args: &["changelog", "--since", "1.0.0", "--date", "2026-01-01"],
        },
        Case {
            name: "output_schema",
            args: &["output-schema", "summary"],
        },
    ];
    if cfg!(feature = "fleet") {
        cases.extend([
            Case {
                name: "export_of_many_bundles",
                args: &["export", "MANY_SMALL", "--to", "work/exported"],
            },
            Case {
                name: "query_in_json",
                args: &[
                    "query",
                    "work/dataset",
                    "SELECT * FROM range(200000)",
                    "--format",
                    "json",
                ],
            },
            Case {
                name: "query_as_a_table",
                args: &["query", "work/dataset", "SELECT * FROM range(200000)"],
            },
            Case {
                name: "fleet_report",
                args: &["fleet", "work/dataset", "--format", "html"],
            },
        ]);
    }
    cases
}

/// The work folder: `bad/<run>` (the example with every events file `[0]`: a problem per file),
/// `reversed/<run>` (the example with the records of each events file in reverse order: sequence
/// violations), `small/<run>` (the example's manifest and boot records only, quick to export) and,
/// with the feature `fleet`, `dataset/` (the example exported).
fn work() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    let example = common::repo().join("examples/bundles").join(EXAMPLE);
    for copy in ["bad", "reversed", "small"] {
        common::copy_tree(&example, &root.join(copy).join(EXAMPLE));
    }
    for (copy, events) in [("bad", "[0]"), ("reversed", "")] {
        for file in events_files(&root.join(copy).join(EXAMPLE)) {
            let text = if events.is_empty() {
                let mut records: Vec<Value> =
                    serde_json::from_slice(&fs::read(&file).expect("read")).expect("JSON");
                records.reverse();
                serde_json::to_string_pretty(&records).expect("JSON")
            } else {
                events.to_owned()
            };
            fs::write(&file, text).expect("write");
        }
    }
    for node in fs::read_dir(root.join("small").join(EXAMPLE)).expect("read dir") {
        let node = node.expect("entry").path();
        for dir in ["events", "snapshots"] {
            if node.join(dir).is_dir() {
                fs::remove_dir_all(node.join(dir)).expect("remove");
            }
        }
    }
    if cfg!(feature = "fleet") {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_diagwire"))
            .args(["export", &example.display().to_string(), "--to", "dataset"])
            .current_dir(root)
            .output()
            .expect("run diagwire");
        assert!(out.status.success(), "{}", common::text(&out.stderr));
    }
    dir
}

fn events_files(run: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for node in fs::read_dir(run).expect("read dir") {
        let events = node.expect("entry").path().join("events");
        if events.is_dir() {
            for file in fs::read_dir(events).expect("read dir") {
                files.push(file.expect("entry").path());
            }
        }
    }
    files
}

fn args_of(case: &Case, root: &Path) -> Vec<String> {
    let bundles = common::repo().join("examples/bundles");
    let mut args = Vec::new();
    for a in case.args {
        match *a {
            "EXAMPLE" => args.push(bundles.join(EXAMPLE).display().to_string()),
            "OLDEST" => args.push(bundles.join("n3-relay-flap-oldest").display().to_string()),
            // Each bundle is a line of the output.
            "MANY_SMALL" => {
                args.extend((0..80).map(|_| root.join("small").join(EXAMPLE).display().to_string()))
            }
            a => match a.strip_prefix("work/") {
                Some(inside) => args.push(root.join(inside).display().to_string()),
                None => args.push(a.to_owned()),
            },
        }
    }
    args
}

/// The case ends by SIGPIPE, with no panic message.
fn check(root: &Path, case: &Case) -> Result<(), String> {
    let ended = common::run_into_closed_pipe(&common::repo(), &args_of(case, root), LIMIT)
        .map_err(|e| format!("{}: {e}", case.name))?;
    let mut failures = Vec::new();
    if ended.status.signal() != Some(SIGPIPE) {
        failures.push(format!("ended with {}, not by SIGPIPE", ended.status));
    }
    if ended.stderr.contains("panicked") || ended.stderr.contains("Broken pipe") {
        failures.push("says it panicked or names the broken pipe".to_owned());
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}\n--- standard error:\n{}",
            case.name,
            failures.join("; "),
            ended.stderr
        ))
    }
}

#[test]
fn every_printing_command_ends_quietly_when_its_reader_goes_away() {
    let work = work();
    let failures: Vec<String> = cases()
        .iter()
        .filter_map(|c| check(work.path(), c).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
