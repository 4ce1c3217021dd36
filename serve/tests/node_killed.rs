//! A node process killed (SIGKILL) at any moment loses nothing it had spooled and stores nothing
//! twice. The node is this test's own binary run with the argument `node`: it emits the
//! orchestrator's records of the example bundle `n3-relay-flap` (its boot, its events and
//! snapshots in the order of their clock, its finalize) through `diagwire-emitter`, with a spool,
//! to the real `diagwire-serve` binary on 127.0.0.1, flushing at each snapshot, and says on
//! standard output each record it handed to the emitter.
//!
//! For each kind of kill point the node is killed at seeded points (two per case), each time
//! started again on the same spool with the record after the last one it had (as a restarted
//! node goes on with its run), then left to finish. At each kill, what the collector stores and
//! what the spool holds are read: the records lost are exactly those handed to the emitter that
//! are in neither, and they are the last ones handed to it (the queue and the open batch are
//! memory until they are spooled: `docs/emitter.md`). At the end the spool is empty, and the
//! served bundle validates and holds the records of the same run emitted without kills, each
//! once and in order, less the lost ones.
//!
//! The harness is a `main` of its own (no libtest) because the binary is also the node; its
//! arguments filter the cases by name.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use diagwire::layout::parse_bundle_path;
use diagwire::v1::{EventRecord, Finalize, Identity, Snapshot};
use diagwire_emitter::{Config, Emitter, Flushed};
use diagwire_serve::client::Connection;
use serde_json::Value;

const RUN: &str = "n3-relay-flap";
/// The node whose records are emitted.
const LABEL: &str = "orchestrator";
/// The argument that makes this binary the node.
const NODE: &str = "node";
/// The seed of the kill points.
const SEED: u64 = 0x6e6f_6465;
/// How many times each case kills the node.
const KILLS: usize = 2;
/// The longest any one wait lasts (a line from the node, a flush, a finish): a bound, never an
/// assertion on time.
const BOUND: Duration = Duration::from_secs(60);
/// The environment variable of the emitter's kill points (feature `kill-points`).
const KILL_AT: &str = "DIAGWIRE_EMITTER_KILL_AT";

/// Where the node is killed.
#[derive(Debug, Clone, Copy)]
enum Kill {
    /// By the test, once the node flushed (every record acknowledged) and stopped.
    Flushed,
    /// By the test, right after the node handed a record to the emitter, the emitter at work
    /// (records in its queue, its open batch, the spool, a request).
    Enqueued,
    /// By the emitter, a post's temporary spool file written and flushed, not yet renamed.
    MidSpoolWrite,
    /// By the emitter, a post in the spool, not yet sent.
    SpooledNotSent,
    /// By the emitter, a post acknowledged, its spool file not yet removed: it is posted again.
    AcknowledgedNotRemoved,
}

