//! The live stream of a run: every accepted record, in the order it was acknowledged, numbered
//! with a run-wide stream id (the SSE `id`), from the run's first record on. Recent records are
//! kept in a bounded buffer (a count per run, a byte budget over all runs) that every subscriber
//! reads at its own cursor; a subscriber that asks for older ones (`?from=0`, a `Last-Event-ID`
//! before the buffer) or falls out of the buffer has them read back from staging, where every
//! acknowledged record is durable, so it sees the run whole, without a gap or a duplicate.
//!
//! To read an id back the stream keeps its index: which (node, kind) each id is, as runs of
//! consecutive ids of one (node, kind) — at most 8 bytes per record, and one entry per (node,
//! kind) for the records found on disk when the collector started (their ids come first, in a
//! fixed order: every node's boot records, then each node's files by kind and number). The staged
//! file of an id is then the (node, kind)'s n-th, n counted along the index, since a node's posts
//! of a kind are numbered and published in the same order. A staged file that cannot be read is
//! announced with a `lagged` event (nothing is skipped silently); once the run's bundle is
//! written, a subscriber that has read every record is sent an `end` event and the stream closes.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::sync::lock;

use diagwire::layout::{self, Encoding, FileKind};
use diagwire::v1::LiveRecord;
use tokio::sync::watch;

/// One accepted record, ready to send: its stream id, its kind (the SSE event name) and its
/// Server-Sent Event, written once and shared by every subscriber (a subscriber that does not
/// read holds a reference to it, never a copy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveItem {
    /// The run-wide stream id.
    pub id: u64,
    /// The record kind (`events`, `snapshot`, …).
    pub kind: String,
    /// The event as sent: `event: <kind>`, `id: <id>`, `data: <LiveRecord JSON on one line>`.
    pub frame: bytes::Bytes,
    data_at: usize,
}

impl LiveItem {
    /// The item of stream id `id`, whose `LiveRecord` JSON is `data` (one line).
    pub fn new(id: u64, kind: String, data: &str) -> LiveItem {
        let head = format!("event: {kind}\nid: {id}\ndata: ");
        let mut frame = Vec::with_capacity(head.len() + data.len() + 2);
        frame.extend_from_slice(head.as_bytes());
        frame.extend_from_slice(data.as_bytes());
        frame.extend_from_slice(b"\n\n");
        LiveItem {
            id,
            kind,
            frame: frame.into(),
            data_at: head.len(),
        }
    }

    /// The `LiveRecord` JSON.
    pub fn data(&self) -> &str {
        let end = self.frame.len().saturating_sub(2);
        std::str::from_utf8(self.frame.get(self.data_at..end).unwrap_or_default())
            .unwrap_or_default()
    }
}

/// What a subscriber receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// A record.
    Item(Arc<LiveItem>),
    /// Records that cannot be given (their staged file is gone or unreadable): `skipped` of them,
    /// the next one it gets (if any) is later.
    Lagged {
        /// How many records were skipped.
        skipped: u64,
    },
    /// The run's bundle is written and the subscriber has every record before it: the last
    /// stream id. The stream closes after it.
    End {
        /// The last stream id of the run.
        last: u64,
    },
}

/// The bytes every run's replay buffer may hold together; a run over it drops its own oldest
/// records first.
#[derive(Debug)]
pub struct Budget {
    used: AtomicU64,
    max: u64,
}

impl Budget {
    /// A budget of `max` bytes.
    pub fn new(max: u64) -> Arc<Budget> {
        Arc::new(Budget {
            used: AtomicU64::new(0),
            max,
        })
    }
}

/// A (node, kind) of the run: whose staged files an id of the index is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    node: String,
    kind: FileKind,
}

struct Inner {
    next_id: u64,
    replay: VecDeque<Arc<LiveItem>>,
    keys: Vec<Key>,
    key_of: HashMap<Key, u32>,
    /// Ids 1, 2, … as runs of consecutive ids of one key: (key, how many).
    index: Vec<(u32, u32)>,
    /// Whether the run's bundle is written (subscribers that read everything are sent `end`).
    finished: bool,
    /// The bytes `replay` holds.
    bytes: u64,
}

