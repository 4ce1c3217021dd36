//! A whole bundle: every record file, then the parts against each other.
//!
//! Files are read one at a time from [`BundleReader::stream`], so memory holds one record and what
//! is remembered per node (which files exist, the latest boot record). After the last file:
//!
//! * the manifest against the files: every listed node has its directory, the counts and flags
//!   match the files (a file that is present but could not be read counts as present: its read
//!   problem says why), every node directory is listed, `finalize_received` matches;
//! * the manifest against the boot records: node id, role and stage index of each node, and the
//!   run id of each boot record against the manifest's (a run directory named otherwise than the
//!   manifest's run id is a note, not a problem: the manifest is the bundle's identity, and people
//!   rename the bundles they download);
//! * each directory's name against the label the layout gives its boot record;
//! * the sequence numbers of each node's numbered files run from 1 without a gap (each missing
//!   file is named);
//! * every file outside the layout is reported, with the canonical name when it only spells a
//!   sequence number differently; a body the collector quarantined (`@quarantine/`) is one problem,
//!   "quarantined at ingest" with the reason its `.why.json` records ([`crate::quarantine`]).

use crate::validate::file::Body;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use super::{Options, Report, Validator};
use crate::bundle::read::{BundleReader, Limits, ReadError};
use crate::bundle::records::{Decoded, Verdict};
use crate::frame::Whole;
use crate::layout::{self, Encoding, FileKind, Role};
use crate::problem::{Location, Problem, ProblemKind};
use crate::quarantine::Pairing;
use crate::v1::{Identity, Manifest, Record, RecordKind};
use crate::validate::Validators;

/// Progress of a bundle check: called with (bytes of the bundle read, its size in bytes).
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

/// Opens a bundle, for a caller that wants to know it opens before checking it.
pub fn open(path: &Path, limits: Limits) -> Result<BundleReader, ReadError> {
    BundleReader::open(path, limits)
}

/// Checks every file of an opened bundle and the bundle as a whole, with the default options.
pub fn validate_bundle(
    validators: &Validators,
    reader: &mut BundleReader,
    progress: Progress<'_>,
) -> Report {
    let mut report = Report::default();
    Validator::new(validators, Options::default()).validate_bundle(reader, progress, &mut report);
    report
}

/// The former name of [`validate_bundle`], kept for one release.
#[deprecated(note = "renamed to diagwire::validate::bundle::validate_bundle")]
pub fn check_bundle(
    validators: &Validators,
    reader: &mut BundleReader,
    progress: Progress<'_>,
) -> Report {
    validate_bundle(validators, reader, progress)
}

/// What one node directory holds, as far as the checks need it.
#[derive(Debug, Default)]
struct NodeSeen {
    /// `boot.json` is there (read or not).
    boot: bool,
    /// Its record, when it is valid.
    boot_record: Option<(String, Identity)>,
    /// `finalize.json` is there.
    finalize: bool,
    /// The sequence numbers of the numbered files, by kind, with the encoding of each.
    numbered: BTreeMap<FileKind, BTreeMap<u64, Encoding>>,
}

impl NodeSeen {
    fn count(&self, f: impl Fn(&FileKind) -> bool) -> u64 {
        self.numbered
            .iter()
            .filter(|(k, _)| f(k))
            .map(|(_, s)| s.len() as u64)
            .sum()
    }
}

/// What the whole bundle holds.
#[derive(Debug, Default)]
struct Seen {
    /// How a path inside the run directory is shown: the run directory's location and the
    /// separator (`/` on disk; the archive's inner run directory path after `!`).
    prefix: Option<String>,
    /// `MANIFEST.json` is there (read or not).
    manifest_present: bool,
    manifest: Option<(String, Manifest)>,
    nodes: BTreeMap<String, NodeSeen>,
    /// The first file seen for each place of the layout outside the numbered files (node and
    /// role), so a record written twice, once as JSON and once as protobuf, is found; a numbered
    /// file's first is known from `numbered`, which keeps the encoding of each sequence number, so
    /// a bundle of many files costs no path per file here.
    first: HashMap<(Option<String>, Role), String>,
}

