//! The summary's JSON output as types: what `diagwire summary --format json` prints, and the source
//! of its published JSON Schema (`schemas/tools/summary.schema.json`, derived with schemars).
//! `docs/summary.md` explains each section; the field docs here become the schema's descriptions.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use diagwire::Problem;
use diagwire::quarantine::Quarantined;

use crate::absence::{Absent, HOST_FIELDS, Said, run_fields};
use crate::model::{
    Absence, Dials, FirstDead, Gossip, Node, ProbeRow, RelayClose, RelayTotals, RttBucket, RttPair,
    SubprocessRow, Summary, hosts, run_span,
};

/// The version of this JSON shape (a semantic version, bumped by the contract's rules: a new
/// optional key is minor, a removed or retyped key is major).
pub const FORMAT_VERSION: &str = "1.2.0";

/// `diagwire summary --format json`: the post-incident summary of one bundle.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SummaryOutput {
    /// The version of this JSON shape.
    #[schemars(extend("const" = FORMAT_VERSION))]
    pub format_version: &'static str,
    /// The run as a whole.
    pub run: Run,
    /// One row per node: listed in the manifest or found with a directory.
    pub nodes: Vec<NodeRow>,
    /// One row per node from its latest boot record.
    pub hosts: Vec<HostRow>,
    /// The earliest transition of any peer to `Dead`, when there is one.
    pub first_dead: Option<FirstDeadRow>,
    /// Per relay node, its latest relay-server totals.
    pub relay_totals: Vec<RelayTotalsRow>,
    /// Per (relay, peer), the latest closed relay session.
    pub relay_sessions: Vec<RelaySessionRow>,
    /// Per node, the probes of its latest snapshot with a probe block.
    pub probe_outcomes: Vec<ProbeOutcomeRow>,
    /// Per observer → target, the probe RTT distribution.
    pub probe_rtt: Vec<ProbeRttRow>,
    /// Per observer → target and 5-second bucket of send time, the probe RTTs.
    pub probe_rtt_buckets: Vec<ProbeRttBucketRow>,
    /// The kernel network counters that moved between a node's first and last host snapshot.
    pub kernel_drops: Vec<KernelDropRow>,
    /// Gossip receipts per (node, payload kind).
    pub gossip: Vec<GossipRow>,
    /// `MessageSent`/`MessageReceived` rolled up by node, direction and kind, and by node and
    /// peer; both lists are empty when no instrumented transport carried traffic (`absent` then
    /// has a `bandwidth` row).
    pub bandwidth: Bandwidth,
    /// Inference responses sent.
    pub inference_responses: InferenceResponses,
    /// Per target peer, the dials of every observer.
    pub dials: Vec<DialRow>,
    /// Per stage and subprocess, its bucket.
    pub subprocesses: Vec<SubprocessOutputRow>,
    /// The number of events per event type (`Custom(<kind>)` per custom kind).
    pub event_totals: BTreeMap<String, u64>,
    /// Per section, why it has no data.
    pub absent: Vec<AbsentRow>,
    /// What reading the bundle found wrong.
    pub validation: Validation,
    /// What the current contract does not know.
    pub unknown: Unknown,
}

/// The run as a whole.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Run {
    /// The run's id.
    pub run_id: String,
    /// How many nodes the summary has rows for.
    pub nodes: usize,
    /// The manifest's `finalize_received`; null without a manifest.
    pub finalize_received: Option<bool>,
    /// The run's start on the collector's clock (the manifest's, else the earliest record's).
    pub start_ms: Option<u64>,
    /// The run's end on the collector's clock (the manifest's, else the latest record's).
    pub end_ms: Option<u64>,
    /// The contract version the manifest declares; null when it declares none.
    pub contract_version: Option<String>,
    /// Why each absent run-level value (`finalize_received`, `contract_version`, `writer`) is
    /// absent.
    pub absent: Vec<AbsentValue>,
}

