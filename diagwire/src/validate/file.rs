//! One file: its shape for its kind, then its records one at a time.
//!
//! A file up to [`super::Options::in_memory_bytes`] is first read the way the collector's readers read it, in one
//! typed pass (an events file as a sequence of event records, dropped one by one); when that pass
//! succeeds every record is valid and nothing else runs. Otherwise, and for larger files, the file
//! is framed record by record with [`Scanner`], each record is checked on its own, and framing
//! errors are located by line and column. Memory holds one record and one read buffer.

use std::io::{self, Read};

use serde::de::{Deserializer as _, SeqAccess, Visitor};

use super::record::{At, check_record};
use super::{Checker, FileSink, Report};
use crate::problem::{Location, ProblemKind};
use crate::scan::{MAX_DEPTH, Position, ScanError, Scanner};
use crate::v1::{EventRecord, Record, RecordKind};

/// Files up to this size are read whole and decoded in one typed pass first, by default
/// ([`super::Options::in_memory_bytes`]).
pub const IN_MEMORY: u64 = 8 << 20;

/// What a file of a kind holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileShape {
    /// A JSON array whose elements are records of the kind (an events file: event records).
    ArrayOf(RecordKind),
    /// Exactly one record.
    One(RecordKind),
}

impl FileShape {
    /// The shape of a file of `kind`.
    pub fn of(kind: RecordKind) -> FileShape {
        match kind {
            RecordKind::EventBatch => FileShape::ArrayOf(RecordKind::Event),
            k => FileShape::One(k),
        }
    }
}

/// Whether a record of `kind` is a JSON object (a runs listing is an array).
fn is_object(kind: RecordKind) -> bool {
    kind != RecordKind::Runs
}

/// "a boot file", for messages.
fn file_noun(kind: RecordKind) -> String {
    match kind {
        RecordKind::Boot => "a boot file".into(),
        RecordKind::EventBatch => "an events file".into(),
        RecordKind::Snapshot => "a snapshot file".into(),
        RecordKind::Finalize => "a finalize file".into(),
        RecordKind::Manifest => "MANIFEST.json".into(),
        RecordKind::Vastai => "a vast.ai record file".into(),
        RecordKind::Event => "an event file".into(),
        k => format!("a `{k}` file"),
    }
}

/// "one boot record (a JSON object)", for messages.
fn content_noun(shape: FileShape) -> String {
    match shape {
        FileShape::ArrayOf(k) => format!("a JSON array of {k} records"),
        FileShape::One(k) if is_object(k) => format!("one {k} record (a JSON object)"),
        FileShape::One(k) => format!("one {k} record (a JSON array)"),
    }
}

/// What a JSON value starting with `b` is.
fn json_type(b: u8) -> &'static str {
    match b {
        b'{' => "an object",
        b'[' => "an array",
        b'"' => "a string",
        b't' | b'f' => "a boolean",
        b'n' => "null",
        b'-' | b'0'..=b'9' => "a number",
        _ => "text that is not JSON",
    }
}

