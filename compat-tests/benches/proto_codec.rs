//! The protobuf codec against the generated JSON code, on the same records, in one run.
//!
//! ```sh
//! cargo bench -p diagwire-compat-tests --bench proto_codec
//! ```
//!
//! Inputs: the benchmark event stream of `diagwire_compat_tests::stream` (a simulated three-node run,
//! `BENCH_RECORDS` events, the decode benchmark's), and every snapshot of the example bundle
//! `examples/bundles/n3-relay-flap` (what `diagwire-example` writes). Each record is parsed into the
//! kind's generated type first (`EventRecord`, `Snapshot`); the JSON side is `serde_json` of that
//! typed value (compact), the protobuf side the current descriptor's encoding of it. Before anything is
//! timed, every record must round-trip exactly through protobuf, every codec must write the same
//! bytes and read the same value, and the generated codec must take every record itself (no
//! fallback to the descriptor codec).
//!
//! What it measures, per input:
//!
//! * size: protobuf bytes as a fraction of JSON bytes (target ≤ 35 %), and the same after gzip
//!   (flate2, default level; target ≤ 70 %) of the whole input, records one after the other
//!   (newline-separated JSON against the length-delimited protobuf stream), and of each body on
//!   its own (one node's events of one second as a batch, a JSON array against an `EventBatch`;
//!   each snapshot alone);
//! * encode: `serde_json::to_vec` of the typed values against protobuf from an already-built
//!   `serde_json::Value` (`encode`) and from the typed value with the type's generated codec
//!   (`encode_record`; target: protobuf ≥ 3 × faster);
//! * decode: the generated JSON decode (`serde_json::from_str` into the kind's generated type, what
//!   `Record::parse` does before wrapping it) against protobuf → `Value` (`decode`) and protobuf →
//!   the same type with its generated codec (`decode_record`; target: protobuf ≥ 1.5 × faster).
//!
//! Each case times one pass over all records of an input; dropping what it built is not timed.
//! After criterion's report (only under `cargo bench`) a summary prints one line per ratio from
//! the medians of a separate pass that interleaves all cases round by round, so a change of machine
//! load hits them alike; each sample is as many passes as make 20 000 records (an interruption
//! of the process then moves one sample less), and follows an untimed pass of the same case, so no
//! case pays for the memory the one before it gave back.

use std::any::Any;
use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use diagwire::proto::{
    Codec, Message, decode, decode_record, decode_typed, encode, encode_record, encode_typed,
};
use diagwire::v1::{EventRecord, RecordKind, Snapshot};
use diagwire_compat_tests::stream;
use flate2::Compression;
use flate2::write::GzEncoder;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Rounds of the interleaved pass behind the summary.
const SUMMARY_ROUNDS: usize = 21;

/// Records a sample of the summary covers at least (whole passes over the input, summed): a
/// pass over the 89 snapshots takes half a millisecond, short enough that one interruption of the
/// process moves its median.
const SAMPLE_RECORDS: usize = 20_000;

/// One input: the same records as values of the kind's generated type, `Value`s, JSON text and
/// protobuf bytes.
struct Input {
    name: &'static str,
    kind: RecordKind,
    /// A `Vec` of the kind's generated type.
    typed: Box<dyn Any>,
    values: Vec<Value>,
    json: Vec<String>,
    proto: Vec<Vec<u8>>,
    /// The cases that need the kind's generated type.
    cases: Typed,
}

/// The cases of an input that work on its generated type, the kind's own (not the `Record` enum,
/// whose size is the largest kind's, 2.6 KB, a snapshot, so that no case is timed moving it).
#[derive(Clone, Copy)]
struct Typed {
    encode_json: Case,
    encode_generated: Case,
    decode_json: Case,
    decode_generated: Case,
    /// Panics unless every codec writes the same bytes and reads every record as the value it
    /// was made from, and the generated codec takes every record itself.
    check: fn(&Input, &Codec),
}

fn items<T: 'static>(i: &Input) -> &[T] {
    i.typed.downcast_ref::<Vec<T>>().expect("the input's type")
}