impl Inner {
    fn key(&mut self, node: &str, kind: &FileKind) -> u32 {
        let key = Key {
            node: node.to_owned(),
            kind: kind.clone(),
        };
        if let Some(&k) = self.key_of.get(&key) {
            return k;
        }
        let k = self.keys.len() as u32;
        self.keys.push(key.clone());
        self.key_of.insert(key, k);
        k
    }

    /// Appends `count` ids of `key` to the index.
    fn append(&mut self, key: u32, count: u64) {
        let mut count = count;
        while count > 0 {
            match self.index.last_mut() {
                Some((k, n)) if *k == key && *n < u32::MAX => {
                    let add = count.min(u64::from(u32::MAX - *n));
                    *n += add as u32;
                    count -= add;
                }
                _ => {
                    let add = count.min(u64::from(u32::MAX));
                    self.index.push((key, add as u32));
                    count -= add;
                }
            }
        }
    }
}

/// Where the run's staged files are, to read back what the buffer no longer holds.
struct Staged {
    run_id: String,
    /// The collector's root: staged files are read from it without following a link.
    root: Arc<crate::confined::Root>,
    dir: PathBuf,
}

struct Shared {
    inner: Mutex<Inner>,
    cap: usize,
    budget: Arc<Budget>,
    /// The most bytes this run's buffer holds.
    run_bytes: u64,
    /// Where read-backs reserve their memory.
    bounds: Arc<crate::budget::Bounds>,
    /// The record read back last, shared by the subscribers that ask for it after (one read
    /// of a large record for every subscriber behind, not one each); read-backs of the run
    /// take turns under this lock.
    read_back: tokio::sync::Mutex<Option<Arc<LiveItem>>>,
    newest: watch::Sender<u64>,
    staged: Staged,
}

/// A run's live stream. Records are kept in one bounded buffer (at most `cap` records, within
/// the shared byte budget); each subscriber reads it at its own cursor, and what it needs from
/// before the buffer is read back from staging, so a slow subscriber costs no memory.
/// Clones are the same stream; it lives while a clone or a subscription does.
#[derive(Clone)]
pub struct Hub {
    shared: Arc<Shared>,
}

/// A hub held without keeping it alive: how the collector remembers the stream of a run that
/// has subscribers but no post yet, so such a run takes none of the collector's places for runs.
#[derive(Clone)]
pub struct WeakHub(std::sync::Weak<Shared>);

impl WeakHub {
    /// The hub, while a clone of it or a subscription is alive.
    pub fn upgrade(&self) -> Option<Hub> {
        self.0.upgrade().map(|shared| Hub { shared })
    }

    /// Whether the hub is gone.
    pub fn is_gone(&self) -> bool {
        self.0.strong_count() == 0
    }
}

/// The staged files of a run found on disk, per (node, kind): the highest number.
pub type Recovered = Vec<(String, FileKind, u64)>;

impl Hub {
    /// The stream of run `run_id`, whose staged files are under `dir` (`staging/<run_id>`, below
    /// `root`, read without following a link), keeping up to `cap` records within `budget`. `recovered` are the files already staged
    /// (per node and kind, the highest number): they take the first ids, every node's boot
    /// records first, then each node's files by kind and number. The run's buffer holds at
    /// most `run_bytes` (its share of `budget`); read-backs reserve memory from `bounds`.
    pub fn new(
        run_id: &str,
        (root, dir): (Arc<crate::confined::Root>, PathBuf),
        recovered: Recovered,
        (cap, run_bytes): (usize, u64),
        budget: Arc<Budget>,
        bounds: Arc<crate::budget::Bounds>,
    ) -> Hub {
        let mut inner = Inner {
            next_id: 1,
            replay: VecDeque::new(),
            keys: Vec::new(),
            key_of: HashMap::new(),
            index: Vec::new(),
            finished: false,
            bytes: 0,
        };
        let mut recovered = recovered;
        recovered.sort_by(|a, b| {
            let first = |k: &FileKind| *k != FileKind::Boot;
            (first(&a.1), &a.0, &a.1).cmp(&(first(&b.1), &b.0, &b.1))
        });
        for (node, kind, count) in recovered {
            let key = inner.key(&node, &kind);
            inner.append(key, count);
            inner.next_id += count;
        }
        let (newest, _) = watch::channel(inner.next_id - 1);
        Hub {
            shared: Arc::new(Shared {
                inner: Mutex::new(inner),
                cap: cap.max(1),
                budget,
                run_bytes,
                bounds,
                read_back: tokio::sync::Mutex::new(None),
                newest,
                staged: Staged {
                    run_id: run_id.to_owned(),
                    root,
                    dir,
                },
            }),
        }
    }

