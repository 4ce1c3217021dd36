//! `diagwire query`: SQL over a dataset with an embedded DataFusion. Every table is registered
//! with its generated schema (never inferred from a file, so files of older contracts read with
//! the current columns, the missing ones null) and the partition columns of its folders; a table
//! with no file yet is registered empty, with the same columns. A table reads only the part
//! files the dataset's index lists (`listed.rs`); a listed part that does not open as Parquet (or
//! is reached through a link) is left out and reported ([`unreadable_parts`]), so one bad file
//! does not stop every query. The shipped views (`views.rs`) are defined on top, each planned
//! when a statement first names it.
//! A session's scans parse each file's footer once (`footers.rs`) and read, of a struct column,
//! only the leaves under the fields a query reaches it through (`leaves.rs`). A window function
//! over input sorted by its partition keys is computed over the whole input at once
//! ([`WholeWindows`]), not streamed partition by partition.
//!
//! A user's statement runs read-only ([`read_only`]: no DDL, no DML, `COPY … TO` included, no
//! `SET`), under a memory pool ([`DEFAULT_MEMORY_LIMIT`] unless told otherwise; spills to the
//! system's temporary folder up to [`SPILL_FACTOR`] times that) and with the functions whose
//! result outgrows their input bounded by the same limit (`bounded.rs`). The shipped views are
//! the tool's own SQL, planned as a statement names them. [`render`] escapes every
//! value and column name, so nothing in a result can forge a row or reach a terminal raw.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use crate::format::EvolvingParquet;
use crate::listed::Listed;
use datafusion::arrow::array::{Array, ArrayRef, RecordBatch, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::datasource::MemTable;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::disk_manager::DiskManagerBuilder;
use datafusion::execution::memory_pool::{GreedyMemoryPool, TrackConsumersPool};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::windows::{BoundedWindowAggExec, WindowAggExec};
use datafusion::physical_plan::{ExecutionPlan, InputOrderMode};
use datafusion::prelude::{SQLOptions, SessionConfig, SessionContext};
use diagwire_runtime::text::Escaping;
use serde_json::ser::{CompactFormatter, Formatter};

use crate::columns::TABLES;
use crate::{Error, arrow_schema, bounded, leaves, views};

/// The memory a query may hold unless told otherwise: 1 GiB, enough for every shipped view over
/// a large fleet, small enough for a laptop.
pub const DEFAULT_MEMORY_LIMIT: usize = 1 << 30;

/// How many times its memory limit a query may spill to the temporary folder (sorts, joins and
/// aggregations spill what does not fit).
pub const SPILL_FACTOR: u64 = 4;

/// The statements a user's SQL may be: reading ones only (`SELECT`, `WITH`, `EXPLAIN`, `VALUES`,
/// `DESCRIBE`). DataFusion classifies `CREATE`/`DROP` (tables, views, external tables, schemas,
/// functions) as DDL, `INSERT`/`UPDATE`/`DELETE` and `COPY … TO` as DML, and `SET`, `PREPARE`,
/// `EXECUTE`, transactions as statements; each is refused before it is planned for running.
pub fn read_only() -> SQLOptions {
    SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false)
}

/// What a refused statement's error begins with.
pub const READ_ONLY: &str = "diagwire query runs only reading statements (SELECT, WITH, EXPLAIN …)";

/// How `diagwire query` prints rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// An aligned text table.
    Table,
    /// CSV with a header line.
    Csv,
    /// A JSON array with one object per row, keyed by column name.
    Json,
}

fn df(e: impl std::fmt::Display) -> Error {
    Error::query(e.to_string())
}

/// A DataFusion session whose scans of the dataset's tables read only the struct leaves a query
/// reaches (`leaves.rs`), with nothing registered yet, under [`DEFAULT_MEMORY_LIMIT`].
pub fn context() -> SessionContext {
    bounded_context(DEFAULT_MEMORY_LIMIT).expect("OK because the default runtime builds")
}

