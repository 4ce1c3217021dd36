//! How long `diagwire check` takes on a large bundle, as a ratio to `gzip -dc` of the same
//! archive (the floor: a check has to decompress the archive at least once). Run by hand:
//!
//! ```sh
//! cargo bench -p diagwire-check --bench check -- [--mb 100] [--runs 5]
//! ```
//!
//! Generates a synthetic run (`diagwire_testkit::scenario::Params::bulk`) of about `--mb` megabytes
//! of records as a `.tar.gz` (kept under `target/` and reused), then times, `--runs` times each,
//! `gzip -dc FILE > /dev/null`, the rule check, and the rule check with coverage statistics, and
//! prints the medians and their ratios.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use diagwire::bundle::read::Limits;
use diagwire_check::{Options, Rulebook, check_bundle};
use diagwire_testkit::bench::{arg, median};
use diagwire_testkit::scenario::{Params, generate};

fn gunzip_bytes(path: &Path) -> u64 {
    let mut child = Command::new("gzip")
        .arg("-dc")
        .arg(path)
        .stdout(Stdio::piped())
        .spawn()
        .expect("gzip on the PATH");
    let mut out = child.stdout.take().expect("piped");
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = out.read(&mut buf).expect("read gzip output");
        if n == 0 {
            break;
        }
        total += n as u64;
    }
    assert!(child.wait().expect("gzip ran").success());
    total
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mb = arg(&args, "--mb", 100);
    let runs = arg(&args, "--runs", 5).max(1) as usize;
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target");
    let path = target.join(format!("diagwire-check-bench-{mb}mb.tar.gz"));
    if !path.exists() {
        let t = Instant::now();
        std::fs::create_dir_all(&target).expect("target dir");
        generate(&Params::bulk(1, mb))
            .write_tar_gz(&path)
            .expect("write the bundle");
        eprintln!("generated {} in {:.1?}", path.display(), t.elapsed());
    }
    let compressed = std::fs::metadata(&path).expect("bundle").len();
    let raw = gunzip_bytes(&path);
    println!(
        "bundle {}: {:.1} MB compressed, {:.1} MB uncompressed (tar)",
        path.display(),
        compressed as f64 / 1e6,
        raw as f64 / 1e6
    );
    let rulebook = Rulebook::builtin();
    let (mut gz, mut check, mut cover) = (Vec::new(), Vec::new(), Vec::new());
    let mut records = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let status = Command::new("gzip")
            .arg("-dc")
            .arg(&path)
            .stdout(Stdio::null())
            .status()
            .expect("gzip");
        assert!(status.success());
        gz.push(t.elapsed());
        for (with_coverage, times) in [(false, &mut check), (true, &mut cover)] {
            let t = Instant::now();
            let c = check_bundle(
                &path,
                Limits::default(),
                &rulebook,
                Options::default(),
                with_coverage,
            )
            .expect("bundle opens");
            times.push(t.elapsed());
            records = c.report.records;
            assert!(c.report.passed(), "{}", c.report.to_markdown());
        }
    }
    let (g, c, v) = (median(gz), median(check), median(cover));
    println!("{records} records, {runs} run(s) each, medians:");
    println!("  gzip -dc            {:>8.3} s", g.as_secs_f64());
    println!(
        "  check               {:>8.3} s  = {:.1} x gzip -dc  ({:.0} MB/s of records)",
        c.as_secs_f64(),
        c.as_secs_f64() / g.as_secs_f64(),
        raw as f64 / 1e6 / c.as_secs_f64()
    );
    println!(
        "  check --coverage    {:>8.3} s  = {:.1} x gzip -dc",
        v.as_secs_f64(),
        v.as_secs_f64() / g.as_secs_f64()
    );
}