/// Why one value is absent, as the contract tells it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AbsentValue {
    /// The value's name (its JSON key in the row, or a host field's name: `rental`, `ip`, `dc`,
    /// `country`, `container`, `hostname`, `relay`, `iroh`, `git`).
    pub field: String,
    /// `writer_generation` (the writer's contract predates the field), `unavailable` (the writer
    /// could not ask), `not_applicable` (not for this node's role or host) or `not_reported` (the
    /// writer could have written it and did not).
    pub kind: &'static str,
    /// The absence in words, as the Markdown prints it.
    pub why: String,
}

impl AbsentValue {
    fn new(field: impl Into<String>, a: &Absent) -> Self {
        AbsentValue {
            field: field.into(),
            kind: a.kind(),
            why: a.words(),
        }
    }
}

/// One node.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NodeRow {
    /// The node's directory label.
    pub label: String,
    /// Its role, from its boot record or manifest entry.
    pub role: Option<String>,
    /// Its node id (hex).
    pub id: String,
    /// Whether the manifest lists it.
    pub listed: bool,
    /// Snapshots read.
    pub snapshots: u64,
    /// Events read.
    pub events: u64,
    /// Whether its finalize record was read.
    pub finalize: bool,
}

/// One node's host, from its latest boot record (every field null without one).
#[derive(Debug, Serialize, JsonSchema)]
pub struct HostRow {
    /// The node's label.
    pub node: String,
    /// Whether the node has a boot record.
    pub boot_record: bool,
    /// `vastai_contract_id`, else `provider_contract_id`.
    pub rental: Option<String>,
    /// `host_ip_public`.
    pub ip: Option<String>,
    /// `datacenter_id`.
    pub datacenter: Option<String>,
    /// `host_country`.
    pub country: Option<String>,
    /// `container_id`.
    pub container: Option<String>,
    /// `hostname`.
    pub hostname: Option<String>,
    /// `home_relay_url_at_boot`.
    pub relay: Option<String>,
    /// The iroh version.
    pub iroh_version: Option<String>,
    /// The git sha of the build.
    pub git_sha: Option<String>,
    /// Why each absent host field is absent (empty without a boot record: `boot_record` says so).
    pub absent: Vec<AbsentValue>,
}

/// The first peer to go `Dead`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FirstDeadRow {
    /// The node that declared the peer dead.
    pub observer: String,
    /// The peer declared dead.
    pub peer: String,
    /// When (the event's `wall_ms`).
    pub wall_ms: u64,
    /// The transition's reason.
    pub reason: String,
    /// The observer's connection type to the peer, from its snapshot nearest in time.
    pub observer_conn_type: Option<String>,
    /// The peer's connection type to the observer, from its snapshot nearest in time.
    pub peer_conn_type: Option<String>,
    /// Whether a probe of the observer's nearest snapshot was ok.
    pub observer_probe_ok: Option<bool>,
    /// Whether a probe of the peer's own nearest snapshot was ok.
    pub peer_probe_ok: Option<bool>,
    /// Why each of the four values above that is null is absent.
    pub absent: Vec<AbsentValue>,
}

/// A relay's latest totals (the counters are null when the relay reported none).
#[derive(Debug, Serialize, JsonSchema)]
pub struct RelayTotalsRow {
    /// The relay node's label.
    pub relay: String,
    /// Whether the relay reported totals.
    pub counted: bool,
    /// Active sessions.
    pub active: Option<u64>,
    /// Sessions opened.
    pub opens: Option<u64>,
    /// Sessions closed.
    pub closes: Option<u64>,
    /// Bytes received.
    pub bytes_rx: Option<u64>,
    /// Bytes sent.
    pub bytes_tx: Option<u64>,
    /// Closes per reason.
    pub closes_by_reason: Vec<ReasonCount>,
}

/// A count for one reason.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReasonCount {
    /// The reason.
    pub reason: String,
    /// How many.
    pub count: u64,
}

