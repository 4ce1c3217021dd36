//! `diagwire query`: SQL over a dataset with an embedded DataFusion. Every table is registered
//! with its generated schema (never inferred from a file, so files of older contracts read with
//! the current columns, the missing ones null) and the partition columns of its folders; a table
//! with no file yet is registered empty, with the same columns. The shipped views (`views.rs`) are defined on top.
//! A session's scans parse each file's footer once (`footers.rs`) and read, of a struct column,
//! only the leaves under the fields a query reaches it through (`leaves.rs`). A window function
//! over input sorted by its partition keys is computed over the whole input at once
//! ([`WholeWindows`]), not streamed partition by partition.

use std::path::Path;
use std::sync::Arc;

use crate::evolve::EvolvingParquet;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::datasource::MemTable;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::windows::{BoundedWindowAggExec, WindowAggExec};
use datafusion::physical_plan::{ExecutionPlan, InputOrderMode};
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::columns::TABLES;
use crate::{Error, arrow_schema, leaves, views};

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
/// reaches (`leaves.rs`), with nothing registered yet.
pub fn context() -> SessionContext {
    let state = SessionStateBuilder::new()
        .with_config(SessionConfig::new())
        .with_runtime_env(Arc::new(RuntimeEnv::default()))
        .with_default_features()
        .with_query_planner(Arc::new(leaves::Planner))
        .with_physical_optimizer_rule(Arc::new(WholeWindows))
        .build();
    SessionContext::new_with_state(state)
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
    if !dataset.join(crate::dataset::INDEX).is_file() {
        return Err(Error::at(dataset, "not a dataset (no _dataset.json)"));
    }
    let ctx = context();
    for t in TABLES {
        let schema = Arc::new(arrow_schema::schema(t));
        let dir = dataset.join(t.name);
        if crate::dataset::partitions(&dir).is_empty() {
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
    for v in views::VIEWS {
        let at =
            |e: datafusion::error::DataFusionError| Error::query(format!("view {}: {e}", v.name));
        if v.materialized {
            let frame = ctx.sql(v.sql).await.map_err(at)?;
            let schema = Arc::new(frame.schema().as_arrow().clone());
            let batches = frame.collect().await.map_err(at)?;
            let one = datafusion::arrow::compute::concat_batches(&schema, &batches).map_err(df)?;
            let table = MemTable::try_new(schema, vec![vec![one]]).map_err(at)?;
            ctx.register_table(v.name, Arc::new(table)).map_err(at)?;
        } else {
            ctx.sql(&format!("CREATE VIEW {} AS {}", v.name, v.sql))
                .await
                .map_err(at)?;
        }
    }
    Ok(ctx)
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

/// Runs `sql` over `dataset` and returns its rows.
pub fn query(dataset: &Path, sql: &str) -> Result<Vec<RecordBatch>, Error> {
    let mut rows = queries(dataset, &[sql])?;
    Ok(rows.pop().unwrap_or_default())
}

/// Runs each of `sqls` over `dataset` in one session (the tables and views registered once) and
/// returns their rows, in order; the first that fails is the error.
pub fn queries(dataset: &Path, sqls: &[&str]) -> Result<Vec<Vec<RecordBatch>>, Error> {
    runtime()?.block_on(async {
        let ctx = session(dataset).await?;
        let mut out = Vec::with_capacity(sqls.len());
        for sql in sqls {
            let frame = ctx.sql(sql).await.map_err(df)?;
            out.push(frame.collect().await.map_err(df)?);
        }
        Ok(out)
    })
}

/// The rows as text in `format`; text from a bundle has its control characters escaped.
pub fn render(batches: &[RecordBatch], format: Format) -> Result<String, Error> {
    let text = match format {
        Format::Table => datafusion::arrow::util::pretty::pretty_format_batches(batches)
            .map_err(df)?
            .to_string(),
        Format::Csv => {
            let mut buf = Vec::new();
            {
                let mut w = datafusion::arrow::csv::WriterBuilder::new()
                    .with_header(true)
                    .build(&mut buf);
                for b in batches {
                    w.write(b).map_err(df)?;
                }
            }
            String::from_utf8_lossy(&buf).into_owned()
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
                "[]".to_owned()
            } else {
                String::from_utf8_lossy(&buf).into_owned()
            }
        }
    };
    let mut out = String::with_capacity(text.len() + 1);
    for line in text.lines() {
        out.push_str(&diagwire::problem::printable(line));
        out.push('\n');
    }
    Ok(out)
}
