//! The summary's data model: what one pass over a bundle keeps ([`Summary`] and its rows), which
//! every renderer only reads. [`crate::collect`] fills it.

use std::collections::{BTreeMap, BTreeSet};

use diagwire::Problem;
use diagwire::v1::{Identity, Manifest, PeerState};

use crate::absence::{Absent, Said, host_fields, writer_generation};
use crate::quantile::Samples;

/// Most transitions kept per plotted lane and dial outcomes per plot; the rest are cut (the plot
/// says so). A counter's samples are thinned instead ([`Series`]).
pub const MAX_SERIES_POINTS: usize = 4_000;
/// Most inference responses and located problems listed.
pub const MAX_LISTED: usize = 200;
/// Most keys a bandwidth roll-up keeps; traffic under further keys is added to one row named
/// [`OTHER_KINDS`] or [`OTHER_PEERS`], so a bundle of endless distinct kinds or peers stays bounded.
pub const MAX_ROLLUP_KEYS: usize = 1_024;
/// The kind under which traffic beyond [`MAX_ROLLUP_KEYS`] kinds is added up.
pub const OTHER_KINDS: &str = "(other kinds)";
/// The peer under which traffic beyond [`MAX_ROLLUP_KEYS`] peers is added up.
pub const OTHER_PEERS: &str = "(other peers)";

/// A node of the run.
#[derive(Debug, Clone, Default)]
pub struct Node {
    /// The directory label.
    pub label: String,
    /// The id it posted under (hex for swactor nodes).
    pub id: String,
    /// The role, from the manifest or the boot record.
    pub role: Option<String>,
    /// Whether the manifest lists it.
    pub listed: bool,
    /// Its latest boot record.
    pub boot: Option<Identity>,
    /// Snapshots read.
    pub snapshots: u64,
    /// Event records read.
    pub events: u64,
    /// Whether it has a finalize record.
    pub finalize: bool,
    /// Snapshots with a host block, with a probe block, with an iroh block, with a subprocess block.
    pub with_host: u64,
    /// See `with_host`.
    pub with_probes: u64,
    /// See `with_host`.
    pub with_iroh: u64,
    /// See `with_host`.
    pub with_subprocess: u64,
    /// Api gaps its iroh introspector named.
    pub api_gaps: BTreeSet<String>,
}

/// The earliest transition of any peer to `Dead`.
#[derive(Debug, Clone)]
pub struct FirstDead {
    /// Who saw it.
    pub observer: String,
    /// Who went dead.
    pub peer: String,
    /// When (the observer's clock).
    pub wall_ms: u64,
    /// SWIM's reason.
    pub reason: String,
    /// The observer's `conn_type` for the peer, from its snapshot nearest in time.
    pub observer_conn: Option<String>,
    /// The peer's `conn_type` for the observer, likewise.
    pub peer_conn: Option<String>,
    /// Whether a probe of the observer's nearest snapshot was ok.
    pub observer_probe_ok: Option<bool>,
    /// Whether a probe of the peer's own snapshot nearest in time was ok.
    pub peer_probe_ok: Option<bool>,
    /// Why each of the four values above that is absent is absent, by its JSON name
    /// (`observer_conn_type`, `peer_conn_type`, `observer_probe_ok`, `peer_probe_ok`).
    pub absent: BTreeMap<&'static str, Absent>,
}

/// A relay-session close as the relay reported it, joined with what the nodes saw.
#[derive(Debug, Clone)]
pub struct RelayClose {
    /// The relay node.
    pub relay: String,
    /// The peer whose session closed.
    pub peer: String,
    /// Who closed it, as a canonical side (`diagwire::canonical::relay_close`: a `remote` of 1.0.0
    /// writers reads `peer`, an `idle_timeout` reads `relay`).
    pub initiator: String,
    /// The relay's reason.
    pub reason: String,
    /// How long it was open.
    pub duration_ms: u64,
    /// Bytes from the peer.
    pub bytes_in: u64,
    /// Bytes to the peer.
    pub bytes_out: u64,
    /// When it closed.
    pub closed_at_ms: u64,
    /// The latest `last_failure_reason` any other node's connection cache holds for the peer.
    pub node_last_failure_reason: Option<String>,
    /// The node whose connection cache held that reason.
    pub node_last_failure_from: Option<String>,
}

/// A relay's latest own report.
#[derive(Debug, Clone)]
pub struct RelayTotals {
    /// The relay node.
    pub relay: String,
    /// Sessions open at the report.
    pub active: u64,
    /// Sessions opened.
    pub opens: u64,
    /// Sessions closed.
    pub closes: u64,
    /// Bytes received.
    pub bytes_rx: u64,
    /// Bytes sent.
    pub bytes_tx: u64,
    /// Closes by reason.
    pub by_reason: Vec<(String, u64)>,
    /// False when the relay could not count its sessions (`counters_source: unavailable`): the
    /// five counters are placeholders, not an idle relay.
    pub counted: bool,
}

