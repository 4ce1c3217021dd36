//! Building a bundle record by record: what the simulator writes, and what [`super::assemble`] fills
//! from the collector's staging tree.
//!
//! [`Writer::finish`] lays the files out ([`crate::layout`]) and derives `MANIFEST.json` from them
//! and nothing else: node labels from each node's latest boot record, counts from the files, the
//! finalize flag from the finalize files, plus the contract version this crate writes and the
//! writer's identity. Assembly from staging goes through the same function, so a bundle and its
//! manifest cannot disagree whichever path made them.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{BundleContents, pretty_json};
use crate::layout::{self, Encoding, FileKind, Role};
use crate::problem::{Location, Problem, ProblemKind};
use crate::v1::{
    BundleWriter, EventRecord, Finalize, Identity, Manifest, ManifestNode, Snapshot, VastaiRecord,
};
use crate::{CONTRACT_VERSION, Extra, NodeIdHex};

/// A bundle being written: add records per node, then [`Writer::finish`]. Holds every file in
/// memory until then; [`super::StreamWriter`] writes each file out as it is made.
///
/// What its manifest declares follows the one rule of `docs/collector.md` ("What the manifest
/// declares"): a writer declares the newest contract it can vouch for. Records added with the
/// typed methods are built with this crate's types, so their node declares [`CONTRACT_VERSION`];
/// files added as they are, with [`Writer::declare_from_records`] (collector assembly), declare
/// what their records prove, a lower bound of their writer's contract. The run declares the
/// oldest of its nodes'.
#[derive(Debug, Clone)]
pub struct Writer {
    plan: Plan<Vec<u8>>,
}

/// A finished bundle: its files, its manifest (also in the files as `MANIFEST.json`), and the
/// problems met while laying it out (labels and vast.ai kinds that had to be made safe, files
/// added twice).
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// Every file, `MANIFEST.json` included.
    pub contents: BundleContents,
    /// The manifest.
    pub manifest: Manifest,
    /// Names that were changed to be safe and files that replaced an earlier one.
    pub problems: Vec<Problem>,
}

/// What every bundle writer keeps while a bundle is written: the files of each node (their kind,
/// sequence number, encoding and a body `B`, the bytes themselves or where they were put), the
/// run's span and the problems met. [`Plan::finish`] lays the files out and derives the manifest,
/// the same for every writer, so their outputs are the same bytes.
#[derive(Debug, Clone)]
pub(super) struct Plan<B> {
    run_id: String,
    writer: BundleWriter,
    nodes: BTreeMap<String, NodeFiles<B>>,
    span: Option<(u64, u64)>,
    problems: Vec<Problem>,
    extra: Extra,
    /// How the records added with the typed methods are written.
    #[cfg_attr(not(feature = "proto"), allow(dead_code))]
    pub(super) encoding: Encoding,
    /// Whether files added as they are declare what their records prove (see
    /// [`Writer::declare_from_records`]).
    declare_from_records: bool,
}

/// One record file of a node.
#[derive(Debug, Clone)]
struct NodeFile<B> {
    kind: FileKind,
    seq: u64,
    encoding: Encoding,
    body: B,
}

#[derive(Debug, Clone)]
struct NodeFiles<B> {
    /// `role` and `stage_index` of the latest boot record, once there is one.
    boot: Option<(Option<String>, Option<u32>)>,
    files: Vec<NodeFile<B>>,
    /// Whether every file came from this crate's types (then the node wrote this contract version).
    typed: bool,
    /// The newest contract version the records of its files added as they are prove
    /// ([`crate::generation::proven`]); `None` while they prove nothing beyond 1.0.0.
    proven: Option<&'static str>,
}

impl<B> NodeFiles<B> {
    fn next_seq(&self, kind: &FileKind) -> u64 {
        self.files
            .iter()
            .filter(|f| f.kind == *kind)
            .map(|f| f.seq)
            .max()
            .unwrap_or(0)
            + 1
    }
}

/// A bundle laid out: every file but the manifest at its path (in no particular order), the
/// manifest, and the problems met.
pub(super) struct Laid<B> {
    pub(super) files: Vec<(String, B)>,
    pub(super) manifest: Manifest,
    pub(super) problems: Vec<Problem>,
}

impl<B> Plan<B> {
    pub(super) fn new(run_id: String, writer: BundleWriter) -> Self {
        Plan {
            run_id,
            writer,
            nodes: BTreeMap::new(),
            span: None,
            problems: Vec::new(),
            extra: Extra::default(),
            encoding: Encoding::Json,
            declare_from_records: false,
        }
    }