/// The latest closed session of a (relay, peer).
#[derive(Debug, Serialize, JsonSchema)]
pub struct RelaySessionRow {
    /// The relay node's label.
    pub relay: String,
    /// The peer.
    pub peer: String,
    /// Who closed it, as a canonical side.
    pub initiator: String,
    /// Why.
    pub reason: String,
    /// How long the session lasted.
    pub duration_ms: u64,
    /// Bytes in.
    pub bytes_in: u64,
    /// Bytes out.
    pub bytes_out: u64,
    /// When it closed.
    pub closed_at_ms: u64,
    /// The latest `last_failure_reason` another node's connection cache holds for the peer.
    pub node_last_failure_reason: Option<String>,
    /// The node whose connection cache held that reason.
    pub node_last_failure_from: Option<String>,
}

/// One probe of a node's latest snapshot with a probe block.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProbeOutcomeRow {
    /// The node's label.
    pub node: String,
    /// The probe's kind.
    pub kind: String,
    /// Its target.
    pub target: String,
    /// Its outcome.
    pub outcome: String,
    /// Its RTT, when it has one.
    pub rtt_ms: Option<u64>,
    /// Successes.
    pub successes: u64,
    /// Attempts.
    pub attempts: u64,
}

/// The probe RTTs of one observer → target.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProbeRttRow {
    /// The probing node.
    pub observer: String,
    /// The probed node.
    pub target: String,
    /// Probes sent.
    pub probes: u64,
    /// Probes acknowledged.
    pub acked: u64,
    /// Probes that timed out.
    pub timed_out: u64,
    /// Probes neither acknowledged nor timed out.
    pub pending: u64,
    /// The median RTT (nearest rank); null without samples.
    pub median_ms: Option<u64>,
    /// The 95th percentile RTT (nearest rank).
    pub p95_ms: Option<u64>,
    /// The 99th percentile RTT (nearest rank).
    pub p99_ms: Option<u64>,
    /// The timeout budget the probes carried.
    pub budget: Option<String>,
}

/// The probe RTTs of one observer → target in one 5-second bucket of send time.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProbeRttBucketRow {
    /// The probing node.
    pub observer: String,
    /// The probed node.
    pub target: String,
    /// The bucket's start (epoch seconds).
    pub bucket_s: u64,
    /// Probes sent.
    pub probes: u64,
    /// Probes acknowledged.
    pub acked: u64,
    /// Probes that timed out.
    pub timed_out: u64,
    /// Probes neither acknowledged nor timed out.
    pub pending: u64,
    /// The median RTT (nearest rank).
    pub median_ms: Option<u64>,
    /// The 95th percentile RTT (nearest rank).
    pub p95_ms: Option<u64>,
    /// The 99th percentile RTT (nearest rank).
    pub p99_ms: Option<u64>,
}

/// A kernel counter that moved.
#[derive(Debug, Serialize, JsonSchema)]
pub struct KernelDropRow {
    /// The node's label.
    pub node: String,
    /// The counter.
    pub counter: String,
    /// How much it moved between the first and last host snapshot.
    pub delta: i64,
}

/// Gossip receipts of one (node, payload kind).
#[derive(Debug, Serialize, JsonSchema)]
pub struct GossipRow {
    /// The receiving node.
    pub node: String,
    /// The payload kind.
    pub kind: String,
    /// Receipts.
    pub count: u64,
    /// Bytes.
    pub bytes: u64,
    /// Items.
    pub items: u64,
}

/// The messages instrumented transports carried.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Bandwidth {
    /// Per (node, direction, message kind).
    pub by_kind: Vec<BandwidthKindRow>,
    /// Per (node, peer), both directions.
    pub by_peer: Vec<BandwidthPeerRow>,
}

