//! `bundle::StreamWriter`, the writer that puts each file on disk as it is made: for the same
//! calls, its run directory and its `.tar.gz` are byte for byte what the in-memory `Writer`
//! writes, with the same manifest and problems; it leaves nothing behind but its target, and
//! nothing at all when it fails or is dropped. One scenario per case, run through one check.
#![cfg(feature = "bundle")]

use std::fs;
use std::path::Path;

use diagwire::bundle::target::files_under;
use diagwire::bundle::{StreamWriter, Writer, output};
use diagwire::layout::FileKind;
use diagwire::v1::{
    BundleWriter, DialStarted, EventRecord, Finalize, Identity, Snapshot, SnapshotBody,
    SnapshotTrigger, VastaiRecord, WriterKind,
};
use diagwire::{Extra, NodeId, NodeIdHex};

const RUN: &str = "run-stream-1";
const WALL: u64 = 1_779_733_878_000;
const ORCH: NodeId = NodeId([0x5f; 32]);
const STAGE: NodeId = NodeId([0xaf; 32]);

fn sim() -> BundleWriter {
    BundleWriter::new(WriterKind::Sim, "swactor-sim", "0.3.1")
}

fn identity(node: NodeId, role: &str, stage_index: Option<u32>, boot: u32) -> Identity {
    let mut identity = Identity::new(node.to_hex(), node.short(), role, RUN, WALL - 60_000, boot);
    identity.stage_index = stage_index;
    identity
}

fn events(node: NodeId, seqs: std::ops::Range<u64>) -> Vec<EventRecord> {
    seqs.map(|seq| {
        EventRecord::new(
            node,
            seq,
            WALL + seq,
            DialStarted::new(NodeId([9; 32]), 1, 5_000),
        )
    })
    .collect()
}

fn snapshot(of: &Identity, seq: u64) -> Snapshot {
    Snapshot::new(
        of.clone(),
        RUN,
        format!("{}-{seq}", of.node_id_short),
        WALL + seq,
        seq,
        SnapshotTrigger::Periodic,
        SnapshotBody::new(vec![]),
    )
}

fn finalize(reason: &str) -> Finalize {
    let mut finalize = Finalize::new();
    finalize.exit_reason = Some(reason.to_owned());
    finalize
}

fn vastai_sample() -> VastaiRecord {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../compat-tests/fixtures/wire/vastai/host-sample-minimal.json");
    serde_json::from_str(&fs::read_to_string(path).expect("fixture")).expect("a vast.ai record")
}

