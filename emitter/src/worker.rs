//! The emitter's thread: takes records from the queue, batches and encodes them, spools and
//! posts them in order, retries, and answers flushes.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{Receiver, TryRecvError};
use diagwire::layout::FileKind;
use diagwire::v1::{EventRecord, PostAck, RecordKind};

use crate::spool::{Spool, Spooled};
use crate::{Config, Encoding, Msg, Shared};

/// The most of a reply's body read (a PostAck is a few hundred bytes).
const REPLY_LIMIT: u64 = 1 << 20;

/// How many records are taken from the queue between two looks at the posts to send.
const TAKE_AT_ONCE: usize = 4096;

const JSON: &str = "application/json";
#[cfg(feature = "proto")]
const PROTOBUF: &str = "application/x-protobuf";

/// `http://HOST[:PORT][/base]` without its trailing `/`, or `None`.
pub fn base_url(url: &str) -> Option<String> {
    let rest = url.strip_prefix("http://")?;
    let host = rest.split('/').next().unwrap_or("");
    if host.is_empty() || host.contains(['?', '#', '@', ' ']) {
        return None;
    }
    Some(url.trim_end_matches('/').to_owned())
}

/// One post: its route kind and body, and where the spool keeps it.
struct Post {
    /// Posts are numbered in the order they are made.
    id: u64,
    run_id: Arc<str>,
    kind: FileKind,
    content_type: &'static str,
    /// Held in memory (always without a spool; with one, while the memory budget allows).
    body: Option<Vec<u8>>,
    spooled: Option<Spooled>,
    /// How many records it carries (0 for a post replayed from the spool).
    records: u64,
}

/// What a post's attempt gave.
enum Outcome {
    Acknowledged {
        snapshot_now: bool,
        quarantined: bool,
    },
    Retry {
        after: Option<Duration>,
    },
    Rejected,
}

pub struct Worker {
    config: Config,
    base: String,
    run_id: Arc<str>,
    spool: Option<Spool>,
    shared: Arc<Shared>,
    rx: Receiver<Msg>,
    rx_open: bool,
    woken: Receiver<()>,
    agent: ureq::Agent,
    batch: Vec<EventRecord>,
    batch_since: Option<Instant>,
    outbox: VecDeque<Post>,
    /// Records taken from the queue.
    taken: u64,
    /// Bytes of bodies held in memory, and in the spool.
    memory_bytes: u64,
    spool_bytes: u64,
    next_id: u64,
    /// Every post numbered up to this one is done (acknowledged or refused for good).
    done_upto: u64,
    attempt: u32,
    next_attempt: Instant,
    /// Flushes whose records are all in posts: (ticket, the last of those posts).
    marks: VecDeque<(u64, u64)>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// JSON or protobuf: a body that parses as JSON is JSON.
fn sniff(body: &[u8]) -> &'static str {
    if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok() {
        return JSON;
    }
    #[cfg(feature = "proto")]
    return PROTOBUF;
    #[cfg(not(feature = "proto"))]
    return "application/x-protobuf";
}

impl Worker {
    pub fn new(
        config: Config,
        base: String,
        spool: Option<Spool>,
        shared: Arc<Shared>,
        rx: Receiver<Msg>,
        woken: Receiver<()>,
    ) -> Worker {
        let mut agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .proxy(None)
            .timeout_global(Some(config.request_timeout));
        if !config.keep_alive {
            // No idle connection is kept: each post opens its own.
            agent = agent.max_idle_connections_per_host(0);
        }
        let agent = agent.build().new_agent();
        let run_id: Arc<str> = config.run_id.as_str().into();
        Worker {
            config,
            base,
            run_id,
            spool,
            shared,
            rx,
            rx_open: true,
            woken,
            agent,
            batch: Vec::new(),
            batch_since: None,
            outbox: VecDeque::new(),
            taken: 0,
            memory_bytes: 0,
            spool_bytes: 0,
            next_id: 1,
            done_upto: 0,
            attempt: 0,
            next_attempt: Instant::now(),
            marks: VecDeque::new(),
        }
    }

