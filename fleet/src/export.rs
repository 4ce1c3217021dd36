//! `diagwire export`: bundles into the dataset. Each bundle is read once through the one record
//! walk (`diagwire::bundle::records::walk_into`, a [`Consumer`]); each record becomes a row of its
//! table (`rows.rs`), appended to Arrow builders on a thread per table and streamed in batches into
//! one staging Parquet file per table (encoded on a thread of its own), so memory holds a few
//! groups of records' text, a batch, a window of events and the row group being written, never
//! the bundle. Events are held back in a small window and written smallest first, which puts
//! a bundle's nearly sorted events in order; only a run the window cannot order is sorted. When the bundle has been read, its run is known (the manifest's `run_id`, else the
//! one the boot records agree on, else the directory's name) and so is its partition; the run's
//! old rows are removed (the files holding them replaced by new ones without them), the staging
//! files move into their partitions under fresh names, the touched partitions are compacted into
//! one file each, and the whole export is committed at once by writing `_dataset.json`
//! ([`dataset::Change`]: the writer lock held throughout, nothing the index does not list ever
//! read). An export that fails leaves the dataset as it was. A record the walk refuses is a
//! located problem in the report, never a row. A body the collector quarantined at ingest is a
//! row of the table `quarantine` (its `.why.json` the record), not a problem of the export.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::Receiver;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use diagwire::Problem;
use diagwire::bundle::read::{BundleReader, Limits};
use diagwire::bundle::records::{Consumer, Item, Walk, walk_into};
use diagwire::layout::{FileKind, Role};
use diagwire::quarantine::{Quarantined, WHY_SUFFIX};
use diagwire::v1::Record;

use crate::columns::TABLES;
use crate::dataset::{self, Change, PartWriter, RunIndex, Wait};
use crate::rows::{Context, Rows};
use crate::stage::Stage;
use crate::table::Table;
use crate::{Error, arrow_schema, sort};

/// Rows per batch handed to the Parquet writer: snapshots and vast.ai records are large (a
/// snapshot's body is kilobytes of JSON), so their batches are small; a quarantined body's
/// `.why.json` may be up to a MiB, and a run has few of them.
fn chunk(table: &str) -> usize {
    match table {
        "quarantine" => 32,
        "snapshots" | "vastai" => 256,
        _ => 4096,
    }
}

/// What an export did.
#[derive(Debug, Default)]
pub struct Report {
    /// The runs exported, by bundle: `(bundle, run id, rows per table)`.
    pub runs: Vec<(String, String, BTreeMap<String, u64>)>,
    /// Runs that replaced an earlier export of the same run.
    pub replaced: Vec<String>,
    /// Records and files that could not be read (not exported), located.
    pub problems: Vec<Problem>,
    /// Partitions merged into one file.
    pub compacted: usize,
}

impl Report {
    /// The records that could not be read and were not exported: the distinct records the
    /// problems locate (a record with several problems counts once).
    pub fn records_not_exported(&self) -> usize {
        let records: BTreeSet<(&str, usize)> = self
            .problems
            .iter()
            .filter_map(|p| p.location.record.map(|r| (p.location.file.as_str(), r)))
            .collect();
        records.len()
    }

    /// The files that could not be read as a whole (none of their records exported, however
    /// many they hold): the distinct files of the problems located at a file, not a record.
    pub fn files_not_exported(&self) -> usize {
        let files: BTreeSet<&str> = self
            .problems
            .iter()
            .filter(|p| p.location.record.is_none())
            .map(|p| p.location.file.as_str())
            .collect();
        files.len()
    }
}

/// Events held back to be written in order: a bundle's events come nearly sorted (a node's files
/// in sequence, but records of neighbouring files interleaved), so holding the last few thousand
/// and writing the smallest first puts them in order without a sort of the whole run. When a
/// held-back event is still smaller than one already written (a node that restarted and counts
/// from 1 again), the run is sorted after all (`sort.rs`).
const WINDOW_ROWS: usize = 4096;

/// The record text the window holds at most.
const WINDOW_BYTES: usize = 2 << 20;

/// One table's staging file.
struct Sink {
    table: &'static Table,
    builder: Builder,
    path: PathBuf,
    /// Events not written yet, by key and arrival, with their text's length.
    /// (Boxed: a tree node moves its entries on every insert and removal, and a held event is a
    /// couple of hundred bytes.)
    window: BTreeMap<(EventKey, u64), Box<Held>>,
    window_bytes: usize,
    arrivals: u64,
    /// The key of the last event row written, and whether every row so far was written in key
    /// order.
    last_key: Option<EventKey>,
    in_order: bool,
}

