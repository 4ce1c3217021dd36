//! `diagwire check --follow`: a bundle directory copied in file by file, as a collector publishes
//! them (each file renamed into place, the nodes' files interleaved in time, the finalize record
//! and the manifest last). The follow prints a planted violation before the finalize record lands,
//! ends once the run has settled, and exits as `check` does. A staging root is waited on until
//! its first run appears. On a collector's live stream, a follow attached at any moment reads the
//! run from its first record and ends on its own with the verdict of the served bundle; one that
//! cannot have every record says how many it missed and exits 2.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common;

use common::publishing_order;
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
fn a_follow_of_a_directory_where_no_run_appears_stops_at_until_and_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, lines) = follow(tmp.path(), &["--until", "300ms", "--format", "json"]);
    assert_eq!(exit_code(&mut child), Some(2), "nothing was checked");
    let last: Value = serde_json::from_str(&lines.iter().last().unwrap()).unwrap();
    assert_eq!(last["ended"], "until");
    assert_eq!(last["report"]["check"]["records"], 0);
    assert!(
        last["incomplete"]["why"]
            .as_str()
            .unwrap()
            .starts_with("no run appeared"),
        "{last}"
    );
}

/// `rule id → (status, findings)`: the rule table of a check report (`check` JSON's `check`).
fn table(report: &Value) -> BTreeMap<String, (String, u64)> {
    report["rules"]
        .as_array()
        .expect("a report with rules")
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_owned(),
                (
                    r["status"].as_str().unwrap().to_owned(),
                    r["findings_total"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

/// `diagwire check PATH`: its exit status and rule table.
fn check(path: &Path) -> (Option<i32>, BTreeMap<String, (String, u64)>) {
    let out = Command::new(env!("CARGO_BIN_EXE_diagwire"))
        .args(["check", "--format", "json"])
        .arg(path)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (out.status.code(), table(&v["check"]))
}

/// A follow's end: its exit status and its last line (the report).
fn report(child: &mut Child, lines: &mpsc::Receiver<String>) -> (Option<i32>, Value) {
    let code = exit_code(child);
    let last = lines.iter().last().expect("a report line");
    (code, serde_json::from_str(&last).unwrap())
}

/// The staged name of a bundle file (`<label>/events/events-000002.json` → `events-000002.json`,
/// `<label>/boot.json` → `boot-000001.json`); `None` for the manifest.
fn staged_name(rel: &Path) -> Option<String> {
    let name = rel.file_name()?.to_string_lossy().into_owned();
    match name.as_str() {
        "MANIFEST.json" => None,
        "boot.json" => Some("boot-000001.json".into()),
        "finalize.json" => Some("finalize-000001.json".into()),
        _ => Some(name),
    }
}

#[test]
fn a_follow_of_a_staging_root_waits_for_its_first_run_then_follows_it() {
    let tmp = tempfile::tempdir().unwrap();
    let source = prompt_before_barrier()
        .write_dir(&tmp.path().join("src"))
        .unwrap();
    let run = source.file_name().unwrap().to_string_lossy().into_owned();
    let staging = tmp.path().join("collector").join("staging");
    std::fs::create_dir_all(&staging).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_diagwire"))
        .args(["check", "--follow"])
        .arg(&staging)
        .args(["--format", "json", "--settle", "500ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    err.read_line(&mut said).unwrap();
    assert!(said.starts_with("waiting for a run in "), "{said:?}");
    // The collector stages each file as `<run>/<node id>/<kind>-NNNNNN.json`.
    for file in publishing_order(&source) {
        let rel = file.strip_prefix(&source).unwrap();
        let Some(name) = staged_name(rel) else {
            continue;
        };
        let label = rel.components().next().unwrap().as_os_str();
        let boot: Value =
            serde_json::from_slice(&std::fs::read(source.join(label).join("boot.json")).unwrap())
                .unwrap();
        let node = staging
            .join(&run)
            .join(boot["node_id_hex"].as_str().unwrap());
        std::fs::create_dir_all(&node).unwrap();
        let tmp_name = node.join(format!(".{name}.partial"));
        std::fs::copy(&file, &tmp_name).unwrap();
        std::fs::rename(&tmp_name, node.join(&name)).unwrap();
    }
    let (code, last) = report(&mut child, &lines);
    assert_eq!(last["ended"], "settled");
    assert_eq!(last["report"]["check"]["run_id"], run.as_str());
    assert_eq!(
        (code, table(&last["report"]["check"])),
        check(&source),
        "the staged run's verdict is the bundle's"
    );
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
    use common::collector::{make, post, posts, serve, served};

    #[test]
    fn a_follow_attached_at_any_moment_ends_on_its_own_with_the_verdict_of_the_served_bundle() {
        let tmp = tempfile::tempdir().unwrap();
        let source = prompt_before_barrier()
            .write_dir(&tmp.path().join("src"))
            .unwrap();
        let run = source.file_name().unwrap().to_string_lossy().into_owned();
        let root = tmp.path().join("collector");
        let (server, addr) = serve(&root);
        let url = format!("http://{addr}/diag/stream/{run}");
        let posts = posts(&source);
        let n = posts.len();
        // When each follower attaches (after how many posts) and to what URL.
        let attach = [
            ("before the first post", 0, url.clone()),
            ("after 40% of the posts", n * 2 / 5, url.clone()),
            ("after 70% of the posts", n * 7 / 10, url.clone()),
            ("after the finalize", n, url.clone()),
            (
                "after the finalize, with ?from=0",
                n,
                format!("{url}?from=0"),
            ),
        ];
        let mut followers = Vec::new();
        for i in 0..=n {
            for (name, at, url) in &attach {
                if *at == i {
                    let (child, lines) = follow(Path::new(url), &["--format", "json"]);
                    followers.push((*name, child, lines));
                }
            }
            if let Some(p) = posts.get(i) {
                make(&addr, &run, p);
            }
        }
        let want = check(&served(&root, &run));
        assert_eq!(
            want.0,
            Some(1),
            "the planted violation fails the served bundle"
        );
        for (name, mut child, lines) in followers {
            let (code, last) = report(&mut child, &lines);
            assert_eq!(last["ended"], "settled", "{name}");
            assert!(last.get("incomplete").is_none(), "{name}: {last}");
            assert_eq!((code, table(&last["report"]["check"])), want, "{name}");
            assert_eq!(last["report"]["check"]["run_id"], run.as_str(), "{name}");
        }
        drop(server);
    }

    #[test]
    fn a_follow_that_cannot_have_every_record_says_how_many_and_exits_2() {
        let tmp = tempfile::tempdir().unwrap();
        let source = generate(&Params::small(2))
            .write_dir(&tmp.path().join("src"))
            .unwrap();
        let run = source.file_name().unwrap().to_string_lossy().into_owned();
        let root = tmp.path().join("collector");
        let (server, addr) = serve(&root);
        for p in posts(&source) {
            make(&addr, &run, &p);
        }
        let url = format!("http://{addr}/diag/stream/{run}");
        let gone = |root: &Path| {
            let staged = root.join("staging").join(&run);
            let mut nodes: Vec<std::path::PathBuf> = std::fs::read_dir(&staged)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            nodes.sort();
            std::fs::remove_file(nodes[0].join("events-000001.json")).unwrap();
        };
        // Each case: its name, the URL's query, what is done before following, the records
        // the report says are missing.
        type Before<'a> = Option<&'a dyn Fn(&Path)>;
        let cases: [(&str, &str, Before<'_>, u64); 2] = [
            ("resumed after stream id 3", "?from=3", None, 3),
            ("a staged file is gone", "", Some(&gone), 1),
        ];
        for (name, query, before, missing) in cases {
            if let Some(before) = before {
                before(&root);
            }
            let target = format!("{url}{query}");
            let (mut child, lines) = follow(Path::new(&target), &["--format", "json"]);
            let (code, last) = report(&mut child, &lines);
            assert_eq!(code, Some(2), "{name}: {last}");
            assert_eq!(last["ended"], "settled", "{name}");
            let incomplete = &last["incomplete"];
            assert_eq!(
                incomplete["missing_records"], missing,
                "{name}: {incomplete}"
            );
            let without_findings: Vec<String> = table(&last["report"]["check"])
                .into_iter()
                .filter(|(_, (_, findings))| *findings == 0)
                .map(|(id, _)| id)
                .collect();
            let mut named: Vec<String> =
                serde_json::from_value(incomplete["inconclusive_rules"].clone()).unwrap();
            named.sort();
            assert!(!named.is_empty(), "{name}");
            assert_eq!(named, without_findings, "{name}");
        }
        drop(server);
    }

    #[test]
    fn a_follow_of_the_live_stream_prints_the_violation_before_the_finalize_is_posted() {
        let tmp = tempfile::tempdir().unwrap();
        let source = prompt_before_barrier()
            .write_dir(&tmp.path().join("src"))
            .unwrap();
        let run = source.file_name().unwrap().to_string_lossy().into_owned();
        let (server, addr) = serve(&tmp.path().join("collector"));
        let url = format!("http://{addr}/diag/stream/{run}");
        let (mut child, lines) =
            follow(Path::new(&url), &["--format", "json", "--settle", "500ms"]);
        std::thread::sleep(Duration::from_millis(300));
        let mut seen: Vec<Value> = Vec::new();
        let mut found = false;
        for (route, node, file) in posts(&source) {
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
            let status = post(&addr, route, &run, &node, &std::fs::read(&file).unwrap());
            assert!(status.contains("200"), "{}: {status}", file.display());
        }
        let code = exit_code(&mut child);
        drop(server);
        assert_eq!(code, Some(1));
        seen.extend(lines.try_iter().map(|l| serde_json::from_str(&l).unwrap()));
        assert_eq!(seen.last().unwrap()["ended"], "settled");
    }
}

/// `check --follow` of a stream URL whose server misbehaves: each case ends on its own, soon after
/// `--until` at the latest, with exit status 2 and no panic, whatever the server does.
#[cfg(feature = "serve")]
mod hostile_servers {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// What the fake server does with the one connection it takes.
    #[derive(Clone, Copy, Debug)]
    enum Server {
        /// Accepts the connection and never answers.
        Silent,
        /// Answers 500 with a body that never ends.
        EndlessError,
        /// Answers 200 with an event stream whose first line never ends.
        EndlessLine,
    }

    /// The longest any case may take: well under the client's own answer time-out (10 s), so a
    /// case that passes ends by `--until`, not by that time-out.
    const BOUND: Duration = Duration::from_secs(8);

    /// Serves one connection on a loopback port as `server` says, for at most 30 s; its address.
    fn start(server: Server) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
            let mut head = [0u8; 4096];
            let _ = s.read(&mut head);
            let (status, kind) = match server {
                Server::Silent => {
                    std::thread::sleep(Duration::from_secs(30));
                    return;
                }
                Server::EndlessError => ("500 Internal Server Error", "text/plain"),
                Server::EndlessLine => ("200 OK", "text/event-stream"),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ntransfer-encoding: chunked\r\n\r\n"
            );
            if s.write_all(head.as_bytes()).is_err() {
                return;
            }
            let chunk = format!("{:x}\r\n{}\r\n", 64 << 10, "x".repeat(64 << 10));
            let first = format!("{:x}\r\ndata: \r\n", 6);
            let _ = s.write_all(first.as_bytes());
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(30) {
                if s.write_all(chunk.as_bytes()).is_err() {
                    return;
                }
            }
        });
        addr
    }

    #[test]
    fn a_follow_ends_by_until_whatever_the_server_does() {
        for server in [Server::Silent, Server::EndlessError, Server::EndlessLine] {
            let addr = start(server);
            let url = format!("http://{addr}/diag/stream/r-1");
            let started = Instant::now();
            let (mut child, _lines) = follow(Path::new(&url), &["--until", "2s"]);
            let code = exit_code(&mut child);
            let took = started.elapsed();
            assert_eq!(code, Some(2), "{server:?}: exit status");
            assert!(
                took < BOUND,
                "{server:?}: the follow took {took:?}, past `--until 2s`"
            );
        }
    }
}
