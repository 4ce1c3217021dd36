//! The real binary killed (SIGKILL) while nodes post: after a restart on the same root every
//! acknowledged post is on disk, whole and in sequence, no temporary file is left, numbering
//! goes on after what is on disk, and the assembled bundle validates.

use crate::common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use common::*;
use diagwire_serve::client::Connection;

/// Acknowledged posts: (node, seq) → the bytes posted.
type Acked = BTreeMap<(String, u64), Vec<u8>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_collector_loses_no_acknowledged_post() {
    bounded(60, async {
        let root = tempfile::tempdir().unwrap();
        let (mut child, addr) = spawn_binary(root.path(), false).await;
        let labels = ["orchestrator", "relay", "stage-0", "stage-1", "stage-2"];
        let mut nodes = Vec::new();
        for label in labels {
            let boot = example(&format!("{label}/boot.json"));
            let id: serde_json::Value = serde_json::from_slice(&boot).unwrap();
            nodes.push((
                id["node_id_hex"].as_str().unwrap().to_owned(),
                boot,
                example(&format!("{label}/events/events-000001.json")),
            ));
        }
        let run = "n3-relay-flap";
        // Acknowledged posts: (node, seq) → the bytes posted.
        let acked: Arc<Mutex<Acked>> = Arc::default();
        let mut tasks = Vec::new();
        for (node, boot, events) in nodes.clone() {
            let acked = acked.clone();
            tasks.push(tokio::spawn(async move {
                let mut conn = Connection::new(addr);
                let r = conn
                    .post("boot", run, &node, 0, "application/json", Bytes::from(boot))
                    .await;
                assert_eq!(r.map(|r| r.status).ok(), Some(200));
                for i in 0..100_000u64 {
                    // Each batch is told apart by a record field the contract keeps, and its
                    // records are numbered after the previous batch's, as a node numbers them.
                    let mut batch: serde_json::Value = serde_json::from_slice(&events).unwrap();
                    batch[0]["crash_test_post"] = i.into();
                    for record in batch.as_array_mut().unwrap() {
                        let seq = record["monotonic_seq"].as_u64().unwrap();
                        record["monotonic_seq"] = (seq + (i + 1) * 1_000_000).into();
                    }
                    let body = serde_json::to_vec(&batch).unwrap();
                    match conn
                        .post(
                            "events",
                            run,
                            &node,
                            i,
                            "application/json",
                            Bytes::from(body.clone()),
                        )
                        .await
                    {
                        Ok(reply) if reply.status == 200 => {
                            let seq = ack(&reply).unwrap().seq.expect("a staged post's number");
                            acked.lock().unwrap().insert((node.clone(), seq), body);
                        }
                        _ => return,
                    }
                }
            }));
        }
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        child.start_kill().unwrap(); // SIGKILL
        child.wait().await.unwrap();
        for t in tasks {
            t.await.unwrap();
        }
        let acked = acked.lock().unwrap().clone();
        assert!(
            acked.len() >= 10,
            "only {} posts were acknowledged before the kill",
            acked.len()
        );

        // On disk: every acknowledged post whole, numbers 1..=n without a gap, no temporary file.
        let (mut child, addr) = spawn_binary(root.path(), false).await;
        let mut highest = BTreeMap::new();
        for (node, _, _) in &nodes {
            let dir = root.path().join("staging").join(run).join(node);
            let mut seqs = Vec::new();
            for e in std::fs::read_dir(&dir).unwrap() {
                let name = e.unwrap().file_name().into_string().unwrap();
                assert!(
                    !name.starts_with('.'),
                    "a temporary file survived the restart: {name}"
                );
                if let Some(n) = name
                    .strip_prefix("events-")
                    .and_then(|n| n.strip_suffix(".json"))
                {
                    seqs.push(n.parse::<u64>().unwrap());
                }
            }
            seqs.sort();
            assert_eq!(
                seqs,
                (1..=seqs.len() as u64).collect::<Vec<_>>(),
                "{node}: numbers in sequence"
            );
            highest.insert(node.clone(), seqs.len() as u64);
        }
        for ((node, seq), body) in &acked {
            let path = root
                .path()
                .join("staging")
                .join(run)
                .join(node)
                .join(format!("events-{seq:06}.json"));
            assert_eq!(&std::fs::read(&path).unwrap(), body, "{}", path.display());
        }

        // Numbering goes on after what is on disk, and the run assembles into a valid bundle.
        let mut conn = Connection::new(addr);
        let (node, _, events) = &nodes[0];
        let reply = post(&mut conn, "events", run, node, events).await;
        assert_eq!(ack(&reply).unwrap().seq, Some(highest[node] + 1));
        let fin = post(
            &mut conn,
            "finalize",
            run,
            node,
            b"{\"exit_reason\":\"completed\"}",
        )
        .await;
        assert_eq!(fin.status, 200, "{}", String::from_utf8_lossy(&fin.body));
        let served = conn.get(&format!("/diag/bundle/{run}")).await.unwrap();
        let (_, report) = open_bundle(&served.body);
        assert!(report.is_clean(), "{:?}", report.problems);
        child.start_kill().unwrap();
        child.wait().await.unwrap();
    })
    .await;
}
