//! The fleet dataset's cost against its baselines, measured in one run.
//!
//! Run it by hand (it is not a test; timings mean nothing in CI):
//!
//! ```text
//! cargo bench -p diagwire-fleet --bench fleet
//! DIAGWIRE_BENCH_1GB=1 cargo bench -p diagwire-fleet --bench fleet   # also the 1 GB bundle's export RSS
//! ```
//!
//! Environment: `DIAGWIRE_BENCH_MB` the size of the bundle in MB uncompressed (default 100),
//! `DIAGWIRE_BENCH_RUNS` the rounds behind each median (default 5), `DIAGWIRE_BENCH_1GB=1` adds a
//! 1 GB bundle to the export's memory measurement, `DIAGWIRE_BENCH_DIR` keeps the generated
//! bundles there and reuses one of the same name (`bench-<MB>mb.tar.gz`, the CLI bench's names),
//! `DIAGWIRE_BENCH_PYTHON` the Python with the `duckdb` package (default `.ci/venv/bin/python`,
//! which `.ci/fleet-engines` installs). The bundles are `diagwire_testkit::bundles`' (the CLI
//! bench's).
//!
//! What it reports (medians over interleaved rounds, so a change of machine load hits both sides
//! of a ratio alike; each ratio is the median of the rounds' ratios, with their spread):
//!
//! * the dataset's bytes against the `.tar.gz`'s (target ≤ 0.35);
//! * `diagwire export` (in process, compaction included) against `gzip -dc` of the archive into
//!   `/dev/null` (target ≤ 2);
//! * a fleet of `DIAGWIRE_BENCH_FLEET` runs (default 1,000; each one epoch of the template, about
//!   2 MB uncompressed, with its own run and node ids; kept beside the bundles when
//!   `DIAGWIRE_BENCH_DIR` is set) exported together into one dataset: its time, files and bytes;
//! * over that fleet, each shipped view, `SELECT COUNT(*) FROM <view>` through
//!   `diagwire_fleet::query` (the tables and views registered, the query run) against DuckDB doing
//!   the same on the same files, timed inside its Python process from `connect()` on (target ≤ 1.5);
//! * the export's peak RSS (this binary run again as a child that exports only; target < 256 MB
//!   at 1 GB), from GNU time when it is installed, else the child's `VmHWM` in `/proc`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use diagwire_fleet::{export, query, views};
use diagwire_testkit::bundles::{MB, Template, measure};

