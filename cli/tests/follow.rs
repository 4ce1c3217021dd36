//! `diagwire check --follow`: a bundle directory copied in file by file, as a collector publishes
//! them (each file renamed into place, the nodes' files interleaved in time, the finalize record
//! and the manifest last). The follow prints a planted violation before the finalize record lands,
//! ends once the run has settled, and exits as `check` does.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use diagwire::v1::Event;
use diagwire_testkit::scenario::{Params, Run, generate};
use serde_json::Value;

/// The longest a case may wait for the follow to say something.
const PATIENCE: Duration = Duration::from_secs(60);

/// The scenario with its readiness barrier moved after the run's end, so that the prompts come
/// before it.
fn prompt_before_barrier() -> Run {
    let mut run = generate(&Params::small(1));
    let tag = |t: &'static str| move |e: &Event| e.tag() == t;
    run.node_mut("orchestrator")
        .move_after(tag("readiness_barrier_passed"), tag("run_completed"));
    run
}

/// Every file of the bundle at `dir`, in the order a collector would publish them: boot records,
/// then the numbered files round by round (a node's n-th events and snapshot files in round n),
/// then finalize records, then the manifest.
fn publishing_order(dir: &Path) -> Vec<PathBuf> {
    let mut rounds: BTreeMap<(u8, String, String), PathBuf> = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let digits: String = name.chars().filter(char::is_ascii_digit).collect();
            let phase = if name.starts_with("boot") {
                0
            } else if name.starts_with("finalize") {
                2
            } else if name == "MANIFEST.json" {
                3
            } else {
                1
            };
            rounds.insert((phase, format!("{digits:0>12}"), rel), p);
        }
    }
    rounds.into_values().collect()
}

/// Copies `file` of `from` into `to` at the same relative path, through a temporary name renamed
/// into place.
fn publish(file: &Path, from: &Path, to: &Path) {
    let rel = file.strip_prefix(from).unwrap();
    let target = to.join(rel);
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let tmp = target.with_file_name(format!(
        ".{}.partial",
        target.file_name().unwrap().to_string_lossy()
    ));
    std::fs::copy(file, &tmp).unwrap();
    std::fs::rename(&tmp, &target).unwrap();
}

