//! The dataset end to end: the example bundles, the oldest-generation example and every release's
//! golden bundle exported into one dataset; a run exported twice is one run; each shipped view
//! over a single-run dataset equals its section of `diagwire summary --format json`.

use std::path::{Path, PathBuf};

use diagwire::bundle::read::Limits;
use diagwire_fleet::datafusion::arrow::array::RecordBatch;
use diagwire_fleet::query::{self, Format};
use diagwire_fleet::{dataset, export};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn example(name: &str) -> PathBuf {
    root().join("examples/bundles").join(name)
}

/// Every bundle the tests export: each example bundle and each release's golden bundle.
fn bundles() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root().join("examples/bundles"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    let mut golden: Vec<PathBuf> = std::fs::read_dir(root().join("compat-tests/fixtures"))
        .unwrap()
        .map(|e| e.unwrap().path().join("golden.tar.gz"))
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    golden.sort();
    out.extend(golden);
    assert!(
        out.len() >= 5,
        "the example and golden bundles are missing: {out:?}"
    );
    out
}

fn rows(dataset: &Path, sql: &str) -> Vec<Value> {
    let batches: Vec<RecordBatch> =
        query::query(dataset, sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let text = query::render(&batches, Format::Json).unwrap();
    serde_json::from_str::<Vec<Value>>(&text).unwrap()
}

fn one_run(bundle: &Path) -> (tempfile::TempDir, Value) {
    let dir = tempfile::tempdir().unwrap();
    let report = export::export(&[bundle.to_owned()], dir.path(), true).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let summary = diagwire_summary::summarize(bundle, Limits::default()).unwrap();
    (dir, diagwire_summary::render::json(&summary))
}

/// Sorts rows by their JSON text, so row order does not matter.
fn sorted(mut v: Vec<Value>) -> Vec<Value> {
    v.sort_by_cached_key(|r| r.to_string());
    v
}

/// Keeps `keys` of each row, in that order, with JSON nulls for absent values.
fn project(rows: &[Value], keys: &[&str]) -> Vec<Value> {
    rows.iter()
        .map(|r| {
            Value::Object(
                keys.iter()
                    .map(|k| ((*k).to_owned(), r.get(*k).cloned().unwrap_or(Value::Null)))
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn every_record_of_every_bundle_is_a_row_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let report = export::export(&bundles(), dir.path(), true).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.runs.len(), bundles().len());
    for b in bundles() {
        let s = diagwire_summary::render::json(
            &diagwire_summary::summarize(&b, Limits::default()).unwrap(),
        );
        let run = s["run"]["run_id"].as_str().unwrap().to_owned();
        let events: u64 = s["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["events"].as_u64().unwrap())
            .sum();
        let snapshots: u64 = s["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["snapshots"].as_u64().unwrap())
            .sum();
        let got = rows(
            dir.path(),
            &format!(
                "SELECT (SELECT COUNT(*) FROM events WHERE run_id = '{run}') AS e, (SELECT COUNT(*) FROM snapshots WHERE run_id = '{run}') AS s"
            ),
        );
        assert_eq!(got[0]["e"], events, "{}", b.display());
        assert_eq!(got[0]["s"], snapshots, "{}", b.display());
    }
}

#[test]
fn exporting_a_run_again_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let b = example("n3-relay-flap");
    export::export(std::slice::from_ref(&b), dir.path(), true).unwrap();
    let before = rows(dir.path(), "SELECT COUNT(*) AS n FROM events");
    let report = export::export(
        &[b.clone(), example("n3-relay-flap-oldest")],
        dir.path(),
        true,
    )
    .unwrap();
    assert_eq!(report.replaced, vec!["n3-relay-flap".to_owned()]);
    let after = rows(
        dir.path(),
        "SELECT COUNT(*) AS n FROM events WHERE run_id = 'n3-relay-flap'",
    );
    assert_eq!(before, after);
    let runs = rows(dir.path(), "SELECT run_id FROM runs ORDER BY run_id");
    assert_eq!(runs.len(), 2, "{runs:?}");
    // Compaction leaves one file per partition.
    for t in ["events", "snapshots", "runs"] {
        for p in dataset::partitions(&dir.path().join(t)) {
            assert_eq!(dataset::parquet_files(&p).len(), 1, "{}", p.display());
        }
    }
}

/// A shipped view and the section of `summary --format json` it equals for a one-run dataset.
struct Section {
    /// The summary's key (an array of rows, or one object or null).
    section: &'static str,
    /// The query over the view whose rows equal the section's.
    sql: &'static str,
    /// The keys compared.
    keys: &'static [&'static str],
}

/// A summary row as the dataset's columns can hold it: an integer above `i64::MAX` is null in its
/// column (the dataset keeps the value in the row's `extra_json`, docs/reference/dataset.md).
fn as_a_column_holds_it(row: Value) -> Value {
    match row {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| match v {
                    Value::Number(n) if n.is_u64() && n.as_i64().is_none() => (k, Value::Null),
                    v => (k, v),
                })
                .collect(),
        ),
        v => v,
    }
}

/// Exports each bundle on its own and checks that `sql`'s rows equal the summary's section, in
/// any order; at least one bundle must have rows, or the check compares nothing.
fn check_section(s: &Section) {
    let mut seen = 0;
    for b in bundles() {
        let (dir, summary) = one_run(&b);
        let got = project(&rows(dir.path(), s.sql), s.keys);
        let want = match &summary[s.section] {
            Value::Array(rows) => rows.clone(),
            Value::Null => Vec::new(),
            one => vec![one.clone()],
        };
        let want: Vec<Value> = project(&want, s.keys)
            .into_iter()
            .map(as_a_column_holds_it)
            .collect();
        seen += want.len();
        assert_eq!(
            sorted(got),
            sorted(want),
            "{} against the summary's {} of {}",
            s.sql,
            s.section,
            b.display()
        );
    }
    assert!(
        seen > 0,
        "no bundle has {}: the test compares nothing",
        s.section
    );
}

#[test]
fn the_dials_view_is_the_summarys_per_peer_dials() {
    check_section(&Section {
        section: "dials",
        sql: "SELECT * FROM dials",
        keys: &[
            "peer",
            "started",
            "succeeded",
            "failed",
            "in_flight",
            "last_outcome",
            "last_outcome_ms",
        ],
    });
}

#[test]
fn the_earliest_transition_to_dead_is_the_summarys_first_peer_to_go_dead() {
    check_section(&Section {
        section: "first_dead",
        sql: "SELECT observer, peer, wall_ms, reason FROM swim_transitions WHERE to_state = 'Dead' \
              ORDER BY wall_ms, observer, file_seq, record_index LIMIT 1",
        keys: &["observer", "peer", "wall_ms", "reason"],
    });
}

#[test]
fn the_probe_rtts_view_is_the_summarys_rtt_distribution() {
    check_section(&Section {
        section: "probe_rtt",
        sql: "SELECT * FROM probe_rtts",
        keys: &[
            "observer",
            "target",
            "probes",
            "acked",
            "timed_out",
            "pending",
            "median_ms",
            "p95_ms",
            "p99_ms",
            "budget",
        ],
    });
}

#[test]
fn the_kernel_drops_view_is_the_summarys_kernel_network_drops() {
    check_section(&Section {
        section: "kernel_drops",
        sql: "SELECT * FROM kernel_drops",
        keys: &["node", "counter", "delta"],
    });
}

#[test]
fn the_relay_sessions_view_is_the_summarys_relay_sessions() {
    check_section(&Section {
        section: "relay_sessions",
        sql: "SELECT * FROM relay_sessions",
        keys: &[
            "relay",
            "peer",
            "initiator",
            "reason",
            "duration_ms",
            "bytes_in",
            "bytes_out",
            "closed_at_ms",
            "node_last_failure_reason",
            "node_last_failure_from",
        ],
    });
}

#[test]
fn the_subprocesses_view_is_the_summarys_subprocess_buckets() {
    check_section(&Section {
        section: "subprocesses",
        sql: "SELECT * FROM subprocesses",
        keys: &["node", "label", "bucket", "detail"],
    });
}

fn version(v: &str) -> Option<Vec<u64>> {
    v.split('.').map(|p| p.parse().ok()).collect()
}

#[test]
fn a_column_a_later_release_added_reads_as_null_for_an_older_writers_run() {
    let dir = tempfile::tempdir().unwrap();
    export::export(&bundles(), dir.path(), true).unwrap();
    let index = dataset::Index::load(dir.path()).unwrap();
    let mut checked = 0;
    for (run, entry) in &index.runs {
        let Some(v) = version(&entry.contract_version) else {
            continue;
        };
        for t in diagwire_fleet::columns::TABLES {
            let later: Vec<_> = t
                .columns
                .iter()
                .filter(|c| version(c.since).is_some_and(|since| since > v))
                .collect();
            if later.is_empty() {
                continue;
            }
            // One query per table: `COUNT(column)` counts the rows where it is not null.
            let counts: Vec<String> = (0..later.len())
                .map(|i| format!("COUNT(\"{}\") AS c{i}", later[i].name))
                .collect();
            let got = rows(
                dir.path(),
                &format!(
                    "SELECT {} FROM {} WHERE run_id = '{run}'",
                    counts.join(", "),
                    t.name
                ),
            );
            for (i, c) in later.iter().enumerate() {
                assert_eq!(
                    got[0][format!("c{i}").as_str()],
                    0,
                    "{}.{} (since {}) in run {run} of {}",
                    t.name,
                    c.name,
                    c.since,
                    entry.contract_version
                );
                checked += 1;
            }
        }
    }
    assert!(
        checked > 0,
        "no run predates any column: the test compares nothing"
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// Reads every row group of every events file of `dataset` and checks its rows are in
/// (`run_id`, `node`, `monotonic_seq`) order; returns the rows read.
fn check_events_sorted(dataset: &Path) -> usize {
    use diagwire_fleet::datafusion::arrow::array::{Array, Int64Array, StringArray};
    use diagwire_fleet::datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let mut read = 0;
    for p in dataset::partitions(&dataset.join("events")) {
        for f in dataset::parquet_files(&p) {
            let groups = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&f).unwrap())
                .unwrap()
                .metadata()
                .num_row_groups();
            for g in 0..groups {
                let reader =
                    ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&f).unwrap())
                        .unwrap()
                        .with_row_groups(vec![g])
                        .build()
                        .unwrap();
                let mut last: Option<(String, String, (bool, i64))> = None;
                for batch in reader {
                    let batch = batch.unwrap();
                    let col =
                        |name: &str| batch.column(batch.schema().index_of(name).unwrap()).clone();
                    let run = col("run_id");
                    let run = run.as_any().downcast_ref::<StringArray>().unwrap();
                    let node = col("node");
                    let node = node.as_any().downcast_ref::<StringArray>().unwrap();
                    let seq = col("monotonic_seq");
                    let seq = seq.as_any().downcast_ref::<Int64Array>().unwrap();
                    for i in 0..batch.num_rows() {
                        let key = (
                            run.value(i).to_owned(),
                            node.value(i).to_owned(),
                            (
                                seq.is_null(i),
                                if seq.is_null(i) { 0 } else { seq.value(i) },
                            ),
                        );
                        if let Some(l) = &last {
                            assert!(
                                *l <= key,
                                "{} row group {g}: {key:?} after {l:?}",
                                f.display()
                            );
                        }
                        last = Some(key);
                        read += 1;
                    }
                }
            }
        }
    }
    read
}

