//! The summary as Markdown (for a terminal or a ticket) and as JSON (the shape documented in
//! `docs/summary.md`). Every string that came from the bundle is escaped for the terminal in
//! Markdown; JSON keeps it exact. The Markdown is `SECTIONS` walked in order: each heading and
//! the function that writes its section, on the shared `table` and `row` helpers.

use std::fmt::Write;

use diagwire_runtime::short_hex;
use diagwire_runtime::text::json_pretty;
use serde_json::Value;

use crate::absence::{Absent, HOST_FIELDS, run_fields};
use crate::model::{MAX_LISTED, RelayTotals, Summary, hosts, run_span};
use crate::output::SummaryOutput;
use diagwire::problem::printable;
use diagwire::v1::Manifest;

/// A string from the bundle, safe to print: control characters become `\u{…}` escapes and table
/// separators are escaped.
pub fn clean(s: &str) -> String {
    diagwire::problem::printable(s).replace('|', "\\|")
}

/// A value the record spells (such as iroh's connection type `None`), in code quotes, or why it is
/// absent.
fn code(v: Option<&String>, absent: Option<&Absent>) -> String {
    match (v, absent) {
        (Some(x), _) => format!("`{}`", clean(x)),
        (None, Some(a)) => clean(&a.words()),
        (None, None) => "not reported".to_owned(),
    }
}

/// Whether a probe was ok (`yes`/`no`), or why that is not known.
fn ok_words(v: Option<bool>, absent: Option<&Absent>) -> String {
    match (v, absent) {
        (Some(true), _) => "yes".into(),
        (Some(false), _) => "no".into(),
        (None, Some(a)) => format!("not known: {}", clean(&a.words())),
        (None, None) => "not known".into(),
    }
}

/// A node's host fields: `name value` for each present one; absent ones say why, and consecutive
/// fields absent for the same reason share it (`ip, dc, country not applicable (…)`).
fn host_line(fields: &[Result<String, Absent>; 9]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < fields.len() {
        match &fields[i] {
            Ok(v) => {
                parts.push(format!("{} {}", HOST_FIELDS[i], clean(v)));
                i += 1;
            }
            Err(a) => {
                let mut names = vec![HOST_FIELDS[i]];
                let mut j = i + 1;
                while j < fields.len() && fields[j].as_ref().err() == Some(a) {
                    names.push(HOST_FIELDS[j]);
                    j += 1;
                }
                parts.push(format!("{} {}", names.join(", "), clean(&a.words())));
                i = j;
            }
        }
    }
    parts.join(", ")
}

fn ms(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_owned(), |x| x.to_string())
}

/// A name from the bundle in code quotes, escaped.
struct Code<'a>(&'a str);

