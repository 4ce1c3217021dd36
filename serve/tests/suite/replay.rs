//! A real bundle replayed as its nodes posted it: each node's records in its order, with the
//! headers nodes send, then finalize; the served bundle holds every record (equal as JSON
//! values), is valid, and the live stream carried every record.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use bytes::Bytes;
use common::*;
use diagwire::bundle::read::{Limits, read_all};
use diagwire::layout::{FileKind, Role};
use diagwire::v1::Manifest;
use diagwire_serve::client::{Connection, StreamEvent, subscribe};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_bundle_replayed_as_posts_comes_back_whole_and_valid() {
    bounded(60, replay("n3-relay-flap")).await;
}

async fn replay(name: &str) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/bundles")
        .join(name);
    let (original, errors) = read_all(&src, Limits::default()).unwrap();
    assert!(errors.is_empty());
    let manifest: Manifest = serde_json::from_slice(&original.files["MANIFEST.json"]).unwrap();
    let run = original.run_id.clone();
    let root = tempfile::tempdir().unwrap();
    let server = start(config(root.path())).await;

    let (plans, mut finalizes) = node_posts(&original, &manifest);
    assert_eq!(finalizes.len(), 1, "the run has one finalize record");
    let posts = plans.iter().map(|(_, p)| p.len()).sum::<usize>() + 1;
    let (finalizer, finalize_body) = finalizes.remove(0);

    let mut stream = subscribe(&format!("http://{}/diag/stream/{run}", server.addr), None)
        .await
        .unwrap();

    let mut tasks = Vec::new();
    for (node, plan) in plans {
        let (addr, run) = (server.addr, run.clone());
        tasks.push(tokio::spawn(async move {
            let mut conn = Connection::new(addr);
            for (i, (kind, body)) in plan.into_iter().enumerate() {
                let reply = conn
                    .post(
                        &kind,
                        &run,
                        &node,
                        1_000 + i as u64,
                        "application/json",
                        Bytes::from(body),
                    )
                    .await
                    .unwrap();
                assert_eq!(
                    reply.status,
                    200,
                    "{}",
                    String::from_utf8_lossy(&reply.body)
                );
                let ack = ack(&reply).unwrap();
                assert_eq!(ack.clock.node_send_ms_echoed, 1_000 + i as u64);
                assert!(ack.problems.is_empty(), "{ack:?}");
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut conn = Connection::new(server.addr);
    let reply = post(&mut conn, "finalize", &run, &finalizer, &finalize_body).await;
    assert_eq!(reply.status, 200);
    let ack = json(&reply);
    assert!(
        ack["body"]["bundle_path"]
            .as_str()
            .unwrap()
            .ends_with(&format!("{run}.tar.gz"))
    );
    assert_eq!(
        ack["hints"]["snapshot_now"], true,
        "the finalizer gets its snapshot hint"
    );

    let served = conn.get(&format!("/diag/bundle/{run}")).await.unwrap();
    assert_eq!(served.status, 200);
    let (bundle, report) = open_bundle(&served.body);
    assert!(report.is_clean(), "{:?}", report.problems);
    let files = |c: &diagwire::bundle::BundleContents| -> BTreeMap<String, serde_json::Value> {
        c.files
            .iter()
            .filter(|(p, _)| p.as_str() != "MANIFEST.json")
            .map(|(p, b)| (p.clone(), serde_json::from_slice(b).unwrap()))
            .collect()
    };
    assert_eq!(
        files(&bundle),
        files(&original),
        "every record comes back as posted"
    );
    let served_manifest: Manifest = serde_json::from_slice(&bundle.files["MANIFEST.json"]).unwrap();
    assert_eq!(served_manifest.run_id, manifest.run_id);
    assert!(served_manifest.finalize_received);
    let nodes = |m: &Manifest| -> Vec<_> {
        m.nodes
            .iter()
            .map(|n| {
                (
                    n.node_id_hex.clone(),
                    n.label.clone(),
                    n.role.clone(),
                    n.stage_index,
                    n.event_batches,
                    n.snapshots,
                    n.boot_recorded,
                    n.finalize_recorded,
                )
            })
            .collect()
    };
    assert_eq!(nodes(&served_manifest), nodes(&manifest));

    // The live stream carried every accepted record, each equal to its file, in stream order.
    let labels: BTreeMap<&str, &str> = served_manifest
        .nodes
        .iter()
        .map(|n| (n.node_id_hex.0.as_str(), n.label.as_str()))
        .collect();
    let mut last_id = 0;
    for _ in 0..posts {
        match bounded(10, stream.next())
            .await
            .expect("the stream goes on")
            .unwrap()
        {
            StreamEvent::Record { id, record } => {
                assert!(id > last_id, "stream ids grow");
                last_id = id;
                assert_eq!(record.run_id, run);
                let label = labels[record.node_id.as_str()];
                let role = match record.kind.as_str() {
                    "boot" => Role::Latest(FileKind::Boot),
                    "finalize" => Role::Latest(FileKind::Finalize),
                    "events" => Role::Numbered(FileKind::Events, record.seq),
                    "snapshot" => Role::Numbered(FileKind::Snapshot, record.seq),
                    other => panic!("kind {other}"),
                };
                let path = diagwire::layout::bundle_path(label, &role);
                let file: serde_json::Value = serde_json::from_slice(&bundle.files[&path]).unwrap();
                assert_eq!(record.body.0, file, "{path}");
            }
            StreamEvent::Lagged { skipped } => panic!("the subscriber lagged by {skipped}"),
            StreamEvent::End { last } => panic!("the stream ended at {last} before every record"),
        }
    }

    // `/diag/runs` counts what the manifest counts.
    let runs = json(&conn.get("/diag/runs").await.unwrap());
    let listed = &runs[0];
    assert_eq!(listed["run_id"], run.as_str());
    assert_eq!(listed["finalize_received"], true);
    for node in &served_manifest.nodes {
        let entry = listed["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["node_id"] == node.node_id_hex.0.as_str())
            .unwrap();
        assert_eq!(entry["event_batches"], node.event_batches);
        assert_eq!(entry["snapshots"], node.snapshots);
    }
}
