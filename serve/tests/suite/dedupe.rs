//! Idempotent ingest: a node that posts again what the collector already staged (its answer was
//! lost, its spool retries) gets 200 with the number the records were staged under, and the served
//! bundle holds each record once. One case per rule of `docs/collector.md` ("Idempotent ingest"),
//! each run through [`check`]: its posts in order (a collector restart where the case says), each
//! acknowledgement as the case expects, then the served bundle's records.

use crate::common;

use std::path::Path;

use common::*;
use diagwire::layout::{FileKind, Role, parse_bundle_path};
use diagwire_serve::client::Connection;
use serde_json::{Value, json};

const RUN: &str = "n3-relay-flap";
/// The boot time of the template node; its events are stamped after it.
const T0: u64 = 1_779_733_876_163;
/// A later boot of the same node.
const T1: u64 = T0 + 3_600_000;

fn boot(start: u64) -> Value {
    let mut b = stage0("boot.json");
    b["process_start_unix_ms"] = start.into();
    b["boot_sequence"] = 0.into();
    b
}

/// An event of the node: a `register_name` Custom event numbered `seq`, `boot` ms + `seq` on its
/// clock, its name telling one content from another.
fn event(boot: u64, seq: u64, name: &str) -> Value {
    json!({
        "type": "Custom",
        "kind": "dedupe_probe",
        "fields": {"name": name},
        "node_id": stage0("events/events-000001.json")[0]["node_id"],
        "monotonic_seq": seq,
        "wall_ms": boot + 100 + seq,
    })
}

/// A clock sample: numbered by the HTTP sink's own counter.
fn clock_sample(boot: u64, seq: u64) -> Value {
    let mut e = event(boot, seq, "");
    e["kind"] = "clock_sample".into();
    e["fields"] = json!({"collector_recv_ms": boot + 200, "collector_send_ms": boot + 201, "node_send_ms_echoed": boot + 199});
    e
}

fn events(boot: u64, seqs: std::ops::RangeInclusive<u64>) -> Value {
    Value::Array(seqs.map(|s| event(boot, s, "worker")).collect())
}

fn snapshot(n: u64) -> Value {
    let mut s = stage0("snapshots/snapshot-000001.json");
    s["snapshot_id"] = format!("3305bb24-{n}").into();
    s["wall_ms"] = (T0 + 5_000 * n).into();
    s
}

/// A vast.ai host sample numbered `seq` by its producer.
fn vastai(seq: u64) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../compat-tests/fixtures/wire/vastai/host-sample-minimal.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    v["seq"] = seq.into();
    v["wall_ms"] = (T0 + 1_000 * seq).into();
    v
}

fn finalize() -> Value {
    json!({"exit_reason": "completed"})
}

/// What an acknowledgement should say: its staging number, whether nothing new was staged
/// (`None`: the key is absent), how many records were left out, and how many problems it lists.
#[derive(Debug, Clone, Copy)]
struct Ack {
    seq: Option<u64>,
    duplicate: Option<bool>,
    deduplicated: u64,
    problems: usize,
}

/// A post staged whole under `seq`.
fn new(seq: u64) -> Ack {
    Ack {
        seq: Some(seq),
        duplicate: None,
        deduplicated: 0,
        problems: 0,
    }
}

/// A post every record of which was staged before, under `seq`.
fn repeat(seq: u64, records: u64) -> Ack {
    Ack {
        seq: Some(seq),
        duplicate: Some(true),
        deduplicated: records,
        problems: 0,
    }
}

/// A JSON value written with each object's keys in reverse order, spaces after every comma and
/// colon and a line break before each key: the same value as another text.
fn reordered(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let entries: Vec<String> = m
                .iter()
                .rev()
                .map(|(k, v)| format!("\n  {}: {}", Value::from(k.as_str()), reordered(v)))
                .collect();
            format!("{{{} }}", entries.join(", "))
        }
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(reordered).collect();
            format!("[ {} ]", items.join(",\n "))
        }
        other => other.to_string(),
    }
}

/// A new post part of whose records were staged before: `deduplicated` of them left out.
fn partly(seq: u64, deduplicated: u64) -> Ack {
    Ack {
        duplicate: Some(false),
        deduplicated,
        ..new(seq)
    }
}