/// [`context`] holding at most `memory_limit` bytes: a memory pool of that size (an operator that
/// cannot spill fails with DataFusion's "Resources exhausted" naming the largest consumers), spills
/// up to [`SPILL_FACTOR`] times it, and the growing functions bounded by it (`bounded.rs`).
pub fn bounded_context(memory_limit: usize) -> Result<SessionContext, Error> {
    let pool = TrackConsumersPool::new(
        GreedyMemoryPool::new(memory_limit),
        std::num::NonZeroUsize::new(5).expect("OK because 5 is not zero"),
    );
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_pool(Arc::new(pool))
        .with_disk_manager_builder(
            DiskManagerBuilder::default()
                .with_max_temp_directory_size(memory_limit as u64 * SPILL_FACTOR),
        )
        .build_arc()
        .map_err(df)?;
    let state = SessionStateBuilder::new()
        .with_config(SessionConfig::new())
        .with_runtime_env(runtime)
        .with_default_features()
        .with_query_planner(Arc::new(leaves::Planner))
        .with_physical_optimizer_rule(Arc::new(WholeWindows))
        .build();
    let ctx = SessionContext::new_with_state(state);
    bounded::register(&ctx, memory_limit);
    Ok(ctx)
}

/// Computes each window function whose input is sorted by its partition keys over the whole
/// input at once (`WindowAggExec`) instead of streaming it (`BoundedWindowAggExec`). The tables
/// are finite, so streaming gains nothing, and the streaming operator keeps a state per partition
/// that costs far more than its rows when partitions are small, as in the views (a window per
/// run, node and peer). Both need the same order and distribution of their input and give the
/// same rows.
#[derive(Debug)]
pub struct WholeWindows;

