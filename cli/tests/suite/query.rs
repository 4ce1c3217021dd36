//! `diagwire query DATASET SQL`: only reading statements run — every other kind is refused with
//! exit status 2 and the same sentence, and leaves the dataset's files and the file system as they
//! were; a hostile value (a newline, a control, a C1 control, a bidirectional mark, NUL, a quote, a
//! comma) is printed escaped in each format, so JSON reads back as the exact string, a table or CSV
//! has one line per row and nothing hidden reaches the terminal; a query past its memory limit
//! fails with an error, also under a 2 GiB address-space limit, instead of aborting.

#![cfg(feature = "fleet")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;
use common::{diagwire, repo, text};
use diagwire_runtime::text::is_hidden;
use serde_json::Value;

/// What a refused statement's error says first.
const READ_ONLY: &str =
    "error: diagwire query runs only reading statements (SELECT, WITH, EXPLAIN …): ";

/// A dataset of one example bundle in `DIR/data`, exported with the command.
fn dataset() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let bundle = repo().join("examples/bundles/n3-relay-flap");
    let out = diagwire(&[
        "export",
        &bundle.to_string_lossy(),
        "--to",
        &data.to_string_lossy(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    dir
}

/// Every file under `dir` with its bytes.
fn listing(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn query(data: &Path, sql: &str, extra: &[&str]) -> Output {
    let data = data.to_string_lossy();
    let mut args = vec!["query", &data, sql];
    args.extend_from_slice(extra);
    diagwire(&args)
}

/// A statement `query` must refuse: `{out}` is a folder outside the dataset, `{data}` the dataset.
struct Refused {
    name: &'static str,
    sql: &'static str,
    /// What DataFusion's reason says, after [`READ_ONLY`].
    reason: &'static str,
}

const REFUSED: &[Refused] = &[
    Refused {
        name: "COPY TO a file writes nothing",
        sql: "COPY (SELECT 'owned' AS v) TO '{out}/owned.csv' STORED AS CSV",
        reason: "DML not supported: COPY",
    },
    Refused {
        name: "COPY into a partition of the dataset adds no file",
        sql: "COPY (SELECT * FROM runs) TO '{data}/runs/contract_major=1/date=2001-01-01/part-0000000000000000.parquet' STORED AS PARQUET",
        reason: "DML not supported: COPY",
    },
    Refused {
        name: "EXPLAIN ANALYZE of a COPY runs nothing",
        sql: "EXPLAIN ANALYZE COPY (SELECT 1 AS v) TO '{out}/explained.csv' STORED AS CSV",
        reason: "DML not supported: COPY",
    },
    Refused {
        name: "INSERT INTO a table adds no row",
        sql: "INSERT INTO runs (run_id) VALUES ('forged')",
        reason: "DML not supported: Insert Into",
    },
    Refused {
        name: "DELETE removes no row",
        sql: "DELETE FROM runs",
        reason: "DML not supported: Delete",
    },
    Refused {
        name: "CREATE TABLE",
        sql: "CREATE TABLE t AS SELECT 1 AS v",
        reason: "DDL not supported: CreateMemoryTable",
    },
    Refused {
        name: "CREATE VIEW",
        sql: "CREATE VIEW v AS SELECT 1 AS v",
        reason: "DDL not supported: CreateView",
    },
    Refused {
        name: "CREATE EXTERNAL TABLE reaches no folder",
        sql: "CREATE EXTERNAL TABLE etc STORED AS CSV LOCATION '/etc/'",
        reason: "DDL not supported: CreateExternalTable",
    },
    Refused {
        name: "DROP TABLE",
        sql: "DROP TABLE runs",
        reason: "DDL not supported: DropTable",
    },
    Refused {
        name: "DROP VIEW of a shipped view",
        sql: "DROP VIEW dials",
        reason: "DDL not supported: DropView",
    },
    Refused {
        name: "SET a session option",
        sql: "SET datafusion.execution.batch_size = 1",
        reason: "Statement not supported: SetVariable",
    },
];

/// Runs `case` against a fresh dataset and checks the refusal and that nothing changed.
fn check_refused(case: &Refused) {
    let dir = dataset();
    let data = dir.path().join("data");
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let sql = case
        .sql
        .replace("{out}", &out_dir.to_string_lossy())
        .replace("{data}", &data.to_string_lossy());
    let before = listing(&data);
    let out = query(&data, &sql, &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}: {err}", case.name);
    assert!(
        err.starts_with(READ_ONLY) && err.contains(case.reason),
        "{}: {err}",
        case.name
    );
    assert!(
        out.stdout.is_empty(),
        "{}: {}",
        case.name,
        text(&out.stdout)
    );
    assert!(
        listing(&out_dir).is_empty(),
        "{}: wrote {:?}",
        case.name,
        listing(&out_dir).keys()
    );
    let after = listing(&data);
    assert!(
        before == after,
        "{}: the dataset's files changed: {:?} → {:?}",
        case.name,
        before.keys(),
        after.keys()
    );
}

#[test]
fn every_statement_that_does_not_only_read_is_refused_and_changes_nothing() {
    for case in REFUSED {
        check_refused(case);
    }
}

#[test]
fn reading_statements_and_the_shipped_views_still_run() {
    let dir = dataset();
    let data = dir.path().join("data");
    let cases: &[(&str, &str)] = &[
        ("SELECT COUNT(*) AS n FROM runs", r#"[{"n":1}]"#),
        ("WITH x AS (SELECT 2 AS a) SELECT a FROM x", r#"[{"a":2}]"#),
        (
            "SELECT COUNT(*) > 0 AS some FROM dials",
            r#"[{"some":true}]"#,
        ),
        ("VALUES (3)", r#"[{"column1":3}]"#),
    ];
    for (sql, want) in cases {
        let out = query(&data, sql, &["--format", "json"]);
        assert_eq!(out.status.code(), Some(0), "{sql}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout).trim_end(), *want, "{sql}");
    }
    let out = query(&data, "EXPLAIN SELECT * FROM dials", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("logical_plan"));
}

/// A value a query may return, as an SQL expression and as the string it is.
struct Hostile {
    name: &'static str,
    sql: &'static str,
    value: &'static str,
}

const HOSTILE: &[Hostile] = &[
    Hostile {
        name: "a newline cannot start a forged row",
        sql: "'a\n| forged | row |\nb'",
        value: "a\n| forged | row |\nb",
    },
    Hostile {
        name: "a carriage return",
        sql: "'a\rb'",
        value: "a\rb",
    },
    Hostile {
        name: "ESC starts no terminal sequence",
        sql: "'\u{1b}[31mred\u{1b}[0m'",
        value: "\u{1b}[31mred\u{1b}[0m",
    },
    Hostile {
        name: "the single-character CSI U+009B",
        sql: "'\u{9b}31mred'",
        value: "\u{9b}31mred",
    },
    Hostile {
        name: "a right-to-left override U+202E",
        sql: "'abc\u{202e}fed'",
        value: "abc\u{202e}fed",
    },
    Hostile {
        name: "a left-to-right isolate U+2066",
        sql: "'x\u{2066}y'",
        value: "x\u{2066}y",
    },
    Hostile {
        name: "NUL",
        sql: "CAST(X'610062' AS VARCHAR)",
        value: "a\u{0}b",
    },
    Hostile {
        name: "a double quote",
        sql: "'say \"hi\"'",
        value: "say \"hi\"",
    },
    Hostile {
        name: "a single quote",
        sql: "'it''s'",
        value: "it's",
    },
    Hostile {
        name: "a comma",
        sql: "'a,b'",
        value: "a,b",
    },
];

/// Whether `out` shows nothing hidden: no control or bidirectional character but line ends.
fn shows_nothing_hidden(out: &str) -> bool {
    !out.chars().any(|c| is_hidden(c) && c != '\n')
}

/// Runs `SELECT <case> AS v` in every format and checks what each prints.
fn check_hostile(data: &Path, case: &Hostile) {
    let sql = format!("SELECT {} AS v", case.sql);
    let run = |format: &str| {
        let out = query(data, &sql, &["--format", format]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{} ({format}): {}",
            case.name,
            text(&out.stderr)
        );
        let shown = String::from_utf8(out.stdout).expect("UTF-8");
        assert!(
            shows_nothing_hidden(&shown),
            "{} ({format}): {shown:?}",
            case.name
        );
        shown
    };
    let escaped = diagwire::problem::printable(case.value);

    let json = run("json");
    let rows: Vec<Value> = serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("{}: invalid JSON {json:?}: {e}", case.name));
    assert_eq!(
        rows,
        vec![serde_json::json!({ "v": case.value })],
        "{}",
        case.name
    );

    let table = run("table");
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines.len(),
        5,
        "{}: a header and one row: {table}",
        case.name
    );
    assert!(lines[1].contains(" v "), "{}: {table}", case.name);
    assert!(
        lines[3].contains(escaped.as_ref()),
        "{}: {table}",
        case.name
    );

    let csv = run("csv");
    assert_eq!(
        csv.lines().count(),
        2,
        "{}: a header and one row: {csv:?}",
        case.name
    );
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let records: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    assert_eq!(reader.headers().unwrap().iter().collect::<Vec<_>>(), ["v"]);
    assert_eq!(records.len(), 1, "{}: {csv:?}", case.name);
    assert_eq!(&records[0][0], escaped.as_ref(), "{}: {csv:?}", case.name);
}

#[test]
fn a_hostile_value_is_escaped_in_every_format() {
    let dir = dataset();
    let data = dir.path().join("data");
    for case in HOSTILE {
        check_hostile(&data, case);
    }
}

#[test]
fn a_hostile_column_name_is_escaped_too() {
    let dir = dataset();
    let data = dir.path().join("data");
    let sql = "SELECT 1 AS \"a\nb\u{9b}\"";
    for format in ["table", "csv"] {
        let out = query(&data, sql, &["--format", format]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let shown = text(&out.stdout);
        assert!(shows_nothing_hidden(&shown), "{format}: {shown:?}");
        assert!(shown.contains("a\\u{a}b\\u{9b}"), "{format}: {shown}");
    }
    let out = query(&data, sql, &["--format", "json"]);
    let shown = text(&out.stdout);
    assert!(shows_nothing_hidden(&shown), "{shown:?}");
    let rows: Vec<Value> = serde_json::from_str(&shown).unwrap();
    assert_eq!(rows, vec![serde_json::json!({ "a\nb\u{9b}": 1 })]);
}

/// A query that needs more memory than it may hold.
struct Heavy {
    name: &'static str,
    sql: &'static str,
    memory_limit: &'static str,
    /// What the error says.
    says: &'static str,
}

const HEAVY: &[Heavy] = &[
    Heavy {
        name: "a string of 1.5 GB from repeat()",
        sql: "SELECT length(repeat('x', 1500000000)) AS n",
        memory_limit: "1GiB",
        says: "repeat() would make a result of 3000000000 bytes, more than the query's memory limit of 1073741824 bytes",
    },
    Heavy {
        name: "a repeat() within a limit raised past the address space",
        sql: "SELECT length(repeat('x', 1000000000)) AS n",
        memory_limit: "1500MiB",
        says: "repeat() would make a result of 2000000000 bytes",
    },
    Heavy {
        name: "a padded string of 2 G characters",
        sql: "SELECT length(lpad('x', 2000000000)) AS n",
        memory_limit: "1GiB",
        says: "lpad() would make a result",
    },
    Heavy {
        name: "a replace() that multiplies its input",
        sql: "SELECT length(replace(repeat('x', 100000), 'x', repeat('y', 100000))) AS n",
        memory_limit: "1GiB",
        says: "replace() would make a result",
    },
    Heavy {
        name: "a list of a billion elements from range()",
        sql: "SELECT cardinality(range(1, 1000000000)) AS n",
        memory_limit: "1GiB",
        says: "range() would make a result",
    },
    Heavy {
        name: "an aggregation past the memory pool",
        sql: "SELECT cardinality(array_agg(value)) AS n FROM range(50000000)",
        memory_limit: "32MiB",
        says: "Resources exhausted",
    },
];

/// Runs `case` with at most 2 GiB of address space and checks it fails with its error, not a
/// signal.
fn check_heavy(data: &Path, case: &Heavy) {
    let out = Command::new("bash")
        .arg("-c")
        .arg(r#"ulimit -v 2097152 && exec "$0" query "$1" "$2" --memory-limit "$3""#)
        .arg(env!("CARGO_BIN_EXE_diagwire"))
        .arg(data)
        .arg(case.sql)
        .arg(case.memory_limit)
        .output()
        .expect("run bash");
    let err = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}: {:?} {err}",
        case.name,
        out.status
    );
    assert!(
        err.starts_with("error: ") && err.contains(case.says),
        "{}: {err}",
        case.name
    );
    assert!(out.stdout.is_empty(), "{}", case.name);
}

#[test]
fn a_query_past_its_memory_limit_fails_with_an_error() {
    let dir = dataset();
    let data = dir.path().join("data");
    for case in HEAVY {
        check_heavy(&data, case);
    }
}

#[test]
fn a_query_within_its_memory_limit_answers() {
    let dir = dataset();
    let data = dir.path().join("data");
    let out = query(
        &data,
        "SELECT length(repeat('ab', 1000000)) AS n",
        &["--format", "json", "--memory-limit", "64MiB"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim_end(), r#"[{"n":2000000}]"#);
}