/// The messages of one kind one node sent or received.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BandwidthKindRow {
    /// The node that wrote the events.
    pub node: String,
    /// `sent` (`MessageSent`) or `received` (`MessageReceived`).
    pub direction: &'static str,
    /// The message kind (`(other kinds)` adds up kinds past the summary's cap on distinct keys).
    pub kind: String,
    /// Messages.
    pub count: u64,
    /// The sum of their sizes in bytes.
    pub bytes: u64,
}

/// The messages between one node and one peer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BandwidthPeerRow {
    /// The node that wrote the events.
    pub node: String,
    /// The peer (`(other peers)` adds up peers past the summary's cap on distinct keys).
    pub peer: String,
    /// Messages the node sent to the peer.
    pub sent: u64,
    /// Their bytes.
    pub sent_bytes: u64,
    /// Messages the node received from the peer.
    pub received: u64,
    /// Their bytes.
    pub received_bytes: u64,
}

/// The inference responses of the run.
#[derive(Debug, Serialize, JsonSchema)]
pub struct InferenceResponses {
    /// Every `InferenceResponseSent`.
    pub total: u64,
    /// The first ones, each listed.
    pub listed: Vec<InferenceRow>,
}

/// One inference response.
#[derive(Debug, Serialize, JsonSchema)]
pub struct InferenceRow {
    /// The sending node.
    pub sender: String,
    /// The target.
    pub target: String,
    /// The request id.
    pub request_id: String,
    /// Bytes.
    pub bytes: u64,
    /// The outcome.
    pub outcome: String,
    /// When.
    pub wall_ms: u64,
}

/// The dials to one target peer, across all observers.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DialRow {
    /// The target peer.
    pub peer: String,
    /// `DialStarted` events.
    pub started: u64,
    /// Outcomes `Success`.
    pub succeeded: u64,
    /// Other outcomes.
    pub failed: u64,
    /// Started minus succeeded minus failed.
    pub in_flight: i64,
    /// The last outcome, in the text reachability writes.
    pub last_outcome: Option<String>,
    /// When the last outcome was.
    pub last_outcome_ms: Option<u64>,
}

/// One subprocess of a stage and its bucket.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SubprocessOutputRow {
    /// The stage node.
    pub node: String,
    /// The subprocess.
    pub label: String,
    /// `never_spawned`, `exited`, `stuck` or `healthy`.
    pub bucket: &'static str,
    /// What the bucket rests on.
    pub detail: String,
}

/// Why a section has no data.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AbsentRow {
    /// The section.
    pub section: &'static str,
    /// Why.
    pub why: String,
}

/// What reading the bundle found wrong.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Validation {
    /// Records read.
    pub records: u64,
    /// Problems found.
    pub problems: u64,
    /// Problems per kind.
    pub by_kind: BTreeMap<&'static str, u64>,
    /// The first located problems.
    pub first: Vec<ProblemRow>,
    /// Bodies the collector quarantined at ingest (each also one problem of kind `layout`).
    /// Added in format 1.2.0.
    pub quarantined: u64,
    /// The first of them, with why the collector kept each aside.
    pub quarantined_bodies: Vec<QuarantinedRow>,
}

/// A body the collector quarantined at ingest.
#[derive(Debug, Serialize, JsonSchema)]
pub struct QuarantinedRow {
    /// The node id it was posted under.
    pub node: String,
    /// Its file as a person finds it (`archive!inner/path` inside an archive).
    pub file: String,
    /// Why the collector kept it aside, as its `.why.json` records it (escaped).
    pub why: String,
}

/// One located problem.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProblemRow {
    /// The problem's kind.
    pub kind: &'static str,
    /// The file as a person finds it (`archive!inner/path` inside an archive).
    pub file: String,
    /// The record's index in the file; null for the file as a whole.
    pub record: Option<usize>,
    /// The JSON pointer into the record.
    pub pointer: String,
    /// A sentence for a person.
    pub message: String,
}

/// What the current contract does not know, with counts.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Unknown {
    /// Unknown event types.
    pub event_types: BTreeMap<String, u64>,
    /// Unknown fields by record kind and JSON pointer.
    pub fields: BTreeMap<String, u64>,
}