    pub(super) fn declare_from_records(&mut self) {
        self.declare_from_records = true;
    }

    /// Notes what a file added as it is proves of its node's contract generation, when the plan
    /// declares from records. A node already proven as new as any mark can be is not read again.
    pub(super) fn examine(
        &mut self,
        node: &str,
        kind: &FileKind,
        encoding: Encoding,
        bytes: &[u8],
    ) {
        if !self.declare_from_records || matches!(kind, FileKind::Vastai(_)) {
            return;
        }
        let n = self.node(node);
        if n.proven == Some(crate::generation::newest_mark()) {
            return;
        }
        let proven = crate::generation::proven_file(kind, encoding, bytes);
        n.proven = crate::generation::newer(n.proven, proven);
    }

    pub(super) fn run_id(&self) -> &str {
        &self.run_id
    }

    pub(super) fn manifest_extra(&mut self, extra: Extra) {
        self.extra.extend(extra.0);
    }

    pub(super) fn collector_span(&mut self, start_ms: u64, end_ms: u64) {
        self.span = Some(match self.span {
            Some((lo, hi)) => (lo.min(start_ms), hi.max(end_ms)),
            None => (start_ms, end_ms),
        });
    }

    /// Notes the boot record of a node (its role and stage index), added as its next boot file.
    pub(super) fn boot_seen(&mut self, identity: &Identity) {
        let n = self.node(&identity.node_id_hex.0);
        n.boot = Some((Some(identity.role.clone()), identity.stage_index));
    }

    /// A vast.ai kind that can name a file: ASCII letters, digits and `_`, anything else `_` (and
    /// listed).
    pub(super) fn vastai_kind(&mut self, node: &str, kind: &str) -> String {
        if layout::is_vastai_kind(kind) {
            return kind.to_owned();
        }
        let safe: String = kind
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let safe = if safe.is_empty() {
            "_".to_owned()
        } else {
            safe
        };
        self.problems.push(Problem::new(
            ProblemKind::Layout,
            Location::file(format!("{}/{node}", self.run_id)),
            format!("vast.ai kind {kind:?} cannot name a file, written as {safe:?}"),
        ));
        safe
    }

    /// Adds a file made from this crate's types as the node's next file of its kind.
    pub(super) fn push_typed(&mut self, node: &str, kind: FileKind, encoding: Encoding, body: B) {
        let n = self.node(node);
        let seq = n.next_seq(&kind);
        n.files.push(NodeFile {
            kind,
            seq,
            encoding,
            body,
        });
    }

    /// Adds a file as it is (see [`Writer::add_file_as`]); `boot` reads a boot file's role and
    /// stage index when it is the node's latest. Returns the body of the file it replaced.
    pub(super) fn push_file(
        &mut self,
        node: &str,
        kind: FileKind,
        seq: Option<u64>,
        encoding: Encoding,
        body: B,
        boot: impl FnOnce() -> (Option<String>, Option<u32>),
    ) -> Option<B> {
        let run_id = self.run_id.clone();
        let n = self.node(node);
        let seq = seq.unwrap_or_else(|| n.next_seq(&kind));
        let mut replaced = None;
        if let Some(at) = n.files.iter().position(|f| f.kind == kind && f.seq == seq) {
            replaced = Some(n.files.remove(at).body);
            self.problems.push(Problem::new(
                ProblemKind::Layout,
                Location::file(format!("{run_id}/{node}")),
                format!(
                    "{} file number {seq} added twice; the later one is kept",
                    kind.staged_stem()
                ),
            ));
        }
        let n = self.node(node);
        if kind == FileKind::Boot
            && n.files
                .iter()
                .all(|f| f.kind != FileKind::Boot || f.seq < seq)
        {
            n.boot = Some(boot());
        }
        n.typed = false;
        n.files.push(NodeFile {
            kind,
            seq,
            encoding,
            body,
        });
        replaced
    }

    fn node(&mut self, node: &str) -> &mut NodeFiles<B> {
        self.nodes
            .entry(node.to_owned())
            .or_insert_with(|| NodeFiles {
                boot: None,
                files: Vec::new(),
                typed: true,
                proven: None,
            })
    }