/// One probe's latest state on one node.
#[derive(Debug, Clone)]
pub struct ProbeRow {
    /// The node.
    pub node: String,
    /// The probe kind.
    pub kind: String,
    /// The target.
    pub target: String,
    /// The latest outcome.
    pub outcome: String,
    /// The latest RTT.
    pub rtt_ms: Option<u64>,
    /// Successes.
    pub successes: u64,
    /// Attempts.
    pub attempts: u64,
}

/// SWIM probe outcomes of one observer towards one target.
#[derive(Debug, Clone, Default)]
pub struct RttPair {
    /// Probes sent.
    pub probes: u64,
    /// Acknowledged.
    pub acked: u64,
    /// Timed out.
    pub timed_out: u64,
    /// RTTs of the acknowledged ones.
    pub rtts: Samples,
    /// The timeout budget (ms when known, else ticks).
    pub budget: Option<String>,
}

/// One row of the per-bucket RTT table.
#[derive(Debug, Clone, Default)]
pub struct RttBucket {
    /// Probes sent in the bucket.
    pub probes: u64,
    /// Acknowledged.
    pub acked: u64,
    /// RTTs of those acknowledged.
    pub rtts: Samples,
    /// Timed out.
    pub timed_out: u64,
    /// Neither acknowledged nor timed out by the end of the bundle.
    pub pending: u64,
}

/// Which way a message went, as the node that wrote the event saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// `MessageSent`.
    Sent,
    /// `MessageReceived`.
    Received,
}

impl Direction {
    /// The direction's name in JSON and in the tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Sent => "sent",
            Direction::Received => "received",
        }
    }
}

/// Messages and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Messages.
    pub count: u64,
    /// The sum of their `size`.
    pub bytes: u64,
}

impl Traffic {
    /// Counts one message of `size` bytes.
    pub fn add(&mut self, size: u64) {
        self.count += 1;
        self.bytes = self.bytes.saturating_add(size);
    }

    /// Adds another roll-up.
    pub fn merge(&mut self, other: Traffic) {
        self.count += other.count;
        self.bytes = self.bytes.saturating_add(other.bytes);
    }
}

/// A node's traffic with one peer, both ways.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeerTraffic {
    /// What the node sent to the peer.
    pub sent: Traffic,
    /// What the node received from the peer.
    pub received: Traffic,
}

/// Gossip receipts of one node of one kind.
#[derive(Debug, Clone, Default)]
pub struct Gossip {
    /// Receipts.
    pub count: u64,
    /// Payload bytes.
    pub bytes: u64,
    /// Items.
    pub items: u64,
}

/// One `InferenceResponseSent`.
#[derive(Debug, Clone)]
pub struct Inference {
    /// The sending node.
    pub sender: String,
    /// The target.
    pub target: String,
    /// The request.
    pub request_id: String,
    /// The response size.
    pub bytes: u64,
    /// How the send ended.
    pub outcome: String,
    /// When.
    pub wall_ms: u64,
}

/// Dials towards one peer, across all observers.
#[derive(Debug, Clone, Default)]
pub struct Dials {
    /// `DialStarted` events.
    pub started: u64,
    /// `DialOutcome: Success`.
    pub succeeded: u64,
    /// Any other outcome.
    pub failed: u64,
    /// The latest outcome and its time.
    pub last: Option<(String, u64)>,
}

/// A subprocess of one node, from its events and snapshots.
#[derive(Debug, Clone, Default)]
pub struct Subprocess {
    /// The node.
    pub node: String,
    /// The caller's label.
    pub label: String,
    /// The PID.
    pub pid: u32,
    /// Whether `SubprocessSpawned` was seen.
    pub spawned: bool,
    /// `SubprocessExited`: (exit code, signal, uptime).
    pub exited: Option<(Option<i32>, Option<i32>, Option<u64>)>,
    /// RSS at the first and the latest snapshot that had it.
    pub rss: Option<(u64, u64)>,
    /// CPU time likewise.
    pub cpu_ms: Option<(u64, u64)>,
    /// Known from the legacy worker events only: `pid` is the worker's number on its node.
    pub legacy: bool,
}

/// The bucket of a stage's worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bucket {
    /// No subprocess was ever spawned.
    NeverSpawned,
    /// It spawned and exited.
    Exited,
    /// It spawned and neither exited nor became ready.
    Stuck,
    /// It spawned and became ready (a `worker_ready` event).
    Healthy,
}

impl Bucket {
    /// The bucket's name in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Bucket::NeverSpawned => "never_spawned",
            Bucket::Exited => "exited",
            Bucket::Stuck => "stuck",
            Bucket::Healthy => "healthy",
        }
    }
}

