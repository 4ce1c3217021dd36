//! The live stream over HTTP: a subscriber that resumes from before what the collector keeps is
//! told how many records it missed, then gets the rest; one that falls behind is told, never
//! skipped silently; the blocking follower yields the same records.

mod common;

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use common::*;
use diagwire_serve::client::{Connection, StreamEvent, follow, subscribe};

fn batch(copies: usize) -> Vec<u8> {
    let one: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../examples/bundles/n3-relay-flap/stage-0/events/events-000004.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let items: Vec<serde_json::Value> = (0..copies)
        .flat_map(|_| one.as_array().unwrap().clone())
        .collect();
    serde_json::to_vec(&items).unwrap()
}

async fn post_batches(addr: std::net::SocketAddr, run: &str, n: usize, body: &[u8]) {
    let mut conn = Connection::new(addr);
    for i in 0..n {
        let r = conn
            .post(
                "events",
                run,
                "n1",
                i as u64,
                "application/json",
                Bytes::copy_from_slice(body),
            )
            .await
            .unwrap();
        assert_eq!(r.status, 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_from_before_the_replay_buffer_says_how_many_were_missed() {
    bounded(30, async {
        let root = tempfile::tempdir().unwrap();
        let mut cfg = config(root.path());
        cfg.live_replay = 8;
        let server = start(cfg).await;
        post_batches(server.addr, "r", 20, &batch(1)).await;
        let url = format!("http://{}/diag/stream/r", server.addr);
        // Ids 1..=20; 13..=20 are kept.
        let mut sub = subscribe(&url, Some(2)).await.unwrap();
        assert_eq!(
            sub.next().await.unwrap().unwrap(),
            StreamEvent::Lagged { skipped: 10 }
        );
        for want in 13..=20 {
            match sub.next().await.unwrap().unwrap() {
                StreamEvent::Record { id, record } => {
                    assert_eq!(id, want);
                    assert_eq!(
                        record.seq, want,
                        "one node, one kind: the file number is the stream id"
                    );
                }
                other => panic!("{other:?}"),
            }
        }
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
async fn a_subscriber_that_falls_behind_is_told_how_many_it_missed() {
    bounded(60, async {
        let root = tempfile::tempdir().unwrap();
        let mut cfg = config(root.path());
        cfg.live_replay = 2;
        let server = start(cfg).await;
        let url = format!("http://{}/diag/stream/slow", server.addr);
        let mut sub = subscribe(&url, None).await.unwrap();
        // About half a MB a record, far more than the socket buffers hold while nobody reads.
        let body = batch(40);
        let posts = 30;
        post_batches(server.addr, "slow", posts, &body).await;
        let (mut records, mut skipped, mut lagged) = (0u64, 0u64, 0);
        while records + skipped < posts as u64 {
            match bounded(10, sub.next()).await.unwrap().unwrap() {
                StreamEvent::Record { .. } => records += 1,
                StreamEvent::Lagged { skipped: n } => {
                    lagged += 1;
                    skipped += n;
                }
            }
        }
        assert!(lagged > 0, "the subscriber fell behind without being told");
        assert_eq!(records + skipped, posts as u64);
    })
    .await;
}
