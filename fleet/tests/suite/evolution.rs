//! Evolution: for each change the review catalog calls minor and that changes the dataset, a
//! dataset holding one run's files written under the columns before the change and another run's
//! files written under the columns after it. The files written before still read (what they lack
//! reads as null), and the queries written before — every shipped view, a `SELECT` of the old
//! columns — answer for the old run exactly as they did over the old files alone. The minor
//! changes that leave the columns as they are say why.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use diagwire_fleet::datafusion::arrow::array::{
    Array, ArrayRef, RecordBatch, StringArray, StructArray,
};
use diagwire_fleet::datafusion::arrow::datatypes::{DataType, Field, Fields, Schema};
use diagwire_fleet::datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use diagwire_fleet::query::{self, Format};
use diagwire_fleet::{dataset, export, views};
use diagwire_review::catalog::{self, Bump, Rule};
use serde_json::Value;

/// What the change adds to the dataset.
#[derive(Debug, Clone, Copy)]
enum Change {
    /// A column of a table (a field of a record, or an event type's struct column).
    Column(&'static str, &'static str),
    /// A field of a struct column.
    StructField(&'static str, &'static str, &'static str),
    /// A value of a text column's struct field (an enum's value), written by new files.
    Value(&'static str, &'static str, &'static str, &'static str),
    /// A table (a record kind): files written before have none.
    Table(&'static str),
}

struct Case {
    /// The behaviour, as the test names it.
    name: &'static str,
    rule: Rule,
    change: Change,
    /// True for a row of the new run only: where the change shows.
    shows: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "an_optional_field_added_to_an_event_is_a_struct_field_older_files_read_as_null",
        rule: catalog::FIELD_ADDED_OPTIONAL,
        change: Change::StructField("events", "dial_outcome", "attempt"),
        shows: "dial_outcome.attempt IS NOT NULL",
    },
    Case {
        name: "a_source_field_added_beside_a_value_is_a_column_older_files_read_as_null",
        rule: catalog::PROVENANCE_WIDENED,
        change: Change::Column("nodes", "host_provider_source"),
        shows: "host_provider_source IS NOT NULL",
    },
    Case {
        name: "a_new_event_type_is_a_struct_column_older_files_read_as_null",
        rule: catalog::UNION_VARIANT_ADDED_OPEN,
        change: Change::Column("events", "handshake_outcome"),
        shows: "handshake_outcome IS NOT NULL",
    },
    Case {
        name: "a_new_enum_value_is_a_new_text_value_in_the_same_column",
        rule: catalog::ENUM_VALUE_ADDED_OPEN,
        change: Change::Value(
            "events",
            "relay_session_closed",
            "close_initiator",
            "a_side_added_later",
        ),
        shows: "relay_session_closed.close_initiator = 'a_side_added_later'",
    },
    Case {
        name: "a_new_record_kind_is_a_table_older_runs_have_no_rows_in",
        rule: catalog::RECORD_KIND_ADDED,
        change: Change::Table("finalize"),
        shows: "TRUE",
    },
];

/// The minor changes that leave the columns as they are, and why.
const NO_DATASET_CHANGE: &[(Rule, &str)] = &[
    (
        catalog::TYPE_ADDED,
        "a definition no record uses has no column; the field that starts using it is a change of its own",
    ),
    (
        catalog::FIELD_PRESENCE_SPELLING_CHANGED,
        "a null and a left-out key are both a null value in the column",
    ),
    (
        catalog::BOUND_LOOSENED,
        "a list column holds lists of any length",
    ),
    (
        catalog::FIELD_BECAME_DERIVED_DISCRIMINATED,
        "the wire is the same, and the source field that tells already has its column",
    ),
    (
        catalog::FIELD_BECAME_REPORTED,
        "the wire is the same, so the column is the same",
    ),
];

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/bundles/n3-relay-flap")
}

/// The rows of each of `sqls` over `dataset` (one session), each sorted.
fn rows(dataset: &Path, sqls: &[String]) -> Vec<Vec<Value>> {
    let sqls: Vec<&str> = sqls.iter().map(String::as_str).collect();
    let answers = query::queries(dataset, &sqls).unwrap_or_else(|e| panic!("{e}"));
    answers
        .iter()
        .map(|batches| {
            let text = query::render(batches, Format::Json).unwrap();
            let mut v: Vec<Value> = serde_json::from_str(&text).unwrap();
            v.sort_by_cached_key(|r| r.to_string());
            v
        })
        .collect()
}

