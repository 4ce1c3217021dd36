//! The collector bounded as a whole, one hostile case each through one check: an events batch
//! of a hundred thousand bad records is explained within the problem limit, bodies past the
//! memory budget are answered 503 with `Retry-After`, subscribers and downloads have places of
//! their own (posters still post), the disk downloads hold is bounded, idle connections are
//! closed oldest first (a node connecting among thousands still posts), finalizes of one run are coalesced, a served bundle that is
//! current is the canonical tarball (no temporary), links planted under the root are refused
//! (nothing written outside it, nothing acknowledged lost) and never followed where assembly and
//! recovery at start-up read (nothing outside read, written or removed; each counted), the bundle of run `.hidden` survives
//! a restart, concurrent posts never pass a run's byte limit, finished runs give their place
//! back, and one run cannot take the live budget from the others. The cases about memory run the
//! real binary under a 2 GiB address-space cap (`ulimit -v 2097152`) and check it still serves a
//! normal node afterwards.

use crate::common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use common::*;
use diagwire_serve::Config;
use diagwire_serve::client::{Connection, StreamEvent, subscribe};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::Child;

fn example(path: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/bundles/n3-relay-flap")
            .join(path),
    )
    .unwrap()
}

/// An events batch of the example's records, repeated to at least `bytes`.
fn big_batch(bytes: usize) -> Vec<u8> {
    let records: Vec<serde_json::Value> =
        serde_json::from_slice(&example("stage-0/events/events-000001.json")).unwrap();
    let mut out = String::with_capacity(bytes + 4096);
    out.push('[');
    let mut i = 0;
    while out.len() < bytes {
        if i > 0 {
            out.push(',');
        }
        // Each record numbered anew, as a node numbers its events: a repeated record would be
        // left out as already staged.
        let mut record = records[i % records.len()].clone();
        record["monotonic_seq"] = serde_json::Value::from(i as u64);
        out.push_str(&record.to_string());
        i += 1;
    }
    out.push(']');
    out.into_bytes()
}

/// `[0,0,…]`: an events batch of `n` records none of which is an event record.
fn zeros(n: usize) -> Vec<u8> {
    let mut out = b"[0".to_vec();
    for _ in 1..n {
        out.extend_from_slice(b",0");
    }
    out.push(b']');
    out
}

#[derive(Debug, Clone, Copy)]
enum Case {
    ABatchOfAHundredThousandBadRecordsListsTheProblemLimitAndCountsTheRest,
    ABodyPastTheMemoryBudgetIs503WithRetryAfter,
    StreamsPastTheirPlacesAre503AndNodesStillPost,
    StreamsWaitingForRunsWithNoPostAreBounded,
    DownloadsPastTheirPlacesAre503,
    ADownloadPastTheDiskForDownloadsIs503,
    ThousandsOfIdleConnectionsAreClosedOldestFirstAndANodeStillPosts,
    ACurrentBundleIsServedFromTheCanonicalTarball,
    FinalizesOfOneRunAreCoalesced,
    ALinkPlantedUnderStagingIsRefusedAndNothingIsWrittenOutside,
    ALinkPlantedUnderQuarantineIsRefusedAndNothingIsWrittenOutside,
    ALinkPlantedAsANodeFolderIsNotFollowedByAssembly,
    ALinkPlantedAsAStagedFileIsNotFollowedByAssembly,
    LinksPlantedUnderTheRootAreNotFollowedAtStartUp,
    ALinkPlantedAsAStagedFileIsNotReadBackByTheStream,
    ALinkPlantedAsTheCanonicalTarballIsNotServed,
    TheBundleOfRunDotHiddenSurvivesARestart,
    ConcurrentPostsNeverPassARunsByteLimit,
    AFinishedRunGivesItsPlaceBack,
    OneRunCannotTakeTheLiveBudgetFromAnother,
}

