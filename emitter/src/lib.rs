//! The node side of swactor's collector protocol (`docs/collector.md`, `docs/emitter.md`): typed
//! records in, the collector's posts out, on a background std thread, so the caller never blocks
//! and needs no async runtime.
//!
//! ```no_run
//! use diagwire_emitter::{Config, Emitter};
//! use diagwire::v1::{EventRecord, RunCompleted};
//! use diagwire::NodeId;
//! use std::time::Duration;
//!
//! let mut config = Config::new("http://127.0.0.1:8080", "run-1", "node-a");
//! config.spool = Some("/var/spool/diag".into());
//! let emitter = Emitter::start(config).unwrap();
//! emitter.event(EventRecord::new(NodeId([1; 32]), 1, 1_779_733_870_000, RunCompleted::new("run-1")));
//! let stats = emitter.finish(Duration::from_secs(10));
//! assert_eq!(stats.dropped, 0);
//! ```
//!
//! * **Enqueueing** ([`Emitter::event`], [`Emitter::snapshot`], …) moves the record into a bounded
//!   queue and returns: serialization happens on the background thread. A full queue drops the
//!   record and counts it ([`Stats::dropped`]); the count travels to the collector in the next
//!   snapshot and finalize (`diag_records_dropped`), so an overflow is never silent.
//! * **Batching**: events are posted in batches of up to [`Config::batch_max`] (512), a batch is
//!   closed when full, after [`Config::batch_linger`], or when a record of another kind follows
//!   (the posts keep the order the records were enqueued in).
//! * **Retries**: a post that fails (no connection, a time-out, 408, 429, 5xx) is retried, the
//!   same body, after an exponential backoff with jitter; a 503 or 429 with `Retry-After` waits
//!   that long instead. A post refused for good (another 4xx) is counted in [`Stats::rejected`]
//!   and not retried.
//! * **The spool** ([`Config::spool`]): every post is written to
//!   `{spool}/{run_id}/{seq:09}-{kind}.bin` (the raw body, under a temporary name, flushed, then
//!   renamed) before it is sent, and removed once acknowledged; an emitter started on the same
//!   spool sends what is left there first, in order, so a post survives the node's crash (one
//!   acknowledged but not yet removed is sent again, and the collector stores it once). What
//!   is not spooled yet when the process is killed is lost, uncounted: the records in the queue
//!   and in the open events batch; [`Emitter::flush`] is how a node makes sure of its records.
//! * **Hints**: a reply's `snapshot_now` sets a flag ([`Emitter::take_snapshot_request`]) and
//!   calls [`Config::on_snapshot_now`].

mod spool;
mod worker;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Sender, TrySendError};
use diagwire::layout::FileKind;
use diagwire::v1::{EventRecord, Finalize, Identity, Snapshot, VastaiBody, VastaiRecord};

/// The most events one post carries: swactor's nodes post batches of at most 512.
pub const MAX_BATCH: usize = 512;

/// How the bodies are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Encoding {
    /// JSON (`application/json`), what swactor's nodes send.
    #[default]
    Json,
    /// The lossless protobuf encoding (`application/x-protobuf`, `docs/protobuf.md`).
    #[cfg(feature = "proto")]
    Protobuf,
}

/// What to do when the collector asks for a snapshot (`hints.snapshot_now`); called on the
/// emitter's thread, so it should only signal the caller's own code.
pub type SnapshotCallback = Arc<dyn Fn() + Send + Sync>;

/// How an emitter posts.
#[non_exhaustive]
pub struct Config {
    /// The collector's base URL: `http://HOST:PORT`, optionally with a base path.
    pub collector: String,
    /// `x-run-id`: 1 to 128 bytes of `[A-Za-z0-9._-]`, not `.` or `..`.
    pub run_id: String,
    /// `x-node-id`, the same shape.
    pub node_id: String,
    /// The spool directory; `None` keeps unacknowledged posts in memory only.
    pub spool: Option<PathBuf>,
    /// How many records the queue holds before it drops (65,536).
    pub queue_capacity: usize,
    /// The most events per post (512, at most [`MAX_BATCH`]).
    pub batch_max: usize,
    /// How long an events batch waits for more events before it is posted (1 s).
    pub batch_linger: Duration,
    /// The first retry's backoff (100 ms), doubled per failed attempt.
    pub backoff_initial: Duration,
    /// The longest backoff (30 s), and the longest `Retry-After` honoured.
    pub backoff_max: Duration,
    /// One request's time limit, connection to reply (60 s: a finalize's reply waits for the
    /// collector's finalize wait and the run's assembly).
    pub request_timeout: Duration,
    /// How many bytes of unacknowledged posts are held in memory, without a spool (64 MiB);
    /// past it the emitter stops taking records from the queue, which then drops.
    pub max_backlog_bytes: u64,
    /// How many bytes the spool may hold (1 GiB); past it, likewise.
    pub max_spool_bytes: u64,
    /// The body encoding.
    pub encoding: Encoding,
    /// Whether snapshots and finalize records carry the dropped count (`diag_records_dropped`).
    /// `diagwire replay` turns it off to post records exactly as they were.
    pub report_dropped: bool,
    /// Called when a reply carries `hints.snapshot_now`.
    pub on_snapshot_now: Option<SnapshotCallback>,
    /// Whether a connection is kept open for the next post (true). False opens one per post,
    /// for a path through proxies or load balancers that mishandle kept-alive connections.
    pub keep_alive: bool,
}

