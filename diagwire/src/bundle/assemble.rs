//! Assembling a bundle from the collector's staging tree, choosing between the cached canonical
//! bundle and a fresh one, and planning staging retention.
//!
//! Staging holds one file per post, `<root>/<run_id>/<node_id>/<kind>-NNNNNN.json` (`.pb` for a
//! body posted as protobuf; see
//! [`crate::layout`]). [`assemble`] turns it into a bundle whether or not a finalize record arrived,
//! through the same [`Writer`] the simulator uses, so `MANIFEST.json` is derived from the files read
//! and nothing else: the manifest, the bundle and the serve decision share one source of truth.
//! [`serve_decision`] compares, node by node, what the cached bundle holds ([`CachedBundle`]) with
//! what staging holds now ([`StagingState`]): from the two manifests (counts), or from the two file
//! listings (counts and sizes). [`retention_plan`] keeps staging for at least a window under a hard
//! disk cap.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::{BundleContents, Writer};
use crate::NodeIdHex;
use crate::layout::{self, FileKind, Role};
use crate::problem::{Location, Problem, ProblemKind};
use crate::v1::{BundleWriter, Manifest, ManifestNode, Record};

/// A bundle assembled from staging, its manifest, and what was wrong with the staged files.
#[derive(Debug, Clone, PartialEq)]
pub struct Assembled {
    /// The bundle: `MANIFEST.json` plus every staged record file at its bundle path.
    pub contents: BundleContents,
    /// The manifest written as `MANIFEST.json`.
    pub manifest: crate::v1::Manifest,
    /// Every problem, located at `<run_id>/<node_id>/<file>` (relative to the staging root): files
    /// that do not parse as their kind (copied anyway), unknown or unreadable files and symbolic
    /// links (not copied), labels that had to be made safe.
    pub problems: Vec<Problem>,
}

/// How many files of one kind a node has, and their bytes together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Number of files.
    pub files: u64,
    /// Their sizes added up.
    pub bytes: u64,
}

/// A node's files, per kind: what a bundle's listing shows of the node, and what staging holds
/// (assembly copies staged files unchanged, so both sides count the same bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeFiles {
    /// Boot files (`boot.json` and `boot/`).
    pub boot: Tally,
    /// Events files, one posted batch each.
    pub events: Tally,
    /// Snapshot files.
    pub snapshots: Tally,
    /// Finalize files (`finalize.json` and `finalize/`).
    pub finalize: Tally,
    /// vast.ai record files, all vast.ai kinds together.
    pub vastai: Tally,
}

impl NodeFiles {
    /// The counts a manifest entry gives for these files.
    pub fn counts(&self) -> NodeCounts {
        NodeCounts {
            boot_recorded: self.boot.files > 0,
            event_batches: self.events.files,
            snapshots: self.snapshots.files,
            finalize_recorded: self.finalize.files > 0,
            vastai_records: self.vastai.files,
        }
    }

    fn add(&mut self, kind: &FileKind, bytes: usize) {
        let tally = match kind {
            FileKind::Boot => &mut self.boot,
            FileKind::Events => &mut self.events,
            FileKind::Snapshot => &mut self.snapshots,
            FileKind::Finalize => &mut self.finalize,
            FileKind::Vastai(_) => &mut self.vastai,
        };
        tally.files += 1;
        tally.bytes = tally.bytes.saturating_add(bytes as u64);
    }
}

/// What a manifest entry says a node holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeCounts {
    /// `boot_recorded`.
    pub boot_recorded: bool,
    /// `event_batches`.
    pub event_batches: u64,
    /// `snapshots`.
    pub snapshots: u64,
    /// `finalize_recorded`.
    pub finalize_recorded: bool,
    /// `vastai_records`; an entry without the field counts as 0.
    pub vastai_records: u64,
}

impl NodeCounts {
    /// The counts of a manifest entry.
    pub fn from_manifest_node(node: &ManifestNode) -> NodeCounts {
        NodeCounts {
            boot_recorded: node.boot_recorded,
            event_batches: node.event_batches,
            snapshots: node.snapshots,
            finalize_recorded: node.finalize_recorded,
            vastai_records: node.vastai_records.unwrap_or(0),
        }
    }
}

