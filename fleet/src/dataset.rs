//! The dataset on disk: its layout (`<table>/contract_major=<M>/date=<YYYY-MM-DD>/part-*.parquet`),
//! its index `_dataset.json` (the contract version, the tables' columns, every run and its
//! partition, and every part file the dataset holds), and the file operations the writers need:
//! write a Parquet file, remove one run's rows from a partition, and compact a partition into one
//! file.
//!
//! **The index is the commit.** A part file the index does not list is never read. A writer
//! ([`Change`]) holds the lock file `_dataset.lock` (an OS advisory lock, [`WriterLock`]) for its
//! whole change, writes every new part under a fresh name, then commits by writing a new index
//! (temporary file, fsync, rename, fsync of the folder), and only then deletes the parts the new
//! index no longer lists. A kill at any instant leaves the previous index or the next one, each
//! with every file it lists whole. What a killed writer left behind is garbage by one rule:
//! anything in a partition folder named like a part (`part-*.parquet`, `*.parquet.tmp`) that the
//! committed index does not list, and the staging folder, are deleted by the next writer, which
//! holds the lock, so no live writer owns them.
//!
//! A file's rows are ordered by run id, a run's rows contiguous; a row group may hold many runs,
//! so removing or merging runs reads the run boundaries from the `run_id` column's statistics (or,
//! for a shared group, the column itself) and copies rows a group at a time (memory holds one row
//! group of the input and one being written). No link under the dataset is followed (`safe.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::parquet::arrow::arrow_reader::{
    ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use datafusion::parquet::arrow::{ArrowWriter, ProjectionMask};
use datafusion::parquet::basic::Compression;
use datafusion::parquet::file::properties::WriterProperties;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::arrow_schema;
use crate::columns::{CONTRACT_VERSION, TABLES};
use crate::safe;
use crate::stage::Stage;

/// The index file of a dataset.
pub const INDEX: &str = "_dataset.json";

/// The version of the index's shape (1.1.0 added `files`; an index without it is read by
/// listing its partition folders once, and the next writer lists them in it. 1.2.0 added the
/// table `quarantine`; an index without it has no rows in it, and the table reads empty).
pub const FORMAT_VERSION: &str = "1.2.0";

/// The lock file a writer holds for its whole change.
pub const LOCK: &str = "_dataset.lock";

/// The folder a writer stages a bundle's tables in.
pub const STAGING: &str = "_staging";

/// Rows per row group at most (a run's rows may span several, and a group may hold many runs):
/// the writer holds a row group in memory until it is full, and a snapshot row is large (a
/// quarantined body's reason may be a MiB).
pub fn row_group_rows(table: &str) -> usize {
    match table {
        "quarantine" => 256,
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
    /// Every part file the dataset holds, by table: paths relative to the dataset, with `/`
    /// (`events/contract_major=1/date=2026-05-25/part-….parquet`). Only these are read.
    #[serde(default)]
    pub files: BTreeMap<String, BTreeSet<String>>,
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
            files: BTreeMap::new(),
        }
    }

    /// Reads `DATASET/_dataset.json`; a dataset without one is empty. Every file it lists must be
    /// a part of one of its tables (`<table>/contract_major=<M>/date=<D>/part-….parquet`), or the
    /// index is refused.
    pub fn load(dataset: &Path) -> Result<Index, Error> {
        let path = dataset.join(INDEX);
        let Some(text) = safe::read_to_string(&path)? else {
            return Ok(Index::new());
        };
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| Error::at(&path, format!("not a dataset index: {e}")))?;
        let listed = value.get("files").is_some();
        let index: Index = serde_json::from_value(value)
            .map_err(|e| Error::at(&path, format!("not a dataset index: {e}")))?;
        let mut files = index.files;
        for (table, names) in &files {
            for name in names {
                if !is_part_of(table, name) {
                    return Err(Error::at(
                        &path,
                        format!(
                            "not a dataset index: /files/{} lists {name:?}, which is not a part \
                             file of that table",
                            diagwire::problem::printable(table)
                        ),
                    ));
                }
            }
        }
        if !listed {
            // An index written before `files` existed: its parts are what the folders hold.
            files = legacy_files(dataset)?;
        }
        // The columns are this tool's: older files read with them (new columns are null).
        Ok(Index {
            runs: index.runs,
            files,
            ..Index::new()
        })
    }

    /// Writes `DATASET/_dataset.json`: a temporary file, written to disk, renamed over it.
    pub fn save(&self, dataset: &Path) -> Result<(), Error> {
        let text =
            serde_json::to_string_pretty(self).map_err(|e| Error::at(dataset, e.to_string()))?;
        safe::write_atomic(dataset, &dataset.join(INDEX), text.as_bytes())
    }

    /// The listed files of `table` in the partition folder `dir` (relative, `/`-separated).
    pub fn files_in(&self, table: &str, dir: &str) -> Vec<String> {
        let prefix = format!("{dir}/");
        self.files
            .get(table)
            .into_iter()
            .flatten()
            .filter(|f| f.strip_prefix(&prefix).is_some_and(|n| !n.contains('/')))
            .cloned()
            .collect()
    }
}

