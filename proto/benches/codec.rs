//! The protobuf codec against the generated JSON code, on the same records, in one run.
//!
//! ```sh
//! cargo bench -p diagwire-proto --bench codec
//! ```
//!
//! Inputs: the benchmark event stream of `diagwire_compat_tests::stream` (a simulated three-node run,
//! `BENCH_RECORDS` events, the decode benchmark's), and every snapshot of the example bundle
//! `examples/bundles/n3-relay-flap` (what `diagwire-example` writes). Each record is parsed into its
//! generated type first; the JSON side is `serde_json` of that typed value (compact), the protobuf
//! side the current layout's encoding of it. Every record must round-trip exactly through
//! protobuf before anything is timed.
//!
//! What it measures, per input:
//!
//! * size: protobuf bytes as a fraction of JSON bytes (target ≤ 35 %), and the same after gzip
//!   (flate2, default level) of the whole input, records one after the other (newline-separated
//!   JSON against the length-delimited protobuf stream; target ≤ 70 %);
//! * encode: `serde_json::to_vec` of the typed values against protobuf from the typed value
//!   (`encode_typed`) and from an already-built `serde_json::Value` (`encode`; target: protobuf
//!   ≥ 3 × faster);
//! * decode: the generated JSON decode (`serde_json::from_str` into the kind's generated type, what
//!   `Record::parse` does before wrapping it) against protobuf → `Value` (`decode`) and protobuf →
//!   typed (`decode_typed` into the same type; target: protobuf ≥ 1.5 × faster).
//!
//! Each case times one pass over all records of an input; dropping what it built is not timed.
//! After criterion's report (only under `cargo bench`) a summary prints one line per ratio from
//! the medians of a separate pass that interleaves all cases round by round, so a change of machine
//! load hits them alike; each timed pass follows an untimed one of the same case, so no case pays
//! for the memory the one before it gave back.

use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use diagwire::v1::{EventRecord, Record, RecordKind, Snapshot};
use diagwire_compat_tests::stream;
use diagwire_proto::{Layout, decode, decode_typed, encode, encode_typed};
use flate2::Compression;
use flate2::write::GzEncoder;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Rounds of the interleaved pass behind the summary.
const SUMMARY_ROUNDS: usize = 21;

/// One input: the same records as typed values, `Value`s, JSON text and protobuf bytes.
struct Input {
    name: &'static str,
    kind: RecordKind,
    typed: Vec<Record>,
    values: Vec<Value>,
    json: Vec<String>,
    proto: Vec<Vec<u8>>,
    /// The two typed decodes, JSON and protobuf, into the input's generated type.
    decodes: Decodes,
}

/// The typed decode cases of an input: each reads into the record kind's own generated type, not
/// the `Record` enum, whose size is the largest kind's (2.6 KB, a snapshot), so that neither side
/// is timed moving it.
#[derive(Clone, Copy)]
struct Decodes {
    json: Case,
    proto: Case,
    /// Panics unless both read every record of the input as the value it was made from.
    check: fn(&Input, &Layout),
}

impl Decodes {
    fn of<T: DeserializeOwned + Serialize>() -> Decodes {
        fn json<T: DeserializeOwned>(i: &Input, _: &Layout) -> Duration {
            timed(&i.json, |t| serde_json::from_str::<T>(t).expect("parses"))
        }
        fn proto<T: DeserializeOwned>(i: &Input, l: &Layout) -> Duration {
            timed(&i.proto, |b| {
                decode_typed::<T>(l, i.kind.as_str(), b).expect("decodes")
            })
        }
        fn check<T: DeserializeOwned + Serialize>(i: &Input, l: &Layout) {
            for ((t, b), v) in i.json.iter().zip(&i.proto).zip(&i.values) {
                let from_json: T = serde_json::from_str(t).expect("parses");
                let from_proto: T = decode_typed(l, i.kind.as_str(), b).expect("decodes");
                assert_eq!(&serde_json::to_value(&from_json).unwrap(), v);
                assert_eq!(&serde_json::to_value(&from_proto).unwrap(), v);
            }
        }
        Decodes {
            json: json::<T>,
            proto: proto::<T>,
            check: check::<T>,
        }
    }
}

