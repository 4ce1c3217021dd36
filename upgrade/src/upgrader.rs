//! The upgrade pass: reads the boot records and the run id, derives the nodes, maps every record
//! through a bundle writer (which lays the files out and derives the manifest) — the in-memory
//! [`Writer`] or the [`StreamWriter`] that writes each file to disk as it is made — and sorts the
//! list of what could not be mapped.

use std::collections::HashMap;
use std::io;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;

use diagwire::bundle::{StreamWriter, Writer, Written};
use diagwire::layout;
use diagwire::v1::{self, RecordKind};
use diagwire::validate::Validators;
use diagwire::{Extra, Location, NodeId, NodeIdHex, Problem, ProblemKind};

use crate::input::MAX_FILE_BYTES;
use crate::input::{read_json, read_limited};
use crate::located::{at, describe, quote};
use crate::nodes::Node;
use crate::nodes::Scanned;
use crate::{Failed, Object, Upgraded, WRITER_NAME};
use diagwire::problem::ReadErrorKind;

pub(crate) struct Upgrader<'a> {
    pub(crate) root: &'a Path,
    pub(crate) validators: Validators,
    /// Node directory name → node id, to resolve peers named by directory.
    pub(crate) names: HashMap<String, NodeId>,
    pub(crate) problems: Vec<Problem>,
    /// The largest file written: the reader's per-file limit.
    pub(crate) max_file_bytes: u64,
}

/// Where an upgrade writes its records: the bundle writer held in memory ([`InMemory`]) or the
/// one that writes each file to disk as it is made ([`StreamWriter`]). Events are written a
/// record at a time, between `begin_events` and `end_events`.
pub(crate) trait Out {
    fn boot(&mut self, identity: &v1::Identity) -> io::Result<()>;
    fn begin_events(&mut self, node: &NodeIdHex) -> io::Result<()>;
    fn event(&mut self, record: &v1::EventRecord) -> io::Result<()>;
    fn end_events(&mut self) -> io::Result<()>;
    fn snapshot(&mut self, snapshot: &v1::Snapshot) -> io::Result<()>;
    fn finalize(&mut self, node: &NodeIdHex, finalize: &v1::Finalize) -> io::Result<()>;
}

/// The in-memory [`Writer`], with the events file being written held until it ends.
pub(crate) struct InMemory {
    pub(crate) writer: Writer,
    events: Option<(NodeIdHex, Vec<v1::EventRecord>)>,
}

impl InMemory {
    pub(crate) fn new(writer: Writer) -> Self {
        InMemory {
            writer,
            events: None,
        }
    }
}

impl Out for InMemory {
    fn boot(&mut self, identity: &v1::Identity) -> io::Result<()> {
        self.writer.boot(identity);
        Ok(())
    }
    fn begin_events(&mut self, node: &NodeIdHex) -> io::Result<()> {
        self.end_events()?;
        self.events = Some((node.clone(), Vec::new()));
        Ok(())
    }
    fn event(&mut self, record: &v1::EventRecord) -> io::Result<()> {
        match &mut self.events {
            Some((_, batch)) => {
                batch.push(record.clone());
                Ok(())
            }
            None => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "no events file is open",
            )),
        }
    }
    fn end_events(&mut self) -> io::Result<()> {
        if let Some((node, batch)) = self.events.take() {
            self.writer.events(&node, &batch);
        }
        Ok(())
    }
    fn snapshot(&mut self, snapshot: &v1::Snapshot) -> io::Result<()> {
        self.writer.snapshot(snapshot);
        Ok(())
    }
    fn finalize(&mut self, node: &NodeIdHex, finalize: &v1::Finalize) -> io::Result<()> {
        self.writer.finalize(node, finalize);
        Ok(())
    }
}

impl Out for StreamWriter {
    fn boot(&mut self, identity: &v1::Identity) -> io::Result<()> {
        StreamWriter::boot(self, identity).map(drop)
    }
    fn begin_events(&mut self, node: &NodeIdHex) -> io::Result<()> {
        StreamWriter::begin_events(self, node).map(drop)
    }
    fn event(&mut self, record: &v1::EventRecord) -> io::Result<()> {
        StreamWriter::event(self, record).map(drop)
    }
    fn end_events(&mut self) -> io::Result<()> {
        StreamWriter::end_events(self).map(drop)
    }
    fn snapshot(&mut self, snapshot: &v1::Snapshot) -> io::Result<()> {
        StreamWriter::snapshot(self, snapshot).map(drop)
    }
    fn finalize(&mut self, node: &NodeIdHex, finalize: &v1::Finalize) -> io::Result<()> {
        StreamWriter::finalize(self, node, finalize).map(drop)
    }
}