/// The rows of `probe_rtt_buckets`, one per (observer, target, bucket), made as they are read.
pub fn bucket_rows(s: &Summary) -> impl Iterator<Item = ProbeRttBucketRow> + '_ {
    s.rtt_buckets.iter().flat_map(|(pair, v)| {
        v.iter()
            .map(move |(b, x)| ProbeRttBucketRow::new(pair, *b, x))
    })
}

impl SummaryOutput {
    /// The JSON output of a summary.
    pub fn new(s: &Summary) -> Self {
        Self::build(s, true)
    }

    /// The JSON output of a summary, without the rows of `probe_rtt_buckets` when `with_buckets`
    /// is false (the one part that grows with the run; [`bucket_rows`] makes them one by one).
    /// Each section is made by its row type's `new`, from the summary's part it shows.
    pub(crate) fn build(s: &Summary, with_buckets: bool) -> Self {
        SummaryOutput {
            format_version: FORMAT_VERSION,
            run: Run::new(s),
            nodes: s.nodes.values().map(NodeRow::new).collect(),
            hosts: hosts(s).into_iter().map(HostRow::new).collect(),
            first_dead: s.first_dead.as_ref().map(FirstDeadRow::new),
            relay_totals: s.relay_totals.iter().map(RelayTotalsRow::new).collect(),
            relay_sessions: s.relay_closes.iter().map(RelaySessionRow::new).collect(),
            probe_outcomes: s.probes.iter().map(ProbeOutcomeRow::new).collect(),
            probe_rtt: s.rtt.iter().map(ProbeRttRow::new).collect(),
            probe_rtt_buckets: match with_buckets {
                true => bucket_rows(s).collect(),
                false => Vec::new(),
            },
            kernel_drops: s.kernel_drops.iter().map(KernelDropRow::new).collect(),
            gossip: s.gossip.iter().map(GossipRow::new).collect(),
            bandwidth: Bandwidth::new(s),
            inference_responses: InferenceResponses::new(s),
            dials: s.dials.iter().map(DialRow::new).collect(),
            subprocesses: s
                .subprocesses
                .iter()
                .map(SubprocessOutputRow::new)
                .collect(),
            event_totals: s.event_totals.clone(),
            absent: s.absent.iter().map(AbsentRow::new).collect(),
            validation: Validation::new(s),
            unknown: Unknown::new(s),
        }
    }
}

/// Why each of `fields` that is absent is absent.
fn absent_values<'a>(fields: impl IntoIterator<Item = (&'a str, &'a Absent)>) -> Vec<AbsentValue> {
    fields
        .into_iter()
        .map(|(f, a)| AbsentValue::new(f, a))
        .collect()
}

impl Run {
    fn new(s: &Summary) -> Self {
        let (start_ms, end_ms) = run_span(s);
        Run {
            run_id: s.run_id.clone(),
            nodes: s.nodes.len(),
            finalize_received: s.manifest.as_ref().map(|m| m.finalize_received),
            start_ms,
            end_ms,
            contract_version: s.manifest.as_ref().and_then(|m| m.contract_version.clone()),
            absent: absent_values(run_fields(s.manifest.as_ref()).iter().map(|(f, a)| (*f, a))),
        }
    }
}

impl NodeRow {
    fn new(n: &Node) -> Self {
        NodeRow {
            label: n.label.clone(),
            role: n.role.clone(),
            id: n.id.clone(),
            listed: n.listed,
            snapshots: n.snapshots,
            events: n.events,
            finalize: n.finalize,
        }
    }
}

