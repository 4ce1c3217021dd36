//! Sorting a staged events file by (`node`, `monotonic_seq`, `file_seq`, `record_index`) when the
//! export's window of held-back events could not put the bundle's order right (a node that
//! restarted counts its sequence from 1 again; an archive may list its files out of order). The sort is DataFusion's, with a memory limit and
//! spilling to the system's temporary folder, so a run of any size sorts in bounded memory.
//!
//! Merging the spilled runs holds one batch of each in memory at once, so the batch size is chosen
//! from the Arrow size of what was written ([`batch_rows`]): the larger the run, the more spills and the smaller each
//! batch, keeping the merge within the same memory limit.

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

/// How many times the Arrow size of the batches written the sort is taken to hold (the batches
/// read back from Parquet are laid out anew, and sorting copies them).
const ARROW_FACTOR: u64 = 2;

/// The rows per batch of a sort of `rows` rows that were written from `bytes` of Arrow batches:
/// half the memory holds the batches being sorted and their sorted copy, so about `4 × size /
/// memory` parts are spilled, and the merge's batch of each of them must fit in the other half.
fn batch_rows(rows: u64, bytes: u64, memory: usize) -> usize {
    let size = bytes.saturating_mul(ARROW_FACTOR).max(1);
    let half = (memory / 2) as u64;
    // Sorting a spilled part takes a copy of it, so a part is at most a quarter of the memory.
    let spills = size.div_ceil(half / 2).max(1);
    let row = (size / rows.max(1)).max(1);
    let fits = half / spills / row;
    fits.clamp(16, 8192) as usize
}

/// The order of every events file, as SQL.
pub const EVENTS_ORDER: &str = "node, monotonic_seq NULLS LAST, file_seq, record_index";

/// Rewrites the staged events file `path` (one run, `rows` rows written from `arrow_bytes` of
/// Arrow batches) in [`EVENTS_ORDER`].
pub fn events(
    path: &Path,
    table: &'static Table,
    rows: u64,
    arrow_bytes: u64,
) -> Result<(), Error> {
    events_within(path, table, rows, arrow_bytes, SORT_MEMORY)
}

/// [`events`] within `memory` bytes.
fn events_within(
    path: &Path,
    table: &'static Table,
    rows: u64,
    arrow_bytes: u64,
    memory: usize,
) -> Result<(), Error> {
    let at = |e: &dyn std::fmt::Display| Error::at(path, format!("sorting the events: {e}"));
    let schema = Arc::new(arrow_schema::schema(table));
    let sorted = path.with_extension("sorted.parquet");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| at(&e))?;
    runtime.block_on(async {
        let env = RuntimeEnvBuilder::new()
            .with_memory_limit(memory, 1.0)
            .build_arc()
            .map_err(|e| at(&e))?;
        let mut config = SessionConfig::new()
            .with_target_partitions(1)
            .with_batch_size(batch_rows(rows, arrow_bytes, memory));
        // What the merge of the spilled runs reserves before it starts.
        config.options_mut().execution.sort_spill_reservation_bytes = memory / 8;
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

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, Int64Array, StringArray};
    use datafusion::arrow::json::ReaderBuilder;
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    #[test]
    fn the_larger_the_run_the_smaller_the_merge_batches() {
        // A small run sorts in memory: full batches.
        assert_eq!(batch_rows(10_000, 5 << 20, SORT_MEMORY), 8192);
        let mid = batch_rows(1_000_000, 300 << 20, SORT_MEMORY);
        let large = batch_rows(10_000_000, 3 << 30, SORT_MEMORY);
        assert!(mid < 8192 && large < mid, "{mid} {large}");
        // Whatever the size, the merge's batches fit in half the memory.
        for (rows, bytes) in [(1_000_000u64, 300u64 << 20), (10_000_000, 3 << 30)] {
            let size = bytes * ARROW_FACTOR;
            let half = (SORT_MEMORY / 2) as u64;
            let spills = size.div_ceil(half / 2);
            let batch = batch_rows(rows, bytes, SORT_MEMORY) as u64 * (size / rows);
            assert!(spills * batch <= half, "{rows} rows: {spills} × {batch}");
        }
        assert_eq!(batch_rows(0, 0, SORT_MEMORY), 8192);
    }

    #[test]
    fn a_run_many_times_the_sort_memory_sorts_by_spilling() {
        let table = crate::columns::TABLES
            .iter()
            .find(|t| t.name == "events")
            .unwrap();
        let schema = Arc::new(arrow_schema::schema(table));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.parquet");
        let mut w = PartWriter::create_for(&path, schema.clone(), "events").unwrap();
        let mut decoder = ReaderBuilder::new(schema.clone())
            .with_batch_size(1024)
            .build_decoder()
            .unwrap();
        let (n, pad) = (20_000u64, "x".repeat(200));
        for start in (0..n).step_by(1024) {
            let rows: Vec<serde_json::Value> = (start..(start + 1024).min(n))
                .map(|i| {
                    serde_json::json!({
                        "run_id": "r", "node": format!("stage-{}", i % 7),
                        "monotonic_seq": n - i, "file_seq": 1, "record_index": i, "type": pad,
                    })
                })
                .collect();
            decoder.serialize(&rows).unwrap();
            while let Some(batch) = decoder.flush().unwrap() {
                w.write(&batch).unwrap();
            }
        }
        let (rows, bytes) = (w.rows, w.arrow_bytes);
        w.finish(&path).unwrap();
        let memory = 8 << 20;
        assert!(bytes > 4 * memory as u64, "{bytes} bytes: few spills");
        events_within(&path, table, rows, bytes, memory).unwrap();

        let file = fs::File::open(&path).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        let mut keys = Vec::new();
        for batch in reader {
            let batch = batch.unwrap();
            let col = |name: &str| batch.column(batch.schema().index_of(name).unwrap()).clone();
            let node = col("node");
            let node = node.as_any().downcast_ref::<StringArray>().unwrap();
            let seq = col("monotonic_seq");
            let seq = seq.as_any().downcast_ref::<Int64Array>().unwrap();
            for i in 0..batch.num_rows() {
                keys.push((node.value(i).to_owned(), seq.value(i)));
            }
        }
        assert_eq!(keys.len() as u64, n);
        assert!(keys.windows(2).all(|w| w[0] <= w[1]), "not in order");
    }
}
