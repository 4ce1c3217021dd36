//! Assembling a bundle from the collector's staging tree, choosing between the cached canonical bundle and a fresh one, and planning staging retention.
//!
//! Staging (legacy-wire §7.1) holds one file per POST: `{root}/{run_id}/{node_id}/{kind}-{seq:06}.json`,
//! `kind` one of `boot`, `events`, `snapshot`, `finalize`, `vastai_instance`, `vastai_sample`,
//! `vastai_logs`, `vastai_lifecycle`. [`assemble`] turns it into the bundle layout of legacy-wire §7.2
//! whether or not a finalize record arrived, and derives `MANIFEST.json` from the files it read and
//! nothing else, so the manifest, the bundle and the serve decision share one source of truth (seed 003
//! §2.5): [`StagingState::from_manifest`] and [`CachedBundle::from_manifest`] feed [`serve_decision`]
//! from the same manifests. [`retention_plan`] keeps staging for at least a window under a hard disk
//! cap (seed 001 §7).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::NodeIdHex;
use crate::bundle::{BundleContents, node_label};
use crate::v1::{Manifest, ManifestNode, Record};

/// A bundle assembled from staging, its manifest, and what was wrong with the staged files.
#[derive(Debug, Clone, PartialEq)]
pub struct Assembled {
    /// The bundle: `MANIFEST.json` plus every staged record file at its bundle path.
    pub contents: BundleContents,
    /// The manifest written as `MANIFEST.json`.
    pub manifest: crate::v1::Manifest,
    /// One line per problem, `<run_id>/<node_id>/<file>: <message>` (paths relative to the staging
    /// root): files that do not parse as their kind (copied anyway), unknown or unreadable files and
    /// symbolic links (not copied), labels that had to be made safe.
    pub problems: Vec<String>,
}

/// What the serve path knows about the cached canonical bundle of a run (the one written at finalize).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachedBundle {
    /// Number of nodes its manifest lists.
    pub node_count: usize,
    /// Its manifest's `finalize_received`.
    pub finalize_received: bool,
}

impl CachedBundle {
    /// What the serve decision needs from the cached bundle's `MANIFEST.json`.
    pub fn from_manifest(manifest: &Manifest) -> CachedBundle {
        CachedBundle {
            node_count: manifest.nodes.len(),
            finalize_received: manifest.finalize_received,
        }
    }
}

/// What the run's staging holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StagingState {
    /// Number of node directories holding at least one record file.
    pub node_count: usize,
    /// Whether some node's directory holds a finalize file.
    pub finalize_on_disk: bool,
    /// Whether some node posted a boot record. Informational: a run is served whenever it has any
    /// staging (legacy-wire §7.4), which includes every run with a boot record (seed 001 §7).
    pub has_boot: bool,
}

impl StagingState {
    /// The staging state as [`assemble`] saw it, from the manifest it derived from the files, so the
    /// decision and the served manifest cannot disagree.
    pub fn from_manifest(manifest: &Manifest) -> StagingState {
        StagingState {
            node_count: manifest.nodes.len(),
            finalize_on_disk: manifest.finalize_received,
            has_boot: manifest.nodes.iter().any(|n| n.boot_recorded),
        }
    }
}

/// What `GET /diag/bundle/{run_id}` should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServeDecision {
    /// Serve the cached canonical bundle: staging still matches it.
    ServeCached,
    /// Assemble a bundle from current staging (and serve that).
    Resynthesize,
    /// 404: the run has no staging.
    NotFound,
}

/// Decides between the cached canonical bundle and a bundle assembled from current staging.
///
/// * No staging, or a run directory without a single record file: [`ServeDecision::NotFound`], even
///   when a cached bundle exists (the run's staging was deleted, and staging is the source of truth).
/// * Staging and no cached bundle (no finalize arrived, e.g. the orchestrator was killed):
///   [`ServeDecision::Resynthesize`].
/// * A cached bundle whose node count or finalize state differs from staging:
///   [`ServeDecision::Resynthesize`]. More nodes means staging grew after finalize (run-id reuse,
///   seed 003 §2.5); fewer means a node directory was deleted, and serving the cache would list a node
///   that is no longer on disk; a finalize file deleted since, or arriving after, the cache makes the
///   cached `finalize_received` wrong.
/// * Otherwise [`ServeDecision::ServeCached`].
pub fn serve_decision(
    cached: Option<&CachedBundle>,
    staging: Option<&StagingState>,
) -> ServeDecision {
    let Some(staging) = staging else {
        return ServeDecision::NotFound;
    };
    if staging.node_count == 0 {
        return ServeDecision::NotFound;
    }
    match cached {
        None => ServeDecision::Resynthesize,
        Some(c)
            if c.node_count != staging.node_count
                || c.finalize_received != staging.finalize_on_disk =>
        {
            ServeDecision::Resynthesize
        }
        Some(_) => ServeDecision::ServeCached,
    }
}