/// One case per kind of kill point.
const CASES: &[(&str, Kill)] = &[
    ("killed_after_a_flush_loses_nothing", Kill::Flushed),
    (
        "killed_after_an_enqueue_loses_only_what_was_never_spooled",
        Kill::Enqueued,
    ),
    (
        "killed_mid_spool_write_loses_only_that_post_and_what_follows",
        Kill::MidSpoolWrite,
    ),
    (
        "killed_with_a_post_spooled_not_sent_sends_it_after_the_restart",
        Kill::SpooledNotSent,
    ),
    (
        "killed_with_a_post_acknowledged_not_unspooled_stores_it_once",
        Kill::AcknowledgedNotRemoved,
    ),
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(NODE) {
        node(&args[1..]);
        return;
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let cases: Vec<_> = CASES
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        .collect();
    println!("\nrunning {} node-kill cases", cases.len());
    if cases.is_empty() {
        return;
    }
    let run = run_records();
    let started = Instant::now();
    let reference = reference(&run);
    println!("reference run: {} records, each once, in order", run.len());
    for (i, (name, kill)) in cases.into_iter().enumerate() {
        let mut rng = fastrand::Rng::with_seed(SEED.wrapping_add(i as u64));
        let summary = check_killed(*kill, &mut rng, &run, &reference);
        println!("case {name} ... ok ({summary})");
    }
    println!(
        "node-kill cases: ok, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

// ------------------------------------------------------------------------------------------
// The run.

/// One record of the run: its kind (`boot`, `event`, `snapshot`, `finalize`) and its JSON.
struct Record {
    kind: &'static str,
    value: Value,
}

fn read_json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The files of `dir` in name order (numbered files: in number order).
fn sorted_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

/// The orchestrator's records of the example bundle as the node emits them: its boot, its
/// events and snapshots in the order of their `wall_ms` (an event before a snapshot of the same
/// millisecond), its finalize.
fn run_records() -> Vec<Record> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/bundles")
        .join(RUN)
        .join(LABEL);
    let mut timed: Vec<Record> = Vec::new();
    for file in sorted_files(&dir.join("events")) {
        let Value::Array(events) = read_json(&file) else {
            panic!("{}: not an array of events", file.display());
        };
        timed.extend(events.into_iter().map(|value| Record {
            kind: "event",
            value,
        }));
    }
    for file in sorted_files(&dir.join("snapshots")) {
        timed.push(Record {
            kind: "snapshot",
            value: read_json(&file),
        });
    }
    timed.sort_by_key(|r| r.value["wall_ms"].as_u64().expect("a record has wall_ms"));
    let mut run = vec![Record {
        kind: "boot",
        value: read_json(&dir.join("boot.json")),
    }];
    run.extend(timed);
    run.push(Record {
        kind: "finalize",
        value: read_json(&dir.join("finalize.json")),
    });
    run
}

/// A record's identity for this test: its kind and its JSON, without the dropped count the
/// emitter sets.
fn key(kind: &str, value: &Value) -> (String, String) {
    let mut value = value.clone();
    if let Some(o) = value.as_object_mut() {
        o.remove("diag_records_dropped");
    }
    (kind.to_owned(), value.to_string())
}

/// Finds the run's record of a stored or spooled one.
struct Index(HashMap<(String, String), usize>);

impl Index {
    fn of(run: &[Record]) -> Index {
        let mut map = HashMap::new();
        for (i, r) in run.iter().enumerate() {
            assert!(
                map.insert(key(r.kind, &r.value), i).is_none(),
                "record {i} of the run is not told apart from an earlier one"
            );
        }
        Index(map)
    }

    fn find(&self, kind: &str, value: &Value) -> usize {
        *self
            .0
            .get(&key(kind, value))
            .unwrap_or_else(|| panic!("a {kind} record that is not the run's: {value}"))
    }
}

// ------------------------------------------------------------------------------------------
// The node.

/// The node: `node URL SPOOL FROM [pause K] [flush]`. Emits the run's records from number FROM,
/// printing `enqueued I` after handing record I to the emitter and flushing after each
/// snapshot; with `pause K`, after record K it flushes (with `flush`), prints `paused` and waits
/// on standard input (for the test to kill it); at the end it finishes and prints
/// `finished PENDING REPLAYED`.
fn node(args: &[String]) {
    let [url, spool, from, rest @ ..] = args else {
        panic!("node URL SPOOL FROM [pause K] [flush]: {args:?}");
    };
    let from: usize = from.parse().expect("FROM is a number");
    let pause: Option<usize> = match rest {
        [p, k, ..] if p == "pause" => Some(k.parse().expect("K is a number")),
        _ => None,
    };
    let flush_at_pause = rest.iter().any(|a| a == "flush");
    let run = run_records();
    let node_id = run[0].value["node_id_hex"]
        .as_str()
        .expect("the boot's node id");
    let mut config = Config::new(url.as_str(), RUN, node_id);
    config.spool = Some(PathBuf::from(spool));
    config.backoff_initial = Duration::from_millis(10);
    config.backoff_max = Duration::from_millis(200);
    let emitter = Emitter::start(config).expect("the emitter starts");
    for (i, record) in run.iter().enumerate().skip(from) {
        let value = record.value.clone();
        let taken = match record.kind {
            "boot" => emitter.boot(typed::<Identity>(value)),
            "event" => emitter.event(typed::<EventRecord>(value)),
            "snapshot" => emitter.snapshot(typed::<Snapshot>(value)),
            _ => emitter.finalize(typed::<Finalize>(value)),
        };
        assert!(taken, "record {i} was dropped by a queue that is not full");
        println!("enqueued {i}");
        if pause == Some(i) {
            if flush_at_pause {
                assert_eq!(emitter.flush(BOUND), Flushed::All, "the flush at {i}");
            }
            println!("paused");
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
            return;
        }
        if record.kind == "snapshot" {
            assert_eq!(emitter.flush(BOUND), Flushed::All, "the flush at {i}");
        }
    }
    let stats = emitter.finish(BOUND);
    println!("finished {} {}", stats.pending, stats.replayed);
}

fn typed<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a record of the example bundle parses")
}

/// How the test starts the node.
#[derive(Default)]
struct Start {
    /// Where it stops and waits: (the record, whether it flushes first).
    pause: Option<(usize, bool)>,
    /// `DIAGWIRE_EMITTER_KILL_AT`.
    kill_at: Option<String>,
}

/// How a run of the node ended.
struct Ended {
    /// The records it handed to the emitter, in order.
    enqueued: Vec<usize>,
    /// Whether it was killed (SIGKILL), by the test or by its emitter.
    killed: bool,
    /// `finished PENDING REPLAYED`, when it finished.
    finished: Option<(u64, u64)>,
}

/// The next line from the node, within the bound; `None` at the end of its output.
fn line(lines: &Receiver<String>, child: &mut Child) -> Option<String> {
    match lines.recv_timeout(BOUND) {
        Ok(line) => Some(line),
        Err(RecvTimeoutError::Disconnected) => None,
        Err(RecvTimeoutError::Timeout) => {
            let _ = child.kill();
            panic!("the node said nothing for {BOUND:?}")
        }
    }
}

/// Runs the node from record `from` on `spool` against `addr` until it finishes or is killed.
fn run_node(addr: SocketAddr, spool: &Path, from: usize, start: Start) -> Ended {
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command
        .arg(NODE)
        .arg(format!("http://{addr}"))
        .arg(spool)
        .arg(from.to_string())
        .env_remove(KILL_AT)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some((k, flush)) = start.pause {
        command.args(["pause".to_owned(), k.to_string()]);
        if flush {
            command.arg("flush");
        }
    }
    if let Some(at) = &start.kill_at {
        command.env(KILL_AT, at);
    }
    let mut child = command.spawn().expect("the node starts");
    // Held open, so that a paused node waits on it until it is killed.
    let _stdin = child.stdin.take();
    let stdout = child.stdout.take().expect("its output");
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut ended = Ended {
        enqueued: Vec::new(),
        killed: false,
        finished: None,
    };
    while let Some(line) = line(&lines, &mut child) {
        let mut words = line.split(' ');
        match (words.next(), words.next(), words.next()) {
            (Some("enqueued"), Some(i), None) => ended.enqueued.push(i.parse().unwrap()),
            (Some("paused"), None, None) => child.kill().expect("the node is killed"),
            (Some("finished"), Some(pending), Some(replayed)) => {
                ended.finished = Some((pending.parse().unwrap(), replayed.parse().unwrap()))
            }
            _ => panic!("the node said {line:?}"),
        }
    }
    let status = child.wait().expect("the node ends");
    ended.killed = status.signal() == Some(9);
    assert!(
        ended.killed || status.success(),
        "the node failed: {status}"
    );
    ended
}

// ------------------------------------------------------------------------------------------
// The collector.

/// The real collector binary on 127.0.0.1 over a root of its own, killed when dropped.
struct Collector {
    runtime: tokio::runtime::Runtime,
    child: Option<tokio::process::Child>,
    addr: SocketAddr,
    _root: tempfile::TempDir,
}

impl Collector {
    fn start() -> Collector {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let root = tempfile::tempdir().unwrap();
        let (child, addr) = runtime.block_on(common::spawn_binary(root.path(), false));
        Collector {
            runtime,
            child: Some(child),
            addr,
            _root: root,
        }
    }

    /// The run's bundle as the collector assembles it now (`GET /diag/bundle`), read and
    /// validated; `None` before the run has a post.
    fn bundle(&self) -> Option<(diagwire::bundle::BundleContents, Vec<String>)> {
        let reply = self.runtime.block_on(async {
            let mut conn = Connection::new(self.addr);
            tokio::time::timeout(BOUND, conn.get(&format!("/diag/bundle/{RUN}")))
                .await
                .expect("the collector answers within the bound")
                .expect("the collector answers")
        });
        match reply.status {
            404 => None,
            200 => {
                let (contents, report) = common::open_bundle(&reply.body);
                let problems = report.problems.iter().map(|p| format!("{p:?}")).collect();
                Some((contents, problems))
            }
            status => panic!("GET /diag/bundle/{RUN}: {status}"),
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.start_kill();
            let _ = self.runtime.block_on(child.wait());
        }
    }
}

/// A served bundle's records by kind (`boot`, `event`, `snapshot`, `finalize`), each kind in
/// the bundle's order (numbered files by number; an events file's events one by one).
type ByKind = BTreeMap<String, Vec<Value>>;

fn by_kind(contents: &diagwire::bundle::BundleContents) -> ByKind {
    let mut out = ByKind::new();
    for (path, bytes) in &contents.files {
        let at = parse_bundle_path(path);
        let (Some(_), Some(kind)) = (at.node, at.role.file_kind()) else {
            continue;
        };
        let value: Value = serde_json::from_slice(bytes).expect("a record file is JSON");
        match (kind.staged_stem().as_str(), value) {
            ("events", Value::Array(events)) => {
                out.entry("event".into()).or_default().extend(events)
            }
            (stem, value) => out.entry(stem.to_owned()).or_default().push(value),
        }
    }
    out
}

fn indices(records: &ByKind, index: &Index) -> Vec<usize> {
    let mut out = Vec::new();
    for (kind, values) in records {
        out.extend(values.iter().map(|v| index.find(kind, v)));
    }
    out
}

// ------------------------------------------------------------------------------------------
// The spool.

/// The records of the spool's posts of the run: (in place, in temporary files).
fn spooled(spool: &Path, index: &Index) -> (Vec<usize>, Vec<usize>) {
    let (mut placed, mut writing) = (Vec::new(), Vec::new());
    let dir = spool.join(RUN);
    if !dir.exists() {
        return (placed, writing);
    }
    for path in sorted_files(&dir) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let temporary = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp"));
        let stem = temporary
            .unwrap_or(&name)
            .strip_suffix(".bin")
            .expect("a spool file ends in .bin");
        let (_, kind) = stem.split_once('-').expect("a spool file is SEQ-KIND.bin");
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let value = match serde_json::from_slice::<Value>(&bytes) {
            Ok(value) => value,
            // A temporary file cut short by the kill holds no whole record.
            Err(_) if temporary.is_some() => continue,
            Err(e) => panic!("{}: {e}", path.display()),
        };
        let into = if temporary.is_some() {
            &mut writing
        } else {
            &mut placed
        };
        match (kind, value) {
            ("events", Value::Array(events)) => {
                into.extend(events.iter().map(|e| index.find("event", e)))
            }
            (kind, value) => into.push(index.find(kind, &value)),
        }
    }
    (placed, writing)
}

