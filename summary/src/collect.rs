//! One pass over a bundle's records, keeping per-node and per-pair state only, into the
//! [`Summary`] every renderer reads (its types are in [`crate::model`]).
//!
//! Reads any generation and any release: records are read with the current contract's types, which
//! keep what they do not know; unknown event types and fields are counted, never fatal.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use diagwire::bundle::read::{BundleReader, Limits};
use diagwire::bundle::records::{Consumer, Item, Walk, walk_into};
use diagwire::layout::{FileKind, Role};
use diagwire::quarantine::Quarantined;
use diagwire::v1::{CustomPayload, DialResult, Event, EventRecord, PeerState, Record, Snapshot};
use diagwire::view::{self, Buffer, Tape};
use diagwire::{NodeId, Problem};
use diagwire_runtime::short_hex;

use crate::absence::Absent;
use crate::buckets::{LEGACY_WORKER, legacy_exit_status, subprocess_rows};
use crate::gaps::absences;
use crate::model::{
    Direction, FirstDead, Inference, MAX_LISTED, MAX_ROLLUP_KEYS, MAX_SERIES_POINTS, Node,
    OTHER_KINDS, OTHER_PEERS, ProbeRow, RelayClose, RelayTotals, RttBucket, Subprocess, Summary,
};

/// What a snapshot says for the first-Dead lookups: the `conn_type` it holds per peer id or why
/// it holds none (`None` without an iroh block), and whether any probe was ok (`None` without a
/// probe block).
type Glance = (Option<Vec<(String, Result<String, Absent>)>>, Option<bool>);

/// Every node's snapshots as (time, what it says), what they say kept once however many
/// snapshots say it: a long run's snapshots mostly repeat a few glances, so this grows by 16 bytes
/// a snapshot.
#[derive(Default)]
struct Glances {
    said: Vec<Glance>,
    index: BTreeMap<Glance, u32>,
    by_node: BTreeMap<String, Vec<(u64, u32)>>,
}

impl Glances {
    fn push(&mut self, node: &str, t: u64, glance: Glance) {
        let at = match self.index.get(&glance) {
            Some(at) => *at,
            None => {
                let at = self.said.len() as u32;
                self.said.push(glance.clone());
                self.index.insert(glance, at);
                at
            }
        };
        match self.by_node.get_mut(node) {
            Some(v) => v.push((t, at)),
            None => {
                self.by_node.insert(node.to_owned(), vec![(t, at)]);
            }
        }
    }

    /// What `node`'s snapshot nearest to `t` says (the first of several as near).
    fn nearest(&self, node: &str, t: u64) -> Option<&Glance> {
        let (_, at) = self
            .by_node
            .get(node)?
            .iter()
            .min_by_key(|(t0, _)| t0.abs_diff(t))?;
        self.said.get(*at as usize)
    }
}

/// A node id in hex, as `NodeId::to_hex` spells it (lowercase, two digits a byte), without a
/// formatter call per byte: the pass spells an id for nearly every event.
pub(crate) fn hex(id: &NodeId) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(64);
    for b in id.0 {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

/// A SWIM probe as the pass keeps it: (target, sequence, kind), the target's hex id and the kind
/// by their numbers in [`Interner`].
type ProbeKey = (u32, u64, u32);

/// Strings named by number, each kept once (probe targets and kinds, which every probe repeats).
#[derive(Default)]
struct Interner {
    ids: BTreeMap<String, u32>,
    names: Vec<String>,
}

impl Interner {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_owned());
        self.ids.insert(name.to_owned(), id);
        id
    }

    fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", String::as_str)
    }
}

