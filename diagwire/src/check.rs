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
