//! The dataset on disk: its layout (`<table>/contract_major=<M>/date=<YYYY-MM-DD>/part-*.parquet`),
//! its index `_dataset.json` (the contract version, the tables' columns, every run and its
//! partition), and the file operations the export needs: write a Parquet file, remove one run's
//! rows from a partition, and compact a partition into one file. Every file is written under a
//! temporary name and renamed into place, and every row group holds the rows of one run only, so
//! removing or merging runs moves whole row groups, one at a time (memory holds one row group).

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::WriterProperties;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::arrow_schema;
use crate::columns::{CONTRACT_VERSION, TABLES};

/// The index file of a dataset.
pub const INDEX: &str = "_dataset.json";

/// The version of the index's shape.
pub const FORMAT_VERSION: &str = "1.0.0";

/// Rows per row group at most (a run's rows may span several; a row group never holds two runs):
/// the writer holds a row group in memory until it is full, and a snapshot row is large.
pub fn row_group_rows(table: &str) -> usize {
    match table {
        "snapshots" | "vastai" => 4 * 1024,
        _ => 128 * 1024,
    }
}

/// `_dataset.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Index {
    /// The shape of this file.
    pub format_version: String,
    /// The contract version the columns were generated from (the exporting tool's).
    pub contract_version: String,
    /// The partition columns, in directory order.
    pub partition_columns: Vec<String>,
    /// Every table and its columns (name and Arrow type).
    pub tables: Vec<TableIndex>,
    /// Every run the dataset holds, by run id.
    pub runs: BTreeMap<String, RunIndex>,
}

/// A table's columns as the index records them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableIndex {
    /// The table.
    pub name: String,
    /// `(column, Arrow type)` in order.
    pub columns: Vec<(String, String)>,
}

/// One run of the dataset.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RunIndex {
    /// The bundle it was exported from (file name).
    pub bundle: String,
    /// The contract version its manifest declares (`1.0.0` when it declares none).
    pub contract_version: String,
    /// Its partition: the contract major.
    pub contract_major: u64,
    /// Its partition: the UTC date of its earliest record.
    pub date: String,
    /// Rows per table.
    pub rows: BTreeMap<String, u64>,
}

impl Index {
    /// The index of an empty dataset.
    pub fn new() -> Index {
        Index {
            format_version: FORMAT_VERSION.into(),
            contract_version: CONTRACT_VERSION.into(),
            partition_columns: vec!["contract_major".into(), "date".into()],
            tables: TABLES
                .iter()
                .map(|t| TableIndex {
                    name: t.name.into(),
                    columns: arrow_schema::schema(t)
                        .fields()
                        .iter()
                        .map(|f| (f.name().clone(), f.data_type().to_string()))
                        .collect(),
                })
                .collect(),
            runs: BTreeMap::new(),
        }
    }

    /// Reads `DATASET/_dataset.json`; a dataset without one is empty.
    pub fn load(dataset: &Path) -> Result<Index, Error> {
        let path = dataset.join(INDEX);
        match fs::read_to_string(&path) {
            Ok(text) => {
                let mut index: Index = serde_json::from_str(&text)
                    .map_err(|e| Error::at(&path, format!("not a dataset index: {e}")))?;
                // The columns are this tool's: older files read with them (new columns are null).
                let runs = std::mem::take(&mut index.runs);
                index = Index {
                    runs,
                    ..Index::new()
                };
                Ok(index)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Index::new()),
            Err(e) => Err(Error::at(&path, e.to_string())),
        }
    }

    /// Writes `DATASET/_dataset.json` (under a temporary name, then renamed).
    pub fn save(&self, dataset: &Path) -> Result<(), Error> {
        let text =
            serde_json::to_string_pretty(self).map_err(|e| Error::at(dataset, e.to_string()))?;
        write_atomic(&dataset.join(INDEX), text.as_bytes())
    }
}

impl Default for Index {
    fn default() -> Self {
        Index::new()
    }
}

/// Writes `bytes` to `path` through a temporary file beside it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, bytes).map_err(|e| Error::at(&tmp, e.to_string()))?;
    fs::rename(&tmp, path).map_err(|e| Error::at(path, e.to_string()))
}

