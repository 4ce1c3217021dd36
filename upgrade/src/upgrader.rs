//! The upgrade pass: reads the boot records and the run id, derives the nodes, maps every record
//! through the [`Writer`] (which lays the files out and derives the manifest), and sorts the list
//! of what could not be mapped.

use std::collections::HashMap;
use std::io;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;

use diagwire::bundle::Writer;
use diagwire::layout;
use diagwire::v1::{self, RecordKind};
use diagwire::validate::Validators;
use diagwire::{Location, NodeId, Problem, ProblemKind};

use crate::input::MAX_FILE_BYTES;
use crate::input::{read_json, read_limited};
use crate::located::{at, describe, quote};
use crate::nodes::Node;
use crate::nodes::Scanned;
use crate::{Object, Upgraded, WRITER_NAME};
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

impl Upgrader<'_> {
    pub(crate) fn run(mut self) -> io::Result<Upgraded> {
        let Scanned { manifest, dirs } = self.scan()?;

        // Read every boot record first: the run id may come from one, and node ids come from it.
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

        let mut writer = Writer::new(
            run_id.clone(),
            v1::BundleWriter::new(v1::WriterKind::Sim, WRITER_NAME, env!("CARGO_PKG_VERSION")),
        );
        for node in &nodes {
            self.write_node(node, &run_id, &mut writer);
        }
        let mut finished = writer.finish();

        // The writer names a node by the id it posted under; the simulator's directory names it.
        let prefix = format!("{run_id}/");
        for mut problem in finished.problems {
            let id = problem.location.file.strip_prefix(&prefix).unwrap_or("");
            if let Some(node) = nodes.iter().find(|n| n.id.to_string() == id) {
                problem.location = Location::file(&node.dir.name);
            }
            self.problems.push(problem);
        }

        let extra = self.manifest_extra(manifest.as_ref(), &run_id, nodes.len());
        if !extra.is_empty() {
            finished.manifest.extra.extend(extra);
            finished
                .contents
                .insert_json(layout::MANIFEST, &finished.manifest);
            let value = serde_json::to_value(&finished.manifest)
                .expect("OK because contract types always serialize");
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
        Ok(Upgraded {
            contents: finished.contents,
            manifest: finished.manifest,
            problems: self.problems,
        })
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

    pub(crate) fn write_node(&mut self, node: &Node, run_id: &str, writer: &mut Writer) {
        let hex = node.id.to_hex();
        // Boots oldest first: the writer makes the last one `boot.json`.
        for identity in &node.identities {
            if self.fits(&node.dir.name, "boot", identity) {
                writer.boot(identity);
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
            self.events_file(node, rel, &mut |batch| {
                writer.events(&hex, batch);
            });
        }
        for (index, rel) in node.dir.snapshots.iter().enumerate() {
            if let Some(snapshot) = self.snapshot(node, rel, index, run_id) {
                if self.fits(rel, "snapshot", &snapshot) {
                    writer.snapshot(&snapshot);
                }
            }
        }
        // Finalizes oldest first: the writer makes the last one `finalize.json`.
        for (_, rel) in &node.dir.finalizes {
            if let Some(finalize) = self.finalize(rel) {
                if self.fits(rel, "finalize", &finalize) {
                    writer.finalize(&hex, &finalize);
                }
            }
        }
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
