//! Durable staging and the collector's accounting: the per-(run, node, kind) sequence numbers,
//! the per-run and per-node counts `/diag/runs` lists, the limits, quarantine, and recovery of all
//! of it from disk when the collector starts.
//!
//! Layout under the root: `staging/<run_id>/<node_id>/<kind>-NNNNNN.<json|pb>` (the library's
//! staging layout, written in two steps by [`Flushed`]),
//! `quarantine/<run_id>/<node_id>/NNNNNN-<kind>.<json|pb|bin>` with a `.why.json` beside each
//! (bodies that are not records of their kind), and `bundles/<run_id>.tar.gz`. Every file is
//! written under a temporary name, flushed, moved into place and its directory flushed before the
//! post is acknowledged.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use diagwire::bundle::target::is_temporary_name;
use diagwire::layout::{self, Encoding, FileKind};
use prometheus_client::metrics::counter::Counter;

use crate::config::Config;
use crate::confined::{Dir, Kind};
use crate::durable::Flushed;
use crate::live::{Budget, Hub, Recovered, WeakHub};
use crate::sync::lock;

/// Why a post could not be stored.
#[derive(Debug)]
pub enum StoreError {
    /// A limit would be passed (answered with 413).
    Limit(String),
    /// Writing failed (answered with 500; nothing was acknowledged).
    Io(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Limit(m) | StoreError::Io(m) => f.write_str(m),
        }
    }
}

/// Counts of one node in one run, as `/diag/runs` lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeAccount {
    /// Boot files.
    pub boots: u64,
    /// Events files (posted batches).
    pub event_batches: u64,
    /// Snapshot files.
    pub snapshots: u64,
    /// Finalize files.
    pub finalizes: u64,
    /// vast.ai record files.
    pub vastai: u64,
    /// Quarantined posts.
    pub quarantined: u64,
    /// Records left out as already staged (since the collector opened).
    pub deduplicated: u64,
    /// Records staged with the identity of an earlier record of other content.
    pub conflicts: u64,
}

impl NodeAccount {
    fn files(&self) -> u64 {
        self.boots
            + self.event_batches
            + self.snapshots
            + self.finalizes
            + self.vastai
            + self.quarantined
    }

    fn count(&mut self, kind: &FileKind) {
        match kind {
            FileKind::Boot => self.boots += 1,
            FileKind::Events => self.event_batches += 1,
            FileKind::Snapshot => self.snapshots += 1,
            FileKind::Finalize => self.finalizes += 1,
            FileKind::Vastai(_) => self.vastai += 1,
        }
    }
}

/// What the collector knows of one run.
#[derive(Debug, Default)]
pub struct RunAccount {
    /// Per node id.
    pub nodes: BTreeMap<String, NodeAccount>,
    /// Earliest receive time, ms since the epoch.
    pub start_ms: Option<u64>,
    /// Latest receive time.
    pub end_ms: Option<u64>,
    /// Bytes of staged and quarantined files.
    pub bytes: u64,
    /// Bytes reserved by posts being written (counted against the run's limit with `bytes`).
    pub reserved: u64,
}

impl RunAccount {
    fn saw(&mut self, ms: u64) {
        self.start_ms = Some(self.start_ms.map_or(ms, |s| s.min(ms)));
        self.end_ms = Some(self.end_ms.map_or(ms, |e| e.max(ms)));
    }

    /// Whether some node has a finalize file.
    pub fn finalize_received(&self) -> bool {
        self.nodes.values().any(|n| n.finalizes > 0)
    }
}

/// The sequence numbers of one node: the next staging number per kind, and the next quarantine
/// number. Held (behind an async lock) while the node's post is written, so numbers are given in
/// order and a failed write gives none away.
#[derive(Debug, Default)]
pub struct NodeSeq {
    next: BTreeMap<String, u64>,
    next_quarantine: u64,
    /// What the node staged, to leave out what it posts again.
    pub dedupe: crate::dedupe::NodeDedupe,
    /// Whether `dedupe` was let go ([`NodeSeq::cool`]), to be read back from the node's staged
    /// files before its next post is planned ([`Store::warm`]).
    cold: bool,
}