enum Step {
    Post(&'static str, Value, Ack),
    /// A post of this exact text.
    PostText(&'static str, String, Ack),
    /// The collector stopped and opened again on the same root.
    Restart,
}

use Step::*;

/// What the served bundle holds for the node.
#[derive(Debug, PartialEq, Eq)]
struct Served {
    /// `process_start_unix_ms` of each boot file, earlier boots first.
    boots: Vec<u64>,
    /// Each event's (`monotonic_seq`, name or kind), in the bundle's order.
    events: Vec<(u64, String)>,
    snapshots: Vec<String>,
    finalizes: usize,
    /// Each vast.ai record's `seq`.
    vastai: Vec<u64>,
}

struct Case {
    name: &'static str,
    dedupe: bool,
    steps: Vec<Step>,
    served: Served,
    /// The node's `conflicts` in `/diag/runs`.
    conflicts: u64,
}

/// Events numbered `range`, as [`events`] posts them.
fn seqs(range: std::ops::RangeInclusive<u64>) -> Vec<(u64, String)> {
    range.map(|s| (s, "worker".to_owned())).collect()
}

/// What a run serves whose node staged events 1 to 3 and then another text of event 3 (a
/// conflict, kept).
fn served_with_another_3() -> Served {
    served(
        vec![T0],
        [seqs(1..=3), vec![(3, "other".into())]].concat(),
        &[],
        0,
    )
}

fn served(
    boots: Vec<u64>,
    events: Vec<(u64, String)>,
    snapshots: &[u64],
    finalizes: usize,
) -> Served {
    Served {
        boots,
        events,
        snapshots: snapshots.iter().map(|n| format!("3305bb24-{n}")).collect(),
        finalizes,
        vastai: Vec::new(),
    }
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "an identical retry of an events batch stages nothing and gets the first number",
            dedupe: true,
            steps: vec![
                Post("boot", boot(T0), new(1)),
                Post("events", events(T0, 1..=3), new(1)),
                Post("events", events(T0, 1..=3), repeat(1, 3)),
                Post("events", events(T0, 4..=6), new(2)),
            ],
            served: served(vec![T0], seqs(1..=6), &[], 0),
            conflicts: 0,
        },
        Case {
            name: "an overlapping batch keeps only the records not yet staged, in order",
            dedupe: true,
            steps: vec![
                Post("boot", boot(T0), new(1)),
                Post("events", events(T0, 1..=4), new(1)),
                Post(
                    "events",
                    events(T0, 3..=7),
                    Ack {
                        seq: Some(2),
                        duplicate: Some(false),
                        deduplicated: 2,
                        problems: 0,
                    },
                ),
                Post("events", events(T0, 6..=8), {
                    let mut a = new(3);
                    a.duplicate = Some(false);
                    a.deduplicated = 2;
                    a
                }),
            ],
            served: served(vec![T0], seqs(1..=8), &[], 0),
            conflicts: 0,
        },
        Case {
            name: "a retried snapshot is staged once",
            dedupe: true,
            steps: vec![
                Post("boot", boot(T0), new(1)),
                Post("snapshot", snapshot(1), new(1)),
                Post("snapshot", snapshot(1), repeat(1, 1)),
                Post("snapshot", snapshot(2), new(2)),
                Post("snapshot", snapshot(2), repeat(2, 1)),
            ],
            served: served(vec![T0], vec![], &[1, 2], 0),
            conflicts: 0,
        },
        Case {
            name: "a retried vast.ai record is staged once",
            dedupe: true,
            steps: vec![
                Post("boot", boot(T0), new(1)),
                Post("vastai_host_sample", vastai(0), new(1)),
                Post("vastai_host_sample", vastai(0), repeat(1, 1)),
                Post("vastai_host_sample", vastai(1), new(2)),
            ],
            served: Served {
                vastai: vec![0, 1],
                ..served(vec![T0], vec![], &[], 0)
            },
            conflicts: 0,
        },
        Case {
            name: "a retried boot is staged once",
            dedupe: true,
            steps: vec![
                Post("boot", boot(T0), new(1)),
                Post("boot", boot(T0), repeat(1, 1)),
            ],
            served: served(vec![T0], vec![], &[], 0),
            conflicts: 0,
        },
        Case {
            name: "a retried finalize is staged once and still answered with the bundle",
            dedupe: true,
            steps: vec![
                Post("boot", boot(T0), new(1)),
                Post("events", events(T0, 1..=2), new(1)),
                Post("finalize", finalize(), new(1)),
                Post("finalize", finalize(), repeat(1, 1)),
            ],
            served: served(vec![T0], seqs(1..=2), &[], 1),
            conflicts: 0,
        },
        Case {
            name: "a node restarted under a new boot numbers its events from 1 again, all kept",
            dedupe: true,
            steps: vec![
                Post("boot", boot(T0), new(1)),
                Post("events", events(T0, 1..=3), new(1)),
                Post("boot", boot(T1), new(2)),
                Post("events", events(T1, 1..=3), new(2)),
                // The spool of the first incarnation, retried after the restart.
                Post("events", events(T0, 2..=3), repeat(1, 2)),
                Post("events", events(T1, 3..=4), {
                    let mut a = new(3);
                    a.duplicate = Some(false);
                    a.deduplicated = 1;
                    a
                }),
            ],
            served: served(vec![T0, T1], [seqs(1..=3), seqs(1..=4)].concat(), &[], 0),
            conflicts: 0,
        },
        Case {
            name: "clock samples are numbered apart from the node's events, both kept",
            dedupe: true,
            steps: vec![
                Post("boot", boot(T0), new(1)),
                Post(
                    "events",
                    json!([event(T0, 1, "worker"), clock_sample(T0, 1)]),
                    new(1),
                ),
                Post("events", json!([clock_sample(T0, 1)]), repeat(1, 1)),
            ],
            served: served(
                vec![T0],
                vec![(1, "worker".into()), (1, "clock_sample".into())],
                &[],
                0,
            ),
            conflicts: 0,
        },
        Case {
            name: "two different records with one identity are both kept and reported",
            dedupe: true,
            steps: vec![
                Post("boot", boot(T0), new(1)),
                Post("events", events(T0, 1..=3), new(1)),
                Post(
                    "events",
                    json!([event(T0, 3, "other")]),
                    Ack {
                        problems: 1,
                        ..new(2)
                    },
                ),
            ],
            served: served_with_another_3(),
            conflicts: 1,
        },
        Case {
            name: "after a collector restart the state is rebuilt from staging",
            dedupe: true,
            steps: vec![
                Post("boot", boot(T0), new(1)),
                Post("events", events(T0, 1..=3), new(1)),
                Post("snapshot", snapshot(1), new(1)),
                Restart,
                Post("boot", boot(T0), repeat(1, 1)),
                Post("events", events(T0, 1..=3), repeat(1, 3)),
                Post("snapshot", snapshot(1), repeat(1, 1)),
                Post("events", events(T0, 3..=4), partly(2, 1)),
            ],
            served: served(vec![T0], seqs(1..=4), &[1], 0),
            conflicts: 0,
        },
        Case {
            name: "after its finalize a node's state is let go and read back from staging at its next post",
            dedupe: true,
            steps: vec![
                Post("boot", boot(T0), new(1)),
                Post("events", events(T0, 1..=3), new(1)),
                Post("snapshot", snapshot(1), new(1)),
                Post("finalize", finalize(), new(1)),
                Post("events", events(T0, 1..=3), repeat(1, 3)),
                Post("snapshot", snapshot(1), repeat(1, 1)),
                Post("events", events(T0, 3..=4), partly(2, 1)),
                Post("finalize", finalize(), repeat(1, 1)),
            ],
            served: served(vec![T0], seqs(1..=4), &[1], 1),
            conflicts: 0,
        },
        Case {
            name: "a retry whose keys come in another order and with other spacing is still one record",
            dedupe: true,
            steps: vec![
                Post("boot", boot(T0), new(1)),
                Post("events", events(T0, 1..=3), new(1)),
                PostText("events", reordered(&events(T0, 1..=3)), repeat(1, 3)),
                PostText("events", reordered(&events(T0, 3..=4)), partly(2, 1)),
            ],
            served: served(vec![T0], seqs(1..=4), &[], 0),
            conflicts: 0,
        },
        Case {
            name: "a retry after a collector restart, its keys in another order, is still one record",
            dedupe: true,
            steps: vec![
                Post("boot", boot(T0), new(1)),
                Post("events", events(T0, 1..=3), new(1)),
                Restart,
                PostText("events", reordered(&events(T0, 1..=3)), repeat(1, 3)),
                Post("events", events(T0, 1..=3), repeat(1, 3)),
            ],
            served: served(vec![T0], seqs(1..=3), &[], 0),
            conflicts: 0,
        },
        Case {
            name: "a batch posted over several lines is recognised when posted again on one, before and after a restart",
            dedupe: true,
            steps: vec![
                Post("boot", boot(T0), new(1)),
                PostText("events", reordered(&events(T0, 1..=3)), new(1)),
                Post("events", events(T0, 1..=3), repeat(1, 3)),
                Restart,
                Post("events", events(T0, 1..=3), repeat(1, 3)),
                PostText("events", reordered(&events(T0, 1..=3)), repeat(1, 3)),
            ],
            served: served(vec![T0], seqs(1..=3), &[], 0),
            conflicts: 0,
        },
        Case {
            name: "a record with a staged record's identity and other content is a conflict whatever its key order",
            dedupe: true,
            steps: vec![
                Post("boot", boot(T0), new(1)),
                Post("events", events(T0, 1..=3), new(1)),
                PostText(
                    "events",
                    reordered(&json!([event(T0, 3, "other")])),
                    Ack {
                        problems: 1,
                        ..new(2)
                    },
                ),
            ],
            served: served_with_another_3(),
            conflicts: 1,
        },
        Case {
            name: "a batch that repeats one of its records in another key order stages it once",
            dedupe: true,
            steps: vec![
                Post("boot", boot(T0), new(1)),
                PostText(
                    "events",
                    format!(
                        "[{}, {}]",
                        event(T0, 1, "worker"),
                        reordered(&event(T0, 1, "worker"))
                    ),
                    partly(1, 1),
                ),
            ],
            served: served(vec![T0], seqs(1..=1), &[], 0),
            conflicts: 0,
        },
        Case {
            name: "with dedupe off every post is staged, retries included",
            dedupe: false,
            steps: vec![
                Post("boot", boot(T0), new(1)),
                Post("events", events(T0, 1..=2), new(1)),
                Post("events", events(T0, 1..=2), new(2)),
            ],
            served: served(vec![T0], [seqs(1..=2), seqs(1..=2)].concat(), &[], 0),
            conflicts: 0,
        },
    ]
}