impl Checker<'_> {
    /// Checks what `reader` yields as a file of `kind` named `file`. `size` is what the file's
    /// metadata says, when known. Returns the record of a one-record file when it is valid and
    /// `keep` is set. An error reading the file ends the check of its records; it is returned, not
    /// reported (the caller knows whether a reader reports it already).
    pub(crate) fn check_reader_keep(
        &mut self,
        file: &str,
        kind: RecordKind,
        size: Option<u64>,
        reader: &mut dyn Read,
        keep: bool,
        report: &mut Report,
    ) -> io::Result<Option<Record>> {
        report.files += 1;
        let in_memory = self.options.in_memory_bytes;
        if size.is_some_and(|s| s <= in_memory) {
            let mut buf = std::mem::take(&mut self.buf);
            buf.clear();
            let read = reader
                .take(in_memory.saturating_add(1))
                .read_to_end(&mut buf);
            let result = match read {
                Ok(_) if buf.len() as u64 <= in_memory => match fast(kind, &buf, keep) {
                    Some((n, kept)) => {
                        report.records += n;
                        Ok(kept)
                    }
                    None => self.scan(file, kind, &mut &buf[..], keep, report),
                },
                // Larger than its metadata said: go on streaming.
                Ok(_) => self.scan(file, kind, &mut (&buf[..]).chain(reader), keep, report),
                Err(e) => {
                    // Check what was read, then say the rest is missing.
                    let _ = self.scan(file, kind, &mut &buf[..], false, report);
                    Err(e)
                }
            };
            self.buf = buf;
            result
        } else {
            self.scan(file, kind, reader, keep, report)
        }
    }

    /// Checks a binary (`.pb`) file of `kind` named `file`: it is read whole (up to
    /// [`crate::binary::MAX_BINARY_FILE_BYTES`]), decoded, and its JSON checked as a JSON file's
    /// would be. A file that does not decode is one problem.
    #[cfg(feature = "bundle")]
    pub(crate) fn check_binary(
        &mut self,
        file: &str,
        kind: RecordKind,
        reader: &mut dyn Read,
        keep: bool,
        report: &mut Report,
    ) -> io::Result<Option<Record>> {
        let cap = crate::binary::MAX_BINARY_FILE_BYTES as u64;
        let mut bytes = Vec::new();
        reader.take(cap + 1).read_to_end(&mut bytes)?;
        let text = match crate::binary::json_text(crate::layout::Encoding::Protobuf, kind, &bytes) {
            Ok(t) => t.into_owned(),
            Err(message) => {
                report.files += 1;
                report.unreadable_files += 1;
                let options = self.options;
                report.push(
                    &options,
                    crate::Problem::new(ProblemKind::Encoding, Location::file(file), message),
                );
                return Ok(None);
            }
        };
        drop(bytes);
        let size = text.len() as u64;
        let before = report.problems.len();
        let checked = self.check_reader_keep(file, kind, Some(size), &mut &text[..], keep, report);
        // Lines and columns of the decoded text would point nowhere in the binary file; the record
        // and the JSON pointer locate a problem.
        for p in &mut report.problems[before..] {
            if p.location.file == file {
                p.location.position = None;
            }
        }
        checked
    }

    /// [`Checker::check_reader_keep`] without keeping the record.
    pub fn check_reader(
        &mut self,
        file: &str,
        kind: RecordKind,
        size: Option<u64>,
        reader: &mut dyn Read,
        report: &mut Report,
    ) -> io::Result<()> {
        self.check_reader_keep(file, kind, size, reader, false, report)
            .map(|_| ())
    }

    /// The record-by-record check.
    fn scan(
        &mut self,
        file: &str,
        kind: RecordKind,
        reader: &mut dyn Read,
        keep: bool,
        report: &mut Report,
    ) -> io::Result<Option<Record>> {
        let options = self.options;
        let validators = self.validators;
        let mut sink = FileSink::new(report, &options, file);
        let mut s = Scanner::new(reader, options.max_record_bytes);
        let shape = FileShape::of(kind);
        let mut kept = None;
        let outcome = (|| -> Result<(), ScanError> {
            let first = s.peek()?;
            if s.had_bom {
                sink.file_problem(
                    ProblemKind::Encoding,
                    "the file starts with a UTF-8 byte order mark, which JSON readers refuse",
                );
                sink.unreadable();
            }
            let Some(first) = first else {
                sink.file_problem(
                    ProblemKind::Shape,
                    format!(
                        "the file is empty; {} holds {}",
                        file_noun(kind),
                        content_noun(shape)
                    ),
                );
                sink.unreadable();
                return Ok(());
            };
            let wrong = |sink: &mut FileSink<'_>, at: Position, what: &str| {
                sink.push(
                    ProblemKind::Shape,
                    Location::file(file).with_position(at.line, at.column),
                    format!(
                        "{} holds {}, not {what}",
                        file_noun(kind),
                        content_noun(shape)
                    ),
                );
                sink.unreadable();
            };
            match shape {
                FileShape::ArrayOf(element) => {
                    if first != b'[' {
                        wrong(&mut sink, s.position(), json_type(first));
                        return Ok(());
                    }
                    s.bump();
                    let mut index = 0;
                    loop {
                        match s.peek()? {
                            Some(b']') if index == 0 => {
                                s.bump();
                                break;
                            }
                            None => {
                                let at = s.position();
                                return Err(ScanError::Syntax("a record or `]`", at));
                            }
                            _ => {}
                        }
                        let (bytes, start) = s.value(MAX_DEPTH - 1)?;
                        let at = At { file, index, start };
                        let verdict = check_record(
                            validators,
                            options.cross_check,
                            element,
                            bytes,
                            at,
                            false,
                            &mut sink,
                        );
                        sink.record(verdict.is_ok());
                        index += 1;
                        let next = s.peek()?;
                        match next {
                            Some(b',') => s.bump(),
                            Some(b']') => {
                                s.bump();
                                break;
                            }
                            _ => {
                                let at = s.position();
                                return Err(ScanError::Syntax("`,` or `]` after a record", at));
                            }
                        }
                    }
                }
                FileShape::One(k) => {
                    if is_object(k) && first != b'{' {
                        wrong(&mut sink, s.position(), json_type(first));
                        return Ok(());
                    }
                    let (bytes, start) = s.value(MAX_DEPTH)?;
                    let at = At {
                        file,
                        index: 0,
                        start,
                    };
                    let verdict = check_record(
                        validators,
                        options.cross_check,
                        k,
                        bytes,
                        at,
                        keep,
                        &mut sink,
                    );
                    sink.record(verdict.is_ok());
                    kept = verdict.ok().flatten();
                }
            }
            if let Some(b) = s.peek()? {
                let at = s.position();
                kept = None;
                sink.push(
                    ProblemKind::Shape,
                    Location::file(file).with_position(at.line, at.column),
                    format!(
                        "{} after the end of the {}; {} holds {}",
                        match json_type(b) {
                            "text that is not JSON" => "text that is not JSON",
                            _ => "a second JSON value",
                        },
                        match shape {
                            FileShape::ArrayOf(_) => "array",
                            FileShape::One(_) => "record",
                        },
                        file_noun(kind),
                        content_noun(shape)
                    ),
                );
                sink.unreadable();
            }
            Ok(())
        })();
        match outcome {
            Ok(()) => Ok(kept),
            Err(e) => {
                let (problem, at, message) = match e {
                    ScanError::Io(kind, message) => return Err(io::Error::new(kind, message)),
                    ScanError::Syntax(what, at) => (
                        ProblemKind::Encoding,
                        at,
                        format!("not JSON: expected {what}; the rest of the file is not read"),
                    ),
                    ScanError::TooDeep(max, at) => (
                        ProblemKind::Parse,
                        at,
                        format!(
                            "arrays and objects nest deeper than {max} levels in this record, which the readers refuse; the rest of the file is not read"
                        ),
                    ),
                    ScanError::TooLarge(max, at) => (
                        ProblemKind::Read(crate::problem::ReadErrorKind::TooLarge),
                        at,
                        format!(
                            "a record larger than {max} bytes starts here; the rest of the file is not read"
                        ),
                    ),
                };
                sink.push(
                    problem,
                    Location::file(file).with_position(at.line, at.column),
                    message,
                );
                sink.unreadable();
                Ok(None)
            }
        }
    }
}