/// Set in the child that exports only, for the RSS measurement: `DATASET` `BUNDLE`.
const CHILD: &str = "DIAGWIRE_FLEET_BENCH_EXPORT";

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn main() {
    if let Ok(args) = std::env::var(CHILD) {
        let (dataset, bundle) = args.split_once('\n').expect("DATASET\\nBUNDLE");
        let report = export::export(&[PathBuf::from(bundle)], Path::new(dataset), true)
            .expect("the export runs");
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        return;
    }
    let main_mb = env_u64("DIAGWIRE_BENCH_MB", 100).max(1);
    let rounds = env_u64("DIAGWIRE_BENCH_RUNS", 5).max(1) as usize;
    let gigabyte = std::env::var("DIAGWIRE_BENCH_1GB").is_ok_and(|v| v == "1");
    let fleet_runs = env_u64("DIAGWIRE_BENCH_FLEET", 1000).max(1) as usize;
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let kept = std::env::var_os("DIAGWIRE_BENCH_DIR").map(PathBuf::from);
    if let Some(kept) = &kept {
        std::fs::create_dir_all(kept).expect("DIAGWIRE_BENCH_DIR is created");
    }
    let dir = kept.as_deref().unwrap_or(scratch.path());
    let python = std::env::var_os("DIAGWIRE_BENCH_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".ci/venv/bin/python"));

    let template = Template::new();
    let bundle = |mb: u64| {
        let path = dir.join(format!("bench-{mb}mb.tar.gz"));
        let started = Instant::now();
        let reused = kept.is_some() && path.is_file();
        let made = if reused {
            measure(&path)
        } else {
            template
                .write(mb * MB, &path)
                .expect("the bundle is written")
        };
        eprintln!(
            "{} {} ({} files, {:.1} MB uncompressed, {:.1} MB compressed) in {:.1} s",
            if reused { "reused" } else { "generated" },
            path.display(),
            made.files,
            made.raw_bytes as f64 / MB as f64,
            made.gz_bytes as f64 / MB as f64,
            started.elapsed().as_secs_f64()
        );
        (path, made)
    };
    let (main, made) = bundle(main_mb);

    // 1. Export against `gzip -dc`, round by round; the last round's dataset is kept.
    let dataset = scratch.path().join("dataset");
    let mut export_ratios = Vec::new();
    let (mut gzip_t, mut export_t) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let g = time_child(Command::new("gzip").arg("-dc").arg(&main));
        let _ = std::fs::remove_dir_all(&dataset);
        let started = Instant::now();
        let report =
            export::export(std::slice::from_ref(&main), &dataset, true).expect("the export runs");
        let e = started.elapsed();
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        export_ratios.push(e.as_secs_f64() / g.as_secs_f64());
        gzip_t.push(g);
        export_t.push(e);
    }
    let dataset_bytes = bytes_under(&dataset);

    // 2. A fleet: many small runs (one epoch of the template each), exported together.
    let fleet_dir = dir.join(format!("fleet-{fleet_runs}"));
    std::fs::create_dir_all(&fleet_dir).expect("the fleet's folder is created");
    let started = Instant::now();
    let (mut fleet, mut fleet_gz) = (Vec::new(), 0u64);
    for i in 0..fleet_runs {
        let path = fleet_dir.join(format!("run-{i:05}.tar.gz"));
        if !path.is_file() {
            template
                .write_run(1, &path, &format!("fleet-{i:05}"))
                .expect("the run is written");
        }
        fleet_gz += std::fs::metadata(&path).map_or(0, |m| m.len());
        fleet.push(path);
    }
    eprintln!(
        "{fleet_runs} runs in {} ({:.1} MB gzip'd) in {:.1} s",
        fleet_dir.display(),
        fleet_gz as f64 / MB as f64,
        started.elapsed().as_secs_f64()
    );
    let fleet_dataset = scratch.path().join("fleet-dataset");
    let started = Instant::now();
    let report = export::export(&fleet, &fleet_dataset, true).expect("the fleet's export runs");
    let fleet_export = started.elapsed();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let fleet_bytes = bytes_under(&fleet_dataset);
    let fleet_files = files_under(&fleet_dataset, "parquet");
    eprintln!(
        "exported {fleet_runs} runs in {:.1} s: {:.1} MB in {fleet_files} files",
        fleet_export.as_secs_f64(),
        fleet_bytes as f64 / MB as f64
    );

    // 3. Each view in `diagwire query` against DuckDB, interleaved, over the fleet.
    let dataset = fleet_dataset;
    let duckdb = Command::new(&python)
        .args(["-c", "import duckdb"])
        .status()
        .is_ok_and(|s| s.success());
    let shown: Vec<&str> = views::VIEWS.iter().map(|v| v.name).collect();
    let mut view_rows = Vec::new();
    for name in &shown {
        let sql = format!("SELECT COUNT(*) AS n FROM {name}");
        let (mut ours, mut theirs, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        let mut answers = (String::new(), String::new());
        for _ in 0..rounds {
            let started = Instant::now();
            let batches = query::query(&dataset, &sql).expect("the view runs");
            let o = started.elapsed();
            answers.0 = query::render(&batches, query::Format::Csv)
                .unwrap_or_default()
                .lines()
                .nth(1)
                .unwrap_or_default()
                .to_owned();
            ours.push(o);
            if duckdb {
                let (t, n) = duckdb_time(&python, &dataset, &sql);
                answers.1 = n;
                ratios.push(o.as_secs_f64() / t.as_secs_f64());
                theirs.push(t);
            }
        }
        if duckdb {
            assert_eq!(answers.0, answers.1, "{name}: DuckDB counts otherwise");
        }
        view_rows.push((name.to_owned(), answers.0, ours, theirs, ratios));
    }

    // 4. The export's peak RSS, in a child, on each size measured.
    let mut sizes = vec![(main_mb, main.clone())];
    if gigabyte && main_mb != 1000 {
        sizes.push((1000, bundle(1000).0));
    }
    let mut rss = Vec::new();
    for (mb, path) in &sizes {
        let out = scratch.path().join(format!("rss-{mb}"));
        rss.push((*mb, peak_rss_kb(&out, path)));
    }

    println!(
        "input: {:.1} MB uncompressed, {:.1} MB gzip'd, {} files; {rounds} rounds per median\n",
        made.raw_bytes as f64 / MB as f64,
        made.gz_bytes as f64 / MB as f64,
        made.files
    );
    println!("| measure | ours | baseline | ratio (spread) | target |");
    println!("|---|---|---|---|---|");
    let size = dataset_bytes as f64 / made.gz_bytes as f64;
    println!(
        "| dataset bytes / .tar.gz bytes | {:.1} MB | {:.1} MB | {size:.3} | ≤ 0.35: {} |",
        dataset_bytes as f64 / MB as f64,
        made.gz_bytes as f64 / MB as f64,
        verdict(size <= 0.35)
    );
    let r = spread(&export_ratios);
    println!(
        "| export / `gzip -dc` | {} | {} | {} | ≤ 2: {} |",
        ms(median(&export_t)),
        ms(median(&gzip_t)),
        r.0,
        verdict(r.1 <= 2.0)
    );
    println!(
        "| fleet: {fleet_runs} runs exported together | {} | | {:.1} MB in {fleet_files} Parquet files, {:.3} of the runs' .tar.gz | |",
        ms(fleet_export),
        fleet_bytes as f64 / MB as f64,
        fleet_bytes as f64 / fleet_gz as f64
    );
    for (name, n, ours, theirs, ratios) in &view_rows {
        if theirs.is_empty() {
            println!(
                "| view `{name}` ({n} rows) / DuckDB | {} | DuckDB not installed (`.ci/fleet-engines` installs it) | | ≤ 1.5 |",
                ms(median(ours))
            );
            continue;
        }
        let r = spread(ratios);
        println!(
            "| view `{name}` ({n} rows) / DuckDB | {} | {} | {} | ≤ 1.5: {} |",
            ms(median(ours)),
            ms(median(theirs)),
            r.0,
            verdict(r.1 <= 1.5)
        );
    }
    for (mb, kb) in rss {
        println!(
            "| export peak RSS, {mb} MB bundle | {:.1} MB | | | < 256 MB at 1 GB: {} |",
            kb as f64 / 1024.0,
            verdict(kb < 256 * 1024)
        );
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "NOT met" }
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// The median of `ratios` as text with their lowest–highest, and the median.
fn spread(ratios: &[f64]) -> (String, f64) {
    let mut v = ratios.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.get(v.len() / 2).copied().unwrap_or(f64::NAN);
    let lo = v.first().copied().unwrap_or(f64::NAN);
    let hi = v.last().copied().unwrap_or(f64::NAN);
    (format!("{mid:.2} ({lo:.2}–{hi:.2})"), mid)
}

fn time_child(cmd: &mut Command) -> Duration {
    let started = Instant::now();
    let status = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("the command starts");
    let elapsed = started.elapsed();
    assert!(status.success(), "{cmd:?} failed: {status}");
    elapsed
}

fn files_under(dir: &Path, ext: &str) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == ext) {
                n += 1;
            }
        }
    }
    n
}