/// One run's staging directory, as the retention sweep sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagedRun {
    /// The run id (the directory name).
    pub run_id: String,
    /// When a file of the run was last written, in ms since the Unix epoch.
    pub last_write_unix_ms: u64,
    /// Bytes the run's staging uses.
    pub bytes: u64,
    /// Whether a finalize record is on disk.
    pub finalized: bool,
}

/// How long staging is kept and how much disk it may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionPolicy {
    /// Minimum time a run's staging is kept after its last write, unless the disk cap forces it out.
    /// Named for the runs it exists for (unfinalized ones, whose staging is the only copy), and
    /// applied to every run. Default 30 days.
    pub keep_unfinalized_ms: u64,
    /// Hard cap on the bytes of all staging together. Default 50 GiB.
    pub disk_cap_bytes: u64,
}

impl Default for RetentionPolicy {
    /// 30 days, 50 GiB.
    fn default() -> Self {
        RetentionPolicy {
            keep_unfinalized_ms: 30 * 24 * 60 * 60 * 1000,
            disk_cap_bytes: 50 * 1024 * 1024 * 1024,
        }
    }
}

/// The run ids whose staging to delete now, oldest first.
///
/// Runs are taken oldest first: by `last_write_unix_ms`, ties broken by run id.
/// 1. A run whose last write is at least `keep_unfinalized_ms` before `now_unix_ms` has had its window
///    and is deleted, finalized or not. Unfinalized runs are thereby kept at least the window (seed
///    001 §7); finalized runs get the same window rather than a shorter one, because a bundle is only
///    served while the run has staging (see [`serve_decision`]).
/// 2. While the remaining runs together use more than `disk_cap_bytes`, the oldest remaining run is
///    deleted, whatever its state and age: the cap is hard. Being exactly at the cap is not over it.
///
/// A last write in the future (clock skew) counts as age 0. Nothing younger than the window is deleted
/// unless the cap requires it.
pub fn retention_plan(
    runs: &[StagedRun],
    policy: &RetentionPolicy,
    now_unix_ms: u64,
) -> Vec<String> {
    let mut order: Vec<&StagedRun> = runs.iter().collect();
    order.sort_by(|a, b| (a.last_write_unix_ms, &a.run_id).cmp(&(b.last_write_unix_ms, &b.run_id)));
    let mut total = runs.iter().fold(0u64, |sum, r| sum.saturating_add(r.bytes));
    let mut delete = Vec::new();
    for run in order {
        let expired =
            now_unix_ms.saturating_sub(run.last_write_unix_ms) >= policy.keep_unfinalized_ms;
        if !expired && total <= policy.disk_cap_bytes {
            // Every later run is younger still, and the cap is met.
            break;
        }
        total = total.saturating_sub(run.bytes);
        delete.push(run.run_id.clone());
    }
    delete
}

/// The kinds of staged file, in the order their files are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Boot,
    Events,
    Snapshot,
    Finalize,
    Vastai(&'static str),
}

const KINDS: [(&str, Kind); 8] = [
    ("boot", Kind::Boot),
    ("events", Kind::Events),
    ("snapshot", Kind::Snapshot),
    ("finalize", Kind::Finalize),
    ("vastai_instance", Kind::Vastai("vastai_instance")),
    ("vastai_sample", Kind::Vastai("vastai_sample")),
    ("vastai_logs", Kind::Vastai("vastai_logs")),
    ("vastai_lifecycle", Kind::Vastai("vastai_lifecycle")),
];

impl Kind {
    /// The record kind a file of this kind parses as (an events file is one POST: an array).
    fn record_kind(self) -> &'static str {
        match self {
            Kind::Boot => "boot",
            Kind::Events => "event_batch",
            Kind::Snapshot => "snapshot",
            Kind::Finalize => "finalize",
            Kind::Vastai(_) => "vastai",
        }
    }
}