/// A held-back event, or a record on its way to the builder: its text and its context.
type Held = (String, Context);

/// An event row's place in the sorted file: node, then `monotonic_seq` (a null one, a value above
/// 2^63 − 1, last), then the bundle's order.
type EventKey = (Label, (bool, i64), u64, u64);

/// A node's label in an event's key: the walk's labels are shared ([`Pass::shared`]), so two
/// events of one node compare by address, not by text.
#[derive(Debug, Clone, Default)]
struct Label(Option<Arc<str>>);

impl PartialEq for Label {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Label {}

impl PartialOrd for Label {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Label {
    fn cmp(&self, other: &Self) -> Ordering {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) if Arc::ptr_eq(a, b) => Ordering::Equal,
            (a, b) => a.as_deref().unwrap_or("").cmp(b.as_deref().unwrap_or("")),
        }
    }
}

fn event_key(seq: Option<i64>, ctx: &Context) -> EventKey {
    (
        Label(ctx.node.clone()),
        (seq.is_none(), seq.unwrap_or(0)),
        ctx.file_seq.unwrap_or(0),
        ctx.record_index.unwrap_or(0),
    )
}

/// Records handed to the builder at a time, and the text they hold at most (each hand-off can wake
/// the builder's thread: groups of a thousand records cost fewer switches than groups of 256).
const HANDOFF_ROWS: usize = 1024;
const HANDOFF_BYTES: usize = 2 << 20;

/// Hand-offs on their way to the builder at most.
const HANDOFFS_IN_FLIGHT: usize = 2;

/// A table's rows, built on a thread of their own (`rows.rs`) and handed in batches to the Parquet
/// writer (`PartWriter`, which encodes on a thread of its own): the walk's decode, the rows' parse
/// and the encoding run side by side. The records go over in small groups, and only a few groups
/// are in flight, so memory holds a few thousand records' text (a few MiB).
struct Builder {
    pending: Vec<Held>,
    pending_bytes: usize,
    rows: Stage<Vec<Held>, PartWriter>,
}

impl Builder {
    fn start(table: &'static Table, path: &Path) -> Result<Builder, Error> {
        let mut rows = Rows::new(table);
        let mut writer = PartWriter::create_for(path, rows.schema(), table.name)?;
        let at = path.to_owned();
        let located =
            move |e: &dyn std::fmt::Display| Error::at(&at, format!("table {}: {e}", table.name));
        let rows = Stage::start(
            "rows",
            HANDOFFS_IN_FLIGHT,
            path,
            move |groups: Receiver<Vec<Held>>| {
                for group in groups {
                    for (text, ctx) in group {
                        rows.push(&text, &ctx).map_err(|e| located(&e))?;
                        if rows.len() >= chunk(table.name) {
                            writer.write(&rows.batch().map_err(|e| located(&e))?)?;
                        }
                    }
                }
                if !rows.is_empty() {
                    writer.write(&rows.batch().map_err(|e| located(&e))?)?;
                }
                // The encoder writes the file's end now, beside the other tables' ends.
                writer.close();
                Ok(writer)
            },
        )?;
        Ok(Builder {
            pending: Vec::with_capacity(HANDOFF_ROWS),
            pending_bytes: 0,
            rows,
        })
    }

    fn push(&mut self, held: Held) -> Result<(), Error> {
        self.pending_bytes += held.0.len();
        self.pending.push(held);
        if self.pending.len() >= HANDOFF_ROWS || self.pending_bytes >= HANDOFF_BYTES {
            self.hand_off()?;
        }
        Ok(())
    }

    fn hand_off(&mut self) -> Result<(), Error> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let group = std::mem::replace(&mut self.pending, Vec::with_capacity(HANDOFF_ROWS));
        self.pending_bytes = 0;
        self.rows.send(group)
    }

    /// Hands over what is pending: the rows are built and written without waiting.
    fn close(&mut self) -> Result<(), Error> {
        self.hand_off()?;
        self.rows.close();
        Ok(())
    }

    /// Waits for every row to be built; the file's writer, its encoder closed.
    fn join(mut self) -> Result<PartWriter, Error> {
        self.rows.join()
    }
}