/// What the pass read before writing: the simulator's manifest, the run id and the nodes.
pub(crate) struct Read {
    manifest: Option<Object>,
    pub(crate) run_id: String,
    nodes: Vec<Node>,
}

impl Upgrader<'_> {
    /// The writer the upgrade names in the manifest.
    pub(crate) fn bundle_writer() -> v1::BundleWriter {
        v1::BundleWriter::new(v1::WriterKind::Sim, WRITER_NAME, env!("CARGO_PKG_VERSION"))
    }

    /// The first half of the pass: scans the directory, reads every boot record (the run id may
    /// come from one, and node ids come from them) and derives the nodes.
    pub(crate) fn read(&mut self) -> io::Result<Read> {
        let Scanned { manifest, dirs } = self.scan()?;
        let mut boots: Vec<Vec<(String, Object)>> = Vec::new();
        for dir in &dirs {
            let mut read = Vec::new();
            for (_, rel) in &dir.boots {
                if let Some(obj) = self.read_object(rel) {
                    read.push((rel.clone(), obj));
                }
            }
            boots.push(read);
        }
        let run_id = self.run_id(manifest.as_ref(), &boots)?;
        let mut nodes = Vec::new();
        for (dir, boots) in dirs.into_iter().zip(boots) {
            nodes.push(self.node(dir, boots, &run_id));
        }
        Ok(Read {
            manifest,
            run_id,
            nodes,
        })
    }

    /// The second half: every node's records written to `out`, and the manifest's extra keys
    /// (the simulator's manifest keys the contract does not know), which the caller gives the
    /// writer before it finishes.
    pub(crate) fn write(&mut self, read: &Read, out: &mut dyn Out) -> io::Result<Extra> {
        for node in &read.nodes {
            self.write_node(node, &read.run_id, out)?;
        }
        let extra = self.manifest_extra(read.manifest.as_ref(), &read.run_id, read.nodes.len());
        Ok(Extra(extra.into_iter().collect()))
    }

    /// After the writer finished: its problems located in the simulator's directory, the
    /// manifest's unknown keys listed, and the list sorted.
    pub(crate) fn close(
        mut self,
        read: &Read,
        problems: Vec<Problem>,
        manifest: &v1::Manifest,
    ) -> Vec<Problem> {
        // The writer names a node by the id it posted under; the simulator's directory names it.
        let prefix = format!("{}/", read.run_id);
        for mut problem in problems {
            let id = problem.location.file.strip_prefix(&prefix).unwrap_or("");
            if let Some(node) = read.nodes.iter().find(|n| n.id.to_string() == id) {
                problem.location = Location::file(&node.dir.name);
            }
            self.problems.push(problem);
        }
        if !manifest.extra.is_empty() {
            let value =
                serde_json::to_value(manifest).expect("OK because contract types always serialize");
            self.report_unknown(
                &at(layout::MANIFEST, Some(0), ""),
                RecordKind::Manifest,
                "manifest",
                &value,
                None,
            );
        }
        self.problems
            .sort_by(|a, b| (&a.location, &a.message).cmp(&(&b.location, &b.message)));
        self.problems
    }

    /// The pass into memory.
    pub(crate) fn run(mut self) -> io::Result<Upgraded> {
        let read = self.read()?;
        let mut out = InMemory::new(Writer::new(read.run_id.clone(), Self::bundle_writer()));
        let extra = self.write(&read, &mut out)?;
        out.end_events()?;
        out.writer.manifest_extra(extra);
        let finished = out.writer.finish();
        let problems = self.close(&read, finished.problems, &finished.manifest);
        Ok(Upgraded {
            contents: finished.contents,
            manifest: finished.manifest,
            problems,
        })
    }

    /// The pass written to disk as it goes, through a [`StreamWriter`] that `open` makes for the
    /// run id.
    pub(crate) fn run_to(
        mut self,
        open: impl FnOnce(&str, v1::BundleWriter) -> io::Result<StreamWriter>,
    ) -> Result<Written, Failed> {
        let read = self.read().map_err(Failed::Input)?;
        let mut out = open(&read.run_id, Self::bundle_writer()).map_err(Failed::Output)?;
        let extra = self.write(&read, &mut out).map_err(Failed::Output)?;
        out.manifest_extra(extra);
        let mut written = out.finish().map_err(Failed::Output)?;
        let problems = std::mem::take(&mut written.problems);
        written.problems = self.close(&read, problems, &written.manifest);
        Ok(written)
    }

    /// A JSON object file of the simulator's directory; anything else is listed.
    pub(crate) fn read_object(&mut self, rel: &str) -> Option<Object> {
        match read_json(&self.root.join(rel), MAX_FILE_BYTES) {
            Ok(Value::Object(m)) => Some(m),
            Ok(other) => {
                self.note(
                    ProblemKind::Shape,
                    Location::file(rel),
                    format!("not a JSON object ({}); skipped", quote(&other)),
                );
                None
            }
            Err((kind, why)) => {
                self.note(kind, Location::file(rel), format!("{why}; skipped"));
                None
            }
        }
    }

    pub(crate) fn write_node(
        &mut self,
        node: &Node,
        run_id: &str,
        out: &mut dyn Out,
    ) -> io::Result<()> {
        let hex = node.id.to_hex();
        // Boots oldest first: the writer makes the last one `boot.json`.
        for identity in &node.identities {
            if self.fits(&node.dir.name, "boot", identity) {
                out.boot(identity)?;
            }
        }
        if node.identities.is_empty() {
            self.note(
                ProblemKind::Layout,
                Location::file(&node.dir.name),
                "no boot record that fits the contract: no boot.json written, and its snapshots embed \
                 an identity with `process_start_unix_ms` 0",
            );
        }
        for rel in &node.dir.events {
            self.events_file(node, rel, out)?;
        }
        for (index, rel) in node.dir.snapshots.iter().enumerate() {
            if let Some(snapshot) = self.snapshot(node, rel, index, run_id)
                && self.fits(rel, "snapshot", &snapshot)
            {
                out.snapshot(&snapshot)?;
            }
        }
        // Finalizes oldest first: the writer makes the last one `finalize.json`.
        for (_, rel) in &node.dir.finalizes {
            if let Some(finalize) = self.finalize(rel)
                && self.fits(rel, "finalize", &finalize)
            {
                out.finalize(&hex, &finalize)?;
            }
        }
        Ok(())
    }

    /// Whether a record read from `rel` is within the per-file limit once written; one that is
    /// not is listed and left out.
    pub(crate) fn fits(&mut self, rel: &str, what: &str, record: &impl serde::Serialize) -> bool {
        let value =
            serde_json::to_value(record).expect("OK because contract types always serialize");
        // Pretty JSON and the file's final newline.
        let size = crate::size::pretty_size(&value).bytes + 1;
        if size <= self.max_file_bytes {
            return true;
        }
        self.note(
            ProblemKind::Layout,
            Location::file(rel),
            format!(
                "a {what} record of {size} bytes once written, over the per-file limit of {} \
                 bytes; left out",
                self.max_file_bytes
            ),
        );
        false
    }

    /// The bytes of a file of the simulator's directory within the read cap; anything else is
    /// listed.
    pub(crate) fn read_bytes(&mut self, rel: &str) -> Option<Vec<u8>> {
        match read_limited(&self.root.join(rel), MAX_FILE_BYTES) {
            Ok(Some(bytes)) => Some(bytes),
            Ok(None) => {
                self.note(
                    ProblemKind::Read(ReadErrorKind::TooLarge),
                    Location::file(rel),
                    format!("larger than {MAX_FILE_BYTES} bytes; skipped"),
                );
                None
            }
            Err(e) => {
                self.note(
                    ProblemKind::Read(ReadErrorKind::Io),
                    Location::file(rel),
                    format!("unreadable ({e}); skipped"),
                );
                None
            }
        }
    }

    /// Validates `value` as a record of `kind` and parses it into its type.
    pub(crate) fn parse<T: DeserializeOwned>(
        &self,
        kind: RecordKind,
        value: &Value,
    ) -> Result<T, String> {
        let violations = self.validators.violations(kind, value);
        if !violations.is_empty() {
            return Err(describe(&violations));
        }
        serde_json::from_value(value.clone()).map_err(|e| e.to_string())
    }
}