/// Per-node state kept during the pass.
#[derive(Default)]
struct Pass {
    s: Summary,
    /// Node id (hex) → label.
    labels: BTreeMap<String, String>,
    /// Per observer: (target, sequence, kind) → send time.
    pending: BTreeMap<String, BTreeMap<ProbeKey, u64>>,
    /// Per observer: the probes that timed out, so a late acknowledgement of one is not counted
    /// as a probe of its own.
    timed_out: BTreeMap<String, BTreeSet<ProbeKey>>,
    /// The probe targets (hex) and kinds the two maps above name by number.
    probe_names: Interner,
    /// Per node: snapshots as (time, conn_type per peer hex, any probe ok).
    nearest: Glances,
    /// Per node: the latest snapshot time with probes, and its rows.
    latest_probes: BTreeMap<String, (u64, Vec<ProbeRow>)>,
    /// Per node: first and latest host counters (time, counter → value).
    host_first: BTreeMap<String, (u64, BTreeMap<String, u64>)>,
    /// How many legacy `worker_starting` events each node wrote.
    legacy_workers: BTreeMap<String, u32>,
    host_last: BTreeMap<String, (u64, BTreeMap<String, u64>)>,
    /// Per relay node: the latest report time and totals.
    relay_latest: BTreeMap<String, (u64, RelayTotals)>,
    /// Per (relay, peer hex): the latest close.
    closes: BTreeMap<(String, String), RelayClose>,
    /// Per (node, peer hex): the latest (failure time, reason) in the node's connection cache.
    failures: BTreeMap<(String, String), (u64, String)>,
    /// Per (node, label, pid).
    subs: BTreeMap<(String, String, u32), Subprocess>,
    /// Nodes that posted `worker_ready`.
    ready: BTreeSet<String>,
    /// Whether any SWIM probe event was read.
    swim_probe_events: bool,
    /// Whether any gossip event was read.
    gossip_events: bool,
    /// Whether any relay session close was read.
    close_events: bool,
    /// Whether any `MessageSent` or `MessageReceived` was read.
    message_events: bool,
}

/// Reads a bundle (a directory or a `.tar.gz`) and summarizes it.
pub fn summarize(path: &Path, limits: Limits) -> Result<Summary, Problem> {
    summarize_with(path, limits, &mut |_, _| {})
}

/// Like [`summarize`], calling `progress(files done, files in all)` as it reads.
pub fn summarize_with(
    path: &Path,
    limits: Limits,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Summary, Problem> {
    summarize_walk(path, limits, Walk::default(), progress)
}

/// Like [`summarize_with`], reading as `walk` says (with an [`diagwire::bundle::records::Explain`]
/// hook, a refused record's problem says where in it, as validation does).
pub fn summarize_walk(
    path: &Path,
    limits: Limits,
    walk: Walk<'_>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Summary, Problem> {
    let mut reader = BundleReader::open(path, limits).map_err(Problem::from)?;
    let mut pass = Pass::default();
    pass.s.source = path.display().to_string();
    pass.s.run_id = reader.run_id().to_owned();
    struct Reading<'p> {
        pass: &'p mut Pass,
        progress: &'p mut dyn FnMut(usize, usize),
        total: usize,
        done: usize,
        last_path: String,
    }
    impl Consumer for Reading<'_> {
        fn record(&mut self, item: &Item<'_>) {
            if item.path != self.last_path {
                self.done += 1;
                (self.progress)(self.done, self.total);
                self.last_path = item.path.to_owned();
            }
            self.pass.record(item);
        }
        fn problem(&mut self, problem: &Problem) {
            self.pass.problem(problem);
        }
        fn omitted(&mut self, problems: usize) {
            self.pass.s.problems_omitted += problems as u64;
        }
        fn quarantined(&mut self, body: &Quarantined) {
            self.pass.s.quarantined_total += 1;
            if self.pass.s.quarantined.len() < MAX_LISTED {
                // The reason's text is the dataset's to keep; the summary lists the words.
                self.pass.s.quarantined.push(Quarantined {
                    reason: None,
                    ..body.clone()
                });
            }
        }
    }
    let total = reader.file_count();
    let mut reading = Reading {
        pass: &mut pass,
        progress,
        total,
        done: 0,
        last_path: String::new(),
    };
    walk_into(&mut reader, walk, &mut [&mut reading]);
    Ok(pass.finish())
}

fn dial_text(r: &DialResult) -> String {
    match r {
        DialResult::Success => "Success".into(),
        DialResult::Timeout => "Timeout".into(),
        DialResult::Refused => "Refused".into(),
        DialResult::NoRoute => "NoRoute".into(),
        DialResult::Error(e) => format!("Error({e:?})"),
    }
}

impl Pass {
    fn problem(&mut self, p: &Problem) {
        *self.s.problem_counts.entry(p.kind.as_str()).or_default() += 1;
        if self.s.problems.len() < MAX_LISTED {
            self.s.problems.push(p.clone());
        }
    }

    /// The label of a node id: its directory when known, else the first 8 characters.
    fn label_of(&self, hex: &str) -> String {
        self.labels
            .get(hex)
            .cloned()
            .unwrap_or_else(|| short_hex(hex).to_owned())
    }

    fn node(&mut self, label: &str) -> &mut Node {
        self.s
            .nodes
            .entry(label.to_owned())
            .or_insert_with(|| Node {
                label: label.to_owned(),
                ..Node::default()
            })
    }

    fn seen(&mut self, ms: u64) {
        if ms == 0 {
            return;
        }
        self.s.span_ms = Some(match self.s.span_ms {
            Some((lo, hi)) => (lo.min(ms), hi.max(ms)),
            None => (ms, ms),
        });
    }