    /// Publishes the record just staged as `node`'s next file of `kind`; `data` is its
    /// `LiveRecord` JSON on one line. Called with the node's sequence lock held, so a node's
    /// files of a kind are published in their numbers' order.
    pub fn publish(&self, node: &str, kind: &FileKind, data: String) {
        let s = &self.shared;
        let mut inner = lock(&s.inner);
        let id = inner.next_id;
        inner.next_id += 1;
        let key = inner.key(node, kind);
        inner.append(key, 1);
        let item = LiveItem::new(id, kind.staged_stem(), &data);
        drop(data);
        let size = item.frame.len() as u64;
        inner.replay.push_back(Arc::new(item));
        inner.bytes += size;
        s.budget.used.fetch_add(size, Ordering::Relaxed);
        // The run's own oldest records go first: past its count, past its share of the budget,
        // or while the budget of every run together is passed.
        while inner.replay.len() > s.cap
            || (inner.bytes > s.run_bytes && !inner.replay.is_empty())
            || (s.budget.used.load(Ordering::Relaxed) > s.budget.max && !inner.replay.is_empty())
        {
            if let Some(old) = inner.replay.pop_front() {
                let size = old.frame.len() as u64;
                inner.bytes -= size;
                s.budget.used.fetch_sub(size, Ordering::Relaxed);
            }
        }
        s.newest.send_replace(id);
    }

    /// Marks the run's bundle as written: a subscriber that has read every record is sent
    /// `end`, and its stream closes.
    pub fn finish(&self) {
        lock(&self.shared.inner).finished = true;
        self.shared.newest.send_modify(|_| {});
    }

    /// Whether the run's bundle is written.
    pub fn is_finished(&self) -> bool {
        lock(&self.shared.inner).finished
    }

    /// Empties the replay buffer, returning its bytes to the budget, unless someone is
    /// subscribed; called once the run's bundle is written. Later subscribers read the run
    /// back from staging. Returns whether the buffer was emptied.
    pub fn release_unwatched(&self) -> bool {
        let s = &self.shared;
        // Under the buffer's lock: `subscribe` registers its receiver under the same lock.
        let mut inner = lock(&s.inner);
        if s.newest.receiver_count() > 0 {
            return false;
        }
        let bytes: u64 = inner.replay.drain(..).map(|i| i.frame.len() as u64).sum();
        inner.bytes = 0;
        if let Ok(mut last) = s.read_back.try_lock() {
            *last = None;
        }
        s.budget.used.fetch_sub(bytes, Ordering::Relaxed);
        true
    }

    /// The hub without keeping it alive.
    pub fn downgrade(&self) -> WeakHub {
        WeakHub(Arc::downgrade(&self.shared))
    }

