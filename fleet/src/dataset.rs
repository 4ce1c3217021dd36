//! The dataset on disk: its layout (`<table>/contract_major=<M>/date=<YYYY-MM-DD>/part-*.parquet`),
//! its index `_dataset.json` (the contract version, the tables' columns, every run and its
//! partition), and the file operations the export needs: write a Parquet file, remove one run's
//! rows from a partition, and compact a partition into one file. Every file is written under a
//! temporary name and renamed into place. A file's rows are ordered by run id, a run's rows
//! contiguous; a row group may hold many runs, so removing or merging runs reads the run boundaries
//! from the `run_id` column's statistics (or, for a shared group, the column itself) and copies
//! rows a group at a time (memory holds one row group of the input and one being written).

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::parquet::arrow::arrow_reader::{
    ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use datafusion::parquet::arrow::{ArrowWriter, ProjectionMask};
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::WriterProperties;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::arrow_schema;
use crate::columns::{CONTRACT_VERSION, TABLES};
use crate::stage::Stage;

/// The index file of a dataset.
pub const INDEX: &str = "_dataset.json";

/// The version of the index's shape.
pub const FORMAT_VERSION: &str = "1.0.0";

/// Rows per row group at most (a run's rows may span several, and a group may hold many runs):
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

/// The Parquet writer settings of every file of `table`: zstd (level 1: the writer sets up a
/// compressor per page, which at level 3 costs more than most pages' compression), bounded row
/// groups, statistics.
pub fn writer_properties(table: &str) -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap_or_default()))
        .set_max_row_group_size(row_group_rows(table))
        // Whole run ids in the statistics: a row group's run is read from them.
        .set_statistics_truncate_length(None)
        .build()
}

/// Batches on their way to a file's encoding thread at most: the reading side runs ahead of the
/// encoding by this much.
const IN_FLIGHT: usize = 2;

/// A Parquet file being written under a temporary name. Encoding and compressing run on a thread
/// of their own (a [`Stage`]), fed a few batches ahead, so reading the next rows overlaps writing
/// the last. A writer dropped on an error path waits for its thread; the file stays a temporary
/// one.
pub struct PartWriter {
    tmp: PathBuf,
    encoder: Stage<RecordBatch, ()>,
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
        let mut writer = ArrowWriter::try_new(file, schema, Some(writer_properties(table)))
            .map_err(|e| Error::at(&tmp, e.to_string()))?;
        let at = tmp.clone();
        let encoder = Stage::start("parquet-writer", IN_FLIGHT, &tmp, move |batches| {
            for batch in batches {
                writer
                    .write(&batch)
                    .map_err(|e| Error::at(&at, e.to_string()))?;
            }
            writer
                .close()
                .map(|_| ())
                .map_err(|e| Error::at(&at, e.to_string()))
        })?;
        Ok(PartWriter {
            tmp,
            encoder,
            rows: 0,
            arrow_bytes: 0,
        })
    }

    /// Appends a batch.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), Error> {
        self.rows += batch.num_rows() as u64;
        self.arrow_bytes += batch.get_array_memory_size() as u64;
        self.encoder.send(batch.clone())
    }

    /// Takes no more batches: the encoder writes the file's end while the caller goes on.
    pub fn close(&mut self) {
        self.encoder.close();
    }

    /// Finishes the file and moves it to `path`.
    pub fn finish(mut self, path: &Path) -> Result<(), Error> {
        self.encoder.join()?;
        fs::rename(&self.tmp, path).map_err(|e| Error::at(path, e.to_string()))
    }

    /// Drops the file.
    pub fn abandon(mut self) {
        let _ = self.encoder.join();
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

/// The rows of one run within one row group of one file: rows `start..start + len` of group
/// `group` of file `file` (an index into the files being read).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Segment {
    run: String,
    file: usize,
    group: usize,
    start: usize,
    len: usize,
}

fn open_reader(path: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>, Error> {
    let file = File::open(path).map_err(|e| Error::at(path, e.to_string()))?;
    ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| Error::at(path, e.to_string()))
}

