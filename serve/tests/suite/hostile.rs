//! Hostile and racing requests, one case each through one check: slow headers and bodies time
//! out, bodies over the limit are refused without being read, ids that are not safe names are
//! refused and nothing is written outside the root, runs past the limit are refused, a full disk
//! (`ENOSPC`, injected through the collector's write hook) is an error that loses nothing
//! acknowledged, concurrent finalizes agree, a finalize racing late posts loses none, a run
//! whose posts were all quarantined still finalizes and serves its quarantine, a node labelled
//! `quarantine` keeps its files apart from the quarantined bodies, and subscribing to runs that
//! have no post takes none of the places for runs.

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use common::*;
use diagwire_serve::Config;
use diagwire_serve::client::{Connection, StreamEvent, subscribe};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The node's snapshot number `i` (its own id and time), made from `snapshot`.
fn nth_snapshot(snapshot: &[u8], i: u64) -> Vec<u8> {
    let mut s: serde_json::Value = serde_json::from_slice(snapshot).unwrap();
    s["snapshot_id"] = format!("hostile-{i}").into();
    s["wall_ms"] = (s["wall_ms"].as_u64().unwrap() + i).into();
    serde_json::to_vec(&s).unwrap()
}

/// The run and node id of the example's stage 0, whose records the cases post.
fn ids() -> (String, String) {
    let boot: serde_json::Value = serde_json::from_slice(&example("stage-0/boot.json")).unwrap();
    (
        boot["run_id"].as_str().unwrap().to_owned(),
        boot["node_id_hex"].as_str().unwrap().to_owned(),
    )
}

#[derive(Debug, Clone, Copy)]
enum Case {
    SlowHeadersCloseTheConnection,
    ASlowBodyIsAnsweredWith408,
    ADeclaredBodyOverTheLimitIs413WithoutReadingIt,
    AStreamedBodyOverTheLimitIs413,
    MissingIdsAre400,
    RunIdWithParentSteps,
    NodeIdWithASlash,
    RunIdWithAControlCharacter,
    NodeIdOf10Kb,
    RunsPastTheLimitAre413,
    AFullDiskIs500AndLosesNothingAcknowledged,
    ConcurrentFinalizesAgree,
    AFullRunStillTakesEachNodesFirstFinalize,
    AFinalizeRacingLatePostsLosesNone,
    AFinalizeOfARunWithOnlyQuarantinedPostsServesItsQuarantine,
    ANodeLabelledQuarantineKeepsItsFilesApartFromTheQuarantine,
    SubscribingToUnknownRunsTakesNoPlaceForRuns,
}

const CASES: &[Case] = &[
    Case::SlowHeadersCloseTheConnection,
    Case::ASlowBodyIsAnsweredWith408,
    Case::ADeclaredBodyOverTheLimitIs413WithoutReadingIt,
    Case::AStreamedBodyOverTheLimitIs413,
    Case::MissingIdsAre400,
    Case::RunIdWithParentSteps,
    Case::NodeIdWithASlash,
    Case::RunIdWithAControlCharacter,
    Case::NodeIdOf10Kb,
    Case::RunsPastTheLimitAre413,
    Case::AFullDiskIs500AndLosesNothingAcknowledged,
    Case::ConcurrentFinalizesAgree,
    Case::AFullRunStillTakesEachNodesFirstFinalize,
    Case::AFinalizeRacingLatePostsLosesNone,
    Case::AFinalizeOfARunWithOnlyQuarantinedPostsServesItsQuarantine,
    Case::ANodeLabelledQuarantineKeepsItsFilesApartFromTheQuarantine,
    Case::SubscribingToUnknownRunsTakesNoPlaceForRuns,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_are_bounded_and_lose_nothing() {
    bounded(120, async {
        let mut failures = Vec::new();
        for case in CASES {
            if let Err(e) = bounded(20, check(*case)).await {
                failures.push(format!("{case:?}: {e}"));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    })
    .await;
}

/// Sends raw bytes (in parts, with a pause after each) and reads the reply's status, or `None`
/// when the server closed the connection without one.
async fn raw(addr: std::net::SocketAddr, parts: &[(&[u8], u64)]) -> Result<Option<u16>, String> {
    let mut s = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    for (bytes, pause_ms) in parts {
        if s.write_all(bytes).await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(*pause_ms)).await;
    }
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await {
            Err(_) => return Err("no reply and no close within 5 s".into()),
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => {
                reply.extend_from_slice(&buf[..n]);
                if reply.windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
        }
    }
    let text = String::from_utf8_lossy(&reply);
    Ok(text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|t| t.get(..3))
        .and_then(|t| t.parse().ok()))
}

fn head(path: &str, run: &str, node: &str, extra: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\nx-run-id: {run}\r\nx-node-id: {node}\r\nconnection: close\r\n{extra}\r\n"
    )
    .into_bytes()
}

