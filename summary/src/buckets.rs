//! The subprocess buckets: each stage's subprocesses from their events and snapshots, classified
//! as never spawned, exited, stuck or healthy, with the evidence in words; and how the legacy
//! worker events read.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{Bucket, Node, Subprocess, SubprocessRow};

/// The subprocess label under which a legacy worker is shown.
pub(crate) const LEGACY_WORKER: &str = "worker";

/// The exit code or signal in a legacy `worker_exited` status, as Rust's `ExitStatus` prints it
/// (`exit status: 1`, `signal: 9 (SIGKILL)`); neither when it says something else.
pub(crate) fn legacy_exit_status(status: Option<&serde_json::Value>) -> (Option<i32>, Option<i32>) {
    let text = status
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default();
    let number = |rest: &str| {
        rest.trim()
            .split(|c: char| !c.is_ascii_digit() && c != '-')
            .next()
            .and_then(|n| n.parse().ok())
    };
    if let Some(rest) = text.strip_prefix("exit status:") {
        (number(rest), None)
    } else if let Some(rest) = text.strip_prefix("signal:") {
        (None, number(rest))
    } else {
        (None, None)
    }
}

/// The subprocess rows of the run: per node, each subprocess in its bucket, and each stage that
/// spawned none as `never_spawned`.
pub(crate) fn subprocess_rows(
    nodes: &BTreeMap<String, Node>,
    subs: &BTreeMap<(String, String, u32), Subprocess>,
    ready: &BTreeSet<String>,
) -> Vec<SubprocessRow> {
    let mut out = Vec::new();
    for (label, node) in nodes {
        let mine: Vec<&Subprocess> = subs.values().filter(|s| s.node == *label).collect();
        if mine.is_empty() {
            if node.role.as_deref() == Some("stage") {
                out.push(SubprocessRow {
                    node: label.clone(),
                    label: "-".into(),
                    bucket: Bucket::NeverSpawned,
                    detail: "no `SubprocessSpawned` or `worker_starting` event and no subprocess in any snapshot".into(),
                });
            }
            continue;
        }
        for s in mine {
            let trend = |what: &str, v: Option<(u64, u64)>| {
                v.map(|(a, b)| format!("{what} {a} → {b}"))
                    .unwrap_or_default()
            };
            let (bucket, detail) = match (&s.exited, s.spawned) {
                (Some((code, signal, uptime)), _) => (
                    Bucket::Exited,
                    format!(
                        "exited with {} after {}",
                        match (code, signal) {
                            (Some(c), _) => format!("code {c}"),
                            (None, Some(sig)) => format!("signal {sig}"),
                            _ => "no code or signal".into(),
                        },
                        uptime.map_or("an unknown time".into(), |u| format!("{u} ms"))
                    ),
                ),
                (None, true) if ready.contains(&s.node) => {
                    (Bucket::Healthy, "spawned and `worker_ready`".into())
                }
                (None, _) => (
                    Bucket::Stuck,
                    format!(
                        "spawned, no exit and no `worker_ready`; {} {}",
                        trend("RSS bytes", s.rss),
                        trend("CPU ms", s.cpu_ms)
                    )
                    .trim()
                    .to_owned(),
                ),
            };
            out.push(SubprocessRow {
                node: label.clone(),
                label: if s.legacy {
                    format!("{} #{} (legacy events, no pid)", s.label, s.pid)
                } else {
                    format!("{} (pid {})", s.label, s.pid)
                },
                bucket,
                detail,
            });
        }
    }
    out
}