/// Whether `rel` names a part file of `table`: `<table>/contract_major=…/date=…/part-….parquet`,
/// plain names only.
fn is_part_of(table: &str, rel: &str) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    let plain = |p: &str| {
        !p.is_empty() && p != "." && p != ".." && !p.contains(['\\', '\0']) && !p.starts_with('.')
    };
    parts.len() == 4
        && parts.iter().all(|p| plain(p))
        && parts[0] == table
        && TABLES.iter().any(|t| t.name == table)
        && parts[1].starts_with("contract_major=")
        && parts[2].starts_with("date=")
        && parts[3].starts_with("part-")
        && parts[3].ends_with(".parquet")
}

/// The part files the folders of every table hold (an index of format 1.0.0 listed none).
fn legacy_files(dataset: &Path) -> Result<BTreeMap<String, BTreeSet<String>>, Error> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for t in TABLES {
        for (dir, names) in partition_entries(dataset, t.name)? {
            for name in names {
                let rel = format!("{dir}/{name}");
                if is_part_of(t.name, &rel) {
                    out.entry(t.name.to_owned()).or_default().insert(rel);
                }
            }
        }
    }
    Ok(out)
}

/// Every partition folder of `table` (relative, `/`-separated) with the names of its entries;
/// a link anywhere on the way is refused.
fn partition_entries(dataset: &Path, table: &str) -> Result<Vec<(String, Vec<String>)>, Error> {
    let mut out = Vec::new();
    safe::check(dataset, Path::new(table))?;
    let table_dir = dataset.join(table);
    if !table_dir.is_dir() {
        return Ok(out);
    }
    for major in names(&table_dir)? {
        let rel_major = Path::new(table).join(&major);
        safe::check(dataset, &rel_major)?;
        if !dataset.join(&rel_major).is_dir() {
            continue;
        }
        for date in names(&dataset.join(&rel_major))? {
            let rel = rel_major.join(&date);
            safe::check(dataset, &rel)?;
            if !dataset.join(&rel).is_dir() {
                continue;
            }
            out.push((
                format!("{table}/{major}/{date}"),
                names(&dataset.join(&rel))?,
            ));
        }
    }
    Ok(out)
}

/// The names in a folder, sorted (a name that is not UTF-8 is left out: nothing of ours).
fn names(dir: &Path) -> Result<Vec<String>, Error> {
    let mut out: Vec<String> = fs::read_dir(dir)
        .map_err(|e| Error::at(dir, e.to_string()))?
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    out.sort();
    Ok(out)
}

/// The absolute path of the listed file `rel`, checked: no link on the way, a regular file.
pub fn part_path(dataset: &Path, rel: &str) -> Result<PathBuf, Error> {
    safe::check(dataset, Path::new(rel))?;
    let path = dataset.join(rel);
    match fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() => Ok(path),
        Ok(_) => Err(Error::at(&path, "is not a regular file")),
        Err(e) => Err(Error::at(
            &path,
            format!("a part file the index lists cannot be read: {e}"),
        )),
    }
}

impl Default for Index {
    fn default() -> Self {
        Index::new()
    }
}

