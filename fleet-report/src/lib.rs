//! The fleet report's output (`diagwire fleet DATASET`): what the report holds, as types — the
//! JSON `--format json` prints and the source of `schemas/tools/fleet.schema.json` — and its two
//! renderings, Markdown for a terminal ([`markdown`]) and one self-contained HTML page with inline
//! SVG plots ([`page`]). The numbers come from SQL over a fleet dataset (`diagwire-fleet`'s
//! `report`); this crate only shapes and prints them, so it builds without DataFusion (the CLI writes
//! the report's schema in every build) and draws with the summary's escaping, SVG writer and page
//! style.

use schemars::JsonSchema;
use serde::Serialize;

mod page;
mod render;

pub use page::page;
pub use render::{markdown, sections};

/// The version of this JSON shape (a semantic version, bumped by the contract's rules: a new
/// optional key is minor, a removed or retyped key is major).
pub const FORMAT_VERSION: &str = "1.1.0";

/// `diagwire fleet --format json`: the fleet report of a dataset.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct FleetReport {
    /// The version of this JSON shape.
    #[schemars(extend("const" = FORMAT_VERSION))]
    pub format_version: &'static str,
    /// The runs in the dataset.
    pub runs: u64,
    /// Per UTC day of a run's earliest record and writer kind: runs and their nodes.
    pub runs_over_time: Vec<DayRow>,
    /// Fault events (`node_faulted`, `run_faulted`, `fault_detected`) per type, reason and
    /// component.
    pub faults: Vec<FaultRow>,
    /// Dials to the nodes of each hosting provider, datacenter and country (the dialled node's
    /// boot identity), with how many failed.
    pub dial_failures: Vec<DialFailureRow>,
    /// Relay session closes per initiator (deprecated spellings folded into their canonical
    /// side) and reason.
    pub relay_closes: Vec<RelayCloseRow>,
    /// Acknowledged SWIM probe RTTs per region pair (the observer's and the target's country).
    pub probe_rtt_regions: Vec<RegionRttRow>,
    /// Subprocesses per bucket (`never_spawned`, `exited`, `stuck`, `healthy`).
    pub subprocess_buckets: Vec<SubprocessBucketRow>,
    /// Per contract version and writer: runs, and the first and last day seen.
    pub writers: Vec<WriterRow>,
    /// Bodies the collector quarantined at ingest, per kind of post (since 1.1.0).
    #[serde(default)]
    pub quarantined: Vec<QuarantineRow>,
}

/// Runs of one day and writer kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DayRow {
    /// The UTC date (`YYYY-MM-DD`) of the runs' earliest records (the dataset's partition).
    pub day: String,
    /// The manifest's writer kind (`collector`, `simulator`, `node`, …); null when the manifest
    /// names no writer (writers before contract 1.1.0, or no manifest).
    pub writer_kind: Option<String>,
    /// Runs.
    pub runs: u64,
    /// Nodes of those runs with a boot record.
    pub nodes: u64,
}

/// Fault events of one type, reason and component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct FaultRow {
    /// The event type: `node_faulted`, `run_faulted` or `fault_detected`.
    pub event_type: String,
    /// The stable reason.
    pub reason: Option<String>,
    /// The component that detected it.
    pub component: Option<String>,
    /// Events.
    pub events: u64,
    /// Runs with at least one.
    pub runs: u64,
}

/// Which part of a node's boot identity a dial row groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DialDimension {
    /// `host_provider`.
    Provider,
    /// `datacenter_id`.
    Datacenter,
    /// `host_country`.
    Country,
}

impl DialDimension {
    /// Its name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            DialDimension::Provider => "provider",
            DialDimension::Datacenter => "datacenter",
            DialDimension::Country => "country",
        }
    }
}

/// The dials to the nodes of one provider, datacenter or country.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct DialFailureRow {
    /// What the row groups by.
    pub by: DialDimension,
    /// The provider, datacenter or country; null when the dialled nodes' boot records do not
    /// report it (a peer without a directory in its run has no boot record).
    pub value: Option<String>,
    /// Runs.
    pub runs: u64,
    /// Dialled peers (per run).
    pub peers: u64,
    /// `DialStarted` events.
    pub started: u64,
    /// `DialOutcome` events that are `Success`.
    pub succeeded: u64,
    /// Other `DialOutcome` events.
    pub failed: u64,
    /// `failed / (succeeded + failed)`; null when no dial had an outcome.
    pub failure_rate: Option<f64>,
}

/// Relay session closes of one initiator and reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RelayCloseRow {
    /// The side that ended the sessions (`remote` read as `peer`, `idle_timeout` as `relay`).
    pub initiator: String,
    /// The reason the relay gave.
    pub reason: Option<String>,
    /// Closes.
    pub closes: u64,
    /// Runs with at least one.
    pub runs: u64,
}

/// Probe RTTs from the nodes of one region to those of another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RegionRttRow {
    /// The observer's country (`host_country` of its boot record); null when not reported.
    pub from_region: Option<String>,
    /// The target's country; null when not reported (or the target has no boot record).
    pub to_region: Option<String>,
    /// Runs.
    pub runs: u64,
    /// Acknowledged probes with an RTT.
    pub samples: u64,
    /// Median RTT (nearest rank), milliseconds.
    pub p50_ms: i64,
    /// 95th percentile RTT, milliseconds.
    pub p95_ms: i64,
    /// 99th percentile RTT, milliseconds.
    pub p99_ms: i64,
}

/// Subprocesses in one bucket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SubprocessBucketRow {
    /// The bucket: `never_spawned` (a stage with none; one row per stage), `exited`, `stuck`,
    /// `healthy`.
    pub bucket: String,
    /// Subprocesses (stages, for `never_spawned`).
    pub subprocesses: u64,
    /// Runs with at least one.
    pub runs: u64,
}

/// The bodies the collector quarantined at ingest that were posted as one kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct QuarantineRow {
    /// The route's kind the bodies were posted to (`boot`, `events`, …, or an unknown kind's
    /// name); null when neither a `.why.json` nor the body's name says.
    pub route: Option<String>,
    /// Bodies (a reason without its body counts).
    pub bodies: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Nodes of runs with at least one.
    pub nodes: u64,
    /// Runs with at least one.
    pub runs: u64,
}

/// The runs of one contract version and writer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct WriterRow {
    /// The contract version the manifest declares; null for writers before 1.1.0 (read as
    /// 1.0.0).
    pub contract_version: Option<String>,
    /// The writer's kind; null when the manifest names no writer.
    pub writer_kind: Option<String>,
    /// The writer's name.
    pub writer_name: Option<String>,
    /// The writer's own version.
    pub writer_version: Option<String>,
    /// Runs.
    pub runs: u64,
    /// The UTC date of the earliest of those runs.
    pub first_seen: String,
    /// The UTC date of the latest.
    pub last_seen: String,
}