impl Seen {
    /// Notes a file that exists at `rel` in the run directory, read or not. Returns where it is in
    /// the layout and, when another file already holds the same record (the same name with the
    /// other extension), that file's path.
    fn exists(&mut self, rel: &str) -> (layout::BundlePath, Option<String>) {
        let at = layout::parse_bundle_path(rel);
        let mut twice = None;
        if let (Some(node), Role::Numbered(kind, seq)) = (&at.node, &at.role) {
            let first = self
                .nodes
                .get(node)
                .and_then(|n| n.numbered.get(kind))
                .and_then(|seqs| seqs.get(seq));
            if let Some(encoding) = first.filter(|e| **e != at.encoding) {
                twice = Some(layout::bundle_path_as(node, &at.role, *encoding));
            }
        } else if at.role != Role::Unknown {
            let key = (at.node.clone(), at.role.clone());
            match self.first.get(&key) {
                Some(first) if first != rel => twice = Some(first.clone()),
                Some(_) => {}
                None => {
                    self.first.insert(key, rel.to_owned());
                }
            }
        }
        if at.role == Role::Manifest {
            self.manifest_present = true;
        }
        if let Some(node) = &at.node {
            let n = self.nodes.entry(node.clone()).or_default();
            match &at.role {
                Role::Latest(FileKind::Boot) => n.boot = true,
                Role::Latest(FileKind::Finalize) => n.finalize = true,
                Role::Numbered(kind, seq) => {
                    n.numbered
                        .entry(kind.clone())
                        .or_default()
                        .entry(*seq)
                        .or_insert(at.encoding);
                }
                _ => {}
            }
        }
        (at, twice)
    }

    fn shown(&self, rel: &str) -> String {
        match &self.prefix {
            Some(p) => format!("{p}{rel}"),
            None => rel.to_owned(),
        }
    }
}

impl Validator<'_> {
    /// Checks every file of an opened bundle and the bundle as a whole. Reading goes on after a
    /// bad file or entry, so every problem is found (and kept up to the caps of the options).
    pub fn validate_bundle(
        &mut self,
        reader: &mut BundleReader,
        progress: Progress<'_>,
        report: &mut Report,
    ) {
        let mut verdict = BundleVerdict::new(self.validators, self.options);
        verdict.begin_with(reader);
        let mut stream = reader.stream();
        while let Some(item) = stream.next() {
            let (done, size) = stream.progress();
            progress(done, size);
            match item {
                Ok(file) => {
                    let size = file.size;
                    let (path, location) = (file.path.clone(), file.location.clone());
                    verdict.take_file(&path, &location, Some(size), file.contents(), None, None);
                }
                Err(e) => verdict.take_entry(e),
            }
        }
        drop(stream);
        verdict.end();
        report.merge(verdict.report);
    }

    /// The former name of [`Validator::validate_bundle`], kept for one release.
    #[deprecated(note = "renamed to Validator::validate_bundle")]
    pub fn check_bundle(
        &mut self,
        reader: &mut BundleReader,
        progress: Progress<'_>,
        report: &mut Report,
    ) {
        self.validate_bundle(reader, progress, report)
    }
}

/// A bundle's validation as its files go by, the one computation of what is wrong with a bundle:
/// [`Validator::validate_bundle`] (`diagwire validate`) feeds it from the reader's stream, and the
/// record walk of `summary` and `check` feeds it in the same pass that decodes their records
/// ([`crate::bundle::records::Walk::verdict`]), so the three report the same problems, counted
/// alike, reading the bundle once.
pub struct BundleVerdict<'v> {
    validator: Validator<'v>,
    dir_name: String,
    seen: Seen,
    quarantine: Pairing,
    report: Report,
}

impl<'v> BundleVerdict<'v> {
    /// A verdict checking records with `validators`, capped as `options` say.
    pub fn new(validators: &'v Validators, options: Options) -> Self {
        BundleVerdict {
            validator: Validator::new(validators, options),
            dir_name: String::new(),
            seen: Seen::default(),
            quarantine: Pairing::default(),
            report: Report::default(),
        }
    }

    /// What it found so far (everything, once the walk has ended).
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// What it found.
    pub fn into_report(self) -> Report {
        self.report
    }

    fn begin_with(&mut self, reader: &BundleReader) {
        self.dir_name = reader.dir_name().to_owned();
    }