/// A classified subprocess row (or a stage with none).
#[derive(Debug, Clone)]
pub struct SubprocessRow {
    /// The node.
    pub node: String,
    /// The subprocess label (`-` for a stage that spawned none).
    pub label: String,
    /// Its bucket.
    pub bucket: Bucket,
    /// The evidence in words.
    pub detail: String,
}

/// A reason a section has no data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Absence {
    /// The section.
    pub section: &'static str,
    /// Why.
    pub why: String,
}

/// The samples of a counter on one node, (time, value), kept within [`MAX_COUNTER_POINTS`]
/// however long the run: when full, every other sample kept is dropped and from then on only
/// every `stride`-th sample is kept (twice as far apart each time); the latest sample is always
/// the last point, so a plot of the run ends where the counter did. A long run's plot thus spans
/// the whole run at an even spacing, in bounded memory (a run has a series per node and counter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    points: Vec<Point>,
    /// One sample in `stride` is kept (1 until the series was first full).
    stride: u64,
    /// Samples pushed.
    pushed: u64,
}

/// A counter's sample: (time, value).
pub type Point = (u64, u64);

impl Default for Series {
    fn default() -> Series {
        Series {
            points: Vec::new(),
            stride: 1,
            pushed: 0,
        }
    }
}

/// Most points a counter's [`Series`] keeps (a plot is about a thousand pixels wide).
pub const MAX_COUNTER_POINTS: usize = 1_024;

impl Series {
    /// Adds the next sample.
    pub fn push(&mut self, t: u64, v: u64) {
        // The last point, when it is not a sample on the stride, was kept only as the latest.
        if self.pushed > 0 && !(self.pushed - 1).is_multiple_of(self.stride) {
            self.points.pop();
        }
        // The samples kept take all the room but one, which the latest takes.
        if self.pushed.is_multiple_of(self.stride) && self.points.len() >= MAX_COUNTER_POINTS - 1 {
            let mut i = 0;
            self.points.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            self.stride *= 2;
        }
        self.points.push((t, v));
        self.pushed += 1;
    }

    /// The points kept, in the order pushed.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// Whether samples were dropped: one in how many is kept, when more than one.
    pub fn thinned(&self) -> Option<u64> {
        (self.stride > 1).then_some(self.stride)
    }
}

/// What the summary read.
#[derive(Debug, Default)]
pub struct Summary {
    /// Where the bundle was read from.
    pub source: String,
    /// The run id.
    pub run_id: String,
    /// The manifest, when it parsed.
    pub manifest: Option<Manifest>,
    /// The nodes, by label.
    pub nodes: BTreeMap<String, Node>,
    /// The first peer to go dead.
    pub first_dead: Option<FirstDead>,
    /// Each relay's latest report.
    pub relay_totals: Vec<RelayTotals>,
    /// The latest close per (relay, peer).
    pub relay_closes: Vec<RelayClose>,
    /// The latest probe states.
    pub probes: Vec<ProbeRow>,
    /// Per (observer, target).
    pub rtt: BTreeMap<(String, String), RttPair>,
    /// Per (observer, target), per bucket start in epoch seconds: a long run has many buckets of
    /// few pairs, so a bucket costs its counts, not its pair's names.
    pub rtt_buckets: BTreeMap<(String, String), BTreeMap<u64, RttBucket>>,
    /// Non-zero kernel drop deltas: (node, counter, delta).
    pub kernel_drops: Vec<(String, String, i128)>,
    /// Per (node, payload kind).
    pub gossip: BTreeMap<(String, String), Gossip>,
    /// `MessageSent`/`MessageReceived` per (node, direction, message kind).
    pub bandwidth: BTreeMap<(String, Direction, String), Traffic>,
    /// `MessageSent`/`MessageReceived` per (node, peer).
    pub bandwidth_peers: BTreeMap<(String, String), PeerTraffic>,
    /// Every `InferenceResponseSent` (the first [`MAX_LISTED`]).
    pub inference: Vec<Inference>,
    /// `InferenceResponseSent` events in all.
    pub inference_total: u64,
    /// Per target peer.
    pub dials: BTreeMap<String, Dials>,
    /// Events by type (`Custom(<kind>)` per kind).
    pub event_totals: BTreeMap<String, u64>,
    /// Events by node and type.
    pub node_event_totals: BTreeMap<(String, String), u64>,
    /// The subprocess rows.
    pub subprocesses: Vec<SubprocessRow>,
    /// Records read.
    pub records: u64,
    /// Problems by kind.
    pub problem_counts: BTreeMap<&'static str, u64>,
    /// The first located problems.
    pub problems: Vec<Problem>,
    /// Problems the bundle's validation found and did not keep (its caps), so counted in no kind.
    pub problems_omitted: u64,
    /// The first bodies the collector quarantined at ingest, with why.
    pub quarantined: Vec<diagwire::quarantine::Quarantined>,
    /// How many bodies it quarantined.
    pub quarantined_total: u64,
    /// Why sections are empty.
    pub absent: Vec<Absence>,
    /// Unknown event types by tag.
    pub unknown_event_types: BTreeMap<String, u64>,
    /// Unknown keys by where they sit (`<record kind> <pointer without indexes>`).
    pub unknown_fields: BTreeMap<String, u64>,
    /// SWIM opinion timelines per (observer, peer).
    pub swim_lanes: BTreeMap<(String, String), Vec<(u64, PeerState)>>,
    /// Relay-session status timelines per node.
    pub relay_lanes: BTreeMap<String, Vec<(u64, String)>>,
    /// Dial outcomes: (time, observer, peer, succeeded).
    pub dial_points: Vec<(u64, String, String, bool)>,
    /// Dial outcomes in all (the points may be thinned).
    pub dial_points_total: u64,
    /// Kernel drop counters over time, per (node, counter).
    pub drop_series: BTreeMap<(String, String), Series>,
    /// First and last wall clock seen in any record.
    pub span_ms: Option<(u64, u64)>,
}