/// What the serve decision knows of one node, in the cached bundle or in staging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeHoldings {
    /// The id the node posted under (hex, or a synthetic id such as `vastai-external`).
    pub node_id_hex: NodeIdHex,
    /// The node's directory label.
    pub label: String,
    /// The counts of its manifest entry.
    pub counts: NodeCounts,
    /// Its files per kind with their sizes, when built from a file listing; `None` when built from
    /// a manifest alone, which records no sizes.
    pub files: Option<NodeFiles>,
}

impl NodeHoldings {
    /// What a manifest entry says of its node: counts, no sizes.
    pub fn from_manifest_node(node: &ManifestNode) -> NodeHoldings {
        NodeHoldings {
            node_id_hex: node.node_id_hex.clone(),
            label: node.label.clone(),
            counts: NodeCounts::from_manifest_node(node),
            files: None,
        }
    }

    /// Whether the cached bundle (`self`) still holds what staging (`staging`) holds for this node:
    /// same id, label and counts, and, when both sides know their files, the same per-kind file
    /// numbers and bytes.
    fn still_matches(&self, staging: &NodeHoldings) -> bool {
        self.node_id_hex == staging.node_id_hex
            && self.label == staging.label
            && self.counts == staging.counts
            && match (&self.files, &staging.files) {
                (Some(cached), Some(staged)) => cached == staged,
                _ => true,
            }
    }
}

/// The files of each node a manifest lists, from a bundle's listing, in the manifest's order.
/// `None` when a label is listed twice, or a file other than `MANIFEST.json` is outside the layout
/// or outside every listed node's directory.
fn node_files(manifest: &Manifest, contents: &BundleContents) -> Option<Vec<NodeFiles>> {
    let mut index = BTreeMap::new();
    for (i, node) in manifest.nodes.iter().enumerate() {
        if index.insert(node.label.as_str(), i).is_some() {
            return None;
        }
    }
    let mut files = vec![NodeFiles::default(); manifest.nodes.len()];
    for (path, bytes) in &contents.files {
        let parsed = layout::parse_bundle_path(path);
        if parsed.role == Role::Manifest {
            continue;
        }
        let kind = parsed.role.file_kind()?;
        let i = *index.get(parsed.node.as_deref()?)?;
        files[i].add(kind, bytes.len());
    }
    Some(files)
}

/// What the serve path knows about the cached canonical bundle of a run (the one written at finalize).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedBundle {
    /// Its manifest's `finalize_received`.
    pub finalize_received: bool,
    /// Every node its manifest lists, in the manifest's order.
    pub nodes: Vec<NodeHoldings>,
}

impl CachedBundle {
    /// What the cached bundle's `MANIFEST.json` says: node ids, labels and per-node counts, no
    /// sizes (a manifest records none), so [`serve_decision`] cannot see a staged file that grew
    /// in place. [`CachedBundle::from_contents`] can.
    pub fn from_manifest(manifest: &Manifest) -> CachedBundle {
        CachedBundle {
            finalize_received: manifest.finalize_received,
            nodes: manifest
                .nodes
                .iter()
                .map(NodeHoldings::from_manifest_node)
                .collect(),
        }
    }

    /// What the cached bundle holds, from its files (as [`super::read::read_all`] returns them):
    /// [`CachedBundle::from_manifest`] of its `MANIFEST.json`, plus every node's files per kind
    /// with their sizes.
    ///
    /// `None` when the bundle is not one assembly could have written: no `MANIFEST.json` that
    /// parses, a manifest of another run, a label listed twice, a file outside the layout or
    /// outside every listed node's directory, or a node whose files do not give its manifest
    /// counts. Treating such a cache as absent makes [`serve_decision`] resynthesize.
    pub fn from_contents(contents: &BundleContents) -> Option<CachedBundle> {
        let manifest: Manifest =
            serde_json::from_slice(contents.files.get(layout::MANIFEST)?).ok()?;
        if manifest.run_id != contents.run_id {
            return None;
        }
        let files = node_files(&manifest, contents)?;
        let mut cached = CachedBundle::from_manifest(&manifest);
        for (node, files) in cached.nodes.iter_mut().zip(files) {
            if node.counts != files.counts() {
                return None;
            }
            node.files = Some(files);
        }
        Some(cached)
    }

