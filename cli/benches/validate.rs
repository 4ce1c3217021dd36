//! The bundle commands' cost against their baselines, measured in one run: `gzip -dc`, the typed
//! decode of the same records, and the memory each `diagwire` process needs.
//!
//! Run it by hand (it is not a test; timings mean nothing in CI):
//!
//! ```text
//! cargo bench -p diagwire-cli --bench validate
//! DIAGWIRE_BENCH_1GB=1 cargo bench -p diagwire-cli --bench validate   # also the 1 GB bundle
//! ```
//!
//! Environment: `DIAGWIRE_BENCH_MB` the size of the main bundle in MB uncompressed (default 100),
//! `DIAGWIRE_BENCH_RUNS` the runs behind each median (default 5), `DIAGWIRE_BENCH_1GB=1` adds a
//! 1 GB bundle to the memory measurements, `DIAGWIRE_BENCH_DIR` keeps the generated bundles in
//! that directory (otherwise a temporary one) to run the commands on them by hand, and reuses a
//! bundle of the same name found there (`bench-<MB>mb.tar.gz`) instead of generating it again.
//!
//! Bundles are generated deterministically from the example run `n3-relay-flap` by
//! `diagwire_testkit::bundles` (which says how), in a temporary directory. Every generated bundle
//! must validate clean, or the bench stops.
//!
//! What it measures (medians; the runs of the cases compared are interleaved round by round, so a
//! change of machine load hits them alike, and a command's ratio to `gzip -dc` is the median of
//! the rounds' ratios, shown with their spread, lowest–highest). Beside each child's time is its CPU
//! time (user and system, all its threads, as the kernel counts the children waited for): a
//! reading command keeps both cores busy, so its time is about its CPU time over two, and on a
//! virtual machine whose two processors slow each other when both run, its CPU time grows by half
//! while single-threaded `gzip -dc`'s does not; a run whose CPU times stand above the usual is one
//! to repeat rather than to read as a change.
//!
//! * `gzip -dc` of the archive into `/dev/null` against `diagwire validate`, `diagwire summary`
//!   (JSON and HTML) and `diagwire check` (with and without `--coverage`) of it (the release
//!   binary, as a child process), for the same bundle archived with its members in three orders
//!   (`diagwire_testkit::orders`): name order (as the collector writes it), the order `tar czf` of
//!   its directory gives, and reverse (the manifest last), each against `gzip -dc` of the same
//!   archive: target ratios ≤ 1.2 for every command, ≤ 0.9 for `summary --format json`;
//! * in process, where the time of a bundle check goes: the bundle reader alone
//!   (`BundleReader::open` and `stream()`, every file drained) against the whole check
//!   (`Validator::validate_bundle`), the difference being the checking;
//! * every record file of the bundle in memory: the typed decode (`Record::parse` of the file as
//!   its kind) against `Validator::validate_text` (target ratio ≤ 1.3), and against the streamed check
//!   (`Options::in_memory_bytes` 0, the path of files over `IN_MEMORY`);
//! * the peak RSS of each of those commands on bundles of 10 MB, 100 MB and (optionally) 1 GB, in
//!   name order and in reverse order (the manifest last): target < 64 MB for each. Read from GNU time (`/usr/bin/time -f %M`) when it is installed, else by
//!   sampling the child's `VmHWM` in `/proc` until it exits.

use std::hint::black_box;
use std::io;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use diagwire::bundle::read::{BundleReader, Limits};
use diagwire::v1::{Record, RecordKind};
use diagwire::validate::{Options, Report, Validator, Validators};
use diagwire_testkit::bench::median;
use diagwire_testkit::bundles::{MB, Template, measure};
use diagwire_testkit::orders::{MemberOrder, unpack, write_tar_gz_in_order};

