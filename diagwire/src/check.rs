//! Checking record files: every record against its schema and its generated type, with located
//! problems (`<file>:<record index> <json pointer>: <message>`).

use std::fmt;
use std::path::Path;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::v1::Record;
use crate::validate::Validators;

/// One problem, located by file, record index and JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file as the user named it.
    pub file: String,
    /// The record's index in the file (0 for a file holding one record); `None` for the whole file.
    pub record: Option<usize>,
    /// JSON pointer into the record.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.record {
            Some(i) => write!(f, "{}:{} {}: {}", self.file, i, self.pointer, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

/// What checking one file found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Records checked.
    pub records: usize,
    /// Records with at least one problem.
    pub invalid_records: usize,
    /// Every problem found.
    pub problems: Vec<Problem>,
}

impl Report {
    /// Adds another report's counts and problems to this one.
    pub fn merge(&mut self, other: Report) {
        self.records += other.records;
        self.invalid_records += other.invalid_records;
        self.problems.extend(other.problems);
    }
}

/// The record kind a file name implies in swactor's layouts, if any.
///
/// `events-NNNNNN.json` files hold arrays of `event` records; the kind returned is the element kind.
pub fn kind_from_file_name(path: &Path) -> Option<&'static str> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".json").unwrap_or(name);
    Some(match stem {
        "MANIFEST" => "manifest",
        s if s == "boot" || s.starts_with("boot-") => "boot",
        s if s.starts_with("events-") || s == "events" => "event",
        s if s.starts_with("snapshot-") || s == "snapshot" => "snapshot",
        s if s == "finalize" || s.starts_with("finalize-") => "finalize",
        s if s.starts_with("vastai_") => "vastai",
        _ => return None,
    })
}

/// The records of one file, by index: each its JSON text or the reason it is not JSON.
type SplitRecords<'a> = Vec<(usize, Result<&'a str, String>)>;

/// Splits a file's text into records: a JSON array of records, JSON lines, or one record.
///
/// Records are kept as text so the typed parse sees them as written (a duplicate key, which a
/// parsed `Value` would hide, is still an error). Returns the records with their index, or a
/// file-level error.
fn split_records<'a>(text: &'a str, kind: &str) -> Result<SplitRecords<'a>, String> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') && !is_array_kind(kind) {
        return match serde_json::from_str::<Vec<&RawValue>>(text) {
            Ok(items) => Ok(items.into_iter().map(|r| Ok(r.get())).enumerate().collect()),
            Err(e) => Err(format!("not a JSON array of records: {e}")),
        };
    }
    match serde_json::from_str::<&RawValue>(text) {
        Ok(_) => Ok(vec![(0, Ok(text))]),
        Err(e)
            if e.classify() == serde_json::error::Category::Syntax && text.lines().count() > 1 =>
        {
            // JSON lines: one record per non-empty line; a bad line costs only itself.
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            if lines.len() > 1 && serde_json::from_str::<&RawValue>(lines[0]).is_ok() {
                Ok(lines
                    .into_iter()
                    .map(|l| match serde_json::from_str::<&RawValue>(l) {
                        Ok(_) => Ok(l),
                        Err(e) => Err(format!("not JSON: {e}")),
                    })
                    .enumerate()
                    .collect())
            } else {
                Err(format!("not JSON: {e}"))
            }
        }
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

fn is_array_kind(kind: &str) -> bool {
    matches!(kind, "event_batch" | "runs")
}

/// Checks every record of one file's contents as records of `kind`.
pub fn check_text(validators: &Validators, file: &str, text: &str, kind: &str) -> Report {
    let mut report = Report::default();
    let records = match split_records(text, kind) {
        Ok(r) => r,
        Err(message) => {
            report.problems.push(Problem {
                file: file.to_owned(),
                record: None,
                pointer: String::new(),
                message,
            });
            return report;
        }
    };
    for (index, record) in records {
        report.records += 1;
        let before = report.problems.len();
        match record {
            Err(message) => report.problems.push(Problem {
                file: file.to_owned(),
                record: Some(index),
                pointer: String::new(),
                message,
            }),
            Ok(text) => check_record(validators, file, index, kind, text, &mut report.problems),
        }
        if report.problems.len() > before {
            report.invalid_records += 1;
        }
    }
    report
}

fn check_record(
    v: &Validators,
    file: &str,
    index: usize,
    kind: &str,
    text: &str,
    out: &mut Vec<Problem>,
) {
    let problem = |pointer: String, message: String| Problem {
        file: file.to_owned(),
        record: Some(index),
        pointer,
        message,
    };
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            out.push(problem(String::new(), format!("not JSON: {e}")));
            return;
        }
    };
    let violations = v.violations(kind, &value).unwrap_or_default();
    let schema_valid = violations.is_empty();
    out.extend(
        violations
            .into_iter()
            .map(|x| problem(x.pointer, x.message)),
    );
    match Record::parse(kind, text) {
        Some(Ok(_)) if !schema_valid => out.push(problem(
            String::new(),
            "the typed parse accepts a record the schema rejects (a contract bug: please report it)".into(),
        )),
        // JSON Schema sees a parsed value, where the last of two equal keys wins; the typed parse
        // sees the text and rejects the duplicate.
        Some(Err(e)) if schema_valid && e.to_string().starts_with("duplicate field `") => {
            let message = e.to_string();
            let key = message["duplicate field `".len()..].split('`').next().unwrap_or_default();
            out.push(problem(format!("/{}", key.replace('~', "~0").replace('/', "~1")), format!("duplicate key `{key}`")));
        }
        Some(Err(e)) if schema_valid => out.push(problem(
            String::new(),
            format!("the schema accepts the record but the typed parse fails (a contract bug: please report it): {e}"),
        )),
        _ => {}
    }
}