    fn record(&mut self, item: &Item<'_>) {
        self.s.records += 1;
        if item.unknown_keys {
            self.unknown_keys(item);
        }
        let label = item.node.unwrap_or_default().to_owned();
        match item.record {
            Record::Manifest(m) => {
                for n in &m.nodes {
                    self.labels.insert(n.node_id_hex.0.clone(), n.label.clone());
                    let node = self.node(&n.label);
                    node.listed = true;
                    node.id = n.node_id_hex.0.clone();
                    if node.role.is_none() {
                        node.role = n.role.clone();
                    }
                }
                self.s.manifest = Some(m.clone());
            }
            Record::Boot(b) => {
                self.labels.insert(b.node_id_hex.0.clone(), label.clone());
                let latest = matches!(item.role, Role::Latest(FileKind::Boot));
                let node = self.node(&label);
                if node.id.is_empty() {
                    node.id = b.node_id_hex.0.clone();
                }
                if latest || node.boot.is_none() {
                    node.role = Some(b.role.clone());
                    node.boot = Some(b.clone());
                }
                self.seen(b.process_start_unix_ms);
            }
            Record::Finalize(_) => self.node(&label).finalize = true,
            Record::Snapshot(s) => self.snapshot(&label, s),
            Record::Event(e) => self.event(&label, e),
            _ => {}
        }
    }

    fn unknown_keys(&mut self, item: &Item<'_>) {
        let kind = match item.record.kind() {
            diagwire::v1::RecordKind::Event => "event",
            k => k.as_str(),
        };
        // Only records with unknown keys somewhere pay for the walk: a text without a key the
        // generated types dropped into `extra` is the common case.
        let Ok(tape) = Tape::read(item.text, Buffer::default()) else {
            return;
        };
        for ptr in view::unknown_keys(&diagwire::v1::CONTRACT, kind, &tape) {
            let generic: Vec<&str> = ptr
                .split('/')
                .map(|t| {
                    if t.bytes().all(|b| b.is_ascii_digit()) && !t.is_empty() {
                        "*"
                    } else {
                        t
                    }
                })
                .collect();
            *self
                .s
                .unknown_fields
                .entry(format!("{kind} {}", generic.join("/")))
                .or_default() += 1;
        }
    }