fn batches(file: &Path) -> Vec<RecordBatch> {
    ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(file).unwrap())
        .unwrap()
        .build()
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// `field` with the struct field `inner` left out (or `inner`'s values set to `value`).
fn edit_struct(array: &ArrayRef, inner: &str, value: Option<&str>) -> (Field, ArrayRef) {
    let s = array.as_any().downcast_ref::<StructArray>().unwrap();
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (f, c) in s.fields().iter().zip(s.columns()) {
        if f.name() != inner {
            fields.push(f.as_ref().clone());
            columns.push(c.clone());
        } else if let Some(v) = value {
            let old = c.as_any().downcast_ref::<StringArray>().unwrap();
            let new: StringArray = (0..old.len())
                .map(|i| (!old.is_null(i)).then_some(v))
                .collect();
            fields.push(f.as_ref().clone());
            columns.push(Arc::new(new));
        }
    }
    let fields = Fields::from(fields);
    let array = StructArray::new(fields.clone(), columns, s.nulls().cloned());
    (
        Field::new("", DataType::Struct(fields), true),
        Arc::new(array),
    )
}

/// The batch as a file of `run` written before (`old`) or after the change would have it.
fn rewrite(batch: &RecordBatch, table: &str, run: &str, change: Change, old: bool) -> RecordBatch {
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (f, c) in batch.schema().fields().iter().zip(batch.columns()) {
        let mut f = f.as_ref().clone();
        let mut c = c.clone();
        if f.name() == "run_id" {
            c = Arc::new(StringArray::from(vec![run; batch.num_rows()]));
        }
        match change {
            Change::Column(t, col) if t == table && f.name() == col && old => continue,
            Change::StructField(t, col, inner) if t == table && f.name() == col && old => {
                let (nf, nc) = edit_struct(&c, inner, None);
                f = nf.with_name(col);
                c = nc;
            }
            Change::Value(t, col, inner, value) if t == table && f.name() == col && !old => {
                let (nf, nc) = edit_struct(&c, inner, Some(value));
                f = nf.with_name(col);
                c = nc;
            }
            _ => {}
        }
        fields.push(f);
        columns.push(c);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

/// Writes `source`'s run into `dataset` as run `run`, each table's file as written before the
/// change (`old`) or after it.
fn write_run(source: &Path, dataset: &Path, run: &str, change: Change, old: bool) {
    for t in diagwire_fleet::columns::TABLES {
        if matches!(change, Change::Table(name) if name == t.name && old) {
            continue;
        }
        for p in dataset::partitions(&source.join(t.name)) {
            for f in dataset::parquet_files(&p) {
                let rel = p.strip_prefix(source).unwrap();
                let dir = dataset.join(rel);
                let out: Vec<RecordBatch> = batches(&f)
                    .iter()
                    .map(|b| rewrite(b, t.name, run, change, old))
                    .collect();
                let Some(first) = out.first() else { continue };
                let path = dir.join(format!("part-{run}.parquet"));
                let mut w = dataset::PartWriter::create_for(&path, first.schema(), t.name).unwrap();
                for b in &out {
                    w.write(b).unwrap();
                }
                w.finish(&path).unwrap();
            }
        }
    }
    // The index without its list of files (as format 1.0.0 wrote it): the files are what the
    // partition folders hold, those of both runs.
    let mut index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(source.join(dataset::INDEX)).unwrap())
            .unwrap();
    index.as_object_mut().unwrap().remove("files");
    std::fs::write(dataset.join(dataset::INDEX), index.to_string()).unwrap();
}

/// The queries written before the change: every shipped view of runs (`list_positions` holds
/// numbers, not runs), and a `SELECT` of every column a
/// table had before it (a struct column's old fields one by one).
fn old_queries(change: Change) -> Vec<String> {
    let mut out: Vec<String> = views::VIEWS
        .iter()
        .filter(|v| v.name != "list_positions")
        .map(|v| format!("SELECT * FROM {} WHERE run_id = 'old'", v.name))
        .collect();
    for t in diagwire_fleet::columns::TABLES {
        let mut cols = Vec::new();
        let schema = diagwire_fleet::arrow_schema::schema(t);
        for f in schema.fields() {
            match change {
                Change::Column(table, col) if table == t.name && f.name() == col => {}
                Change::StructField(table, col, inner) if table == t.name && f.name() == col => {
                    if let DataType::Struct(fields) = f.data_type() {
                        for g in fields.iter().filter(|g| g.name() != inner) {
                            cols.push(format!(
                                "\"{}\".\"{}\" AS \"{}_{}\"",
                                col,
                                g.name(),
                                col,
                                g.name()
                            ));
                        }
                    }
                }
                _ => cols.push(format!("\"{}\"", f.name())),
            }
        }
        out.push(format!(
            "SELECT {} FROM {} WHERE run_id = 'old'",
            cols.join(", "),
            t.name
        ));
    }
    out
}

fn check(case: &Case) {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    let report = export::export(&[example()], &source, true).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let before = tmp.path().join("before");
    write_run(&source, &before, "old", case.change, true);
    let mixed = tmp.path().join("mixed");
    write_run(&source, &mixed, "old", case.change, true);
    write_run(&source, &mixed, "new", case.change, false);
    let table = match case.change {
        Change::Column(t, _)
        | Change::StructField(t, _, _)
        | Change::Value(t, _, _, _)
        | Change::Table(t) => t,
    };
    let count = |run: &str| {
        format!(
            "SELECT COUNT(*) AS n FROM {table} WHERE run_id = '{run}' AND {}",
            case.shows
        )
    };
    let old = old_queries(case.change);
    let alone = rows(&before, &old);
    let mut asked = old.clone();
    asked.extend([count("old"), count("new")]);
    let mut answers = rows(&mixed, &asked);
    let counts: Vec<u64> = answers
        .split_off(old.len())
        .iter()
        .map(|r| r[0]["n"].as_u64().unwrap())
        .collect();
    for ((sql, alone), mixed) in old.iter().zip(alone).zip(answers) {
        assert_eq!(
            alone, mixed,
            "{}: `{sql}` answers otherwise once files written after the change join",
            case.name
        );
    }
    assert_eq!(counts[0], 0, "{}: the old run shows the change", case.name);
    assert!(
        counts[1] > 0,
        "{}: the new run does not show the change: the case tests nothing",
        case.name
    );
}

fn case(name: &str) -> &'static Case {
    CASES.iter().find(|c| c.name == name).unwrap()
}