/// One call made to both writers.
#[derive(Clone)]
enum Step {
    Boot(Identity),
    /// A whole batch: `events` on both.
    Events(NodeIdHex, Vec<EventRecord>),
    /// `begin_events`, `event` per record, `end_events` on the stream writer; `events` on the
    /// in-memory one.
    Streamed(NodeIdHex, Vec<EventRecord>),
    /// Like `Streamed`, but left open: the next call (or the finish) ends it.
    LeftOpen(NodeIdHex, Vec<EventRecord>),
    Snapshot(Box<Snapshot>),
    Finalize(NodeIdHex, Finalize),
    Vastai(&'static str, &'static str, VastaiRecord),
    Span(u64, u64),
    File(NodeIdHex, FileKind, Option<u64>, Vec<u8>),
    Extra(&'static str, serde_json::Value),
    /// The binary form from here on.
    #[cfg(feature = "proto")]
    Binary,
}

fn apply_memory(w: &mut Writer, step: &Step) {
    match step {
        Step::Boot(i) => {
            w.boot(i);
        }
        Step::Events(n, batch) | Step::Streamed(n, batch) | Step::LeftOpen(n, batch) => {
            w.events(n, batch);
        }
        Step::Snapshot(s) => {
            w.snapshot(s);
        }
        Step::Finalize(n, f) => {
            w.finalize(n, f);
        }
        Step::Vastai(node, kind, r) => {
            w.vastai(node, kind, r);
        }
        Step::Span(a, b) => {
            w.collector_span(*a, *b);
        }
        Step::File(n, kind, seq, bytes) => w.add_file(&n.0, kind.clone(), *seq, bytes.clone()),
        Step::Extra(k, v) => {
            w.manifest_extra(Extra([(k.to_string(), v.clone())].into()));
        }
        #[cfg(feature = "proto")]
        Step::Binary => {
            w.encoding(diagwire::layout::Encoding::Protobuf);
        }
    }
}

fn apply_stream(w: &mut StreamWriter, step: &Step) -> std::io::Result<()> {
    match step {
        Step::Boot(i) => w.boot(i).map(drop),
        Step::Events(n, batch) => w.events(n, batch).map(drop),
        Step::Streamed(n, batch) | Step::LeftOpen(n, batch) => {
            w.begin_events(n)?;
            for e in batch {
                w.event(e)?;
            }
            if matches!(step, Step::Streamed(..)) {
                w.end_events()?;
            }
            Ok(())
        }
        Step::Snapshot(s) => w.snapshot(s).map(drop),
        Step::Finalize(n, f) => w.finalize(n, f).map(drop),
        Step::Vastai(node, kind, r) => w.vastai(node, kind, r).map(drop),
        Step::Span(a, b) => {
            w.collector_span(*a, *b);
            Ok(())
        }
        Step::File(n, kind, seq, bytes) => w.add_file(&n.0, kind.clone(), *seq, bytes).map(drop),
        Step::Extra(k, v) => {
            w.manifest_extra(Extra([(k.to_string(), v.clone())].into()));
            Ok(())
        }
        #[cfg(feature = "proto")]
        Step::Binary => {
            w.encoding(diagwire::layout::Encoding::Protobuf);
            Ok(())
        }
    }
}

/// The scenarios: each exercises the layout rules the manifest and the paths depend on.
fn scenarios() -> Vec<(&'static str, Vec<Step>)> {
    let orch_first = identity(ORCH, "orchestrator", None, 0);
    let orch = identity(ORCH, "orchestrator", None, 1);
    let stage = identity(STAGE, "stage", Some(0), 0);
    let (o, s) = (ORCH.to_hex(), STAGE.to_hex());
    vec![
        (
            "two nodes, restarted and finalized twice, added interleaved",
            vec![
                Step::Boot(orch_first.clone()),
                Step::Boot(stage.clone()),
                Step::Events(o.clone(), events(ORCH, 1..3)),
                Step::Streamed(s.clone(), events(STAGE, 1..40)),
                Step::Snapshot(Box::new(snapshot(&stage, 2))),
                Step::Boot(orch.clone()),
                Step::LeftOpen(o.clone(), events(ORCH, 3..9)),
                Step::Snapshot(Box::new(snapshot(&orch, 4))),
                Step::Vastai("vastai-stage-0", "sample", vastai_sample()),
                Step::Finalize(o.clone(), finalize("first")),
                Step::Finalize(o.clone(), finalize("completed")),
                Step::Span(WALL, WALL + 2_000),
                Step::Span(WALL - 500, WALL + 1_500),
            ],
        ),
        (
            "empty events files, streamed and whole",
            vec![
                Step::Boot(stage.clone()),
                Step::Streamed(s.clone(), vec![]),
                Step::Events(s.clone(), vec![]),
                Step::LeftOpen(s.clone(), vec![]),
            ],
        ),
        (
            "files added as bytes, one replacing another, renaming the node",
            vec![
                Step::Boot(stage.clone()),
                Step::Streamed(s.clone(), events(STAGE, 1..3)),
                Step::File(s.clone(), FileKind::Events, Some(1), b"[]\n".to_vec()),
                Step::File(s.clone(), FileKind::Events, None, b"[]\n".to_vec()),
                Step::File(
                    s.clone(),
                    FileKind::Boot,
                    Some(2),
                    serde_json::to_vec(&identity(STAGE, "stage", Some(3), 1)).expect("json"),
                ),
            ],
        ),
        (
            "labels and kinds that must be made safe, and keys the manifest carries",
            vec![
                Step::Boot(identity(ORCH, "a/b", None, 0)),
                Step::Boot(identity(STAGE, "a/b", None, 0)),
                Step::Vastai("vastai-x", "host sample", vastai_sample()),
                Step::Extra("origin", serde_json::json!("sim")),
            ],
        ),
        ("nothing but the manifest", vec![]),
        #[cfg(feature = "proto")]
        (
            "records in the binary form, streamed and whole",
            vec![
                Step::Binary,
                Step::Boot(stage.clone()),
                Step::Streamed(s.clone(), events(STAGE, 1..5)),
                Step::Events(s.clone(), events(STAGE, 5..7)),
                Step::LeftOpen(s.clone(), events(STAGE, 7..8)),
                Step::Snapshot(Box::new(snapshot(&stage, 2))),
            ],
        ),
    ]
}

/// Every file under `dir` with its bytes, in path order.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    files_under(dir)
        .expect("list")
        .into_iter()
        .map(|rel| {
            let bytes = fs::read(rel.split('/').fold(dir.to_owned(), |p, c| p.join(c)));
            (rel, bytes.expect("read"))
        })
        .collect()
}