impl HostRow {
    /// A node's row from the host fields of its latest boot record, if it has one.
    fn new((node, fields): (String, Option<[Said; 9]>)) -> Self {
        let boot_record = fields.is_some();
        let absent = fields
            .iter()
            .flatten()
            .zip(HOST_FIELDS)
            .filter_map(|(v, name)| v.as_ref().err().map(|a| AbsentValue::new(name, a)))
            .collect();
        let [
            rental,
            ip,
            datacenter,
            country,
            container,
            hostname,
            relay,
            iroh,
            git,
        ] = fields.map_or_else(Default::default, |f| f.map(Result::ok));
        HostRow {
            absent,
            node,
            boot_record,
            rental,
            ip,
            datacenter,
            country,
            container,
            hostname,
            relay,
            iroh_version: iroh,
            git_sha: git,
        }
    }
}

impl FirstDeadRow {
    fn new(d: &FirstDead) -> Self {
        FirstDeadRow {
            observer: d.observer.clone(),
            peer: d.peer.clone(),
            wall_ms: d.wall_ms,
            reason: d.reason.clone(),
            observer_conn_type: d.observer_conn.clone(),
            peer_conn_type: d.peer_conn.clone(),
            observer_probe_ok: d.observer_probe_ok,
            peer_probe_ok: d.peer_probe_ok,
            absent: absent_values(d.absent.iter().map(|(f, a)| (*f, a))),
        }
    }
}

impl RelayTotalsRow {
    /// A relay's row; its counters are null when it could not count its sessions.
    fn new(t: &RelayTotals) -> Self {
        RelayTotalsRow {
            relay: t.relay.clone(),
            counted: t.counted,
            active: t.counted.then_some(t.active),
            opens: t.counted.then_some(t.opens),
            closes: t.counted.then_some(t.closes),
            bytes_rx: t.counted.then_some(t.bytes_rx),
            bytes_tx: t.counted.then_some(t.bytes_tx),
            closes_by_reason: t
                .by_reason
                .iter()
                .map(|(reason, count)| ReasonCount {
                    reason: reason.clone(),
                    count: *count,
                })
                .collect(),
        }
    }
}

impl RelaySessionRow {
    fn new(c: &RelayClose) -> Self {
        RelaySessionRow {
            relay: c.relay.clone(),
            peer: c.peer.clone(),
            initiator: c.initiator.clone(),
            reason: c.reason.clone(),
            duration_ms: c.duration_ms,
            bytes_in: c.bytes_in,
            bytes_out: c.bytes_out,
            closed_at_ms: c.closed_at_ms,
            node_last_failure_reason: c.node_last_failure_reason.clone(),
            node_last_failure_from: c.node_last_failure_from.clone(),
        }
    }
}

impl ProbeOutcomeRow {
    fn new(p: &ProbeRow) -> Self {
        ProbeOutcomeRow {
            node: p.node.clone(),
            kind: p.kind.clone(),
            target: p.target.clone(),
            outcome: p.outcome.clone(),
            rtt_ms: p.rtt_ms,
            successes: p.successes,
            attempts: p.attempts,
        }
    }
}

impl ProbeRttRow {
    fn new(((observer, target), p): (&(String, String), &RttPair)) -> Self {
        ProbeRttRow {
            observer: observer.clone(),
            target: target.clone(),
            probes: p.probes,
            acked: p.acked,
            timed_out: p.timed_out,
            pending: p.probes - p.acked - p.timed_out,
            median_ms: p.rtts.percentile(50),
            p95_ms: p.rtts.percentile(95),
            p99_ms: p.rtts.percentile(99),
            budget: p.budget.clone(),
        }
    }
}

impl ProbeRttBucketRow {
    fn new((observer, target): &(String, String), bucket_s: u64, x: &RttBucket) -> Self {
        ProbeRttBucketRow {
            observer: observer.clone(),
            target: target.clone(),
            bucket_s,
            probes: x.probes,
            acked: x.acked,
            timed_out: x.timed_out,
            pending: x.pending,
            median_ms: x.rtts.percentile(50),
            p95_ms: x.rtts.percentile(95),
            p99_ms: x.rtts.percentile(99),
        }
    }
}