    /// An entry the reader could not yield.
    fn take_entry(&mut self, e: ReadError) {
        let options = self.validator.options;
        if let Some(rel) = &e.path {
            let (_, twice) = self.seen.exists(rel);
            if let Some(first) = twice {
                self.report
                    .push(&options, written_twice(&e.location, &first));
            }
        }
        self.report.push(&options, e.into());
    }

    /// A file of the run directory at `rel`, shown as `location`, of `size` bytes when known;
    /// with `decoded`, a JSON record file read in one typed pass keeps its records there.
    /// `ahead` are its records as the record walk decoded them from these bytes, with the kind
    /// they were read as: they stand for the typed pass of a JSON file of that kind only.
    fn take_file(
        &mut self,
        rel: &str,
        location: &str,
        size: Option<u64>,
        file: &[u8],
        mut decoded: Option<&mut Option<Vec<Whole>>>,
        ahead: Option<(RecordKind, Vec<Whole>)>,
    ) {
        let options = self.validator.options;
        let (seen, report) = (&mut self.seen, &mut self.report);
        if seen.prefix.is_none() {
            if let Some(p) = location.strip_suffix(rel) {
                seen.prefix = Some(p.to_owned());
            }
        }
        if let Some(found) = self.quarantine.take(rel, location, size, file) {
            for body in found {
                report.push(&options, body.problem());
            }
            return;
        }
        let (at, twice) = seen.exists(rel);
        if let Some(first) = twice {
            report.push(&options, written_twice(location, &first));
        }
        let Some(kind) = at.role.record_kind() else {
            report.push(
                &options,
                Problem::new(ProblemKind::Layout, Location::file(location), stray(rel)),
            );
            return;
        };
        let keep = matches!(at.role, Role::Manifest | Role::Latest(FileKind::Boot));
        if let (Some(slot), Some((of, records))) = (decoded.as_mut(), ahead) {
            if of == kind && at.encoding == Encoding::Json {
                **slot = Some(records);
            }
        }
        let checked = match at.encoding {
            Encoding::Json => self.validator.validate_reader_keep(
                location,
                kind,
                size,
                Body::Bytes(file),
                keep,
                decoded,
                report,
            ),
            Encoding::Protobuf => {
                self.validator
                    .check_binary(location, kind, &mut &file[..], keep, report)
            }
        };
        match (checked, at.node) {
            (Ok(Some(Record::Manifest(m))), _) => seen.manifest = Some((location.to_owned(), m)),
            (Ok(Some(Record::Boot(b))), Some(node)) => {
                if let Some(n) = seen.nodes.get_mut(&node) {
                    n.boot_record = Some((location.to_owned(), b));
                }
            }
            // A read error inside the file is yielded by the stream next.
            _ => {}
        }
    }

    /// The end of the bundle: the parts against each other.
    fn end(&mut self) {
        let options = self.validator.options;
        let (seen, report) = (&self.seen, &mut self.report);
        for body in std::mem::take(&mut self.quarantine).finish() {
            report.push(&options, body.problem());
        }
        let mut out = Vec::new();
        match &seen.manifest {
            Some((file, m)) => {
                manifest_against_files(file, m, seen, &mut out);
                if let Some(note) = renamed(file, m, &self.dir_name) {
                    report.notes.push(note);
                }
                manifest_against_boots(file, m, seen, &mut out);
            }
            None if !seen.manifest_present => out.push(Problem::new(
                ProblemKind::Manifest,
                Location::file(seen.shown(layout::MANIFEST)),
                "the bundle has no MANIFEST.json",
            )),
            // Its problems are reported already.
            None => {}
        }
        labels_against_boots(seen, &mut out);
        sequence_gaps(seen, &mut out);
        for p in out {
            report.push(&options, p);
        }
    }

    /// Runs `take` and returns the problems it kept.
    fn kept(&mut self, take: impl FnOnce(&mut Self)) -> Vec<Problem> {
        let before = self.report.problems.len();
        take(self);
        self.report.problems[before..].to_vec()
    }

