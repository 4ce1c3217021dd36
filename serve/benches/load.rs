//! The collector's load generator, run by hand (`cargo bench -p diagwire-serve --bench load --
//! [--seconds S] [--rounds R] [--nodes 10,100,1000] [--soak-seconds S] [--hostile] [--no-table]`): a collector on
//! 127.0.0.1 (fsync on, in a temporary root) and N simulated nodes, each on its own keep-alive
//! connection, posting a boot, then events batches of 1 to 512 records with a snapshot every
//! tenth post, and a finalize at the end of each phase. Each node numbers its events on (and
//! gives each snapshot its own id), as a node does, so no post repeats a staged record.
//!
//! Per N and per validation setting (on, then off, alternating, R rounds of each in the same
//! run, so a machine shared with other work loads both alike) it reports accepted posts/s, MB/s,
//! the p50/p99 acknowledgement latency (over the posting, the finalize's assembly timed apart)
//! and the process's CPU time (user + system, server and simulated nodes together) per accepted
//! post, with every node posting back to back (saturation), and then with 100 nodes posting once
//! a second each (paced). The ratios on/off are of the posts and CPU time summed over the
//! rounds. A soak phase, when asked for, posts paced for its length (it stops by itself) and
//! compares the posts acknowledged with the files on disk and the process's resident memory
//! over time; with `--hostile`, attackers post beside the nodes for its whole length (batches of
//! a hundred thousand bad records, 4 MiB bodies, streams and bundle downloads that
//! are never read), and what they were answered is printed with the memory. A last table
//! compares idempotent ingest on and off (validation on): 100 nodes posting back to back into
//! one run, alternating over the rounds, and the ratio of posts/s on/off
//! (`--no-dedupe-table` leaves it out).
//!
//! `--runs R` spreads the table's nodes over R runs (node n in run n mod R; each run is
//! finalized by its first node), so posting back to back for longer does not pass a run's bytes
//! limit (1 GiB by default; the bench's own collector lifts it).
//!
//! `--addr HOST:PORT` posts to a collector already listening there (another build, e.g. an older
//! `diagwire-serve` started by hand) instead of one of its own: the table's phases are run once
//! per round with that collector's validation setting (shown as `ext`), each phase into a run of
//! its own (named with the time), ended without a finalize (the posting alone is measured), and
//! no soak or dedupe table. With `--server-pid PID` the CPU time per post is that process's
//! (`/proc/PID/stat`) instead of this one's, so two collectors are compared with the same client.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use diagwire_serve::client::Connection;
use diagwire_serve::{Collector, Config};

struct Args {
    seconds: u64,
    rounds: usize,
    nodes: Vec<usize>,
    soak_seconds: u64,
    hostile: bool,
    table: bool,
    dedupe_table: bool,
    /// A collector to post to instead of one of the bench's own.
    addr: Option<std::net::SocketAddr>,
    /// The process whose CPU time is measured (this one when `None`).
    server_pid: Option<u32>,
    /// The runs the table's nodes are spread over.
    runs: usize,
}

fn args() -> Args {
    let mut a = Args {
        seconds: 10,
        rounds: 1,
        nodes: vec![10, 100, 1000],
        soak_seconds: 0,
        hostile: false,
        table: true,
        dedupe_table: true,
        addr: None,
        server_pid: None,
        runs: 1,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--seconds" => a.seconds = it.next().and_then(|v| v.parse().ok()).unwrap_or(10),
            "--rounds" => a.rounds = it.next().and_then(|v| v.parse().ok()).unwrap_or(1).max(1),
            "--no-table" => a.table = false,
            "--no-dedupe-table" => a.dedupe_table = false,
            "--hostile" => a.hostile = true,
            "--addr" => {
                let v = it.next().unwrap_or_default();
                a.addr = Some(
                    std::net::ToSocketAddrs::to_socket_addrs(&v)
                        .ok()
                        .and_then(|mut addrs| addrs.next())
                        .unwrap_or_else(|| panic!("--addr {v:?}: not HOST:PORT")),
                );
            }
            "--server-pid" => a.server_pid = it.next().and_then(|v| v.parse().ok()),
            "--runs" => a.runs = it.next().and_then(|v| v.parse().ok()).unwrap_or(1).max(1),
            "--soak-seconds" => {
                a.soak_seconds = it.next().and_then(|v| v.parse().ok()).unwrap_or(0)
            }
            "--nodes" => {
                a.nodes = it
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .filter_map(|n| n.parse().ok())
                    .collect();
            }
            _ => {} // cargo bench passes --bench
        }
    }
    a
}