impl KernelDropRow {
    /// A counter's row; a delta past `i64` is `i64::MAX`.
    fn new((node, counter, delta): &(String, String, i128)) -> Self {
        KernelDropRow {
            node: node.clone(),
            counter: counter.clone(),
            delta: i64::try_from(*delta).unwrap_or(i64::MAX),
        }
    }
}

impl GossipRow {
    fn new(((node, kind), g): (&(String, String), &Gossip)) -> Self {
        GossipRow {
            node: node.clone(),
            kind: kind.clone(),
            count: g.count,
            bytes: g.bytes,
            items: g.items,
        }
    }
}

impl Bandwidth {
    fn new(s: &Summary) -> Self {
        Bandwidth {
            by_kind: s
                .bandwidth
                .iter()
                .map(|((node, dir, kind), t)| BandwidthKindRow {
                    node: node.clone(),
                    direction: dir.as_str(),
                    kind: kind.clone(),
                    count: t.count,
                    bytes: t.bytes,
                })
                .collect(),
            by_peer: s
                .bandwidth_peers
                .iter()
                .map(|((node, peer), t)| BandwidthPeerRow {
                    node: node.clone(),
                    peer: peer.clone(),
                    sent: t.sent.count,
                    sent_bytes: t.sent.bytes,
                    received: t.received.count,
                    received_bytes: t.received.bytes,
                })
                .collect(),
        }
    }
}

impl InferenceResponses {
    fn new(s: &Summary) -> Self {
        InferenceResponses {
            total: s.inference_total,
            listed: s
                .inference
                .iter()
                .map(|i| InferenceRow {
                    sender: i.sender.clone(),
                    target: i.target.clone(),
                    request_id: i.request_id.clone(),
                    bytes: i.bytes,
                    outcome: i.outcome.clone(),
                    wall_ms: i.wall_ms,
                })
                .collect(),
        }
    }
}

impl DialRow {
    fn new((peer, d): (&String, &Dials)) -> Self {
        DialRow {
            peer: peer.clone(),
            started: d.started,
            succeeded: d.succeeded,
            failed: d.failed,
            in_flight: d.started as i64 - d.succeeded as i64 - d.failed as i64,
            last_outcome: d.last.as_ref().map(|(t, _)| t.clone()),
            last_outcome_ms: d.last.as_ref().map(|(_, at)| *at),
        }
    }
}

impl SubprocessOutputRow {
    fn new(r: &SubprocessRow) -> Self {
        SubprocessOutputRow {
            node: r.node.clone(),
            label: r.label.clone(),
            bucket: r.bucket.as_str(),
            detail: r.detail.clone(),
        }
    }
}

impl AbsentRow {
    fn new(a: &Absence) -> Self {
        AbsentRow {
            section: a.section,
            why: a.why.clone(),
        }
    }
}

impl Validation {
    /// The counts, the first 20 located problems and the first quarantined bodies.
    fn new(s: &Summary) -> Self {
        Validation {
            records: s.records,
            problems: s.problem_total(),
            by_kind: s.problem_counts.clone(),
            first: s.problems.iter().take(20).map(ProblemRow::new).collect(),
            quarantined: s.quarantined_total,
            quarantined_bodies: s.quarantined.iter().map(QuarantinedRow::new).collect(),
        }
    }
}

impl ProblemRow {
    fn new(p: &Problem) -> Self {
        ProblemRow {
            kind: p.kind.as_str(),
            file: p.location.file.clone(),
            record: p.location.record,
            pointer: p.location.pointer.clone(),
            message: p.message.clone(),
        }
    }
}

impl QuarantinedRow {
    fn new(q: &Quarantined) -> Self {
        QuarantinedRow {
            node: q.node.clone(),
            file: q.location.clone(),
            why: q.why.clone(),
        }
    }
}

impl Unknown {
    fn new(s: &Summary) -> Self {
        Unknown {
            event_types: s.unknown_event_types.clone(),
            fields: s.unknown_fields.clone(),
        }
    }
}