/// `{kind}-{seq:06}.json` → (kind, seq). Only the exact form the collector writes is accepted, so two
/// names never map to the same bundle path (`boot-1.json` beside `boot-000001.json` is unknown).
fn parse_staged_name(name: &str) -> Option<(Kind, u64)> {
    let (kind, digits) = name.strip_suffix(".json")?.rsplit_once('-')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let seq: u64 = digits.parse().ok()?;
    if format!("{seq:06}") != digits {
        return None;
    }
    let kind = KINDS.iter().find(|(n, _)| *n == kind)?.1;
    Some((kind, seq))
}

struct StagedFile {
    kind: Kind,
    seq: u64,
    bytes: Vec<u8>,
}

struct StagedNode {
    id: String,
    /// Sorted by (kind, seq).
    files: Vec<StagedFile>,
}

impl StagedNode {
    fn of(&self, kind: Kind) -> impl Iterator<Item = &StagedFile> {
        self.files.iter().filter(move |f| f.kind == kind)
    }

    fn of_any_vastai(&self) -> bool {
        self.files.iter().any(|f| matches!(f.kind, Kind::Vastai(_)))
    }

    fn count(&self, kind: impl Fn(Kind) -> bool) -> u64 {
        self.files.iter().filter(|f| kind(f.kind)).count() as u64
    }
}