/// What the nodes post: a boot, events batches of several sizes, a snapshot (the records a node
/// renumbers before each post).
struct Bodies {
    boot: Bytes,
    batches: Vec<Vec<Template>>,
    snapshot: Template,
}

/// A record written once around the one value a node changes in each post (an event's
/// `monotonic_seq`, a snapshot's id), so making a body costs copies, not the clone and
/// serialization of a JSON tree: the simulated nodes share the cores with the collector they
/// measure.
struct Template {
    before: Vec<u8>,
    after: Vec<u8>,
}

impl Template {
    /// `value` with `key` set to `mark`, written, and cut where `mark`'s text is.
    fn new(mut value: serde_json::Value, key: &str, mark: serde_json::Value) -> Template {
        let cut = mark.to_string();
        value[key] = mark;
        let text = serde_json::to_string(&value).expect("a record");
        assert_eq!(
            text.matches(&cut).count(),
            1,
            "the mark is in the record once"
        );
        let at = text.find(&cut).expect("the mark");
        Template {
            before: text.as_bytes()[..at].to_vec(),
            after: text.as_bytes()[at + cut.len()..].to_vec(),
        }
    }

    fn len(&self) -> usize {
        self.before.len() + self.after.len()
    }

    /// Writes the record with `value` (JSON text) in the place of the mark.
    fn write(&self, out: &mut Vec<u8>, value: &str) {
        out.extend_from_slice(&self.before);
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(&self.after);
    }
}

fn bodies() -> Bodies {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/bundles/n3-relay-flap/stage-0");
    let mut pool: Vec<serde_json::Value> = Vec::new();
    let mut n = 1;
    while let Ok(bytes) = std::fs::read(dir.join(format!("events/events-{n:06}.json"))) {
        let batch: Vec<serde_json::Value> = serde_json::from_slice(&bytes).unwrap();
        pool.extend(batch);
        n += 1;
    }
    let seq_mark = serde_json::Value::from(u64::MAX);
    let batches = [1usize, 16, 64, 512]
        .iter()
        .map(|&size| {
            pool.iter()
                .cycle()
                .take(size)
                .map(|r| Template::new(r.clone(), "monotonic_seq", seq_mark.clone()))
                .collect()
        })
        .collect();
    let snapshot = std::fs::read(dir.join("snapshots/snapshot-000001.json")).unwrap();
    Bodies {
        boot: Bytes::from(std::fs::read(dir.join("boot.json")).unwrap()),
        batches,
        snapshot: Template::new(
            serde_json::from_slice(&snapshot).unwrap(),
            "snapshot_id",
            "\u{1}load-snapshot-id".into(),
        ),
    }
}

#[derive(Default)]
struct Tally {
    latencies_us: Vec<u64>,
    bytes: u64,
    failed: u64,
}

/// One node: boot, then posts until `until`, one every `pace` (or back to back).
async fn node(
    addr: std::net::SocketAddr,
    run: String,
    id: String,
    bodies: Arc<Bodies>,
    until: Instant,
    pace: Option<Duration>,
    offset: Duration,
) -> Tally {
    let mut conn = Connection::new(addr);
    let mut tally = Tally::default();
    tokio::time::sleep(offset).await;
    let mut i = 0u64;
    let mut seq = 0u64;
    let mut next = Instant::now();
    while Instant::now() < until {
        let (kind, body) = if i == 0 {
            ("boot", bodies.boot.clone())
        } else if i.is_multiple_of(10) {
            let mut out = Vec::with_capacity(bodies.snapshot.len() + 32);
            bodies.snapshot.write(&mut out, &format!("\"load-{i}\""));
            ("snapshot", Bytes::from(out))
        } else {
            let batch = &bodies.batches[(i as usize) % bodies.batches.len()];
            let room: usize = batch.iter().map(|t| t.len() + 21).sum();
            let mut out = Vec::with_capacity(room + 2);
            out.push(b'[');
            for (k, record) in batch.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                seq += 1;
                record.write(&mut out, &seq.to_string());
            }
            out.push(b']');
            ("events", Bytes::from(out))
        };
        let len = body.len() as u64;
        let start = Instant::now();
        match conn
            .post(kind, &run, &id, 0, "application/json", body)
            .await
        {
            Ok(r) if r.status == 200 => {
                tally.latencies_us.push(start.elapsed().as_micros() as u64);
                tally.bytes += len;
            }
            _ => tally.failed += 1,
        }
        i += 1;
        if let Some(pace) = pace {
            next += pace;
            tokio::time::sleep_until(next.into()).await;
        }
    }
    tally
}

