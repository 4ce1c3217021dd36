//! The emitter against the real collector on 127.0.0.1: what goes in arrives, in order, whether
//! the collector is up, down at first, or the emitter stopped mid-run and another one took over
//! its spool; overflow is counted and reported; the collector's hints reach the caller.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use diagwire::layout::FileKind;
use diagwire_emitter::{Config, Emitter, Encoding, Flushed, Stats};
use serde_json::{Value, json};

/// One record a test enqueues.
#[derive(Clone, Copy, Debug)]
enum In {
    /// `n` events, numbered on from the last.
    Events(u64),
    Boot,
    Snapshot,
    Finalize,
}

/// The records of `script` as the collector should have them, in order: (kind, body), an
/// events post counted per event (`event`). Events are numbered from `first`.
fn expected(run: &str, script: &[In], first: u64) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let (mut seq, mut snap) = (first, 0);
    for step in script {
        match *step {
            In::Events(n) => {
                for _ in 0..n {
                    out.push(("event".into(), json!(event(run, seq))));
                    seq += 1;
                }
            }
            In::Boot => out.push(("boot".into(), json!(boot(run)))),
            In::Snapshot => {
                out.push(("snapshot".into(), json!(snapshot(run, snap))));
                snap += 1;
            }
            In::Finalize => out.push(("finalize".into(), json!(finalize()))),
        }
    }
    out
}

/// Enqueues `script` (events numbered from `first`); every record must be taken.
fn enqueue(emitter: &Emitter, run: &str, script: &[In], first: u64) {
    let (mut seq, mut snap) = (first, 0);
    for step in script {
        let taken = match *step {
            In::Events(n) => (0..n).all(|_| {
                seq += 1;
                emitter.event(event(run, seq - 1))
            }),
            In::Boot => emitter.boot(boot(run)),
            In::Snapshot => {
                snap += 1;
                emitter.snapshot(snapshot(run, snap - 1))
            }
            In::Finalize => emitter.finalize(finalize()),
        };
        assert!(taken, "a record was dropped by a queue that is not full");
    }
}

/// How many posts `script` makes when each event batch is posted whole (no linger cut).
fn posts(script: &[In]) -> usize {
    let mut n = 0;
    let mut open = 0u64;
    for step in script {
        match *step {
            In::Events(k) => open += k,
            _ => {
                n += open.div_ceil(512) as usize + 1;
                open = 0;
            }
        }
    }
    n + open.div_ceil(512) as usize
}

/// The collector's records, events taken out of their batches, the emitter's own key left out;
/// every events post holds at most 512.
fn flatten(accepted: Vec<(String, Value)>) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (kind, body) in accepted {
        if kind == "events" {
            let batch = body.as_array().expect("an events post is an array");
            assert!(
                batch.len() <= 512,
                "an events post of {} records",
                batch.len()
            );
            out.extend(batch.iter().map(|e| ("event".to_owned(), e.clone())));
        } else {
            out.push((kind, without_dropped(body)));
        }
    }
    out
}

/// A configuration that retries soon, with a long linger (a batch is cut by a record of
/// another kind, by 512 events or by a flush, not by the clock).
fn config(addr: impl std::fmt::Display, run: &str, spool: Option<&Path>) -> Config {
    let mut c = Config::new(format!("http://{addr}"), run, "node-a");
    c.spool = spool.map(Path::to_owned);
    c.batch_linger = Duration::from_secs(600);
    c.backoff_initial = Duration::from_millis(10);
    c.backoff_max = Duration::from_millis(200);
    c
}

/// Checks that the collector holds exactly `want`, in order, for `run`.
fn check_delivered(server: &Server, run: &str, want: &[(String, Value)], posts: usize) {
    let got = flatten(accepted(server.addr, run, posts));
    assert_eq!(got.len(), want.len(), "records delivered");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "record {i}");
    }
}

/// Waits until `done` holds, looking every 10 ms, at most [`BOUND`]: a bound, not a deadline
/// the test asserts.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < BOUND, "{what}: not within {BOUND:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn spool_files(dir: &Path, run: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join(run))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

