//! swactor's simulator as a consumer of diagwire: it writes its two-node run (the scenario of the
//! library) as a bundle through the bundle writer, which lays the files out and derives the
//! manifest (with the contract version and the writer's identity), then reads the manifest back.
//!
//! `diagwire-consumer-simulator OUT` writes `OUT/<run_id>/…`; `diagwire validate OUT/<run_id>`
//! checks it.

use std::path::PathBuf;
use std::process::ExitCode;

use diagwire::CONTRACT_VERSION;
use diagwire::bundle::Writer;
use diagwire::v1::{BundleWriter, EventRecord, Finalize, Identity, Snapshot, WriterKind};
use diagwire_consumer_simulator::{RUN_ID, Sink, T0, run};

/// The scenario's records, into the bundle writer.
struct Bundle(Writer);

impl Sink for Bundle {
    fn boot(&mut self, identity: &Identity) {
        self.0.boot(identity);
    }
    fn events(&mut self, node: &Identity, batch: &[EventRecord]) {
        self.0.events(&node.node_id_hex, batch);
    }
    fn snapshot(&mut self, snapshot: &Snapshot) {
        self.0.snapshot(snapshot);
    }
    fn finalize(&mut self, node: &Identity, finalize: &Finalize) {
        self.0.finalize(&node.node_id_hex, finalize);
    }
}

fn main() -> ExitCode {
    let Some(out) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: diagwire-consumer-simulator OUT");
        return ExitCode::from(2);
    };
    let mut bundle = Bundle(Writer::new(
        RUN_ID,
        BundleWriter::new(WriterKind::Sim, "swactor-sim", env!("CARGO_PKG_VERSION")),
    ));
    run(&mut bundle);
    bundle.0.collector_span(T0, T0 + 6_000);

    let (dir, manifest) = match bundle.0.write_dir(&out) {
        Ok(done) => done,
        Err(e) => {
            eprintln!("error: {}: {e}", out.display());
            return ExitCode::FAILURE;
        }
    };
    let writer = manifest.writer.as_ref();
    let declared = manifest.contract_version.as_deref() == Some(CONTRACT_VERSION)
        && writer.is_some_and(|w| w.kind == WriterKind::Sim && w.name == "swactor-sim");
    println!(
        "wrote {} with {} nodes; contract_version {}, writer {}",
        dir.display(),
        manifest.nodes.len(),
        manifest.contract_version.as_deref().unwrap_or("?"),
        writer.map_or("?".to_owned(), |w| format!(
            "{} {} {}",
            w.kind, w.name, w.version
        )),
    );
    if declared && manifest.nodes.len() == 2 && manifest.finalize_received {
        ExitCode::SUCCESS
    } else {
        eprintln!("error: the manifest does not describe the bundle written");
        ExitCode::FAILURE
    }
}