    fn snapshot(&mut self, label: &str, s: &Snapshot) {
        self.labels
            .insert(s.identity.node_id_hex.0.clone(), label.to_owned());
        self.seen(s.wall_ms);
        let t = s.wall_ms;
        let body = &s.body;
        {
            let node = self.node(label);
            node.snapshots += 1;
            node.with_host += u64::from(body.host.is_some());
            node.with_probes += u64::from(body.probes.is_some());
            node.with_iroh += u64::from(body.iroh.is_some());
            node.with_subprocess += u64::from(body.subprocess.is_some());
            if node.boot.is_none() && node.role.is_none() {
                node.role = Some(s.identity.role.clone());
            }
        }
        // What the nearest-snapshot lookups of the first-Dead section need.
        let mut conns = None;
        if let Some(iroh) = &body.iroh {
            let mut by_peer = Vec::new();
            for p in &iroh.peers {
                let conn = p.conn_type_provenance(&iroh.api_gaps);
                let said = match Absent::of(&conn, "iroh has never heard of the peer") {
                    Some(a) => Err(a),
                    None => Ok(conn.value().map(|c| c.to_string()).unwrap_or_default()),
                };
                by_peer.push((p.peer_node_id_hex.0.clone(), said));
            }
            // A peer listed twice reads as its last entry, as a map keyed by peer keeps it.
            by_peer.reverse();
            by_peer.sort_by(|a, b| a.0.cmp(&b.0));
            by_peer.dedup_by(|a, b| a.0 == b.0);
            conns = Some(by_peer);
            for g in &iroh.api_gaps {
                self.node(label).api_gaps.insert(g.to_string());
            }
            for c in &iroh.connection_cache {
                if let (Some(at), Some(reason)) = (c.last_failure_at_ms, &c.last_failure_reason) {
                    let key = (label.to_owned(), c.peer_node_id_hex.0.clone());
                    if self.failures.get(&key).is_none_or(|(t0, _)| at >= *t0) {
                        self.failures.insert(key, (at, reason.clone()));
                    }
                }
            }
        }
        let probe_ok = body.probes.as_ref().map(|p| {
            p.probes
                .iter()
                .any(|x| x.last_outcome == diagwire::v1::ProbeOutcome::Ok)
        });
        self.nearest.push(label, t, (conns, probe_ok));
        if let Some(p) = &body.probes {
            let rows = p
                .probes
                .iter()
                .map(|x| ProbeRow {
                    node: label.to_owned(),
                    kind: x.kind.to_string(),
                    target: x.target.clone(),
                    outcome: x.last_outcome.to_string(),
                    rtt_ms: x.last_rtt_ms,
                    successes: x.successes,
                    attempts: x.attempts,
                })
                .collect();
            if self.latest_probes.get(label).is_none_or(|(t0, _)| t >= *t0) {
                self.latest_probes.insert(label.to_owned(), (t, rows));
            }
        }
        if let Some(net) = body.host.as_ref().and_then(|h| h.network.as_ref()) {
            let mut counters = BTreeMap::new();
            if let Some(u) = &net.udp_kernel_stats {
                for (name, v) in [
                    ("udp.no_ports", u.no_ports),
                    ("udp.in_errors", u.in_errors),
                    ("udp.rcvbuf_errors", u.rcvbuf_errors),
                    ("udp.sndbuf_errors", u.sndbuf_errors),
                ] {
                    if let Some(v) = v {
                        counters.insert(name.to_owned(), v);
                    }
                }
            }
            for i in &net.interfaces {
                if let Some(c) = &i.counters {
                    for (name, v) in [
                        ("rx_dropped", c.rx_dropped),
                        ("tx_dropped", c.tx_dropped),
                        ("rx_errors", c.rx_errors),
                        ("tx_errors", c.tx_errors),
                    ] {
                        counters.insert(format!("{}.{name}", i.name), v);
                    }
                }
            }
            if !counters.is_empty() {
                for (name, v) in &counters {
                    let series = self
                        .s
                        .drop_series
                        .entry((label.to_owned(), name.clone()))
                        .or_default();
                    series.push(t, *v);
                }
                if self.host_first.get(label).is_none_or(|(t0, _)| t < *t0) {
                    self.host_first
                        .insert(label.to_owned(), (t, counters.clone()));
                }
                if self.host_last.get(label).is_none_or(|(t0, _)| t >= *t0) {
                    self.host_last.insert(label.to_owned(), (t, counters));
                }
            }
        }
        if let Some(r) = &body.relay_server {
            let totals = RelayTotals {
                relay: label.to_owned(),
                active: r.active_sessions,
                opens: r.total_opens,
                closes: r.total_closes,
                bytes_rx: r.bytes_rx_total,
                bytes_tx: r.bytes_tx_total,
                by_reason: r.closes_by_reason.clone(),
                counted: !matches!(
                    r.active_sessions_provenance(),
                    diagwire::Provenance::Unavailable(_)
                ),
            };
            if self.relay_latest.get(label).is_none_or(|(t0, _)| t >= *t0) {
                self.relay_latest.insert(label.to_owned(), (t, totals));
            }
        }
        if let Some(sp) = &body.subprocess {
            for x in &sp.subprocesses {
                let e = self
                    .subs
                    .entry((label.to_owned(), x.label.clone(), x.pid))
                    .or_insert_with(|| Subprocess {
                        node: label.to_owned(),
                        label: x.label.clone(),
                        pid: x.pid,
                        ..Subprocess::default()
                    });
                if let Some(r) = x.rss_bytes {
                    e.rss = Some((e.rss.map_or(r, |(a, _)| a), r));
                }
                if let Some(c) = x.cpu_ms {
                    e.cpu_ms = Some((e.cpu_ms.map_or(c, |(a, _)| a), c));
                }
            }
        }
        for r in &body.reachability {
            let _ = r;
        }
    }

