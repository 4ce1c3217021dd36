//! The collector's replies are described by the contract: in each situation that gives a reply
//! one of its optional fields (a record staged, a body that is not a record, an events batch
//! with bad records, past the problem cap, a repeated post, a batch partly repeated, records kept
//! in conflict, a finalize), the `PostAck` and the `/diag/runs` listing that follows validate
//! against `schemas/collector.schema.json` with every object of it closed, so a key the schema
//! does not describe is a violation, and read as the generated types with every field typed and
//! nothing left among their unknown keys. One case per situation, each run through [`check`].

use crate::common;

use std::path::Path;

use common::*;
use diagwire::v1::{PostAck, RecordKind, RunsListing};
use diagwire::validate::Validators;
use diagwire_serve::client::Connection;
use serde_json::{Value, json};

/// The schemas of the working tree, read from `schemas/` (not the copy compiled into the
/// library), with every object of `collector.schema.json` closed (`additionalProperties:
/// false`): a reply key the schema does not describe is then a violation. The record kinds are
/// the two replies, `post_ack` and `runs`.
fn closed_validators() -> Validators {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas");
    let mut texts = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".schema.json") else {
            continue;
        };
        let mut doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        if stem == "collector" {
            for def in doc["$defs"].as_object_mut().unwrap().values_mut() {
                if def["type"] == "object" {
                    def["additionalProperties"] = json!(false);
                }
            }
        }
        texts.push((stem.to_owned(), doc.to_string()));
    }
    Validators::from_parts(
        texts.iter().map(|(s, t)| (s.as_str(), t.as_str())),
        [
            ("post_ack", "collector", "PostAck"),
            ("runs", "collector", "RunsListing"),
        ],
    )
    .expect("the schemas compile")
}

/// What a `PostAck` says, field by field (the clock echo is always there): `problems` is how
/// many it lists and `first_at` the pointer of the first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Said {
    seq: Option<u64>,
    problems: usize,
    first_at: Option<String>,
    problems_omitted: u64,
    quarantined: bool,
    duplicate: Option<bool>,
    deduplicated: u64,
    snapshot_now: bool,
    bundle_path: bool,
}

/// What `/diag/runs` lists for the case's run and its one node afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Listed {
    run_quarantined: u64,
    quarantined: u64,
    deduplicated: u64,
    conflicts: u64,
}