fn quantile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i] as f64 / 1000.0
}

struct Phase {
    elapsed_s: f64,
    cpu_s: f64,
    posts: u64,
    posts_per_s: f64,
    mb_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    failed: u64,
    finalize_s: f64,
}

/// The collector a phase posts to.
#[derive(Clone, Copy)]
struct Target {
    addr: std::net::SocketAddr,
    /// Not the bench's own (`--addr`): the phase ends without a finalize.
    external: bool,
    /// The process whose CPU time is measured (this one when `None`).
    cpu_pid: Option<u32>,
    /// The runs the nodes are spread over (`<run>-<i>` when more than one).
    runs: usize,
}

impl Target {
    fn own(addr: std::net::SocketAddr) -> Target {
        Target {
            addr,
            external: false,
            cpu_pid: None,
            runs: 1,
        }
    }
}

fn phase(
    rt: &tokio::runtime::Runtime,
    target: Target,
    run: &str,
    nodes: usize,
    seconds: u64,
    pace: Option<Duration>,
    bodies: &Arc<Bodies>,
) -> Phase {
    let addr = target.addr;
    let start = Instant::now();
    let cpu_start = cpu_s(target.cpu_pid);
    let until = start + Duration::from_secs(seconds);
    let tallies = rt.block_on(async {
        let mut tasks = Vec::new();
        for n in 0..nodes {
            // Paced nodes spread their posts over the second.
            let offset = pace.map_or(Duration::ZERO, |p| p * n as u32 / nodes as u32);
            let run = if target.runs > 1 {
                format!("{run}-{}", n % target.runs)
            } else {
                run.to_owned()
            };
            tasks.push(tokio::spawn(node(
                addr,
                run,
                format!("node-{n:05}"),
                bodies.clone(),
                until,
                pace,
                offset,
            )));
        }
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        let elapsed = start.elapsed().as_secs_f64();
        let cpu = cpu_s(target.cpu_pid) - cpu_start;
        let finalize = Instant::now();
        if target.external {
            return (out, elapsed, cpu, f64::NAN);
        }
        let mut conn = Connection::new(addr);
        // Run i's first node (node i) finalizes it.
        for i in 0..target.runs.min(nodes.max(1)) {
            let run = if target.runs > 1 {
                format!("{run}-{i}")
            } else {
                run.to_owned()
            };
            let fin = conn
                .post(
                    "finalize",
                    &run,
                    &format!("node-{i:05}"),
                    0,
                    "application/json",
                    Bytes::from_static(b"{}"),
                )
                .await;
            assert_eq!(fin.map(|r| r.status).ok(), Some(200), "finalize");
        }
        (out, elapsed, cpu, finalize.elapsed().as_secs_f64())
    });
    let (tallies, elapsed, cpu_s, finalize_s) = tallies;
    let mut lat: Vec<u64> = tallies
        .iter()
        .flat_map(|t| t.latencies_us.iter().copied())
        .collect();
    lat.sort_unstable();
    let bytes: u64 = tallies.iter().map(|t| t.bytes).sum();
    Phase {
        elapsed_s: elapsed,
        cpu_s,
        posts: lat.len() as u64,
        posts_per_s: lat.len() as f64 / elapsed,
        mb_per_s: bytes as f64 / elapsed / 1e6,
        p50_ms: quantile(&lat, 0.5),
        p99_ms: quantile(&lat, 0.99),
        failed: tallies.iter().map(|t| t.failed).sum(),
        finalize_s,
    }
}

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The record files staged for the soak's runs: landed ones only, not the hidden temporary files
/// of posts still being written (the attackers' keep coming while the count is taken).
fn staged_files(root: &Path) -> u64 {
    let mut n = 0;
    let soak_runs = std::fs::read_dir(root.join("staging"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("soak-"));
    let mut stack: Vec<_> = soak_runs.map(|e| e.path()).collect();
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if !e.file_name().to_string_lossy().starts_with('.') {
                n += 1;
            }
        }
    }
    n
}