/// The folder of one table's partition.
pub fn partition_dir(dataset: &Path, table: &str, major: u64, date: &str) -> PathBuf {
    dataset
        .join(table)
        .join(format!("contract_major={major}"))
        .join(format!("date={date}"))
}

/// The Parquet writer settings of every file of `table`: zstd, bounded row groups, statistics.
pub fn writer_properties(table: &str) -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).unwrap_or_default()))
        .set_max_row_group_size(row_group_rows(table))
        // Whole run ids in the statistics: a row group's run is read from them.
        .set_statistics_truncate_length(None)
        .build()
}

/// A Parquet file being written under a temporary name.
pub struct PartWriter {
    tmp: PathBuf,
    writer: ArrowWriter<File>,
    /// Rows written.
    pub rows: u64,
    /// The Arrow memory of the batches written, summed (what a sort of the file will hold).
    pub arrow_bytes: u64,
}

impl PartWriter {
    /// Starts a file of `table` whose final name will be `path`.
    pub fn create_for(path: &Path, schema: SchemaRef, table: &str) -> Result<PartWriter, Error> {
        let tmp = path.with_extension("parquet.tmp");
        if let Some(dir) = tmp.parent() {
            fs::create_dir_all(dir).map_err(|e| Error::at(dir, e.to_string()))?;
        }
        let file = File::create(&tmp).map_err(|e| Error::at(&tmp, e.to_string()))?;
        let writer = ArrowWriter::try_new(file, schema, Some(writer_properties(table)))
            .map_err(|e| Error::at(&tmp, e.to_string()))?;
        Ok(PartWriter {
            tmp,
            writer,
            rows: 0,
            arrow_bytes: 0,
        })
    }

    /// Appends a batch.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), Error> {
        self.rows += batch.num_rows() as u64;
        self.arrow_bytes += batch.get_array_memory_size() as u64;
        self.writer
            .write(batch)
            .map_err(|e| Error::at(&self.tmp, e.to_string()))
    }

    /// Ends the current row group (at a run boundary).
    pub fn flush(&mut self) -> Result<(), Error> {
        self.writer
            .flush()
            .map_err(|e| Error::at(&self.tmp, e.to_string()))
    }

    /// Finishes the file and moves it to `path`.
    pub fn finish(self, path: &Path) -> Result<(), Error> {
        self.writer
            .close()
            .map_err(|e| Error::at(&self.tmp, e.to_string()))?;
        fs::rename(&self.tmp, path).map_err(|e| Error::at(path, e.to_string()))
    }

    /// Drops the file.
    pub fn abandon(self) {
        drop(self.writer);
        let _ = fs::remove_file(&self.tmp);
    }
}

/// The Parquet files of a folder, in name order.
pub fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    out.sort();
    out
}

/// The run of each row group of a file (column 0 is `run_id` in every table).
fn row_group_runs(path: &Path) -> Result<Vec<String>, Error> {
    let file = File::open(path).map_err(|e| Error::at(path, e.to_string()))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| Error::at(path, e.to_string()))?;
    let groups = builder.metadata().num_row_groups();
    let mut out = Vec::with_capacity(groups);
    for g in 0..groups {
        let stats = builder
            .metadata()
            .row_group(g)
            .column(0)
            .statistics()
            .and_then(|s| {
                s.min_bytes_opt()
                    .map(|b| String::from_utf8_lossy(b).into_owned())
            });
        match stats {
            Some(run) => out.push(run),
            None => {
                // No statistics: read the group's first run id.
                let file = File::open(path).map_err(|e| Error::at(path, e.to_string()))?;
                let mut r = ParquetRecordBatchReaderBuilder::try_new(file)
                    .and_then(|b| b.with_row_groups(vec![g]).with_batch_size(1).build())
                    .map_err(|e| Error::at(path, e.to_string()))?;
                let run = r
                    .next()
                    .transpose()
                    .map_err(|e| Error::at(path, e.to_string()))?
                    .and_then(|b| first_run(&b));
                out.push(run.unwrap_or_default());
            }
        }
    }
    Ok(out)
}

fn first_run(b: &RecordBatch) -> Option<String> {
    let a = b.column(0).as_any().downcast_ref::<StringArray>()?;
    (!a.is_empty() && a.is_valid(0)).then(|| a.value(0).to_owned())
}

