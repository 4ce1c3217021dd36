//! The contract at the door: one case per kind of body, each saying what the node gets back
//! (status, problems, quarantine) and what staging, quarantine and `/diag/runs` hold after it.

use crate::common;

use std::path::Path;

use bytes::Bytes;
use common::*;
use diagwire::layout::Encoding;
use diagwire::v1::RecordKind;
use diagwire_serve::client::Connection;

fn boot() -> Vec<u8> {
    example("stage-0/boot.json")
}

fn batch() -> serde_json::Value {
    serde_json::from_slice(&example("stage-0/events/events-000001.json")).unwrap()
}

/// An events batch whose record at `at` is replaced by something that is not an event record.
fn batch_with_bad(at: &[usize]) -> Vec<u8> {
    let mut b = batch();
    let items = b.as_array_mut().unwrap();
    assert!(items.len() > 2);
    for &i in at {
        items[i] = serde_json::json!({ "node_id": "not an id", "type": 5 });
    }
    serde_json::to_vec(&b).unwrap()
}

fn vastai() -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../compat-tests/fixtures/wire/vastai/host-sample-minimal.json"),
    )
    .unwrap()
}

fn with_unknowns() -> Vec<u8> {
    let mut b = batch();
    let first = &mut b.as_array_mut().unwrap()[0];
    first["field_from_the_future"] = serde_json::json!({ "a": 1 });
    let mut unknown_type = first.clone();
    unknown_type["type"] = serde_json::json!("event_from_the_future");
    // A record of its own (the same number with other content would be a conflict).
    unknown_type["monotonic_seq"] = serde_json::json!(1_000_000);
    b.as_array_mut().unwrap().push(unknown_type);
    serde_json::to_vec(&b).unwrap()
}

fn protobuf(kind: RecordKind, json: &[u8]) -> Vec<u8> {
    let value: serde_json::Value = serde_json::from_slice(json).unwrap();
    diagwire::binary::encode_value(Encoding::Protobuf, kind, &value).unwrap()
}

struct Case {
    name: &'static str,
    validate: bool,
    route: &'static str,
    content_type: &'static str,
    body: Vec<u8>,
    /// The status the node gets.
    status: u16,
    /// JSON pointers of the problems the reply lists (a prefix each), in order.
    problems: &'static [&'static str],
    /// Files staged for the node: (file name, whether the bytes are the posted bytes).
    staged: &'static [(&'static str, bool)],
    /// Bodies kept in quarantine for the node.
    quarantined: u64,
}