    /// Number of nodes its manifest lists.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }
}

/// What the run's staging holds now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagingState {
    /// Every node directory holding at least one record file.
    pub nodes: Vec<NodeHoldings>,
    /// Whether some node's directory holds a finalize file.
    pub finalize_on_disk: bool,
    /// Whether some node posted a boot record. Informational: a run is served whenever it has any
    /// staging, which includes every run with a boot record.
    pub has_boot: bool,
}

impl StagingState {
    /// The staging state as [`assemble`] saw it, from the manifest it derived from the files, so the
    /// decision and the served manifest cannot disagree. Counts only, no sizes:
    /// [`StagingState::from_assembled`] adds them.
    pub fn from_manifest(manifest: &Manifest) -> StagingState {
        StagingState {
            nodes: manifest
                .nodes
                .iter()
                .map(NodeHoldings::from_manifest_node)
                .collect(),
            finalize_on_disk: manifest.finalize_received,
            has_boot: manifest.nodes.iter().any(|n| n.boot_recorded),
        }
    }

    /// [`StagingState::from_manifest`] of what [`assemble`] returned, plus every node's files per
    /// kind with their sizes, from the assembled bundle's files (the staged files' bytes).
    pub fn from_assembled(assembled: &Assembled) -> StagingState {
        let mut state = StagingState::from_manifest(&assembled.manifest);
        if let Some(files) = node_files(&assembled.manifest, &assembled.contents) {
            for (node, files) in state.nodes.iter_mut().zip(files) {
                node.files = Some(files);
            }
        }
        state
    }