/// Every file and directory under `root`, relative.
fn tree(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(root).unwrap().display().to_string());
            if p.is_dir() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The finalize files of the bundle `GET /diag/bundle/{run}` serves, once it validates clean.
async fn served_finalizes(conn: &mut Connection, run: &str) -> Result<usize, String> {
    let served = conn
        .get(&format!("/diag/bundle/{run}"))
        .await
        .map_err(|e| e.to_string())?;
    if served.status != 200 {
        return Err(format!("the bundle: status {}", served.status));
    }
    let (bundle, report) = open_bundle(&served.body);
    if !report.is_clean() {
        return Err(format!("{:?}", report.problems));
    }
    Ok(bundle
        .files
        .keys()
        .filter(|p| p.contains("finalize"))
        .count())
}

async fn check(case: Case) -> Result<(), String> {
    let root = tempfile::tempdir().unwrap();
    let mut cfg: Config = config(root.path());
    cfg.limits.header_timeout = Duration::from_millis(300);
    cfg.limits.body_timeout = Duration::from_millis(300);
    cfg.limits.max_body_bytes = 1 << 20;
    cfg.limits.max_runs = 20;
    cfg.finalize_wait = Duration::from_millis(300);
    if let Case::AFullRunStillTakesEachNodesFirstFinalize = case {
        // Room for the boot alone (a finalize body is longer than the 10 bytes left).
        cfg.limits.max_run_bytes = example("stage-0/boot.json").len() as u64 + 10;
    }
    let full = Arc::new(AtomicBool::new(false));
    let disk = full.clone();
    cfg.write_fault = Some(Arc::new(move |_: &Path| {
        if disk.load(Ordering::SeqCst) {
            Err(std::io::Error::from_raw_os_error(28))
        } else {
            Ok(())
        }
    }));
    let server = start(cfg).await;
    let addr = server.addr;
    let (run, node) = ids();
    let boot = example("stage-0/boot.json");
    let snapshot = example("stage-0/snapshots/snapshot-000001.json");
    let mut conn = Connection::new(addr);
    let before = tree(root.path());
    let status = |got: Option<u16>, want: u16| -> Result<(), String> {
        if got == Some(want) {
            Ok(())
        } else {
            Err(format!("status {got:?}, expected {want}"))
        }
    };
    match case {
        Case::SlowHeadersCloseTheConnection => {
            let got = raw(addr, &[(b"POST /diag/boot HTTP/1.1\r\nhost: t\r\n", 1_000)]).await?;
            if got.is_some_and(|s| s != 408) {
                return Err(format!("status {got:?}"));
            }
        }
        Case::ASlowBodyIsAnsweredWith408 => {
            let h = head("/diag/boot", &run, &node, "content-length: 100\r\n");
            status(raw(addr, &[(&h, 0), (b"{\"a\":", 1_000)]).await?, 408)?;
        }
        Case::ADeclaredBodyOverTheLimitIs413WithoutReadingIt => {
            // Nothing of the body is sent: the reply comes from the declared length alone.
            let h = head("/diag/events", &run, &node, "content-length: 2000000\r\n");
            status(raw(addr, &[(&h, 0)]).await?, 413)?;
        }
        Case::AStreamedBodyOverTheLimitIs413 => {
            let h = head(
                "/diag/events",
                &run,
                &node,
                "transfer-encoding: chunked\r\n",
            );
            let chunk = format!("{:x}\r\n{}\r\n", 256 << 10, " ".repeat(256 << 10)).into_bytes();
            let mut parts: Vec<(&[u8], u64)> = vec![(&h, 0)];
            for _ in 0..5 {
                parts.push((&chunk, 0));
            }
            status(raw(addr, &parts).await?, 413)?;
        }
        Case::MissingIdsAre400 => {
            let h = b"POST /diag/boot HTTP/1.1\r\nhost: t\r\nx-run-id: r\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}";
            status(raw(addr, &[(h, 0)]).await?, 400)?;
        }
        Case::RunIdWithParentSteps
        | Case::NodeIdWithASlash
        | Case::RunIdWithAControlCharacter
        | Case::NodeIdOf10Kb => {
            let long = "a".repeat(10 << 10);
            let (r, n) = match case {
                Case::RunIdWithParentSteps => ("../../escape", node.as_str()),
                Case::NodeIdWithASlash => (run.as_str(), "a/b"),
                Case::RunIdWithAControlCharacter => ("run\u{1b}[31m", node.as_str()),
                _ => (run.as_str(), long.as_str()),
            };
            let mut request = head(
                "/diag/boot",
                r,
                n,
                &format!("content-length: {}\r\n", boot.len()),
            );
            request.extend_from_slice(&boot);
            status(raw(addr, &[(&request, 0)]).await?, 400)?;
        }
        Case::RunsPastTheLimitAre413 => {
            for i in 0..25 {
                let reply = post(&mut conn, "boot", &format!("run-{i}"), &node, &boot).await;
                let want = if i < 20 { 200 } else { 413 };
                if reply.status != want {
                    return Err(format!("run {i}: status {}, expected {want}", reply.status));
                }
            }
            let runs = json(&conn.get("/diag/runs").await.map_err(|e| e.to_string())?);
            if runs.as_array().map(Vec::len) != Some(20) {
                return Err(format!(
                    "/diag/runs lists {:?} runs",
                    runs.as_array().map(Vec::len)
                ));
            }
            return Ok(());
        }
        Case::AFullDiskIs500AndLosesNothingAcknowledged => {
            let first = post(&mut conn, "boot", &run, &node, &boot).await;
            status(Some(first.status), 200)?;
            full.store(true, Ordering::SeqCst);
            let failed = post(&mut conn, "snapshot", &run, &node, &snapshot).await;
            status(Some(failed.status), 500)?;
            if json(&failed)["error"].as_str().is_none() {
                return Err("no error body".into());
            }
            let fin = post(&mut conn, "finalize", &run, &node, b"{}").await;
            status(Some(fin.status), 500)?;
            full.store(false, Ordering::SeqCst);
            let next = post(&mut conn, "snapshot", &run, &node, &snapshot).await;
            status(Some(next.status), 200)?;
            if ack(&next)?.seq != Some(1) {
                return Err(format!(
                    "the failed post gave a number away: {}",
                    json(&next)
                ));
            }
            let dir = root.path().join("staging").join(&run).join(&node);
            let names: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            let mut names = names;
            names.sort();
            if names != ["boot-000001.json", "snapshot-000001.json"] {
                return Err(format!("staging holds {names:?}"));
            }
            return Ok(());
        }
        Case::AFullRunStillTakesEachNodesFirstFinalize => {
            status(
                Some(post(&mut conn, "boot", &run, &node, &boot).await.status),
                200,
            )?;
            let full = post(&mut conn, "snapshot", &run, &node, &snapshot).await;
            status(Some(full.status), 413)
                .map_err(|e| format!("a snapshot past the limit: {e}"))?;
            let finalize = br#"{"exit_reason":"full"}"#;
            let first = post(&mut conn, "finalize", &run, &node, finalize).await;
            status(Some(first.status), 200)?;
            // Another finalize (the same one again would be a retry, acknowledged as staged).
            let again = post(
                &mut conn,
                "finalize",
                &run,
                &node,
                br#"{"exit_reason":"again"}"#,
            )
            .await;
            status(Some(again.status), 413).map_err(|e| format!("a second finalize: {e}"))?;
            let finals = served_finalizes(&mut conn, &run).await?;
            if finals != 1 {
                return Err(format!("{finals} finalize files"));
            }
            return Ok(());
        }
        Case::ConcurrentFinalizesAgree => {
            status(
                Some(post(&mut conn, "boot", &run, &node, &boot).await.status),
                200,
            )?;
            let mut tasks = Vec::new();
            for i in 0..4 {
                let (run, node) = (run.clone(), node.clone());
                tasks.push(tokio::spawn(async move {
                    let mut c = Connection::new(addr);
                    let body = format!("{{\"exit_reason\":\"finalize {i}\"}}");
                    c.post(
                        "finalize",
                        &run,
                        &node,
                        0,
                        "application/json",
                        Bytes::from(body),
                    )
                    .await
                }));
            }
            let mut paths = Vec::new();
            for t in tasks {
                let reply = t.await.unwrap().map_err(|e| e.to_string())?;
                status(Some(reply.status), 200)?;
                paths.push(json(&reply)["body"]["bundle_path"].clone());
            }
            if paths.windows(2).any(|w| w[0] != w[1]) {
                return Err(format!("bundle paths differ: {paths:?}"));
            }
            let finals = served_finalizes(&mut conn, &run).await?;
            if finals != 4 {
                return Err(format!("{finals} finalize files"));
            }
            return Ok(());
        }
        Case::AFinalizeRacingLatePostsLosesNone => {
            status(
                Some(post(&mut conn, "boot", &run, &node, &boot).await.status),
                200,
            )?;
            let (r, n) = (run.clone(), node.clone());
            let finalize = tokio::spawn(async move {
                let mut c = Connection::new(addr);
                c.post(
                    "finalize",
                    &r,
                    &n,
                    0,
                    "application/json",
                    Bytes::from_static(b"{}"),
                )
                .await
            });
            let mut acked = 0;
            for i in 0..6 {
                if post(
                    &mut conn,
                    "snapshot",
                    &run,
                    &node,
                    &nth_snapshot(&snapshot, i),
                )
                .await
                .status
                    == 200
                {
                    acked += 1;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let fin = finalize.await.unwrap().map_err(|e| e.to_string())?;
            status(Some(fin.status), 200)?;
            for i in 6..8 {
                if post(
                    &mut conn,
                    "snapshot",
                    &run,
                    &node,
                    &nth_snapshot(&snapshot, i),
                )
                .await
                .status
                    == 200
                {
                    acked += 1;
                }
            }
            let served = conn
                .get(&format!("/diag/bundle/{run}"))
                .await
                .map_err(|e| e.to_string())?;
            let (bundle, report) = open_bundle(&served.body);
            if !report.is_clean() {
                return Err(format!("{:?}", report.problems));
            }
            let snaps = bundle
                .files
                .keys()
                .filter(|p| p.contains("/snapshots/"))
                .count();
            if snaps != acked {
                return Err(format!(
                    "the bundle holds {snaps} snapshots, {acked} were acknowledged"
                ));
            }
            return Ok(());
        }
        Case::AFinalizeOfARunWithOnlyQuarantinedPostsServesItsQuarantine => {
            // A boot that is not one, then a finalize that is not one: both kept, both
            // acknowledged, and the bundle holds the quarantine alone.
            status(
                Some(post(&mut conn, "boot", &run, &node, b"[1]").await.status),
                200,
            )?;
            let fin = post(&mut conn, "finalize", &run, &node, b"[2]").await;
            status(Some(fin.status), 200)?;
            let finalized = ack(&fin)?;
            let bundle_path = finalized.body.as_ref().map(|b| &b.0["bundle_path"]);
            if finalized.quarantined.is_none() || bundle_path.is_none_or(|p| !p.is_string()) {
                return Err(format!("the finalize's ack: {}", json(&fin)));
            }
            let served = conn
                .get(&format!("/diag/bundle/{run}"))
                .await
                .map_err(|e| e.to_string())?;
            status(Some(served.status), 200)?;
            let (bundle, _) = open_bundle(&served.body);
            let kept = bundle
                .files
                .keys()
                .filter(|p| p.starts_with("@quarantine/"))
                .count();
            if kept != 4 || !bundle.files.contains_key("MANIFEST.json") {
                return Err(format!("the bundle holds {:?}", bundle.files.keys()));
            }
            let unknown = conn
                .get("/diag/bundle/no-such-run")
                .await
                .map_err(|e| e.to_string())?;
            return status(Some(unknown.status), 404);
        }
        Case::ANodeLabelledQuarantineKeepsItsFilesApartFromTheQuarantine => {
            // The node's label is its role, `quarantine`; another node, whose id is the name of
            // that node's boot file, has a body quarantined. Under one folder they would make
            // `quarantine/boot.json` a file and a directory at once.
            let mut identity: serde_json::Value = serde_json::from_slice(&boot).unwrap();
            identity["role"] = "quarantine".into();
            let labelled = serde_json::to_vec(&identity).unwrap();
            status(
                Some(post(&mut conn, "boot", &run, &node, &labelled).await.status),
                200,
            )?;
            let bad = post(&mut conn, "snapshot", &run, "boot.json", b"[1]").await;
            status(Some(bad.status), 200)?;
            let fin = post(&mut conn, "finalize", &run, &node, b"{}").await;
            status(Some(fin.status), 200)?;
            let served = conn
                .get(&format!("/diag/bundle/{run}"))
                .await
                .map_err(|e| e.to_string())?;
            let (bundle, report) = open_bundle(&served.body);
            let manifest: serde_json::Value =
                serde_json::from_slice(&bundle.files["MANIFEST.json"]).unwrap();
            if manifest["nodes"][0]["label"] != "quarantine" {
                return Err(format!("manifest {manifest}"));
            }
            for path in ["quarantine/boot.json", "quarantine/finalize.json"] {
                if !bundle.files.contains_key(path) {
                    return Err(format!("{path} missing: {:?}", bundle.files.keys()));
                }
            }
            let kept: Vec<&String> = bundle
                .files
                .keys()
                .filter(|p| p.starts_with("@quarantine/boot.json/"))
                .collect();
            if kept.len() != 2 || report.invalid_records != 0 {
                return Err(format!("kept {kept:?}, problems {:?}", report.problems));
            }
            return Ok(());
        }
        Case::SubscribingToUnknownRunsTakesNoPlaceForRuns => {
            // A subscriber to a run before its first post, and more subscribers to runs that
            // never get one than the collector has places for runs.
            let mut subs = Vec::new();
            for name in std::iter::once("run-0".to_owned()).chain((0..25).map(|i| format!("w-{i}")))
            {
                let url = format!("http://{addr}/diag/stream/{name}");
                subs.push(subscribe(&url, None).await.map_err(|e| e.to_string())?);
            }
            for i in 0..21 {
                let reply = post(&mut conn, "boot", &format!("run-{i}"), &node, &boot).await;
                let want = if i < 20 { 200 } else { 413 };
                if reply.status != want {
                    return Err(format!("run {i}: status {}, expected {want}", reply.status));
                }
            }
            // A subscriber that came before its run's first post gets it.
            match subs[0].next().await {
                Some(Ok(StreamEvent::Record { record, .. })) if record.run_id == "run-0" => {}
                other => return Err(format!("the early subscriber got {other:?}")),
            }
            return Ok(());
        }
    }
    // The refused requests wrote nothing.
    let after = tree(root.path());
    if after != before {
        return Err(format!(
            "files under the root: {after:?}, before {before:?}"
        ));
    }
    Ok(())
}