fn cases() -> Vec<Case> {
    let json = "application/json";
    let pb = "application/x-protobuf";
    vec![
        Case {
            name: "a_record_of_its_kind_is_staged_as_posted",
            validate: true,
            route: "boot",
            content_type: json,
            body: boot(),
            status: 200,
            problems: &[],
            staged: &[("boot-000001.json", true)],
            quarantined: 0,
        },
        Case {
            name: "unknown_fields_and_event_types_are_kept",
            validate: true,
            route: "events",
            content_type: json,
            body: with_unknowns(),
            status: 200,
            problems: &[],
            staged: &[("events-000001.json", true)],
            quarantined: 0,
        },
        Case {
            name: "a_protobuf_body_is_staged_as_protobuf",
            validate: true,
            route: "boot",
            content_type: pb,
            body: protobuf(RecordKind::Boot, &boot()),
            status: 200,
            problems: &[],
            staged: &[("boot-000001.pb", true)],
            quarantined: 0,
        },
        Case {
            name: "a_body_that_is_not_json_is_kept_and_refused_with_400",
            validate: true,
            route: "snapshot",
            content_type: json,
            body: b"{\"snapshot\": nope".to_vec(),
            status: 400,
            problems: &[],
            staged: &[],
            quarantined: 1,
        },
        Case {
            name: "protobuf_that_does_not_decode_is_kept_and_refused_with_400",
            validate: true,
            route: "boot",
            content_type: pb,
            body: vec![0xff, 0xff, 0xff],
            status: 400,
            problems: &[],
            staged: &[],
            quarantined: 1,
        },
        Case {
            name: "a_content_type_that_is_neither_is_kept_and_refused_with_400",
            validate: true,
            route: "boot",
            content_type: "text/plain",
            body: boot(),
            status: 400,
            problems: &[],
            staged: &[],
            quarantined: 1,
        },
        Case {
            name: "json_of_the_wrong_shape_is_kept_and_acknowledged_with_its_problems",
            validate: true,
            route: "boot",
            content_type: json,
            body: b"[1, 2]".to_vec(),
            status: 200,
            problems: &[""],
            staged: &[],
            quarantined: 1,
        },
        Case {
            name: "an_empty_boot_body_reads_as_null_and_is_not_a_boot_record",
            validate: true,
            route: "boot",
            content_type: json,
            body: Vec::new(),
            status: 200,
            problems: &[""],
            staged: &[],
            quarantined: 1,
        },
        Case {
            name: "one_bad_record_of_a_batch_is_left_out_and_the_rest_staged",
            validate: true,
            route: "events",
            content_type: json,
            body: batch_with_bad(&[1]),
            status: 200,
            problems: &["/1"],
            staged: &[("events-000001.json", false)],
            quarantined: 1,
        },
        Case {
            name: "a_batch_of_only_bad_records_is_kept_whole",
            validate: true,
            route: "events",
            content_type: json,
            body: batch_with_bad(&(0..batch().as_array().unwrap().len()).collect::<Vec<_>>()),
            status: 200,
            problems: &["/0"],
            staged: &[],
            quarantined: 1,
        },
        Case {
            name: "a_finalize_that_is_not_one_is_kept_and_its_run_still_finalized",
            validate: true,
            route: "finalize",
            content_type: json,
            body: b"[1]".to_vec(),
            status: 200,
            problems: &[""],
            staged: &[],
            quarantined: 1,
        },
        Case {
            name: "an_unknown_kind_is_kept_and_answered_with_404",
            validate: true,
            route: "metrics",
            content_type: json,
            body: b"{}".to_vec(),
            status: 404,
            problems: &[],
            staged: &[],
            quarantined: 1,
        },
        Case {
            name: "a_later_vastai_kind_is_a_vastai_record",
            validate: true,
            route: "vastai_future",
            content_type: json,
            body: vastai(),
            status: 200,
            problems: &[],
            staged: &[("vastai_future-000001.json", true)],
            quarantined: 0,
        },
        Case {
            name: "without_validation_any_json_is_staged_as_posted",
            validate: false,
            route: "boot",
            content_type: json,
            body: b"[1, 2]".to_vec(),
            status: 200,
            problems: &[],
            staged: &[("boot-000001.json", true)],
            quarantined: 0,
        },
        Case {
            name: "without_validation_a_body_that_is_not_json_is_still_refused",
            validate: false,
            route: "boot",
            content_type: json,
            body: b"nope".to_vec(),
            status: 400,
            problems: &[],
            staged: &[],
            quarantined: 1,
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_body_gets_its_policy() {
    bounded(60, async {
        let roots = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let mut off = config(roots[1].path());
        off.validate = false;
        let servers = [start(config(roots[0].path())).await, start(off).await];
        let mut failures = Vec::new();
        for case in cases() {
            let server = &servers[usize::from(!case.validate)];
            if let Err(e) = check(server, &case).await {
                failures.push(format!("{}: {e}", case.name));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    })
    .await;
}

async fn check(server: &Server, case: &Case) -> Result<(), String> {
    let run = case.name;
    let node = "n1";
    let mut conn = Connection::new(server.addr);
    let reply = conn
        .post(
            case.route,
            run,
            node,
            7,
            case.content_type,
            Bytes::from(case.body.clone()),
        )
        .await
        .map_err(|e| e.to_string())?;
    let body = json(&reply);
    if reply.status != case.status {
        return Err(format!("status {} ({body})", reply.status));
    }
    if reply.status == 200 {
        let ack = ack(&reply)?;
        let listed: Vec<String> = ack.problems.iter().map(|p| p.pointer.clone()).collect();
        let firsts: Vec<&str> = listed
            .iter()
            .map(String::as_str)
            .take(case.problems.len())
            .collect();
        let ok = if case.problems.is_empty() {
            listed.is_empty()
        } else {
            firsts
                .iter()
                .zip(case.problems)
                .all(|(got, want)| got.starts_with(want))
        };
        if !ok {
            return Err(format!(
                "problems {listed:?}, expected {:?} ({body})",
                case.problems
            ));
        }
        if ack.clock.node_send_ms_echoed != 7 {
            return Err(format!("no clock echo: {body}"));
        }
        if (case.quarantined > 0) != ack.quarantined.is_some() {
            return Err(format!("quarantine not said in the ack: {body}"));
        }
    } else if body["error"].as_str().is_none() {
        return Err(format!("no error body: {body}"));
    }
    let root = &server.collector.config.root;
    let staged_dir = root.join("staging").join(run).join(node);
    let mut staged: Vec<String> = std::fs::read_dir(&staged_dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect()
        })
        .unwrap_or_default();
    staged.sort();
    let want: Vec<&str> = case.staged.iter().map(|(n, _)| *n).collect();
    if staged != want {
        return Err(format!("staged {staged:?}, expected {want:?}"));
    }
    for (name, as_posted) in case.staged {
        let bytes = std::fs::read(staged_dir.join(name)).unwrap();
        if (bytes == case.body) != *as_posted {
            return Err(format!(
                "{name}: stored bytes equal the posted ones: {}",
                !as_posted
            ));
        }
    }
    let kept = std::fs::read_dir(root.join("quarantine").join(run).join(node))
        .map(|d| {
            d.filter(|e| {
                !e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".why.json")
            })
            .count()
        })
        .unwrap_or(0) as u64;
    if kept != case.quarantined {
        return Err(format!(
            "{kept} bodies in quarantine, expected {}",
            case.quarantined
        ));
    }
    let runs = listing(&conn.get("/diag/runs").await.map_err(|e| e.to_string())?)?;
    let entry = runs.iter().find(|r| r.run_id == run);
    let listed_q = entry.map_or(0, |r| r.quarantined);
    if listed_q != case.quarantined {
        return Err(format!(
            "/diag/runs lists {listed_q} quarantined: {entry:?}"
        ));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quarantined_bodies_travel_with_the_bundle_and_its_validation_counts_them() {
    bounded(30, async {
        let root = tempfile::tempdir().unwrap();
        let server = start(config(root.path())).await;
        let mut conn = Connection::new(server.addr);
        let identity: serde_json::Value = serde_json::from_slice(&boot()).unwrap();
        let (run, node) = (
            identity["run_id"].as_str().unwrap(),
            identity["node_id_hex"].as_str().unwrap(),
        );
        assert_eq!(
            post(&mut conn, "boot", run, node, &boot()).await.status,
            200
        );
        assert_eq!(
            post(&mut conn, "events", run, node, &batch_with_bad(&[1]))
                .await
                .status,
            200
        );
        assert_eq!(
            post(&mut conn, "snapshot", run, node, b"{").await.status,
            400
        );
        let fin = post(
            &mut conn,
            "finalize",
            run,
            node,
            b"{\"exit_reason\":\"completed\"}",
        )
        .await;
        assert_eq!(fin.status, 200);
        let served = conn.get(&format!("/diag/bundle/{run}")).await.unwrap();
        let (bundle, report) = open_bundle(&served.body);
        let kept: Vec<&String> = bundle
            .files
            .keys()
            .filter(|p| p.starts_with("@quarantine/"))
            .collect();
        assert_eq!(kept.len(), 4, "two bodies and their reasons: {kept:?}");
        assert_eq!(report.invalid_records, 0, "{:?}", report.problems);
        assert_eq!(report.unreadable_files, 0, "{:?}", report.problems);
        // Each kept body is one problem, located at the body, with the reason the collector
        // recorded; nothing else is wrong.
        assert_eq!(report.problem_count, 2, "{:?}", report.problems);
        assert!(
            report.problems.iter().all(|p| {
                p.location.file.contains("@quarantine/")
                    && !p.location.file.ends_with(".why.json")
                    && p.message
                        .starts_with("quarantined at ingest: posted to /diag/")
            }),
            "{:?}",
            report.problems
        );
        // The records staged are whole: the batch holds every record but the bad one.
        let label = "stage-0";
        let events: Vec<serde_json::Value> =
            serde_json::from_slice(&bundle.files[&format!("{label}/events/events-000001.json")])
                .unwrap();
        assert_eq!(events.len(), batch().as_array().unwrap().len() - 1);
    })
    .await;
}