    /// Number of node directories holding at least one record file.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
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

/// Decides between the cached canonical bundle and a bundle assembled from current staging, by
/// comparing what the cached bundle holds per node with what staging holds now. The rules, in
/// order:
///
/// 1. No staging: [`ServeDecision::NotFound`], even when a cached bundle exists (the run's staging
///    was deleted, and staging is the source of truth).
/// 2. Staging without a node (a run directory without a single record file):
///    [`ServeDecision::NotFound`], likewise. A node holding only vast.ai records is a node.
/// 3. Staging and no cached bundle (no finalize arrived, e.g. the orchestrator was killed):
///    [`ServeDecision::Resynthesize`].
/// 4. The cached `finalize_received` differs from `finalize_on_disk` (a finalize file deleted
///    since the cache was written, or arriving after it): [`ServeDecision::Resynthesize`].
/// 5. The node ids differ, compared as sorted lists (so an id listed twice is a difference):
///    [`ServeDecision::Resynthesize`]. This covers more nodes (a run id reused across a failed
///    first lease and a successful second one), fewer (a node directory deleted) and as many
///    with one swapped for another.
/// 6. A node's label differs: [`ServeDecision::Resynthesize`] (e.g. its latest boot record names
///    another role or stage index).
/// 7. A node's counts differ (`boot_recorded`, `event_batches`, `snapshots`, `finalize_recorded`,
///    `vastai_records`): [`ServeDecision::Resynthesize`]. This covers staging that grew within
///    the same nodes, such as the finalizer's last snapshot landing after the canonical bundle
///    was written.
/// 8. When both sides know the node's files ([`CachedBundle::from_contents`],
///    [`StagingState::from_assembled`]), a node whose number of files or bytes of some kind
///    differ: [`ServeDecision::Resynthesize`]. This covers a file that grew in place, and a second
///    boot or finalize file (which the counts record only as present). When either side was built
///    from a manifest alone there are no sizes to compare, and this rule does not apply.
/// 9. Otherwise [`ServeDecision::ServeCached`].
///
/// A staged file rewritten with other bytes of the same size is not seen: the decision compares
/// sizes, not contents.
pub fn serve_decision(
    cached: Option<&CachedBundle>,
    staging: Option<&StagingState>,
) -> ServeDecision {
    let Some(staging) = staging else {
        return ServeDecision::NotFound;
    };
    if staging.nodes.is_empty() {
        return ServeDecision::NotFound;
    }
    let Some(cached) = cached else {
        return ServeDecision::Resynthesize;
    };
    if cached.finalize_received != staging.finalize_on_disk {
        return ServeDecision::Resynthesize;
    }
    let (was, now) = (by_id(&cached.nodes), by_id(&staging.nodes));
    let same = was.len() == now.len() && was.iter().zip(&now).all(|(c, s)| c.still_matches(s));
    if same {
        ServeDecision::ServeCached
    } else {
        ServeDecision::Resynthesize
    }
}

/// The nodes sorted by id.
fn by_id(nodes: &[NodeHoldings]) -> Vec<&NodeHoldings> {
    let mut sorted: Vec<&NodeHoldings> = nodes.iter().collect();
    sorted.sort_by(|a, b| a.node_id_hex.cmp(&b.node_id_hex));
    sorted
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
///    and is deleted, finalized or not. Unfinalized runs are thereby kept at least the window;
///    finalized runs get the same window rather than a shorter one, because a bundle is only
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

/// Stores one post's body in staging as the collector's ingest routes do:
/// `<staging_root>/<run_id>/<node>/<kind>-NNNNNN.<json|pb>`, the extension from the body's
/// `Content-Type` ([`layout::Encoding::of_content_type`]: `application/json`, or
/// `application/x-protobuf` and its other spellings). Returns the file written.
///
/// Nothing is written for a post the collector should refuse, and the problem says why: a content
/// type that is neither (or protobuf in a build without the feature `proto`), or a body that is not
/// a record of `kind` in that encoding (the collector answers it with an error reply). `run_id` and
/// `node` are made safe path components ([`layout::sanitize_component`]). The file is written as
/// [`store_staged`] writes it: durable once this returns, never half a post.
pub fn stage_post(
    staging_root: &Path,
    run_id: &str,
    node: &str,
    kind: &FileKind,
    seq: u64,
    content_type: &str,
    body: &[u8],
) -> Result<PathBuf, Problem> {
    let (run, node) = (
        layout::sanitize_component(run_id),
        layout::sanitize_component(node),
    );
    let at = format!("{run}/{node}");
    let Some(encoding) = layout::Encoding::of_content_type(content_type) else {
        return Err(problem(
            ProblemKind::Encoding,
            at,
            format!(
                "content type {content_type:?} is neither {} nor {}",
                layout::Encoding::Json.content_type(),
                layout::Encoding::Protobuf.content_type()
            ),
        ));
    };
    let name = layout::staged_name_as(kind, seq, encoding);
    let file_at = format!("{at}/{name}");
    let record_kind = kind.record_kind();
    let text = crate::binary::json_text(encoding, record_kind, body)
        .map_err(|e| problem(ProblemKind::Encoding, file_at.clone(), e))?;
    let text = std::str::from_utf8(&text).map_err(|_| {
        problem(
            ProblemKind::Encoding,
            file_at.clone(),
            "not UTF-8, so not JSON".into(),
        )
    })?;
    if let Err(e) = Record::parse(record_kind, text) {
        return Err(problem(
            ProblemKind::Parse,
            file_at,
            format!("not a {record_kind} record: {e}"),
        ));
    }
    store_staged(staging_root, &run, &node, kind, seq, encoding, body).map_err(|e| {
        problem(
            ProblemKind::Read(crate::problem::ReadErrorKind::Io),
            file_at,
            format!("cannot store the post: {e}"),
        )
    })
}

/// Writes one post's body durably into staging as `<staging_root>/<run_id>/<node>/<kind>-NNNNNN.<ext>`
/// (`run_id` and `node` made safe path components, the extension from `encoding`), without
/// looking at it: under a fresh temporary name, flushed to disk, linked into place and the
/// directory flushed ([`super::target::PendingFile`]); new directories are flushed into their
/// parents. Once it returns the post survives a crash whole, and a crash before leaves at most a
/// temporary `.<name>.partial-…` file that [`assemble`] never copies. An existing staged file is
/// never replaced (`AlreadyExists`). Returns the file written.
pub fn store_staged(
    staging_root: &Path,
    run_id: &str,
    node: &str,
    kind: &FileKind,
    seq: u64,
    encoding: layout::Encoding,
    body: &[u8],
) -> io::Result<PathBuf> {
    let dir = staging_root
        .join(layout::sanitize_component(run_id))
        .join(layout::sanitize_component(node));
    super::target::create_dir_durable(&dir)?;
    let mut file =
        super::target::PendingFile::create(&dir.join(layout::staged_name_as(kind, seq, encoding)))?;
    io::Write::write_all(file.file(), body)?;
    file.commit()
}

/// Builds the bundle of `run_id` from the staging tree under `staging_root`, finalized or not.
///
/// Layout ([`crate::layout`]), per node directory `<label>/`: the boot file with the highest seq as
/// `boot.json` and, only when there are several, the others as `boot/boot-NNNNNN.json`; likewise
/// `finalize.json` and `finalize/finalize-NNNNNN.json`; `events/events-NNNNNN.json`,
/// `snapshots/snapshot-NNNNNN.json` and `vastai/vastai_<kind>-NNNNNN.json`, where `NNNNNN` is the
/// staging seq. File bytes are copied unchanged.
///
/// Labels: from the `role` and `stage_index` of the node's latest boot record via
/// [`layout::node_label`]; a node without a boot record that posted vast.ai records (a synthetic id such as
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
/// there are no files. `contract_version` is what the records prove
/// ([`Writer::declare_from_records`]: per node the newest generation its records prove, the run the
/// oldest, none for a 1.0.0 writer) and `writer` is `writer`. Nodes are sorted
/// by label, then id; a node directory without a record file is reported and left out.
///
/// A file that does not parse as its kind is copied and reported; a post still being stored by
/// [`store_staged`] (`.<name>.partial-…`) is left alone. Unknown files, symbolic links,
/// subdirectories of node directories, names that are not UTF-8 and unreadable files are reported and
/// not copied (and not counted, so the manifest always describes the bundle's files).
///
/// Errors: `InvalidInput` when `run_id` is not a single path component, `NotFound` when the run has no
/// staging directory, and any other error reading the run directory itself.
pub fn assemble(
    staging_root: &Path,
    run_id: &str,
    writer: BundleWriter,
) -> Result<Assembled, io::Error> {
    if run_id.is_empty() || run_id == "." || run_id == ".." || run_id.contains(['/', '\\', '\0']) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("run id {run_id:?} is not a single path component"),
        ));
    }
    let run_dir = staging_root.join(run_id);
    let mut problems = Vec::new();
    let mut bundle = Writer::new(run_id, writer);
    bundle.declare_from_records();
    let mut span: Option<(u64, u64)> = None;

    for entry in sorted_entries(&run_dir)? {
        let (name, path) = match entry {
            Ok(entry) => entry,
            Err((raw, message)) => {
                problems.push(problem(
                    ProblemKind::Layout,
                    format!("{run_id}/{raw}"),
                    message,
                ));
                continue;
            }
        };
        let at = format!("{run_id}/{name}");
        let meta = match fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(e) => {
                problems.push(problem(
                    ProblemKind::Read(crate::problem::ReadErrorKind::Io),
                    at,
                    format!("cannot read: {e}"),
                ));
                continue;
            }
        };
        if !meta.is_dir() {
            let what = if meta.file_type().is_symlink() {
                "symbolic link"
            } else {
                "file"
            };
            problems.push(problem(
                ProblemKind::Layout,
                at,
                format!("unknown {what} in the run directory (not a node directory), not copied"),
            ));
            continue;
        }
        let entries = match sorted_entries(&path) {
            Ok(entries) => entries,
            Err(e) => {
                problems.push(problem(
                    ProblemKind::Read(crate::problem::ReadErrorKind::Io),
                    at,
                    format!("cannot read the node directory: {e}"),
                ));
                continue;
            }
        };
        let mut copied = 0;
        for entry in entries {
            let (file, file_path) = match entry {
                Ok(entry) => entry,
                Err((raw, message)) => {
                    problems.push(problem(ProblemKind::Layout, format!("{at}/{raw}"), message));
                    continue;
                }
            };
            if super::target::is_temporary_name(&file) {
                continue;
            }
            let file_at = format!("{at}/{file}");
            let meta = match fs::symlink_metadata(&file_path) {
                Ok(meta) => meta,
                Err(e) => {
                    problems.push(problem(
                        ProblemKind::Read(crate::problem::ReadErrorKind::Io),
                        file_at,
                        format!("cannot read: {e}"),
                    ));
                    continue;
                }
            };
            if !meta.is_file() {
                let (what, kind) = if meta.is_dir() {
                    ("directory", ProblemKind::Layout)
                } else if meta.file_type().is_symlink() {
                    (
                        "symbolic link",
                        ProblemKind::Read(crate::problem::ReadErrorKind::Link),
                    )
                } else {
                    (
                        "special file",
                        ProblemKind::Read(crate::problem::ReadErrorKind::Io),
                    )
                };
                problems.push(problem(
                    kind,
                    file_at,
                    format!("unexpected {what}, not copied"),
                ));
                continue;
            }
            let Some((kind, seq)) = layout::parse_staged_name(&file) else {
                problems.push(problem(
                    ProblemKind::Layout,
                    file_at,
                    "unknown file (expected <kind>-<seq:06>.json, or .pb for the binary form), not copied".into(),
                ));
                continue;
            };
            let bytes = match fs::read(&file_path) {
                Ok(bytes) => bytes,
                Err(e) => {
                    problems.push(problem(
                        ProblemKind::Read(crate::problem::ReadErrorKind::Io),
                        file_at,
                        format!("cannot read: {e}, not copied"),
                    ));
                    continue;
                }
            };
            if let Some(ms) = meta.modified().ok().and_then(unix_ms) {
                span = Some(span.map_or((ms, ms), |(lo, hi)| (lo.min(ms), hi.max(ms))));
            }
            let encoding = layout::Encoding::of_name(&file).unwrap_or_default();
            check_record(&file_at, &kind, encoding, &bytes, &mut problems);
            bundle.add_file_as(&name, kind, Some(seq), encoding, bytes);
            copied += 1;
        }
        if copied == 0 {
            problems.push(problem(
                ProblemKind::Layout,
                at,
                "node directory holds no record files, left out".into(),
            ));
        }
    }
    if let Some((lo, hi)) = span {
        bundle.collector_span(lo, hi);
    }
    let done = bundle.finish();
    problems.extend(done.problems);
    Ok(Assembled {
        contents: done.contents,
        manifest: done.manifest,
        problems,
    })
}