    /// A file judged for the record walk: a JSON record file up to [`DECODED_BYTES`] keeps its
    /// records for the walk (the ones decoded `ahead` when they stand for its typed pass).
    fn judge_records(
        &mut self,
        path: &str,
        location: &str,
        bytes: &[u8],
        ahead: Option<(RecordKind, Vec<Whole>)>,
    ) -> (Vec<Problem>, Option<Decoded>) {
        if bytes.len() as u64 > DECODED_BYTES {
            return (self.file(path, location, bytes), None);
        }
        let size = Some(bytes.len() as u64);
        let mut decoded = None;
        let problems =
            self.kept(|v| v.take_file(path, location, size, bytes, Some(&mut decoded), ahead));
        (problems, decoded.map(Decoded::from_whole))
    }
}

impl Verdict for BundleVerdict<'_> {
    fn begin(&mut self, reader: &BundleReader) {
        self.begin_with(reader);
    }

    fn entry(&mut self, error: &ReadError) -> Vec<Problem> {
        self.kept(|v| v.take_entry(error.clone()))
    }

    fn file(&mut self, path: &str, location: &str, bytes: &[u8]) -> Vec<Problem> {
        let size = Some(bytes.len() as u64);
        self.kept(|v| v.take_file(path, location, size, bytes, None, None))
    }

    /// A JSON record file up to [`DECODED_BYTES`] that reads in one typed pass keeps its
    /// records for the walk, decoded on the verdict's thread.
    fn file_records(
        &mut self,
        path: &str,
        location: &str,
        bytes: &[u8],
    ) -> (Vec<Problem>, Option<Decoded>) {
        self.judge_records(path, location, bytes, None)
    }

    /// The records the walk decoded ahead are this file's own when the verdict reads the file
    /// as the same kind: they are taken as its one typed pass would have decoded them.
    fn file_decoded(
        &mut self,
        path: &str,
        location: &str,
        bytes: &[u8],
        kind: RecordKind,
        records: Decoded,
    ) -> (Vec<Problem>, Option<Decoded>) {
        self.judge_records(path, location, bytes, Some((kind, records.into_whole())))
    }

    fn finish(&mut self) -> (Vec<Problem>, usize) {
        let kept = self.kept(Self::end);
        let omitted = self.report.problem_count - self.report.problems.len();
        (kept, omitted)
    }
}

pub use crate::bundle::records::DECODED_BYTES;

/// A second file holding the record an earlier one holds.
fn written_twice(location: &str, first: &str) -> Problem {
    Problem::new(
        ProblemKind::Layout,
        Location::file(location),
        format!(
            "holds the same record as `{first}`: each record is written once, as JSON or as protobuf"
        ),
    )
}

/// Why a file that has no place in the layout is reported.
fn stray(rel: &str) -> String {
    let parts: Vec<&str> = rel.split('/').collect();
    if let [_, dir, name] = parts[..] {
        if let Some(canonical) = canonical_name(name) {
            let wanted_dir = layout::parse_staged_name(&canonical)
                .map(|(kind, _)| kind.dir())
                .unwrap_or_default();
            return if dir == wanted_dir {
                format!(
                    "not part of the bundle layout: the layout spells this name `{canonical}` (sequence numbers have six digits, more only when needed, and no sign)"
                )
            } else {
                format!("not part of the bundle layout: this file belongs in `{wanted_dir}/`")
            };
        }
    }
    match parts.len() {
        1 => "not part of the bundle layout: the run directory holds MANIFEST.json and one directory per node".into(),
        _ => "not part of the bundle layout: a node directory holds boot.json, finalize.json (or boot.pb, finalize.pb) and the folders boot/, events/, snapshots/, finalize/ and vastai/ of numbered files".into(),
    }
}

/// The canonical spelling of a numbered file name that spells its number differently
/// (`events-1.json` → `events-000001.json`), or of one that is canonical already.
fn canonical_name(name: &str) -> Option<String> {
    let (stem, digits) = name.strip_suffix(".json")?.rsplit_once('-')?;
    let digits = digits.strip_prefix('+').unwrap_or(digits);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let seq: u64 = digits.parse().ok()?;
    let canonical = format!("{stem}-{}.json", layout::format_seq(seq));
    layout::parse_staged_name(&canonical).map(|_| canonical)
}

