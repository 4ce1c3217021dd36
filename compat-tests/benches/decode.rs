//! Decoding one event batch into the generated lossless types, plain serde derives, and `serde_json::Value`.
//!
//! The input is the benchmark stream of `diagwire_compat_tests::stream` (a simulated three-node
//! run) as one compact JSON array, in two key orders: as swactor's serializer writes it (the
//! envelope, then `type`, then the event's fields) and as the collector rewrites it (every object's
//! keys sorted, so most fields come before `type`). Each input is decoded into:
//!
//! * `generated`: `Vec<diagwire::v1::EventRecord>`, the generated types that keep unknown keys;
//! * `plain`: `Vec<legacy::event::EventRecord>`, serde derives of the same shape that drop them;
//! * `value`: `serde_json::Value`.
//!
//! Dropping the decoded batch is not timed. After criterion's report, one summary line per key
//! order gives the medians of this run (read from criterion's `new/estimates.json`) and the ratios
//! generated/plain and value/generated.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use criterion::{Criterion, SamplingMode, Throughput, black_box};
use diagwire::v1;
use diagwire_compat_tests::legacy::event::EventRecord as PlainRecord;
use diagwire_compat_tests::stream;
use serde_json::Value;

const ORDERS: [&str; 2] = ["node_order", "collector_order"];
const DECODERS: [&str; 3] = ["generated", "plain", "value"];

/// Where criterion writes its results: `$CRITERION_HOME`, else `<target dir>/criterion`, with the
/// target dir taken from `$CARGO_TARGET_DIR` or from this executable's path
/// (`<target>/<profile>/deps/<bench>`).
fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(target).join("criterion");
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("target"))
        .join("criterion")
}

/// The median time per decode in ns, if this run measured `group/function`.
fn median_ns(dir: &Path, group: &str, function: &str, since: SystemTime) -> Option<f64> {
    let path = dir.join(group).join(function).join("new").join("estimates.json");
    let written = std::fs::metadata(&path).and_then(|m| m.modified()).ok()?;
    if written < since {
        return None;
    }
    let estimates: Value = serde_json::from_str(&std::fs::read_to_string(&path).ok()?).ok()?;
    estimates["median"]["point_estimate"].as_f64()
}

fn main() {
    let records = stream::run(stream::BENCH_RECORDS, stream::BENCH_SEED);
    let inputs = [
        stream::node_order_json(&records),
        stream::collector_order_json(&records),
    ];
    // Every decoder must accept both inputs before anything is timed.
    for text in &inputs {
        serde_json::from_str::<Vec<v1::EventRecord>>(text).expect("the generated types decode the batch");
        serde_json::from_str::<Vec<PlainRecord>>(text).expect("the plain derives decode the batch");
        serde_json::from_str::<Value>(text).expect("the batch is JSON");
    }

    let dir = criterion_dir();
    let started = SystemTime::now();
    let mut c = Criterion::default()
        .output_directory(&dir)
        .sample_size(30)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(6))
        .configure_from_args();
    for (order, text) in ORDERS.iter().zip(&inputs) {
        let mut group = c.benchmark_group(format!("decode_{order}"));
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.sampling_mode(SamplingMode::Flat);
        group.bench_function("generated", |b| {
            b.iter_with_large_drop(|| serde_json::from_str::<Vec<v1::EventRecord>>(black_box(text)).unwrap())
        });
        group.bench_function("plain", |b| {
            b.iter_with_large_drop(|| serde_json::from_str::<Vec<PlainRecord>>(black_box(text)).unwrap())
        });
        group.bench_function("value", |b| {
            b.iter_with_large_drop(|| serde_json::from_str::<Value>(black_box(text)).unwrap())
        });
        group.finish();
    }
    c.final_summary();

    println!(
        "\ndecode summary: {} records; medians of this run from {}",
        records.len(),
        dir.display()
    );
    for (order, text) in ORDERS.iter().zip(&inputs) {
        let group = format!("decode_{order}");
        let medians: Vec<Option<f64>> = DECODERS.iter().map(|d| median_ns(&dir, &group, d, started)).collect();
        let [Some(generated), Some(plain), Some(value)] = medians[..] else {
            println!("  {order:<15} {} bytes: not measured in this run", text.len());
            continue;
        };
        let mb_s = |ns: f64| text.len() as f64 / ns * 1e3;
        println!(
            "  {order:<15} {:.2} MB: generated {:.2} ms ({:.0} MB/s), plain {:.2} ms ({:.0} MB/s), value {:.2} ms ({:.0} MB/s); generated/plain {:.2}, value/generated {:.2}",
            text.len() as f64 / 1e6,
            generated / 1e6,
            mb_s(generated),
            plain / 1e6,
            mb_s(plain),
            value / 1e6,
            mb_s(value),
            generated / plain,
            value / generated,
        );
    }
}