/// A problem with a staged file or directory at `at` (relative to the staging root).
fn problem(kind: ProblemKind, at: String, message: String) -> Problem {
    Problem::new(kind, Location::file(at), message)
}

/// A directory entry as (name, path), or for a name that is not UTF-8 its lossy form and a message.
type Entry = Result<(String, PathBuf), (String, String)>;

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
                .map_err(|raw| {
                    (
                        raw.to_string_lossy().into_owned(),
                        "name is not UTF-8, not copied".to_owned(),
                    )
                }),
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
fn check_record(
    at: &str,
    kind: &FileKind,
    encoding: layout::Encoding,
    bytes: &[u8],
    problems: &mut Vec<Problem>,
) {
    let record_kind = kind.record_kind();
    let bytes = match crate::binary::json_text(encoding, record_kind, bytes) {
        Ok(b) => b,
        Err(e) => {
            problems.push(Problem::new(
                ProblemKind::Encoding,
                Location::file(at),
                format!("{e} (copied anyway)"),
            ));
            return;
        }
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        problems.push(Problem::new(
            ProblemKind::Encoding,
            Location::file(at),
            format!("not UTF-8, so not a {record_kind} record (copied anyway)"),
        ));
        return;
    };
    if let Err(e) = Record::parse(record_kind, text) {
        problems.push(Problem::new(
            ProblemKind::Parse,
            Location::file(at),
            format!("does not parse as a {record_kind} record: {e} (copied anyway)"),
        ));
    }
}