fn main() {
    let args = args();
    let bodies = Arc::new(bodies());
    println!(
        "load: batches of {:?} records, snapshot {} bytes; {} s per phase; fsync on",
        bodies.batches.iter().map(Vec::len).collect::<Vec<_>>(),
        bodies.snapshot.len() + "\"load-1\"".len(),
        args.seconds
    );
    fsync_baseline();
    let clients = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if args.table {
        println!(
            "| nodes | validation | mode | posts | posts/s | MB/s | p50 ack ms | p99 ack ms | CPU ms/post | failed | finalize s |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|");
    }
    let modes: Vec<(usize, Option<Duration>)> = args
        .nodes
        .iter()
        .map(|&n| (n, None))
        .chain(std::iter::once((100, Some(Duration::from_secs(1)))))
        .collect();
    for (nodes, pace) in modes.into_iter().filter(|_| args.table) {
        let mode = if pace.is_some() {
            "1 post/s each"
        } else {
            "saturated"
        };
        // (posts, seconds, CPU seconds) summed over the rounds, on and off.
        let mut sums = [(0u64, 0f64, 0f64); 2];
        for _ in 0..args.rounds {
            let run = if pace.is_some() { "paced" } else { "load" };
            if let Some(addr) = args.addr {
                let target = Target {
                    addr,
                    external: true,
                    cpu_pid: args.server_pid,
                    runs: args.runs,
                };
                let run = format!("{run}-{}", diagwire_serve::routes::now_ms());
                let p = phase(&clients, target, &run, nodes, args.seconds, pace, &bodies);
                print_row(nodes, "ext", mode, &p);
                continue;
            }
            for validate in [true, false] {
                let (root, server, addr) = server(validate, true);
                let target = Target {
                    runs: args.runs,
                    ..Target::own(addr)
                };
                let p = phase(&clients, target, run, nodes, args.seconds, pace, &bodies);
                print_row(nodes, if validate { "on" } else { "off" }, mode, &p);
                let sum = &mut sums[usize::from(!validate)];
                sum.0 += p.posts;
                sum.1 += p.elapsed_s;
                sum.2 += p.cpu_s;
                drop((server, root));
            }
        }
        if args.addr.is_some() {
            continue;
        }
        let rate = |s: (u64, f64, f64)| s.0 as f64 / s.1;
        let cpu = |s: (u64, f64, f64)| s.2 * 1e3 / s.0.max(1) as f64;
        println!(
            "| {nodes} | on/off | {mode}: ratio | | {:.2} | | | | {:.2} | | |",
            rate(sums[0]) / rate(sums[1]),
            cpu(sums[0]) / cpu(sums[1]),
        );
    }
    if args.addr.is_some() {
        return;
    }
    if args.dedupe_table {
        dedupe_table(&clients, &args, &bodies);
    }
    if args.soak_seconds > 0 {
        let (root, server, addr) = server(true, true);
        let start = Instant::now();
        let mut acked = 0;
        let mut minute = 0;
        println!("soak: 100 nodes, 1 post/s each, {} s", args.soak_seconds);
        let answers = Arc::new(Answers::default());
        let attackers = args.hostile.then(|| {
            let until = start + Duration::from_secs(args.soak_seconds);
            println!("  with attackers: 200 KB bad batches, 4 MiB bodies, streams and downloads never read");
            let _guard = clients.enter();
            hostile::spawn(addr, until, answers.clone())
        });
        while start.elapsed().as_secs() < args.soak_seconds {
            let left = args.soak_seconds - start.elapsed().as_secs();
            let p = phase(
                &clients,
                Target::own(addr),
                &format!("soak-{minute}"),
                100,
                60.min(left).max(1),
                Some(Duration::from_secs(1)),
                &bodies,
            );
            acked += p.posts + 1; // and the finalize
            minute += 1;
            println!(
                "  after {:>4} s: acknowledged {acked}, on disk {}, RSS {} MB, p50 {:.2} ms, p99 {:.2} ms, CPU {:.2} ms/post, failed {}, finalize {:.1} s",
                start.elapsed().as_secs(),
                staged_files(root.path()),
                rss_kb() / 1024,
                p.p50_ms,
                p.p99_ms,
                p.cpu_s * 1e3 / p.posts.max(1) as f64,
                p.failed,
                p.finalize_s
            );
            if attackers.is_some() {
                println!("    attackers: {}", answers.line());
            }
        }
        if let Some(tasks) = attackers {
            clients.block_on(async {
                for t in tasks {
                    let _ = t.await;
                }
            });
        }
        drop(server);
    }
}