impl Input {
    fn new(
        name: &'static str,
        kind: RecordKind,
        texts: Vec<String>,
        layout: &Layout,
        decodes: Decodes,
    ) -> Input {
        let typed: Vec<Record> = texts
            .iter()
            .map(|t| Record::parse(kind, t).expect("a bench record parses"))
            .collect();
        let values: Vec<Value> = typed
            .iter()
            .map(|r| serde_json::to_value(r).expect("serializes"))
            .collect();
        let json: Vec<String> = typed
            .iter()
            .map(|r| serde_json::to_string(r).expect("serializes"))
            .collect();
        let proto: Vec<Vec<u8>> = values
            .iter()
            .map(|v| encode(layout, kind.as_str(), v).expect("a bench record encodes"))
            .collect();
        for (r, b) in typed.iter().zip(&proto) {
            let t = encode_typed(layout, kind.as_str(), r).expect("a bench record encodes");
            assert_eq!(&t, b, "{name}: the typed encoder writes the JSON's bytes");
        }
        for (v, b) in values.iter().zip(&proto) {
            let back = decode(layout, kind.as_str(), b).expect("its encoding decodes");
            assert_eq!(&back, v, "{name}: JSON → protobuf → JSON");
            assert_eq!(&encode(layout, kind.as_str(), &back).unwrap(), b);
        }
        let input = Input {
            name,
            kind,
            typed,
            values,
            json,
            proto,
            decodes,
        };
        (decodes.check)(&input, layout);
        input
    }

    fn json_bytes(&self) -> usize {
        self.json.iter().map(String::len).sum()
    }