const CASES: &[Case] = &[
    Case::ABatchOfAHundredThousandBadRecordsListsTheProblemLimitAndCountsTheRest,
    Case::ABodyPastTheMemoryBudgetIs503WithRetryAfter,
    Case::StreamsPastTheirPlacesAre503AndNodesStillPost,
    Case::StreamsWaitingForRunsWithNoPostAreBounded,
    Case::DownloadsPastTheirPlacesAre503,
    Case::ADownloadPastTheDiskForDownloadsIs503,
    Case::ThousandsOfIdleConnectionsAreClosedOldestFirstAndANodeStillPosts,
    Case::ACurrentBundleIsServedFromTheCanonicalTarball,
    Case::FinalizesOfOneRunAreCoalesced,
    Case::ALinkPlantedUnderStagingIsRefusedAndNothingIsWrittenOutside,
    Case::ALinkPlantedUnderQuarantineIsRefusedAndNothingIsWrittenOutside,
    Case::ALinkPlantedAsANodeFolderIsNotFollowedByAssembly,
    Case::ALinkPlantedAsAStagedFileIsNotFollowedByAssembly,
    Case::LinksPlantedUnderTheRootAreNotFollowedAtStartUp,
    Case::ALinkPlantedAsAStagedFileIsNotReadBackByTheStream,
    Case::ALinkPlantedAsTheCanonicalTarballIsNotServed,
    Case::TheBundleOfRunDotHiddenSurvivesARestart,
    Case::ConcurrentPostsNeverPassARunsByteLimit,
    Case::AFinishedRunGivesItsPlaceBack,
    Case::OneRunCannotTakeTheLiveBudgetFromAnother,
];

/// The attacks that cost memory, each against the real binary under the 2 GiB cap.
#[derive(Debug, Clone, Copy)]
enum Capped {
    APostOfTwoHundredKbOfZeros,
    SixtyFourConcurrentPostsOf31Mib,
    ThirtySubscribersThatNeverReadARunWithA30MibRecord,
    FortyConcurrentDownloadsOfDifferentRuns,
    FourThousandOneHundredSubscribersToRunsNeverPosted,
}

