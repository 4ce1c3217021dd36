//! One record file, framed record by record: its shape for its kind (an events file is a JSON array
//! of event records, every other file one record), each record's text handed on with where it
//! starts, and every way the file breaks its shape said once, located by line and column.
//!
//! This is the one place that decides what a record file holds. Validation ([`crate::validate`])
//! and the bundle walk every other command reads through ([`crate::bundle::records`]) both frame
//! files here, so a file reads the same, with the same problems, whatever command opens it. Memory
//! holds one record and one read buffer ([`Scanner`]).

// The framing serves the readers (features `validate` and `bundle`); the shape is always there.
#![cfg_attr(not(any(feature = "validate", feature = "bundle")), allow(dead_code))]

use std::io::{self, Read};

use crate::problem::{ProblemKind, ReadErrorKind};
use crate::scan::{MAX_DEPTH, Position, ScanError, Scanner};
use crate::v1::RecordKind;

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

    /// The kind of each record the file holds.
    pub fn record_kind(self) -> RecordKind {
        match self {
            FileShape::ArrayOf(k) | FileShape::One(k) => k,
        }
    }
}

/// What framing a file hands on, in file order.
pub(crate) trait Frames {
    /// The text of the record at `index` in the file, starting at `start`.
    fn record(&mut self, kind: RecordKind, index: usize, start: Position, bytes: &[u8]);
    /// The file breaks its shape at `at` (`None`: the file as a whole). Records before it were
    /// handed on; a problem from which reading cannot go on is the last call.
    fn problem(&mut self, kind: ProblemKind, at: Option<Position>, message: String);
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

/// Frames what `reader` yields as a file of `kind`, handing each record and each problem to
/// `sink`. Records over `max_record` bytes end the file with a problem. An error reading the
/// stream ends it too and is returned, not handed on (the caller knows whether a reader reports it
/// already).
pub(crate) fn frame(
    reader: &mut dyn Read,
    kind: RecordKind,
    max_record: usize,
    sink: &mut dyn Frames,
) -> io::Result<()> {
    let mut s = Scanner::new(reader, max_record);
    match frame_records(&mut s, kind, sink) {
        Ok(()) => Ok(()),
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
                    ProblemKind::Read(ReadErrorKind::TooLarge),
                    at,
                    format!(
                        "a record larger than {max} bytes starts here; the rest of the file is not read"
                    ),
                ),
            };
            sink.problem(problem, Some(at), message);
            Ok(())
        }
    }
}

fn frame_records(
    s: &mut Scanner<&mut dyn Read>,
    kind: RecordKind,
    sink: &mut dyn Frames,
) -> Result<(), ScanError> {
    let shape = FileShape::of(kind);
    let first = s.peek()?;
    if s.had_bom {
        sink.problem(
            ProblemKind::Encoding,
            None,
            "the file starts with a UTF-8 byte order mark, which JSON readers refuse".into(),
        );
    }
    let Some(first) = first else {
        sink.problem(
            ProblemKind::Shape,
            None,
            format!(
                "the file is empty; {} holds {}",
                file_noun(kind),
                content_noun(shape)
            ),
        );
        return Ok(());
    };
    let wrong = |sink: &mut dyn Frames, at: Position, what: &str| {
        sink.problem(
            ProblemKind::Shape,
            Some(at),
            format!(
                "{} holds {}, not {what}",
                file_noun(kind),
                content_noun(shape)
            ),
        );
    };
    match shape {
        FileShape::ArrayOf(element) => {
            if first != b'[' {
                wrong(sink, s.position(), json_type(first));
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
                sink.record(element, index, start, bytes);
                index += 1;
                match s.peek()? {
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
                wrong(sink, s.position(), json_type(first));
                return Ok(());
            }
            let (bytes, start) = s.value(MAX_DEPTH)?;
            sink.record(k, 0, start, bytes);
        }
    }
    if let Some(b) = s.peek()? {
        let at = s.position();
        sink.problem(
            ProblemKind::Shape,
            Some(at),
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
    }
    Ok(())
}
