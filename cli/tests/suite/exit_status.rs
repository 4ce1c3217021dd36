//! One exit-status rule for every command: 0 nothing wrong, 1 something found (problems,
//! violations, differences, items not mapped), 2 could not run (bad arguments, unreadable input,
//! I/O errors) — and a command that could not run says why on standard error after the one
//! prefix `error: `. One row per command and outcome (`docs/cli.md` has the table).

use crate::common;

use std::path::{Path, PathBuf};

const EXAMPLE: &str = "examples/bundles/n3-relay-flap";
const OLDEST: &str = "examples/bundles/n3-relay-flap-oldest";
const SIM: &str = "compat-tests/fixtures/sim-prod-shape/n3-basic";

/// What a row expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Exit 0.
    NothingWrong,
    /// Exit 1.
    Found,
    /// Exit 2, standard error begins with `error: `.
    CouldNotRun,
}

/// The places a row's arguments name.
struct Places {
    /// A copy of the example bundle with a record that does not parse.
    broken: PathBuf,
    /// A folder to write into, fresh per row.
    out: PathBuf,
    /// A path that does not exist.
    missing: PathBuf,
    /// A fleet dataset of the example bundle.
    dataset: PathBuf,
}

struct Row {
    command: &'static str,
    outcome: Outcome,
    args: fn(&Places) -> Vec<String>,
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn strs(a: &[&str]) -> Vec<String> {
    a.iter().map(|x| x.to_string()).collect()
}

fn rows() -> Vec<Row> {
    use Outcome::*;
    vec![
        Row {
            command: "validate",
            outcome: NothingWrong,
            args: |_| strs(&["validate", EXAMPLE]),
        },
        Row {
            command: "validate",
            outcome: Found,
            args: |p| vec!["validate".into(), s(&p.broken)],
        },
        Row {
            command: "validate",
            outcome: CouldNotRun,
            args: |_| strs(&["validate", "--kind", "nosuch", EXAMPLE]),
        },
        Row {
            command: "summary",
            outcome: NothingWrong,
            args: |_| strs(&["summary", EXAMPLE]),
        },
        Row {
            command: "summary",
            outcome: Found,
            args: |p| vec!["summary".into(), s(&p.broken)],
        },
        Row {
            command: "summary",
            outcome: CouldNotRun,
            args: |p| vec!["summary".into(), s(&p.missing)],
        },
        Row {
            command: "compare",
            outcome: NothingWrong,
            args: |_| strs(&["compare", EXAMPLE, EXAMPLE]),
        },
        Row {
            command: "compare",
            outcome: Found,
            args: |_| strs(&["compare", EXAMPLE, OLDEST]),
        },
        Row {
            command: "compare",
            outcome: CouldNotRun,
            args: |p| vec!["compare".into(), EXAMPLE.into(), s(&p.missing)],
        },
        Row {
            command: "check",
            outcome: NothingWrong,
            args: |_| strs(&["check", EXAMPLE]),
        },
        Row {
            command: "check",
            outcome: Found,
            args: |p| vec!["check".into(), s(&p.broken)],
        },
        Row {
            command: "check",
            outcome: CouldNotRun,
            args: |p| vec!["check".into(), s(&p.missing)],
        },
        Row {
            command: "parity",
            outcome: NothingWrong,
            args: |_| strs(&["parity", EXAMPLE, EXAMPLE]),
        },
        Row {
            command: "parity",
            outcome: CouldNotRun,
            args: |p| vec!["parity".into(), EXAMPLE.into(), s(&p.missing)],
        },
        Row {
            command: "convert",
            outcome: NothingWrong,
            args: |p| {
                vec![
                    "convert".into(),
                    EXAMPLE.into(),
                    "--to".into(),
                    "pb".into(),
                    s(&p.out),
                ]
            },
        },
        Row {
            command: "convert",
            outcome: Found,
            args: |p| {
                vec![
                    "convert".into(),
                    s(&p.broken),
                    "--to".into(),
                    "pb".into(),
                    s(&p.out),
                ]
            },
        },
        Row {
            command: "convert",
            outcome: CouldNotRun,
            args: |p| {
                vec![
                    "convert".into(),
                    s(&p.missing),
                    "--to".into(),
                    "pb".into(),
                    s(&p.out),
                ]
            },
        },
        Row {
            command: "upgrade",
            outcome: Found,
            args: |p| vec!["upgrade".into(), SIM.into(), s(&p.out)],
        },
        Row {
            command: "upgrade",
            outcome: CouldNotRun,
            args: |p| vec!["upgrade".into(), s(&p.missing), s(&p.out)],
        },
        Row {
            command: "export",
            outcome: NothingWrong,
            args: |p| {
                vec![
                    "export".into(),
                    EXAMPLE.into(),
                    "--to".into(),
                    s(&p.out.join("ds")),
                ]
            },
        },
        Row {
            command: "export",
            outcome: Found,
            args: |p| {
                vec![
                    "export".into(),
                    s(&p.broken),
                    "--to".into(),
                    s(&p.out.join("ds")),
                ]
            },
        },
        Row {
            command: "export",
            outcome: CouldNotRun,
            args: |p| {
                vec![
                    "export".into(),
                    s(&p.missing),
                    "--to".into(),
                    s(&p.out.join("ds")),
                ]
            },
        },
        Row {
            command: "query",
            outcome: NothingWrong,
            args: |p| vec!["query".into(), s(&p.dataset), "SELECT 1".into()],
        },
        Row {
            command: "query",
            outcome: CouldNotRun,
            args: |p| vec!["query".into(), s(&p.missing), "SELECT 1".into()],
        },
        Row {
            command: "fleet",
            outcome: NothingWrong,
            args: |p| vec!["fleet".into(), s(&p.dataset)],
        },
        Row {
            command: "fleet",
            outcome: CouldNotRun,
            args: |p| vec!["fleet".into(), s(&p.missing)],
        },
        Row {
            command: "compact",
            outcome: CouldNotRun,
            args: |p| vec!["compact".into(), s(&p.missing)],
        },
        Row {
            command: "review --catalog",
            outcome: NothingWrong,
            args: |_| strs(&["review", "--catalog"]),
        },
        Row {
            command: "diff",
            outcome: CouldNotRun,
            args: |_| strs(&["diff", "9.9.9", "current"]),
        },
        Row {
            command: "output-schema",
            outcome: NothingWrong,
            args: |_| strs(&["output-schema", "--check", "schemas/tools"]),
        },
        Row {
            command: "output-schema",
            outcome: CouldNotRun,
            args: |_| strs(&["output-schema", "nosuch"]),
        },
        Row {
            command: "bad arguments",
            outcome: CouldNotRun,
            args: |_| strs(&["summary"]),
        },
        Row {
            command: "replay",
            outcome: Found,
            // Nothing listens on port 1: every post is left pending, and said so.
            args: |_| {
                strs(&[
                    "replay",
                    EXAMPLE,
                    "--collector",
                    "http://127.0.0.1:1",
                    "--timeout",
                    "1s",
                ])
            },
        },
        Row {
            command: "replay",
            outcome: CouldNotRun,
            args: |p| {
                vec![
                    "replay".into(),
                    s(&p.missing),
                    "--collector".into(),
                    "http://127.0.0.1:1".into(),
                ]
            },
        },
    ]
}

fn check_row(row: &Row, places: &Places) {
    let args = (row.args)(places);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = common::diagwire(&refs);
    let err = common::text(&out.stderr);
    let code = match row.outcome {
        Outcome::NothingWrong => 0,
        Outcome::Found => 1,
        Outcome::CouldNotRun => 2,
    };
    assert_eq!(
        out.status.code(),
        Some(code),
        "{} ({:?}): {args:?}\n{err}",
        row.command,
        row.outcome
    );
    if row.outcome == Outcome::CouldNotRun {
        assert!(
            err.starts_with("error: "),
            "{}: {args:?}: the error prefix: {err}",
            row.command
        );
    } else {
        assert!(
            !err.lines().any(|l| l.starts_with("error: ")),
            "{}: {args:?}: an error without status 2: {err}",
            row.command
        );
    }
}

#[test]
fn every_command_exits_0_1_or_2_and_says_why_after_one_prefix() {
    let dir = tempfile::tempdir().expect("temp dir");
    let broken = dir.path().join("broken");
    common::copy_tree(&common::repo().join(EXAMPLE), &broken);
    std::fs::write(
        broken.join("stage-0/snapshots/snapshot-000003.json"),
        "{\"identity\": 7",
    )
    .expect("write");
    let dataset = dir.path().join("dataset");
    let made = common::diagwire(&["export", EXAMPLE, "--to", &s(&dataset)]);
    assert_eq!(
        made.status.code(),
        Some(0),
        "{}",
        common::text(&made.stderr)
    );
    for (i, row) in rows().iter().enumerate() {
        let places = Places {
            broken: broken.clone(),
            out: dir.path().join(format!("out-{i}")),
            missing: dir.path().join("no-such-path"),
            dataset: dataset.clone(),
        };
        std::fs::create_dir_all(&places.out).expect("mkdir");
        check_row(row, &places);
    }
}