impl Config {
    /// The defaults, posting to `collector` as `node_id` of `run_id`.
    pub fn new(
        collector: impl Into<String>,
        run_id: impl Into<String>,
        node_id: impl Into<String>,
    ) -> Config {
        Config {
            collector: collector.into(),
            run_id: run_id.into(),
            node_id: node_id.into(),
            spool: None,
            queue_capacity: 65_536,
            batch_max: MAX_BATCH,
            batch_linger: Duration::from_secs(1),
            backoff_initial: Duration::from_millis(100),
            backoff_max: Duration::from_secs(30),
            request_timeout: Duration::from_secs(60),
            max_backlog_bytes: 64 << 20,
            max_spool_bytes: 1 << 30,
            encoding: Encoding::Json,
            report_dropped: true,
            on_snapshot_now: None,
            keep_alive: true,
        }
    }
}

/// Why an emitter did not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A run or node id the collector would refuse.
    Id {
        /// `run_id` or `node_id`.
        which: &'static str,
        /// The id, escaped for a terminal.
        value: String,
    },
    /// A collector URL that is not `http://HOST[:PORT][/base]` (escaped for a terminal).
    Url(String),
    /// The spool could not be opened or read.
    Spool {
        /// The path.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// The background thread could not be started.
    Thread(std::io::Error),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Id { which, value } => write!(
                f,
                "{which} \"{value}\" is not 1 to 128 bytes of [A-Za-z0-9._-] (nor `.` or `..`)"
            ),
            Error::Url(url) => write!(
                f,
                "collector URL \"{url}\" is not http://HOST[:PORT][/base]"
            ),
            Error::Spool { path, error } => write!(f, "spool {}: {error}", path.display()),
            Error::Thread(e) => write!(f, "cannot start the emitter's thread: {e}"),
        }
    }
}

impl std::error::Error for Error {}

/// Whether the collector takes `id` as `x-run-id` or `x-node-id` (`docs/collector.md`).
pub fn is_safe_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id != "."
        && id != ".."
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The route kind of a vast.ai record (`/diag/vastai_<kind>`): `instance`, `sample`, `logs`,
/// `lifecycle`, or a later body's tag.
pub fn vastai_kind(record: &VastaiRecord) -> String {
    match &record.body {
        VastaiBody::Instance(_) => "instance".into(),
        VastaiBody::HostSample(_) => "sample".into(),
        VastaiBody::Logs(_) => "logs".into(),
        VastaiBody::Lifecycle(_) => "lifecycle".into(),
        VastaiBody::Other(other) => other.tag.clone(),
        #[allow(unreachable_patterns)]
        _ => "unknown".into(),
    }
}

/// What an emitter has done so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Stats {
    /// Records taken into the queue.
    pub enqueued: u64,
    /// Records dropped: the queue was full, or the emitter stopped with them unsent and no
    /// spool to keep them.
    pub dropped: u64,
    /// Posts acknowledged (200).
    pub posted: u64,
    /// Records in the acknowledged posts (an events post counts its events).
    pub records_posted: u64,
    /// Attempts that failed and were retried.
    pub retried: u64,
    /// Posts written to the spool.
    pub spooled: u64,
    /// Posts found in the spool when the emitter started.
    pub replayed: u64,
    /// Posts the collector refused for good (a 4xx other than 408 and 429), not retried.
    pub rejected: u64,
    /// Posts acknowledged with problems, their bodies kept in the collector's quarantine.
    pub quarantined: u64,
    /// Spool writes that failed (the post was kept in memory instead).
    pub spool_errors: u64,
    /// Posts not yet acknowledged (in memory or in the spool).
    pub pending: u64,
}