impl NodeSeq {
    /// Lets go of what the node staged once its finalize is in: a node that finalized seldom
    /// posts again, and a collector that has seen thousands of runs holds none of the finished
    /// ones' state in memory (about 100 KB a node at the default window). A later post of the
    /// node reads it back from its staged files first ([`Store::warm`]), as a restart does.
    pub fn cool(&mut self) {
        self.dedupe = Default::default();
        self.cold = true;
    }

    fn take(&self, stem: &str) -> u64 {
        *self.next.get(stem).unwrap_or(&1)
    }

    /// The number the node's next post of `kind` is staged under.
    pub fn next_number(&self, kind: &FileKind) -> u64 {
        self.take(&kind.staged_stem())
    }
}

/// One run: its accounting, its nodes' sequence locks, its pending hints, its live stream, and
/// the lock finalizes assemble under.
pub struct Run {
    /// The run id.
    pub id: String,
    /// Counts (a short lock; never held across a write).
    pub account: Mutex<RunAccount>,
    seqs: Mutex<BTreeMap<String, Arc<tokio::sync::Mutex<NodeSeq>>>>,
    hints: Mutex<BTreeSet<String>>,
    /// The live stream.
    pub live: Hub,
    /// Held while the run's bundle is assembled and written.
    pub assembly: tokio::sync::Mutex<()>,
    /// One more at each staged or quarantined file.
    generation: std::sync::atomic::AtomicU64,
    /// The generation the canonical tarball holds, when known (set under `assembly`).
    bundled: Mutex<Option<u64>>,
}

/// Bytes a post reserved against its run's limit before writing them, given back when dropped
/// (by then they are counted as written, or nothing was).
pub struct Room {
    run: Arc<Run>,
    bytes: u64,
}

impl Drop for Room {
    fn drop(&mut self) {
        let mut account = lock(&self.run.account);
        account.reserved = account.reserved.saturating_sub(self.bytes);
    }
}

/// A post flushed under its temporary name ([`Flushed`]) with the room it reserved.
pub struct Reserved {
    flushed: Flushed,
    _room: Room,
}

impl Run {
    /// Adds what `plan` left out and kept in conflict to `node`'s counts in `/diag/runs`.
    pub fn count_dedupe(&self, node: &str, plan: &crate::dedupe::Plan) {
        if plan.left_out == 0 && plan.conflicts.is_empty() {
            return;
        }
        let mut account = lock(&self.account);
        let n = account.nodes.entry(node.to_owned()).or_default();
        n.deduplicated += plan.left_out;
        n.conflicts += plan.conflicts.len() as u64;
    }

    /// Queues `snapshot_now` for every node of the run.
    pub fn hint_all(&self) {
        let nodes: Vec<String> = lock(&self.account).nodes.keys().cloned().collect();
        lock(&self.hints).extend(nodes);
    }

    /// Takes the hint queued for a node, if any (delivered once).
    pub fn take_hint(&self, node: &str) -> bool {
        lock(&self.hints).remove(node)
    }