    fn event(&mut self, label: &str, r: &EventRecord) {
        self.labels
            .entry(hex(&r.node_id))
            .or_insert_with(|| label.to_owned());
        self.node(label).events += 1;
        self.seen(r.wall_ms);
        let t = r.wall_ms;
        let name = match &r.event {
            Event::Custom(c) => format!("Custom({})", c.payload.tag()),
            e => e.tag().to_owned(),
        };
        *self
            .s
            .node_event_totals
            .entry((label.to_owned(), name.clone()))
            .or_default() += 1;
        *self.s.event_totals.entry(name).or_default() += 1;
        // Peers are kept by id during the pass and named in `finish`, when every label is known.
        let peer = |id: &NodeId, _me: &Pass| hex(id);
        match &r.event {
            Event::Other(o) => {
                *self.s.unknown_event_types.entry(o.tag.clone()).or_default() += 1;
            }
            Event::SwimTransition(x) => {
                let p = peer(&x.peer, self);
                if x.to == PeerState::Dead
                    && self.s.first_dead.as_ref().is_none_or(|d| t < d.wall_ms)
                {
                    self.s.first_dead = Some(FirstDead {
                        observer: label.to_owned(),
                        peer: hex(&x.peer),
                        wall_ms: t,
                        reason: x.reason.clone(),
                        observer_conn: None,
                        peer_conn: None,
                        observer_probe_ok: None,
                        peer_probe_ok: None,
                        absent: BTreeMap::new(),
                    });
                }
                let lane = self.s.swim_lanes.entry((label.to_owned(), p)).or_default();
                if lane.len() < MAX_SERIES_POINTS {
                    lane.push((t, x.to.clone()));
                }
            }
            Event::RelaySessionStateChanged(x) => {
                let lane = self.s.relay_lanes.entry(label.to_owned()).or_default();
                if lane.len() < MAX_SERIES_POINTS {
                    lane.push((t, x.to_status.to_string()));
                }
            }
            Event::RelaySessionClosed(x) => {
                self.close_events = true;
                let close = RelayClose {
                    relay: label.to_owned(),
                    peer: x.peer_node_id_hex.0.clone(),
                    // One side, one string: `remote` counts as `peer`, `idle_timeout` as `relay`.
                    initiator: diagwire::canonical::relay_close(&x.close_initiator)
                        .0
                        .to_string(),
                    reason: x.close_reason.clone(),
                    duration_ms: x.duration_ms,
                    bytes_in: x.bytes_rx,
                    bytes_out: x.bytes_tx,
                    closed_at_ms: x.closed_at_ms,
                    node_last_failure_reason: None,
                    node_last_failure_from: None,
                };
                let key = (label.to_owned(), x.peer_node_id_hex.0.clone());
                if self
                    .closes
                    .get(&key)
                    .is_none_or(|c| c.closed_at_ms <= x.closed_at_ms)
                {
                    self.closes.insert(key, close);
                }
            }
            Event::DialStarted(x) => {
                let p = peer(&x.peer, self);
                self.s.dials.entry(p).or_default().started += 1;
            }
            Event::DialOutcome(x) => {
                let p = peer(&x.peer, self);
                let ok = x.outcome == DialResult::Success;
                let d = self.s.dials.entry(p.clone()).or_default();
                if ok {
                    d.succeeded += 1;
                } else {
                    d.failed += 1;
                }
                if d.last.as_ref().is_none_or(|(_, t0)| t >= *t0) {
                    d.last = Some((dial_text(&x.outcome), t));
                }
                self.s.dial_points_total += 1;
                if self.s.dial_points.len() < MAX_SERIES_POINTS {
                    self.s.dial_points.push((t, label.to_owned(), p, ok));
                }
            }
            Event::MessageSent(x) => {
                self.message(label, Direction::Sent, &x.kind, &x.peer, x.size);
            }
            Event::MessageReceived(x) => {
                self.message(label, Direction::Received, &x.kind, &x.peer, x.size);
            }
            Event::GossipReceived(x) => {
                self.gossip_events = true;
                let g = self
                    .s
                    .gossip
                    .entry((label.to_owned(), x.payload_kind.to_string()))
                    .or_default();
                g.count += 1;
                g.bytes += u64::from(x.payload_bytes);
                g.items += u64::from(x.item_count);
            }
            Event::InferenceResponseSent(x) => {
                self.s.inference_total += 1;
                if self.s.inference.len() < MAX_LISTED {
                    let target = peer(&x.target_peer, self);
                    self.s.inference.push(Inference {
                        sender: label.to_owned(),
                        target,
                        request_id: x.request_id.clone(),
                        bytes: x.byte_size,
                        outcome: x.send_outcome.to_string(),
                        wall_ms: t,
                    });
                }
            }
            Event::SwimProbeSent(x) => {
                self.swim_probe_events = true;
                let key = self.probe_key(&x.target, x.sequence, x.kind.as_str());
                self.pending
                    .entry(label.to_owned())
                    .or_default()
                    .insert(key, t);
            }
            Event::SwimProbeAcked(x) => {
                self.swim_probe_events = true;
                let key = self.probe_key(&x.target, x.sequence, x.kind.as_str());
                let sent = self.pending.get_mut(label).and_then(|p| p.remove(&key));
                if sent.is_none() && self.timed_out.get(label).is_some_and(|k| k.contains(&key)) {
                    // A late acknowledgement of a probe already counted as timed out.
                    return;
                }
                let rtt = x.rtt_ms.or_else(|| sent.map(|s| t.saturating_sub(s)));
                let budget = x.timeout_budget_ms.map(|b| format!("{b} ms"));
                let target = self.probe_names.name(key.0).to_owned();
                self.probe_done(label, &target, sent, rtt, false, budget);
            }
            Event::SwimProbeTimedOut(x) => {
                self.swim_probe_events = true;
                let key = self.probe_key(&x.target, x.sequence, x.kind.as_str());
                let sent = self.pending.get_mut(label).and_then(|p| p.remove(&key));
                self.timed_out
                    .entry(label.to_owned())
                    .or_default()
                    .insert(key);
                let budget = Some(
                    x.timeout_budget_ms
                        .map_or(format!("{} ticks", x.budget_ticks), |b| format!("{b} ms")),
                );
                let target = self.probe_names.name(key.0).to_owned();
                self.probe_done(label, &target, sent, None, true, budget);
            }
            Event::SubprocessSpawned(x) => {
                let e = self
                    .subs
                    .entry((label.to_owned(), x.label.clone(), x.pid))
                    .or_insert_with(|| Subprocess {
                        node: label.to_owned(),
                        label: x.label.clone(),
                        pid: x.pid,
                        ..Subprocess::default()
                    });
                e.spawned = true;
            }
            Event::SubprocessExited(x) => {
                let e = self
                    .subs
                    .entry((label.to_owned(), x.label.clone(), x.pid))
                    .or_insert_with(|| Subprocess {
                        node: label.to_owned(),
                        label: x.label.clone(),
                        pid: x.pid,
                        ..Subprocess::default()
                    });
                e.exited = Some((x.exit_code, x.exit_signal, x.uptime_ms));
            }
            Event::Custom(c) => match &c.payload {
                CustomPayload::WorkerReady(_) => {
                    self.ready.insert(label.to_owned());
                }
                // The oldest writers report their worker with these instead of the subprocess
                // events: one worker per stage, no PID.
                CustomPayload::WorkerStarting(_) => {
                    let n = self.legacy_workers.entry(label.to_owned()).or_default();
                    *n += 1;
                    let n = *n;
                    self.legacy_worker(label, n).spawned = true;
                }
                CustomPayload::WorkerExited(fields) => {
                    let (code, signal) = legacy_exit_status(fields.get("status"));
                    let uptime = fields.get("uptime_ms").and_then(serde_json::Value::as_u64);
                    let n = *self.legacy_workers.entry(label.to_owned()).or_insert(1);
                    self.legacy_worker(label, n).exited = Some((code, signal, uptime));
                }
                _ => {}
            },
            _ => {}
        }
    }

