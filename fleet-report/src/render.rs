//! The fleet report's sections as plain tables of text, shared by the Markdown and the HTML page,
//! and the Markdown itself: every cell from the dataset passes through the terminal escaping
//! ([`diagwire_summary::render::clean`]) on its way into Markdown.

use std::fmt::Write;

use crate::FleetReport;
use diagwire_summary::render::clean;

/// One section: a heading, a sentence on what it counts, and a table, or what the dataset lacks.
#[derive(Debug, Clone)]
pub struct Section {
    /// The HTML anchor.
    pub id: &'static str,
    /// The heading.
    pub title: &'static str,
    /// What the rows count.
    pub about: &'static str,
    /// The column headings.
    pub columns: &'static [&'static str],
    /// The rows, as unescaped text.
    pub rows: Vec<Vec<String>>,
    /// Said instead of the table when there is no row.
    pub empty: &'static str,
}

fn opt(v: &Option<String>, absent: &str) -> String {
    v.clone().unwrap_or_else(|| absent.to_owned())
}

/// A failure rate as a percentage with one decimal.
pub(crate) fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "-".to_owned(), |r| format!("{:.1}%", r * 100.0))
}

/// The report's sections, in order.
pub fn sections(r: &FleetReport) -> Vec<Section> {
    vec![
        Section {
            id: "runs-over-time",
            title: "Runs over time",
            about: "Per UTC day of a run's earliest record and the writer its manifest names: runs, and the nodes of those runs with a boot record.",
            columns: &["day", "writer", "runs", "nodes"],
            rows: r
                .runs_over_time
                .iter()
                .map(|d| {
                    vec![
                        d.day.clone(),
                        opt(&d.writer_kind, "not named (writer before 1.1.0)"),
                        d.runs.to_string(),
                        d.nodes.to_string(),
                    ]
                })
                .collect(),
            empty: "The dataset holds no run.",
        },
        Section {
            id: "fault-reasons",
            title: "Fault reasons",
            about: "Fault events (`node_faulted`, `run_faulted`, `fault_detected`) per type, reason and detecting component.",
            columns: &["event", "reason", "component", "events", "runs"],
            rows: r
                .faults
                .iter()
                .map(|f| {
                    vec![
                        f.event_type.clone(),
                        opt(&f.reason, "-"),
                        opt(&f.component, "-"),
                        f.events.to_string(),
                        f.runs.to_string(),
                    ]
                })
                .collect(),
            empty: "No fault event in the dataset: no run wrote `node_faulted`, `run_faulted` or `fault_detected` (writers before contract 1.1.0 have none of them).",
        },
        Section {
            id: "dial-failure-rate",
            title: "Dial failure rate by provider, datacenter and country",
            about: "Dials to the nodes of each provider, datacenter and country (the dialled node's boot identity); the rate is failed outcomes over all outcomes.",
            columns: &[
                "by",
                "value",
                "runs",
                "peers",
                "started",
                "succeeded",
                "failed",
                "failure rate",
            ],
            rows: r
                .dial_failures
                .iter()
                .map(|d| {
                    vec![
                        d.by.as_str().to_owned(),
                        opt(&d.value, "not reported"),
                        d.runs.to_string(),
                        d.peers.to_string(),
                        d.started.to_string(),
                        d.succeeded.to_string(),
                        d.failed.to_string(),
                        percent(d.failure_rate),
                    ]
                })
                .collect(),
            empty: "No dial in the dataset: no run wrote `DialStarted` or `DialOutcome`.",
        },
        Section {
            id: "relay-closes",
            title: "Relay closes by initiator and reason",
            about: "Relay sessions closed, per the side that ended them (`remote` read as `peer`, `idle_timeout` as `relay`) and the relay's reason.",
            columns: &["initiator", "reason", "closes", "runs"],
            rows: r
                .relay_closes
                .iter()
                .map(|c| {
                    vec![
                        c.initiator.clone(),
                        match c.reason.as_deref() {
                            Some("") => "(empty)".to_owned(),
                            _ => opt(&c.reason, "-"),
                        },
                        c.closes.to_string(),
                        c.runs.to_string(),
                    ]
                })
                .collect(),
            empty: "No relay session closed in the dataset: no relay wrote `RelaySessionClosed`.",
        },
        Section {
            id: "probe-rtt-by-region",
            title: "Probe RTT by region pair",
            about: "Acknowledged SWIM probes from the nodes of one country (the boot record's `host_country`) to those of another: nearest-rank quantiles in milliseconds.",
            columns: &[
                "from", "to", "runs", "samples", "p50 ms", "p95 ms", "p99 ms",
            ],
            rows: r
                .probe_rtt_regions
                .iter()
                .map(|p| {
                    vec![
                        opt(&p.from_region, "not reported"),
                        opt(&p.to_region, "not reported"),
                        p.runs.to_string(),
                        p.samples.to_string(),
                        p.p50_ms.to_string(),
                        p.p95_ms.to_string(),
                        p.p99_ms.to_string(),
                    ]
                })
                .collect(),
            empty: "No acknowledged SWIM probe with an RTT in the dataset.",
        },
        Section {
            id: "subprocess-buckets",
            title: "Subprocess buckets",
            about: "Subprocesses from their events: exited, healthy (the node wrote `worker_ready`), stuck (neither); a stage with none is one `never_spawned`.",
            columns: &["bucket", "subprocesses", "runs"],
            rows: r
                .subprocess_buckets
                .iter()
                .map(|b| {
                    vec![
                        b.bucket.clone(),
                        b.subprocesses.to_string(),
                        b.runs.to_string(),
                    ]
                })
                .collect(),
            empty: "No subprocess event and no stage in the dataset.",
        },
        Section {
            id: "contract-versions-and-writers",
            title: "Contract versions and writers seen",
            about: "Per contract version the manifest declares and the writer it names: runs, and the first and last UTC day seen.",
            columns: &[
                "contract",
                "writer",
                "name",
                "version",
                "runs",
                "first seen",
                "last seen",
            ],
            rows: r
                .writers
                .iter()
                .map(|w| {
                    vec![
                        opt(&w.contract_version, "not declared (read as 1.0.0)"),
                        opt(&w.writer_kind, "not named"),
                        opt(&w.writer_name, "-"),
                        opt(&w.writer_version, "-"),
                        w.runs.to_string(),
                        w.first_seen.clone(),
                        w.last_seen.clone(),
                    ]
                })
                .collect(),
            empty: "The dataset holds no run.",
        },
        Section {
            id: "quarantined-at-ingest",
            title: "Quarantined at ingest",
            about: "Bodies the collector kept aside because they were not records of their kind, per kind of post: bodies, bytes, and the nodes and runs they came from (per run and node: the `quarantined_per_node` view; why: the `quarantine` table).",
            columns: &["route", "bodies", "bytes", "nodes", "runs"],
            rows: r
                .quarantined
                .iter()
                .map(|q| {
                    vec![
                        opt(&q.route, "not said"),
                        q.bodies.to_string(),
                        q.bytes.to_string(),
                        q.nodes.to_string(),
                        q.runs.to_string(),
                    ]
                })
                .collect(),
            empty: "No body was quarantined at ingest in the dataset.",
        },
    ]
}

/// The report as Markdown, safe for a terminal.
pub fn markdown(r: &FleetReport) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Fleet report\n");
    let _ = writeln!(o, "{} run(s) in the dataset.", r.runs);
    for s in sections(r) {
        let _ = writeln!(o, "\n## {}\n", s.title);
        if s.rows.is_empty() {
            let _ = writeln!(o, "{}", s.empty);
            continue;
        }
        let _ = writeln!(o, "{}\n", s.about);
        let _ = writeln!(o, "| {} |", s.columns.join(" | "));
        let _ = writeln!(o, "|{}", "---|".repeat(s.columns.len()));
        for row in &s.rows {
            let cells: Vec<String> = row.iter().map(|c| clean(c)).collect();
            let _ = writeln!(o, "| {} |", cells.join(" | "));
        }
    }
    o
}