/// What the served bundle holds for the case's node.
fn read_served(tar: &[u8]) -> Served {
    let (bundle, report) = open_bundle(tar);
    assert!(report.is_clean(), "{:?}", report.problems);
    let mut out = Served {
        boots: Vec::new(),
        events: Vec::new(),
        snapshots: Vec::new(),
        finalizes: 0,
        vastai: Vec::new(),
    };
    let mut latest_boot = None;
    for (path, bytes) in &bundle.files {
        let v: Value = serde_json::from_slice(bytes).unwrap();
        match parse_bundle_path(path).role {
            Role::Latest(FileKind::Boot) => latest_boot = v["process_start_unix_ms"].as_u64(),
            Role::Numbered(FileKind::Boot, _) => {
                out.boots.push(v["process_start_unix_ms"].as_u64().unwrap())
            }
            Role::Numbered(FileKind::Events, _) => {
                for e in v.as_array().unwrap() {
                    let tag = match e["kind"].as_str() {
                        Some("clock_sample") => "clock_sample".to_owned(),
                        _ => e["fields"]["name"].as_str().unwrap_or_default().to_owned(),
                    };
                    out.events.push((e["monotonic_seq"].as_u64().unwrap(), tag));
                }
            }
            Role::Numbered(FileKind::Snapshot, _) => out
                .snapshots
                .push(v["snapshot_id"].as_str().unwrap().to_owned()),
            Role::Latest(FileKind::Finalize) | Role::Numbered(FileKind::Finalize, _) => {
                out.finalizes += 1
            }
            Role::Numbered(FileKind::Vastai(_), _) => out.vastai.push(v["seq"].as_u64().unwrap()),
            _ => {}
        }
    }
    out.boots.extend(latest_boot);
    out
}