    /// Adds one message to the bandwidth roll-ups: by (node, direction, kind) and by (node, peer),
    /// with the peer kept by id until `finish` names it. New keys past [`MAX_ROLLUP_KEYS`] are
    /// added up under [`OTHER_KINDS`] or [`OTHER_PEERS`].
    fn message(&mut self, label: &str, dir: Direction, kind: &str, peer: &NodeId, size: u32) {
        self.message_events = true;
        let size = u64::from(size);
        let mut key = (label.to_owned(), dir, kind.to_owned());
        if self.s.bandwidth.len() >= MAX_ROLLUP_KEYS && !self.s.bandwidth.contains_key(&key) {
            key.2 = OTHER_KINDS.to_owned();
        }
        self.s.bandwidth.entry(key).or_default().add(size);
        let mut key = (label.to_owned(), hex(peer));
        if self.s.bandwidth_peers.len() >= MAX_ROLLUP_KEYS
            && !self.s.bandwidth_peers.contains_key(&key)
        {
            key.1 = OTHER_PEERS.to_owned();
        }
        let p = self.s.bandwidth_peers.entry(key).or_default();
        match dir {
            Direction::Sent => p.sent.add(size),
            Direction::Received => p.received.add(size),
        }
    }

    /// The `n`th worker (from 1) of a node that writes the legacy `worker_starting` and
    /// `worker_exited` events, which carry no PID: kept under `n` in place of one.
    fn legacy_worker(&mut self, label: &str, n: u32) -> &mut Subprocess {
        self.subs
            .entry((label.to_owned(), LEGACY_WORKER.to_owned(), n))
            .or_insert_with(|| Subprocess {
                node: label.to_owned(),
                label: LEGACY_WORKER.to_owned(),
                pid: n,
                legacy: true,
                ..Subprocess::default()
            })
    }

    fn probe_key(&mut self, target: &NodeId, sequence: u64, kind: &str) -> ProbeKey {
        let target = self.probe_names.id(&hex(target));
        (target, sequence, self.probe_names.id(kind))
    }