/// Every way the manifest disagrees with the files: listed files that are missing, counts and
/// labels that differ, node directories the manifest does not list.
fn manifest_against_files(file: &str, m: &Manifest, seen: &Seen, out: &mut Vec<Problem>) {
    let mut problem = |pointer: String, message: String| {
        out.push(Problem::new(
            ProblemKind::Manifest,
            Location::record(file, 0, pointer),
            message,
        ));
    };
    let empty = NodeSeen::default();
    let mut listed = BTreeSet::new();
    for (i, node) in m.nodes.iter().enumerate() {
        let at = |field: &str| format!("/nodes/{i}/{field}");
        if !listed.insert(node.label.clone()) {
            problem(
                at("label"),
                format!("label `{}` is listed twice", node.label),
            );
        }
        let found = match seen.nodes.get(&node.label) {
            Some(f) => f,
            None => {
                problem(
                    at("label"),
                    format!(
                        "node `{}` is listed but its directory is missing",
                        node.label
                    ),
                );
                &empty
            }
        };
        let presence = |b: bool| if b { "present" } else { "missing" };
        if node.boot_recorded != found.boot {
            problem(
                at("boot_recorded"),
                format!(
                    "manifest says {}, `{}/boot.json` is {}",
                    node.boot_recorded,
                    node.label,
                    presence(found.boot)
                ),
            );
        }
        if node.finalize_recorded != found.finalize {
            problem(
                at("finalize_recorded"),
                format!(
                    "manifest says {}, `{}/finalize.json` is {}",
                    node.finalize_recorded,
                    node.label,
                    presence(found.finalize)
                ),
            );
        }
        let events = found.count(|k| *k == FileKind::Events);
        if node.event_batches != events {
            problem(
                at("event_batches"),
                format!(
                    "manifest says {} event batches, found {events} events files",
                    node.event_batches
                ),
            );
        }
        let snapshots = found.count(|k| *k == FileKind::Snapshot);
        if node.snapshots != snapshots {
            problem(
                at("snapshots"),
                format!(
                    "manifest says {} snapshots, found {snapshots} snapshot files",
                    node.snapshots
                ),
            );
        }
        if let Some(v) = node.vastai_records {
            let files = found.count(|k| matches!(k, FileKind::Vastai(_)));
            if v != files {
                problem(
                    at("vastai_records"),
                    format!("manifest says {v} vast.ai records, found {files} files"),
                );
            }
        }
    }
    for label in seen.nodes.keys() {
        if !listed.contains(label) {
            problem(
                "/nodes".into(),
                format!("node directory `{label}` is not listed in the manifest"),
            );
        }
    }
    let any_finalize = seen.nodes.values().any(|n| n.finalize);
    if m.finalize_received != any_finalize {
        problem(
            "/finalize_received".into(),
            format!(
                "manifest says {}, but {} node has a finalize record",
                m.finalize_received,
                if any_finalize { "a" } else { "no" }
            ),
        );
    }
}

/// The note that the run directory is named otherwise than the run its manifest names (an
/// archive whose top is the run directory has no directory name to say it of).
fn renamed(file: &str, m: &Manifest, run_dir: &str) -> Option<Problem> {
    let named_after_archive = file.ends_with(&format!("!{}", layout::MANIFEST));
    (!named_after_archive && m.run_id != run_dir).then(|| {
        Problem::new(
            ProblemKind::Manifest,
            Location::record(file, 0, "/run_id"),
            format!(
                "the run directory is named `{run_dir}`, the run is `{}` (the manifest's run id, which every tool reports): a renamed bundle",
                m.run_id
            ),
        )
    })
}

