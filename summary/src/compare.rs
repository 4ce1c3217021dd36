//! The two-bundle comparison of swactor's post-processor: the node set, the finalize flag, per-node
//! per-event-type count changes and the first peer to go Dead, then the dial and probe RTT tables
//! where they differ. Lines start with `=` (the same), `+` (only in B), `-` (only in A) or `*`
//! (changed).

use std::collections::BTreeSet;
use std::fmt::Write;

use crate::model::Summary;
use crate::render::clean;

/// The comparison of bundle A with bundle B, as Markdown-friendly text.
pub fn markdown(a: &Summary, b: &Summary) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# {} (A) vs {} (B)\n",
        clean(&a.run_id),
        clean(&b.run_id)
    );
    o.push_str("## Nodes\n\n```\n");
    let na: BTreeSet<&String> = a.nodes.keys().collect();
    let nb: BTreeSet<&String> = b.nodes.keys().collect();
    for n in na.union(&nb) {
        let sign = match (na.contains(n), nb.contains(n)) {
            (true, true) => '=',
            (false, true) => '+',
            _ => '-',
        };
        let _ = writeln!(o, "{sign} {}", clean(n));
    }
    let fa = a.manifest.as_ref().map(|m| m.finalize_received);
    let fb = b.manifest.as_ref().map(|m| m.finalize_received);
    let _ = writeln!(
        o,
        "{} finalize_received: {fa:?} vs {fb:?}",
        if fa == fb { '=' } else { '*' }
    );
    o.push_str("```\n\n## Events by node and type\n\n```\n");
    let keys: BTreeSet<&(String, String)> = a
        .node_event_totals
        .keys()
        .chain(b.node_event_totals.keys())
        .collect();
    let mut same = 0;
    for k in keys {
        let (x, y) = (
            a.node_event_totals.get(k).copied(),
            b.node_event_totals.get(k).copied(),
        );
        let (sign, what) = match (x, y) {
            (Some(x), Some(y)) if x == y => {
                same += 1;
                continue;
            }
            (Some(x), Some(y)) => ('*', format!("{x} → {y} ({:+})", y as i64 - x as i64)),
            (None, Some(y)) => ('+', y.to_string()),
            (Some(x), None) => ('-', x.to_string()),
            (None, None) => continue,
        };
        let _ = writeln!(o, "{sign} {} {}: {what}", clean(&k.0), clean(&k.1));
    }
    let _ = writeln!(o, "= {same} (node, type) count(s) unchanged");
    o.push_str("```\n\n## First peer to go Dead\n\n```\n");
    let fd = |s: &Summary| {
        s.first_dead.as_ref().map(|d| {
            format!(
                "{} saw {} ({})",
                clean(&d.observer),
                clean(&d.peer),
                clean(&d.reason)
            )
        })
    };
    let (da, db) = (fd(a), fd(b));
    let _ = writeln!(
        o,
        "{} A: {}\n{} B: {}",
        if da == db { '=' } else { '*' },
        da.as_deref().unwrap_or("none"),
        if da == db { '=' } else { '*' },
        db.as_deref().unwrap_or("none")
    );
    o.push_str("```\n\n## Per-peer dials\n\n```\n");
    let peers: BTreeSet<&String> = a.dials.keys().chain(b.dials.keys()).collect();
    for p in peers {
        let row = |s: &Summary| {
            s.dials.get(p).map(|d| {
                format!(
                    "started {} succeeded {} failed {}",
                    d.started, d.succeeded, d.failed
                )
            })
        };
        let (x, y) = (row(a), row(b));
        let sign = match (&x, &y) {
            (Some(x), Some(y)) if x == y => '=',
            (Some(_), Some(_)) => '*',
            (None, _) => '+',
            (_, None) => '-',
        };
        let _ = writeln!(
            o,
            "{sign} {}: {} | {}",
            clean(p),
            x.as_deref().unwrap_or("-"),
            y.as_deref().unwrap_or("-")
        );
    }
    o.push_str("```\n\n## Probe RTT\n\n```\n");
    let pairs: BTreeSet<&(String, String)> = a.rtt.keys().chain(b.rtt.keys()).collect();
    for k in pairs {
        let row = |s: &Summary| {
            s.rtt.get(k).map(|p| {
                format!(
                    "probes {} timed out {} median {} p99 {}",
                    p.probes,
                    p.timed_out,
                    rtt_ms(p.rtts.percentile(50)),
                    rtt_ms(p.rtts.percentile(99))
                )
            })
        };
        let (x, y) = (row(a), row(b));
        let sign = match (&x, &y) {
            (Some(x), Some(y)) if x == y => '=',
            (Some(_), Some(_)) => '*',
            (None, _) => '+',
            (_, None) => '-',
        };
        let _ = writeln!(
            o,
            "{sign} {} → {}: {} | {}",
            clean(&k.0),
            clean(&k.1),
            x.as_deref().unwrap_or("-"),
            y.as_deref().unwrap_or("-")
        );
    }
    o.push_str("```\n");
    o
}

/// An RTT percentile as a person reads it: `108 ms`, or `none` when no probe was acknowledged.
fn rtt_ms(v: Option<impl std::fmt::Display>) -> String {
    v.map_or_else(|| "none".to_owned(), |v| format!("{v} ms"))
}

/// Whether a comparison (as [`markdown`] writes it) found a difference: a line of one of its
/// blocks marked `+`, `-` or `*`.
pub fn differs(comparison: &str) -> bool {
    let mut inside = false;
    comparison.lines().any(|l| {
        if l.starts_with("```") {
            inside = !inside;
            return false;
        }
        inside && (l.starts_with("+ ") || l.starts_with("- ") || l.starts_with("* "))
    })
}