/// The runs of each row group of `path` (file `file`), in row order. Column 0 is `run_id` in
/// every table and its statistics are whole: a group whose minimum and maximum agree holds one
/// run; only a group shared by several runs has its `run_id` column read.
fn segments(path: &Path, file: usize) -> Result<Vec<Segment>, Error> {
    let builder = open_reader(path)?;
    let metadata = builder.metadata().clone();
    let mut out = Vec::new();
    for g in 0..metadata.num_row_groups() {
        let group = metadata.row_group(g);
        let rows = usize::try_from(group.num_rows()).unwrap_or(0);
        let text = |b: Option<&[u8]>| b.map(|b| String::from_utf8_lossy(b).into_owned());
        let (min, max) = group.column(0).statistics().map_or((None, None), |s| {
            (text(s.min_bytes_opt()), text(s.max_bytes_opt()))
        });
        if let (Some(min), Some(max)) = (min, max) {
            if min == max {
                out.push(Segment {
                    run: min,
                    file,
                    group: g,
                    start: 0,
                    len: rows,
                });
                continue;
            }
        }
        let builder = open_reader(path)?;
        let mask = ProjectionMask::leaves(builder.parquet_schema(), [0]);
        let reader = builder
            .with_projection(mask)
            .with_row_groups(vec![g])
            .with_batch_size(8192)
            .build()
            .map_err(|e| Error::at(path, e.to_string()))?;
        let mut row = 0;
        for batch in reader {
            let batch = batch.map_err(|e| Error::at(path, e.to_string()))?;
            let Some(runs) = batch.column(0).as_any().downcast_ref::<StringArray>() else {
                return Err(Error::at(path, "column 0 is not the run id"));
            };
            for i in 0..runs.len() {
                let run = if runs.is_valid(i) { runs.value(i) } else { "" };
                match out.last_mut() {
                    Some(s) if s.group == g && s.run == run && s.start + s.len == row => s.len += 1,
                    _ => out.push(Segment {
                        run: run.to_owned(),
                        file,
                        group: g,
                        start: row,
                        len: 1,
                    }),
                }
                row += 1;
            }
        }
    }
    Ok(out)
}

/// Writes the rows of `segments` (of `files`), in that order, into `out`. Adjacent segments of the
/// same row group are read together; memory holds one row group of the input at a time.
fn copy_segments(
    files: &[PathBuf],
    segments: &[Segment],
    out: &mut PartWriter,
) -> Result<(), Error> {
    let mut i = 0;
    while i < segments.len() {
        let first = &segments[i];
        let mut end = first.start + first.len;
        let mut j = i + 1;
        while j < segments.len()
            && segments[j].file == first.file
            && segments[j].group == first.group
            && segments[j].start == end
        {
            end += segments[j].len;
            j += 1;
        }
        let path = &files[first.file];
        let selection = RowSelection::from(vec![
            RowSelector::skip(first.start),
            RowSelector::select(end - first.start),
        ]);
        let reader = open_reader(path)?
            .with_row_groups(vec![first.group])
            .with_row_selection(selection)
            .with_batch_size(8192)
            .build()
            .map_err(|e| Error::at(path, e.to_string()))?;
        for batch in reader {
            let batch = batch.map_err(|e| Error::at(path, e.to_string()))?;
            out.write(&batch)?;
        }
        i = j;
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
        let segs = segments(&path, 0)?;
        if !segs.iter().any(|s| s.run == run) {
            continue;
        }
        let keep: Vec<Segment> = segs.into_iter().filter(|s| s.run != run).collect();
        if keep.is_empty() {
            fs::remove_file(&path).map_err(|e| Error::at(&path, e.to_string()))?;
            continue;
        }
        let mut w = PartWriter::create_for(&path, schema.clone(), table)?;
        copy_segments(std::slice::from_ref(&path), &keep, &mut w)?;
        w.finish(&path)?;
    }
    Ok(())
}

/// Merges every file of a partition folder into one, its rows ordered by run id (a run's rows in
/// their order), so a partition is one large file however many exports added to it. Row groups
/// fill up across runs: a run of a few hundred rows does not pay for a row group of its own (the
/// footer describes every column of every row group, and the events table has hundreds).
pub fn compact_dir(dir: &Path, table: &str) -> Result<bool, Error> {
    let files = parquet_files(dir);
    if files.len() < 2 {
        return Ok(false);
    }
    let Some(t) = TABLES.iter().find(|t| t.name == table) else {
        return Ok(false);
    };
    let schema = Arc::new(arrow_schema::schema(t));
    let mut segs: Vec<Segment> = Vec::new();
    for (i, path) in files.iter().enumerate() {
        segs.extend(segments(path, i)?);
    }
    segs.sort();
    let mut runs: Vec<&str> = segs.iter().map(|s| s.run.as_str()).collect();
    runs.dedup();
    let name = format!("part-{:016x}.parquet", fnv(runs.join("\n").as_bytes()));
    let target = dir.join(name);
    let mut w = PartWriter::create_for(&target, schema, table)?;
    copy_segments(&files, &segs, &mut w)?;
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