// ------------------------------------------------------------------------------------------
// The checks.

/// The run emitted without kills: the served bundle, validated, holds every record of the run
/// once, each kind in the run's order.
fn reference(run: &[Record]) -> ByKind {
    let index = Index::of(run);
    let collector = Collector::start();
    let spool = tempfile::tempdir().unwrap();
    let ended = run_node(collector.addr, spool.path(), 0, Start::default());
    assert_eq!(
        (ended.killed, ended.finished.map(|f| f.0)),
        (false, Some(0)),
        "the run without kills finishes with nothing pending"
    );
    let (contents, problems) = collector.bundle().expect("the run is served");
    assert_eq!(problems, Vec::<String>::new(), "the run validates");
    let records = by_kind(&contents);
    let mut got = indices(&records, &index);
    let order = got.clone();
    got.sort_unstable();
    assert_eq!(got, (0..run.len()).collect::<Vec<_>>(), "every record once");
    for kind in records.keys() {
        let of_kind = |&i: &usize| run[i].kind == kind.as_str();
        let want: Vec<usize> = (0..run.len()).filter(of_kind).collect();
        let have: Vec<usize> = order.iter().copied().filter(of_kind).collect();
        assert_eq!(have, want, "the {kind} records in the run's order");
    }
    records
}

/// What there was at a kill, as records of the run.
struct AtKill {
    /// Handed to the emitter by the killed node, in order.
    enqueued: Vec<usize>,
    /// Stored by the collector.
    stored: BTreeSet<usize>,
    /// In the spool's posts.
    spooled: BTreeSet<usize>,
    /// In a temporary spool file (a post being written).
    writing: BTreeSet<usize>,
}