    /// A record's file bytes in the writer's encoding. A record the binary form cannot hold (one
    /// nested past the codec's depth cap) is written as JSON instead, and listed in the problems.
    pub(super) fn encode(
        &mut self,
        node: &str,
        kind: &FileKind,
        value: &serde_json::Value,
    ) -> (Encoding, Vec<u8>) {
        #[cfg(feature = "proto")]
        if self.encoding == Encoding::Protobuf {
            match crate::binary::encode_value(Encoding::Protobuf, kind.record_kind(), value) {
                Ok(bytes) => return (Encoding::Protobuf, bytes),
                Err(e) => self.problems.push(Problem::new(
                    ProblemKind::Encoding,
                    Location::file(format!("{}/{node}", self.run_id)),
                    format!("{e}; the {} file is written as JSON", kind.staged_stem()),
                )),
            }
        }
        let _ = (node, kind);
        (Encoding::Json, pretty_json(value))
    }

    /// Lays the files out and derives the manifest: the one function a manifest comes from.
    pub(super) fn finish(self) -> Laid<B> {
        let wanted: Vec<(String, String)> = self
            .nodes
            .iter()
            .map(|(id, n)| {
                let label = match &n.boot {
                    Some((role, stage)) => layout::node_label(role.as_deref(), *stage, id),
                    None if n
                        .files
                        .iter()
                        .all(|f| matches!(f.kind, FileKind::Vastai(_))) =>
                    {
                        id.clone()
                    }
                    None => layout::node_label(None, None, id),
                };
                (label, id.clone())
            })
            .collect();
        let (labels, renamed) = layout::assign_labels(&wanted);
        let mut problems = self.problems;
        problems.extend(renamed.into_iter().map(|(id, wanted, written)| {
            Problem::new(
                ProblemKind::Layout,
                Location::file(format!("{}/{id}", self.run_id)),
                format!("label {wanted:?} is not a safe directory name, written as {written:?}"),
            )
        }));
        let mut files = Vec::new();
        let mut entries = Vec::new();
        // The run's contract version: this crate's, or with declarations from records the oldest
        // generation of a node that wrote contract records (none when one is a 1.0.0 writer).
        let mut run_version = Some(CONTRACT_VERSION.to_owned());
        let mut first = true;
        for ((id, node), label) in self.nodes.into_iter().zip(labels) {
            let entry = manifest_node(&id, &label, &node, self.declare_from_records);
            if self.declare_from_records && !only_vastai(&node) {
                let version = entry.contract_version.clone();
                run_version = match (first, run_version, version) {
                    (true, _, v) => v,
                    (false, Some(a), Some(b)) => {
                        Some(if crate::generation::cmp_versions(&b, &a).is_lt() {
                            b
                        } else {
                            a
                        })
                    }
                    _ => None,
                };
                first = false;
            }
            entries.push(entry);
            place(&mut files, &label, node.files);
        }
        if self.declare_from_records && first {
            // No node wrote contract records: nothing proves a generation.
            run_version = None;
        }
        entries.sort_by(|a, b| (&a.label, &a.node_id_hex.0).cmp(&(&b.label, &b.node_id_hex.0)));
        let mut manifest = Manifest::new(self.run_id.clone());
        manifest.run_start_collector_ms = self.span.map(|(lo, _)| lo);
        manifest.run_end_collector_ms = self.span.map(|(_, hi)| hi);
        manifest.finalize_received = entries.iter().any(|n| n.finalize_recorded);
        manifest.nodes = entries;
        manifest.contract_version = run_version;
        manifest.writer = Some(self.writer);
        manifest.extra.extend(self.extra.0);
        Laid {
            files,
            manifest,
            problems,
        }
    }
}

impl Writer {
    /// A bundle for `run_id` written by `writer` (the program's kind, name and version). The
    /// manifest declares the contract version of this crate, [`CONTRACT_VERSION`].
    pub fn new(run_id: impl Into<String>, writer: BundleWriter) -> Self {
        Writer {
            plan: Plan::new(run_id.into(), writer),
        }
    }

    /// Writes the records added from here on with the typed methods ([`Writer::boot`],
    /// [`Writer::events`], …) in `encoding`: JSON (the default) or the binary form, `.pb` files
    /// (`docs/protobuf.md`). `MANIFEST.json` is always JSON.
    #[cfg(feature = "proto")]
    pub fn encoding(&mut self, encoding: Encoding) -> &mut Self {
        self.plan.encoding = encoding;
        self
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        self.plan.run_id()
    }

