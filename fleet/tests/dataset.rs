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

fn golden(version: &str) -> PathBuf {
    root()
        .join("compat-tests/fixtures")
        .join(version)
        .join("golden.tar.gz")
}

/// Every bundle the tests export.
fn bundles() -> Vec<PathBuf> {
    vec![
        example("n3-relay-flap"),
        example("n3-relay-flap-oldest"),
        golden("1.0.0"),
        golden("1.1.0"),
        golden("1.2.0"),
    ]
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
    v.sort_by_key(|r| r.to_string());
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
    assert_eq!(report.runs.len(), 5);
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

#[test]
fn the_dials_view_is_the_summarys_per_peer_dials() {
    for b in [
        example("n3-relay-flap"),
        example("n3-relay-flap-oldest"),
        golden("1.2.0"),
    ] {
        let (dir, s) = one_run(&b);
        let keys = [
            "peer",
            "started",
            "succeeded",
            "failed",
            "in_flight",
            "last_outcome",
            "last_outcome_ms",
        ];
        let got = project(&rows(dir.path(), "SELECT * FROM dials"), &keys);
        let want = project(s["dials"].as_array().unwrap(), &keys);
        assert!(
            !want.is_empty() || !b.ends_with("n3-relay-flap"),
            "no dials to compare"
        );
        assert_eq!(sorted(got), sorted(want), "{}", b.display());
    }
}

#[test]
fn the_earliest_transition_to_dead_is_the_summarys_first_peer_to_go_dead() {
    for b in [
        example("n3-relay-flap"),
        example("n3-relay-flap-oldest"),
        golden("1.2.0"),
    ] {
        let (dir, s) = one_run(&b);
        let got = rows(
            dir.path(),
            "SELECT observer, peer, wall_ms, reason FROM swim_transitions WHERE to_state = 'Dead' \
             ORDER BY wall_ms, observer, file_seq, record_index LIMIT 1",
        );
        let keys = ["observer", "peer", "wall_ms", "reason"];
        let want = if s["first_dead"].is_null() {
            vec![]
        } else {
            project(&[s["first_dead"].clone()], &keys)
        };
        assert_eq!(project(&got, &keys), want, "{}", b.display());
    }
}

#[test]
fn the_probe_rtts_view_is_the_summarys_rtt_distribution() {
    let mut seen = 0;
    for b in [
        example("n3-relay-flap"),
        example("n3-relay-flap-oldest"),
        golden("1.2.0"),
    ] {
        let (dir, s) = one_run(&b);
        let keys = [
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
        ];
        let got = project(&rows(dir.path(), "SELECT * FROM probe_rtts"), &keys);
        let want = project(s["probe_rtt"].as_array().unwrap(), &keys);
        seen += want.len();
        assert_eq!(sorted(got), sorted(want), "{}", b.display());
    }
    assert!(
        seen > 0,
        "no bundle has probe RTTs: the test compares nothing"
    );
}

#[test]
fn the_kernel_drops_view_is_the_summarys_kernel_network_drops() {
    let mut seen = 0;
    for b in [
        example("n3-relay-flap"),
        example("n3-relay-flap-oldest"),
        golden("1.2.0"),
    ] {
        let (dir, s) = one_run(&b);
        let keys = ["node", "counter", "delta"];
        let got = project(&rows(dir.path(), "SELECT * FROM kernel_drops"), &keys);
        let want = project(s["kernel_drops"].as_array().unwrap(), &keys);
        seen += want.len();
        assert_eq!(sorted(got), sorted(want), "{}", b.display());
    }
    assert!(
        seen > 0,
        "no bundle has kernel drops: the test compares nothing"
    );
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
            for c in t.columns {
                let Some(since) = version(c.since) else {
                    continue;
                };
                if since <= v {
                    continue;
                }
                let got = rows(
                    dir.path(),
                    &format!(
                        "SELECT COUNT(*) AS n FROM {} WHERE run_id = '{run}' AND \"{}\" IS NOT NULL",
                        t.name, c.name
                    ),
                );
                assert_eq!(
                    got[0]["n"], 0,
                    "{}.{} (since {}) in run {run} of {}",
                    t.name, c.name, c.since, entry.contract_version
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