    fn probe_done(
        &mut self,
        observer: &str,
        target_hex: &str,
        sent: Option<u64>,
        rtt: Option<u64>,
        timed_out: bool,
        budget: Option<String>,
    ) {
        let target = target_hex.to_owned();
        let pair = self
            .s
            .rtt
            .entry((observer.to_owned(), target.clone()))
            .or_default();
        pair.probes += 1;
        if timed_out {
            pair.timed_out += 1;
        } else {
            pair.acked += 1;
            if let Some(r) = rtt {
                pair.rtts.push(r);
            }
        }
        if budget.is_some() {
            pair.budget = budget;
        }
        if let Some(sent) = sent {
            let bucket = sent / 5_000 * 5;
            let b = self
                .s
                .rtt_buckets
                .entry((observer.to_owned(), target))
                .or_default()
                .entry(bucket)
                .or_default();
            b.probes += 1;
            if timed_out {
                b.timed_out += 1;
            } else {
                b.acked += 1;
                if let Some(r) = rtt {
                    b.rtts.push(r);
                }
            }
        }
    }

    /// Replaces the peer ids the pass kept by their labels.
    fn name_peers(&mut self) {
        let labels = std::mem::take(&mut self.labels);
        let name = |hex: &str| {
            labels
                .get(hex)
                .cloned()
                .unwrap_or_else(|| short_hex(hex).to_owned())
        };
        self.s.dials = std::mem::take(&mut self.s.dials)
            .into_iter()
            .map(|(k, v)| (name(&k), v))
            .collect();
        self.s.rtt = std::mem::take(&mut self.s.rtt)
            .into_iter()
            .map(|((o, t), v)| ((o, name(&t)), v))
            .collect();
        let mut buckets = BTreeMap::new();
        for ((o, t), v) in std::mem::take(&mut self.s.rtt_buckets) {
            // Two ids may share a label: a bucket of the later id replaces the earlier's.
            let into: &mut BTreeMap<u64, RttBucket> = buckets.entry((o, name(&t))).or_default();
            for (b, x) in v {
                match into.entry(b) {
                    std::collections::btree_map::Entry::Vacant(e) => {
                        e.insert(x);
                    }
                    std::collections::btree_map::Entry::Occupied(mut e) => *e.get_mut() = x,
                }
            }
        }
        self.s.rtt_buckets = buckets;
        let mut peers = BTreeMap::new();
        for ((node, peer), v) in std::mem::take(&mut self.s.bandwidth_peers) {
            // The row that adds up peers past the cap keeps its name.
            let peer = if peer == OTHER_PEERS {
                peer
            } else {
                name(&peer)
            };
            let p: &mut crate::model::PeerTraffic = peers.entry((node, peer)).or_default();
            p.sent.merge(v.sent);
            p.received.merge(v.received);
        }
        self.s.bandwidth_peers = peers;
        self.s.swim_lanes = std::mem::take(&mut self.s.swim_lanes)
            .into_iter()
            .map(|((o, p), v)| ((o, name(&p)), v))
            .collect();
        for p in &mut self.s.dial_points {
            p.2 = name(&p.2);
        }
        for i in &mut self.s.inference {
            i.target = name(&i.target);
        }
        self.labels = labels;
    }

    /// What `node`'s snapshot nearest to `t` says: its `conn_type` for the peer `peer_hex` and
    /// whether any probe was ok, each a value or why there is none.
    fn glance(
        &self,
        node: &str,
        peer_hex: &str,
        t: u64,
    ) -> (Result<String, Absent>, Result<bool, Absent>) {
        let Some((conns, ok)) = self.nearest.nearest(node, t) else {
            let none = || Absent::NotReported(format!("`{node}` posted no snapshot"));
            return (Err(none()), Err(none()));
        };
        let conn = match conns {
            None => Err(Absent::NotReported(format!(
                "`{node}`'s nearest snapshot has no iroh block: no transport introspector"
            ))),
            Some(by_peer) => by_peer
                .binary_search_by(|(p, _)| p.as_str().cmp(peer_hex))
                .ok()
                .and_then(|i| by_peer.get(i))
                .map(|(_, said)| said.clone())
                .unwrap_or_else(|| {
                    Err(Absent::NotReported(
                        "iroh has never heard of the peer".into(),
                    ))
                }),
        };
        let ok = ok.ok_or_else(|| {
            Absent::NotReported(format!(
                "`{node}`'s nearest snapshot has no probe block: no probe scheduler"
            ))
        });
        (conn, ok)
    }