const SCRIPTS: &[(&str, &[In])] = &[
    (
        "a node's run: boot, events over several batches, snapshots, finalize",
        &[
            In::Boot,
            In::Events(1300),
            In::Snapshot,
            In::Events(3),
            In::Snapshot,
            In::Finalize,
        ],
    ),
    (
        "kinds interleaved one by one keep their order",
        &[
            In::Events(1),
            In::Snapshot,
            In::Events(1),
            In::Boot,
            In::Events(2),
            In::Snapshot,
        ],
    ),
    ("exactly one full batch", &[In::Events(512)]),
];

/// The encodings the emitter posts in (protobuf with the feature `proto`).
fn encodings() -> Vec<Encoding> {
    #[allow(unused_mut)]
    let mut all = vec![Encoding::Json];
    #[cfg(feature = "proto")]
    all.push(Encoding::Protobuf);
    all
}

/// Records in, the collector up: it accepts exactly those records, in the order they were
/// enqueued, events in posts of at most 512, in every encoding; every post is acknowledged and
/// nothing dropped.
#[test]
fn records_arrive_exactly_and_in_order() {
    let cases = encodings()
        .into_iter()
        .flat_map(|e| SCRIPTS.iter().map(move |s| (e, s)));
    for (i, (encoding, (name, script))) in cases.enumerate() {
        let name = format!("{name} ({encoding:?})");
        let root = tempfile::tempdir().unwrap();
        let server = serve(root.path(), 0);
        let run = format!("in-order-{i}");
        let mut c = config(server.addr, &run, None);
        c.encoding = encoding;
        let emitter = Emitter::start(c).unwrap();
        enqueue(&emitter, &run, script, 1);
        assert_eq!(emitter.flush(BOUND), Flushed::All, "{name}");
        let stats = emitter.finish(BOUND);
        check_delivered(&server, &run, &expected(&run, script, 1), posts(script));
        let records: u64 = expected(&run, script, 1).len() as u64;
        assert_eq!(
            (
                stats.enqueued,
                stats.records_posted,
                stats.dropped,
                stats.pending
            ),
            (records, records, 0, 0),
            "{name}: {stats:?}"
        );
    }
}

/// The collector down when the emitter starts: every post waits in the spool (one file each),
/// and once the collector is up everything arrives from it, in order, and the spool empties.
#[test]
fn a_collector_down_at_start_gets_everything_from_the_spool() {
    let script = SCRIPTS[0].1;
    let run = "down-then-up";
    let (root, spool) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let port = free_port();
    let emitter =
        Emitter::start(config(format!("127.0.0.1:{port}"), run, Some(spool.path()))).unwrap();
    enqueue(&emitter, run, script, 1);
    assert!(matches!(
        emitter.flush(Duration::from_millis(100)),
        Flushed::TimedOut { .. }
    ));
    wait_until("every post spooled and the first one retried", || {
        let stats = emitter.stats();
        stats.pending as usize == posts(script) && stats.retried > 0
    });
    assert_eq!(spool_files(spool.path(), run).len(), posts(script));

    let server = serve(root.path(), port);
    assert_eq!(emitter.flush(BOUND), Flushed::All);
    let stats = emitter.finish(BOUND);
    check_delivered(&server, run, &expected(run, script, 1), posts(script));
    assert_eq!(spool_files(spool.path(), run), Vec::<String>::new());
    assert_eq!((stats.spooled as usize, stats.dropped), (posts(script), 0));
}