impl Typed {
    fn of<T: DeserializeOwned + Serialize + Message + PartialEq + std::fmt::Debug + 'static>()
    -> Typed {
        fn encode_json<T: Serialize + 'static>(i: &Input, _: &Codec) -> Duration {
            timed(items::<T>(i), |r| {
                serde_json::to_vec(r).expect("serializes")
            })
        }
        fn encode_generated<T: Serialize + Message + 'static>(i: &Input, l: &Codec) -> Duration {
            timed(items::<T>(i), |r| {
                encode_record(l, i.kind, r).expect("encodes")
            })
        }
        fn decode_json<T: DeserializeOwned>(i: &Input, _: &Codec) -> Duration {
            timed(&i.json, |t| serde_json::from_str::<T>(t).expect("parses"))
        }
        fn decode_generated<T: DeserializeOwned + Message>(i: &Input, l: &Codec) -> Duration {
            timed(&i.proto, |b| {
                decode_record::<T>(l, i.kind, b).expect("decodes")
            })
        }
        fn check<T>(i: &Input, l: &Codec)
        where
            T: DeserializeOwned + Serialize + Message + PartialEq + std::fmt::Debug + 'static,
        {
            let k = i.kind;
            for (((r, t), b), v) in items::<T>(i)
                .iter()
                .zip(&i.json)
                .zip(&i.proto)
                .zip(&i.values)
            {
                let mut own = Vec::new();
                assert!(
                    r.body(&mut own).is_ok(),
                    "{k}: the generated encoder takes it"
                );
                assert_eq!(
                    &own, b,
                    "{k}: the generated encoder writes the JSON's bytes"
                );
                assert_eq!(&encode_typed(l, k, r).unwrap(), b, "{k}: the typed encoder");
                assert_eq!(&encode_record(l, k, r).unwrap(), b, "{k}: encode_record");
                let back = T::read_body(b).expect("the generated decoder takes it");
                assert_eq!(&back, r, "{k}: the generated decoder reads the record");
                let from_json: T = serde_json::from_str(t).expect("parses");
                assert_eq!(&from_json, r);
                let from_proto: T = decode_typed(l, k, b).expect("decodes");
                assert_eq!(&from_proto, r, "{k}: the typed decoder reads the record");
                assert_eq!(&serde_json::to_value(r).unwrap(), v);
            }
        }
        Typed {
            encode_json: encode_json::<T>,
            encode_generated: encode_generated::<T>,
            decode_json: decode_json::<T>,
            decode_generated: decode_generated::<T>,
            check: check::<T>,
        }
    }

    /// The input's records as values of `T`.
    fn parse<T: DeserializeOwned + 'static>(texts: &[String]) -> Box<dyn Any> {
        let v: Vec<T> = texts
            .iter()
            .map(|t| serde_json::from_str(t).expect("a bench record parses"))
            .collect();
        Box::new(v)
    }
}