    pub fn run(mut self) {
        self.replay_spool();
        loop {
            if self.shared.lock().stop {
                self.shutdown();
                return;
            }
            let now = Instant::now();
            let sendable = !self.outbox.is_empty() && now >= self.next_attempt;
            let can_take = self.rx_open && !self.backlog_full();
            if !sendable {
                let deadline = self.deadline();
                let wait = deadline.map_or(Duration::from_secs(3600), |d| {
                    d.saturating_duration_since(now)
                });
                if can_take {
                    crossbeam_channel::select! {
                        recv(self.rx) -> msg => match msg {
                            Ok(msg) => self.take(msg),
                            Err(_) => self.rx_open = false,
                        },
                        recv(self.woken) -> _ => {},
                        default(wait) => {},
                    }
                } else {
                    crossbeam_channel::select! {
                        recv(self.woken) -> _ => {},
                        default(wait) => {},
                    }
                }
            }
            while self.woken.try_recv().is_ok() {}
            if self.rx_open {
                for _ in 0..TAKE_AT_ONCE {
                    if self.backlog_full() {
                        break;
                    }
                    match self.rx.try_recv() {
                        Ok(msg) => self.take(msg),
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => {
                            self.rx_open = false;
                            break;
                        }
                    }
                }
            }
            if self
                .batch_since
                .is_some_and(|since| since.elapsed() >= self.config.batch_linger)
            {
                self.close_batch();
            }
            self.resolve_flushes();
            if !self.outbox.is_empty() && Instant::now() >= self.next_attempt {
                self.send_head();
            }
            self.answer_flushes();
        }
    }

    /// When the loop must look again without a record or a wake-up: the open batch's linger,
    /// the next attempt.
    fn deadline(&self) -> Option<Instant> {
        let linger = self.batch_since.map(|s| s + self.config.batch_linger);
        let attempt = (!self.outbox.is_empty()).then_some(self.next_attempt);
        match (linger, attempt) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether the posts waiting fill their budget: then no record is taken from the queue
    /// (which drops, counted, when full).
    fn backlog_full(&self) -> bool {
        match &self.spool {
            Some(_) => self.spool_bytes >= self.config.max_spool_bytes,
            None => self.memory_bytes >= self.config.max_backlog_bytes,
        }
    }

    fn set_pending(&self) {
        self.shared
            .counters
            .pending
            .store(self.outbox.len() as u64, Ordering::Release);
    }

    /// Queues the posts a previous emitter left in the spool, oldest first.
    fn replay_spool(&mut self) {
        let Some(spool) = &mut self.spool else {
            return;
        };
        let found = std::mem::take(&mut spool.found);
        for spooled in found {
            let id = self.next_id;
            self.next_id += 1;
            self.spool_bytes += spooled.bytes;
            self.shared
                .counters
                .replayed
                .fetch_add(1, Ordering::Relaxed);
            let run_id: Arc<str> = if *spooled.run_id == *self.run_id {
                self.run_id.clone()
            } else {
                spooled.run_id.as_str().into()
            };
            self.outbox.push_back(Post {
                id,
                run_id,
                kind: spooled.kind.clone(),
                content_type: "",
                body: None,
                spooled: Some(spooled),
                records: 0,
            });
        }
        self.set_pending();
    }

    /// One record (or batch) from the queue.
    fn take(&mut self, msg: Msg) {
        match msg {
            Msg::Event(record) => {
                self.taken += 1;
                if self.batch.is_empty() {
                    self.batch_since = Some(Instant::now());
                }
                self.batch.push(*record);
                if self.batch.len() >= self.batch_max() {
                    self.close_batch();
                }
            }
            Msg::Batch(records) => {
                self.close_batch();
                self.taken += records.len() as u64;
                for chunk in records.chunks(self.batch_max()) {
                    let body = self.encode(RecordKind::EventBatch, &chunk);
                    self.make_post(FileKind::Events, body, chunk.len() as u64);
                }
            }
            Msg::Boot(identity) => {
                self.close_batch();
                self.taken += 1;
                let body = self.encode(RecordKind::Boot, &*identity);
                self.make_post(FileKind::Boot, body, 1);
            }
            Msg::Snapshot(mut snapshot) => {
                self.close_batch();
                self.taken += 1;
                if self.config.report_dropped {
                    snapshot.diag_records_dropped = Some(self.dropped());
                }
                let body = self.encode(RecordKind::Snapshot, &*snapshot);
                self.make_post(FileKind::Snapshot, body, 1);
            }
            Msg::Finalize(mut finalize) => {
                self.close_batch();
                self.taken += 1;
                if self.config.report_dropped {
                    finalize.diag_records_dropped = Some(self.dropped());
                }
                let body = self.encode(RecordKind::Finalize, &*finalize);
                self.make_post(FileKind::Finalize, body, 1);
            }
            Msg::Vastai(record) => {
                self.close_batch();
                self.taken += 1;
                let kind = FileKind::Vastai(crate::vastai_kind(&record));
                let body = self.encode(RecordKind::Vastai, &*record);
                self.make_post(kind, body, 1);
            }
            Msg::Raw(raw) => {
                let (kind, body) = *raw;
                self.close_batch();
                self.taken += 1;
                let content_type = sniff(&body);
                self.push_post(kind, content_type, body, 1);
            }
        }
    }

    fn batch_max(&self) -> usize {
        self.config.batch_max.clamp(1, crate::MAX_BATCH)
    }

    fn dropped(&self) -> u64 {
        self.shared.counters.dropped.load(Ordering::Acquire)
    }

    /// The open events batch becomes a post.
    fn close_batch(&mut self) {
        self.batch_since = None;
        if self.batch.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut self.batch);
        let body = self.encode(RecordKind::EventBatch, &batch);
        self.make_post(FileKind::Events, body, batch.len() as u64);
    }