impl Sink {
    /// A staging file of `table` at `path`.
    fn create(table: &'static Table, path: PathBuf) -> Result<Sink, Error> {
        Ok(Sink {
            table,
            builder: Builder::start(table, &path)?,
            path,
            window: BTreeMap::new(),
            window_bytes: 0,
            arrivals: 0,
            last_key: None,
            in_order: true,
        })
    }

    /// Takes the row of the record whose JSON text is `text` (an event's `monotonic_seq` is
    /// `seq`, null above 2^63 − 1).
    fn push(&mut self, text: &str, ctx: Context, seq: Option<i64>) -> Result<(), Error> {
        if self.table.name != "events" {
            return self.builder.push((text.to_owned(), ctx));
        }
        let key = event_key(seq, &ctx);
        self.arrivals += 1;
        self.window_bytes += text.len();
        self.window
            .insert((key, self.arrivals), Box::new((text.to_owned(), ctx)));
        while self.window.len() > WINDOW_ROWS || self.window_bytes > WINDOW_BYTES {
            self.release()?;
        }
        Ok(())
    }

    /// Writes the smallest held-back event.
    fn release(&mut self) -> Result<(), Error> {
        let Some(((key, _), held)) = self.window.pop_first() else {
            return Ok(());
        };
        self.window_bytes -= held.0.len();
        if self.last_key.as_ref().is_some_and(|last| *last > key) {
            self.in_order = false;
        }
        self.last_key = Some(key);
        self.builder.push(*held)
    }

    /// Hands over every row taken, the held-back events included, without waiting for them to be
    /// written: the tables' ends are written side by side.
    fn close(&mut self) -> Result<(), Error> {
        while !self.window.is_empty() {
            self.release()?;
        }
        self.builder.close()
    }

    /// Writes every row taken ([`Sink::close`] first, when several tables end together); the
    /// file's writer, to finish, and whether its events came in order.
    fn drain(mut self) -> Result<(PartWriter, bool), Error> {
        self.close()?;
        Ok((self.builder.join()?, self.in_order))
    }
}

/// The pass over one bundle.
struct Pass {
    staging: PathBuf,
    ctx: Context,
    sinks: BTreeMap<&'static str, Sink>,
    /// Boot records wait for the end: a node's row is its latest one.
    /// Per node: whether it is the latest boot file, its sequence, its text, its process start.
    boots: BTreeMap<String, (bool, u64, String, u64)>,
    node_ids: BTreeMap<String, Arc<str>>,
    /// The texts records share (node labels, event types), one copy of each.
    shared: HashMap<String, Arc<str>>,
    manifest_run: Option<String>,
    boot_runs: BTreeSet<String>,
    contract_version: Option<String>,
    earliest_ms: Option<u64>,
    /// The run ids rows were written with (more than the final one: a rewrite).
    used_runs: BTreeSet<String>,
    problems: Vec<Problem>,
    error: Option<Error>,
}

fn table(name: &str) -> &'static Table {
    TABLES
        .iter()
        .find(|t| t.name == name)
        .expect("OK because the generated table has every table the export names")
}

impl Pass {
    fn sink(&mut self, name: &'static str) -> Result<&mut Sink, Error> {
        if !self.sinks.contains_key(name) {
            let sink = Sink::create(table(name), self.staging.join(format!("{name}.parquet")))?;
            self.sinks.insert(name, sink);
        }
        Ok(self
            .sinks
            .get_mut(name)
            .expect("OK because it was inserted above"))
    }

    /// The one shared copy of `text`.
    fn shared(&mut self, text: &str) -> Arc<str> {
        if let Some(t) = self.shared.get(text) {
            return t.clone();
        }
        let t: Arc<str> = text.into();
        self.shared.insert(text.to_owned(), t.clone());
        t
    }

    fn seen(&mut self, ms: Option<u64>) {
        if let Some(ms) = ms.filter(|m| *m > 0) {
            self.earliest_ms = Some(self.earliest_ms.map_or(ms, |e| e.min(ms)));
        }
    }