/// How a [`Emitter::flush`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flushed {
    /// Every record enqueued before the flush was acknowledged (or refused for good).
    All,
    /// The time ran out with `pending` posts unacknowledged; with a spool they are in it.
    TimedOut {
        /// Posts not yet acknowledged.
        pending: u64,
    },
}

/// What the queue carries: every record boxed, so a slot of the queue (allocated up front, one
/// per record of its capacity) is a few words, not the size of the largest record.
pub(crate) enum Msg {
    Event(Box<EventRecord>),
    Batch(Vec<EventRecord>),
    Boot(Box<Identity>),
    Snapshot(Box<Snapshot>),
    Finalize(Box<Finalize>),
    Vastai(Box<VastaiRecord>),
    Raw(Box<(FileKind, Vec<u8>)>),
}

#[derive(Default)]
pub(crate) struct Counters {
    pub enqueued: AtomicU64,
    pub dropped: AtomicU64,
    pub posted: AtomicU64,
    pub records_posted: AtomicU64,
    pub retried: AtomicU64,
    pub spooled: AtomicU64,
    pub replayed: AtomicU64,
    pub rejected: AtomicU64,
    pub quarantined: AtomicU64,
    pub spool_errors: AtomicU64,
    pub pending: AtomicU64,
}

/// The flush and stop requests, and how far the thread has come.
#[derive(Default)]
pub(crate) struct Control {
    /// Flush requests not yet answered: (ticket, records enqueued before it).
    pub flushes: Vec<(u64, u64)>,
    /// Every ticket up to this one is answered.
    pub done: u64,
    pub stop: bool,
    /// The thread has ended.
    pub ended: bool,
}

pub(crate) struct Shared {
    pub counters: Counters,
    pub snapshot_now: AtomicBool,
    pub control: Mutex<Control>,
    pub changed: Condvar,
    next_ticket: AtomicU64,
}