impl PhysicalOptimizerRule for WholeWindows {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(w) = node.as_any().downcast_ref::<BoundedWindowAggExec>() else {
                return Ok(Transformed::no(node));
            };
            if w.input_order_mode != InputOrderMode::Sorted {
                return Ok(Transformed::no(node));
            }
            let whole = WindowAggExec::try_new(
                w.window_expr().to_vec(),
                Arc::clone(w.input()),
                !w.partition_keys().is_empty(),
            )?;
            Ok(Transformed::yes(Arc::new(whole) as Arc<dyn ExecutionPlan>))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "whole_windows"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// A table of Parquet files under `dir` (a folder of partition folders `contract_major=M/date=D`)
/// with the columns of `schema` and the two partition columns, read as [`EvolvingParquet`].
pub fn parquet_table(dir: &Path, schema: Arc<Schema>) -> Result<ListingTable, Error> {
    let abs = std::fs::canonicalize(dir).map_err(|e| Error::at(dir, e.to_string()))?;
    let url = ListingTableUrl::parse(format!("{}/", abs.display())).map_err(df)?;
    let options = ListingOptions::new(Arc::new(EvolvingParquet::default()))
        .with_file_extension(".parquet")
        .with_table_partition_cols(vec![
            ("contract_major".into(), DataType::Utf8),
            ("date".into(), DataType::Utf8),
        ]);
    let config = ListingTableConfig::new(url)
        .with_listing_options(options)
        .with_schema(schema);
    ListingTable::try_new(config).map_err(df)
}

/// A DataFusion session with the dataset's tables and the shipped views registered.
pub async fn session(dataset: &Path) -> Result<SessionContext, Error> {
    bounded_session(dataset, DEFAULT_MEMORY_LIMIT).await
}

/// [`session`] holding at most `memory_limit` bytes ([`bounded_context`]).
pub async fn bounded_session(dataset: &Path, memory_limit: usize) -> Result<SessionContext, Error> {
    if !dataset.join(crate::dataset::INDEX).is_file() {
        return Err(Error::at(dataset, "not a dataset (no _dataset.json)"));
    }
    let (readable, _) = listed_parts(dataset)?;
    let ctx = bounded_context(memory_limit)?;
    let root = std::fs::canonicalize(dataset).map_err(|e| Error::at(dataset, e.to_string()))?;
    let mut allowed = BTreeSet::new();
    for rel in readable.values().flatten() {
        let path = root.join(rel);
        allowed.insert(
            object_store::path::Path::from_absolute_path(&path)
                .map_err(|e| Error::at(&path, e.to_string()))?,
        );
    }
    let local = ObjectStoreUrl::local_filesystem();
    let inner = ctx.runtime_env().object_store(&local).map_err(df)?;
    ctx.register_object_store(local.as_ref(), Arc::new(Listed::new(inner, allowed)));
    for t in TABLES {
        let schema = Arc::new(arrow_schema::schema(t));
        let dir = dataset.join(t.name);
        if readable.get(t.name).is_none_or(Vec::is_empty) {
            // The partition columns too, so a query that names them reads an empty table.
            let mut fields: Vec<Field> =
                schema.fields().iter().map(|f| f.as_ref().clone()).collect();
            for name in ["contract_major", "date"] {
                fields.push(Field::new(name, DataType::Utf8, true));
            }
            let schema = Arc::new(Schema::new(fields));
            let empty = MemTable::try_new(schema, vec![vec![]]).map_err(df)?;
            ctx.register_table(t.name, Arc::new(empty)).map_err(df)?;
            continue;
        }
        let table = parquet_table(&dir, schema)?;
        ctx.register_table(t.name, Arc::new(table)).map_err(df)?;
    }
    // The shipped views, planned when a statement first names one (`views.rs`).
    let names = ctx.copied_config().options().catalog.clone();
    let catalog = ctx
        .catalog(&names.default_catalog)
        .ok_or_else(|| Error::query("the session has no default catalog"))?;
    let tables = catalog
        .schema(&names.default_schema)
        .ok_or_else(|| Error::query("the session has no default schema"))?;
    let schema = views::ViewSchema::new(tables, &ctx);
    catalog
        .register_schema(&names.default_schema, Arc::new(schema))
        .map_err(df)?;
    Ok(ctx)
}

/// Part files (relative paths) by table.
type Parts = BTreeMap<String, Vec<String>>;

/// The part files the index of `dataset` lists, by table, that a query reads, and the listed
/// parts it leaves out, each a located error: reached through a link, missing, or not a whole
/// Parquet file (checked by its magic and footer length, [`crate::safe::parquet_readable`]).
fn listed_parts(dataset: &Path) -> Result<(Parts, Vec<Error>), Error> {
    let index = crate::dataset::Index::load(dataset)?;
    let mut readable: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut skipped = Vec::new();
    for (table, files) in &index.files {
        for rel in files {
            match crate::dataset::part_path(dataset, rel)
                .and_then(|p| crate::safe::parquet_readable(&p))
            {
                Ok(()) => readable.entry(table.clone()).or_default().push(rel.clone()),
                Err(e) => skipped.push(e),
            }
        }
    }
    Ok((readable, skipped))
}

/// The listed parts of `dataset` a query leaves out because they cannot be read (see
/// [`listed_parts`]), each a located error; empty when the index itself does not read (the
/// query says so).
pub fn unreadable_parts(dataset: &Path) -> Vec<Error> {
    listed_parts(dataset).map(|(_, s)| s).unwrap_or_default()
}

/// The runtime the blocking entry points run DataFusion on.
fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(df)
}

/// Runs `work` to its end on the runtime the blocking entry points use.
pub(crate) fn block_on<T>(
    work: impl std::future::Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    runtime()?.block_on(work)
}

/// Runs the reading statement `sql` over `dataset` ([`read_only`]) under
/// [`DEFAULT_MEMORY_LIMIT`] and returns its rows.
pub fn query(dataset: &Path, sql: &str) -> Result<Vec<RecordBatch>, Error> {
    bounded_query(dataset, sql, DEFAULT_MEMORY_LIMIT)
}

/// [`query`] holding at most `memory_limit` bytes ([`bounded_context`]).
pub fn bounded_query(
    dataset: &Path,
    sql: &str,
    memory_limit: usize,
) -> Result<Vec<RecordBatch>, Error> {
    let mut rows = run(dataset, &[sql], memory_limit)?;
    Ok(rows.pop().unwrap_or_default())
}

/// Runs each of the reading statements `sqls` over `dataset` in one session (the tables and views
/// registered once) and returns their rows, in order; the first that fails is the error.
pub fn queries(dataset: &Path, sqls: &[&str]) -> Result<Vec<Vec<RecordBatch>>, Error> {
    run(dataset, sqls, DEFAULT_MEMORY_LIMIT)
}