#[test]
fn events_are_written_in_run_node_and_monotonic_seq_order_whatever_the_bundles_order() {
    let tmp = tempfile::tempdir().unwrap();
    // A bundle whose files come out of order: a node's first two event files swapped.
    let shuffled = tmp.path().join("n3-relay-flap");
    copy_dir(&example("n3-relay-flap"), &shuffled);
    let events = shuffled.join("stage-0/events");
    std::fs::rename(events.join("events-000001.json"), events.join("swap.json")).unwrap();
    std::fs::rename(
        events.join("events-000002.json"),
        events.join("events-000001.json"),
    )
    .unwrap();
    std::fs::rename(events.join("swap.json"), events.join("events-000002.json")).unwrap();
    let dir = tmp.path().join("dataset");
    export::export(&[shuffled], &dir, true).unwrap();
    let n = check_events_sorted(&dir);
    assert!(n > 0, "no events read");
    // Every bundle of the tests, in one dataset: compaction keeps each run's order.
    let all = tempfile::tempdir().unwrap();
    export::export(&bundles(), all.path(), true).unwrap();
    let total = rows(all.path(), "SELECT COUNT(*) AS n FROM events");
    assert_eq!(total[0]["n"], check_events_sorted(all.path()));
}

/// The number of row groups of each file of `table`'s partitions.
fn row_groups(dataset: &Path, table: &str) -> Vec<usize> {
    use diagwire_fleet::datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let mut out = Vec::new();
    for p in dataset::partitions(&dataset.join(table)) {
        for f in dataset::parquet_files(&p) {
            let file = std::fs::File::open(&f).unwrap();
            let builder = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
            out.push(builder.metadata().num_row_groups());
        }
    }
    out
}