    fn proto_bytes(&self) -> usize {
        self.proto.iter().map(Vec::len).sum()
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

fn events(layout: &Layout) -> Input {
    let records = stream::run(stream::BENCH_RECORDS, stream::BENCH_SEED);
    let texts = records
        .iter()
        .map(|r| serde_json::to_string(r).expect("serializes"))
        .collect();
    Input::new(
        "events",
        RecordKind::Event,
        texts,
        layout,
        Decodes::of::<EventRecord>(),
    )
}

fn snapshots(layout: &Layout) -> Input {
    let mut paths = Vec::new();
    let mut stack = vec![root().join("examples/bundles/n3-relay-flap")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("the example bundle") {
            let p = e.expect("a directory entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("snapshot-"))
            {
                paths.push(p);
            }
        }
    }
    paths.sort();
    let texts = paths
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("a snapshot file"))
        .collect();
    Input::new(
        "snapshots",
        RecordKind::Snapshot,
        texts,
        layout,
        Decodes::of::<Snapshot>(),
    )
}

fn gzip(chunks: impl Iterator<Item = Vec<u8>>) -> usize {
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    for c in chunks {
        gz.write_all(&c).expect("gzip into memory");
    }
    gz.finish().expect("gzip into memory").len()
}

/// The input as one body: newline-separated JSON, and the length-delimited protobuf stream.
fn gzipped(input: &Input) -> (usize, usize) {
    let json = gzip(input.json.iter().map(|t| {
        let mut b = t.clone().into_bytes();
        b.push(b'\n');
        b
    }));
    let proto = gzip(input.proto.iter().map(|b| {
        let mut out = Vec::with_capacity(b.len() + 5);
        prost::encoding::encode_varint(b.len() as u64, &mut out);
        out.extend_from_slice(b);
        out
    }));
    (json, proto)
}

/// Times `f` over every item, keeping what it returns until the clock has stopped.
fn timed<T, R>(items: &[T], mut f: impl FnMut(&T) -> R) -> Duration {
    let mut out = Vec::with_capacity(items.len());
    let start = Instant::now();
    for x in items {
        out.push(black_box(f(black_box(x))));
    }
    let elapsed = start.elapsed();
    drop(out);
    elapsed
}

/// A timed case: one pass over an input.
type Case = fn(&Input, &Layout) -> Duration;

fn json_encode(i: &Input, _: &Layout) -> Duration {
    timed(&i.typed, |r| serde_json::to_vec(r).expect("serializes"))
}

fn proto_encode_typed(i: &Input, l: &Layout) -> Duration {
    timed(&i.typed, |r| {
        encode_typed(l, i.kind.as_str(), r).expect("encodes")
    })
}

fn proto_encode_value(i: &Input, l: &Layout) -> Duration {
    timed(&i.values, |v| {
        encode(l, i.kind.as_str(), v).expect("encodes")
    })
}

fn json_decode(i: &Input, l: &Layout) -> Duration {
    (i.decodes.json)(i, l)
}

fn proto_decode_value(i: &Input, l: &Layout) -> Duration {
    timed(&i.proto, |b| {
        decode(l, i.kind.as_str(), b).expect("decodes")
    })
}

fn proto_decode_typed(i: &Input, l: &Layout) -> Duration {
    (i.decodes.proto)(i, l)
}

/// The cases, by name, in the order the summary names them.
const CASES: [(&str, Case); 6] = [
    ("encode_json", json_encode),
    ("encode_proto_from_typed", proto_encode_typed),
    ("encode_proto_from_value", proto_encode_value),
    ("decode_json_generated", json_decode),
    ("decode_proto_to_value", proto_decode_value),
    ("decode_proto_to_typed", proto_decode_typed),
];

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn target(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

/// The medians of the interleaved pass and one line per ratio.
fn summary(inputs: &[Input], layout: &Layout) {
    let mut samples = vec![vec![Vec::with_capacity(SUMMARY_ROUNDS); CASES.len()]; inputs.len()];
    for _ in 0..SUMMARY_ROUNDS {
        for (i, input) in inputs.iter().enumerate() {
            for (c, (_, case)) in CASES.iter().enumerate() {
                // One untimed pass first, so each case is timed with its own working set in
                // memory, as criterion's back-to-back iterations time it.
                case(input, layout);
                samples[i][c].push(case(input, layout));
            }
        }
    }
    println!("\ncodec summary: medians of {SUMMARY_ROUNDS} interleaved rounds per case");
    for (input, per_case) in inputs.iter().zip(samples) {
        let [
            enc_json,
            enc_typed,
            enc_value,
            dec_json,
            dec_value,
            dec_typed,
        ] = <[Duration; 6]>::try_from(per_case.into_iter().map(median).collect::<Vec<_>>())
            .expect("six cases");
        let name = input.name;
        let n = input.typed.len();
        let (json, proto) = (input.json_bytes(), input.proto_bytes());
        let size = proto as f64 / json as f64;
        println!(
            "  {name} ({n} records) size: protobuf {proto} B / JSON {json} B = {:.1} % (target ≤ 35 %: {})",
            100.0 * size,
            target(size <= 0.35)
        );
        let (gz_json, gz_proto) = gzipped(input);
        let gz = gz_proto as f64 / gz_json as f64;
        println!(
            "  {name} gzip size: protobuf {gz_proto} B / JSON {gz_json} B = {:.1} % (target ≤ 70 %: {})",
            100.0 * gz,
            target(gz <= 0.70)
        );
        for (what, t) in [("from Value", enc_value), ("from typed", enc_typed)] {
            let speedup = enc_json.as_secs_f64() / t.as_secs_f64();
            println!(
                "  {name} encode {what}: protobuf {:.2} ms vs JSON {:.2} ms = {speedup:.2} x faster \
                 (target ≥ 3 x: {})",
                ms(t),
                ms(enc_json),
                target(speedup >= 3.0)
            );
        }
        for (what, t) in [("to Value", dec_value), ("to typed", dec_typed)] {
            let speedup = dec_json.as_secs_f64() / t.as_secs_f64();
            println!(
                "  {name} decode {what}: protobuf {:.2} ms vs generated JSON {:.2} ms = {speedup:.2} x \
                 faster (target ≥ 1.5 x: {})",
                ms(t),
                ms(dec_json),
                target(speedup >= 1.5)
            );
        }
    }
}

fn main() {
    let layout = diagwire_proto::current();
    let inputs = [events(layout), snapshots(layout)];

    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    for input in &inputs {
        let mut group = c.benchmark_group(format!("codec_{}", input.name));
        group.throughput(Throughput::Bytes(input.json_bytes() as u64));
        group.sampling_mode(SamplingMode::Flat);
        for (name, case) in CASES {
            group.bench_function(name, |b| {
                b.iter_custom(|iters| (0..iters).map(|_| case(input, layout)).sum())
            });
        }
        group.finish();
    }
    c.final_summary();

    // `cargo bench` passes `--bench`; without it criterion only checks that each case runs. A
    // profiling run (`--profile-time`) times nothing.
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--profile-time") {
        summary(&inputs, layout);
    }
}