/// The bundle commands timed against `gzip -dc` and measured for peak RSS.
const COMMANDS: &[&[&str]] = &[
    &["validate"],
    &["summary", "--format", "json"],
    &["summary", "--format", "html"],
    &["check"],
    &["check", "--coverage"],
];

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    // `cargo bench` passes `--bench`; there are no other arguments.
    let main_mb = env_u64("DIAGWIRE_BENCH_MB", 100).max(1);
    let runs = env_u64("DIAGWIRE_BENCH_RUNS", 5).max(1) as usize;
    let gigabyte = std::env::var("DIAGWIRE_BENCH_1GB").is_ok_and(|v| v == "1");
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let kept = std::env::var_os("DIAGWIRE_BENCH_DIR").map(std::path::PathBuf::from);
    if let Some(kept) = &kept {
        std::fs::create_dir_all(kept).expect("DIAGWIRE_BENCH_DIR is created");
    }
    let dir = kept.as_deref().unwrap_or(scratch.path());
    let template = Template::new();
    let validators = Validators::new().expect("the validators build");

    let mut rss_sizes = vec![10, 100];
    if gigabyte {
        rss_sizes.push(1000);
    }
    if !rss_sizes.contains(&main_mb) {
        rss_sizes.push(main_mb);
        rss_sizes.sort_unstable();
    }
    let mut bundles = Vec::new();
    for &mb in &rss_sizes {
        let path = dir.join(format!("bench-{mb}mb.tar.gz"));
        let started = Instant::now();
        let reused = kept.is_some() && path.is_file();
        let made = match reused {
            true => measure(&path),
            false => template
                .write(mb * MB, &path)
                .expect("the bundle is written"),
        };
        eprintln!(
            "{} {} ({} files, {:.1} MB uncompressed, {:.1} MB compressed) in {:.1} s",
            if reused { "reused" } else { "generated" },
            path.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default(),
            made.files,
            made.raw_bytes as f64 / MB as f64,
            made.gz_bytes as f64 / MB as f64,
            started.elapsed().as_secs_f64()
        );
        expect_clean(&path);
        // The same bundle in the other member orders, each in a directory of its own under the
        // same file name.
        let mut ordered = vec![(MemberOrder::Name, path.clone())];
        let unpacked = dir.join(format!("unpacked-{mb}mb"));
        for order in [MemberOrder::Directory, MemberOrder::Reverse] {
            let order_dir = dir.join(format!("{order:?}").to_lowercase());
            std::fs::create_dir_all(&order_dir).expect("a directory");
            let other = order_dir.join(path.file_name().expect("a file name"));
            if !(kept.is_some() && other.is_file()) {
                let run_dir = match unpacked.join(format!("bench-{mb}mb")) {
                    run if run.is_dir() => run,
                    _ => unpack(&path, &unpacked).expect("the bundle unpacks"),
                };
                write_tar_gz_in_order(&run_dir, &format!("bench-{mb}mb"), order, &other)
                    .expect("the bundle is archived");
            }
            ordered.push((order, other));
        }
        let _ = std::fs::remove_dir_all(&unpacked);
        bundles.push((mb, ordered, made));
    }
    let (_, main_orders, main_made) = bundles
        .iter()
        .find(|(mb, _, _)| *mb == main_mb)
        .expect("the main bundle is generated");
    let main_path = &main_orders[0].1;

    // 1. `gzip -dc` against each bundle command, for each member order, interleaved round by
    // round.
    let mut gzip: Vec<Vec<Timed>> = vec![Vec::new(); main_orders.len()];
    let mut commands: Vec<Vec<Vec<Timed>>> =
        vec![vec![Vec::new(); COMMANDS.len()]; main_orders.len()];
    for _ in 0..runs {
        for (o, (_, path)) in main_orders.iter().enumerate() {
            gzip[o].push(time_child(Command::new("gzip").arg("-dc").arg(path)));
            for (times, args) in commands[o].iter_mut().zip(COMMANDS) {
                times.push(time_child(
                    Command::new(env!("CARGO_BIN_EXE_diagwire"))
                        .args(*args)
                        .arg(path),
                ));
            }
        }
    }

    // 2. In process: the reader alone against the whole check.
    let mut reading = Vec::new();
    let mut checking = Vec::new();
    let mut report = Report::default();
    for _ in 0..runs {
        reading.push(time(|| read_only(main_path)));
        checking.push(time(|| {
            report = validate_bundle(&validators, main_path);
        }));
    }

    // 3. Records in memory: typed decode against the check.
    let files = load_records(main_path);
    let record_bytes: u64 = files.iter().map(|(_, _, b)| b.len() as u64).sum();
    let mut decode = Vec::new();
    let mut check = Vec::new();
    let mut streamed = Vec::new();
    let mut decoded_records = 0;
    let mut checked = Report::default();
    let stream_options = Options {
        in_memory_bytes: 0,
        ..Options::default()
    };
    for _ in 0..runs {
        decode.push(time(|| decoded_records = typed_decode(&files)));
        check.push(time(|| {
            checked = check_records(&validators, Options::default(), &files)
        }));
        streamed.push(time(|| {
            let r = check_records(&validators, stream_options, &files);
            assert_eq!(r.records, checked.records, "both checks count alike");
        }));
    }
    assert!(checked.is_clean(), "the records check clean: {checked:?}");

    // 4. Peak RSS.
    let mut rss = Vec::new();
    for (_, ordered, made) in &bundles {
        for (order, path) in ordered {
            if *order == MemberOrder::Directory {
                continue;
            }
            for args in COMMANDS {
                let (kb, method) = peak_rss_kb(args, path);
                rss.push((args, *order, made.raw_bytes, kb, method));
            }
        }
    }

    // The table.
    let gz = median(walls(&gzip[0]));
    let (rd, ck) = (median(reading), median(checking));
    let (de, ch, st) = (median(decode), median(check), median(streamed));
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    let met = |ok: bool| if ok { "met" } else { "NOT met" };
    println!();
    println!(
        "input: {:.1} MB uncompressed, {:.1} MB gzip'd, {} files ({} record files, {:.1} MB), {} records; {} runs per median",
        main_made.raw_bytes as f64 / MB as f64,
        main_made.gz_bytes as f64 / MB as f64,
        main_made.files,
        files.len(),
        record_bytes as f64 / MB as f64,
        report.records,
        runs
    );
    println!();
    println!("| measurement | median | CPU | ratio | target |");
    println!("| --- | ---: | ---: | ---: | --- |");
    for (o, (order, _)) in main_orders.iter().enumerate() {
        println!(
            "| `gzip -dc`, {} | {} | {} | 1.00 | |",
            order.name(),
            ms(median(walls(&gzip[o]))),
            ms(median(cpus(&gzip[o])))
        );
        for (args, times) in COMMANDS.iter().zip(&commands[o]) {
            // The ratio of each round to the `gzip -dc` of the same archive in the same round: its
            // median and spread.
            let mut paired: Vec<f64> = times
                .iter()
                .zip(&gzip[o])
                .map(|(t, g)| ratio(t.wall, g.wall))
                .collect();
            paired.sort_by(f64::total_cmp);
            let r = paired[paired.len() / 2];
            let target = match target_ratio(args) {
                Some(t) => format!("≤ {t} × gzip -dc: {}", met(r <= t)),
                None => String::new(),
            };
            println!(
                "| `diagwire {}`, {} | {} | {} | {r:.2} ({:.2}–{:.2}) | {target} |",
                args.join(" "),
                order.name(),
                ms(median(walls(times))),
                ms(median(cpus(times))),
                paired[0],
                paired[paired.len() - 1]
            );
        }
    }
    println!(
        "| in process: bundle reader alone (stream, every file drained) | {} | | {:.2} | |",
        ms(rd),
        ratio(rd, gz)
    );
    println!(
        "| in process: whole bundle check | {} | | {:.2} | |",
        ms(ck),
        ratio(ck, gz)
    );
    println!(
        "| in process: checking (whole check − reader) | {} | | {:.2} | |",
        ms(ck.saturating_sub(rd)),
        ratio(ck.saturating_sub(rd), gz)
    );
    println!(
        "| typed decode of every record file | {} | | 1.00 | |",
        ms(de)
    );
    let r = ratio(ch, de);
    println!(
        "| check of every record file | {} | | {r:.2} | ≤ 1.3 × typed decode: {} |",
        ms(ch),
        met(r <= 1.3)
    );
    let r = ratio(st, de);
    println!(
        "| check of every record file, streamed (files over IN_MEMORY) | {} | | {r:.2} | ≤ 1.3 × typed decode: {} |",
        ms(st),
        met(r <= 1.3)
    );
    for (args, order, raw, kb, method) in &rss {
        let limit = 64;
        println!(
            "| peak RSS of `diagwire {}`, {:.0} MB bundle in {} ({method}) | {:.1} MB | | | < {limit} MB: {} |",
            args.join(" "),
            *raw as f64 / MB as f64,
            order.name(),
            *kb as f64 / 1024.0,
            met(*kb < limit * 1024)
        );
    }
    assert_eq!(
        decoded_records, checked.records,
        "decode and check count alike"
    );
}