/// An emitter stopped mid-run (dropped without `finish`, the collector down) leaves its posts
/// in the spool; a new emitter on the same spool sends them first, in order, then its own.
#[test]
fn an_emitter_started_on_a_spool_replays_it_in_order() {
    let run = "crash";
    let before: &[In] = &[In::Boot, In::Events(700), In::Snapshot];
    let after: &[In] = &[In::Events(5), In::Finalize];
    let (root, spool) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let port = free_port();
    let crashed =
        Emitter::start(config(format!("127.0.0.1:{port}"), run, Some(spool.path()))).unwrap();
    enqueue(&crashed, run, before, 1);
    assert!(matches!(
        crashed.flush(Duration::from_millis(200)),
        Flushed::TimedOut { .. }
    ));
    drop(crashed);
    assert_eq!(spool_files(spool.path(), run).len(), posts(before));

    let server = serve(root.path(), port);
    let emitter = Emitter::start(config(server.addr, run, Some(spool.path()))).unwrap();
    enqueue(&emitter, run, after, 701);
    assert_eq!(emitter.flush(BOUND), Flushed::All);
    let stats = emitter.finish(BOUND);
    let mut want = expected(run, before, 1);
    want.extend(expected(run, after, 701));
    check_delivered(&server, run, &want, posts(before) + posts(after));
    assert_eq!(stats.replayed as usize, posts(before));
    assert_eq!(spool_files(spool.path(), run), Vec::<String>::new());
}

/// A spool in swactor's layout, written by another process: its posts are sent in the order of
/// their numbers, bodies unchanged; a temporary file a crash left is removed, never sent; a
/// file of another name is left alone.
#[test]
fn a_spool_in_swactors_layout_is_sent_in_number_order() {
    let run = "hand-written";
    let (root, spool) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let dir = spool.path().join(run);
    std::fs::create_dir_all(&dir).unwrap();
    let events = json!([event(run, 1), event(run, 2)]);
    let files: &[(&str, Value)] = &[
        ("000000010-snapshot.bin", json!(snapshot(run, 0))),
        ("000000002-events.bin", events.clone()),
        ("000000001-boot.bin", json!(boot(run))),
        (".000000011-events.bin.tmp", json!([event(run, 3)])),
        ("notes.txt", json!("not a post")),
    ];
    for (name, body) in files {
        std::fs::write(dir.join(name), serde_json::to_vec(body).unwrap()).unwrap();
    }
    let server = serve(root.path(), 0);
    let emitter = Emitter::start(config(server.addr, run, Some(spool.path()))).unwrap();
    assert_eq!(emitter.flush(BOUND), Flushed::All);
    let stats = emitter.finish(BOUND);
    let got = accepted(server.addr, run, 3);
    let want = vec![
        ("boot".to_owned(), json!(boot(run))),
        ("events".to_owned(), events),
        ("snapshot".to_owned(), json!(snapshot(run, 0))),
    ];
    assert_eq!(got, want);
    assert_eq!(stats.replayed, 3);
    assert_eq!(spool_files(spool.path(), run), vec!["notes.txt".to_owned()]);
}

/// A full queue drops, and says so: every record is either enqueued or counted as dropped, the
/// enqueued ones all arrive, and the next snapshot and the finalize carry the count.
#[test]
fn overflow_is_counted_and_reported_in_the_snapshot_and_finalize() {
    let run = "overflow";
    let root = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut c = config(format!("127.0.0.1:{port}"), run, None);
    c.queue_capacity = 4;
    c.batch_max = 1;
    c.max_backlog_bytes = 1;
    let emitter = Emitter::start(c).unwrap();
    let offered = 100;
    let taken = (1..=offered)
        .filter(|&s| emitter.event(event(run, s)))
        .count() as u64;
    let stats = emitter.stats();
    assert_eq!(stats.enqueued + stats.dropped, offered, "{stats:?}");
    assert_eq!(stats.enqueued, taken);
    assert!(stats.dropped > 0, "a queue of 4 took {taken} of {offered}");

    let server = serve(root.path(), port);
    assert_eq!(emitter.flush(BOUND), Flushed::All);
    assert!(emitter.snapshot(snapshot(run, 0)));
    assert!(emitter.finalize(finalize()));
    let stats: Stats = emitter.finish(BOUND);
    let got = accepted(server.addr, run, taken as usize + 2);
    let events = got.iter().filter(|(k, _)| k == "events").count() as u64;
    assert_eq!(events, taken);
    for (kind, body) in &got[taken as usize..] {
        assert_eq!(
            body["diag_records_dropped"],
            json!(offered - taken),
            "the {kind}'s count"
        );
    }
    assert_eq!(stats.dropped, offered - taken);
}

