//! What the summary's tests share: a bundle builder with readable node ids and times, and the
//! check helpers each concern's cases run through.

#![allow(dead_code)]

use diagwire::bundle::Writer;
use diagwire::bundle::read::Limits;
use diagwire::v1::*;
use diagwire::{NodeId, NodeIdHex};
use diagwire_summary::model::Summary;
use diagwire_summary::{render, summarize};

pub const T0: u64 = 1_779_733_870_000;

pub fn id(n: u8) -> NodeId {
    NodeId::from([n; 32])
}

pub fn hex(n: u8) -> NodeIdHex {
    id(n).to_hex()
}

pub fn identity(n: u8, role: &str, stage: Option<u32>) -> Identity {
    let mut i = Identity::new(hex(n), id(n).short(), role, "run-1", T0, 0);
    i.stage_index = stage;
    i
}

/// A bundle under construction.
pub struct Run {
    /// The bundle writer.
    pub w: Writer,
    seq: u64,
}

impl Run {
    pub fn new() -> Run {
        Run {
            w: Writer::new("run-1", BundleWriter::new(WriterKind::Sim, "tests", "0")),
            seq: 0,
        }
    }

    pub fn boot(&mut self, n: u8, role: &str, stage: Option<u32>) -> &mut Self {
        self.w.boot(&identity(n, role, stage));
        self
    }

    /// One events file of node `n`, each event at `T0 + t`.
    pub fn events(&mut self, n: u8, events: Vec<(u64, Event)>) -> &mut Self {
        let batch: Vec<EventRecord> = events
            .into_iter()
            .map(|(t, e)| {
                self.seq += 1;
                EventRecord::new(id(n), self.seq, T0 + t, e)
            })
            .collect();
        self.w.events(&hex(n), &batch);
        self
    }

    pub fn snapshot(&mut self, n: u8, role: &str, t: u64, body: SnapshotBody) -> &mut Self {
        let s = Snapshot::new(
            identity(n, role, None),
            "run-1",
            format!("{}-{t}", id(n).short()),
            T0 + t,
            self.seq,
            SnapshotTrigger::Periodic,
            body,
        );
        self.w.snapshot(&s);
        self
    }

    pub fn summary(self) -> Summary {
        let dir = tempfile::tempdir().expect("temp dir");
        let (path, _) = self.w.write_dir(dir.path()).expect("write");
        summarize(&path, Limits::default()).expect("summary")
    }
}

pub fn md(s: &Summary) -> String {
    render::markdown(s)
}

/// Checks that the Markdown of case `case` holds every line or fragment of `want`.
pub fn check_md(case: &str, s: &Summary, want: &[&str]) {
    let out = md(s);
    for w in want {
        assert!(out.contains(w), "{case}: no `{w}` in\n{out}");
    }
}

/// Checks that neither the Markdown nor the HTML page of case `case` prints a bare `?` for an
/// absent value.
pub fn check_no_question_marks(case: &str, s: &Summary) {
    let out = md(s);
    assert!(!out.contains('?'), "{case}: a `?` in\n{out}");
    let page = diagwire_summary::html::page(s);
    assert!(!page.contains('?'), "{case}: a `?` in the HTML page");
}

/// Checks the JSON value at `pointer` of case `case`.
pub fn check_json(case: &str, s: &Summary, pointer: &str, want: serde_json::Value) {
    let j = render::json(s);
    assert_eq!(
        j.pointer(pointer),
        Some(&want),
        "{case}: `{pointer}` in {j:#}"
    );
}

/// Summarizes the bundle written at `path`.
pub fn read(path: &std::path::Path) -> Summary {
    summarize(path, Limits::default()).expect("summary")
}