    /// The run is what its records say it is: the manifest's run id, else the one run id the boot
    /// records agree on; the run directory's name only when the records say nothing. A name that
    /// disagrees is no problem (people rename the bundles they download; `validate` notes it), so
    /// a directory, renamed or not, and its archive summarize alike.
    fn identify_run(&mut self) {
        let named = std::mem::take(&mut self.s.run_id);
        let boots: BTreeSet<&str> = self
            .s
            .nodes
            .values()
            .filter_map(|n| n.boot.as_ref().map(|b| b.run_id.as_str()))
            .collect();
        let said = match (&self.s.manifest, boots.len()) {
            (Some(m), _) => Some(m.run_id.clone()),
            (None, 1) => boots.first().map(|r| (*r).to_owned()),
            _ => None,
        };
        self.s.run_id = said.unwrap_or(named);
    }

    fn finish(mut self) -> Summary {
        self.identify_run();
        // Probes sent and never answered stay pending, in their pair and in their send bucket.
        for (obs, m) in std::mem::take(&mut self.pending) {
            for ((target, _, _), sent) in m {
                let target = self.probe_names.name(target).to_owned();
                self.s
                    .rtt
                    .entry((obs.clone(), target.clone()))
                    .or_default()
                    .probes += 1;
                let b = self
                    .s
                    .rtt_buckets
                    .entry((obs.clone(), target))
                    .or_default()
                    .entry(sent / 5_000 * 5)
                    .or_default();
                b.probes += 1;
                b.pending += 1;
            }
        }
        self.name_peers();
        if let Some(mut d) = self.s.first_dead.take() {
            let peer_label = self.label_of(&d.peer);
            let observer_id = self
                .s
                .nodes
                .get(&d.observer)
                .map(|n| n.id.clone())
                .unwrap_or_default();
            let (conn, ok) = self.glance(&d.observer, &d.peer, d.wall_ms);
            match conn {
                Ok(c) => d.observer_conn = Some(c),
                Err(a) => {
                    d.absent.insert("observer_conn_type", a);
                }
            }
            match ok {
                Ok(ok) => d.observer_probe_ok = Some(ok),
                Err(a) => {
                    d.absent.insert("observer_probe_ok", a);
                }
            }
            let (conn, ok) = self.glance(&peer_label, &observer_id, d.wall_ms);
            match conn {
                Ok(c) => d.peer_conn = Some(c),
                Err(a) => {
                    d.absent.insert("peer_conn_type", a);
                }
            }
            match ok {
                Ok(ok) => d.peer_probe_ok = Some(ok),
                Err(a) => {
                    d.absent.insert("peer_probe_ok", a);
                }
            }
            d.peer = peer_label;
            self.s.first_dead = Some(d);
        }
        self.s.relay_totals = self.relay_latest.into_values().map(|(_, t)| t).collect();
        let failures = &self.failures;
        let labels = &self.labels;
        self.s.relay_closes = self
            .closes
            .into_values()
            .map(|mut c| {
                let latest = failures
                    .iter()
                    .filter(|((node, peer), _)| *peer == c.peer && *node != c.relay)
                    .max_by_key(|(_, (t, _))| *t);
                c.node_last_failure_reason = latest.map(|(_, (_, r))| r.clone());
                c.node_last_failure_from = latest.map(|((node, _), _)| node.clone());
                c.peer = labels
                    .get(&c.peer)
                    .cloned()
                    .unwrap_or_else(|| short_hex(&c.peer).to_owned());
                c
            })
            .collect();
        self.s.probes = self
            .latest_probes
            .into_values()
            .flat_map(|(_, rows)| rows)
            .collect();
        for (node, (_, last)) in &self.host_last {
            let Some((_, first)) = self.host_first.get(node) else {
                continue;
            };
            for (name, v) in last {
                if let Some(f) = first.get(name) {
                    let delta = i128::from(*v) - i128::from(*f);
                    if delta != 0 {
                        self.s
                            .kernel_drops
                            .push((node.clone(), name.clone(), delta));
                    }
                }
            }
        }
        self.s.subprocesses = subprocess_rows(&self.s.nodes, &self.subs, &self.ready);
        self.s.absent = absences(
            &self.s,
            self.swim_probe_events,
            self.gossip_events,
            self.close_events,
            self.message_events,
        );
        self.s
    }
}

#[cfg(test)]
mod tests {
    use diagwire::NodeId;

    #[test]
    fn hex_spells_an_id_as_the_library_does() {
        let mut id = [0u8; 32];
        for (i, b) in id.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37).wrapping_add(250);
        }
        for id in [NodeId(id), NodeId([0; 32]), NodeId([255; 32])] {
            assert_eq!(super::hex(&id), id.to_hex().0);
        }
    }
}