    /// A record's body in the configured encoding; `None` (the records counted as dropped) when
    /// it does not serialize.
    fn encode<T: serde::Serialize + ?Sized>(
        &self,
        kind: RecordKind,
        record: &T,
    ) -> Option<Vec<u8>> {
        // Only the protobuf encoding needs the record kind.
        let _ = kind;
        match self.config.encoding {
            Encoding::Json => serde_json::to_vec(record).ok(),
            #[cfg(feature = "proto")]
            Encoding::Protobuf => {
                let value = serde_json::to_value(record).ok()?;
                diagwire::proto::encode(diagwire::proto::current(), kind, &value).ok()
            }
        }
    }

    fn make_post(&mut self, kind: FileKind, body: Option<Vec<u8>>, records: u64) {
        let Some(body) = body else {
            self.shared
                .counters
                .dropped
                .fetch_add(records, Ordering::Relaxed);
            return;
        };
        let content_type = match self.config.encoding {
            Encoding::Json => JSON,
            #[cfg(feature = "proto")]
            Encoding::Protobuf => PROTOBUF,
        };
        self.push_post(kind, content_type, body, records);
    }

    /// Spools a post (when there is a spool) and queues it.
    fn push_post(
        &mut self,
        kind: FileKind,
        content_type: &'static str,
        body: Vec<u8>,
        records: u64,
    ) {
        let id = self.next_id;
        self.next_id += 1;
        let len = body.len() as u64;
        let mut post = Post {
            id,
            run_id: self.run_id.clone(),
            kind,
            content_type,
            body: None,
            spooled: None,
            records,
        };
        if let Some(spool) = &mut self.spool {
            match spool.write(&self.run_id, &post.kind, &body) {
                Ok(spooled) => {
                    self.spool_bytes += len;
                    post.spooled = Some(spooled);
                    self.shared.counters.spooled.fetch_add(1, Ordering::Relaxed);
                }
                Err(_) => {
                    self.shared
                        .counters
                        .spool_errors
                        .fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        if post.spooled.is_none() || self.memory_bytes + len <= self.config.max_backlog_bytes {
            self.memory_bytes += len;
            post.body = Some(body);
        }
        self.outbox.push_back(post);
        self.set_pending();
    }

    /// Flush requests whose records have all been taken: the open batch is closed and the
    /// flush waits for the posts made so far.
    fn resolve_flushes(&mut self) {
        let mut control = self.shared.lock();
        if control.flushes.is_empty() {
            return;
        }
        let taken = self.taken;
        let ready: Vec<u64> = control
            .flushes
            .iter()
            .filter(|(_, target)| *target <= taken)
            .map(|(ticket, _)| *ticket)
            .collect();
        if ready.is_empty() {
            return;
        }
        control.flushes.retain(|(_, target)| *target > taken);
        drop(control);
        self.close_batch();
        let last = self.next_id - 1;
        for ticket in ready {
            self.marks.push_back((ticket, last));
        }
    }

    fn answer_flushes(&mut self) {
        let mut answered = None;
        while let Some(&(ticket, last)) = self.marks.front() {
            if last > self.done_upto {
                break;
            }
            answered = Some(ticket);
            self.marks.pop_front();
        }
        if let Some(ticket) = answered {
            let mut control = self.shared.lock();
            control.done = control.done.max(ticket);
            drop(control);
            self.shared.changed.notify_all();
        }
    }

    /// Sends the oldest post once.
    fn send_head(&mut self) {
        let Some(post) = self.outbox.front_mut() else {
            return;
        };
        if post.body.is_none() {
            let path = &post
                .spooled
                .as_ref()
                .expect("a post without a body is spooled")
                .path;
            match std::fs::read(path) {
                Ok(body) => {
                    if post.content_type.is_empty() {
                        post.content_type = sniff(&body);
                    }
                    self.memory_bytes += body.len() as u64;
                    post.body = Some(body);
                }
                Err(_) => {
                    // The file went away or does not read: nothing left to send.
                    self.shared
                        .counters
                        .spool_errors
                        .fetch_add(1, Ordering::Relaxed);
                    self.finish_head();
                    return;
                }
            }
        }
        let post = self.outbox.front().expect("the head is there");
        let outcome = self.attempt(post);
        match outcome {
            Outcome::Acknowledged {
                snapshot_now,
                quarantined,
            } => {
                let c = &self.shared.counters;
                c.posted.fetch_add(1, Ordering::Relaxed);
                c.records_posted.fetch_add(post.records, Ordering::Relaxed);
                if quarantined {
                    c.quarantined.fetch_add(1, Ordering::Relaxed);
                }
                if snapshot_now {
                    self.shared.snapshot_now.store(true, Ordering::Release);
                    if let Some(callback) = &self.config.on_snapshot_now {
                        callback();
                    }
                }
                self.finish_head();
            }
            Outcome::Rejected => {
                self.shared
                    .counters
                    .rejected
                    .fetch_add(1, Ordering::Relaxed);
                self.finish_head();
            }
            Outcome::Retry { after } => {
                self.shared.counters.retried.fetch_add(1, Ordering::Relaxed);
                self.attempt = self.attempt.saturating_add(1);
                let wait = after
                    .map(|a| a.min(self.config.backoff_max))
                    .unwrap_or_else(|| self.backoff());
                self.next_attempt = Instant::now() + wait;
            }
        }
    }

    /// The backoff before the next attempt: the initial one doubled per failed attempt, capped,
    /// with jitter (between half of it and all of it).
    fn backoff(&self) -> Duration {
        let initial = self.config.backoff_initial.max(Duration::from_millis(1));
        let exp = self.attempt.saturating_sub(1).min(30);
        let base = initial
            .saturating_mul(1 << exp)
            .min(self.config.backoff_max.max(initial));
        let half = base / 2;
        let jitter = fastrand::u64(0..=half.as_micros() as u64);
        half + Duration::from_micros(jitter)
    }

    /// The head is done: out of the outbox, out of the spool.
    fn finish_head(&mut self) {
        if let Some(post) = self.outbox.pop_front() {
            if let Some(body) = &post.body {
                self.memory_bytes = self.memory_bytes.saturating_sub(body.len() as u64);
            }
            if let (Some(spool), Some(spooled)) = (&self.spool, &post.spooled) {
                spool.remove(spooled);
                self.spool_bytes = self.spool_bytes.saturating_sub(spooled.bytes);
            }
            self.done_upto = post.id;
        }
        self.attempt = 0;
        self.next_attempt = Instant::now();
        self.set_pending();
    }

    /// One HTTP attempt of `post`.
    fn attempt(&self, post: &Post) -> Outcome {
        let url = format!("{}/diag/{}", self.base, post.kind.staged_stem());
        let body = post.body.as_deref().unwrap_or_default();
        let result = self
            .agent
            .post(&url)
            .header("content-type", post.content_type)
            .header("x-run-id", &*post.run_id)
            .header("x-node-id", self.config.node_id.as_str())
            .header("x-node-send-ms", now_ms().to_string())
            .send(body);
        let mut response = match result {
            Ok(r) => r,
            Err(_) => return Outcome::Retry { after: None },
        };
        let status = response.status().as_u16();
        match status {
            200..=299 => {
                let reply = response
                    .body_mut()
                    .with_config()
                    .limit(REPLY_LIMIT)
                    .read_to_vec()
                    .unwrap_or_default();
                // The reply is a `PostAck` (`collector.schema.json`); any 200 is a delivery, so
                // a reply that is not one (a proxy's page) reads as an acknowledgement that
                // says nothing more.
                let ack = serde_json::from_slice::<PostAck>(&reply).ok();
                Outcome::Acknowledged {
                    snapshot_now: ack
                        .as_ref()
                        .and_then(|a| a.hints.as_ref())
                        .is_some_and(|h| h.snapshot_now),
                    quarantined: ack.is_some_and(|a| a.quarantined.is_some()),
                }
            }
            408 | 429 | 500..=599 => {
                let after = response
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                Outcome::Retry { after }
            }
            _ => Outcome::Rejected,
        }
    }

    /// Stops: what is still queued is taken and made into posts (spooled when there is a
    /// spool); the records of posts that are in memory only are counted as dropped.
    fn shutdown(&mut self) {
        while let Ok(msg) = self.rx.try_recv() {
            self.take(msg);
        }
        self.close_batch();
        let lost: u64 = self
            .outbox
            .iter()
            .filter(|p| p.spooled.is_none())
            .map(|p| p.records)
            .sum();
        self.shared
            .counters
            .dropped
            .fetch_add(lost, Ordering::Relaxed);
        let mut control = self.shared.lock();
        control.ended = true;
        drop(control);
        self.shared.changed.notify_all();
    }
}