    /// Subscribes, starting after stream id `from` (`Some(0)`: the run from its first record;
    /// `None`: only records from now on). An id past the last one is read as the last one.
    pub fn subscribe(&self, from: Option<u64>) -> Subscription {
        let inner = lock(&self.shared.inner);
        let rx = self.shared.newest.subscribe();
        let cursor = from.map_or(inner.next_id, |f| f.saturating_add(1).min(inner.next_id));
        let mut sub = Subscription {
            shared: self.shared.clone(),
            cursor,
            at: (0, 0),
            counts: HashMap::new(),
            rx,
            ended: false,
        };
        // Every id before the cursor counted, so the n-th file of a key is known from here on.
        let mut skip = cursor - 1;
        for &(key, n) in &inner.index {
            if skip == 0 {
                break;
            }
            let take = skip.min(u64::from(n));
            *sub.counts.entry(key).or_default() += take;
            skip -= take;
            if take < u64::from(n) {
                sub.at.1 = take as u32;
                break;
            }
            sub.at.0 += 1;
        }
        sub
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let inner = lock(&self.inner);
        let bytes: u64 = inner.replay.iter().map(|i| i.frame.len() as u64).sum();
        self.budget.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// A subscriber's view of a run's stream.
pub struct Subscription {
    shared: Arc<Shared>,
    /// The next id to deliver.
    cursor: u64,
    /// The cursor's place in the index: (entry, offset in it).
    at: (usize, u32),
    /// Per key, the ids before the cursor.
    counts: HashMap<u32, u64>,
    rx: watch::Receiver<u64>,
    ended: bool,
}

/// A record to read back from staging: its id, whose file and which.
struct ReadBack {
    id: u64,
    key: Key,
    n: u64,
}

impl Subscription {
    /// Moves the cursor past one id (there is one); returns its key.
    fn step(&mut self, inner: &Inner) -> u32 {
        while inner.index[self.at.0].1 <= self.at.1 {
            self.at = (self.at.0 + 1, 0);
        }
        let key = inner.index[self.at.0].0;
        self.at.1 += 1;
        *self.counts.entry(key).or_default() += 1;
        self.cursor += 1;
        key
    }

    /// The next delivery; `None` when the stream is closed.
    pub async fn next(&mut self) -> Option<Delivery> {
        loop {
            if self.ended {
                return None;
            }
            let shared = self.shared.clone();
            let back = {
                let inner = lock(&shared.inner);
                if self.cursor < inner.next_id {
                    let id = self.cursor;
                    let key = self.step(&inner);
                    let oldest = inner.replay.front().map_or(inner.next_id, |i| i.id);
                    if id >= oldest {
                        return Some(Delivery::Item(inner.replay[(id - oldest) as usize].clone()));
                    }
                    Some(ReadBack {
                        id,
                        key: inner.keys[key as usize].clone(),
                        n: self.counts[&key],
                    })
                } else if inner.finished {
                    self.ended = true;
                    return Some(Delivery::End {
                        last: inner.next_id - 1,
                    });
                } else {
                    None
                }
            };
            if let Some(back) = back {
                let mut last = shared.read_back.lock().await;
                if let Some(item) = last.as_ref().filter(|i| i.id == back.id) {
                    return Some(Delivery::Item(item.clone()));
                }
                // The file's size first, then its memory reserved, then the read.
                let (sized, key, n) = (shared.clone(), back.key.clone(), back.n);
                let size = tokio::task::spawn_blocking(move || staged_size(&sized.staged, &key, n))
                    .await
                    .unwrap_or(0);
                let _memory = shared
                    .bounds
                    .reserve(crate::budget::read_back_cost(size))
                    .await;
                let staged = shared.clone();
                let read =
                    tokio::task::spawn_blocking(move || read_back(&staged.staged, &back)).await;
                return Some(match read {
                    Ok(Some(item)) => {
                        let item = Arc::new(item);
                        *last = Some(item.clone());
                        Delivery::Item(item)
                    }
                    _ => Delivery::Lagged { skipped: 1 },
                });
            }
            // A record published (or the end marked) after the look above has already changed
            // the value.
            if self.rx.changed().await.is_err() {
                return None;
            }
        }
    }
}

/// The folder of a node's staged files, opened without following a link.
fn node_dir(staged: &Staged, node: &str) -> Option<crate::confined::Dir> {
    staged.root.dir(&staged.dir.join(node), false).ok()
}

/// The size of a staged record's file (0 when it is not there, or not a regular file). Blocking.
fn staged_size(staged: &Staged, key: &Key, n: u64) -> u64 {
    let Some(dir) = node_dir(staged, &key.node) else {
        return 0;
    };
    [Encoding::Json, Encoding::Protobuf]
        .into_iter()
        .find_map(|encoding| {
            let meta = dir
                .meta(&layout::staged_name_as(&key.kind, n, encoding))
                .ok()?;
            (meta.kind == crate::confined::Kind::File).then_some(meta.len)
        })
        .unwrap_or(0)
}

/// A staged record read back as the stream sent it; `None` when its file is gone or does not
/// read. Blocking.
fn read_back(staged: &Staged, back: &ReadBack) -> Option<LiveItem> {
    let dir = node_dir(staged, &back.key.node)?;
    let (bytes, encoding, meta) =
        [Encoding::Json, Encoding::Protobuf]
            .into_iter()
            .find_map(|encoding| {
                let name = layout::staged_name_as(&back.key.kind, back.n, encoding);
                let (mut file, meta) = dir.open_file(&name).ok()?;
                let mut bytes = Vec::with_capacity(meta.len.min(64 << 20) as usize);
                std::io::Read::read_to_end(&mut file, &mut bytes).ok()?;
                Some((bytes, encoding, meta))
            })?;
    let text = diagwire::binary::json_text(encoding, back.key.kind.record_kind(), &bytes).ok()?;
    let body: serde_json::Value = serde_json::from_slice(&text).ok()?;
    let recv_ms = meta.modified_ms();
    let stem = back.key.kind.staged_stem();
    let record = LiveRecord::new(
        &staged.run_id,
        &back.key.node,
        live_kind(&stem),
        recv_ms,
        back.n,
        diagwire::Json(body),
    );
    let data = serde_json::to_string(&record).ok()?;
    Some(LiveItem::new(back.id, stem, &data))
}

/// The `LiveRecord` kind of a staged stem (`boot`, `events`, …, `vastai_<kind>`).
pub fn live_kind(stem: &str) -> diagwire::v1::collector::RecordKind {
    serde_json::from_value(serde_json::Value::String(stem.to_owned()))
        .unwrap_or(diagwire::v1::collector::RecordKind::Other(stem.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's stream over a staging directory of its own; `post` stages a file and publishes
    /// it, as the ingest route does.
    struct Run {
        dir: tempfile::TempDir,
        hub: Hub,
        budget: Arc<Budget>,
        numbers: HashMap<(String, FileKind), u64>,
    }

    impl Run {
        fn new(cap: usize, budget: u64, recovered: &[(&str, FileKind, u64)]) -> Run {
            let dir = tempfile::tempdir().unwrap();
            let budget = Budget::new(budget);
            let mut numbers = HashMap::new();
            for (node, kind, count) in recovered {
                for n in 1..=*count {
                    stage(dir.path(), node, kind, n);
                }
                numbers.insert((node.to_string(), kind.clone()), *count);
            }
            let bounds = Arc::new(crate::budget::Bounds::new(
                &crate::config::Limits::default(),
                0,
            ));
            let root = Arc::new(crate::confined::Root::open(dir.path()).unwrap());
            let hub = Hub::new(
                "r",
                (root, dir.path().to_path_buf()),
                recovered
                    .iter()
                    .map(|(node, kind, n)| (node.to_string(), kind.clone(), *n))
                    .collect(),
                (cap, u64::MAX),
                budget.clone(),
                bounds,
            );
            Run {
                dir,
                hub,
                budget,
                numbers,
            }
        }

        fn post(&mut self, node: &str, kind: FileKind) {
            let n = self.numbers.entry((node.into(), kind.clone())).or_default();
            *n += 1;
            stage(self.dir.path(), node, &kind, *n);
            self.hub.publish(node, &kind, format!("{node}/{}", *n));
        }

        /// What a subscriber from `from` is delivered, up to `take` deliveries: `<node>/<n>#<id>`
        /// per record (read back from staging or from the buffer alike), `lagged N`, `end`.
        fn read(&self, sub: &mut Subscription, take: usize) -> Vec<String> {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap();
            rt.block_on(async {
                let mut out = Vec::new();
                for _ in 0..take {
                    let next = tokio::time::timeout(std::time::Duration::from_secs(5), sub.next());
                    match next.await.ok().flatten() {
                        Some(Delivery::Item(i)) => {
                            out.push(format!("{}#{}", shown(i.data()), i.id))
                        }
                        Some(Delivery::Lagged { skipped }) => out.push(format!("lagged {skipped}")),
                        Some(Delivery::End { last }) => out.push(format!("end {last}")),
                        None => break,
                    }
                }
                out
            })
        }

        fn from(&self, from: Option<u64>, take: usize) -> Vec<String> {
            let mut sub = self.hub.subscribe(from);
            self.read(&mut sub, take)
        }
    }

    /// A staged file holding `"<node>/<n>"`, the record of the test.
    fn stage(dir: &std::path::Path, node: &str, kind: &FileKind, n: u64) {
        let at = dir.join(node);
        std::fs::create_dir_all(&at).unwrap();
        let body = serde_json::to_string(&format!("{node}/{n}")).unwrap();
        std::fs::write(at.join(layout::staged_name(kind, n)), body).unwrap();
    }

    /// A delivery's record: the buffer's holds `<node>/<n>`, a read-back one the `LiveRecord`
    /// whose body is that text.
    fn shown(data: &str) -> String {
        match serde_json::from_str::<LiveRecord>(data) {
            Ok(r) => {
                assert_eq!(
                    r.body.0,
                    serde_json::json!(format!("{}/{}", r.node_id, r.seq))
                );
                r.body.0.as_str().unwrap().to_owned()
            }
            Err(_) => data.to_owned(),
        }
    }

    #[test]
    fn a_subscriber_from_before_the_buffer_reads_the_older_records_back_from_staging() {
        let mut run = Run::new(3, 1 << 20, &[]);
        for _ in 0..3 {
            run.post("a", FileKind::Events);
            run.post("b", FileKind::Events);
        }
        // Ids 1..=6; the buffer holds 4, 5, 6.
        let all = ["a/1#1", "b/1#2", "a/2#3", "b/2#4", "a/3#5", "b/3#6"];
        assert_eq!(run.from(Some(0), 6), all);
        assert_eq!(run.from(Some(2), 4), all[2..]);
        assert_eq!(run.from(Some(4), 2), all[4..]);
        let mut later = run.hub.subscribe(Some(99));
        run.post("a", FileKind::Events);
        assert_eq!(
            run.read(&mut later, 1),
            ["a/4#7"],
            "an id past the last is the last"
        );
    }

    #[test]
    fn a_subscriber_that_falls_behind_reads_back_what_the_buffer_dropped() {
        let mut run = Run::new(2, 1 << 20, &[]);
        let mut sub = run.hub.subscribe(None);
        for _ in 0..5 {
            run.post("a", FileKind::Boot);
        }
        assert_eq!(
            run.read(&mut sub, 5),
            ["a/1#1", "a/2#2", "a/3#3", "a/4#4", "a/5#5"]
        );
    }

    /// The bytes one test record takes in a buffer (ids and numbers of one digit).
    fn record_bytes() -> u64 {
        LiveItem::new(1, "boot".into(), "a/1").frame.len() as u64
    }

    #[test]
    fn the_byte_budget_bounds_every_run_together() {
        let unit = record_bytes();
        let mut a = Run::new(100, 2 * unit, &[]);
        for _ in 0..5 {
            a.post("a", FileKind::Boot);
        }
        assert_eq!(
            a.budget.used.load(Ordering::Relaxed),
            2 * unit,
            "two records fit"
        );
        assert_eq!(a.from(Some(0), 5).len(), 5, "the others are read back");
        let Run { hub, budget, .. } = a;
        drop(hub);
        assert_eq!(budget.used.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn one_run_keeps_at_most_its_share_and_leaves_the_rest_of_the_budget_to_others() {
        let unit = record_bytes();
        let budget = Budget::new(10 * unit);
        let bounds = Arc::new(crate::budget::Bounds::new(
            &crate::config::Limits::default(),
            0,
        ));
        let hub = |id: &str| {
            let tmp = std::env::temp_dir();
            let dir = tmp.join(format!("diagwire-live-share-{id}"));
            let root = Arc::new(crate::confined::Root::open(&tmp).unwrap());
            Hub::new(
                id,
                (root, dir),
                Recovered::new(),
                (100, 3 * unit),
                budget.clone(),
                bounds.clone(),
            )
        };
        let (greedy, other) = (hub("greedy"), hub("other"));
        for _ in 0..9 {
            greedy.publish("a", &FileKind::Boot, "a/1".into());
        }
        assert_eq!(
            budget.used.load(Ordering::Relaxed),
            3 * unit,
            "the greedy run's share"
        );
        let mut sub = other.subscribe(None);
        other.publish("b", &FileKind::Boot, "b/1".into());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let got = rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(5), sub.next()).await
        });
        match got {
            Ok(Some(Delivery::Item(item))) => assert_eq!(item.data(), "b/1", "from the buffer"),
            other => panic!("the other run's record is not in its buffer: {other:?}"),
        }
    }

    #[test]
    fn a_written_bundle_frees_an_unwatched_buffer_and_later_subscribers_read_staging() {
        let mut run = Run::new(100, 1 << 20, &[]);
        for _ in 0..4 {
            run.post("a", FileKind::Events);
        }
        let watcher = run.hub.subscribe(Some(0));
        assert!(
            !run.hub.release_unwatched(),
            "a subscriber keeps the buffer"
        );
        drop(watcher);
        assert!(run.hub.release_unwatched());
        assert_eq!(run.budget.used.load(Ordering::Relaxed), 0);
        assert_eq!(run.from(Some(0), 4), ["a/1#1", "a/2#2", "a/3#3", "a/4#4"]);
    }

    #[test]
    fn records_staged_before_a_restart_come_first_boot_records_before_the_rest() {
        let mut run = Run::new(
            100,
            1 << 20,
            &[
                ("b", FileKind::Events, 2),
                ("a", FileKind::Events, 1),
                ("b", FileKind::Boot, 1),
                ("a", FileKind::Boot, 1),
            ],
        );
        run.post("a", FileKind::Events);
        assert_eq!(
            run.from(Some(0), 6),
            ["a/1#1", "b/1#2", "a/1#3", "b/1#4", "b/2#5", "a/2#6"]
        );
    }

    #[test]
    fn a_staged_file_that_is_gone_is_announced_as_lagged() {
        let mut run = Run::new(1, 1 << 20, &[]);
        for _ in 0..3 {
            run.post("a", FileKind::Snapshot);
        }
        std::fs::remove_file(
            run.dir
                .path()
                .join("a")
                .join(layout::staged_name(&FileKind::Snapshot, 2)),
        )
        .unwrap();
        assert_eq!(run.from(Some(0), 3), ["a/1#1", "lagged 1", "a/3#3"]);
    }

    #[test]
    fn once_the_bundle_is_written_a_subscriber_that_read_everything_is_sent_end() {
        let mut run = Run::new(100, 1 << 20, &[]);
        let mut early = run.hub.subscribe(Some(0));
        run.post("a", FileKind::Boot);
        run.post("a", FileKind::Finalize);
        run.hub.finish();
        let want = ["a/1#1", "a/1#2", "end 2"];
        assert_eq!(run.read(&mut early, 4), want, "then the stream closes");
        assert_eq!(run.from(Some(0), 4), want);
        assert_eq!(run.from(None, 4), ["end 2"]);
    }
}
