//! The live stream over HTTP: a subscriber from before what the collector keeps in memory —
//! resuming, falling behind, coming after the finalize or after a restart — reads the older
//! records back from staging, each once and in stream order; a run whose bundle is written ends
//! with an `end` event; the blocking follower yields the same records.

use crate::common;

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use common::*;
use diagwire_serve::client::{Connection, StreamEvent, Subscription, follow, subscribe};

fn batch(copies: usize) -> Vec<u8> {
    let one: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../examples/bundles/n3-relay-flap/stage-0/events/events-000004.json"),
        )
        .unwrap(),
    )
    .unwrap();
    // Each copy's records numbered apart, as a node numbers its events.
    let items: Vec<serde_json::Value> = (0..copies as u64)
        .flat_map(|k| {
            let mut copy = one.as_array().unwrap().clone();
            for r in &mut copy {
                r["monotonic_seq"] = (r["monotonic_seq"].as_u64().unwrap() + k * 1_000).into();
            }
            copy
        })
        .collect();
    serde_json::to_vec(&items).unwrap()
}

async fn post_batches(addr: std::net::SocketAddr, run: &str, n: usize, body: &[u8]) {
    static BATCHES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let mut conn = Connection::new(addr);
    for i in 0..n {
        // Each batch's records numbered after the previous batch's, as a node numbers them.
        let offset = BATCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed) * 1_000_000;
        let mut records: serde_json::Value = serde_json::from_slice(body).unwrap();
        for r in records.as_array_mut().unwrap() {
            r["monotonic_seq"] = (r["monotonic_seq"].as_u64().unwrap() + offset).into();
        }
        let r = conn
            .post(
                "events",
                run,
                "n1",
                i as u64,
                "application/json",
                Bytes::from(serde_json::to_vec(&records).unwrap()),
            )
            .await
            .unwrap();
        assert_eq!(r.status, 200);
    }
}

/// What a subscription delivers, `take` times at most (or until it closes): `<id>:<kind>#<seq>`
/// per record, `lagged N`, `end N`.
async fn read(sub: &mut Subscription, take: usize) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..take {
        match bounded(10, sub.next()).await {
            Some(Ok(StreamEvent::Record { id, record })) => {
                out.push(format!("{id}:{}#{}", record.kind.as_str(), record.seq))
            }
            Some(Ok(StreamEvent::Lagged { skipped })) => out.push(format!("lagged {skipped}")),
            Some(Ok(StreamEvent::End { last })) => out.push(format!("end {last}")),
            Some(Err(e)) => panic!("{e}"),
            None => break,
        }
    }
    out
}

/// `<id>:events#<id>` for ids `from..=to`: one node posting batches only.
fn batches(from: u64, to: u64) -> Vec<String> {
    (from..=to).map(|i| format!("{i}:events#{i}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_from_before_the_buffer_reads_the_older_records_back_from_staging() {
    bounded(30, async {
        let root = tempfile::tempdir().unwrap();
        let mut cfg = config(root.path());
        cfg.live_replay = 8;
        let server = start(cfg).await;
        post_batches(server.addr, "r", 20, &batch(1)).await;
        let url = format!("http://{}/diag/stream/r", server.addr);
        // Ids 1..=20; 13..=20 are in memory, the others are read back.
        let mut sub = subscribe(&url, Some(2)).await.unwrap();
        assert_eq!(read(&mut sub, 18).await, batches(3, 20));
        let mut sub = subscribe(&format!("{url}?from=0"), None).await.unwrap();
        assert_eq!(read(&mut sub, 20).await, batches(1, 20));
        // `?from=` resumes the same way, and the blocking follower reads it.
        let mut follower = tokio::task::spawn_blocking(move || {
            let mut f = follow(&format!("{url}?from=18"), None).unwrap();
            let got: Vec<_> = (0..2)
                .map(|_| f.next_within(Duration::from_secs(5)).unwrap().unwrap())
                .collect();
            got
        });
        let got = bounded(10, &mut follower).await.unwrap();
        let ids: Vec<u64> = got
            .iter()
            .map(|e| match e {
                StreamEvent::Record { id, .. } => *id,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(ids, [19, 20]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_falls_behind_reads_every_record_without_a_gap() {
    bounded(60, async {
        let root = tempfile::tempdir().unwrap();
        let mut cfg = config(root.path());
        cfg.live_replay = 2;
        let server = start(cfg).await;
        let url = format!("http://{}/diag/stream/slow", server.addr);
        let mut sub = subscribe(&url, None).await.unwrap();
        // About half a MB a record, far more than the socket buffers hold while nobody reads.
        let posts = 30;
        post_batches(server.addr, "slow", posts, &batch(40)).await;
        assert_eq!(read(&mut sub, posts).await, batches(1, posts as u64));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_finalize_a_subscriber_reads_the_whole_run_then_end() {
    bounded(30, async {
        let root = tempfile::tempdir().unwrap();
        let server = start(config(root.path())).await;
        post_batches(server.addr, "done", 3, &batch(1)).await;
        let mut conn = Connection::new(server.addr);
        let fin = post(
            &mut conn,
            "finalize",
            "done",
            "n1",
            br#"{"exit_reason":"ok"}"#,
        )
        .await;
        assert_eq!(fin.status, 200);
        let url = format!("http://{}/diag/stream/done", server.addr);
        let mut want = batches(1, 3);
        want.extend(["4:finalize#1".to_owned(), "end 4".to_owned()]);
        for from in [Some(0), Some(2)] {
            let mut sub = subscribe(&url, from).await.unwrap();
            let skip = from.unwrap_or(0) as usize;
            assert_eq!(read(&mut sub, 10).await, want[skip..], "from {from:?}");
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_the_staged_records_are_read_back_boot_records_first() {
    bounded(30, async {
        let root = tempfile::tempdir().unwrap();
        let boot = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../examples/bundles/n3-relay-flap/stage-0/boot.json"),
        )
        .unwrap();
        {
            let server = start(config(root.path())).await;
            post_batches(server.addr, "r", 2, &batch(1)).await;
            let mut conn = Connection::new(server.addr);
            assert_eq!(post(&mut conn, "boot", "r", "n1", &boot).await.status, 200);
        }
        let server = start(config(root.path())).await;
        post_batches(server.addr, "r", 1, &batch(1)).await;
        let url = format!("http://{}/diag/stream/r", server.addr);
        let mut sub = subscribe(&url, Some(0)).await.unwrap();
        assert_eq!(
            read(&mut sub, 4).await,
            ["1:boot#1", "2:events#1", "3:events#2", "4:events#3"]
        );
    })
    .await;
}