/// The one typed pass over a whole file: the number of records and the record of a one-record
/// file when `keep` is set, or `None` when anything is wrong.
fn fast(kind: RecordKind, bytes: &[u8], keep: bool) -> Option<(usize, Option<Record>)> {
    let text = std::str::from_utf8(bytes).ok()?;
    match FileShape::of(kind) {
        FileShape::ArrayOf(_) => {
            let mut de = serde_json::Deserializer::from_str(text);
            let n = (&mut de).deserialize_seq(CountEvents).ok()?;
            de.end().ok()?;
            Some((n, None))
        }
        FileShape::One(k) => {
            let record = Record::parse(k, text).ok()?;
            Some((1, keep.then_some(record)))
        }
    }
}

/// Decodes a sequence of event records one by one, dropping each, and counts them.
struct CountEvents;

impl<'de> Visitor<'de> for CountEvents {
    type Value = usize;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of event records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut n = 0;
        while seq.next_element::<EventRecord>()?.is_some() {
            n += 1;
        }
        Ok(n)
    }
}

/// Checks a record file given as a path.
#[cfg(feature = "bundle")]
pub(super) fn check_path(
    checker: &mut Checker<'_>,
    path: &std::path::Path,
    kind: Option<RecordKind>,
    max_file_bytes: u64,
    report: &mut Report,
) {
    use crate::bundle::read::{Limits, open_record_file};

    let file = path.display().to_string();
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let Some(kind) = kind.or_else(|| crate::layout::kind_of_file_name(name)) else {
        report.push(
            checker.options(),
            crate::Problem::new(
                ProblemKind::Layout,
                Location::file(&file),
                format!(
                    "cannot tell the record kind from the file name (the layout's names are MANIFEST.json, boot.json, finalize.json and <kind>-NNNNNN.json, or .pb for the binary form); pass --kind (one of {})",
                    RecordKind::ALL
                        .iter()
                        .map(|k| k.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        );
        return;
    };
    let limits = Limits {
        max_file_bytes,
        ..Limits::default()
    };
    let mut opened = match open_record_file(path, limits) {
        Ok(f) => f,
        Err(e) => {
            report.push(checker.options(), e.into());
            return;
        }
    };
    let size = opened.size();
    let checked = match crate::layout::Encoding::of_name(name) {
        Some(crate::layout::Encoding::Protobuf) => checker
            .check_binary(&file, kind, &mut opened, false, report)
            .map(|_| ()),
        _ => checker.check_reader(&file, kind, Some(size), &mut opened, report),
    };
    if let Err(e) = checked {
        let options = *checker.options();
        report.unreadable_files += 1;
        let kind = if e.kind() == io::ErrorKind::FileTooLarge {
            crate::problem::ReadErrorKind::TooLarge
        } else {
            crate::problem::ReadErrorKind::Io
        };
        report.push(
            &options,
            crate::Problem::new(
                ProblemKind::Read(kind),
                Location::file(&file),
                e.to_string(),
            ),
        );
    }
}
