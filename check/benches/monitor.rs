//! The live monitor's throughput against the typed decode of the same records. Run by hand:
//!
//! ```sh
//! cargo bench -p diagwire-check --bench monitor -- [--mb 20] [--runs 5]
//! ```
//!
//! Generates a synthetic run (`diagwire_testkit::scenario::Params::bulk`, about `--mb` megabytes of
//! records), keeps every record's JSON text in memory, then times, `--runs` times each and
//! alternating: decoding every record with the generated types (what any reader of the stream
//! pays), and feeding the decoded records with their text to a fresh monitor, node by node in
//! batches of the scenario's size, as a collector or a simulator would. Prints the medians in
//! records per second and the ratio monitor / decode (the monitor keeps up with a reader when it
//! is at least 0.8).

use std::time::{Duration, Instant};

use diagwire::v1::{Record, RecordKind};
use diagwire_check::{Fed, Monitor, Nodes, Options, RecordRef, Rulebook};
use diagwire_testkit::bench::{arg, median};
use diagwire_testkit::scenario::{Params, generate};

/// One record as it travels: its node, kind and JSON text.
struct Text {
    node: String,
    kind: RecordKind,
    json: String,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mb = arg(&args, "--mb", 20);
    let runs = arg(&args, "--runs", 5).max(1) as usize;
    let run = generate(&Params::bulk(1, mb));
    let mut texts = Vec::new();
    for n in &run.nodes {
        let label = n.identity.node_id_hex.0.clone();
        texts.push(Text {
            node: label.clone(),
            kind: RecordKind::Boot,
            json: json(&n.identity),
        });
        for e in &n.events {
            texts.push(Text {
                node: label.clone(),
                kind: RecordKind::Event,
                json: json(e),
            });
        }
        for s in &n.snapshots {
            texts.push(Text {
                node: label.clone(),
                kind: RecordKind::Snapshot,
                json: json(s),
            });
        }
    }
    let bytes: usize = texts.iter().map(|t| t.json.len()).sum();
    println!(
        "{} records, {:.1} MB of JSON, {runs} run(s) each",
        texts.len(),
        bytes as f64 / 1e6
    );
    let decode = |t: &Text| Record::parse(t.kind, &t.json).expect("the scenario parses");
    let records: Vec<Record> = texts.iter().map(decode).collect();
    let rulebook = Rulebook::builtin();
    let (mut dec, mut mon) = (Vec::new(), Vec::new());
    let mut findings = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let mut n = 0usize;
        for text in &texts {
            n += usize::from(matches!(decode(text), Record::Event(_)));
        }
        dec.push(t.elapsed());
        std::hint::black_box(n);

        let t = Instant::now();
        let mut monitor = Monitor::with(
            &rulebook,
            "scenario-bulk",
            Options::default(),
            Nodes::ManifestOrSeen,
        );
        for (i, (r, text)) in records.iter().zip(&texts).enumerate() {
            monitor.take(&Fed {
                node: Some(&text.node),
                record: RecordRef::from(r),
                text: Some(&text.json),
                location: diagwire::Location::record("bench", i, ""),
            });
            findings += monitor.decided().len();
        }
        let report = monitor.finish();
        mon.push(t.elapsed());
        assert!(report.passed(), "{}", report.to_markdown());
    }
    std::hint::black_box(findings);
    let (d, m) = (median(dec), median(mon));
    let rate = |t: Duration| texts.len() as f64 / t.as_secs_f64();
    println!(
        "  typed decode   {:>8.3} s  {:>12.0} records/s",
        d.as_secs_f64(),
        rate(d)
    );
    println!(
        "  monitor        {:>8.3} s  {:>12.0} records/s",
        m.as_secs_f64(),
        rate(m)
    );
    println!("  monitor / decode throughput: {:.2}", rate(m) / rate(d));
}

/// A record as JSON text.
fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("records serialize")
}
