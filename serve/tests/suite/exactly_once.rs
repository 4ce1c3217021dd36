//! Exactly once through a faulty network: a real bundle's nodes post their records through the
//! testkit's fault-injecting proxy (dropped requests, lost answers, connections closed mid-body,
//! delays, partitions, by a seeded schedule) to the real binary, which is killed (SIGKILL) and
//! restarted on the same root midway; each node retries each post until it gets a 200, as
//! swactor's spool does. For every seed, the served bundle holds every record exactly once, in
//! each node's order (its files equal the original's), and `check` finds no sequence violation.
//!
//! CI runs three seeds; a longer run by hand takes more:
//! `DIAGWIRE_FAULT_SEEDS=30 cargo test -p diagwire-serve --all-features --test suite exactly_once`
//! (seeds 11, 22, 33, …, each bounded to 30 s).

use crate::common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use common::*;
use diagwire::bundle::BundleContents;
use diagwire::bundle::read::{Limits, read_all};
use diagwire::v1::Manifest;
use diagwire_serve::client::Connection;
use diagwire_testkit::proxy::{Proxy, Schedule};

/// The seeds CI runs; `DIAGWIRE_FAULT_SEEDS=N` runs the first N of 11, 22, 33, ….
const SEEDS: usize = 3;

fn seeds() -> Vec<u64> {
    let n = std::env::var("DIAGWIRE_FAULT_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(SEEDS);
    (1..=n as u64).map(|i| 11 * i).collect()
}
const BUNDLE: &str = "n3-relay-flap";

/// A node's posts in its order: (route, body).
type Plan = Vec<(String, Vec<u8>)>;

/// The original bundle, each node's id and posts, and the finalize's node and body.
type Plans = (BundleContents, Vec<(String, Plan)>, (String, Vec<u8>));

/// The original bundle, each node's posts in its order (the library's post plan), and the
/// finalize (node, body).
fn plans() -> Plans {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/bundles")
        .join(BUNDLE);
    let (original, errors) = read_all(&src, Limits::default()).unwrap();
    assert!(errors.is_empty());
    let manifest: Manifest = serde_json::from_slice(&original.files["MANIFEST.json"]).unwrap();
    let (plans, mut finalizes) = node_posts(&original, &manifest);
    assert_eq!(finalizes.len(), 1, "the bundle has one finalize");
    let finalize = finalizes.remove(0);
    (original, plans, finalize)
}

/// Posts until the collector answers 200, with a small backoff; each attempt on a connection of
/// its own (the proxy decides its fault per connection). Bounded: 400 attempts.
async fn deliver(addr: SocketAddr, route: &str, node: &str, body: &[u8]) -> serde_json::Value {
    for attempt in 0..400u64 {
        let mut conn = Connection::new(addr);
        let sent = tokio::time::timeout(
            Duration::from_secs(5),
            conn.post(
                route,
                BUNDLE,
                node,
                attempt,
                "application/json",
                Bytes::copy_from_slice(body),
            ),
        )
        .await;
        if let Ok(Ok(reply)) = &sent
            && reply.status == 200
        {
            return json(reply);
        }
        tokio::time::sleep(Duration::from_millis(5 + 5 * attempt.min(10))).await;
    }
    panic!("{node}: a {route} post was not acknowledged after 400 attempts");
}

/// The records of a bundle as JSON values by path, the manifest left out.
fn records(c: &BundleContents) -> BTreeMap<String, serde_json::Value> {
    c.files
        .iter()
        .filter(|(p, _)| p.as_str() != "MANIFEST.json")
        .map(|(p, b)| (p.clone(), serde_json::from_slice(b).unwrap()))
        .collect()
}

/// The sequence rules' findings on a served bundle.
fn sequence_findings(tar: &[u8]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bundle.tar.gz");
    std::fs::write(&path, tar).unwrap();
    let checked = diagwire_check::check_bundle(
        &path,
        Limits::default(),
        &diagwire_check::Rulebook::builtin(),
        diagwire_check::Options::default(),
        false,
    )
    .unwrap();
    checked
        .report
        .rules
        .iter()
        .filter(|r| r.id.starts_with("seq."))
        .flat_map(|r| {
            r.findings
                .iter()
                .map(|f| format!("{}: {}", r.id, f.message))
        })
        .collect()
}

/// One seed: every post delivered through the proxy, the collector killed and restarted once
/// half of them were acknowledged. Returns what the proxy did.
async fn run(seed: u64) -> [u64; 6] {
    let (original, plans, (finalizer, finalize)) = plans();
    let total: usize = plans.iter().map(|(_, p)| p.len()).sum();
    let root = tempfile::tempdir().unwrap();
    let (mut child, addr) = spawn_binary(root.path(), false).await;
    let proxy = Proxy::start(addr, Schedule::mixed(seed)).unwrap();
    let via = proxy.addr;
    let acked = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for (node, plan) in plans {
        let acked = acked.clone();
        tasks.push(tokio::spawn(async move {
            for (route, body) in plan {
                deliver(via, &route, &node, &body).await;
                acked.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    // The collector killed once half the posts were acknowledged, then started again.
    while acked.load(Ordering::SeqCst) < total / 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    let (mut child, addr) = spawn_binary(root.path(), false).await;
    proxy.set_upstream(addr);
    for t in tasks {
        t.await.unwrap();
    }
    let ack = deliver(via, "finalize", &finalizer, &finalize).await;
    assert!(ack["body"]["bundle_path"].is_string(), "seed {seed}: {ack}");

    let mut conn = Connection::new(addr);
    let served = conn.get(&format!("/diag/bundle/{BUNDLE}")).await.unwrap();
    assert_eq!(served.status, 200);
    let (bundle, report) = open_bundle(&served.body);
    assert!(report.is_clean(), "seed {seed}: {:?}", report.problems);
    assert_eq!(
        records(&bundle),
        records(&original),
        "seed {seed}: every record exactly once, in each node's order"
    );
    assert_eq!(
        sequence_findings(&served.body),
        Vec::<String>::new(),
        "seed {seed}"
    );
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    proxy.counts()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_record_is_stored_exactly_once_through_faults_and_a_crash() {
    let seeds = seeds();
    bounded(30 * seeds.len() as u64, async {
        let mut faults = [0u64; 6];
        for seed in seeds.iter().copied() {
            let counts = run(seed).await;
            for (sum, n) in faults.iter_mut().zip(counts) {
                *sum += n;
            }
        }
        // Passed, dropped, lost answers, closed mid-body, delayed, partitioned: each happened.
        assert!(faults.iter().all(|&n| n > 0), "{faults:?}");
        eprintln!(
            "{} seed(s): passed {}, dropped {}, answers lost {}, closed mid-body {}, delayed {}, \
             partitioned {}",
            seeds.len(),
            faults[0],
            faults[1],
            faults[2],
            faults[3],
            faults[4],
            faults[5]
        );
    })
    .await;
}