#[test]
fn an_optional_field_added_to_an_event_is_a_struct_field_older_files_read_as_null() {
    check(case(
        "an_optional_field_added_to_an_event_is_a_struct_field_older_files_read_as_null",
    ));
}

#[test]
fn a_source_field_added_beside_a_value_is_a_column_older_files_read_as_null() {
    check(case(
        "a_source_field_added_beside_a_value_is_a_column_older_files_read_as_null",
    ));
}

#[test]
fn a_new_event_type_is_a_struct_column_older_files_read_as_null() {
    check(case(
        "a_new_event_type_is_a_struct_column_older_files_read_as_null",
    ));
}

#[test]
fn a_new_enum_value_is_a_new_text_value_in_the_same_column() {
    check(case(
        "a_new_enum_value_is_a_new_text_value_in_the_same_column",
    ));
}

#[test]
fn a_new_record_kind_is_a_table_older_runs_have_no_rows_in() {
    check(case(
        "a_new_record_kind_is_a_table_older_runs_have_no_rows_in",
    ));
}

#[test]
fn every_minor_rule_of_the_catalog_has_a_case_or_says_why_the_columns_stay() {
    for rule in catalog::ALL.iter().filter(|r| r.bump == Bump::Minor) {
        let cases = CASES.iter().filter(|c| c.rule == *rule).count();
        let reasons = NO_DATASET_CHANGE.iter().filter(|(r, _)| r == rule).count();
        assert_eq!(
            cases + reasons,
            1,
            "{}: {cases} case(s) and {reasons} reason(s), one of them expected",
            rule.id
        );
    }
    for (rule, _) in NO_DATASET_CHANGE {
        assert_eq!(rule.bump, Bump::Minor, "{} is not minor", rule.id);
    }
}