    fn take(&mut self, item: &Item<'_>) -> Result<(), Error> {
        let mut ctx = self.ctx.clone();
        ctx.node = item.node.map(|n| self.shared(n));
        ctx.node_id = item.node.and_then(|n| self.node_ids.get(n).cloned());
        ctx.file_seq = match item.role {
            Role::Numbered(_, n) => Some(*n),
            _ => None,
        };
        let mut seq = None;
        let name = match item.record {
            Record::Manifest(m) => {
                self.manifest_run = Some(m.run_id.clone());
                self.contract_version = m.contract_version.clone();
                if *self.ctx.run_id != *m.run_id {
                    self.ctx.run_id = m.run_id.as_str().into();
                    ctx.run_id = self.ctx.run_id.clone();
                }
                "runs"
            }
            Record::Boot(b) => {
                let label = item.node.unwrap_or_default().to_owned();
                self.node_ids
                    .insert(label.clone(), b.node_id_hex.0.as_str().into());
                self.boot_runs.insert(b.run_id.clone());
                if self.manifest_run.is_none() && self.boot_runs.len() == 1 {
                    self.ctx.run_id = b.run_id.as_str().into();
                }
                let latest = matches!(item.role, Role::Latest(FileKind::Boot));
                let seq = ctx.file_seq.unwrap_or(0);
                let keep = self
                    .boots
                    .get(&label)
                    .is_none_or(|(l, s, _, _)| !*l && (latest || seq >= *s));
                if keep {
                    let start = b.process_start_unix_ms;
                    self.boots
                        .insert(label, (latest, seq, item.text.to_owned(), start));
                }
                return Ok(());
            }
            Record::Event(e) => {
                self.seen(Some(e.wall_ms));
                seq = i64::try_from(e.monotonic_seq).ok();
                ctx.record_index = Some(item.index as u64);
                ctx.event_type = Some(self.shared(e.event.type_of().as_str()));
                if ctx.node_id.is_none() {
                    ctx.node_id = Some(e.node_id.to_hex().0.into());
                }
                "events"
            }
            Record::Snapshot(s) => {
                self.seen(Some(s.wall_ms));
                "snapshots"
            }
            Record::Finalize(_) => "finalize",
            Record::Vastai(_) => {
                ctx.file_kind = match item.role {
                    Role::Numbered(FileKind::Vastai(k), _) => Some(k.as_str().into()),
                    _ => None,
                };
                "vastai"
            }
            _ => return Ok(()),
        };
        if !self.used_runs.contains(&*ctx.run_id) {
            self.used_runs.insert(ctx.run_id.to_string());
        }
        self.sink(name)?.push(item.text, ctx, seq)
    }

    /// The row of a body the collector quarantined: its `.why.json` is the record (its keys
    /// the columns, the rest `extra_json`); without one that reads, the kind its name gives.
    fn take_quarantined(&mut self, body: &Quarantined) -> Result<(), Error> {
        let mut ctx = self.ctx.clone();
        ctx.node = Some(self.shared(&body.node));
        let file = body.path.rsplit('/').next().unwrap_or(&body.path);
        ctx.file = Some(file.into());
        ctx.bytes = body.bytes;
        ctx.reasons = Some(body.why.as_str().into());
        let text = match &body.reason {
            Some(text) => text.clone(),
            None => {
                // `NNNNNN-<kind>.<ext>` (or `….why.json`, a reason that does not read).
                let stem = file.strip_suffix(WHY_SUFFIX).unwrap_or(file);
                let stem = stem.rsplit_once('.').map_or(stem, |(s, _)| s);
                let kind = stem
                    .split_once('-')
                    .map(|(_, k)| k)
                    .filter(|k| !k.is_empty());
                serde_json::json!({ "route": kind }).to_string()
            }
        };
        if !self.used_runs.contains(&*ctx.run_id) {
            self.used_runs.insert(ctx.run_id.to_string());
        }
        self.sink("quarantine")?.push(&text, ctx, None)
    }

    /// The run the records say this is.
    fn run_id(&self, fallback: &str) -> String {
        if let Some(r) = &self.manifest_run {
            return r.clone();
        }
        if self.boot_runs.len() == 1 {
            return self.boot_runs.iter().next().cloned().unwrap_or_default();
        }
        fallback.to_owned()
    }
}

impl Consumer for Pass {
    fn record(&mut self, item: &Item<'_>) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.take(item) {
            self.error = Some(e);
        }
    }

    fn problem(&mut self, problem: &Problem) {
        self.problems.push(problem.clone());
    }

    fn quarantined(&mut self, body: &Quarantined) {
        // Its problem came just before: the body is a row of the quarantine table, not a file
        // left out of the dataset.
        if self.problems.last() == Some(&body.problem()) {
            self.problems.pop();
        }
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.take_quarantined(body) {
            self.error = Some(e);
        }
    }
}