impl Summary {
    /// Every problem found reading the bundle: those counted by kind and those left out.
    pub fn problem_total(&self) -> u64 {
        self.problem_counts.values().sum::<u64>() + self.problems_omitted
    }
}

/// The hosts of the run, one per node: `(label, Some(fields) | None without a boot record)`, each
/// field (in [`crate::absence::HOST_FIELDS`] order) a value or why it is absent.
/// A node's writer generation is the contract version its manifest entry declares, else the run's
/// (a node of a run assembled from writers of several generations declares its own).
pub fn hosts(s: &Summary) -> Vec<(String, Option<[Said; 9]>)> {
    let run = s
        .manifest
        .as_ref()
        .and_then(|m| m.contract_version.as_deref());
    s.nodes
        .values()
        .map(|n| {
            let own = s.manifest.as_ref().and_then(|m| {
                m.nodes
                    .iter()
                    .find(|e| e.label == n.label)
                    .and_then(|e| e.contract_version.as_deref())
            });
            let generation = writer_generation(own.or(run));
            let fields = n.boot.as_ref().map(|b| host_fields(b, &generation));
            (n.label.clone(), fields)
        })
        .collect()
}

/// The run's span on the collector's clock, or the records' own span without a manifest.
pub fn run_span(s: &Summary) -> (Option<u64>, Option<u64>) {
    match &s.manifest {
        Some(m) if m.run_start_collector_ms.is_some() => {
            (m.run_start_collector_ms, m.run_end_collector_ms)
        }
        _ => (s.span_ms.map(|x| x.0), s.span_ms.map(|x| x.1)),
    }
}

#[cfg(test)]
mod tests {
    use super::{MAX_COUNTER_POINTS, Series};

    /// The series of samples `0..n` (time and value both the sample's number), never holding
    /// room for more than [`MAX_COUNTER_POINTS`] on the way.
    fn pushed(n: u64) -> Series {
        let mut s = Series::default();
        for i in 0..n {
            s.push(i, i);
            assert!(
                s.points.capacity() <= MAX_COUNTER_POINTS,
                "after {i} samples"
            );
        }
        s
    }

    /// However many samples: at most [`MAX_COUNTER_POINTS`] kept, the first and the latest among
    /// them, the others evenly spaced one `stride` apart, and `thinned` says the stride.
    #[track_caller]
    fn check_series(n: u64, stride: u64) {
        let s = pushed(n);
        let points = s.points();
        assert!(
            points.len() <= MAX_COUNTER_POINTS,
            "{n}: {} points",
            points.len()
        );
        assert_eq!(points.first(), Some(&(0, 0)), "{n}");
        assert_eq!(
            points.last(),
            Some(&(n - 1, n - 1)),
            "{n}: the latest is kept"
        );
        let spaced = &points[..points.len() - 1];
        assert!(
            spaced
                .iter()
                .enumerate()
                .all(|(i, p)| p.0 == i as u64 * stride),
            "{n}: not one sample in {stride}"
        );
        assert_eq!(s.thinned(), (stride > 1).then_some(stride), "{n}");
    }

    #[test]
    fn a_short_series_keeps_every_sample() {
        check_series(1, 1);
        check_series(MAX_COUNTER_POINTS as u64 - 1, 1);
    }

    #[test]
    fn a_long_series_keeps_an_even_spacing_over_the_whole_run_and_its_latest_sample() {
        let max = MAX_COUNTER_POINTS as u64;
        check_series(max, 2);
        check_series(2 * max, 4);
        check_series(1_000_003, 1024);
    }
}