/// The target ratio of a command to `gzip -dc`, where there is one.
fn target_ratio(args: &[&str]) -> Option<f64> {
    match args {
        ["summary", "--format", "json"] => Some(0.9),
        _ => Some(1.2),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn time(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

/// A child's time by the clock and its CPU time.
#[derive(Debug, Clone, Copy)]
struct Timed {
    wall: Duration,
    cpu: Duration,
}

fn walls(v: &[Timed]) -> Vec<Duration> {
    v.iter().map(|t| t.wall).collect()
}

fn cpus(v: &[Timed]) -> Vec<Duration> {
    v.iter().map(|t| t.cpu).collect()
}

/// Runs a child with its output discarded and times it; it must succeed.
fn time_child(cmd: &mut Command) -> Timed {
    let cpu_before = children_cpu();
    let start = Instant::now();
    let status = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("the command runs");
    let wall = start.elapsed();
    let cpu = children_cpu().saturating_sub(cpu_before);
    let is_check = cmd.get_args().any(|a| a == "check");
    assert!(finished(status, is_check), "{cmd:?} failed: {status}");
    Timed { wall, cpu }
}

/// The CPU time (user and system) of every child waited for so far, from `/proc/self/stat`'s
/// `cutime` and `cstime`: the bench waits for one child at a time, so the difference across one
/// wait is that child's. Those fields count in the kernel's user-space clock ticks, a hundredth of
/// a second on Linux; a median over the rounds reads finer than one tick.
fn children_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The fields after the command name (which is in parentheses and may hold spaces): the state
    // is field 3, `cutime` field 16 and `cstime` field 17.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<u64> = after
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let ticks = fields.get(12).copied().unwrap_or(0) + fields.get(13).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// Stops the bench unless `diagwire validate` finds the bundle clean.
fn expect_clean(path: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_diagwire"))
        .arg("validate")
        .arg(path)
        .output()
        .expect("diagwire validate runs");
    assert!(
        out.status.success(),
        "the generated bundle does not validate clean:\n{}",
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .take(20)
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The bundle reader alone: every file of the stream read to its end.
fn read_only(path: &Path) {
    let mut reader = BundleReader::open(path, Limits::default()).expect("the bundle opens");
    let mut stream = reader.stream();
    let mut buf = vec![0u8; 64 << 10];
    for item in stream.by_ref() {
        let mut file = item.expect("the bundle reads");
        loop {
            match io::Read::read(&mut file, &mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    black_box(&buf[..n]);
                }
                Err(e) => panic!("reading failed: {e}"),
            }
        }
    }
}

fn validate_bundle(validators: &Validators, path: &Path) -> Report {
    let mut reader = BundleReader::open(path, Limits::default()).expect("the bundle opens");
    let mut report = Report::default();
    Validator::new(validators, Options::default()).validate_bundle(
        &mut reader,
        &mut |_, _| {},
        &mut report,
    );
    assert!(report.is_clean(), "the bundle checks clean");
    report
}

/// Every record file of a bundle: its location, its kind and its bytes.
fn load_records(path: &Path) -> Vec<(String, RecordKind, Vec<u8>)> {
    let mut reader = BundleReader::open(path, Limits::default()).expect("the bundle opens");
    reader
        .files()
        .map(|f| f.expect("the bundle reads"))
        .filter_map(|f| Some((f.location, f.role.record_kind()?, f.bytes)))
        .collect()
}

/// The typed decode of every file, as a reader of the files decodes them; the number of records.
fn typed_decode(files: &[(String, RecordKind, Vec<u8>)]) -> usize {
    let mut n = 0;
    for (_, kind, bytes) in files {
        let text = std::str::from_utf8(bytes).expect("UTF-8");
        let record = Record::parse(*kind, text).expect("the record decodes");
        n += match &record {
            Record::EventBatch(b) => b.len(),
            _ => 1,
        };
        black_box(record);
    }
    n
}

fn check_records(
    validators: &Validators,
    options: Options,
    files: &[(String, RecordKind, Vec<u8>)],
) -> Report {
    let mut validator = Validator::new(validators, options);
    let mut report = Report::default();
    for (file, kind, bytes) in files {
        validator.validate_text(file, bytes, *kind, &mut report);
    }
    report
}

/// Whether a bundle command ran through. `check` exits 1 when it finds violations: the synthetic
/// run repeats one run's lifecycle epoch after epoch, which the ordering and terminal-outcome rules
/// flag; its time and memory still count.
fn finished(status: std::process::ExitStatus, is_check: bool) -> bool {
    status.success() || (is_check && status.code() == Some(1))
}

/// The peak RSS of `diagwire ARGS PATH`, in KiB, and how it was measured.
fn peak_rss_kb(args: &[&str], path: &Path) -> (u64, &'static str) {
    let gnu_time = Path::new("/usr/bin/time");
    if gnu_time.exists() {
        let out = Command::new(gnu_time)
            .args(["-f", "%M"])
            .arg(env!("CARGO_BIN_EXE_diagwire"))
            .args(args)
            .arg(path)
            .stdout(Stdio::null())
            .output()
            .expect("time runs");
        let text = String::from_utf8_lossy(&out.stderr);
        if let Some(kb) = text.lines().last().and_then(|l| l.trim().parse().ok()) {
            assert!(
                finished(out.status, args[0] == "check"),
                "diagwire {args:?} failed"
            );
            return (kb, "GNU time");
        }
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_diagwire"))
        .args(args)
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("diagwire starts");
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Ok(text) = std::fs::read_to_string(&status)
            && let Some(kb) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak = peak.max(kb);
        }
        if let Some(s) = child.try_wait().expect("wait") {
            assert!(finished(s, args[0] == "check"), "diagwire {args:?} failed");
            return (peak, "/proc VmHWM sampled");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}