    /// Makes the manifest declare, for files added as they are ([`Writer::add_file`]), what their
    /// records prove rather than this crate's contract version: each such node the newest
    /// generation its records prove ([`crate::generation::declared`]; none for a node whose
    /// records prove nothing beyond 1.0.0), and the run the oldest of its nodes' (none when one
    /// declares none). How collector assembly declares a run (`docs/collector.md`).
    pub fn declare_from_records(&mut self) -> &mut Self {
        self.plan.declare_from_records();
        self
    }

    /// Adds a boot record of the node it names; the last one added is the node's `boot.json`.
    pub fn boot(&mut self, identity: &Identity) -> &mut Self {
        let node = identity.node_id_hex.0.clone();
        self.typed(&node, FileKind::Boot, identity);
        self.plan.boot_seen(identity);
        self
    }

    /// Adds one posted batch of event records of `node` (`events/events-NNNNNN.json`).
    pub fn events(&mut self, node: &NodeIdHex, batch: &[EventRecord]) -> &mut Self {
        self.typed(&node.0, FileKind::Events, &batch);
        self
    }

    /// Adds a snapshot of the node it names.
    pub fn snapshot(&mut self, snapshot: &Snapshot) -> &mut Self {
        let node = snapshot.identity.node_id_hex.0.clone();
        self.typed(&node, FileKind::Snapshot, snapshot);
        self
    }

    /// Adds a finalize record of `node`; the last one added is the node's `finalize.json`.
    pub fn finalize(&mut self, node: &NodeIdHex, finalize: &Finalize) -> &mut Self {
        self.typed(&node.0, FileKind::Finalize, finalize);
        self
    }

    /// Adds a vast.ai monitoring record posted under `node` (a node id or a synthetic producer id
    /// such as `vastai-external`) as a record of the vast.ai `kind` (`instance`, `sample`, `logs`,
    /// `lifecycle`). A kind is ASCII letters, digits and `_`; any other character is written as
    /// `_` (an empty kind as `_`) and listed in [`Finished::problems`].
    pub fn vastai(&mut self, node: &str, kind: &str, record: &VastaiRecord) -> &mut Self {
        let safe = self.plan.vastai_kind(node, kind);
        self.typed(node, FileKind::Vastai(safe), record);
        self
    }

    /// The run's time span on the collector's clock, in ms since the epoch
    /// (`run_start_collector_ms`, `run_end_collector_ms`). Widened by every call.
    pub fn collector_span(&mut self, start_ms: u64, end_ms: u64) -> &mut Self {
        self.plan.collector_span(start_ms, end_ms);
        self
    }

    /// Keys the manifest carries besides those the writer derives, kept as its unknown keys
    /// (a key the manifest's type knows is written as derived). Added to by every call.
    pub fn manifest_extra(&mut self, extra: Extra) -> &mut Self {
        self.plan.manifest_extra(extra);
        self
    }

    /// Adds a file of `node` as it is, with its staging sequence number (the next one when
    /// `None`): how assembly copies what nodes posted. A boot file's `role` and `stage_index` are
    /// read leniently, so a record that is wrong elsewhere still names its node. A file with the
    /// kind and sequence number of one already added replaces it, and is listed in
    /// [`Finished::problems`].
    pub fn add_file(&mut self, node: &str, kind: FileKind, seq: Option<u64>, bytes: Vec<u8>) {
        self.add_file_as(node, kind, seq, Encoding::Json, bytes)
    }

    /// [`Writer::add_file`] for a file in `encoding`, which it keeps (a binary file posted as
    /// protobuf stays a `.pb` file).
    pub fn add_file_as(
        &mut self,
        node: &str,
        kind: FileKind,
        seq: Option<u64>,
        encoding: Encoding,
        bytes: Vec<u8>,
    ) {
        let boot = boot_identity(encoding, &bytes);
        self.plan.examine(node, &kind, encoding, &bytes);
        self.plan
            .push_file(node, kind, seq, encoding, bytes, move || boot);
    }

    fn typed(&mut self, node: &str, kind: FileKind, record: &impl Serialize) {
        // Record files are written as the collector writes them: keys in alphabetical order.
        let value =
            serde_json::to_value(record).expect("OK because contract types always serialize");
        let (encoding, bytes) = self.plan.encode(node, &kind, &value);
        self.plan.push_typed(node, kind, encoding, bytes);
    }