/// Replaces the `run_id` column of a staging file (rows written before the run was known).
fn rewrite_run_id(path: &Path, t: &'static Table, run: &str) -> Result<(), Error> {
    let schema = Arc::new(arrow_schema::schema(t));
    let file = fs::File::open(path).map_err(|e| Error::at(path, e.to_string()))?;
    let reader =
        datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .and_then(|b| b.with_batch_size(8192).build())
            .map_err(|e| Error::at(path, e.to_string()))?;
    let mut w = PartWriter::create_for(path, schema.clone(), t.name)?;
    for batch in reader {
        let batch = batch.map_err(|e| Error::at(path, e.to_string()))?;
        let mut cols: Vec<ArrayRef> = batch.columns().to_vec();
        cols[0] = Arc::new(StringArray::from(vec![run; batch.num_rows()]));
        let batch = RecordBatch::try_new(schema.clone(), cols)
            .map_err(|e| Error::at(path, e.to_string()))?;
        w.write(&batch)?;
    }
    w.finish(path)
}

/// The UTC date (`YYYY-MM-DD`) of a millisecond timestamp (civil-from-days, proleptic Gregorian).
/// Written here rather than taken from `humantime` or `chrono` (both in the build): their
/// formatters stop at the year 9999 or 262143, and a record's `wall_ms` is any `u64`, every one of
/// which must name a partition.
pub fn utc_date(ms: u64) -> String {
    let days = (ms / 86_400_000) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}")
}

/// Exports `bundles` into `dataset` (created when missing), one run per bundle; a run already in
/// the dataset is replaced. Touched partitions are compacted unless `compact` is false. Waits up
/// to [`dataset::DEFAULT_WAIT`] for another writer.
pub fn export(bundles: &[PathBuf], dataset: &Path, compact: bool) -> Result<Report, Error> {
    export_waiting(bundles, dataset, compact, &Wait::default())
}