/// The names in `dir`.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn the_stream_writer_writes_what_the_in_memory_writer_writes_byte_for_byte() {
    for (name, steps) in scenarios() {
        let mut memory = Writer::new(RUN, sim());
        for step in &steps {
            apply_memory(&mut memory, step);
        }
        let want = memory.finish();
        let mut want_tar = Vec::new();
        output::write_tar_gz(&want.contents, &mut want_tar).expect("tar");

        let out = tempfile::tempdir().expect("temp dir");
        let mut to_dir = StreamWriter::to_dir(out.path(), RUN, sim()).expect("to_dir");
        let archive = out.path().join("run.tar.gz");
        let mut to_tar = StreamWriter::to_tar_gz(&archive, RUN, sim()).expect("to_tar_gz");
        for step in &steps {
            apply_stream(&mut to_dir, step).expect(name);
            apply_stream(&mut to_tar, step).expect(name);
        }
        let dir = to_dir.finish().expect(name);
        let tar = to_tar.finish().expect(name);

        let want_files: Vec<(String, Vec<u8>)> = want.contents.files.clone().into_iter().collect();
        assert_eq!(tree(&dir.path), want_files, "{name}: the run directory");
        assert_eq!(
            fs::read(&tar.path).expect("read"),
            want_tar,
            "{name}: the archive"
        );
        for written in [&dir, &tar] {
            assert_eq!(written.manifest, want.manifest, "{name}");
            assert_eq!(written.problems, want.problems, "{name}");
            assert_eq!(written.files, want.contents.files.len(), "{name}");
            let bytes: usize = want.contents.files.values().map(Vec::len).sum();
            assert_eq!(written.bytes, bytes as u64, "{name}");
        }
        // Nothing left beside the targets: no spool, no temporary name.
        assert_eq!(
            names(out.path()),
            [RUN.to_owned(), "run.tar.gz".to_owned()],
            "{name}"
        );
    }
}

#[test]
fn a_stream_writer_that_fails_or_is_dropped_leaves_nothing() {
    let out = tempfile::tempdir().expect("temp dir");
    let stage = identity(STAGE, "stage", Some(0), 0);
    {
        let mut w = StreamWriter::to_dir(out.path(), RUN, sim()).expect("to_dir");
        w.boot(&stage).expect("boot");
        w.begin_events(&STAGE.to_hex()).expect("begin");
        w.event(&events(STAGE, 1..2)[0]).expect("event");
        let mut t =
            StreamWriter::to_tar_gz(&out.path().join("run.tar.gz"), RUN, sim()).expect("tar");
        t.boot(&stage).expect("boot");
        // Dropped unfinished.
    }
    assert_eq!(names(out.path()), Vec::<String>::new());

    // An event with no events file open is refused, and the writer still finishes.
    let mut w = StreamWriter::to_dir(out.path(), RUN, sim()).expect("to_dir");
    assert!(w.event(&events(STAGE, 1..2)[0]).is_err());
    w.finish().expect("finishes");

    // A target that exists is refused before anything is written.
    assert!(StreamWriter::to_dir(out.path(), RUN, sim()).is_err());
    fs::write(out.path().join("taken.tar.gz"), b"mine").expect("write");
    assert!(StreamWriter::to_tar_gz(&out.path().join("taken.tar.gz"), RUN, sim()).is_err());
    assert_eq!(
        fs::read(out.path().join("taken.tar.gz")).expect("read"),
        b"mine"
    );
    // A run id that could leave the parent is refused.
    assert!(StreamWriter::to_dir(out.path(), "../up", sim()).is_err());
    assert!(StreamWriter::to_tar_gz(&out.path().join("x.tar.gz"), "a/b", sim()).is_err());
    assert_eq!(
        names(out.path()),
        [RUN.to_owned(), "taken.tar.gz".to_owned()]
    );
}