async fn check(case: Case) {
    let root = tempfile::tempdir().unwrap();
    let conf = || {
        let mut c = config(root.path());
        c.dedupe = case.dedupe;
        c
    };
    let mut server = start(conf()).await;
    let node = stage0_node();
    for (i, step) in case.steps.iter().enumerate() {
        let (kind, body, want) = match step {
            Restart => {
                drop(server);
                server = start(conf()).await;
                continue;
            }
            Post(kind, body, want) => (kind, body.to_string(), want),
            PostText(kind, body, want) => (kind, body.clone(), want),
        };
        let mut conn = Connection::new(server.addr);
        let reply = post(&mut conn, kind, RUN, &node, body.as_bytes()).await;
        assert_eq!(reply.status, 200, "{}: post {i}", case.name);
        let ack = ack(&reply).unwrap();
        let got = (ack.seq, ack.duplicate, ack.deduplicated, ack.problems.len());
        let want = (want.seq, want.duplicate, want.deduplicated, want.problems);
        assert_eq!(got, want, "{}: post {i} ({kind}): {ack:?}", case.name);
    }
    let mut conn = Connection::new(server.addr);
    let bundle = conn.get(&format!("/diag/bundle/{RUN}")).await.unwrap();
    assert_eq!(bundle.status, 200, "{}", case.name);
    assert_eq!(read_served(&bundle.body), case.served, "{}", case.name);
    let runs = listing(&conn.get("/diag/runs").await.unwrap()).unwrap();
    assert_eq!(
        runs[0].nodes[0].conflicts, case.conflicts,
        "{}: /diag/runs {runs:?}",
        case.name
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_rule_of_idempotent_ingest() {
    bounded(60, async {
        for case in cases() {
            check(case).await;
        }
    })
    .await;
}