    /// What the run's staging and quarantine are at: one more at each file written.
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn wrote(&self) {
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether the canonical tarball holds the run as it is at `generation` (known when this
    /// collector wrote it or checked it since it started).
    pub fn bundled_at(&self, generation: u64) -> bool {
        *lock(&self.bundled) == Some(generation)
    }

    /// Records that the canonical tarball holds the run as it was at `generation`.
    pub fn set_bundled(&self, generation: u64) {
        *lock(&self.bundled) = Some(generation);
    }
}

/// The largest finalize body taken past a full run's limits (one per node).
pub const FINALIZE_ALLOWANCE: u64 = 64 << 10;

/// Durable staging and accounting of every run.
pub struct Store {
    config: Arc<Config>,
    /// `root/staging`.
    pub staging: PathBuf,
    /// `root/quarantine`.
    pub quarantine: PathBuf,
    /// `root/bundles`.
    pub bundles: PathBuf,
    /// `root/bundles`, held open: assembly writes, renames and removes in it, and serves from
    /// it, without following a link.
    pub bundles_dir: Dir,
    /// The root, held open: every post is written under it without following a link.
    root: Arc<crate::confined::Root>,
    /// Links found where a folder or a file was expected (never followed).
    links_refused: Counter,
    runs: Mutex<BTreeMap<String, Arc<Run>>>,
    /// The live streams of runs that have subscribers but no post yet (taken by the run at its
    /// first post). Held weakly: a stream goes when its last subscriber does, and such runs take
    /// none of the places for runs.
    waiting: Mutex<BTreeMap<String, WeakHub>>,
    live_budget: Arc<Budget>,
    /// The memory budget and the places for streams, assemblies and downloads.
    pub bounds: Arc<crate::budget::Bounds>,
}

/// A post to store.
pub struct Post<'a> {
    /// Its kind.
    pub kind: &'a FileKind,
    /// The bytes to stage and their encoding.
    pub bytes: &'a [u8],
    /// The encoding of `bytes`.
    pub encoding: Encoding,
    /// Receive time, ms since the epoch.
    pub recv_ms: u64,
}

/// A body kept in quarantine.
pub struct Quarantined<'a> {
    /// The route's kind name (`events`, or an unknown kind's name).
    pub kind: &'a str,
    /// The body as posted.
    pub body: &'a [u8],
    /// `json`, `pb` or `bin`.
    pub extension: &'a str,
    /// Why, as JSON (written beside the body as `.why.json`).
    pub why: serde_json::Value,
    /// Receive time.
    pub recv_ms: u64,
}

impl Store {
    /// Opens (creating) the root and recovers every run from disk: sequence numbers continue
    /// after the highest staged number of each (run, node, kind), temporary files of posts that
    /// were never acknowledged are removed. Every folder and file is opened without following
    /// a link ([`crate::confined`]); a link found is skipped (a link where work in progress is
    /// removed, removed itself), logged and counted in `links_refused`.
    pub fn open(config: Arc<Config>, links_refused: Counter) -> io::Result<Store> {
        let root = &config.root;
        std::fs::create_dir_all(root)?;
        let confined = crate::confined::Root::open(root)?;
        let (staging, quarantine, bundles) = (
            root.join("staging"),
            root.join("quarantine"),
            root.join("bundles"),
        );
        for dir in [&staging, &quarantine] {
            confined.dir(dir, true)?;
        }
        let bundles_dir = confined.dir(&bundles, true)?;
        let store = Store {
            root: Arc::new(confined),
            config: config.clone(),
            staging,
            quarantine,
            bundles,
            bundles_dir,
            links_refused,
            runs: Mutex::new(BTreeMap::new()),
            waiting: Mutex::new(BTreeMap::new()),
            live_budget: Budget::new(config.live_budget_bytes),
            bounds: Arc::new(crate::budget::Bounds::new(
                &config.limits,
                config.live_budget_bytes,
            )),
        };
        store.remove_work_in_progress()?;
        store.recover()?;
        Ok(store)
    }

    /// Removes the work in progress a crash left in `bundles/` (assemblies, tarballs never moved
    /// into place): names starting with `~`, which no run id has (`.` may start one, so the
    /// bundle of run `.x` is never taken for work in progress). An older collector's hidden
    /// work in progress never ended in `.tar.gz`, which every bundle does.
    fn remove_work_in_progress(&self) -> io::Result<()> {
        for (name, kind) in self.bundles_dir.entries()? {
            let legacy = name.starts_with('.')
                && !name.ends_with(".tar.gz")
                && (name.contains(".assembling-") || is_temporary_name(&name));
            if name.starts_with(crate::assembly::WORK_PREFIX) || legacy {
                if kind == Kind::Link {
                    self.refuse_link(&self.bundles.join(&name));
                }
                self.bundles_dir.remove_tree(&name)?;
            }
        }
        Ok(())
    }

    /// Logs and counts a link found under the root where the collector reads (it is never
    /// followed).
    pub fn refuse_link(&self, path: &Path) {
        self.links_refused.inc();
        tracing::warn!(
            target: "diagwire_serve::links",
            path = %diagwire::problem::printable(&path.display().to_string()),
            "a link under the root is not followed"
        );
    }