const CAPPED: &[Capped] = &[
    Capped::APostOfTwoHundredKbOfZeros,
    Capped::SixtyFourConcurrentPostsOf31Mib,
    Capped::ThirtySubscribersThatNeverReadARunWithA30MibRecord,
    Capped::FortyConcurrentDownloadsOfDifferentRuns,
    Capped::FourThousandOneHundredSubscribersToRunsNeverPosted,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_collector_is_bounded_as_a_whole() {
    bounded(300, async {
        let mut failures = Vec::new();
        for case in CASES {
            if let Err(e) = bounded(60, check(*case)).await {
                failures.push(format!("{case:?}: {e}"));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_a_2_gib_address_space_cap_the_collector_answers_every_attack_and_keeps_serving() {
    bounded(1_200, async {
        let mut failures = Vec::new();
        for case in CAPPED {
            if let Err(e) = bounded(400, check_capped(*case)).await {
                failures.push(format!("{case:?}: {e}"));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    })
    .await;
}

/// A request's head.
fn head(method: &str, path: &str, run: &str, node: &str, extra: &str) -> String {
    format!(
        "{method} {path} HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\nx-run-id: {run}\r\nx-node-id: {node}\r\n{extra}\r\n"
    )
}

/// Reads a reply's head (to the blank line): its status and its text.
async fn read_head(s: &mut TcpStream) -> Result<(u16, String), String> {
    let mut reply = Vec::new();
    let mut buf = [0u8; 1];
    while !reply.ends_with(b"\r\n\r\n") {
        // Generous: a debug build parses a 31 MiB body slowly on a shared machine.
        match tokio::time::timeout(Duration::from_secs(240), s.read(&mut buf)).await {
            Err(_) => return Err("no reply within 240 s".into()),
            Ok(Ok(0)) | Ok(Err(_)) => return Err("closed without a reply".into()),
            Ok(Ok(_)) => reply.push(buf[0]),
        }
    }
    let text = String::from_utf8_lossy(&reply).into_owned();
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|t| t.get(..3))
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| format!("not a reply: {text:?}"))?;
    Ok((status, text))
}

/// Posts `body` as a node does with `Expect: 100-continue`: the body is sent once the
/// collector asks for it, so a refusal before reading it is read cleanly. The status and head.
async fn post_expecting(
    addr: SocketAddr,
    kind: &str,
    run: &str,
    node: &str,
    body: &[u8],
) -> Result<(u16, String), String> {
    let mut s = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let extra = format!(
        "content-length: {}\r\nexpect: 100-continue\r\nconnection: close\r\n",
        body.len()
    );
    s.write_all(head("POST", &format!("/diag/{kind}"), run, node, &extra).as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let (status, text) = read_head(&mut s).await?;
    if status != 100 {
        return Ok((status, text));
    }
    s.write_all(body).await.map_err(|e| e.to_string())?;
    read_head(&mut s).await
}

/// A `GET` whose reply is never read: the connection, kept open.
async fn never_read(addr: SocketAddr, path: &str) -> Result<TcpStream, String> {
    let mut s = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let request = format!("GET {path} HTTP/1.1\r\nhost: t\r\n\r\n");
    s.write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    Ok(s)
}

/// A `GET` and its reply's head (the body left unread).
async fn get_head(addr: SocketAddr, path: &str) -> Result<(u16, String), String> {
    let mut s = never_read(addr, path).await?;
    read_head(&mut s).await
}

/// A node folder outside the root, `node/`, holding a boot and an events batch.
fn plant_node(outside: &Path, boot: &[u8]) {
    let node = outside.join("node");
    std::fs::create_dir_all(&node).unwrap();
    std::fs::write(node.join("boot-000001.json"), boot).unwrap();
    std::fs::write(
        node.join("events-000001.json"),
        example("stage-0/events/events-000001.json"),
    )
    .unwrap();
}

/// Every path under `dir` with its bytes (a folder's as empty).
fn outside_state(dir: &Path) -> Vec<(String, Vec<u8>)> {
    tree(dir)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(dir.join(&p)).unwrap_or_default();
            (p, bytes)
        })
        .collect()
}

/// The value of the counter `name` on the collector's `/metrics`.
async fn metric(conn: &mut Connection, name: &str) -> Result<u64, String> {
    let metrics = conn.get("/metrics").await.map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&metrics.body).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .ok_or_else(|| format!("no {name} in /metrics"))
}

/// Whether the collector closed the connection (it reads to its end; anything it sent first,
/// a reply kept alive, is passed over).
async fn closed(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(60), s.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

/// Posts three events batches of 8 MiB of records that compress badly, so the run's bundle
/// (about 4.5 MB) outgrows loopback's socket buffers and a download not read stays in flight.
async fn post_noise(conn: &mut Connection, run: &str) -> Result<(), String> {
    let mut noise = String::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..(8 << 20) / 16 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        noise.push_str(&format!("{x:016x}"));
    }
    let mut record: serde_json::Value = serde_json::from_slice::<Vec<serde_json::Value>>(&example(
        "stage-0/events/events-000001.json",
    ))
    .unwrap()[0]
        .clone();
    record["noise"] = noise.into();
    let body = serde_json::to_vec(&vec![record]).unwrap();
    for _ in 0..3 {
        let reply = post(conn, "events", run, "n", &body).await;
        ensure(
            reply.status == 200,
            format!("a large post: {}", reply.status),
        )?;
    }
    Ok(())
}

fn is_busy((status, text): &(u16, String)) -> bool {
    *status == 503 && text.to_ascii_lowercase().contains("retry-after: ")
}

/// A normal node still posts: its boot is acknowledged.
async fn a_node_still_posts(addr: SocketAddr, run: &str) -> Result<(), String> {
    let mut conn = Connection::new(addr);
    let reply = post(
        &mut conn,
        "boot",
        run,
        "normal-node",
        &example("stage-0/boot.json"),
    )
    .await;
    if reply.status != 200 {
        return Err(format!("a normal node's boot: status {}", reply.status));
    }
    Ok(())
}

/// Every path under `dir`, relative.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
            if p.is_dir() && !p.is_symlink() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

fn ensure(ok: bool, what: impl Into<String>) -> Result<(), String> {
    if ok { Ok(()) } else { Err(what.into()) }
}

async fn check(case: Case) -> Result<(), String> {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let mut cfg: Config = config(root.path());
    cfg.finalize_wait = Duration::from_millis(300);
    match case {
        Case::ABodyPastTheMemoryBudgetIs503WithRetryAfter => {
            cfg.live_budget_bytes = 1 << 20;
            cfg.limits.memory_budget_bytes = 9 << 20;
        }
        Case::StreamsPastTheirPlacesAre503AndNodesStillPost => cfg.limits.max_streams = 4,
        Case::StreamsWaitingForRunsWithNoPostAreBounded => cfg.limits.max_waiting_runs = 2,
        Case::DownloadsPastTheirPlacesAre503 => cfg.limits.max_downloads = 1,
        // One bundle of the run (about 4.5 MB) fits, two do not; the places (8) are not spent.
        Case::ADownloadPastTheDiskForDownloadsIs503 => {
            cfg.limits.max_download_disk_bytes = 6 << 20;
        }
        Case::ThousandsOfIdleConnectionsAreClosedOldestFirstAndANodeStillPosts => {
            cfg.limits.max_connections = 64;
            cfg.limits.max_idle_connections = 32;
        }
        Case::FinalizesOfOneRunAreCoalesced => cfg.finalize_wait = Duration::from_secs(1),
        Case::ConcurrentPostsNeverPassARunsByteLimit => cfg.limits.max_run_bytes = 1 << 20,
        Case::AFinishedRunGivesItsPlaceBack => cfg.limits.max_runs = 2,
        Case::OneRunCannotTakeTheLiveBudgetFromAnother => {
            cfg.live_budget_bytes = 4 << 20;
            cfg.live_run_bytes = 1 << 20;
        }
        _ => {}
    }
    let server = start(cfg.clone()).await;
    let addr = server.addr;
    let mut conn = Connection::new(addr);
    let boot = example("stage-0/boot.json");
    match case {
        Case::ABatchOfAHundredThousandBadRecordsListsTheProblemLimitAndCountsTheRest => {
            let n = 100_000;
            let reply = post(&mut conn, "events", "r", "n", &zeros(n)).await;
            ensure(reply.status == 200, format!("status {}", reply.status))?;
            let ack = ack(&reply)?;
            let listed = &ack.problems;
            ensure(
                listed.len() == 100,
                format!("{} problems listed", listed.len()),
            )?;
            // Each record explained is listed whole; every other one is counted.
            let explained: std::collections::BTreeSet<String> = listed
                .iter()
                .filter_map(|p| p.pointer.split('/').nth(1).map(str::to_owned))
                .collect();
            let omitted = ack.problems_omitted;
            ensure(
                explained.len() as u64 + omitted == n as u64,
                format!("{} records explained, {omitted} counted", explained.len()),
            )?;
            let at = ack.quarantined.unwrap_or_default();
            let why_path = root.path().join(at.replace(".json", ".why.json"));
            let why: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&why_path).map_err(|e| e.to_string())?)
                    .map_err(|e| e.to_string())?;
            ensure(
                why["problems"].as_array().map_or(0, Vec::len) == 100
                    && why["problems_omitted"] == serde_json::json!(omitted),
                format!("the .why.json: {}", why["problems_omitted"]),
            )?;
            a_node_still_posts(addr, "r").await
        }
        Case::ABodyPastTheMemoryBudgetIs503WithRetryAfter => {
            let body = big_batch(3 << 20);
            let got = post_expecting(addr, "events", "r", "n", &body).await?;
            ensure(is_busy(&got), format!("a 3 MiB post: {got:?}"))?;
            a_node_still_posts(addr, "r").await
        }
        Case::StreamsPastTheirPlacesAre503AndNodesStillPost => {
            let mut held = Vec::new();
            for i in 0..4 {
                held.push(never_read(addr, &format!("/diag/stream/run-{i}?from=0")).await?);
            }
            // The four are served before the fifth asks (each sees its headers).
            for s in &mut held {
                let (status, _) = read_head(s).await?;
                ensure(status == 200, format!("a stream: {status}"))?;
            }
            let fifth = get_head(addr, "/diag/stream/run-5").await?;
            ensure(is_busy(&fifth), format!("the fifth stream: {fifth:?}"))?;
            a_node_still_posts(addr, "r").await
        }
        Case::StreamsWaitingForRunsWithNoPostAreBounded => {
            let mut held = Vec::new();
            for i in 0..2 {
                let mut s = never_read(addr, &format!("/diag/stream/none-{i}")).await?;
                let (status, _) = read_head(&mut s).await?;
                ensure(status == 200, format!("a waiting stream: {status}"))?;
                held.push(s);
            }
            let third = get_head(addr, "/diag/stream/none-3").await?;
            ensure(is_busy(&third), format!("the third waiting run: {third:?}"))?;
            a_node_still_posts(addr, "r").await?;
            let known = get_head(addr, "/diag/stream/r").await?;
            ensure(known.0 == 200, format!("a run with posts: {known:?}"))
        }
        Case::DownloadsPastTheirPlacesAre503 | Case::ADownloadPastTheDiskForDownloadsIs503 => {
            post(&mut conn, "boot", "r", "n", &boot).await;
            post_noise(&mut conn, "r").await?;
            let mut first = never_read(addr, "/diag/bundle/r").await?;
            let (status, _) = read_head(&mut first).await?;
            ensure(status == 200, format!("the first download: {status}"))?;
            let second = get_head(addr, "/diag/bundle/r").await?;
            ensure(is_busy(&second), format!("the second download: {second:?}"))?;
            drop(first);
            a_node_still_posts(addr, "r").await
        }
        Case::ThousandsOfIdleConnectionsAreClosedOldestFirstAndANodeStillPosts => {
            // Kept alive after one request, then connected without ever sending: far more than
            // the 64 connections the collector serves at once.
            let mut kept = Vec::new();
            for _ in 0..30 {
                let mut s = never_read(addr, "/diag/runs").await?;
                let (status, _) = read_head(&mut s).await?;
                ensure(status == 200, format!("a request: {status}"))?;
                kept.push(s);
            }
            let mut silent = Vec::new();
            for _ in 0..2_000 {
                silent.push(TcpStream::connect(addr).await.map_err(|e| e.to_string())?);
            }
            a_node_still_posts(addr, "r").await?;
            // The oldest idle connections were closed: every kept-alive one and all but the
            // last few silent ones (at most 32 stay idle).
            for (i, s) in kept.iter_mut().chain(&mut silent[..1_900]).enumerate() {
                ensure(
                    closed(s).await,
                    format!("idle connection {i} is still open"),
                )?;
            }
            let closed_idle =
                metric(&mut conn, "diagwire_serve_idle_connections_closed_total").await?;
            ensure(
                closed_idle >= 1_930,
                format!("{closed_idle} connections counted as closed idle"),
            )
        }
        Case::ACurrentBundleIsServedFromTheCanonicalTarball => {
            post(&mut conn, "boot", "r", "n", &boot).await;
            let fin = post(
                &mut conn,
                "finalize",
                "r",
                "n",
                br#"{"exit_reason":"done"}"#,
            )
            .await;
            ensure(fin.status == 200, format!("the finalize: {}", fin.status))?;
            let before = server.collector.store.bounds.assemblies_begun();
            let mut held = Vec::new();
            for _ in 0..5 {
                let mut s = never_read(addr, "/diag/bundle/r").await?;
                let (status, _) = read_head(&mut s).await?;
                ensure(status == 200, format!("a download: {status}"))?;
                held.push(s);
            }
            let after = server.collector.store.bounds.assemblies_begun();
            // The first download after the restart-free finalize is known current: none assembles.
            ensure(after == before, format!("{} assemblies", after - before))?;
            let work: Vec<String> = tree(&root.path().join("bundles"))
                .into_iter()
                .filter(|n| n != "r.tar.gz")
                .collect();
            ensure(
                work.is_empty(),
                format!("temporaries in bundles/: {work:?}"),
            )
        }
        Case::FinalizesOfOneRunAreCoalesced => {
            let mut tasks = Vec::new();
            for i in 0..40 {
                tasks.push(tokio::spawn(async move {
                    let mut conn = Connection::new(addr);
                    let node = format!("node-{i}");
                    post(
                        &mut conn,
                        "finalize",
                        "r",
                        &node,
                        br#"{"exit_reason":"done"}"#,
                    )
                    .await
                    .status
                }));
            }
            for t in tasks {
                let status = t.await.map_err(|e| e.to_string())?;
                ensure(status == 200, format!("a finalize: {status}"))?;
            }
            let n = server.collector.store.bounds.assemblies_begun();
            ensure(n < 10, format!("40 finalizes made {n} assemblies"))
        }
        Case::ALinkPlantedUnderStagingIsRefusedAndNothingIsWrittenOutside
        | Case::ALinkPlantedUnderQuarantineIsRefusedAndNothingIsWrittenOutside => {
            let (folder, kind, body): (&str, &str, &[u8]) = match case {
                Case::ALinkPlantedUnderStagingIsRefusedAndNothingIsWrittenOutside => {
                    ("staging", "boot", &boot)
                }
                _ => ("quarantine", "boot", b"[1,2,3]"),
            };
            std::os::unix::fs::symlink(outside.path(), root.path().join(folder).join("planted"))
                .unwrap();
            let reply = post(&mut conn, kind, "planted", "n", body).await;
            ensure(
                reply.status == 500,
                format!("a post through a planted link: status {}", reply.status),
            )?;
            let message = json(&reply)["error"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            ensure(
                message.contains("planted") && message.contains("link"),
                format!("the error does not locate the link: {message:?}"),
            )?;
            ensure(
                tree(outside.path()).is_empty(),
                format!("written outside the root: {:?}", tree(outside.path())),
            )?;
            a_node_still_posts(addr, "r").await
        }
        Case::ALinkPlantedAsANodeFolderIsNotFollowedByAssembly
        | Case::ALinkPlantedAsAStagedFileIsNotFollowedByAssembly => {
            post(&mut conn, "boot", "r", "n", &boot).await;
            let node = root.path().join("staging/r/n");
            match case {
                Case::ALinkPlantedAsANodeFolderIsNotFollowedByAssembly => {
                    plant_node(outside.path(), &boot);
                    std::os::unix::fs::symlink(
                        outside.path().join("node"),
                        root.path().join("staging/r/planted"),
                    )
                    .unwrap();
                }
                _ => {
                    plant_node(outside.path(), &boot);
                    std::os::unix::fs::symlink(
                        outside.path().join("node/events-000001.json"),
                        node.join("events-000001.json"),
                    )
                    .unwrap();
                }
            }
            let before = outside_state(outside.path());
            let fin = post(&mut conn, "finalize", "r", "n", br#"{"exit_reason":"x"}"#).await;
            ensure(fin.status == 200, format!("the finalize: {}", fin.status))?;
            let listing = diagwire_serve::assembly::Listing::of_archive(
                &root.path().join("bundles/r.tar.gz"),
            )
            .ok_or("the bundle does not read")?;
            let files: Vec<&str> = listing.files.iter().map(|(p, _)| p.as_str()).collect();
            ensure(
                listing.manifest.nodes.len() == 1 && !files.iter().any(|p| p.contains("events")),
                format!("the bundle holds what the link points to: {files:?}"),
            )?;
            ensure(
                outside_state(outside.path()) == before,
                "what the link points to changed",
            )?;
            let refused = metric(&mut conn, "diagwire_serve_links_refused_total").await?;
            ensure(refused >= 1, format!("{refused} links counted"))
        }
        Case::LinksPlantedUnderTheRootAreNotFollowedAtStartUp => {
            post(&mut conn, "boot", "r", "n", &boot).await;
            drop(server);
            plant_node(outside.path(), &boot);
            let staging = root.path().join("staging");
            let at = |target: &str, link: &Path| {
                std::os::unix::fs::symlink(outside.path().join(target), link).unwrap();
            };
            // A run folder, a node folder, a staged file, a post's temporary name and work in
            // progress in bundles/, each a link out of the root.
            at("node", &staging.join("linked-run"));
            at("node", &staging.join("r/planted"));
            at(
                "node/events-000001.json",
                &staging.join("r/n/events-000001.json"),
            );
            at(
                "node/boot-000001.json",
                &staging.join("r/n/.boot-000002.json.partial-1-1"),
            );
            at("node", &root.path().join("bundles/~r.assembling-1-1"));
            let before = outside_state(outside.path());
            let again = start(cfg).await;
            ensure(
                outside_state(outside.path()) == before,
                "what a link points to changed at start-up",
            )?;
            let mut conn = Connection::new(again.addr);
            let runs = conn.get("/diag/runs").await.map_err(|e| e.to_string())?;
            let runs: serde_json::Value =
                serde_json::from_slice(&runs.body).map_err(|e| e.to_string())?;
            let expected = serde_json::json!([{"run_id": "r", "nodes": [
                {"node_id": "n", "boot_recorded": true, "event_batches": 0}
            ]}]);
            let got: Vec<serde_json::Value> = runs
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| {
                    let nodes: Vec<serde_json::Value> = r["nodes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|n| {
                            serde_json::json!({"node_id": n["node_id"],
                                "boot_recorded": n["boot_recorded"],
                                "event_batches": n["event_batches"]})
                        })
                        .collect();
                    serde_json::json!({"run_id": r["run_id"], "nodes": nodes})
                })
                .collect();
            ensure(
                serde_json::Value::Array(got.clone()) == expected,
                format!("recovered through a link: {got:?}"),
            )?;
            ensure(
                !root.path().join("bundles/~r.assembling-1-1").exists()
                    && !staging.join("r/n/.boot-000002.json.partial-1-1").exists(),
                "work in progress left at start-up",
            )?;
            let refused = metric(&mut conn, "diagwire_serve_links_refused_total").await?;
            ensure(refused >= 5, format!("{refused} links counted"))
        }
        Case::ALinkPlantedAsAStagedFileIsNotReadBackByTheStream => {
            post(&mut conn, "boot", "r", "n", &boot).await;
            let events = example("stage-0/events/events-000001.json");
            post(&mut conn, "events", "r", "n", &events).await;
            let fin = post(&mut conn, "finalize", "r", "n", br#"{"exit_reason":"x"}"#).await;
            ensure(fin.status == 200, format!("the finalize: {}", fin.status))?;
            // The run's buffer was given back with its bundle written: a subscriber now reads
            // every record back from staging, where the events batch is now a link out.
            plant_node(outside.path(), &boot);
            let staged = root.path().join("staging/r/n/events-000001.json");
            std::fs::remove_file(&staged).unwrap();
            std::os::unix::fs::symlink(outside.path().join("node/events-000001.json"), &staged)
                .unwrap();
            let url = format!("http://{addr}/diag/stream/r");
            let mut sub = subscribe(&url, Some(0)).await.map_err(|e| e.to_string())?;
            let mut seen = Vec::new();
            for _ in 0..8 {
                let event = tokio::time::timeout(Duration::from_secs(30), sub.next())
                    .await
                    .map_err(|_| "nothing within 30 s".to_string())?;
                match event {
                    Some(Ok(StreamEvent::Record { record, .. })) => {
                        seen.push(format!("{:?}", record.kind));
                    }
                    Some(Ok(StreamEvent::Lagged { skipped })) => {
                        seen.push(format!("lagged {skipped}"))
                    }
                    Some(Ok(StreamEvent::End { .. })) | None => break,
                    Some(Err(e)) => return Err(e.to_string()),
                }
            }
            ensure(
                seen.len() == 3 && seen[1] == "lagged 1",
                format!("the stream read through the link: {seen:?}"),
            )
        }
        Case::ALinkPlantedAsTheCanonicalTarballIsNotServed => {
            post(&mut conn, "boot", "r", "n", &boot).await;
            let fin = post(&mut conn, "finalize", "r", "n", br#"{"exit_reason":"x"}"#).await;
            ensure(fin.status == 200, format!("the finalize: {}", fin.status))?;
            let canonical = root.path().join("bundles/r.tar.gz");
            let assembled = std::fs::read(&canonical).map_err(|e| e.to_string())?;
            // A local user swaps the tarball for a link to a file of theirs.
            let theirs = outside.path().join("theirs.tar.gz");
            std::fs::write(&theirs, b"not the run's bundle").unwrap();
            std::fs::remove_file(&canonical).unwrap();
            std::os::unix::fs::symlink(&theirs, &canonical).unwrap();
            let served = conn
                .get("/diag/bundle/r")
                .await
                .map_err(|e| e.to_string())?;
            ensure(
                served.status == 200,
                format!(
                    "served: {} {}",
                    served.status,
                    String::from_utf8_lossy(&served.body)
                ),
            )?;
            ensure(
                served.body[..] == assembled[..],
                format!(
                    "the download is not the run's bundle ({} bytes, {} assembled)",
                    served.body.len(),
                    assembled.len()
                ),
            )
        }
        Case::TheBundleOfRunDotHiddenSurvivesARestart => {
            post(&mut conn, "boot", ".hidden", "n", &boot).await;
            let fin = post(
                &mut conn,
                "finalize",
                ".hidden",
                "n",
                br#"{"exit_reason":"done"}"#,
            )
            .await;
            ensure(fin.status == 200, format!("the finalize: {}", fin.status))?;
            drop(server);
            let again = start(cfg).await;
            ensure(
                root.path().join("bundles/.hidden.tar.gz").is_file(),
                "the acknowledged bundle was removed at start",
            )?;
            let mut conn = Connection::new(again.addr);
            let served = conn
                .get("/diag/bundle/.hidden")
                .await
                .map_err(|e| e.to_string())?;
            ensure(served.status == 200, format!("served: {}", served.status))
        }
        Case::ConcurrentPostsNeverPassARunsByteLimit => {
            let body = big_batch(100 << 10);
            let mut tasks = Vec::new();
            for i in 0..16 {
                let body = body.clone();
                tasks.push(tokio::spawn(async move {
                    let mut conn = Connection::new(addr);
                    post(&mut conn, "events", "r", &format!("n{i}"), &body)
                        .await
                        .status
                }));
            }
            let mut refused = 0;
            for t in tasks {
                match t.await.map_err(|e| e.to_string())? {
                    200 => {}
                    413 => refused += 1,
                    other => return Err(format!("a post: {other}")),
                }
            }
            let staged: u64 = tree(&root.path().join("staging"))
                .iter()
                .map(|p| root.path().join("staging").join(p))
                .filter(|p| p.is_file())
                .map(|p| p.metadata().unwrap().len())
                .sum();
            ensure(refused > 0, "no post was refused")?;
            ensure(staged <= 1 << 20, format!("{staged} bytes staged"))
        }
        Case::AFinishedRunGivesItsPlaceBack => {
            for run in ["a", "b"] {
                post(&mut conn, "boot", run, "n", &boot).await;
                let fin = post(&mut conn, "finalize", run, "n", br#"{"exit_reason":"x"}"#).await;
                ensure(fin.status == 200, format!("finalize {run}: {}", fin.status))?;
            }
            for run in ["c", "d"] {
                let r = post(&mut conn, "boot", run, "n", &boot).await;
                ensure(r.status == 200, format!("open run {run}: {}", r.status))?;
            }
            let third = post(&mut conn, "boot", "e", "n", &boot).await;
            ensure(
                third.status == 413,
                format!("a third open run: {}", third.status),
            )
        }
        Case::OneRunCannotTakeTheLiveBudgetFromAnother => {
            let url = format!("http://{addr}/diag/stream/quiet");
            let mut sub = subscribe(&url, Some(0)).await.map_err(|e| e.to_string())?;
            let batch = big_batch(512 << 10);
            for _ in 0..12 {
                post(&mut conn, "events", "greedy", "n", &batch).await;
            }
            post(&mut conn, "boot", "quiet", "n", &boot).await;
            let event = tokio::time::timeout(Duration::from_secs(30), sub.next())
                .await
                .map_err(|_| "nothing within 30 s".to_string())?
                .ok_or("the stream closed")?
                .map_err(|e| e.to_string())?;
            match event {
                StreamEvent::Record { record, .. } => ensure(
                    record.node_id == "n",
                    format!("the quiet run got a record of {:?}", record.node_id),
                ),
                other => Err(format!("the quiet run got {other:?}")),
            }
        }
    }
}

/// The child's peak resident memory (`VmHWM`), in MiB.
fn peak_mib(child: &Child) -> u64 {
    let Some(pid) = child.id() else { return 0 };
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

async fn check_capped(case: Capped) -> Result<(), String> {
    let root = tempfile::tempdir().unwrap();
    let (mut child, addr) = spawn_binary(root.path(), true).await;
    let answered = match case {
        Capped::APostOfTwoHundredKbOfZeros => {
            let got = post_expecting(addr, "events", "r", "n", &zeros(100_000)).await?;
            ensure(got.0 == 200, format!("status {got:?}"))
        }
        Capped::SixtyFourConcurrentPostsOf31Mib => {
            let body = std::sync::Arc::new(big_batch(31 << 20));
            let mut tasks = Vec::new();
            for i in 0..64 {
                let body = body.clone();
                tasks.push(tokio::spawn(async move {
                    post_expecting(addr, "events", &format!("big-{i}"), "n", &body).await
                }));
            }
            let (mut ok, mut busy) = (0, 0);
            for t in tasks {
                let got = t.await.map_err(|e| e.to_string())??;
                if got.0 == 200 {
                    ok += 1;
                } else if is_busy(&got) {
                    busy += 1;
                } else {
                    return Err(format!("a large post: {got:?}"));
                }
            }
            eprintln!("64 posts of 31 MiB: {ok} acknowledged, {busy} answered 503");
            ensure(ok > 0, "none was acknowledged")
        }
        Capped::ThirtySubscribersThatNeverReadARunWithA30MibRecord => {
            let body = big_batch(30 << 20);
            let got = post_expecting(addr, "events", "r", "n", &body).await?;
            ensure(got.0 == 200, format!("the 30 MiB post: {got:?}"))?;
            let mut held = Vec::new();
            for _ in 0..30 {
                let mut s = never_read(addr, "/diag/stream/r?from=0").await?;
                let (status, _) = read_head(&mut s).await?;
                ensure(status == 200, format!("a stream: {status}"))?;
                held.push(s);
            }
            // A second record, so every subscriber has had the first one to hold.
            let small = big_batch(1 << 10);
            let got = post_expecting(addr, "events", "r", "n", &small).await?;
            ensure(got.0 == 200, format!("a later post: {got:?}"))
        }
        Capped::FortyConcurrentDownloadsOfDifferentRuns => {
            let body = big_batch(2 << 20);
            for i in 0..40 {
                let got = post_expecting(addr, "events", &format!("run-{i}"), "n", &body).await?;
                ensure(got.0 == 200, format!("a post: {got:?}"))?;
            }
            let mut tasks = Vec::new();
            for i in 0..40 {
                tasks.push(tokio::spawn(async move {
                    get_head(addr, &format!("/diag/bundle/run-{i}")).await
                }));
            }
            for t in tasks {
                let got = t.await.map_err(|e| e.to_string())??;
                ensure(
                    got.0 == 200 || is_busy(&got),
                    format!("a download: {got:?}"),
                )?;
            }
            Ok(())
        }
        Capped::FourThousandOneHundredSubscribersToRunsNeverPosted => {
            let mut held = Vec::new();
            let mut refused = 0;
            for i in 0..4_100 {
                match never_read(addr, &format!("/diag/stream/never-{i}")).await {
                    Ok(s) => held.push(s),
                    Err(_) => refused += 1,
                }
            }
            eprintln!("4,100 subscribers: {} connected, {refused} not", held.len());
            Ok(())
        }
    };
    let served = a_node_still_posts(addr, "after").await;
    let peak = peak_mib(&child);
    eprintln!("{case:?}: peak resident memory {peak} MiB");
    let alive = matches!(child.try_wait(), Ok(None));
    let _ = child.kill().await;
    answered?;
    ensure(alive, "the collector exited")?;
    served
}
