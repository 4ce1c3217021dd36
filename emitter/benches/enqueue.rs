//! What the emitter costs its caller and what it carries, against a collector in process on
//! 127.0.0.1 (fsync on, a temporary root):
//!
//! * the cost of one enqueue, each timed alone over 200,000 events while the emitter posts them:
//!   median and p99 printed (the contract: at most 1 µs median, 10 µs p99);
//! * throughput: records per second from the first enqueue to the last acknowledgement, events
//!   in batches of 512, with and without a spool;
//! * criterion's estimate of an enqueue (`enqueue/event`).
//!
//! `cargo bench -p diagwire-emitter --bench enqueue`.

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use diagwire_emitter::{Config, Emitter, Flushed};

const RUN: &str = "bench";

fn emitter(server: &common::Server, run: &str, spool: Option<&std::path::Path>) -> Emitter {
    let mut config = Config::new(format!("http://{}", server.addr), run, "node-a");
    config.queue_capacity = 1 << 22;
    config.spool = spool.map(|s| s.to_owned());
    Emitter::start(config).expect("the emitter starts")
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Each enqueue timed alone.
fn enqueue_cost(server: &common::Server) {
    let emitter = emitter(server, "bench-cost", None);
    let events: Vec<_> = (1..=200_000).map(|s| common::event(RUN, s)).collect();
    let mut took = Vec::with_capacity(events.len());
    for e in events {
        let start = Instant::now();
        let taken = emitter.event(e);
        took.push(start.elapsed());
        black_box(taken);
    }
    assert_eq!(emitter.flush(common::BOUND), Flushed::All);
    let stats = emitter.finish(common::BOUND);
    took.sort();
    println!(
        "enqueue (each timed alone, {} events): median {:?}, p99 {:?}, p99.9 {:?}, max {:?}; dropped {}",
        took.len(),
        percentile(&took, 0.5),
        percentile(&took, 0.99),
        percentile(&took, 0.999),
        took[took.len() - 1],
        stats.dropped
    );
}

/// Records per second, first enqueue to last acknowledgement.
fn throughput(server: &common::Server) {
    for spooled in [false, true] {
        let spool = tempfile::tempdir().unwrap();
        let run = format!("bench-throughput-{spooled}");
        let emitter = emitter(server, &run, spooled.then_some(spool.path()));
        let n = 200_000u64;
        let events: Vec<_> = (1..=n).map(|s| common::event(&run, s)).collect();
        let start = Instant::now();
        for e in events {
            emitter.event(e);
        }
        assert_eq!(emitter.flush(common::BOUND), Flushed::All);
        let took = start.elapsed();
        let stats = emitter.finish(common::BOUND);
        println!(
            "throughput{}: {n} events in {} posts, {:.0} records/s ({took:?})",
            if spooled { " (spooled)" } else { "" },
            stats.posted,
            n as f64 / took.as_secs_f64()
        );
    }
}

fn criterion_enqueue(c: &mut Criterion, server: &common::Server) {
    let emitter = emitter(server, "bench-criterion", None);
    let mut seq = 0;
    c.bench_function("enqueue/event", |b| {
        b.iter_custom(|iters| {
            let events: Vec<_> = (0..iters)
                .map(|_| {
                    seq += 1;
                    common::event(RUN, seq)
                })
                .collect();
            let start = Instant::now();
            for e in events {
                black_box(emitter.event(e));
            }
            let took = start.elapsed();
            let _ = emitter.flush(common::BOUND);
            took
        })
    });
    let stats = emitter.finish(common::BOUND);
    println!(
        "criterion run: {} posted, {} dropped",
        stats.records_posted, stats.dropped
    );
}

fn main() {
    let root = tempfile::tempdir().unwrap();
    let server = common::serve(root.path(), 0);
    enqueue_cost(&server);
    throughput(&server);
    let mut c = Criterion::default()
        .configure_from_args()
        .sample_size(20)
        .measurement_time(Duration::from_secs(3));
    criterion_enqueue(&mut c, &server);
    c.final_summary();
}