impl std::fmt::Display for Code<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`", clean(self.0))
    }
}

/// A table's heading row and the row under it that makes it a table.
fn table(o: &mut String, columns: &[&str]) {
    for c in columns {
        let _ = write!(o, "| {c} ");
    }
    o.push_str("|\n");
    for _ in columns {
        o.push_str("|---");
    }
    o.push_str("|\n");
}

/// One row of a table.
fn row(o: &mut String, cells: &[&dyn std::fmt::Display]) {
    for c in cells {
        let _ = write!(o, "| {c} ");
    }
    o.push_str("|\n");
}

/// Why a section has no data, when the summary says.
fn absent_why<'a>(s: &'a Summary, section: &str) -> Option<std::borrow::Cow<'a, str>> {
    s.absent
        .iter()
        .find(|a| a.section == section)
        .map(|a| printable(&a.why))
}

/// What follows a section's heading.
type Body = fn(&Summary, &mut String);

/// The sections of the Markdown summary, in order: each one's heading and what writes the rest.
const SECTIONS: [(&str, Body); 17] = [
    ("Run", run),
    ("Nodes", node_table),
    ("Hosts", host_list),
    ("First peer to go Dead", first_dead),
    ("Relay sessions", relay_sessions),
    ("Probe outcomes", probe_outcomes),
    ("Probe RTT distribution", probe_rtt),
    ("Kernel network drops", kernel_drops),
    ("Gossip receipts (by node, by kind)", gossip_receipts),
    ("Inference responses", inference_responses),
    ("Bandwidth (by node, by kind and peer)", bandwidth),
    ("Per-peer dials", dials),
    ("Event totals (by type)", event_totals),
    ("Subprocesses", subprocesses),
    ("Validation", validation),
    ("Absence", absence),
    ("Unknown to this reader", unknown),
];

/// The Markdown summary.
pub fn markdown(s: &Summary) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Run {}\n", clean(&s.run_id));
    for (heading, body) in SECTIONS {
        let _ = write!(o, "## {heading}\n\n");
        body(s, &mut o);
    }
    o
}

/// The run as a whole: its nodes, whether it was finalized, its span on the collector's clock and
/// what wrote it.
fn run(s: &Summary, o: &mut String) {
    let (start, end) = run_span(s);
    let _ = writeln!(
        o,
        "- {} node(s); finalize received: {}",
        s.nodes.len(),
        match s.manifest.as_ref().map(|m| m.finalize_received) {
            Some(true) => "yes",
            Some(false) => "no",
            None => "not known (the bundle has no manifest)",
        }
    );
    let _ = writeln!(
        o,
        "- collector clock: {} → {}{}",
        ms(start),
        ms(end),
        match (start, end) {
            (Some(a), Some(b)) => format!(" ({:.1} s)", (b.saturating_sub(a)) as f64 / 1000.0),
            _ => String::new(),
        }
    );
    if let Some(m) = &s.manifest {
        writer_lines(m, o);
    }
    o.push('\n');
}

/// The contract a manifest was written against and its writer: one line when it names both, else
/// a line each, saying why a value is absent.
fn writer_lines(m: &Manifest, o: &mut String) {
    let absent = run_fields(Some(m));
    let why = |field: &str| {
        absent
            .iter()
            .find(|(f, _)| *f == field)
            .map_or_else(|| "not reported".to_owned(), |(_, a)| clean(&a.words()))
    };
    let writer = m.writer.as_ref().map(|w| {
        format!(
            "{} `{}` {}",
            clean(w.kind.as_str()),
            clean(&w.name),
            clean(&w.version)
        )
    });
    match (&m.contract_version, writer) {
        (Some(v), Some(w)) => {
            let _ = writeln!(o, "- written against contract {} by {w}", clean(v));
        }
        (v, w) => {
            let _ = writeln!(
                o,
                "- contract version: {}",
                v.as_ref()
                    .map_or_else(|| why("contract_version"), |v| clean(v))
            );
            let _ = writeln!(o, "- writer: {}", w.unwrap_or_else(|| why("writer")));
        }
    }
}

/// A row per node: its role, id and what was read of it.
fn node_table(s: &Summary, o: &mut String) {
    table(
        o,
        &["label", "role", "id", "snapshots", "events", "finalize"],
    );
    for n in s.nodes.values() {
        let unlisted = if n.listed || s.manifest.is_none() {
            ""
        } else {
            " (not in the manifest)"
        };
        let role = n.role.as_ref().map_or_else(
            || "not reported (no boot record, snapshot or manifest entry names it)".to_owned(),
            |r| clean(r),
        );
        row(
            o,
            &[
                &format_args!("{}{unlisted}", Code(&n.label)),
                &role,
                &clean(short_hex(&n.id)),
                &n.snapshots,
                &n.events,
                &if n.finalize { "yes" } else { "no" },
            ],
        );
    }
    o.push('\n');
}

/// A line per node: its host fields, from its latest boot record.
fn host_list(s: &Summary, o: &mut String) {
    for (label, fields) in hosts(s) {
        match fields {
            None => {
                let _ = writeln!(o, "- {}: boot record absent", Code(&label));
            }
            Some(f) => {
                let _ = writeln!(o, "- {}: {}", Code(&label), host_line(&f));
            }
        }
    }
    o.push('\n');
}

/// The earliest transition of any peer to Dead, with both sides' connection types and probes.
fn first_dead(s: &Summary, o: &mut String) {
    let Some(d) = &s.first_dead else {
        o.push_str("No peer went Dead.\n\n");
        return;
    };
    let (observer, peer) = (Code(&d.observer), Code(&d.peer));
    let _ = writeln!(
        o,
        "{observer} saw {peer} go Dead at {} ({}). conn_type from the nearest snapshots: {observer} → {peer} {}, {peer} → {observer} {}. A probe was ok then on {observer}'s side: {}; on the peer {peer}'s side: {}.\n",
        d.wall_ms,
        clean(&d.reason),
        code(d.observer_conn.as_ref(), d.absent.get("observer_conn_type")),
        code(d.peer_conn.as_ref(), d.absent.get("peer_conn_type")),
        ok_words(d.observer_probe_ok, d.absent.get("observer_probe_ok")),
        ok_words(d.peer_probe_ok, d.absent.get("peer_probe_ok")),
    );
}

/// Each relay's totals, then the latest closed session per (relay, peer).
fn relay_sessions(s: &Summary, o: &mut String) {
    if let Some(why) = absent_why(s, "relay sessions") {
        let _ = writeln!(o, "Not observed: {why}.\n");
    }
    for t in &s.relay_totals {
        relay_totals(t, o);
    }
    if !s.relay_closes.is_empty() {
        relay_closes(s, o);
    }
}

/// A relay's latest totals in a sentence, or that it could not count its sessions.
fn relay_totals(t: &RelayTotals, o: &mut String) {
    let reasons: Vec<String> = t
        .by_reason
        .iter()
        .map(|(r, n)| format!("{} {n}", clean(r)))
        .collect();
    let reasons = if reasons.is_empty() {
        "none".into()
    } else {
        reasons.join(", ")
    };
    if t.counted {
        let _ = writeln!(
            o,
            "{}: {} active, {} opened, {} closed, {} bytes in, {} bytes out; closes by reason: {reasons}.\n",
            Code(&t.relay),
            t.active,
            t.opens,
            t.closes,
            t.bytes_rx,
            t.bytes_tx,
        );
    } else {
        let _ = writeln!(
            o,
            "{}: could not count its sessions (its session counters are placeholders, not an idle relay); closes by reason: {reasons}.\n",
            Code(&t.relay),
        );
    }
}

/// The latest closed session per (relay, peer), with the failure another node's cache holds.
fn relay_closes(s: &Summary, o: &mut String) {
    table(
        o,
        &[
            "relay",
            "peer",
            "initiator",
            "reason",
            "duration ms",
            "bytes in",
            "bytes out",
            "node-side last failure",
            "from the cache of",
        ],
    );
    for c in &s.relay_closes {
        let last_failure = c.node_last_failure_reason.as_ref().map_or_else(
            || "none: no other node's connection cache holds a failure for the peer".to_owned(),
            |r| clean(r),
        );
        let from = c
            .node_last_failure_from
            .as_ref()
            .map_or_else(|| "-".to_owned(), |n| Code(n).to_string());
        row(
            o,
            &[
                &Code(&c.relay),
                &Code(&c.peer),
                &clean(&c.initiator),
                &clean(&c.reason),
                &c.duration_ms,
                &c.bytes_in,
                &c.bytes_out,
                &last_failure,
                &from,
            ],
        );
    }
    o.push('\n');
}

/// The probes of each node's latest snapshot with a probe block.
fn probe_outcomes(s: &Summary, o: &mut String) {
    if s.probes.is_empty() {
        o.push_str("No node posted a probe block.\n\n");
        return;
    }
    table(
        o,
        &["node", "kind", "target", "outcome", "rtt ms", "ok/attempts"],
    );
    for p in &s.probes {
        row(
            o,
            &[
                &Code(&p.node),
                &clean(&p.kind),
                &clean(&p.target),
                &clean(&p.outcome),
                &ms(p.rtt_ms),
                &format_args!("{}/{}", p.successes, p.attempts),
            ],
        );
    }
    o.push('\n');
}

/// Per observer → target, the probe RTTs: in all, then per 5-second bucket of send time.
fn probe_rtt(s: &Summary, o: &mut String) {
    if s.rtt.is_empty() {
        let why = absent_why(s, "probe RTT distribution").unwrap_or("no SWIM probe events".into());
        let _ = writeln!(o, "No data: {why}.\n");
        return;
    }
    rtt_pairs(s, o);
    o.push_str("\nPer 5-second bucket of send time (epoch seconds):\n\n");
    rtt_buckets(s, o);
    o.push('\n');
}

/// A row per observer → target: its probes and the quantiles of their RTTs.
fn rtt_pairs(s: &Summary, o: &mut String) {
    table(
        o,
        &[
            "observer",
            "target",
            "probes",
            "acked",
            "timed out",
            "pending",
            "median ms",
            "p95 ms",
            "p99 ms",
            "budget",
        ],
    );
    for ((obs, target), p) in &s.rtt {
        let budget = p.budget.as_ref().map_or_else(
            || "not reported (no probe timed out; acknowledgements carry none)".to_owned(),
            |b| clean(b),
        );
        row(
            o,
            &[
                &Code(obs),
                &Code(target),
                &p.probes,
                &p.acked,
                &p.timed_out,
                &(p.probes - p.acked - p.timed_out),
                &ms(p.rtts.percentile(50)),
                &ms(p.rtts.percentile(95)),
                &ms(p.rtts.percentile(99)),
                &budget,
            ],
        );
    }
}

/// A row per observer → target and 5-second bucket of send time.
fn rtt_buckets(s: &Summary, o: &mut String) {
    table(
        o,
        &[
            "observer",
            "target",
            "bucket",
            "probes",
            "acked",
            "timed out",
            "pending",
            "median ms",
            "p95 ms",
            "p99 ms",
        ],
    );
    let buckets = s
        .rtt_buckets
        .iter()
        .flat_map(|(pair, v)| v.iter().map(move |(b, x)| (pair, b, x)));
    for ((obs, target), b, x) in buckets {
        row(
            o,
            &[
                &Code(obs),
                &Code(target),
                b,
                &x.probes,
                &x.acked,
                &x.timed_out,
                &x.pending,
                &ms(x.rtts.percentile(50)),
                &ms(x.rtts.percentile(95)),
                &ms(x.rtts.percentile(99)),
            ],
        );
    }
}

/// The kernel network counters that moved between a node's first and last host snapshot.
fn kernel_drops(s: &Summary, o: &mut String) {
    if s.drop_series.is_empty() {
        o.push_str("No node posted drop or error counters (see Absence).\n\n");
        return;
    }
    if s.kernel_drops.is_empty() {
        o.push_str(
            "No drop or error counter moved between a node's first and last host snapshot.\n\n",
        );
        return;
    }
    table(o, &["node", "counter", "delta"]);
    for (node, counter, delta) in &s.kernel_drops {
        row(o, &[&Code(node), &clean(counter), delta]);
    }
    o.push('\n');
}

/// Gossip receipts per (node, payload kind), then the nodes that received none of a kind.
fn gossip_receipts(s: &Summary, o: &mut String) {
    if s.gossip.is_empty() {
        o.push_str("No `GossipReceived` events.\n\n");
        return;
    }
    table(o, &["node", "kind", "count", "bytes", "items"]);
    for ((node, kind), g) in &s.gossip {
        row(
            o,
            &[&Code(node), &clean(kind), &g.count, &g.bytes, &g.items],
        );
    }
    o.push('\n');
    for line in gossip_gaps(s) {
        let _ = writeln!(o, "- {line}");
    }
    o.push('\n');
}

/// The first inference responses sent, and how many more there were.
fn inference_responses(s: &Summary, o: &mut String) {
    if s.inference.is_empty() {
        o.push_str("No `InferenceResponseSent` events.\n\n");
        return;
    }
    table(
        o,
        &["sender", "target", "request", "bytes", "outcome", "time"],
    );
    for i in &s.inference {
        row(
            o,
            &[
                &Code(&i.sender),
                &Code(&i.target),
                &clean(&i.request_id),
                &i.bytes,
                &clean(&i.outcome),
                &i.wall_ms,
            ],
        );
    }
    if s.inference_total > MAX_LISTED as u64 {
        let _ = writeln!(o, "\n… and {} more.", s.inference_total - MAX_LISTED as u64);
    }
    o.push('\n');
}

/// Messages and bytes by node, direction and kind, then by node and peer; one line when no
/// instrumented transport carried traffic.
fn bandwidth(s: &Summary, o: &mut String) {
    if s.bandwidth.is_empty() {
        o.push_str("No instrumented transport carried traffic: the bundle has no `MessageSent` or `MessageReceived` event.\n\n");
        return;
    }
    o.push_str("By kind:\n\n");
    table(o, &["node", "direction", "kind", "messages", "bytes"]);
    for ((node, dir, kind), t) in &s.bandwidth {
        row(
            o,
            &[&Code(node), &dir.as_str(), &clean(kind), &t.count, &t.bytes],
        );
    }
    o.push_str("\nBy peer:\n\n");
    table(
        o,
        &[
            "node",
            "peer",
            "sent",
            "sent bytes",
            "received",
            "received bytes",
        ],
    );
    for ((node, peer), t) in &s.bandwidth_peers {
        row(
            o,
            &[
                &Code(node),
                &Code(peer),
                &t.sent.count,
                &t.sent.bytes,
                &t.received.count,
                &t.received.bytes,
            ],
        );
    }
    o.push('\n');
}

/// Per target peer, the dials of every observer, and their total.
fn dials(s: &Summary, o: &mut String) {
    if s.dials.is_empty() {
        o.push_str("No dial events.\n\n");
        return;
    }
    table(
        o,
        &[
            "peer",
            "started",
            "succeeded",
            "failed",
            "in flight",
            "last outcome",
            "at",
        ],
    );
    let in_flight = |st: u64, su: u64, fa: u64| st as i64 - su as i64 - fa as i64;
    let (mut st, mut su, mut fa) = (0, 0, 0);
    for (peer, d) in &s.dials {
        st += d.started;
        su += d.succeeded;
        fa += d.failed;
        row(
            o,
            &[
                &Code(peer),
                &d.started,
                &d.succeeded,
                &d.failed,
                &in_flight(d.started, d.succeeded, d.failed),
                &d.last.as_ref().map_or("-".into(), |(t, _)| clean(t)),
                &d.last.as_ref().map_or("-".into(), |(_, at)| at.to_string()),
            ],
        );
    }
    let _ = writeln!(
        o,
        "| **total** | {st} | {su} | {fa} | {} | | |\n",
        in_flight(st, su, fa)
    );
}

/// The number of events per event type.
fn event_totals(s: &Summary, o: &mut String) {
    table(o, &["type", "count"]);
    for (t, n) in &s.event_totals {
        row(o, &[&clean(t), n]);
    }
    o.push('\n');
}

/// Per stage and subprocess, its bucket and what the bucket rests on.
fn subprocesses(s: &Summary, o: &mut String) {
    if s.subprocesses.is_empty() {
        o.push_str("No stage node and no subprocess in the run.\n\n");
        return;
    }
    table(o, &["node", "subprocess", "bucket", "evidence"]);
    for r in &s.subprocesses {
        row(
            o,
            &[
                &Code(&r.node),
                &clean(&r.label),
                &r.bucket.as_str(),
                &clean(&r.detail),
            ],
        );
    }
    o.push('\n');
}

/// What reading the bundle found wrong: counts by kind, the first problems, and the bodies the
/// collector quarantined.
fn validation(s: &Summary, o: &mut String) {
    let problems = s.problem_total();
    let _ = writeln!(o, "{} record(s) read, {problems} problem(s).", s.records);
    for (kind, n) in &s.problem_counts {
        let _ = writeln!(o, "- {kind}: {n}");
    }
    for p in s.problems.iter().take(5) {
        let _ = writeln!(o, "- {}", Code(&p.to_string()));
    }
    o.push('\n');
    if s.quarantined_total > 0 {
        quarantined(s, o);
    }
}

/// The bodies the collector kept aside at ingest, and how many more there were.
fn quarantined(s: &Summary, o: &mut String) {
    let _ = writeln!(
        o,
        "### Quarantined at ingest\n\n{} body(ies) the collector kept aside because they were not records of their kind (each one problem above):\n",
        s.quarantined_total
    );
    for q in &s.quarantined {
        let _ = writeln!(
            o,
            "- {} (node {}): {}",
            Code(&q.path),
            Code(&q.node),
            clean(&q.why)
        );
    }
    let listed = s.quarantined.len() as u64;
    if s.quarantined_total > listed {
        let _ = writeln!(o, "- … and {} more", s.quarantined_total - listed);
    }
    o.push('\n');
}

/// Per section, why it has no data.
fn absence(s: &Summary, o: &mut String) {
    if s.absent.is_empty() {
        o.push_str("Every section has data.\n\n");
        return;
    }
    for a in &s.absent {
        let _ = writeln!(o, "- {}: {}", printable(a.section), printable(&a.why));
    }
    o.push('\n');
}

/// The event types and fields the current contract does not know, with counts.
fn unknown(s: &Summary, o: &mut String) {
    if s.unknown_event_types.is_empty() && s.unknown_fields.is_empty() {
        o.push_str("Nothing: every event type and field is known to contract ");
        o.push_str(diagwire::CONTRACT_VERSION);
        o.push_str(".\n");
        return;
    }
    for (t, n) in &s.unknown_event_types {
        let _ = writeln!(o, "- event type {}: {n}", Code(t));
    }
    for (f, n) in &s.unknown_fields {
        let _ = writeln!(o, "- field {}: {n}", Code(f));
    }
}

/// Nodes that received no gossip of a kind other nodes received.
pub fn gossip_gaps(s: &Summary) -> Vec<String> {
    let kinds: std::collections::BTreeSet<&String> = s.gossip.keys().map(|(_, k)| k).collect();
    let mut out = Vec::new();
    for n in s.nodes.values() {
        // A relay server forwards traffic for the mesh but is not a member of it: it gossips
        // with no one, so its receiving none says nothing.
        if n.events == 0 || n.role.as_deref() == Some("relay") {
            continue;
        }
        for k in &kinds {
            if !s.gossip.contains_key(&(n.label.clone(), (*k).clone())) {
                out.push(format!(
                    "`{}` received no `{}` gossip from anyone.",
                    clean(&n.label),
                    clean(k)
                ));
            }
        }
    }
    out
}

/// The summary as JSON (`docs/summary.md` documents every key; [`SummaryOutput`] is its type and
/// the source of its JSON Schema). Keys are in sorted order, as a JSON value holds them.
pub fn json(s: &Summary) -> Value {
    serde_json::to_value(SummaryOutput::new(s))
        .expect("OK because the output types always serialize")
}

/// Writes [`json`] pretty-printed, and a newline: the bytes of
/// `serde_json::to_string_pretty(&json(s))` and `"\n"`, without holding the whole document as a
/// value. The rows of `probe_rtt_buckets`, the one part that grows with the run (a row per pair
/// and five seconds), are made and written one at a time.
pub fn write_json(s: &Summary, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    const KEY: &str = "\n  \"probe_rtt_buckets\": ";
    let mut head = serde_json::to_value(SummaryOutput::build(s, false))
        .expect("OK because the output types always serialize");
    head["probe_rtt_buckets"] = Value::Null;
    let text = json_pretty(&head).expect("OK because a value always serializes");
    // A top-level key is the only text indented by two spaces after a line break (strings from
    // the bundle are escaped, so they hold no line break).
    let placeholder = format!("{KEY}null");
    let Some((before, after)) = text.split_once(&placeholder) else {
        let whole = json_pretty(&json(s)).expect("OK because values serialize");
        return out
            .write_all(whole.as_bytes())
            .and_then(|_| out.write_all(b"\n"));
    };
    out.write_all(before.as_bytes())?;
    out.write_all(KEY.as_bytes())?;
    let mut rows = crate::output::bucket_rows(s).peekable();
    if rows.peek().is_none() {
        out.write_all(b"[]")?;
    } else {
        out.write_all(b"[")?;
        for (i, row) in rows.enumerate() {
            // Each row as a value, for its keys' order, indented as the array's element.
            let row = serde_json::to_value(row).expect("OK because a row always serializes");
            let row = json_pretty(&row).expect("OK because values serialize");
            out.write_all(if i == 0 { b"\n    " } else { b",\n    " })?;
            out.write_all(row.replace('\n', "\n    ").as_bytes())?;
        }
        out.write_all(b"\n  ]")?;
    }
    out.write_all(after.as_bytes())?;
    out.write_all(b"\n")
}