impl AtKill {
    /// What the kill lost: handed to the emitter, neither stored nor spooled.
    fn lost(&self) -> Vec<usize> {
        self.enqueued
            .iter()
            .copied()
            .filter(|i| !self.stored.contains(i) && !self.spooled.contains(i))
            .collect()
    }
}

/// What each kind of kill point leaves: only records never spooled are lost, and they are the
/// last ones handed to the emitter (the ones before them were spooled, in order).
fn check_kill(kill: Kill, at: &AtKill) {
    let lost = at.lost();
    assert_eq!(
        lost.as_slice(),
        &at.enqueued[at.enqueued.len() - lost.len()..],
        "{kill:?}: what is lost is the last records handed to the emitter"
    );
    let both = at.stored.intersection(&at.spooled).count();
    let unsent = at.spooled.difference(&at.stored).count();
    match kill {
        Kill::Flushed => {
            assert_eq!(lost, Vec::<usize>::new(), "{kill:?}: nothing is lost");
            assert!(
                at.spooled.is_empty() && at.writing.is_empty(),
                "{kill:?}: every post acknowledged left the spool"
            );
        }
        Kill::Enqueued => {}
        Kill::MidSpoolWrite => {
            assert!(!at.writing.is_empty(), "{kill:?}: a post was being written");
            // Neither stored nor spooled. (Not necessarily among `lost`: the emitter's thread may
            // write a record the node was killed before saying it handed on; the restarted node
            // then hands it on again.)
            assert!(
                at.writing
                    .iter()
                    .all(|i| !at.stored.contains(i) && !at.spooled.contains(i)),
                "{kill:?}: the post being written is lost: {:?}, stored {:?}, spooled {:?}",
                at.writing,
                at.stored,
                at.spooled
            );
        }
        Kill::SpooledNotSent => {
            assert!(unsent > 0, "{kill:?}: a spooled post was not sent");
        }
        Kill::AcknowledgedNotRemoved => {
            assert!(
                both > 0,
                "{kill:?}: a post the collector stored is still in the spool"
            );
        }
    }
}

