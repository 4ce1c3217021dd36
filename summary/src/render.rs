//! The summary as Markdown (for a terminal or a ticket) and as JSON (the shape documented in
//! `docs/summary.md`). Every string that came from the bundle is escaped for the terminal in
//! Markdown; JSON keeps it exact.

use std::fmt::Write;

use diagwire_runtime::short_hex;
use diagwire_runtime::text::json_pretty;
use serde_json::Value;

use crate::absence::{Absent, HOST_FIELDS, run_fields};
use crate::model::{MAX_LISTED, Summary, hosts, run_span};
use crate::output::SummaryOutput;
use diagwire::problem::printable;

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

/// The Markdown summary.
pub fn markdown(s: &Summary) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Run {}\n", clean(&s.run_id));

    o.push_str("## Run\n\n");
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
    o.push('\n');

    o.push_str("## Nodes\n\n| label | role | id | snapshots | events | finalize |\n|---|---|---|---|---|---|\n");
    for n in s.nodes.values() {
        let _ = writeln!(
            o,
            "| `{}`{} | {} | {} | {} | {} | {} |",
            clean(&n.label),
            if n.listed || s.manifest.is_none() {
                ""
            } else {
                " (not in the manifest)"
            },
            n.role.as_ref().map_or_else(
                || "not reported (no boot record, snapshot or manifest entry names it)".to_owned(),
                |r| clean(r)
            ),
            clean(short_hex(&n.id)),
            n.snapshots,
            n.events,
            if n.finalize { "yes" } else { "no" }
        );
    }
    o.push('\n');

    o.push_str("## Hosts\n\n");
    for (label, fields) in hosts(s) {
        match fields {
            None => {
                let _ = writeln!(o, "- `{}`: boot record absent", clean(&label));
            }
            Some(f) => {
                let _ = writeln!(o, "- `{}`: {}", clean(&label), host_line(&f));
            }
        }
    }
    o.push('\n');

    o.push_str("## First peer to go Dead\n\n");
    match &s.first_dead {
        None => o.push_str("No peer went Dead.\n\n"),
        Some(d) => {
            let _ = writeln!(
                o,
                "`{}` saw `{}` go Dead at {} ({}). conn_type from the nearest snapshots: `{}` → `{}` {}, `{}` → `{}` {}. A probe was ok then on `{}`'s side: {}; on the peer `{}`'s side: {}.\n",
                clean(&d.observer),
                clean(&d.peer),
                d.wall_ms,
                clean(&d.reason),
                clean(&d.observer),
                clean(&d.peer),
                code(d.observer_conn.as_ref(), d.absent.get("observer_conn_type")),
                clean(&d.peer),
                clean(&d.observer),
                code(d.peer_conn.as_ref(), d.absent.get("peer_conn_type")),
                clean(&d.observer),
                ok_words(d.observer_probe_ok, d.absent.get("observer_probe_ok")),
                clean(&d.peer),
                ok_words(d.peer_probe_ok, d.absent.get("peer_probe_ok")),
            );
        }
    }

    o.push_str("## Relay sessions\n\n");
    let relay_absent = s.absent.iter().find(|a| a.section == "relay sessions");
    if let Some(a) = relay_absent {
        let _ = writeln!(o, "Not observed: {}.\n", printable(&a.why));
    }
    for t in &s.relay_totals {
        let reasons: Vec<String> = t
            .by_reason
            .iter()
            .map(|(r, n)| format!("{} {n}", clean(r)))
            .collect();
        if !t.counted {
            let _ = writeln!(
                o,
                "`{}`: could not count its sessions (its session counters are placeholders, not an idle relay); closes by reason: {}.\n",
                clean(&t.relay),
                if reasons.is_empty() {
                    "none".into()
                } else {
                    reasons.join(", ")
                }
            );
            continue;
        }
        let _ = writeln!(
            o,
            "`{}`: {} active, {} opened, {} closed, {} bytes in, {} bytes out; closes by reason: {}.\n",
            clean(&t.relay),
            t.active,
            t.opens,
            t.closes,
            t.bytes_rx,
            t.bytes_tx,
            if reasons.is_empty() {
                "none".into()
            } else {
                reasons.join(", ")
            }
        );
    }
    if !s.relay_closes.is_empty() {
        o.push_str("| relay | peer | initiator | reason | duration ms | bytes in | bytes out | node-side last failure | from the cache of |\n|---|---|---|---|---|---|---|---|---|\n");
        for c in &s.relay_closes {
            let _ = writeln!(
                o,
                "| `{}` | `{}` | {} | {} | {} | {} | {} | {} | {} |",
                clean(&c.relay),
                clean(&c.peer),
                clean(&c.initiator),
                clean(&c.reason),
                c.duration_ms,
                c.bytes_in,
                c.bytes_out,
                c.node_last_failure_reason.as_ref().map_or_else(
                    || "none: no other node's connection cache holds a failure for the peer"
                        .to_owned(),
                    |r| clean(r)
                ),
                c.node_last_failure_from
                    .as_ref()
                    .map_or_else(|| "-".to_owned(), |n| format!("`{}`", clean(n)))
            );
        }
        o.push('\n');
    }

    o.push_str("## Probe outcomes\n\n");
    if s.probes.is_empty() {
        o.push_str("No node posted a probe block.\n\n");
    } else {
        o.push_str("| node | kind | target | outcome | rtt ms | ok/attempts |\n|---|---|---|---|---|---|\n");
        for p in &s.probes {
            let _ = writeln!(
                o,
                "| `{}` | {} | {} | {} | {} | {}/{} |",
                clean(&p.node),
                clean(&p.kind),
                clean(&p.target),
                clean(&p.outcome),
                ms(p.rtt_ms),
                p.successes,
                p.attempts
            );
        }
        o.push('\n');
    }

    o.push_str("## Probe RTT distribution\n\n");
    if s.rtt.is_empty() {
        let why = s
            .absent
            .iter()
            .find(|a| a.section == "probe RTT distribution")
            .map_or("no SWIM probe events".to_owned(), |a| {
                printable(&a.why).into_owned()
            });
        let _ = writeln!(o, "No data: {why}.\n");
    } else {
        o.push_str("| observer | target | probes | acked | timed out | pending | median ms | p95 ms | p99 ms | budget |\n|---|---|---|---|---|---|---|---|---|---|\n");
        for ((obs, target), p) in &s.rtt {
            let pending = p.probes - p.acked - p.timed_out;
            let _ = writeln!(
                o,
                "| `{}` | `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
                clean(obs),
                clean(target),
                p.probes,
                p.acked,
                p.timed_out,
                pending,
                ms(p.rtts.percentile(50)),
                ms(p.rtts.percentile(95)),
                ms(p.rtts.percentile(99)),
                p.budget.as_ref().map_or_else(
                    || "not reported (no probe timed out; acknowledgements carry none)".to_owned(),
                    |b| clean(b)
                )
            );
        }
        o.push_str("\nPer 5-second bucket of send time (epoch seconds):\n\n| observer | target | bucket | probes | acked | timed out | pending | median ms | p95 ms | p99 ms |\n|---|---|---|---|---|---|---|---|---|---|\n");
        for ((obs, target), b, x) in s
            .rtt_buckets
            .iter()
            .flat_map(|(pair, v)| v.iter().map(move |(b, x)| (pair, b, x)))
        {
            let _ = writeln!(
                o,
                "| `{}` | `{}` | {b} | {} | {} | {} | {} | {} | {} | {} |",
                clean(obs),
                clean(target),
                x.probes,
                x.acked,
                x.timed_out,
                x.pending,
                ms(x.rtts.percentile(50)),
                ms(x.rtts.percentile(95)),
                ms(x.rtts.percentile(99))
            );
        }
        o.push('\n');
    }

    o.push_str("## Kernel network drops\n\n");
    if s.drop_series.is_empty() {
        o.push_str("No node posted drop or error counters (see Absence).\n\n");
    } else if s.kernel_drops.is_empty() {
        o.push_str(
            "No drop or error counter moved between a node's first and last host snapshot.\n\n",
        );
    } else {
        o.push_str("| node | counter | delta |\n|---|---|---|\n");
        for (node, counter, delta) in &s.kernel_drops {
            let _ = writeln!(o, "| `{}` | {} | {delta} |", clean(node), clean(counter));
        }
        o.push('\n');
    }

    o.push_str("## Gossip receipts (by node, by kind)\n\n");
    if s.gossip.is_empty() {
        o.push_str("No `GossipReceived` events.\n\n");
    } else {
        o.push_str("| node | kind | count | bytes | items |\n|---|---|---|---|---|\n");
        for ((node, kind), g) in &s.gossip {
            let _ = writeln!(
                o,
                "| `{}` | {} | {} | {} | {} |",
                clean(node),
                clean(kind),
                g.count,
                g.bytes,
                g.items
            );
        }
        o.push('\n');
        for line in gossip_gaps(s) {
            let _ = writeln!(o, "- {line}");
        }
        o.push('\n');
    }

    o.push_str("## Inference responses\n\n");
    if s.inference.is_empty() {
        o.push_str("No `InferenceResponseSent` events.\n\n");
    } else {
        o.push_str(
            "| sender | target | request | bytes | outcome | time |\n|---|---|---|---|---|---|\n",
        );
        for i in &s.inference {
            let _ = writeln!(
                o,
                "| `{}` | `{}` | {} | {} | {} | {} |",
                clean(&i.sender),
                clean(&i.target),
                clean(&i.request_id),
                i.bytes,
                clean(&i.outcome),
                i.wall_ms
            );
        }
        if s.inference_total > MAX_LISTED as u64 {
            let _ = writeln!(o, "\n… and {} more.", s.inference_total - MAX_LISTED as u64);
        }
        o.push('\n');
    }

    bandwidth(s, &mut o);

    o.push_str("## Per-peer dials\n\n");
    if s.dials.is_empty() {
        o.push_str("No dial events.\n\n");
    } else {
        o.push_str("| peer | started | succeeded | failed | in flight | last outcome | at |\n|---|---|---|---|---|---|---|\n");
        let (mut st, mut su, mut fa) = (0, 0, 0);
        for (peer, d) in &s.dials {
            st += d.started;
            su += d.succeeded;
            fa += d.failed;
            let _ = writeln!(
                o,
                "| `{}` | {} | {} | {} | {} | {} | {} |",
                clean(peer),
                d.started,
                d.succeeded,
                d.failed,
                d.started as i64 - d.succeeded as i64 - d.failed as i64,
                d.last.as_ref().map_or("-".into(), |(t, _)| clean(t)),
                d.last.as_ref().map_or("-".into(), |(_, at)| at.to_string())
            );
        }
        let _ = writeln!(
            o,
            "| **total** | {st} | {su} | {fa} | {} | | |\n",
            st as i64 - su as i64 - fa as i64
        );
    }

    o.push_str("## Event totals (by type)\n\n| type | count |\n|---|---|\n");
    for (t, n) in &s.event_totals {
        let _ = writeln!(o, "| {} | {n} |", clean(t));
    }
    o.push('\n');

    o.push_str("## Subprocesses\n\n");
    if s.subprocesses.is_empty() {
        o.push_str("No stage node and no subprocess in the run.\n\n");
    } else {
        o.push_str("| node | subprocess | bucket | evidence |\n|---|---|---|---|\n");
        for r in &s.subprocesses {
            let _ = writeln!(
                o,
                "| `{}` | {} | {} | {} |",
                clean(&r.node),
                clean(&r.label),
                r.bucket.as_str(),
                clean(&r.detail)
            );
        }
        o.push('\n');
    }

    o.push_str("## Validation\n\n");
    let problems = s.problem_total();
    let _ = writeln!(o, "{} record(s) read, {problems} problem(s).", s.records);
    for (kind, n) in &s.problem_counts {
        let _ = writeln!(o, "- {kind}: {n}");
    }
    for p in s.problems.iter().take(5) {
        let _ = writeln!(o, "- `{}`", clean(&p.to_string()));
    }
    o.push('\n');
    if s.quarantined_total > 0 {
        let _ = writeln!(
            o,
            "### Quarantined at ingest\n\n{} body(ies) the collector kept aside because they were not records of their kind (each one problem above):\n",
            s.quarantined_total
        );
        for q in &s.quarantined {
            let _ = writeln!(
                o,
                "- `{}` (node `{}`): {}",
                clean(&q.path),
                clean(&q.node),
                clean(&q.why)
            );
        }
        if s.quarantined_total > s.quarantined.len() as u64 {
            let _ = writeln!(
                o,
                "- … and {} more",
                s.quarantined_total - s.quarantined.len() as u64
            );
        }
        o.push('\n');
    }

    o.push_str("## Absence\n\n");
    if s.absent.is_empty() {
        o.push_str("Every section has data.\n\n");
    } else {
        for a in &s.absent {
            let _ = writeln!(o, "- {}: {}", printable(a.section), printable(&a.why));
        }
        o.push('\n');
    }

    o.push_str("## Unknown to this reader\n\n");
    if s.unknown_event_types.is_empty() && s.unknown_fields.is_empty() {
        o.push_str("Nothing: every event type and field is known to contract ");
        o.push_str(diagwire::CONTRACT_VERSION);
        o.push_str(".\n");
    } else {
        for (t, n) in &s.unknown_event_types {
            let _ = writeln!(o, "- event type `{}`: {n}", clean(t));
        }
        for (f, n) in &s.unknown_fields {
            let _ = writeln!(o, "- field `{}`: {n}", clean(f));
        }
    }
    o
}

/// The bandwidth section: messages and bytes by node, direction and kind, then by node and peer;
/// one line when no instrumented transport carried traffic.
fn bandwidth(s: &Summary, o: &mut String) {
    o.push_str("## Bandwidth (by node, by kind and peer)\n\n");
    if s.bandwidth.is_empty() {
        o.push_str("No instrumented transport carried traffic: the bundle has no `MessageSent` or `MessageReceived` event.\n\n");
        return;
    }
    o.push_str(
        "By kind:\n\n| node | direction | kind | messages | bytes |\n|---|---|---|---|---|\n",
    );
    for ((node, dir, kind), t) in &s.bandwidth {
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} | {} |",
            clean(node),
            dir.as_str(),
            clean(kind),
            t.count,
            t.bytes
        );
    }
    o.push_str("\nBy peer:\n\n| node | peer | sent | sent bytes | received | received bytes |\n|---|---|---|---|---|---|\n");
    for ((node, peer), t) in &s.bandwidth_peers {
        let _ = writeln!(
            o,
            "| `{}` | `{}` | {} | {} | {} | {} |",
            clean(node),
            clean(peer),
            t.sent.count,
            t.sent.bytes,
            t.received.count,
            t.received.bytes
        );
    }
    o.push('\n');
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