impl Shared {
    pub fn lock(&self) -> std::sync::MutexGuard<'_, Control> {
        self.control.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// An emitter: a queue and the thread that posts what it holds. Dropping it stops the thread
/// without waiting for acknowledgements (a request in flight ends first, within
/// [`Config::request_timeout`]; what is unsent stays in the spool, or is counted as dropped
/// without one); [`Emitter::finish`] waits first.
pub struct Emitter {
    tx: Sender<Msg>,
    wake: Sender<()>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Emitter {
    /// Starts an emitter: checks the ids and the URL, opens the spool (removing temporary files
    /// a crash left, queueing the posts it holds), starts the thread.
    pub fn start(config: Config) -> Result<Emitter, Error> {
        for (which, value) in [("run_id", &config.run_id), ("node_id", &config.node_id)] {
            if !is_safe_id(value) {
                return Err(Error::Id {
                    which,
                    value: diagwire::problem::printable(value).into_owned(),
                });
            }
        }
        let base = worker::base_url(&config.collector).ok_or_else(|| {
            Error::Url(diagwire::problem::printable(&config.collector).into_owned())
        })?;
        let spool = match &config.spool {
            Some(dir) => Some(spool::Spool::open(dir, &config.run_id)?),
            None => None,
        };
        let (tx, rx) = crossbeam_channel::bounded(config.queue_capacity.max(1));
        let (wake, woken) = crossbeam_channel::unbounded();
        let shared = Arc::new(Shared {
            counters: Counters::default(),
            snapshot_now: AtomicBool::new(false),
            control: Mutex::new(Control::default()),
            changed: Condvar::new(),
            next_ticket: AtomicU64::new(0),
        });
        let worker = worker::Worker::new(config, base, spool, shared.clone(), rx, woken);
        let thread = std::thread::Builder::new()
            .name("diagwire-emitter".into())
            .spawn(move || worker.run())
            .map_err(Error::Thread)?;
        Ok(Emitter {
            tx,
            wake,
            shared,
            thread: Some(thread),
        })
    }

    fn push(&self, msg: Msg, records: u64) -> bool {
        match self.tx.try_send(msg) {
            Ok(()) => {
                self.shared
                    .counters
                    .enqueued
                    .fetch_add(records, Ordering::Release);
                true
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.shared
                    .counters
                    .dropped
                    .fetch_add(records, Ordering::Relaxed);
                false
            }
        }
    }

    /// Queues an event; `false` when it was dropped (the queue is full), and counted.
    pub fn event(&self, record: EventRecord) -> bool {
        self.push(Msg::Event(Box::new(record)), 1)
    }

    /// Queues events to be posted as one batch of their own (split at [`Config::batch_max`]),
    /// as a node's batch was: the pending batch is posted before them.
    pub fn events(&self, records: Vec<EventRecord>) -> bool {
        let n = records.len() as u64;
        self.push(Msg::Batch(records), n)
    }

    /// Queues a boot record.
    pub fn boot(&self, identity: Identity) -> bool {
        self.push(Msg::Boot(Box::new(identity)), 1)
    }

    /// Queues a snapshot (its `diag_records_dropped` is set when it is posted, unless
    /// [`Config::report_dropped`] is off).
    pub fn snapshot(&self, snapshot: Snapshot) -> bool {
        self.push(Msg::Snapshot(Box::new(snapshot)), 1)
    }

    /// Queues a finalize record (likewise).
    pub fn finalize(&self, finalize: Finalize) -> bool {
        self.push(Msg::Finalize(Box::new(finalize)), 1)
    }

    /// Queues a vast.ai record, posted to `/diag/vastai_<kind>` ([`vastai_kind`]).
    pub fn vastai(&self, record: VastaiRecord) -> bool {
        self.push(Msg::Vastai(Box::new(record)), 1)
    }

    /// Queues a body already encoded (JSON or protobuf, sniffed), posted as `kind` unchanged:
    /// `diagwire replay` posts a bundle's files so.
    pub fn raw(&self, kind: FileKind, body: Vec<u8>) -> bool {
        self.push(Msg::Raw(Box::new((kind, body))), 1)
    }

    /// [`Emitter::raw`], waiting at most `timeout` while the queue is full instead of dropping
    /// at once: for a caller that would rather wait than lose a record (`diagwire replay`).
    /// `false` when the record was dropped (and counted): the time ran out, or the emitter's
    /// thread has ended.
    pub fn raw_within(&self, kind: FileKind, body: Vec<u8>, timeout: Duration) -> bool {
        match self
            .tx
            .send_timeout(Msg::Raw(Box::new((kind, body))), timeout)
        {
            Ok(()) => {
                self.shared
                    .counters
                    .enqueued
                    .fetch_add(1, Ordering::Release);
                true
            }
            Err(_) => {
                self.shared.counters.dropped.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    /// Whether the collector asked for a snapshot since the last call (the flag is cleared).
    pub fn take_snapshot_request(&self) -> bool {
        self.shared.snapshot_now.swap(false, Ordering::AcqRel)
    }

    /// The counts so far.
    pub fn stats(&self) -> Stats {
        let c = &self.shared.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Acquire);
        Stats {
            enqueued: get(&c.enqueued),
            dropped: get(&c.dropped),
            posted: get(&c.posted),
            records_posted: get(&c.records_posted),
            retried: get(&c.retried),
            spooled: get(&c.spooled),
            replayed: get(&c.replayed),
            rejected: get(&c.rejected),
            quarantined: get(&c.quarantined),
            spool_errors: get(&c.spool_errors),
            pending: get(&c.pending),
        }
    }

    /// Posts every record enqueued so far (the open batch too) and waits, at most `timeout`,
    /// until each is acknowledged. What is not acknowledged by then stays in the spool (or in
    /// memory without one) and is still retried.
    pub fn flush(&self, timeout: Duration) -> Flushed {
        let deadline = Instant::now() + timeout;
        let target = self.shared.counters.enqueued.load(Ordering::Acquire);
        let ticket = self.shared.next_ticket.fetch_add(1, Ordering::AcqRel) + 1;
        let mut control = self.shared.lock();
        control.flushes.push((ticket, target));
        drop(control);
        let _ = self.wake.send(());
        let mut control = self.shared.lock();
        loop {
            if control.done >= ticket {
                return Flushed::All;
            }
            let now = Instant::now();
            if now >= deadline || control.ended {
                control.flushes.retain(|(t, _)| *t != ticket);
                return Flushed::TimedOut {
                    pending: self.shared.counters.pending.load(Ordering::Acquire),
                };
            }
            control = self
                .shared
                .changed
                .wait_timeout(control, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// [`Emitter::flush`], then stops the thread: what is still unacknowledged stays in the
    /// spool for the next emitter on it (without a spool, it is counted as dropped).
    pub fn finish(mut self, timeout: Duration) -> Stats {
        let _ = self.flush(timeout);
        self.stop();
        self.stats()
    }

    fn stop(&mut self) {
        self.shared.lock().stop = true;
        let _ = self.wake.send(());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Emitter {
    fn drop(&mut self) {
        self.stop();
    }
}