/// Idempotent ingest on and off (validation on): 100 nodes posting back to back into one run,
/// alternating over the rounds; the ratio of posts/s on/off.
fn dedupe_table(clients: &tokio::runtime::Runtime, args: &Args, bodies: &Arc<Bodies>) {
    println!(
        "| nodes | dedupe | posts | posts/s | p50 ack ms | p99 ack ms | CPU ms/post | failed |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    // (posts, seconds) summed over the rounds, on and off.
    let mut sums = [(0u64, 0f64); 2];
    for _ in 0..args.rounds {
        for dedupe in [true, false] {
            let (root, server, addr) = server(true, dedupe);
            let p = phase(
                clients,
                Target::own(addr),
                "dedupe",
                100,
                args.seconds,
                None,
                bodies,
            );
            println!(
                "| 100 | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {} |",
                if dedupe { "on" } else { "off" },
                p.posts,
                p.posts_per_s,
                p.p50_ms,
                p.p99_ms,
                p.cpu_s * 1e3 / p.posts.max(1) as f64,
                p.failed
            );
            let sum = &mut sums[usize::from(!dedupe)];
            sum.0 += p.posts;
            sum.1 += p.elapsed_s;
            drop((server, root));
        }
    }
    let rate = |s: (u64, f64)| s.0 as f64 / s.1;
    println!(
        "dedupe on/off, 100 nodes in one run: posts/s ratio {:.2}",
        rate(sums[0]) / rate(sums[1])
    );
}

/// What the disk alone costs: a small file written, flushed, linked into place and its directory
/// flushed, 300 times, as the collector stores each post.
fn fsync_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let mut lat = Vec::new();
    for i in 0..300 {
        let start = Instant::now();
        let mut f =
            diagwire::bundle::target::PendingFile::create(&dir.path().join(format!("f-{i}")))
                .unwrap();
        std::io::Write::write_all(f.file(), &[b'x'; 4096]).unwrap();
        f.commit().unwrap();
        lat.push(start.elapsed().as_micros() as u64);
    }
    lat.sort_unstable();
    println!(
        "disk alone (4 KiB file: write, fsync, link, directory fsync): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        quantile(&lat, 0.5),
        quantile(&lat, 0.99),
        quantile(&lat, 1.0)
    );
}

fn print_row(nodes: usize, validation: &str, mode: &str, p: &Phase) {
    println!(
        "| {nodes} | {validation} | {mode} | {} | {:.0} | {:.1} | {:.2} | {:.2} | {:.3} | {} | {:.1} |",
        p.posts,
        p.posts_per_s,
        p.mb_per_s,
        p.p50_ms,
        p.p99_ms,
        p.cpu_s * 1e3 / p.posts.max(1) as f64,
        p.failed,
        p.finalize_s
    );
}

/// The CPU time so far (user + system) of this process, or of process `pid`, in seconds, from
/// `/proc/PID/stat`.
fn cpu_s(pid: Option<u32>) -> f64 {
    let path = pid.map_or("/proc/self/stat".to_owned(), |p| format!("/proc/{p}/stat"));
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    // The fields after the command name (which may hold spaces) start after its closing `)`.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

/// A collector on its own runtime (two workers, as the machine has two cores), in a temporary
/// root, stopped when the returned guard is dropped.
fn server(
    validate: bool,
    dedupe: bool,
) -> (
    tempfile::TempDir,
    std::sync::mpsc::Sender<()>,
    std::net::SocketAddr,
) {
    let root = tempfile::tempdir().unwrap();
    let mut config = Config::new(root.path());
    config.validate = validate;
    config.dedupe = dedupe;
    config.finalize_wait = Duration::ZERO;
    config.limits.max_runs = 100_000;
    // Nodes posting back to back fill a run's default 1 GiB within seconds on a fast disk.
    config.limits.max_run_bytes = u64::MAX;
    let collector = Collector::open(config).unwrap();
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let shutdown = async move {
                while matches!(
                    stopped.try_recv(),
                    Err(std::sync::mpsc::TryRecvError::Empty)
                ) {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            };
            let _ = diagwire_serve::serve(listener, collector, shutdown).await;
        });
    });
    let addr = rx.recv().unwrap();
    (root, stop, addr)
}

