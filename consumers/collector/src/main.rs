//! swactor's collector as a consumer of diagwire: it stages posts the way its ingest routes do
//! (one file per post, named by the layout, JSON or protobuf by the body's content type), refuses
//! a post whose content type or body is wrong, assembles the run's bundle from staging without a
//! finalize record, asks the serve decision, and writes the deterministic `.tar.gz` it would serve.
//!
//! `diagwire-consumer-collector OUT` uses `OUT/staging/` and writes `OUT/<run_id>.tar.gz`;
//! `diagwire validate OUT/<run_id>.tar.gz` checks it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use diagwire::NodeId;
use diagwire::bundle::assemble::{
    CachedBundle, ServeDecision, StagingState, assemble, serve_decision, stage_post,
};
use diagwire::bundle::output::write_tar_gz;
use diagwire::layout::{Encoding, FileKind};
use diagwire::v1::{
    BundleWriter, DialStarted, EventRecord, Identity, Snapshot, SnapshotBody, SnapshotTrigger,
    WriterKind,
};

const RUN_ID: &str = "collector-run";
const T0: u64 = 1_779_733_870_000;

/// A node posts one record in `encoding`, and the collector stores the body by its content type:
/// `<root>/<run_id>/<node_id>/<kind>-NNNNNN.json` or `.pb`.
fn stage(
    root: &Path,
    node: &str,
    kind: FileKind,
    seq: u64,
    encoding: Encoding,
    body: &impl serde::Serialize,
) -> std::io::Result<()> {
    let value = serde_json::to_value(body).map_err(std::io::Error::other)?;
    let bytes = diagwire::binary::encode_value(encoding, kind.record_kind(), &value)
        .map_err(std::io::Error::other)?;
    stage_post(
        root,
        RUN_ID,
        node,
        &kind,
        seq,
        encoding.content_type(),
        &bytes,
    )
    .map(drop)
    .map_err(|p| std::io::Error::other(p.to_string()))
}

fn main() -> ExitCode {
    let Some(out) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: diagwire-consumer-collector OUT");
        return ExitCode::from(2);
    };
    match run(&out) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}

fn run(out: &Path) -> std::io::Result<bool> {
    let staging = out.join("staging");
    let me = BundleWriter::new(
        WriterKind::Collector,
        "swactor-collector",
        env!("CARGO_PKG_VERSION"),
    );
    let nodes = [NodeId::from([0x31; 32]), NodeId::from([0x32; 32])];
    // The first node posts JSON, the second protobuf.
    let encodings = [Encoding::Json, Encoding::Protobuf];
    for (i, id) in nodes.iter().enumerate() {
        let hex = id.to_hex();
        let encoding = encodings[i];
        let mut boot = Identity::new(hex.clone(), id.short(), "stage", RUN_ID, T0, 0);
        boot.stage_index = Some(i as u32);
        stage(&staging, &hex.0, FileKind::Boot, 1, encoding, &boot)?;
        let other = nodes[1 - i];
        let batch = vec![EventRecord::new(
            *id,
            1,
            T0 + 50,
            DialStarted::new(other, 1, 5_000),
        )];
        stage(&staging, &hex.0, FileKind::Events, 1, encoding, &batch)?;
        let snapshot = Snapshot::new(
            boot,
            RUN_ID,
            format!("{}-0", id.short()),
            T0 + 5_000,
            1,
            SnapshotTrigger::Periodic,
            SnapshotBody::new(vec![]),
        );
        stage(&staging, &hex.0, FileKind::Snapshot, 1, encoding, &snapshot)?;
    }

    // Posts the collector refuses, storing nothing: a content type it does not take, and a body
    // that is not the record its route says.
    let hex = nodes[0].to_hex().0;
    let refused = [
        stage_post(
            &staging,
            RUN_ID,
            &hex,
            &FileKind::Events,
            2,
            "text/plain",
            b"[]",
        ),
        stage_post(
            &staging,
            RUN_ID,
            &hex,
            &FileKind::Snapshot,
            2,
            Encoding::Protobuf.content_type(),
            &[0xff, 0xff, 0xff],
        ),
    ];
    for r in &refused {
        match r {
            Err(p) => println!("refused: {p}"),
            Ok(path) => println!("stored a post it should refuse: {}", path.display()),
        }
    }

    // No finalize arrived (say the orchestrator was killed): the bundle is assembled on request.
    let first = assemble(&staging, RUN_ID, me.clone())?;
    let decision = serve_decision(None, Some(&StagingState::from_manifest(&first.manifest)));
    println!(
        "assembled {} nodes, finalize_received {}, {} problem(s); serve: {decision:?}",
        first.manifest.nodes.len(),
        first.manifest.finalize_received,
        first.problems.len()
    );
    for p in &first.problems {
        println!("  {p}");
    }
    let archive = out.join(format!("{RUN_ID}.tar.gz"));
    write_tar_gz(&first.contents, std::fs::File::create(&archive)?)?;
    println!("wrote {}", archive.display());

    // The bundle just served is cached; a third node then posts into the same run.
    let cached = CachedBundle::from_manifest(&first.manifest);
    let late = NodeId::from([0x33; 32]);
    let boot = Identity::new(late.to_hex(), late.short(), "relay", RUN_ID, T0 + 9_000, 0);
    stage(
        &staging,
        &late.to_hex().0,
        FileKind::Boot,
        1,
        Encoding::Protobuf,
        &boot,
    )?;
    let again = assemble(&staging, RUN_ID, me)?;
    let after = serve_decision(
        Some(&cached),
        Some(&StagingState::from_manifest(&again.manifest)),
    );
    println!("after a late node posted: {after:?}");

    Ok(refused.iter().all(Result::is_err)
        && decision == ServeDecision::Resynthesize
        && after == ServeDecision::Resynthesize
        && first.problems.is_empty()
        && first.manifest.writer.is_some())
}