fn run(dataset: &Path, sqls: &[&str], memory_limit: usize) -> Result<Vec<Vec<RecordBatch>>, Error> {
    runtime()?.block_on(async {
        let ctx = bounded_session(dataset, memory_limit).await?;
        let mut out = Vec::with_capacity(sqls.len());
        for sql in sqls {
            out.push(read(&ctx, sql).await?);
        }
        Ok(out)
    })
}

/// Runs the reading statement `sql` in `ctx`: any other is refused with [`READ_ONLY`] before
/// anything runs.
pub async fn read(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>, Error> {
    let state = ctx.state();
    let plan = state.create_logical_plan(sql).await.map_err(df)?;
    read_only()
        .verify_plan(&plan)
        .map_err(|e| Error::query(format!("{READ_ONLY}: {}", e.strip_backtrace())))?;
    let frame = ctx.execute_logical_plan(plan).await.map_err(df)?;
    frame.collect().await.map_err(df)
}

/// The rows as text in `format`, nothing in them shown raw: in a table and in CSV every value and
/// column name has its hidden characters (controls, newlines, C1 controls such as U+009B, line
/// separators, bidirectional marks) written as `\u{…}` escapes ([`diagwire::problem::printable`]),
/// so a value is one cell on one line and a row one line; CSV quotes a field holding the delimiter
/// or a quote (RFC 4180). JSON is an array of objects, each hidden character of a string a
/// `\uXXXX` escape ([`diagwire_runtime::text::Escaping`]): valid JSON that reads back as the same
/// strings.
pub fn render(batches: &[RecordBatch], format: Format) -> Result<String, Error> {
    match format {
        Format::Table => {
            let shown = printable_batches(batches)?;
            let mut text = datafusion::arrow::util::pretty::pretty_format_batches(&shown)
                .map_err(df)?
                .to_string();
            text.push('\n');
            Ok(text)
        }
        Format::Csv => {
            let shown = printable_batches(batches)?;
            let mut buf = Vec::new();
            {
                let mut w = datafusion::arrow::csv::WriterBuilder::new()
                    .with_header(true)
                    .build(&mut buf);
                for b in &shown {
                    w.write(b).map_err(df)?;
                }
            }
            if shown.is_empty() {
                // No batch, no header line from the writer: the columns are unknown.
                return Ok(String::new());
            }
            String::from_utf8(buf).map_err(df)
        }
        Format::Json => {
            let mut buf = Vec::new();
            {
                let mut w = datafusion::arrow::json::ArrayWriter::new(&mut buf);
                for b in batches {
                    w.write(b).map_err(df)?;
                }
                w.finish().map_err(df)?;
            }
            if buf.is_empty() {
                return Ok("[]\n".to_owned());
            }
            let text = String::from_utf8(buf).map_err(df)?;
            // arrow writes strings with serde_json, which escapes the C0 controls, and writes no
            // whitespace between tokens: every other hidden character is inside a string, where
            // its `\uXXXX` escape is the same character.
            let mut out = Vec::with_capacity(text.len() + 1);
            Escaping(CompactFormatter)
                .write_string_fragment(&mut out, &text)
                .map_err(df)?;
            out.push(b'\n');
            String::from_utf8(out).map_err(df)
        }
    }
}

/// `batches` with every column as text, each value and column name escaped by
/// [`diagwire::problem::printable`] (nulls stay null).
fn printable_batches(batches: &[RecordBatch]) -> Result<Vec<RecordBatch>, Error> {
    let options = FormatOptions::default();
    let mut out = Vec::with_capacity(batches.len());
    for b in batches {
        let mut fields = Vec::with_capacity(b.num_columns());
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(b.num_columns());
        for (field, column) in b.schema().fields().iter().zip(b.columns()) {
            let formatter = ArrayFormatter::try_new(column.as_ref(), &options).map_err(df)?;
            let mut text = StringBuilder::with_capacity(column.len(), column.len() * 8);
            for i in 0..column.len() {
                if column.is_null(i) {
                    text.append_null();
                } else {
                    let value = formatter.value(i).to_string();
                    text.append_value(diagwire::problem::printable(&value));
                }
            }
            fields.push(Field::new(
                diagwire::problem::printable(field.name()),
                DataType::Utf8,
                true,
            ));
            columns.push(Arc::new(text.finish()));
        }
        out.push(RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(df)?);
    }
    Ok(out)
}
