//! The latency of `diagwire check --follow` from a file landing to its finding printed. Run by hand:
//!
//! ```sh
//! cargo bench -p diagwire-cli --bench follow -- [--files 100] [--gap-ms 20]
//! ```
//!
//! Starts the release binary following an empty directory (`--format json`), publishes a boot
//! record and then `--files` events files one at a time, `--gap-ms` apart, each renamed into place
//! as a collector publishes it and each holding one `node_faulted` event with a reason outside the
//! contract's set (a `fault.known_values` finding, decided on arrival). The time from each rename
//! to the finding's line on the follower's stdout is its latency; prints the median, p99 and
//! maximum. (A rule keeps 100 findings, so at most 100 files are measured.)

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use diagwire::NodeId;
use diagwire::v1::{EventRecord, FaultComponent, FaultReason, Finalize, Identity, NodeFaulted};
use diagwire_testkit::bench::arg;

/// Writes `bytes` at `path` through a temporary name renamed into place.
fn publish(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let tmp = path.with_extension("partial");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let files = arg(&args, "--files", 100).clamp(1, 100);
    let gap = Duration::from_millis(arg(&args, "--gap-ms", 20));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bench-run");
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_diagwire"))
        .args(["check", "--follow"])
        .arg(&dir)
        .args(["--format", "json", "--settle", "300ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start diagwire");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<(Instant, String)>();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send((Instant::now(), line));
        }
    });
    let id = NodeId::from([5; 32]);
    let node = id.to_hex();
    let boot = Identity::new(node.clone(), id.short(), "stage", "bench-run", 1_000, 0);
    publish(
        &dir.join(&node.0).join("boot-000001.json"),
        &serde_json::to_vec(&boot).unwrap(),
    );
    let mut landed: HashMap<String, Instant> = HashMap::new();
    for i in 1..=files {
        let event = NodeFaulted::new(
            node.clone(),
            FaultReason::Other(format!("bench_reason_{i}")),
            FaultComponent::NodeBoot,
        );
        let batch = vec![EventRecord::new(id, i, 2_000 + i, event)];
        let name = format!("events-{i:06}.json");
        publish(
            &dir.join(&node.0).join(&name),
            &serde_json::to_vec(&batch).unwrap(),
        );
        landed.insert(name, Instant::now());
        std::thread::sleep(gap);
    }
    publish(
        &dir.join(&node.0).join("finalize-000001.json"),
        &serde_json::to_vec(&Finalize::new()).unwrap(),
    );
    let status = child.wait().unwrap();
    let mut latencies: Vec<Duration> = Vec::new();
    for (at, line) in rx.try_iter() {
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        let f = &v["finding"];
        if f["rule"] != "fault.known_values" {
            continue;
        }
        let file = f["location"]["file"].as_str().unwrap_or("");
        let name = file.rsplit('/').next().unwrap_or("");
        if let Some(t) = landed.get(name) {
            latencies.push(at.duration_since(*t));
        }
    }
    latencies.sort();
    assert!(!latencies.is_empty(), "no finding seen (exit {status})");
    let q = |p: f64| latencies[((latencies.len() - 1) as f64 * p).round() as usize];
    println!(
        "{} of {files} findings seen; landing → finding printed: median {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        latencies.len(),
        q(0.5).as_secs_f64() * 1e3,
        q(0.99).as_secs_f64() * 1e3,
        latencies.last().unwrap().as_secs_f64() * 1e3
    );
}