/// A post the collector refuses for good (a body that is neither JSON nor protobuf: 400) is
/// counted as rejected and not retried; the posts after it still arrive.
#[test]
fn a_refused_post_is_counted_and_the_next_ones_still_arrive() {
    let run = "refused";
    let root = tempfile::tempdir().unwrap();
    let server = serve(root.path(), 0);
    let emitter = Emitter::start(config(server.addr, run, None)).unwrap();
    assert!(emitter.raw(FileKind::Boot, b"\xff\xff not a record".to_vec()));
    assert!(emitter.boot(boot(run)));
    assert_eq!(emitter.flush(BOUND), Flushed::All);
    let stats = emitter.finish(BOUND);
    assert_eq!((stats.rejected, stats.posted), (1, 1), "{stats:?}");
    assert_eq!(
        accepted(server.addr, run, 1),
        vec![("boot".into(), json!(boot(run)))]
    );
}

/// A post the collector acknowledges but keeps in quarantine (JSON that is not a boot record:
/// its `PostAck` says `quarantined`) is counted as quarantined, once; a post it stages is not.
#[test]
fn a_post_kept_in_quarantine_is_counted_from_its_acknowledgement() {
    let run = "kept";
    let root = tempfile::tempdir().unwrap();
    let server = serve(root.path(), 0);
    let emitter = Emitter::start(config(server.addr, run, None)).unwrap();
    assert!(emitter.raw(FileKind::Boot, b"[1, 2]".to_vec()));
    assert!(emitter.boot(boot(run)));
    assert_eq!(emitter.flush(BOUND), Flushed::All);
    let stats = emitter.finish(BOUND);
    assert_eq!(
        (stats.quarantined, stats.posted, stats.rejected),
        (1, 2, 0),
        "{stats:?}"
    );
}

/// The collector's `snapshot_now` hint reaches the node: the callback runs and the flag is
/// set, for the node that finalizes (in its finalize reply) and for another node of the run
/// (in its next reply).
#[test]
fn the_snapshot_now_hint_reaches_the_caller() {
    let root = tempfile::tempdir().unwrap();
    let server = serve(root.path(), 0);
    for (i, finalizing) in [true, false].into_iter().enumerate() {
        let run = format!("hint-{i}");
        let calls = Arc::new(AtomicUsize::new(0));
        let mut c = config(server.addr, &run, None);
        let counter = calls.clone();
        c.on_snapshot_now = Some(Arc::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        }));
        let node = Emitter::start(c).unwrap();
        assert!(node.boot(boot(&run)));
        assert_eq!(node.flush(BOUND), Flushed::All);
        assert!(
            !node.take_snapshot_request(),
            "a hint before any was queued"
        );
        if finalizing {
            assert!(node.finalize(finalize()));
        } else {
            let mut other = Config::new(format!("http://{}", server.addr), &run, "node-b");
            other.backoff_initial = Duration::from_millis(10);
            let orchestrator = Emitter::start(other).unwrap();
            assert!(orchestrator.finalize(finalize()));
            assert_eq!(orchestrator.flush(BOUND), Flushed::All);
            orchestrator.finish(BOUND);
            assert!(node.snapshot(snapshot(&run, 0)));
        }
        assert_eq!(node.flush(BOUND), Flushed::All);
        assert!(node.take_snapshot_request(), "finalizing: {finalizing}");
        assert!(!node.take_snapshot_request(), "the flag is taken once");
        assert_eq!(calls.load(Ordering::SeqCst), 1, "finalizing: {finalizing}");
        node.finish(BOUND);
    }
}