    /// The names in `dir` of folders (`want` [`Kind::Dir`]) or regular files, sorted; each link
    /// is refused ([`Store::refuse_link`]) and left out, as is anything else.
    pub fn names(&self, dir: &Dir, want: Kind) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for (name, kind) in dir.entries()? {
            if kind == want {
                out.push(name);
            } else if kind == Kind::Link {
                self.refuse_link(&dir.path().join(&name));
            }
        }
        Ok(out)
    }

    fn recover(&self) -> io::Result<()> {
        let mut runs = BTreeMap::new();
        for (base, quarantine) in [(&self.staging, false), (&self.quarantine, true)] {
            let base = self.root.dir(base, false)?;
            for run_id in self.names(&base, Kind::Dir)? {
                let run_dir = base.open_dir(&run_id)?;
                let run = runs
                    .entry(run_id.clone())
                    .or_insert_with(|| (RunAccount::default(), BTreeMap::new(), BTreeMap::new()));
                for node in self.names(&run_dir, Kind::Dir)? {
                    let seq: &mut NodeSeq = run.1.entry(node.clone()).or_default();
                    let mut account = run.0.nodes.remove(&node).unwrap_or_default();
                    let dir = run_dir.open_dir(&node)?;
                    // The node's files, listed once: counted here, replayed by dedupe below.
                    let mut files = Vec::new();
                    for (name, kind) in dir.entries()? {
                        if kind == Kind::Link {
                            self.refuse_link(&dir.path().join(&name));
                        }
                        if is_temporary_name(&name) && kind != Kind::Dir {
                            // Never acknowledged: the writer died before moving it into place.
                            dir.remove(&name)?;
                            continue;
                        }
                        if kind != Kind::File {
                            continue;
                        }
                        let meta = dir.meta(&name)?;
                        if quarantine {
                            if name.ends_with(".why.json") {
                                continue;
                            }
                            let n = name
                                .split('-')
                                .next()
                                .and_then(|d| d.parse::<u64>().ok())
                                .unwrap_or(0);
                            seq.next_quarantine = seq.next_quarantine.max(n);
                            account.quarantined += 1;
                        } else {
                            let Some((kind, n)) = layout::parse_staged_name(&name) else {
                                continue;
                            };
                            let next = seq.next.entry(kind.staged_stem()).or_insert(1);
                            *next = (*next).max(n + 1);
                            account.count(&kind);
                            let highest = run.2.entry((node.clone(), kind)).or_insert(0);
                            *highest = (*highest).max(n);
                        }
                        run.0.bytes += meta.len;
                        run.0.saw(meta.modified_ms());
                        files.push(name);
                    }
                    if !quarantine && self.config.dedupe {
                        seq.dedupe = crate::dedupe::NodeDedupe::rebuild(
                            files,
                            &dir,
                            self.config.dedupe_window,
                        )?;
                        account.conflicts = seq.dedupe.conflicts;
                    }
                    run.0.nodes.insert(node, account);
                }
            }
        }
        let mut map = lock(&self.runs);
        for (id, (account, seqs, staged)) in runs {
            let staged = staged.into_iter().map(|((node, kind), n)| (node, kind, n));
            let hub = self.new_hub(&id, staged.collect());
            if self
                .bundles_dir
                .meta(&format!("{id}.tar.gz"))
                .is_ok_and(|m| m.kind == Kind::File)
            {
                hub.finish();
            }
            let run = self.new_run(&id, hub);
            *lock(&run.account) = account;
            *lock(&run.seqs) = seqs
                .into_iter()
                .map(|(node, mut s)| {
                    s.next_quarantine += 1;
                    (node, Arc::new(tokio::sync::Mutex::new(s)))
                })
                .collect();
            map.insert(id, run);
        }
        Ok(())
    }

    /// The live stream of run `id`, whose records found on disk are `staged`.
    fn new_hub(&self, id: &str, staged: Recovered) -> Hub {
        Hub::new(
            id,
            (self.root.clone(), self.staging.join(id)),
            staged,
            (self.config.live_replay, self.config.live_run_bytes),
            self.live_budget.clone(),
            self.bounds.clone(),
        )
    }

    fn new_run(&self, id: &str, live: Hub) -> Arc<Run> {
        Arc::new(Run {
            id: id.to_owned(),
            account: Mutex::new(RunAccount::default()),
            seqs: Mutex::new(BTreeMap::new()),
            hints: Mutex::new(BTreeSet::new()),
            live,
            assembly: tokio::sync::Mutex::new(()),
            generation: std::sync::atomic::AtomicU64::new(0),
            bundled: Mutex::new(None),
        })
    }

    /// The live stream of a run to subscribe to: the run's, or for a run with no post yet a
    /// stream the run takes at its first post. Subscribing never creates a run, so it takes
    /// none of the collector's places for runs; the streams waiting for their run live only
    /// while they have subscribers, and at most `max_waiting_runs` of them at once: `None`
    /// past that.
    pub fn live(&self, id: &str) -> Option<Hub> {
        let runs = lock(&self.runs);
        if let Some(run) = runs.get(id) {
            return Some(run.live.clone());
        }
        let mut waiting = lock(&self.waiting);
        if let Some(hub) = waiting.get(id).and_then(WeakHub::upgrade) {
            return Some(hub);
        }
        let max = self.config.limits.max_waiting_runs.max(1);
        if waiting.len() >= max {
            waiting.retain(|_, hub| !hub.is_gone());
        }
        if waiting.len() >= max {
            return None;
        }
        let hub = self.new_hub(id, Recovered::new());
        waiting.insert(id.to_owned(), hub.downgrade());
        Some(hub)
    }

    /// The run, when the collector knows it.
    pub fn run(&self, id: &str) -> Option<Arc<Run>> {
        lock(&self.runs).get(id).cloned()
    }

    /// Every run, sorted by id.
    pub fn runs(&self) -> Vec<Arc<Run>> {
        lock(&self.runs).values().cloned().collect()
    }

    /// The run, created when new unless that would pass the run limit, which counts open runs
    /// (a run whose bundle is written gives its place back).
    pub fn run_or_create(&self, id: &str) -> Result<Arc<Run>, StoreError> {
        let mut runs = lock(&self.runs);
        if let Some(run) = runs.get(id) {
            return Ok(run.clone());
        }
        let open = runs.values().filter(|r| !r.live.is_finished()).count();
        if open >= self.config.limits.max_runs {
            return Err(StoreError::Limit(format!(
                "the collector holds {open} open runs, its limit; run {id:?} is refused"
            )));
        }
        let waiting = lock(&self.waiting).remove(id);
        let hub = waiting
            .and_then(|hub| hub.upgrade())
            .unwrap_or_else(|| self.new_hub(id, Recovered::new()));
        let run = self.new_run(id, hub);
        runs.insert(id.to_owned(), run.clone());
        Ok(run)
    }

    /// The sequence lock of a node of a run, created when new unless that would pass the
    /// per-run node limit.
    pub fn node_seq(
        &self,
        run: &Run,
        node: &str,
    ) -> Result<Arc<tokio::sync::Mutex<NodeSeq>>, StoreError> {
        let mut seqs = lock(&run.seqs);
        if let Some(s) = seqs.get(node) {
            return Ok(s.clone());
        }
        if seqs.len() >= self.config.limits.max_nodes_per_run {
            return Err(StoreError::Limit(format!(
                "run {:?} holds {} nodes, its limit; node {node:?} is refused",
                run.id,
                seqs.len()
            )));
        }
        let s = Arc::new(tokio::sync::Mutex::new(NodeSeq {
            next: BTreeMap::new(),
            next_quarantine: 1,
            dedupe: Default::default(),
            cold: false,
        }));
        seqs.insert(node.to_owned(), s.clone());
        Ok(s)
    }

    /// Reserves room for a post of `bytes` within the run's limits, counting what posts being
    /// written reserved, so posts at once never pass them together. A node's first finalize (of
    /// at most [`FINALIZE_ALLOWANCE`] bytes) always fits, so a run that filled its limits can
    /// still be closed and assembled.
    fn check_room(
        &self,
        run: &Arc<Run>,
        node: &str,
        kind: Option<&FileKind>,
        bytes: u64,
    ) -> Result<Room, StoreError> {
        let mut account = lock(&run.account);
        let limits = &self.config.limits;
        let first_finalize = kind == Some(&FileKind::Finalize)
            && bytes <= FINALIZE_ALLOWANCE
            && account.nodes.get(node).is_none_or(|n| n.finalizes == 0);
        if first_finalize {
            return Ok(Room {
                run: run.clone(),
                bytes: 0,
            });
        }
        let files = account.nodes.get(node).map_or(0, NodeAccount::files);
        if files >= limits.max_files_per_node {
            return Err(StoreError::Limit(format!(
                "node {node:?} holds {files} files in run {:?}, its limit",
                run.id
            )));
        }
        if account
            .bytes
            .saturating_add(account.reserved)
            .saturating_add(bytes)
            > limits.max_run_bytes
        {
            return Err(StoreError::Limit(format!(
                "run {:?} would pass its limit of {} bytes",
                run.id, limits.max_run_bytes
            )));
        }
        account.reserved += bytes;
        Ok(Room {
            run: run.clone(),
            bytes,
        })
    }

    /// The test hook, called before each durable write.
    pub(crate) fn fault(&self, path: &Path) -> io::Result<()> {
        match &self.config.write_fault {
            Some(f) => f(path),
            None => Ok(()),
        }
    }

    /// The staged path of a post of `kind` in `encoding` numbered `n`.
    fn staged_path(
        &self,
        run: &Run,
        node: &str,
        kind: &FileKind,
        n: u64,
        encoding: Encoding,
    ) -> PathBuf {
        self.staging
            .join(&run.id)
            .join(node)
            .join(layout::staged_name_as(kind, n, encoding))
    }

    /// The first step of staging a post: its bytes written under a temporary name beside the
    /// staged name numbered `n` and flushed (see [`Flushed`]). Nothing is numbered or counted
    /// yet; [`Store::commit`] does that. Blocking.
    pub fn flush(
        &self,
        run: &Arc<Run>,
        node: &str,
        n: u64,
        post: &Post<'_>,
    ) -> Result<Reserved, StoreError> {
        let room = self.check_room(run, node, Some(post.kind), post.bytes.len() as u64)?;
        let target = self.staged_path(run, node, post.kind, n, post.encoding);
        self.fault(&target)
            .and_then(|()| Flushed::write(&self.root, &target, post.bytes))
            .map(|flushed| Reserved {
                flushed,
                _room: room,
            })
            .map_err(|e| self.write_error(run, node, &target, e))
    }

    /// The second step: the flushed post linked to its staged name and its directory flushed,
    /// then numbered and counted. `flushed` must be for the node's next number of its kind (the
    /// caller holds `seq`, the node's sequence lock, from before [`Store::flush`]). Returns the
    /// number given. Blocking.
    pub fn commit(
        &self,
        run: &Run,
        node: &str,
        seq: &mut NodeSeq,
        reserved: Reserved,
        post: &Post<'_>,
    ) -> Result<u64, StoreError> {
        let Reserved { flushed, _room } = reserved;
        let stem = post.kind.staged_stem();
        let n = seq.take(&stem);
        let target = self.staged_path(run, node, post.kind, n, post.encoding);
        if flushed.target() != target {
            return Err(StoreError::Io(format!(
                "{} is not the next staged name, {}; nothing was acknowledged",
                flushed.target().display(),
                target.display()
            )));
        }
        flushed
            .commit()
            .map_err(|e| self.write_error(run, node, &target, e))?;
        seq.next.insert(stem, n + 1);
        let mut account = lock(&run.account);
        account
            .nodes
            .entry(node.to_owned())
            .or_default()
            .count(post.kind);
        account.bytes += post.bytes.len() as u64;
        account.saw(post.recv_ms);
        drop(account);
        run.wrote();
        Ok(n)
    }

    /// Stages a post durably under the node's next sequence number for its kind (the caller holds
    /// `seq`, the node's sequence lock): [`Store::flush`], then [`Store::commit`]. Returns the
    /// number given. Blocking.
    pub fn stage(
        &self,
        run: &Arc<Run>,
        node: &str,
        seq: &mut NodeSeq,
        post: &Post<'_>,
    ) -> Result<u64, StoreError> {
        let n = seq.next_number(post.kind);
        let flushed = self.flush(run, node, n, post)?;
        self.commit(run, node, seq, flushed, post)
    }

    fn write_error(&self, run: &Run, node: &str, target: &Path, e: io::Error) -> StoreError {
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        StoreError::Io(format!(
            "cannot store {}/{node}/{name}: {e}; nothing was acknowledged",
            run.id
        ))
    }

    /// Keeps a body in quarantine durably, with why beside it. Returns its path relative to the
    /// root. Blocking.
    pub fn quarantine(
        &self,
        run: &Arc<Run>,
        node: &str,
        seq: &mut NodeSeq,
        q: &Quarantined<'_>,
    ) -> Result<String, StoreError> {
        let _room = self.check_room(run, node, None, q.body.len() as u64)?;
        let n = seq.next_quarantine.max(1);
        let dir = self.quarantine.join(&run.id).join(node);
        let stem = format!("{}-{}", layout::format_seq(n), q.kind);
        let name = format!("{stem}.{}", q.extension);
        let why = serde_json::to_vec_pretty(&q.why).unwrap_or_default();
        let write = || -> io::Result<()> {
            let at = self.root.dir(&dir, true)?;
            self.fault(&dir.join(&name))?;
            at.write_new(&format!("{stem}.why.json"), &why)?;
            at.write_new(&name, q.body)
        };
        write().map_err(|e| {
            StoreError::Io(format!(
                "cannot keep {}/{node}/{name} in quarantine: {e}",
                run.id
            ))
        })?;
        seq.next_quarantine = n + 1;
        let mut account = lock(&run.account);
        account
            .nodes
            .entry(node.to_owned())
            .or_default()
            .quarantined += 1;
        account.bytes += (q.body.len() + why.len()) as u64;
        account.saw(q.recv_ms);
        drop(account);
        run.wrote();
        Ok(format!("quarantine/{}/{node}/{name}", run.id))
    }

    /// The quarantined files of a run (bodies and their `.why.json`), as paths relative to the
    /// run's quarantine folder (`<node>/<name>`) with the folder holding each, sorted. Links are
    /// refused and left out.
    pub fn quarantined_files(&self, run_id: &str) -> io::Result<Vec<(String, Arc<Dir>, String)>> {
        let Some(base) = self.root.dir_if_any(&self.quarantine.join(run_id))? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for node in self.names(&base, Kind::Dir)? {
            let dir = Arc::new(base.open_dir(&node)?);
            for name in self.names(&dir, Kind::File)? {
                if !name.starts_with('.') {
                    out.push((format!("{node}/{name}"), dir.clone(), name));
                }
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Reads a cooled node's dedupe state back from its staged files ([`NodeSeq::cool`]); a node
    /// that was not cooled is left as it is.
    pub fn warm(&self, run_id: &str, node: &str, seq: &mut NodeSeq) -> Result<(), StoreError> {
        if !seq.cold {
            return Ok(());
        }
        let io = |e: io::Error| {
            StoreError::Io(format!(
                "the staged records of node {node:?} of run {run_id:?} could not be read back: {e}"
            ))
        };
        if let Some(run_dir) = self.staging_dir(run_id).map_err(io)? {
            match run_dir.open_dir(node) {
                Ok(dir) => {
                    let names = self.names(&dir, Kind::File).map_err(io)?;
                    seq.dedupe =
                        crate::dedupe::NodeDedupe::rebuild(names, &dir, self.config.dedupe_window)
                            .map_err(io)?;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(e)),
            }
        }
        seq.cold = false;
        Ok(())
    }

    /// The JSON text of a node's staged events file number `n` (`crate::dedupe::events_text`).
    pub fn staged_events(&self, run_id: &str, node: &str, n: u64) -> Option<String> {
        let dir = self.staging_dir(run_id).ok()??.open_dir(node).ok()?;
        crate::dedupe::events_text(&dir, n)
    }

    /// The run's staging folder, when it has one (opened without following a link).
    pub fn staging_dir(&self, run_id: &str) -> io::Result<Option<Dir>> {
        self.root.dir_if_any(&self.staging.join(run_id))
    }
}