    /// Lays the files out and derives the manifest.
    pub fn finish(self) -> Finished {
        let laid = self.plan.finish();
        let mut contents = BundleContents::new(laid.manifest.run_id.clone());
        contents.files.extend(laid.files);
        contents.insert_json(layout::MANIFEST, &laid.manifest);
        Finished {
            contents,
            manifest: laid.manifest,
            problems: laid.problems,
        }
    }

    /// Finishes the bundle and writes it as `parent/<run_id>/…` (see [`super::output::write_dir`]).
    pub fn write_dir(self, parent: &Path) -> io::Result<(PathBuf, Manifest)> {
        let done = self.finish();
        let dir = super::output::write_dir(&done.contents, parent)?;
        Ok((dir, done.manifest))
    }

    /// Finishes the bundle and writes it as a deterministic `.tar.gz` (see
    /// [`super::output::write_tar_gz`]).
    pub fn write_tar_gz(self, out: impl Write) -> io::Result<Manifest> {
        let done = self.finish();
        super::output::write_tar_gz(&done.contents, out)?;
        Ok(done.manifest)
    }
}

/// Whether a node posted vast.ai records only (a monitoring producer, which declares no contract
/// version of its own).
fn only_vastai<B>(node: &NodeFiles<B>) -> bool {
    node.files
        .iter()
        .all(|f| matches!(f.kind, FileKind::Vastai(_)))
}

/// The manifest entry of a node, from its files; with `from_records`, a node with files added as
/// they are declares what their records prove ([`crate::generation::declared`]).
fn manifest_node<B>(
    id: &str,
    label: &str,
    node: &NodeFiles<B>,
    from_records: bool,
) -> ManifestNode {
    let count =
        |f: &dyn Fn(&FileKind) -> bool| node.files.iter().filter(|n| f(&n.kind)).count() as u64;
    let mut entry = ManifestNode::new(NodeIdHex(id.to_owned()), label);
    if let Some((role, stage_index)) = &node.boot {
        entry.role = role.clone();
        entry.stage_index = *stage_index;
    }
    entry.boot_recorded = node.boot.is_some();
    entry.event_batches = count(&|k| *k == FileKind::Events);
    entry.snapshots = count(&|k| *k == FileKind::Snapshot);
    entry.finalize_recorded = count(&|k| *k == FileKind::Finalize) > 0;
    entry.vastai_records = Some(count(&|k| matches!(k, FileKind::Vastai(_))));
    if !only_vastai(node) {
        if node.typed {
            entry.contract_version = Some(CONTRACT_VERSION.to_owned());
        } else if from_records {
            entry.contract_version = crate::generation::declared(node.proven);
        }
    }
    entry
}

/// Puts a node's files at their bundle paths: the boot and finalize file with the highest sequence
/// number as `boot.json` / `finalize.json`, the others numbered.
fn place<B>(out: &mut Vec<(String, B)>, label: &str, mut files: Vec<NodeFile<B>>) {
    files.sort_by(|a, b| (&a.kind, a.seq).cmp(&(&b.kind, b.seq)));
    let latest = |kind: &FileKind| {
        files
            .iter()
            .filter(|f| f.kind == *kind)
            .map(|f| f.seq)
            .max()
    };
    let (last_boot, last_finalize) = (latest(&FileKind::Boot), latest(&FileKind::Finalize));
    for NodeFile {
        kind,
        seq,
        encoding,
        body,
    } in files
    {
        let is_latest = match kind {
            FileKind::Boot => Some(seq) == last_boot,
            FileKind::Finalize => Some(seq) == last_finalize,
            _ => false,
        };
        let role = if is_latest {
            Role::Latest(kind)
        } else {
            Role::Numbered(kind, seq)
        };
        out.push((layout::bundle_path_as(label, &role, encoding), body));
    }
}

/// `role` and `stage_index` of a boot file, read leniently from its JSON (decoded first when it is
/// binary).
pub(super) fn boot_identity(encoding: Encoding, bytes: &[u8]) -> (Option<String>, Option<u32>) {
    let Ok(text) = crate::binary::json_text(encoding, crate::v1::RecordKind::Boot, bytes) else {
        return (None, None);
    };
    let Ok(serde_json::Value::Object(map)) = serde_json::from_slice::<serde_json::Value>(&text)
    else {
        return (None, None);
    };
    let role = map.get("role").and_then(|v| v.as_str()).map(str::to_owned);
    let stage_index = map
        .get("stage_index")
        .and_then(|v| v.as_u64())
        .and_then(|i| u32::try_from(i).ok());
    (role, stage_index)
}