fn bytes_under(dir: &Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            n += bytes_under(&p);
        } else {
            n += e.metadata().map(|m| m.len()).unwrap_or(0);
        }
    }
    n
}

/// DuckDB's time for `sql` over the dataset's files (tables and views defined, the query run),
/// measured in its process, and its answer.
fn duckdb_time(python: &Path, dataset: &Path, sql: &str) -> (Duration, String) {
    const SCRIPT: &str = r#"
import json, os, re, sys, time
import duckdb
root, ds, sql = sys.argv[1], sys.argv[2], sys.argv[3]
views = re.findall(r'view!\("([a-z_]+)"', open(os.path.join(root, "fleet/src/views.rs")).read())
texts = [(v, open(os.path.join(root, "fleet/views", v + ".sql")).read()) for v in views]
start = time.perf_counter()
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
scalar = {"Utf8": "VARCHAR", "Int64": "BIGINT", "Float64": "DOUBLE", "Boolean": "BOOLEAN"}
for table in json.load(open(os.path.join(ds, "_dataset.json")))["tables"]:
    t = table["name"]
    if os.path.isdir(os.path.join(ds, t)):
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{ds}/{t}/**/*.parquet', hive_partitioning = true, union_by_name = true)")
    else:
        # A table no run has rows in (no folder to read): empty, a nested column as text.
        cols = ", ".join(f'"{c}" {scalar.get(ty, "VARCHAR")}' for c, ty in table["columns"])
        con.execute(f"CREATE TABLE {t} ({cols}, contract_major VARCHAR, date VARCHAR)")
for name, text in texts:
    con.execute(f"CREATE VIEW {name} AS {text}")
n = con.execute(sql).fetchall()[0][0]
print(time.perf_counter() - start, n)
"#;
    let out = Command::new(python)
        .args(["-c", SCRIPT])
        .arg(root())
        .arg(dataset)
        .arg(sql)
        .output()
        .expect("python starts");
    assert!(
        out.status.success(),
        "DuckDB failed on {sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut words = text.lines().last().unwrap_or_default().split_whitespace();
    let secs: f64 = words.next().and_then(|w| w.parse().ok()).expect("a time");
    (
        Duration::from_secs_f64(secs),
        words.next().unwrap_or_default().to_owned(),
    )
}

/// The peak RSS (kB) of this binary exporting `bundle` into `dataset` as a child: from GNU time
/// (`/usr/bin/time -f %M`) when it is installed, else its `VmHWM`, sampled until it exits.
fn peak_rss_kb(dataset: &Path, bundle: &Path) -> u64 {
    let exe = std::env::current_exe().expect("this binary");
    let time = Path::new("/usr/bin/time");
    if time.is_file() {
        let out = dataset.with_extension("rss");
        let status = Command::new(time)
            .args(["-f", "%M", "-o"])
            .arg(&out)
            .arg(&exe)
            .env(
                CHILD,
                format!("{}\n{}", dataset.display(), bundle.display()),
            )
            .stdout(Stdio::null())
            .status()
            .expect("the child starts");
        assert!(status.success(), "the export child failed: {status}");
        let text = std::fs::read_to_string(&out).expect("GNU time wrote its file");
        return text
            .lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .expect("GNU time's %M");
    }
    let mut child = Command::new(exe)
        .env(
            CHILD,
            format!("{}\n{}", dataset.display(), bundle.display()),
        )
        .stdout(Stdio::null())
        .spawn()
        .expect("the child starts");
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let started = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(&status_file) {
            for line in text.lines() {
                if let Some(v) = line.strip_prefix("VmHWM:") {
                    let kb: u64 = v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
                    peak = peak.max(kb);
                }
            }
        }
        if let Some(status) = child.try_wait().expect("the child is there") {
            assert!(status.success(), "the export child failed: {status}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(3600),
            "the export child ran for an hour"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    peak
}
