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
//! Dropping the decoded batch is never timed, and each batch is dropped before the next decode
//! starts (criterion's `BatchSize::PerIteration`), as a reader does, so the decoders reuse freed
//! memory instead of paying page faults for fresh memory (which would penalise the ones that
//! allocate most). After criterion's report (only under `cargo bench`),
//! a summary gives per key order the median of each decoder and the ratios generated/plain and
//! value/generated. Those medians come from a separate pass in this same run that interleaves the
//! six cases round by round, so a change of machine load hits all of them alike and the ratios
//! stay comparable even on a busy machine.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, SamplingMode, Throughput};
use diagwire::v1;
use diagwire_compat_tests::legacy::event::EventRecord as PlainRecord;
use diagwire_compat_tests::stream;
use serde_json::Value;

const ORDERS: [&str; 2] = ["node_order", "collector_order"];

/// Rounds of the interleaved pass behind the summary.
const SUMMARY_ROUNDS: usize = 41;

/// Times one decode of a batch, excluding the drop of the result.
type Timer = fn(&str) -> Duration;

/// The decoders, by name.
const DECODERS: [(&str, Timer); 3] = [
    ("generated", time_generated),
    ("plain", time_plain),
    ("value", time_value),
];

fn generated(text: &str) -> Vec<v1::EventRecord> {
    serde_json::from_str(text).expect("the generated types decode the batch")
}

fn plain(text: &str) -> Vec<PlainRecord> {
    serde_json::from_str(text).expect("the plain derives decode the batch")
}

fn value(text: &str) -> Value {
    serde_json::from_str(text).expect("the batch is JSON")
}

fn time_generated(text: &str) -> Duration {
    let start = Instant::now();
    let out = black_box(generated(black_box(text)));
    let elapsed = start.elapsed();
    drop(out);
    elapsed
}

fn time_plain(text: &str) -> Duration {
    let start = Instant::now();
    let out = black_box(plain(black_box(text)));
    let elapsed = start.elapsed();
    drop(out);
    elapsed
}

fn time_value(text: &str) -> Duration {
    let start = Instant::now();
    let out = black_box(value(black_box(text)));
    let elapsed = start.elapsed();
    drop(out);
    elapsed
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Medians of the interleaved pass, printed with the two ratios per key order.
fn summary(inputs: &[String; 2], records: usize) {
    let mut samples = vec![vec![Vec::with_capacity(SUMMARY_ROUNDS); DECODERS.len()]; ORDERS.len()];
    for _ in 0..SUMMARY_ROUNDS {
        for (order, text) in inputs.iter().enumerate() {
            for (decoder, (_, time)) in DECODERS.iter().enumerate() {
                samples[order][decoder].push(time(text));
            }
        }
    }
    println!(
        "\ndecode summary: {records} records, median of {SUMMARY_ROUNDS} interleaved rounds per case"
    );
    for ((order, text), per_decoder) in ORDERS.iter().zip(inputs).zip(samples) {
        let ms: Vec<f64> = per_decoder
            .into_iter()
            .map(|s| median(s).as_secs_f64() * 1e3)
            .collect();
        let mb_s = |ms: f64| text.len() as f64 / ms / 1e3;
        let [generated, plain, value] = ms[..] else {
            unreachable!("three decoders")
        };
        println!(
            "  {order:<15} {:.2} MB: generated {generated:.2} ms ({:.0} MB/s), plain {plain:.2} ms \
             ({:.0} MB/s), value {value:.2} ms ({:.0} MB/s); generated/plain {:.2}, value/generated {:.2}",
            text.len() as f64 / 1e6,
            mb_s(generated),
            mb_s(plain),
            mb_s(value),
            generated / plain,
            value / generated,
        );
    }
}

fn main() {
    let records = stream::run(stream::BENCH_RECORDS, stream::BENCH_SEED);
    let inputs = [
        stream::node_order_json(&records),
        stream::collector_order_json(&records),
    ];
    // Every decoder must accept both inputs before anything is timed.
    for text in &inputs {
        for (_, time) in DECODERS {
            time(text);
        }
    }

    let mut c = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(6))
        .configure_from_args();
    for (order, text) in ORDERS.iter().zip(&inputs) {
        let mut group = c.benchmark_group(format!("decode_{order}"));
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.sampling_mode(SamplingMode::Flat);
        group.bench_function("generated", |b| {
            b.iter_batched(
                || (),
                |()| generated(black_box(text)),
                BatchSize::PerIteration,
            )
        });
        group.bench_function("plain", |b| {
            b.iter_batched(|| (), |()| plain(black_box(text)), BatchSize::PerIteration)
        });
        group.bench_function("value", |b| {
            b.iter_batched(|| (), |()| value(black_box(text)), BatchSize::PerIteration)
        });
        group.finish();
    }
    c.final_summary();

    // `cargo bench` passes `--bench`; without it criterion only checks that each case runs.
    if std::env::args().any(|a| a == "--bench") {
        summary(&inputs, records.len());
    }
}
