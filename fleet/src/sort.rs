//! Sorting a staged events file by (`node`, `monotonic_seq`, `file_seq`, `record_index`) when the
//! bundle's order was not already that (a node that restarted counts its sequence from 1 again;
//! an archive may list its files out of order). The sort is DataFusion's, with a memory limit and
//! spilling to the system's temporary folder, so a run of any size sorts in bounded memory.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use futures::StreamExt;

use crate::dataset::PartWriter;
use crate::table::Table;
use crate::{Error, arrow_schema};

/// The memory the sort may hold before it spills to disk.
const SORT_MEMORY: usize = 64 * 1024 * 1024;

/// The order of every events file, as SQL.
pub const EVENTS_ORDER: &str = "node, monotonic_seq NULLS LAST, file_seq, record_index";

/// Rewrites the staged events file `path` (one run) in [`EVENTS_ORDER`].
pub fn events(path: &Path, table: &'static Table) -> Result<(), Error> {
    let at = |e: &dyn std::fmt::Display| Error::at(path, format!("sorting the events: {e}"));
    let schema = Arc::new(arrow_schema::schema(table));
    let sorted = path.with_extension("sorted.parquet");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| at(&e))?;
    runtime.block_on(async {
        let env = RuntimeEnvBuilder::new()
            .with_memory_limit(SORT_MEMORY, 1.0)
            .build_arc()
            .map_err(|e| at(&e))?;
        let config = SessionConfig::new().with_target_partitions(1);
        let ctx = SessionContext::new_with_config_rt(config, env);
        let file = path
            .to_str()
            .ok_or_else(|| at(&"a path that is not UTF-8"))?;
        ctx.register_parquet(
            "staged",
            file,
            ParquetReadOptions::default()
                .schema(&schema)
                .file_extension(".parquet"),
        )
        .await
        .map_err(|e| at(&e))?;
        let frame = ctx
            .sql(&format!("SELECT * FROM staged ORDER BY {EVENTS_ORDER}"))
            .await
            .map_err(|e| at(&e))?;
        let mut stream = frame.execute_stream().await.map_err(|e| at(&e))?;
        let mut w = PartWriter::create_for(&sorted, schema.clone(), table.name)?;
        while let Some(batch) = stream.next().await {
            let batch = batch.map_err(|e| at(&e))?;
            let batch = RecordBatch::try_new(schema.clone(), batch.columns().to_vec())
                .map_err(|e| at(&e))?;
            w.write(&batch)?;
        }
        w.finish(&sorted)
    })?;
    fs::rename(&sorted, path).map_err(|e| Error::at(path, e.to_string()))
}