/// The folder of one table's partition.
pub fn partition_dir(dataset: &Path, table: &str, major: u64, date: &str) -> PathBuf {
    dataset
        .join(table)
        .join(format!("contract_major={major}"))
        .join(format!("date={date}"))
}

/// The Parquet writer settings of every file of `table`: Snappy (the writer compresses each page
/// with a fresh codec, and zstd's costs a CPU feature query, which a virtual machine traps, each
/// time: a quarter of an export's CPU; see `docs/fleet.md`), bounded row groups, statistics.
pub fn writer_properties(table: &str) -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
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
        // A leftover of that name (a link included) is removed, never followed.
        safe::remove(&tmp)?;
        safe::step("write", &tmp);
        let file = safe::create_new(&tmp)?;
        let mut writer = ArrowWriter::try_new(file, schema, Some(writer_properties(table)))
            .map_err(|e| Error::at(&tmp, e.to_string()))?;
        let at = tmp.clone();
        let encoder = Stage::start("parquet-writer", IN_FLIGHT, &tmp, move |batches| {
            for batch in batches {
                writer
                    .write(&batch)
                    .map_err(|e| Error::at(&at, e.to_string()))?;
            }
            // On disk before it is renamed into place, so an index that lists it finds it whole.
            writer
                .into_inner()
                .map_err(|e| Error::at(&at, e.to_string()))?
                .sync_all()
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
        safe::rename(&self.tmp, path)
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
    let file = safe::open(path)?;
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
        if let (Some(min), Some(max)) = (min, max)
            && min == max
        {
            out.push(Segment {
                run: min,
                file,
                group: g,
                start: 0,
                len: rows,
            });
            continue;
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

/// The partition folder (relative, `/`-separated) of `table` for a run's partition.
pub fn partition_rel(table: &str, major: u64, date: &str) -> String {
    format!("{table}/contract_major={major}/date={date}")
}

/// The folder part of a listed file's path.
fn dir_of(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(d, _)| d)
}

/// One change of a dataset by its one writer: the lock held, the committed index loaded and
/// the garbage of a killed writer deleted ([`Change::begin`]); new parts are written under fresh
/// names and listed in [`Change::index`], replaced ones unlisted; [`Change::commit`] writes the
/// index and then deletes what it no longer lists. A change dropped without a commit deletes the
/// files it wrote and leaves the dataset as it was.
pub struct Change {
    dataset: PathBuf,
    /// The index being changed (committed by [`Change::commit`]).
    pub index: Index,
    /// Files this change wrote (relative).
    created: Vec<String>,
    /// Files the committed index lists that this change unlisted: deleted after the commit.
    obsolete: Vec<String>,
    committed: bool,
    _lock: WriterLock,
}

impl Change {
    /// Takes the writer lock of `dataset` (waiting as `wait` says), loads the committed index and
    /// deletes what an earlier writer left unlisted.
    pub fn begin(dataset: &Path, wait: &Wait<'_>) -> Result<Change, Error> {
        let lock = WriterLock::acquire(dataset, wait)?;
        let index = Index::load(dataset)?;
        collect_garbage(dataset, &index)?;
        Ok(Change {
            dataset: dataset.to_owned(),
            index,
            created: Vec::new(),
            obsolete: Vec::new(),
            committed: false,
            _lock: lock,
        })
    }

    /// A fresh part file in the partition folder `dir` (relative): its relative and absolute
    /// paths. The name is new: neither it nor its temporary name exists.
    pub fn fresh_part(&mut self, dir: &str) -> Result<(String, PathBuf), Error> {
        let abs_dir = safe::ensure_dir(&self.dataset, Path::new(dir))?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mut attempt = 0u64;
        loop {
            let seed = format!(
                "{}\n{nanos}\n{}\n{attempt}",
                std::process::id(),
                self.created.len()
            );
            let name = format!("part-{:016x}.parquet", fnv(seed.as_bytes()));
            let abs = abs_dir.join(&name);
            let taken = |p: &Path| fs::symlink_metadata(p).is_ok();
            if !taken(&abs) && !taken(&abs.with_extension("parquet.tmp")) {
                let rel = format!("{dir}/{name}");
                self.created.push(rel.clone());
                return Ok((rel, abs));
            }
            attempt += 1;
        }
    }

    /// Lists `rel` (a file this change wrote) in `table`.
    pub fn add(&mut self, table: &str, rel: String) {
        self.index
            .files
            .entry(table.to_owned())
            .or_default()
            .insert(rel);
    }

    /// Unlists `rel` from `table`; its file is deleted after the commit.
    pub fn unlist(&mut self, table: &str, rel: &str) {
        if let Some(files) = self.index.files.get_mut(table) {
            files.remove(rel);
        }
        self.obsolete.push(rel.to_owned());
    }

    /// Removes the rows of `run` from the listed files of `table` in the partition folder `dir`:
    /// each file holding some is replaced by a new one without them (or unlisted when it held
    /// nothing else).
    pub fn remove_run(&mut self, table: &str, dir: &str, run: &str) -> Result<(), Error> {
        let Some(t) = TABLES.iter().find(|t| t.name == table) else {
            return Ok(());
        };
        let schema = Arc::new(arrow_schema::schema(t));
        for rel in self.index.files_in(table, dir) {
            let path = part_path(&self.dataset, &rel)?;
            let segs = segments(&path, 0)?;
            if !segs.iter().any(|s| s.run == run) {
                continue;
            }
            let keep: Vec<Segment> = segs.into_iter().filter(|s| s.run != run).collect();
            self.unlist(table, &rel);
            if keep.is_empty() {
                continue;
            }
            let (new_rel, new_path) = self.fresh_part(dir)?;
            let mut w = PartWriter::create_for(&new_path, schema.clone(), table)?;
            copy_segments(std::slice::from_ref(&path), &keep, &mut w)?;
            w.finish(&new_path)?;
            self.add(table, new_rel);
        }
        Ok(())
    }

    /// Merges the listed files of `table` in the partition folder `dir` into one, its rows
    /// ordered by run id (a run's rows in their order), so a partition is one large file however
    /// many exports added to it. Row groups fill up across runs: a run of a few hundred rows does
    /// not pay for a row group of its own (the footer describes every column of every row group,
    /// and the events table has hundreds). Whether there was anything to merge.
    pub fn compact_dir(&mut self, table: &str, dir: &str) -> Result<bool, Error> {
        let listed = self.index.files_in(table, dir);
        if listed.len() < 2 {
            return Ok(false);
        }
        let Some(t) = TABLES.iter().find(|t| t.name == table) else {
            return Ok(false);
        };
        let schema = Arc::new(arrow_schema::schema(t));
        let mut files = Vec::with_capacity(listed.len());
        let mut segs: Vec<Segment> = Vec::new();
        for (i, rel) in listed.iter().enumerate() {
            let path = part_path(&self.dataset, rel)?;
            segs.extend(segments(&path, i)?);
            files.push(path);
        }
        segs.sort();
        let (new_rel, target) = self.fresh_part(dir)?;
        let mut w = PartWriter::create_for(&target, schema, table)?;
        copy_segments(&files, &segs, &mut w)?;
        w.finish(&target)?;
        for rel in &listed {
            self.unlist(table, rel);
        }
        self.add(table, new_rel);
        Ok(true)
    }

    /// Commits: writes the index (temporary file, fsync, rename, fsync of the folder), then
    /// deletes the files it no longer lists.
    pub fn commit(mut self) -> Result<(), Error> {
        for (table, files) in &self.index.files {
            for rel in files {
                if !is_part_of(table, rel) {
                    return Err(Error::at(&self.dataset.join(rel), "not a part file"));
                }
            }
        }
        self.index.save(&self.dataset)?;
        self.committed = true;
        for rel in std::mem::take(&mut self.obsolete) {
            safe::remove(&self.dataset.join(&rel))?;
        }
        Ok(())
    }
}

impl Drop for Change {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        // Not committed: nothing this change wrote is listed; delete it (a leftover is garbage
        // the next writer deletes anyway).
        for rel in &self.created {
            let path = self.dataset.join(rel);
            if safe::check(&self.dataset, Path::new(rel)).is_ok() {
                let _ = fs::remove_file(path.with_extension("parquet.tmp"));
                let _ = fs::remove_file(&path);
            }
        }
        let _ = fs::remove_dir_all(self.dataset.join(STAGING));
    }
}

/// Deletes what a killed writer left: in every partition folder, a file named like a part or a
/// part's temporary file that `index` does not list; the staging folder; the index's temporary
/// file. Only the writer holding the lock calls it, so nothing it deletes is a live writer's.
pub fn collect_garbage(dataset: &Path, index: &Index) -> Result<(), Error> {
    for t in TABLES {
        let listed = index.files.get(t.name);
        for (dir, names) in partition_entries(dataset, t.name)? {
            for name in names {
                let rel = format!("{dir}/{name}");
                let ours = name.starts_with("part-")
                    && (name.ends_with(".parquet") || name.ends_with(".parquet.tmp"));
                if ours && !listed.is_some_and(|l| l.contains(&rel)) {
                    safe::remove(&dataset.join(&rel))?;
                }
            }
        }
    }
    let staging = dataset.join(STAGING);
    safe::check(dataset, Path::new(STAGING))?;
    if staging.exists() {
        safe::step("unlink", &staging);
        fs::remove_dir_all(&staging).map_err(|e| Error::at(&staging, e.to_string()))?;
    }
    safe::remove(&dataset.join(INDEX).with_extension("tmp"))
}

/// How long a writer waits for another to finish, and what it says while it waits.
pub struct Wait<'a> {
    /// At most this long; zero fails at once.
    pub limit: Duration,
    /// Called once, when the lock is held by another writer, with a sentence saying so.
    pub waiting: &'a dyn Fn(&str),
}