/// The manifest against each node's latest boot record.
fn manifest_against_boots(file: &str, m: &Manifest, seen: &Seen, out: &mut Vec<Problem>) {
    for (i, node) in m.nodes.iter().enumerate() {
        let Some((boot_file, boot)) = seen
            .nodes
            .get(&node.label)
            .and_then(|n| n.boot_record.as_ref())
        else {
            continue;
        };
        let mut differs = |field: &str, manifest: String, booted: String| {
            out.push(Problem::new(
                ProblemKind::Manifest,
                Location::record(file, 0, format!("/nodes/{i}/{field}")),
                format!(
                    "manifest says {field} {manifest}, `{}/boot.json` says {booted}",
                    node.label
                ),
            ));
        };
        if node.node_id_hex != boot.node_id_hex {
            differs(
                "node_id_hex",
                format!("`{}`", node.node_id_hex.0),
                format!("`{}`", boot.node_id_hex.0),
            );
        }
        if node.role.as_deref() != Some(boot.role.as_str()) {
            differs("role", shown(node.role.as_deref()), shown(Some(&boot.role)));
        }
        if node.stage_index != boot.stage_index {
            differs(
                "stage_index",
                shown(node.stage_index),
                shown(boot.stage_index),
            );
        }
        if boot.run_id != m.run_id {
            out.push(Problem::new(
                ProblemKind::Manifest,
                Location::record(boot_file, 0, "/run_id"),
                format!(
                    "the boot record says run `{}`, the manifest says `{}`",
                    boot.run_id, m.run_id
                ),
            ));
        }
    }
}

/// A value of a manifest or boot field in a message: `"text"`, a number, or `none`.
fn shown<T: std::fmt::Debug>(value: Option<T>) -> String {
    value.map_or_else(|| "none".to_owned(), |v| format!("{v:?}"))
}

/// Each node directory's name against the label the layout derives from its boot record: the
/// label itself, or the label with the node id's first 8 characters (or the whole id) appended
/// when several nodes want it.
fn labels_against_boots(seen: &Seen, out: &mut Vec<Problem>) {
    for (dir, node) in &seen.nodes {
        let Some((boot_file, boot)) = &node.boot_record else {
            continue;
        };
        let id = &boot.node_id_hex.0;
        let base =
            layout::sanitize_component(&layout::node_label(Some(&boot.role), boot.stage_index, id));
        let id_safe = layout::sanitize_component(id);
        let short: String = id_safe.chars().take(8).collect();
        let fits = *dir == base
            || dir
                .strip_prefix(&base)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|rest| {
                    rest == short
                        || rest == id_safe
                        || rest
                            .strip_prefix(&short)
                            .and_then(|r| r.strip_prefix('-'))
                            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                });
        if !fits {
            out.push(Problem::new(
                ProblemKind::Layout,
                Location::record(boot_file, 0, ""),
                format!(
                    "the node directory is `{dir}`, but its boot record (role {}, stage index {}) gives the label `{base}`",
                    shown(Some(&boot.role)),
                    shown(boot.stage_index)
                ),
            ));
        }
    }
}

/// The most missing files named in one problem.
const MAX_NAMED: usize = 5;

/// Numbered files whose sequence numbers skip: each missing file is named (up to [`MAX_NAMED`]
/// per run of a node's files, then counted).
fn sequence_gaps(seen: &Seen, out: &mut Vec<Problem>) {
    for (label, node) in &seen.nodes {
        for (kind, seqs) in &node.numbered {
            let Some((&last, &encoding)) = seqs.last_key_value() else {
                continue;
            };
            let missing = last - seqs.len() as u64;
            if missing == 0 {
                continue;
            }
            // Missing files are named in the encoding of the node's last file of the kind.
            let names: Vec<String> = (1..=last)
                .filter(|s| !seqs.contains_key(s))
                .take(MAX_NAMED)
                .map(|s| layout::bundle_path_as(label, &Role::Numbered(kind.clone(), s), encoding))
                .collect();
            let first = names.first().cloned().unwrap_or_default();
            let mut listed = names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ");
            if missing > names.len() as u64 {
                listed.push_str(&format!(" and {} more", missing - names.len() as u64));
            }
            out.push(Problem::new(
                ProblemKind::Layout,
                Location::file(seen.shown(&first)),
                format!(
                    "missing: {listed} ({} numbers from 1 to {last} are present, {missing} missing)",
                    seqs.len()
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::canonical_name;

    #[test]
    fn a_number_spelled_differently_has_one_canonical_name() {
        assert_eq!(
            canonical_name("events-1.json").as_deref(),
            Some("events-000001.json")
        );
        assert_eq!(
            canonical_name("snapshot-0000007.json").as_deref(),
            Some("snapshot-000007.json")
        );
        assert_eq!(
            canonical_name("boot-+00001.json").as_deref(),
            Some("boot-000001.json")
        );
        assert_eq!(canonical_name("notes.json"), None);
        assert_eq!(canonical_name("unknown-000001.json"), None);
    }
}