/// [`export`], waiting for another writer as `wait` says. The export is one change of the
/// dataset, committed when every bundle is in: an error leaves the dataset as it was (the
/// error's message says so).
pub fn export_waiting(
    bundles: &[PathBuf],
    dataset: &Path,
    compact: bool,
    wait: &Wait<'_>,
) -> Result<Report, Error> {
    fs::create_dir_all(dataset).map_err(|e| Error::at(dataset, e.to_string()))?;
    let mut change = Change::begin(dataset, wait)?;
    let unchanged = |mut e: Error| {
        e.message
            .push_str(" (nothing was exported: the dataset is as it was)");
        e
    };
    let mut report = Report::default();
    let mut touched: BTreeSet<(&'static str, String)> = BTreeSet::new();
    let staging_root = crate::safe::ensure_dir(dataset, Path::new(dataset::STAGING))?;
    for (i, bundle) in bundles.iter().enumerate() {
        let staging = staging_root.join(i.to_string());
        fs::create_dir(&staging).map_err(|e| Error::at(&staging, e.to_string()))?;
        let result = export_one(bundle, &staging, &mut change, &mut report, &mut touched);
        let _ = fs::remove_dir_all(&staging);
        result.map_err(unchanged)?;
    }
    let _ = fs::remove_dir(&staging_root);
    if compact {
        for (table, dir) in &touched {
            report.compacted += usize::from(change.compact_dir(table, dir).map_err(unchanged)?);
        }
    }
    change.commit()?;
    Ok(report)
}

fn export_one(
    bundle: &Path,
    staging: &Path,
    change: &mut Change,
    report: &mut Report,
    touched: &mut BTreeSet<(&'static str, String)>,
) -> Result<(), Error> {
    let mut reader = BundleReader::open(bundle, Limits::default())
        .map_err(|e| Error::problem(Problem::from(e)))?;
    let bundle_name = bundle
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let fallback = reader.run_id().to_owned();
    let mut pass = Pass {
        staging: staging.to_owned(),
        ctx: Context {
            run_id: fallback.as_str().into(),
            bundle: bundle_name.as_str().into(),
            ..Context::default()
        },
        sinks: BTreeMap::new(),
        boots: BTreeMap::new(),
        node_ids: BTreeMap::new(),
        shared: HashMap::new(),
        manifest_run: None,
        boot_runs: BTreeSet::new(),
        contract_version: None,
        earliest_ms: None,
        used_runs: BTreeSet::new(),
        problems: Vec::new(),
        error: None,
    };
    walk_into(&mut reader, Walk::default(), &mut [&mut pass]);
    if let Some(e) = pass.error.take() {
        for sink in pass.sinks.into_values() {
            if let Ok((writer, _)) = sink.drain() {
                writer.abandon();
            }
        }
        return Err(e);
    }
    let run = pass.run_id(&fallback);
    // The boot rows (one per node, its latest boot record).
    let boots = std::mem::take(&mut pass.boots);
    for (label, (_, _, text, start)) in boots {
        pass.seen(Some(start));
        let ctx = Context {
            run_id: run.as_str().into(),
            bundle: bundle_name.as_str().into(),
            node: Some(label.as_str().into()),
            node_id: pass.node_ids.get(&label).cloned(),
            ..Context::default()
        };
        pass.sink("nodes")?.push(&text, ctx, None)?;
    }
    if !pass.sinks.contains_key("runs") {
        // A run without a manifest still has its row.
        let ctx = Context {
            run_id: run.as_str().into(),
            bundle: bundle_name.as_str().into(),
            ..Context::default()
        };
        pass.sink("runs")?.push("{}", ctx, None)?;
    }
    let contract_version = pass
        .contract_version
        .clone()
        .unwrap_or_else(|| "1.0.0".to_owned());
    let major: u64 = contract_version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(1);
    let date = utc_date(pass.earliest_ms.unwrap_or(0));
    let mut staged = Vec::new();
    for sink in pass.sinks.values_mut() {
        sink.close()?;
    }
    for (name, sink) in std::mem::take(&mut pass.sinks) {
        let (table, path) = (sink.table, sink.path.clone());
        let (writer, in_order) = sink.drain()?;
        let (rows, arrow_bytes) = (writer.rows, writer.arrow_bytes);
        writer.finish(&path)?;
        if !in_order {
            sort::events(&path, table, rows, arrow_bytes)?;
        }
        staged.push((name, table, path, rows));
    }
    // Rows written before the run was known carry the directory's name: put the run's id.
    if pass.used_runs.iter().any(|r| *r != run) {
        for (_, t, path, _) in &staged {
            rewrite_run_id(path, t, &run)?;
        }
    }
    if let Some(old) = change.index.runs.get(&run).cloned() {
        for t in TABLES {
            let dir = dataset::partition_rel(t.name, old.contract_major, &old.date);
            change.remove_run(t.name, &dir, &run)?;
        }
        report.replaced.push(run.clone());
    }
    let mut rows = BTreeMap::new();
    for (name, _, path, n) in staged {
        let dir = dataset::partition_rel(name, major, &date);
        let (rel, target) = change.fresh_part(&dir)?;
        crate::safe::rename(&path, &target)?;
        change.add(name, rel);
        touched.insert((name, dir));
        rows.insert(name.to_owned(), n);
    }
    change.index.runs.insert(
        run.clone(),
        RunIndex {
            bundle: bundle_name.clone(),
            contract_version,
            contract_major: major,
            date,
            rows: rows.clone(),
        },
    );
    report.runs.push((bundle.display().to_string(), run, rows));
    report.problems.extend(pass.problems);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether events of one node pushed with these sequence numbers were written in order.
    fn written_in_order(seqs: impl Iterator<Item = i64>) -> bool {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = Sink::create(table("events"), dir.path().join("events.parquet")).unwrap();
        for (i, seq) in seqs.enumerate() {
            let text = serde_json::json!({"monotonic_seq": seq, "type": "X"}).to_string();
            let ctx = Context {
                node: Some("stage-0".into()),
                file_seq: Some(i as u64 / 10),
                record_index: Some(i as u64 % 10),
                ..Context::default()
            };
            sink.push(&text, ctx, Some(seq)).unwrap();
        }
        let (writer, in_order) = sink.drain().unwrap();
        writer.abandon();
        in_order
    }

    #[test]
    fn events_interleaved_across_neighbouring_files_are_put_in_order_without_a_sort() {
        // Two writers' files interleaved: every event a few hundred places from its own.
        let seqs = (0..20_000i64).map(|i| if i % 2 == 0 { i } else { i - 301 });
        assert!(written_in_order(seqs));
    }

    #[test]
    fn a_node_that_restarted_is_left_to_the_sort() {
        // Counting from 0 again after 10,000 events: far beyond what is held back.
        let seqs = (0..10_000i64).chain(0..10_000);
        assert!(!written_in_order(seqs));
    }

    #[test]
    fn dates_are_utc_days() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(1_779_733_870_128), "2026-05-25");
        assert_eq!(utc_date(951_782_400_000), "2000-02-29");
    }
}