/// Builds the bundle of `run_id` from the staging tree under `staging_root`, finalized or not.
///
/// Layout (legacy-wire §7.2), per node directory `<label>/`: the boot file with the highest seq as
/// `boot.json` and, only when there are several, the others as `boot/boot-NNNNNN.json`; likewise
/// `finalize.json` and `finalize/finalize-NNNNNN.json`; `events/events-NNNNNN.json`,
/// `snapshots/snapshot-NNNNNN.json` and `vastai/vastai_<kind>-NNNNNN.json`, where `NNNNNN` is the
/// staging seq. File bytes are copied unchanged.
///
/// Labels: from the `role` and `stage_index` of the node's latest boot record via
/// [`node_label`]; a node without a boot record that posted vast.ai records (a synthetic id such as
/// `vastai-external`) is labelled with its id verbatim. Labels shared by several nodes get
/// `-<first 8 characters of the id>` appended (then the full id, then a counter, should that still
/// collide); characters outside `[A-Za-z0-9._-]` become `_`, `.` and `..` become `_`, and no label may
/// be `MANIFEST.json`.
///
/// The manifest is derived only from the files read now: `finalize_received` is true exactly when some
/// node's directory holds a finalize file; per-node counts are numbers of files; `role` and
/// `stage_index` come from the latest boot file when it is a JSON object with those fields;
/// `vastai_records` is written for every node. `run_start_collector_ms` and `run_end_collector_ms` are
/// the earliest and latest modification times of the record files, in ms since the epoch: staging
/// keeps no receive times, and the collector writes each file when it receives the POST; `null` when
/// there are no files. Nodes are sorted by label, then id; a node directory without a record file is
/// reported and left out.
///
/// A file that does not parse as its kind is copied and reported. Unknown files, symbolic links,
/// subdirectories of node directories, names that are not UTF-8 and unreadable files are reported and
/// not copied (and not counted, so the manifest always describes the bundle's files).
///
/// Errors: `InvalidInput` when `run_id` is not a single path component, `NotFound` when the run has no
/// staging directory, and any other error reading the run directory itself.
pub fn assemble(staging_root: &Path, run_id: &str) -> Result<Assembled, io::Error> {
    if run_id.is_empty() || run_id == "." || run_id == ".." || run_id.contains(['/', '\\', '\0']) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("run id {run_id:?} is not a single path component"),
        ));
    }
    let run_dir = staging_root.join(run_id);
    let mut problems = Vec::new();
    let mut nodes = Vec::new();
    let mut span: Option<(u64, u64)> = None;

    for entry in sorted_entries(&run_dir)? {
        let (name, path) = match entry {
            Ok(entry) => entry,
            Err(message) => {
                problems.push(format!("{run_id}/{message}"));
                continue;
            }
        };
        let at = format!("{run_id}/{name}");
        let meta = match fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(e) => {
                problems.push(format!("{at}: cannot read: {e}"));
                continue;
            }
        };
        if !meta.is_dir() {
            let what = if meta.file_type().is_symlink() {
                "symbolic link"
            } else {
                "file"
            };
            problems.push(format!(
                "{at}: unknown {what} in the run directory (not a node directory), not copied"
            ));
            continue;
        }
        let entries = match sorted_entries(&path) {
            Ok(entries) => entries,
            Err(e) => {
                problems.push(format!("{at}: cannot read the node directory: {e}"));
                continue;
            }
        };
        let mut files = Vec::new();
        for entry in entries {
            let (file, file_path) = match entry {
                Ok(entry) => entry,
                Err(message) => {
                    problems.push(format!("{at}/{message}"));
                    continue;
                }
            };
            let file_at = format!("{at}/{file}");
            let meta = match fs::symlink_metadata(&file_path) {
                Ok(meta) => meta,
                Err(e) => {
                    problems.push(format!("{file_at}: cannot read: {e}"));
                    continue;
                }
            };
            if !meta.is_file() {
                let what = if meta.is_dir() {
                    "directory"
                } else if meta.file_type().is_symlink() {
                    "symbolic link"
                } else {
                    "special file"
                };
                problems.push(format!("{file_at}: unexpected {what}, not copied"));
                continue;
            }
            let Some((kind, seq)) = parse_staged_name(&file) else {
                problems.push(format!(
                    "{file_at}: unknown file (expected <kind>-<seq:06>.json), not copied"
                ));
                continue;
            };
            let bytes = match fs::read(&file_path) {
                Ok(bytes) => bytes,
                Err(e) => {
                    problems.push(format!("{file_at}: cannot read: {e}, not copied"));
                    continue;
                }
            };
            if let Some(ms) = meta.modified().ok().and_then(unix_ms) {
                span = Some(span.map_or((ms, ms), |(lo, hi)| (lo.min(ms), hi.max(ms))));
            }
            check_record(&file_at, kind, &bytes, &mut problems);
            files.push(StagedFile { kind, seq, bytes });
        }
        if files.is_empty() {
            problems.push(format!(
                "{at}: node directory holds no record files, left out"
            ));
            continue;
        }
        files.sort_by_key(|f| (f.kind, f.seq));
        nodes.push(StagedNode { id: name, files });
    }

    let labels = labels(&nodes, run_id, &mut problems);
    let mut contents = BundleContents::new(run_id);
    let mut entries = Vec::with_capacity(nodes.len());
    for (node, label) in nodes.into_iter().zip(labels) {
        let boot = node.of(Kind::Boot).last().map(|f| boot_identity(&f.bytes));
        let (role, stage_index) = boot.clone().unwrap_or_default();
        let entry = ManifestNode {
            node_id_hex: NodeIdHex(node.id.clone()),
            label: label.clone(),
            role,
            stage_index,
            boot_recorded: boot.is_some(),
            event_batches: node.count(|k| k == Kind::Events),
            snapshots: node.count(|k| k == Kind::Snapshot),
            finalize_recorded: node.of(Kind::Finalize).next().is_some(),
            vastai_records: Some(node.count(|k| matches!(k, Kind::Vastai(_)))),
            extra: Default::default(),
            ..Default::default()
        };
        place_files(&mut contents, &label, node.files);
        entries.push(entry);
    }
    entries.sort_by(|a, b| (&a.label, &a.node_id_hex.0).cmp(&(&b.label, &b.node_id_hex.0)));

    let manifest = Manifest {
        run_id: run_id.to_owned(),
        run_start_collector_ms: span.map(|(lo, _)| lo),
        run_end_collector_ms: span.map(|(_, hi)| hi),
        finalize_received: entries.iter().any(|n| n.finalize_recorded),
        nodes: entries,
        extra: Default::default(),
        ..Default::default()
    };
    contents.insert_json("MANIFEST.json", &manifest);
    Ok(Assembled {
        contents,
        manifest,
        problems,
    })
}

/// A directory entry as (name, path), or a message for a name that is not UTF-8.
type Entry = Result<(String, PathBuf), String>;

/// The entries of a directory, sorted by name (names that are not UTF-8 last).
fn sorted_entries(dir: &Path) -> io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        out.push(
            entry
                .file_name()
                .into_string()
                .map(|name| (name, path))
                .map_err(|raw| format!("{}: name is not UTF-8, not copied", raw.to_string_lossy())),
        );
    }
    out.sort_by(|a, b| match (a, b) {
        (Ok((a, _)), Ok((b, _))) => a.cmp(b),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(a), Err(b)) => a.cmp(b),
    });
    Ok(out)
}

fn unix_ms(t: SystemTime) -> Option<u64> {
    u64::try_from(t.duration_since(UNIX_EPOCH).ok()?.as_millis()).ok()
}