struct Case {
    name: &'static str,
    /// Posts made first (route, body), each acknowledged.
    before: Vec<(&'static str, Vec<u8>)>,
    /// The post whose reply is checked.
    post: (&'static str, Vec<u8>),
    said: Said,
    listed: Listed,
}

fn boot() -> Vec<u8> {
    stage0("boot.json").to_string().into_bytes()
}

/// Events numbered `seqs` of the node's boot, `name` telling one content from another.
fn events(seqs: std::ops::RangeInclusive<u64>, name: &str) -> Vec<u8> {
    let start = stage0("boot.json")["process_start_unix_ms"]
        .as_u64()
        .unwrap();
    let node_id = stage0("events/events-000001.json")[0]["node_id"].clone();
    let batch: Vec<Value> = seqs
        .map(|seq| {
            json!({
                "type": "Custom",
                "kind": "reply_probe",
                "fields": {"name": name},
                "node_id": node_id,
                "monotonic_seq": seq,
                "wall_ms": start + 100 + seq,
            })
        })
        .collect();
    serde_json::to_vec(&batch).unwrap()
}

/// Events numbered `seqs`, those at the positions `bad` without their `wall_ms` (one problem
/// each).
fn with_bad(seqs: std::ops::RangeInclusive<u64>, bad: impl Fn(usize) -> bool) -> Vec<u8> {
    let mut batch: Vec<Value> = serde_json::from_slice(&events(seqs, "worker")).unwrap();
    for (i, record) in batch.iter_mut().enumerate() {
        if bad(i) {
            record.as_object_mut().unwrap().remove("wall_ms");
        }
    }
    serde_json::to_vec(&batch).unwrap()
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "a_record_staged_whole_gets_its_number_and_nothing_more",
            before: vec![],
            post: ("boot", boot()),
            said: Said {
                seq: Some(1),
                ..Said::default()
            },
            listed: Listed::default(),
        },
        Case {
            name: "json_that_is_not_a_record_gets_its_problem_and_where_it_is_kept",
            before: vec![],
            post: ("boot", b"[1, 2]".to_vec()),
            said: Said {
                problems: 1,
                first_at: Some(String::new()),
                quarantined: true,
                ..Said::default()
            },
            listed: Listed {
                run_quarantined: 1,
                quarantined: 1,
                ..Listed::default()
            },
        },
        Case {
            name: "a_batch_with_a_bad_record_is_staged_without_it_and_kept_whole",
            before: vec![("boot", boot())],
            post: ("events", with_bad(1..=3, |i| i == 1)),
            said: Said {
                seq: Some(1),
                problems: 1,
                first_at: Some("/1".into()),
                quarantined: true,
                ..Said::default()
            },
            listed: Listed {
                run_quarantined: 1,
                quarantined: 1,
                ..Listed::default()
            },
        },
        Case {
            name: "problems_past_the_cap_are_counted",
            before: vec![("boot", boot())],
            post: ("events", with_bad(1..=150, |_| true)),
            said: Said {
                problems: 100,
                first_at: Some("/0".into()),
                problems_omitted: 50,
                quarantined: true,
                ..Said::default()
            },
            listed: Listed {
                run_quarantined: 1,
                quarantined: 1,
                ..Listed::default()
            },
        },
        Case {
            name: "a_repeated_post_stages_nothing_and_names_the_file_that_holds_it",
            before: vec![("boot", boot()), ("events", events(1..=3, "worker"))],
            post: ("events", events(1..=3, "worker")),
            said: Said {
                seq: Some(1),
                duplicate: Some(true),
                deduplicated: 3,
                ..Said::default()
            },
            listed: Listed {
                deduplicated: 3,
                ..Listed::default()
            },
        },
        Case {
            name: "a_batch_partly_repeated_stages_its_new_records",
            before: vec![("boot", boot()), ("events", events(1..=3, "worker"))],
            post: ("events", events(2..=5, "worker")),
            said: Said {
                seq: Some(2),
                duplicate: Some(false),
                deduplicated: 2,
                ..Said::default()
            },
            listed: Listed {
                deduplicated: 2,
                ..Listed::default()
            },
        },
        Case {
            name: "a_record_with_the_identity_of_another_is_kept_and_listed",
            before: vec![("boot", boot()), ("events", events(1..=3, "worker"))],
            post: ("events", events(3..=3, "other")),
            said: Said {
                seq: Some(2),
                problems: 1,
                first_at: Some("/0".into()),
                ..Said::default()
            },
            listed: Listed {
                conflicts: 1,
                ..Listed::default()
            },
        },
        Case {
            name: "records_in_conflict_past_the_cap_are_counted",
            before: vec![("boot", boot()), ("events", events(1..=120, "worker"))],
            post: ("events", events(1..=120, "other")),
            said: Said {
                seq: Some(2),
                problems: 100,
                first_at: Some("/0".into()),
                problems_omitted: 20,
                ..Said::default()
            },
            listed: Listed {
                conflicts: 120,
                ..Listed::default()
            },
        },
        Case {
            name: "a_finalize_gets_the_bundle_path_and_the_snapshot_hint",
            before: vec![("boot", boot())],
            post: ("finalize", br#"{"exit_reason": "completed"}"#.to_vec()),
            said: Said {
                seq: Some(1),
                snapshot_now: true,
                bundle_path: true,
                ..Said::default()
            },
            listed: Listed::default(),
        },
    ]
}

/// The keys each object of a parsed reply kept as unknown (none when the schema describes every
/// key the collector sends), as `Type.key`.
fn unknown_in_ack(ack: &PostAck) -> Vec<String> {
    let mut out: Vec<String> = ack.extra.0.keys().map(|k| format!("PostAck.{k}")).collect();
    out.extend(ack.clock.extra.0.keys().map(|k| format!("ClockEcho.{k}")));
    if let Some(hints) = &ack.hints {
        out.extend(hints.extra.0.keys().map(|k| format!("Hints.{k}")));
    }
    for p in &ack.problems {
        out.extend(p.extra.0.keys().map(|k| format!("PostProblem.{k}")));
    }
    out
}

fn unknown_in_listing(runs: &RunsListing) -> Vec<String> {
    let mut out = Vec::new();
    for run in runs {
        out.extend(run.extra.0.keys().map(|k| format!("RunSummary.{k}")));
        for node in &run.nodes {
            out.extend(node.extra.0.keys().map(|k| format!("RunNodeSummary.{k}")));
        }
    }
    out
}

/// A reply checked against the closed schema: its violations, located.
fn violations(validators: &Validators, kind: RecordKind, reply: &Value) -> Result<(), String> {
    let found = validators.violations(kind, reply);
    if found.is_empty() {
        return Ok(());
    }
    let said: Vec<String> = found
        .iter()
        .map(|v| format!("at {:?}: {}", v.pointer, v.message))
        .collect();
    Err(format!(
        "the {} reply breaks the schema: {said:?}",
        kind.as_str()
    ))
}

async fn check(server: &Server, validators: &Validators, case: &Case) -> Result<(), String> {
    let (run, node) = (case.name, stage0_node());
    let mut conn = Connection::new(server.addr);
    for (route, body) in &case.before {
        let reply = post(&mut conn, route, run, &node, body).await;
        if reply.status != 200 {
            return Err(format!("a post before: {route} answered {}", reply.status));
        }
    }
    let (route, body) = &case.post;
    let reply = post(&mut conn, route, run, &node, body).await;
    if reply.status != 200 {
        return Err(format!("status {}: {}", reply.status, json(&reply)));
    }
    violations(validators, RecordKind::PostAck, &json(&reply))?;
    let ack = ack(&reply)?;
    let unknown = unknown_in_ack(&ack);
    if !unknown.is_empty() {
        return Err(format!("keys the PostAck type does not know: {unknown:?}"));
    }
    let said = Said {
        seq: ack.seq,
        problems: ack.problems.len(),
        first_at: ack.problems.first().map(|p| p.pointer.clone()),
        problems_omitted: ack.problems_omitted,
        quarantined: ack.quarantined.is_some(),
        duplicate: ack.duplicate,
        deduplicated: ack.deduplicated,
        snapshot_now: ack.hints.as_ref().is_some_and(|h| h.snapshot_now),
        bundle_path: ack
            .body
            .as_ref()
            .is_some_and(|b| b.0["bundle_path"].is_string()),
    };
    if said != case.said {
        return Err(format!(
            "the PostAck says {said:?}, expected {:?}",
            case.said
        ));
    }
    if let Some(at) = &ack.quarantined {
        let kept = server.collector.config.root.join(at);
        if !kept.is_file() {
            return Err(format!("`quarantined` names no kept body: {at:?}"));
        }
    }

    let reply = conn.get("/diag/runs").await.map_err(|e| e.to_string())?;
    violations(validators, RecordKind::Runs, &json(&reply))?;
    let runs = listing(&reply)?;
    let unknown = unknown_in_listing(&runs);
    if !unknown.is_empty() {
        return Err(format!(
            "keys the runs listing types do not know: {unknown:?}"
        ));
    }
    let entry = runs
        .iter()
        .find(|r| r.run_id == run)
        .ok_or("the run is not listed")?;
    let [n] = entry.nodes.as_slice() else {
        return Err(format!("{} nodes listed, expected one", entry.nodes.len()));
    };
    let listed = Listed {
        run_quarantined: entry.quarantined,
        quarantined: n.quarantined,
        deduplicated: n.deduplicated,
        conflicts: n.conflicts,
    };
    if listed != case.listed {
        return Err(format!(
            "/diag/runs lists {listed:?}, expected {:?}",
            case.listed
        ));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_reply_is_described_by_the_collector_schema() {
    bounded(60, async {
        let root = tempfile::tempdir().unwrap();
        let server = start(config(root.path())).await;
        let validators = closed_validators();
        let mut failures = Vec::new();
        for case in cases() {
            if let Err(e) = check(&server, &validators, &case).await {
                failures.push(format!("{}: {e}", case.name));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    })
    .await;
}

/// The check can fail: a reply with a key the schema does not describe is a violation of the
/// closed schema, and the typed parse keeps the key among the unknown ones.
#[test]
fn a_reply_key_the_schema_does_not_describe_is_caught() {
    let validators = closed_validators();
    let reply = json!({
        "clock": {"node_send_ms_echoed": 1, "collector_recv_ms": 2, "collector_send_ms": 3},
        "seq": 4,
        "not_in_the_schema": true,
    });
    let found = violations(&validators, RecordKind::PostAck, &reply).unwrap_err();
    assert!(found.contains("not_in_the_schema"), "{found}");
    let ack: PostAck = serde_json::from_value(reply).unwrap();
    assert_eq!(unknown_in_ack(&ack), ["PostAck.not_in_the_schema"]);
    assert_eq!(ack.seq, Some(4));

    let listing = json!([{
        "run_id": "r", "run_start_collector_ms": 1, "run_end_collector_ms": 2,
        "finalize_received": false, "quarantined": 1,
        "nodes": [{"node_id": "n", "boot_recorded": true, "event_batches": 0, "snapshots": 0,
                   "finalize_recorded": false, "not_in_the_schema": 1}],
    }]);
    let found = violations(&validators, RecordKind::Runs, &listing).unwrap_err();
    assert!(found.contains("not_in_the_schema"), "{found}");
}