/// Starts `diagwire check --follow DIR` with `args`; its stdout lines arrive on the receiver.
fn follow(dir: &Path, args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_diagwire"))
        .args(["check", "--follow"])
        .arg(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start diagwire");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Waits for `child` to end (killing it past the patience). Its output is then read to the end
/// with `lines.iter()`: the reader thread may still be behind when the child has ended.
fn exit_code(child: &mut Child) -> Option<i32> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if start.elapsed() > PATIENCE {
            let _ = child.kill();
            panic!("the follow did not end");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_follow_prints_a_prompt_before_the_barrier_before_the_finalize_lands_and_fails_after() {
    let tmp = tempfile::tempdir().unwrap();
    let source = prompt_before_barrier()
        .write_dir(&tmp.path().join("src"))
        .unwrap();
    let target = tmp.path().join("landing");
    std::fs::create_dir_all(&target).unwrap();
    let (mut child, lines) = follow(&target, &["--format", "json", "--settle", "500ms"]);
    let files = publishing_order(&source);
    let mut seen: Vec<Value> = Vec::new();
    let mut found_before_finalize = false;
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy();
        if name.starts_with("finalize") && !found_before_finalize {
            // The finding must be out before the finalize record lands.
            let start = Instant::now();
            while !found_before_finalize && start.elapsed() < PATIENCE {
                if let Ok(line) = lines.recv_timeout(Duration::from_millis(100)) {
                    let v: Value = serde_json::from_str(&line).unwrap();
                    found_before_finalize |= v["finding"]["rule"] == "order.prompt_after_barrier";
                    seen.push(v);
                }
            }
            assert!(
                found_before_finalize,
                "no `order.prompt_after_barrier` finding before the finalize record: {seen:?}"
            );
        }
        publish(file, &source, &target);
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(
        exit_code(&mut child),
        Some(1),
        "a violation fails the follow"
    );
    seen.extend(lines.iter().map(|l| serde_json::from_str(&l).unwrap()));
    let last = seen.last().expect("a report line");
    assert_eq!(last["ended"], "settled");
    let report = &last["report"]["check"];
    let rule = report["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "order.prompt_after_barrier")
        .unwrap();
    assert_eq!(rule["status"], "failed");
    // Every finding printed early is in the report.
    for early in seen.iter().filter_map(|v| v.get("finding")) {
        let rule = report["rules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == early["rule"])
            .unwrap();
        assert!(
            rule["findings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["location"] == early["location"]),
            "{early} is not in the report"
        );
    }
}

#[test]
fn a_follow_of_a_finished_clean_bundle_passes_once_it_settles() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = generate(&Params::small(1))
        .write_dir(&tmp.path().join("src"))
        .unwrap();
    let (mut child, lines) = follow(&dir, &["--settle", "200ms"]);
    assert_eq!(exit_code(&mut child), Some(0));
    let text: Vec<String> = lines.iter().collect();
    assert!(
        text.iter().any(|l| l.contains("**no violation**")),
        "{}",
        text.join("\n")
    );
}

#[test]
fn a_follow_stops_at_until_with_the_report_so_far() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, lines) = follow(tmp.path(), &["--until", "300ms", "--format", "json"]);
    assert_eq!(
        exit_code(&mut child),
        Some(0),
        "nothing read, nothing broken"
    );
    let last: Value = serde_json::from_str(&lines.iter().last().unwrap()).unwrap();
    assert_eq!(last["ended"], "until");
    assert_eq!(last["report"]["check"]["records"], 0);
}

#[test]
fn a_follow_of_something_that_is_not_a_directory_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("f.json");
    std::fs::write(&file, "{}").unwrap();
    let (mut child, _) = follow(&file, &[]);
    assert_eq!(exit_code(&mut child), Some(2));
}

/// `check --follow` on a collector's live stream: the same planted violation, posted as nodes post
/// it, is printed before the finalize is posted, and the follow fails once the run settles.
#[cfg(feature = "serve")]
mod live_stream {
    use super::*;
    use std::io::{Read, Write};

    /// Starts `diagwire serve` on a free loopback port; returns it and its address.
    fn serve(root: &Path) -> (Child, String) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_diagwire"))
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--finalize-wait",
                "100ms",
                "--root",
            ])
            .arg(root)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap()
            .to_owned();
        (child, addr)
    }

    /// Posts `body` to `route` as node `node` of run `run`; returns the status line.
    fn post(addr: &str, route: &str, run: &str, node: &str, body: &[u8]) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        let head = format!(
            "POST {route} HTTP/1.1\r\nhost: t\r\nconnection: close\r\ncontent-type: application/json\r\nx-run-id: {run}\r\nx-node-id: {node}\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(body).unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        reply.lines().next().unwrap_or("").to_owned()
    }

    #[test]
    fn a_follow_of_the_live_stream_prints_the_violation_before_the_finalize_is_posted() {
        let tmp = tempfile::tempdir().unwrap();
        let source = prompt_before_barrier()
            .write_dir(&tmp.path().join("src"))
            .unwrap();
        let run = source.file_name().unwrap().to_string_lossy().into_owned();
        let (mut server, addr) = serve(&tmp.path().join("collector"));
        let url = format!("http://{addr}/diag/stream/{run}");
        let (mut child, lines) =
            follow(Path::new(&url), &["--format", "json", "--settle", "500ms"]);
        std::thread::sleep(Duration::from_millis(300));
        let node_of = |label: &str| -> String {
            let boot: Value = serde_json::from_slice(
                &std::fs::read(source.join(label).join("boot.json")).unwrap(),
            )
            .unwrap();
            boot["node_id_hex"].as_str().unwrap().to_owned()
        };
        let mut seen: Vec<Value> = Vec::new();
        let mut found = false;
        for file in publishing_order(&source) {
            let rel = file
                .strip_prefix(&source)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let Some((label, rest)) = rel.split_once('/') else {
                continue;
            };
            let route = match rest.split('/').next().unwrap() {
                r if r.starts_with("boot") => "/diag/boot",
                r if r.starts_with("events") => "/diag/events",
                r if r.starts_with("snapshot") => "/diag/snapshot",
                r if r.starts_with("finalize") => "/diag/finalize",
                _ => continue,
            };
            if route == "/diag/finalize" && !found {
                let start = Instant::now();
                while !found && start.elapsed() < PATIENCE {
                    if let Ok(line) = lines.recv_timeout(Duration::from_millis(100)) {
                        let v: Value = serde_json::from_str(&line).unwrap();
                        found |= v["finding"]["rule"] == "order.prompt_after_barrier";
                        seen.push(v);
                    }
                }
                assert!(found, "no finding before the finalize: {seen:?}");
            }
            let status = post(
                &addr,
                route,
                &run,
                &node_of(label),
                &std::fs::read(&file).unwrap(),
            );
            assert!(status.contains("200"), "{rel}: {status}");
        }
        let code = exit_code(&mut child);
        server.kill().unwrap();
        server.wait().unwrap();
        assert_eq!(code, Some(1));
        seen.extend(lines.try_iter().map(|l| serde_json::from_str(&l).unwrap()));
        assert_eq!(seen.last().unwrap()["ended"], "settled");
    }
}
