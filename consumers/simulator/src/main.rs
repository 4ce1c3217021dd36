//! swactor's simulator as a consumer of diagwire: it writes a two-node bundle through the bundle
//! writer, which lays the files out and derives the manifest (with the contract version and the
//! writer's identity), then reads the manifest back.
//!
//! `diagwire-consumer-simulator OUT` writes `OUT/<run_id>/…`; `diagwire validate OUT/<run_id>`
//! checks it.

use std::path::PathBuf;
use std::process::ExitCode;

use diagwire::bundle::Writer;
use diagwire::v1::{
    BundleWriter, Event, EventRecord, Finalize, Identity, PeerState, Snapshot, SnapshotBody,
    SnapshotTrigger, SwimTransition, WriterKind,
};
use diagwire::{CONTRACT_VERSION, NodeId};

const RUN_ID: &str = "sim-two-nodes";
const T0: u64 = 1_779_733_870_000;

fn identity(id: NodeId, role: &str, stage: Option<u32>) -> Identity {
    let mut identity = Identity::new(id.to_hex(), id.short(), role, RUN_ID, T0, 0);
    identity.stage_index = stage;
    identity
}

fn main() -> ExitCode {
    let Some(out) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: diagwire-consumer-simulator OUT");
        return ExitCode::from(2);
    };
    let orchestrator = identity(NodeId::from([0xaa; 32]), "orchestrator", None);
    let stage = identity(NodeId::from([0xbb; 32]), "stage", Some(0));
    let stage_id = NodeId::from([0xbb; 32]);
    let orch_id = NodeId::from([0xaa; 32]);

    let mut bundle = Writer::new(
        RUN_ID,
        BundleWriter::new(WriterKind::Sim, "swactor-sim", env!("CARGO_PKG_VERSION")),
    );
    bundle.boot(&orchestrator).boot(&stage);
    let suspect = Event::from(SwimTransition::new(
        stage_id,
        PeerState::Alive,
        PeerState::Suspect,
        "probe timed out",
    ));
    bundle.events(
        &orchestrator.node_id_hex,
        &[EventRecord::new(orch_id, 1, T0 + 1_000, suspect)],
    );
    for (who, seq) in [(&orchestrator, 1), (&stage, 0)] {
        bundle.snapshot(&Snapshot::new(
            who.clone(),
            RUN_ID,
            format!("{}-0", who.node_id_short),
            T0 + 5_000,
            seq,
            SnapshotTrigger::Periodic,
            SnapshotBody::new(vec![]),
        ));
    }
    let mut finalize = Finalize::new();
    finalize.exit_reason = Some("completed".to_owned());
    bundle.finalize(&orchestrator.node_id_hex, &finalize);
    bundle.collector_span(T0, T0 + 6_000);

    let (dir, manifest) = match bundle.write_dir(&out) {
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