/// What the attackers were answered, by status.
#[derive(Default)]
struct Answers {
    ok: std::sync::atomic::AtomicU64,
    busy: std::sync::atomic::AtomicU64,
    other: std::sync::atomic::AtomicU64,
    held: std::sync::atomic::AtomicU64,
}

impl Answers {
    fn count(&self, status: u16) {
        use std::sync::atomic::Ordering::Relaxed;
        match status {
            200 => self.ok.fetch_add(1, Relaxed),
            503 => self.busy.fetch_add(1, Relaxed),
            _ => self.other.fetch_add(1, Relaxed),
        };
    }

    fn line(&self) -> String {
        use std::sync::atomic::Ordering::Relaxed;
        format!(
            "200 {}, 503 {}, other {}, connections held unread {}",
            self.ok.load(Relaxed),
            self.busy.load(Relaxed),
            self.other.load(Relaxed),
            self.held.load(Relaxed)
        )
    }
}

/// Clients that attack the collector beside the nodes of the soak, each until `until`.
mod hostile {
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::sync::atomic::Ordering::Relaxed;
    use std::time::{Duration, Instant};

    use bytes::Bytes;
    use diagwire_serve::client::Connection;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpStream;
    use tokio::task::JoinHandle;

    use super::Answers;

    pub fn spawn(addr: SocketAddr, until: Instant, answers: Arc<Answers>) -> Vec<JoinHandle<()>> {
        let zeros = {
            let mut b = b"[0".to_vec();
            for _ in 1..100_000 {
                b.extend_from_slice(b",0");
            }
            b.push(b']');
            Bytes::from(b)
        };
        let large = Bytes::from(format!("[{}]", vec!["0"; 2 << 20].join(",")));
        let posts = |body: Bytes, run: &'static str, pause: u64, answers: Arc<Answers>| async move {
            let mut conn = Connection::new(addr);
            let mut i = 0u64;
            while Instant::now() < until {
                i += 1;
                let reply = conn
                    .post(
                        "events",
                        &format!("{run}-{}", i % 50),
                        "attacker",
                        0,
                        "application/json",
                        body.clone(),
                    )
                    .await;
                answers.count(reply.map_or(0, |r| r.status));
                tokio::time::sleep(Duration::from_millis(pause)).await;
            }
        };
        let unread = |path: &'static str, most: usize, answers: Arc<Answers>| async move {
            let mut held = Vec::new();
            let mut i = 0u64;
            while Instant::now() < until {
                i += 1;
                if held.len() >= most {
                    held.remove(0);
                    answers.held.fetch_sub(1, Relaxed);
                }
                if let Ok(mut s) = TcpStream::connect(addr).await {
                    let request = format!("GET {path}{} HTTP/1.1\r\nhost: t\r\n\r\n", i % 50);
                    if s.write_all(request.as_bytes()).await.is_ok() {
                        held.push(s);
                        answers.held.fetch_add(1, Relaxed);
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            answers.held.fetch_sub(held.len() as u64, Relaxed);
        };
        vec![
            tokio::spawn(posts(zeros, "hostile-zeros", 0, answers.clone())),
            tokio::spawn(posts(
                large.clone(),
                "hostile-large",
                2_000,
                answers.clone(),
            )),
            tokio::spawn(posts(large, "hostile-large", 2_000, answers.clone())),
            tokio::spawn(unread("/diag/stream/hostile-large-", 300, answers.clone())),
            tokio::spawn(unread("/diag/stream/never-posted-", 300, answers.clone())),
            tokio::spawn(unread("/diag/bundle/hostile-large-", 20, answers)),
        ]
    }
}