/// Kills the node `KILLS` times at seeded points of `kill`'s kind, restarting it each time,
/// then lets it finish; checks each kill and the served bundle against the run emitted without
/// kills. Returns what happened, for the report.
fn check_killed(kill: Kill, rng: &mut fastrand::Rng, run: &[Record], reference: &ByKind) -> String {
    let index = Index::of(run);
    let collector = Collector::start();
    let spool = tempfile::tempdir().unwrap();
    let mut next = 0;
    let mut lost: BTreeSet<usize> = BTreeSet::new();
    // Records in the spool at a kill, and of those, records the collector had already stored.
    let (mut respooled, mut reposted) = (0, 0);
    for _ in 0..KILLS {
        let at = (next + rng.usize(1..=40)).min(run.len() - 2);
        let step = rng.u64(1..=12);
        let start = match kill {
            Kill::Flushed => Start {
                pause: Some((at, true)),
                ..Start::default()
            },
            Kill::Enqueued => Start {
                pause: Some((at, false)),
                ..Start::default()
            },
            Kill::MidSpoolWrite => Start {
                kill_at: Some(format!("rename:{step}")),
                ..Start::default()
            },
            Kill::SpooledNotSent => Start {
                kill_at: Some(format!("send:{step}")),
                ..Start::default()
            },
            Kill::AcknowledgedNotRemoved => Start {
                kill_at: Some(format!("remove:{step}")),
                ..Start::default()
            },
        };
        let ended = run_node(collector.addr, spool.path(), next, start);
        assert!(
            ended.killed,
            "{kill:?}: the node was killed (from record {next})"
        );
        let stored: BTreeSet<usize> = collector
            .bundle()
            .map(|(contents, _)| indices(&by_kind(&contents), &index).into_iter().collect())
            .unwrap_or_default();
        let (placed, writing) = spooled(spool.path(), &index);
        let at = AtKill {
            enqueued: ended.enqueued,
            stored,
            spooled: placed.into_iter().collect(),
            writing: writing.into_iter().collect(),
        };
        check_kill(kill, &at);
        lost.extend(at.lost());
        respooled += at.spooled.len();
        reposted += at.spooled.intersection(&at.stored).count();
        // The restarted node goes on after the last record it handed to the emitter (or that
        // its emitter spooled before it said so).
        let last = at.enqueued.last().into_iter();
        next = last
            .chain(at.spooled.iter())
            .chain(at.stored.iter())
            .max()
            .map_or(next, |i| (i + 1).max(next));
    }
    let ended = run_node(collector.addr, spool.path(), next, Start::default());
    let Some((pending, _)) = ended.finished else {
        panic!("{kill:?}: the last run of the node did not finish");
    };
    assert_eq!(pending, 0, "{kill:?}: nothing is left pending");
    let left: Vec<PathBuf> = match std::fs::read_dir(spool.path().join(RUN)) {
        Ok(dir) => dir.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    };
    assert_eq!(left, Vec::<PathBuf>::new(), "{kill:?}: the spool is empty");

    let (contents, problems) = collector.bundle().expect("the run is served");
    assert_eq!(
        problems,
        Vec::<String>::new(),
        "{kill:?}: the run validates"
    );
    let got = by_kind(&contents);
    let mut want = reference.clone();
    for (kind, values) in want.iter_mut() {
        values.retain(|v| !lost.contains(&index.find(kind, v)));
    }
    want.retain(|_, values| !values.is_empty());
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{kill:?}: the record kinds"
    );
    for (kind, values) in &want {
        assert_eq!(
            &got[kind],
            values,
            "{kill:?}: the {kind} records: the run's, each once, in order, less the {} lost",
            lost.len()
        );
    }
    format!(
        "{KILLS} kills; {} records lost, none ever spooled; {respooled} records sent from the \
         spool after a restart, {reposted} of them already stored",
        lost.len()
    )
}