/// Copies the row groups `groups` of `path` into `out`, one row group at a time.
fn copy_groups(path: &Path, groups: Vec<usize>, out: &mut PartWriter) -> Result<(), Error> {
    for g in groups {
        let file = File::open(path).map_err(|e| Error::at(path, e.to_string()))?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .and_then(|b| b.with_row_groups(vec![g]).with_batch_size(8192).build())
            .map_err(|e| Error::at(path, e.to_string()))?;
        for batch in reader {
            let batch = batch.map_err(|e| Error::at(path, e.to_string()))?;
            out.write(&batch)?;
        }
    }
    Ok(())
}

/// Removes the rows of `run` from every file of `dir` (a partition of `table`).
pub fn remove_run(dir: &Path, table: &str, run: &str) -> Result<(), Error> {
    let Some(t) = TABLES.iter().find(|t| t.name == table) else {
        return Ok(());
    };
    let schema = Arc::new(arrow_schema::schema(t));
    for path in parquet_files(dir) {
        let runs = row_group_runs(&path)?;
        if !runs.iter().any(|r| r == run) {
            continue;
        }
        let keep: Vec<usize> = (0..runs.len()).filter(|g| runs[*g] != run).collect();
        if keep.is_empty() {
            fs::remove_file(&path).map_err(|e| Error::at(&path, e.to_string()))?;
            continue;
        }
        let mut w = PartWriter::create_for(&path, schema.clone(), table)?;
        let mut last: Option<&str> = None;
        for g in keep {
            if last.is_some_and(|l| l != runs[g]) {
                w.flush()?;
            }
            copy_groups(&path, vec![g], &mut w)?;
            last = Some(&runs[g]);
        }
        w.finish(&path)?;
    }
    Ok(())
}

/// Merges every file of a partition folder into one, its row groups ordered by run id (a run's
/// groups in their order), so a partition is one large file however many exports added to it.
pub fn compact_dir(dir: &Path, table: &str) -> Result<bool, Error> {
    let files = parquet_files(dir);
    if files.len() < 2 {
        return Ok(false);
    }
    let Some(t) = TABLES.iter().find(|t| t.name == table) else {
        return Ok(false);
    };
    let schema = Arc::new(arrow_schema::schema(t));
    let mut groups: Vec<(String, usize, usize)> = Vec::new();
    for (i, path) in files.iter().enumerate() {
        for (g, run) in row_group_runs(path)?.into_iter().enumerate() {
            groups.push((run, i, g));
        }
    }
    groups.sort();
    let name = format!(
        "part-{:016x}.parquet",
        fnv(groups
            .iter()
            .map(|(r, _, _)| r.as_str())
            .collect::<Vec<_>>()
            .join("\n")
            .as_bytes(),)
    );
    let target = dir.join(name);
    let mut w = PartWriter::create_for(&target, schema, table)?;
    let mut last: Option<String> = None;
    for (run, i, g) in &groups {
        if last.as_deref().is_some_and(|l| l != run) {
            w.flush()?;
        }
        copy_groups(&files[*i], vec![*g], &mut w)?;
        last = Some(run.clone());
    }
    w.finish(&target)?;
    for f in files {
        if f != target {
            fs::remove_file(&f).map_err(|e| Error::at(&f, e.to_string()))?;
        }
    }
    Ok(true)
}

/// Compacts every partition of every table; returns how many were merged.
pub fn compact(dataset: &Path) -> Result<usize, Error> {
    let mut merged = 0;
    for t in TABLES {
        for dir in partitions(&dataset.join(t.name)) {
            merged += usize::from(compact_dir(&dir, t.name)?);
        }
    }
    Ok(merged)
}

/// The partition folders of a table folder (two levels of `key=value`).
pub fn partitions(table_dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for major in fs::read_dir(table_dir).into_iter().flatten().flatten() {
        for date in fs::read_dir(major.path()).into_iter().flatten().flatten() {
            if date.path().is_dir() {
                out.push(date.path());
            }
        }
    }
    out.sort();
    out
}

/// FNV-1a of `bytes`: the stable name of a part file.
pub fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}