/// Reports a file that does not parse as its kind.
fn check_record(at: &str, kind: Kind, bytes: &[u8], problems: &mut Vec<String>) {
    let record_kind = kind.record_kind();
    let Ok(text) = std::str::from_utf8(bytes) else {
        problems.push(format!(
            "{at}: not UTF-8, so not a {record_kind} record (copied anyway)"
        ));
        return;
    };
    if let Some(Err(e)) = Record::parse(record_kind, text) {
        problems.push(format!(
            "{at}: does not parse as a {record_kind} record: {e} (copied anyway)"
        ));
    }
}

/// `role` and `stage_index` of a boot file, read leniently from its JSON so a record that is wrong
/// elsewhere still names its node.
fn boot_identity(bytes: &[u8]) -> (Option<String>, Option<u32>) {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_slice::<serde_json::Value>(bytes)
    else {
        return (None, None);
    };
    let role = map.get("role").and_then(|v| v.as_str()).map(str::to_owned);
    let stage_index = map
        .get("stage_index")
        .and_then(|v| v.as_u64())
        .and_then(|i| u32::try_from(i).ok());
    (role, stage_index)
}

/// Makes a string a safe single path component, as the collector sanitizes staging names.
fn sanitize(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match out.as_str() {
        "" | "." | ".." => "_".to_owned(),
        _ => out,
    }
}

/// One unique, safe label per node, in the nodes' order.
fn labels(nodes: &[StagedNode], run_id: &str, problems: &mut Vec<String>) -> Vec<String> {
    let bases: Vec<String> = nodes
        .iter()
        .map(|node| {
            let boot = node.of(Kind::Boot).last();
            let raw = match boot {
                Some(f) => {
                    let (role, stage_index) = boot_identity(&f.bytes);
                    node_label(role.as_deref(), stage_index, &node.id)
                }
                None if node.of_any_vastai() => node.id.clone(),
                None => node_label(None, None, &node.id),
            };
            let safe = sanitize(&raw);
            if safe != raw {
                problems.push(format!(
                    "{run_id}/{}: label {raw:?} is not a safe directory name, written as {safe:?}",
                    node.id
                ));
            }
            safe
        })
        .collect();
    let mut shared: BTreeMap<&str, usize> = BTreeMap::new();
    for base in &bases {
        *shared.entry(base).or_default() += 1;
    }
    let mut used: BTreeSet<String> = BTreeSet::from(["MANIFEST.json".to_owned()]);
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by(|&a, &b| (&bases[a], &nodes[a].id).cmp(&(&bases[b], &nodes[b].id)));
    let mut out = vec![String::new(); nodes.len()];
    for i in order {
        let base = &bases[i];
        let id = sanitize(&nodes[i].id);
        let short: String = id.chars().take(8).collect();
        let mut candidates = Vec::new();
        if shared[base.as_str()] == 1 {
            candidates.push(base.clone());
        }
        candidates.push(format!("{base}-{short}"));
        candidates.push(format!("{base}-{id}"));
        let mut label = candidates.into_iter().find(|c| !used.contains(c));
        let mut n = 2u64;
        while label.is_none() {
            let c = format!("{base}-{short}-{n}");
            if !used.contains(&c) {
                label = Some(c);
            }
            n += 1;
        }
        let label = label.unwrap_or_default();
        used.insert(label.clone());
        out[i] = label;
    }
    out
}

/// Puts a node's files at their bundle paths.
fn place_files(contents: &mut BundleContents, label: &str, files: Vec<StagedFile>) {
    let boots = files.iter().filter(|f| f.kind == Kind::Boot).count();
    let finalizes = files.iter().filter(|f| f.kind == Kind::Finalize).count();
    let (mut boot_seen, mut finalize_seen) = (0, 0);
    for f in files {
        let seq = f.seq;
        let path = match f.kind {
            Kind::Boot => {
                boot_seen += 1;
                if boot_seen == boots {
                    format!("{label}/boot.json")
                } else {
                    format!("{label}/boot/boot-{seq:06}.json")
                }
            }
            Kind::Finalize => {
                finalize_seen += 1;
                if finalize_seen == finalizes {
                    format!("{label}/finalize.json")
                } else {
                    format!("{label}/finalize/finalize-{seq:06}.json")
                }
            }
            Kind::Events => format!("{label}/events/events-{seq:06}.json"),
            Kind::Snapshot => format!("{label}/snapshots/snapshot-{seq:06}.json"),
            Kind::Vastai(kind) => format!("{label}/vastai/{kind}-{seq:06}.json"),
        };
        contents.files.insert(path, f.bytes);
    }
}