#[test]
fn small_runs_share_row_groups_and_replacing_one_keeps_the_others_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let template = diagwire_testkit::bundles::Template::new();
    let bundles: Vec<PathBuf> = ["fleet-c", "fleet-a", "fleet-d", "fleet-b"]
        .iter()
        .map(|run| {
            let path = tmp.path().join(format!("{run}.tar.gz"));
            template.write_run(1, &path, run).unwrap();
            path
        })
        .collect();
    let dir = tmp.path().join("dataset");
    export::export(&bundles, &dir, true).unwrap();
    let per_run = |table: &str| {
        rows(
            &dir,
            &format!("SELECT run_id, COUNT(*) AS n FROM {table} GROUP BY run_id ORDER BY run_id"),
        )
    };
    let (events, snapshots) = (per_run("events"), per_run("snapshots"));
    assert_eq!(events.len(), 4, "{events:?}");
    // Four runs of one day: one file per table, and one row group holds them all.
    for table in ["events", "snapshots", "nodes", "runs"] {
        assert_eq!(row_groups(&dir, table), vec![1], "{table}");
    }
    // A run in the middle of the shared group is exported again: the others keep their rows.
    let report = export::export(&bundles[3..], &dir, true).unwrap();
    assert_eq!(report.replaced, vec!["fleet-b".to_owned()]);
    assert_eq!(per_run("events"), events);
    assert_eq!(per_run("snapshots"), snapshots);
    let total: u64 = events.iter().map(|r| r["n"].as_u64().unwrap()).sum();
    assert_eq!(check_events_sorted(&dir) as u64, total);
    assert_eq!(row_groups(&dir, "events"), vec![1]);
}