impl Input {
    fn new<T>(name: &'static str, kind: RecordKind, texts: Vec<String>, codec: &Codec) -> Input
    where
        T: DeserializeOwned + Serialize + Message + PartialEq + std::fmt::Debug + 'static,
    {
        let typed = Typed::parse::<T>(&texts);
        let records = typed.downcast_ref::<Vec<T>>().expect("parsed as T");
        let values: Vec<Value> = records
            .iter()
            .map(|r| serde_json::to_value(r).expect("serializes"))
            .collect();
        // The JSON a writer of the type writes: its keys in field order.
        let json: Vec<String> = records
            .iter()
            .map(|r| serde_json::to_string(r).expect("serializes"))
            .collect();
        let proto: Vec<Vec<u8>> = values
            .iter()
            .map(|v| encode(codec, kind, v).expect("a bench record encodes"))
            .collect();
        for (v, b) in values.iter().zip(&proto) {
            let back = decode(codec, kind, b).expect("its encoding decodes");
            assert_eq!(&back, v, "{name}: JSON → protobuf → JSON");
            assert_eq!(&encode(codec, kind, &back).unwrap(), b);
        }
        let input = Input {
            name,
            kind,
            typed,
            values,
            json,
            proto,
            cases: Typed::of::<T>(),
        };
        (input.cases.check)(&input, codec);
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

fn events(codec: &Codec) -> Input {
    let records = stream::run(stream::BENCH_RECORDS, stream::BENCH_SEED);
    let texts = records
        .iter()
        .map(|r| serde_json::to_string(r).expect("serializes"))
        .collect();
    Input::new::<EventRecord>("events", RecordKind::Event, texts, codec)
}

fn snapshots(codec: &Codec) -> Input {
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
    Input::new::<Snapshot>("snapshots", RecordKind::Snapshot, texts, codec)
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

/// The input as the bodies a writer posts and a bundle stores, each gzipped on its own: the events
/// of one node flushed in the same second as one batch (a JSON array against an `EventBatch`
/// message), each snapshot alone. Returns the summed sizes, JSON and protobuf, and the body count.
fn gzipped_bodies(input: &Input) -> (usize, usize, usize) {
    let mut bodies: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, v) in input.values.iter().enumerate() {
        let key = match input.kind {
            RecordKind::Event => format!(
                "{}/{}",
                v["node_id"],
                v["wall_ms"].as_u64().unwrap_or(0) / 1000
            ),
            _ => i.to_string(),
        };
        match bodies.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(i),
            None => bodies.push((key, vec![i])),
        }
    }
    let (mut json, mut proto) = (0, 0);
    for (_, members) in &bodies {
        if input.kind == RecordKind::Event {
            let texts: Vec<&str> = members.iter().map(|i| input.json[*i].as_str()).collect();
            json += gzip(std::iter::once(
                format!("[{}]", texts.join(",")).into_bytes(),
            ));
            let mut batch = Vec::new();
            for i in members {
                let b = &input.proto[*i];
                prost::encoding::encode_key(
                    1,
                    prost::encoding::WireType::LengthDelimited,
                    &mut batch,
                );
                prost::encoding::encode_varint(b.len() as u64, &mut batch);
                batch.extend_from_slice(b);
            }
            proto += gzip(std::iter::once(batch));
        } else {
            json += gzip(members.iter().map(|i| input.json[*i].clone().into_bytes()));
            proto += gzip(members.iter().map(|i| input.proto[*i].clone()));
        }
    }
    (json, proto, bodies.len())
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
type Case = fn(&Input, &Codec) -> Duration;

fn proto_encode_value(i: &Input, l: &Codec) -> Duration {
    timed(&i.values, |v| encode(l, i.kind, v).expect("encodes"))
}

fn proto_decode_value(i: &Input, l: &Codec) -> Duration {
    timed(&i.proto, |b| decode(l, i.kind, b).expect("decodes"))
}

/// A case of an input: some depend on the input's type.
type CaseOf = fn(&Input) -> Case;

/// The cases, by name, in the order the summary names them.
const CASES: [(&str, CaseOf); 6] = [
    ("encode_json", |i| i.cases.encode_json),
    ("encode_proto_from_value", |_| proto_encode_value),
    ("encode_proto_generated", |i| i.cases.encode_generated),
    ("decode_json_generated", |i| i.cases.decode_json),
    ("decode_proto_to_value", |_| proto_decode_value),
    ("decode_proto_generated", |i| i.cases.decode_generated),
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

/// A speed line's verdict: the target holds the codec's fastest path; the path through a
/// `serde_json::Value` is printed for reference.
fn verdict(judged: bool, ok: bool, what: &str) -> String {
    if judged {
        format!("{what}: {}", target(ok))
    } else {
        "for reference".to_owned()
    }
}

/// The medians of the interleaved pass and one line per ratio.
fn summary(inputs: &[Input], codec: &Codec) {
    let mut samples = vec![vec![Vec::with_capacity(SUMMARY_ROUNDS); CASES.len()]; inputs.len()];
    for _ in 0..SUMMARY_ROUNDS {
        for (i, input) in inputs.iter().enumerate() {
            for (c, (_, case)) in CASES.iter().enumerate() {
                let case = case(input);
                // One untimed pass first, so each case is timed with its own working set in
                // memory, as criterion's back-to-back iterations time it.
                let passes = SAMPLE_RECORDS.div_ceil(input.json.len());
                case(input, codec);
                let total: Duration = (0..passes).map(|_| case(input, codec)).sum();
                samples[i][c].push(total / passes as u32);
            }
        }
    }
    println!(
        "\ncodec summary: medians of {SUMMARY_ROUNDS} interleaved rounds per case, each sample \
         whole passes over at least {SAMPLE_RECORDS} records (times per pass)"
    );
    for (input, per_case) in inputs.iter().zip(samples) {
        let [
            enc_json,
            enc_value,
            enc_generated,
            dec_json,
            dec_value,
            dec_generated,
        ] = <[Duration; 6]>::try_from(per_case.into_iter().map(median).collect::<Vec<_>>())
            .expect("six cases");
        let name = input.name;
        let n = input.json.len();
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
            "  {name} gzip size, whole stream: protobuf {gz_proto} B / JSON {gz_json} B = {:.1} % (target ≤ 70 %: {})",
            100.0 * gz,
            target(gz <= 0.70)
        );
        let (gz_json, gz_proto, bodies) = gzipped_bodies(input);
        let gz = gz_proto as f64 / gz_json as f64;
        println!(
            "  {name} gzip size, {bodies} bodies each on its own: protobuf {gz_proto} B / JSON {gz_json} B = {:.1} % (target ≤ 70 %: {})",
            100.0 * gz,
            target(gz <= 0.70)
        );
        for (what, t, judged) in [
            ("from Value", enc_value, false),
            ("generated", enc_generated, true),
        ] {
            let speedup = enc_json.as_secs_f64() / t.as_secs_f64();
            println!(
                "  {name} encode {what}: protobuf {:.2} ms vs JSON {:.2} ms = {speedup:.2} x faster \
                 ({})",
                ms(t),
                ms(enc_json),
                verdict(judged, speedup >= 3.0, "target ≥ 3 x")
            );
        }
        for (what, t, judged) in [
            ("to Value", dec_value, false),
            ("generated", dec_generated, true),
        ] {
            let speedup = dec_json.as_secs_f64() / t.as_secs_f64();
            println!(
                "  {name} decode {what}: protobuf {:.2} ms vs generated JSON {:.2} ms = {speedup:.2} x \
                 faster ({})",
                ms(t),
                ms(dec_json),
                verdict(judged, speedup >= 1.5, "target ≥ 1.5 x")
            );
        }
    }
}

fn main() {
    let codec = diagwire::proto::current();
    let inputs = [events(codec), snapshots(codec)];

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
            let case = case(input);
            group.bench_function(name, |b| {
                b.iter_custom(|iters| (0..iters).map(|_| case(input, codec)).sum())
            });
        }
        group.finish();
    }
    c.final_summary();

    // `cargo bench` passes `--bench`; without it criterion only checks that each case runs. A
    // profiling run (`--profile-time`) times nothing.
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--profile-time") {
        summary(&inputs, codec);
    }
}