/// How long a writer waits for another by default: 10 minutes.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(600);

impl Default for Wait<'_> {
    fn default() -> Self {
        Wait {
            limit: DEFAULT_WAIT,
            waiting: &|_| {},
        }
    }
}

/// The writer lock of a dataset: an exclusive OS advisory lock (`flock`, through `fs4`) on
/// `_dataset.lock`, held while this value lives and released by the OS when the process ends,
/// however it ends. Readers never take it.
pub struct WriterLock {
    _file: File,
}

impl WriterLock {
    /// Takes the lock of `dataset` (created when missing), polling every 100 ms up to
    /// `wait.limit`; another writer holding it past that is an error naming the lock file.
    pub fn acquire(dataset: &Path, wait: &Wait<'_>) -> Result<WriterLock, Error> {
        let path = dataset.join(LOCK);
        let file = safe::open_or_create(&path)?;
        let start = Instant::now();
        let mut told = false;
        loop {
            match fs4::FileExt::try_lock(&file) {
                Ok(()) => return Ok(WriterLock { _file: file }),
                Err(fs4::TryLockError::WouldBlock) => {}
                Err(fs4::TryLockError::Error(e)) => return Err(Error::at(&path, e.to_string())),
            }
            let waited = start.elapsed();
            if waited >= wait.limit {
                return Err(Error::at(
                    &path,
                    format!(
                        "another writer is changing this dataset (it holds this lock file); \
                         gave up after waiting {}s (a writer waits up to --wait)",
                        waited.as_secs()
                    ),
                ));
            }
            if !told {
                told = true;
                (wait.waiting)(&format!(
                    "{}: another writer is changing this dataset; waiting for it (up to {}s)",
                    diagwire::problem::printable(&path.display().to_string()),
                    wait.limit.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(100).min(wait.limit - waited));
        }
    }
}

/// Compacts every partition of every table in one change; returns how many were merged.
pub fn compact(dataset: &Path, wait: &Wait<'_>) -> Result<usize, Error> {
    let mut change = Change::begin(dataset, wait)?;
    let mut merged = 0;
    for t in TABLES {
        let dirs: BTreeSet<String> = change
            .index
            .files
            .get(t.name)
            .into_iter()
            .flatten()
            .map(|f| dir_of(f).to_owned())
            .collect();
        for dir in dirs {
            merged += usize::from(change.compact_dir(t.name, &dir)?);
        }
    }
    if merged > 0 {
        change.commit()?;
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