/// Checks one file; `kind` overrides the kind implied by the file name.
pub fn check_file(
    validators: &Validators,
    path: &Path,
    kind: Option<&str>,
) -> Result<Report, String> {
    let file = path.display().to_string();
    let kind = match kind.or_else(|| kind_from_file_name(path)) {
        Some(k) => k,
        None => {
            return Err(format!(
                "{file}: cannot tell the record kind from the file name; pass --kind (one of {})",
                Record::KINDS.join(", ")
            ));
        }
    };
    if !Record::KINDS.contains(&kind) {
        return Err(format!(
            "unknown record kind `{kind}` (one of {})",
            Record::KINDS.join(", ")
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("{file}: {e}"))?;
    let kind = if kind == "event_batch" { "event" } else { kind };
    Ok(match String::from_utf8(bytes) {
        Ok(text) => check_text(validators, &file, &text, kind),
        Err(e) => Report {
            records: 0,
            invalid_records: 0,
            problems: vec![Problem {
                file,
                record: None,
                pointer: String::new(),
                message: format!(
                    "not UTF-8: invalid byte at offset {}",
                    e.utf8_error().valid_up_to()
                ),
            }],
        },
    })
}

/// Bundle checks: every record of every file, and the manifest against the files.
#[cfg(feature = "bundle")]
pub mod bundle {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    use super::{Problem, Report, check_text};
    use crate::bundle::read::{BundleReader, FileRole, Limits, ReadError};
    use crate::v1::Manifest;
    use crate::validate::Validators;

    /// What the files of one node directory hold, as counted while reading the bundle.
    #[derive(Debug, Default)]
    struct NodeFiles {
        boot: bool,
        events: u64,
        snapshots: u64,
        finalize: bool,
        vastai: u64,
    }

    /// Progress of a bundle check: called with (files done, files in all).
    pub type Progress<'a> = &'a mut dyn FnMut(usize, usize);

    /// Opens a bundle, for a caller that wants its size before checking it.
    pub fn open(path: &Path, limits: Limits) -> Result<BundleReader, ReadError> {
        BundleReader::open(path, limits)
    }

    /// Checks every file of an opened bundle and its manifest. Reading continues after a bad file or
    /// entry, so every problem is reported.
    pub fn check_bundle(
        validators: &Validators,
        reader: &mut BundleReader,
        progress: Progress<'_>,
    ) -> Report {
        let source = reader.source().display().to_string();
        let total = reader.file_count();
        let archive = reader.source().is_file();
        let name = |rel: &str| {
            if archive {
                format!("{source}!{rel}")
            } else {
                format!("{source}/{rel}")
            }
        };
        let mut report = Report::default();
        let mut nodes: BTreeMap<String, NodeFiles> = BTreeMap::new();
        let mut manifest: Option<(String, Manifest)> = None;
        let mut done = 0;
        for item in reader.files() {
            done += 1;
            progress(done, total);
            let file = match item {
                Ok(f) => f,
                Err(e) => {
                    report.problems.push(Problem {
                        file: e.location.clone(),
                        record: None,
                        pointer: String::new(),
                        message: e.message.clone(),
                    });
                    continue;
                }
            };
            let display = name(&file.path);
            if let Some(node) = &file.node {
                let n = nodes.entry(node.clone()).or_default();
                match file.role {
                    FileRole::Boot => n.boot = true,
                    FileRole::Events => n.events += 1,
                    FileRole::Snapshot => n.snapshots += 1,
                    FileRole::Finalize => n.finalize = true,
                    FileRole::Vastai => n.vastai += 1,
                    _ => {}
                }
            }
            let Some(kind) = file.role.record_kind() else {
                continue;
            };
            let text = match std::str::from_utf8(&file.bytes) {
                Ok(t) => t,
                Err(e) => {
                    report.problems.push(Problem {
                        file: display,
                        record: None,
                        pointer: String::new(),
                        message: format!("not UTF-8: invalid byte at offset {}", e.valid_up_to()),
                    });
                    continue;
                }
            };
            let r = check_text(validators, &display, text, kind);
            if file.role == FileRole::Manifest && r.problems.is_empty() {
                if let Ok(m) = serde_json::from_str::<Manifest>(text) {
                    manifest = Some((display.clone(), m));
                }
            }
            report.merge(r);
        }
        match manifest {
            Some((display, m)) => report
                .problems
                .extend(manifest_problems(&display, &m, &nodes)),
            None if !report
                .problems
                .iter()
                .any(|p| p.file.ends_with("MANIFEST.json")) =>
            {
                report.problems.push(Problem {
                    file: name("MANIFEST.json"),
                    record: None,
                    pointer: String::new(),
                    message: "the bundle has no MANIFEST.json".into(),
                });
            }
            None => {}
        }
        report
    }

    /// Every way the manifest disagrees with the files: listed files that are missing, counts and
    /// labels that differ, node directories the manifest does not list.
    fn manifest_problems(
        file: &str,
        m: &Manifest,
        nodes: &BTreeMap<String, NodeFiles>,
    ) -> Vec<Problem> {
        let mut out = Vec::new();
        let mut problem = |pointer: String, message: String| {
            out.push(Problem {
                file: file.to_owned(),
                record: Some(0),
                pointer,
                message,
            });
        };
        let empty = NodeFiles::default();
        let mut listed = BTreeSet::new();
        for (i, node) in m.nodes.iter().enumerate() {
            let at = |field: &str| format!("/nodes/{i}/{field}");
            if !listed.insert(node.label.clone()) {
                problem(
                    at("label"),
                    format!("label `{}` is listed twice", node.label),
                );
            }
            let found = match nodes.get(&node.label) {
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
            if node.boot_recorded != found.boot {
                problem(
                    at("boot_recorded"),
                    format!(
                        "manifest says {}, `{}/boot.json` is {}",
                        node.boot_recorded,
                        node.label,
                        if found.boot { "present" } else { "missing" }
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
                        if found.finalize { "present" } else { "missing" }
                    ),
                );
            }
            if node.event_batches != found.events {
                problem(
                    at("event_batches"),
                    format!(
                        "manifest says {} event batches, found {} events files",
                        node.event_batches, found.events
                    ),
                );
            }
            if node.snapshots != found.snapshots {
                problem(
                    at("snapshots"),
                    format!(
                        "manifest says {} snapshots, found {} snapshot files",
                        node.snapshots, found.snapshots
                    ),
                );
            }
            if let Some(v) = node.vastai_records {
                if v != found.vastai {
                    problem(
                        at("vastai_records"),
                        format!(
                            "manifest says {v} vast.ai records, found {} files",
                            found.vastai
                        ),
                    );
                }
            }
        }
        for label in nodes.keys() {
            if !listed.contains(label) {
                problem(
                    "/nodes".into(),
                    format!("node directory `{label}` is not listed in the manifest"),
                );
            }
        }
        let any_finalize = nodes.values().any(|n| n.finalize);
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
        out
    }
}