/// Ids the collector would refuse and URLs it cannot be reached at are refused when the emitter
/// starts, with the value escaped.
#[test]
fn bad_ids_and_urls_are_refused_at_start() {
    let cases: &[(&str, &str, &str, &str)] = &[
        ("http://127.0.0.1:1", "", "n", "run_id \"\" is not"),
        (
            "http://127.0.0.1:1",
            "r/../x",
            "n",
            "run_id \"r/../x\" is not",
        ),
        ("http://127.0.0.1:1", "r", "..", "node_id \"..\" is not"),
        (
            "http://127.0.0.1:1",
            "r",
            "a\u{1b}[2J",
            "node_id \"a\\u{1b}[2J\" is not",
        ),
        ("https://example.invalid", "r", "n", "collector URL"),
        ("http:///diag", "r", "n", "collector URL"),
    ];
    for (url, run, node, want) in cases {
        let e = Emitter::start(Config::new(*url, *run, *node))
            .err()
            .unwrap_or_else(|| panic!("{url} {run} {node} was taken"));
        let text = e.to_string();
        assert!(text.starts_with(want), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
    }
}

/// A scripted reply: a status and a header line (`""` for none).
type Reply = (u16, &'static str);

/// A scripted collector on 127.0.0.1: answers the requests it gets, in order, with `replies`
/// (status, extra header line), then stops; returns its address and, when joined, the routes
/// it was asked for.
fn scripted(replies: Vec<Reply>) -> (std::net::SocketAddr, std::thread::JoinHandle<Vec<String>>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = std::thread::spawn(move || {
        let mut routes = Vec::new();
        let mut replies = replies.into_iter();
        'connections: while let Ok((stream, _)) = listener.accept() {
            stream.set_read_timeout(Some(BOUND)).unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut stream = stream;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    continue 'connections;
                }
                routes.push(line.split(' ').nth(1).unwrap_or_default().to_owned());
                let mut length = 0;
                loop {
                    let mut header = String::new();
                    reader.read_line(&mut header).unwrap();
                    if header.trim().is_empty() {
                        break;
                    }
                    if let Some((k, v)) = header.split_once(':') {
                        if k.eq_ignore_ascii_case("content-length") {
                            length = v.trim().parse().unwrap();
                        }
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                let Some((status, header)) = replies.next() else {
                    return routes;
                };
                let ack = br#"{"clock":{"node_send_ms_echoed":0,"collector_recv_ms":1,"collector_send_ms":1}}"#;
                let reply = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{header}content-length: {}\r\n\r\n",
                    ack.len()
                );
                stream.write_all(reply.as_bytes()).unwrap();
                stream.write_all(ack).unwrap();
                if replies.len() == 0 {
                    return routes;
                }
            }
        }
        routes
    });
    (addr, handle)
}

/// How the emitter answers each status: retried (the same post again) or refused for good; a
/// `Retry-After` is waited instead of the backoff (here an hour, which a flush within its bound
/// could never wait out).
#[test]
fn statuses_are_retried_or_refused_and_retry_after_is_honoured() {
    // (case, the replies in order, retried, rejected)
    let cases: &[(&str, Vec<Reply>, u64, u64)] = &[
        (
            "503 with Retry-After",
            vec![(503, "retry-after: 0\r\n"), (200, "")],
            1,
            0,
        ),
        (
            "429 with Retry-After",
            vec![(429, "retry-after: 0\r\n"), (200, "")],
            1,
            0,
        ),
        (
            "500 then 502 with Retry-After",
            vec![
                (500, "retry-after: 0\r\n"),
                (502, "retry-after: 0\r\n"),
                (200, ""),
            ],
            2,
            0,
        ),
        ("404 is final", vec![(404, "")], 0, 1),
        ("413 is final", vec![(413, "")], 0, 1),
    ];
    for (name, replies, retried, rejected) in cases {
        let (addr, server) = scripted(replies.clone());
        let mut c = config(addr, "scripted", None);
        c.backoff_initial = Duration::from_secs(3600);
        c.backoff_max = Duration::from_secs(3600);
        let emitter = Emitter::start(c).unwrap();
        assert!(emitter.boot(boot("scripted")));
        assert_eq!(emitter.flush(BOUND), Flushed::All, "{name}");
        let stats = emitter.finish(BOUND);
        assert_eq!(
            (stats.retried, stats.rejected, stats.posted),
            (*retried, *rejected, 1 - *rejected),
            "{name}: {stats:?}"
        );
        let routes = server.join().unwrap();
        assert_eq!(routes.len(), replies.len(), "{name}");
        assert!(
            routes.iter().all(|r| r == "/diag/boot"),
            "{name}: {routes:?}"
        );
    }
}
