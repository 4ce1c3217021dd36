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
use crate::scan::{MAX_DEPTH, Position, ScanError, Scanner, Take};
use crate::v1::RecordKind;

/// Whether a record's text cannot be a record at all: every record of every kind is a JSON object,
/// so text whose first byte past whitespace is anything but `{` is refused without running the
/// typed decode (whose error message, built for each of a file's two million `0`s, is what a
/// hostile file would otherwise cost). `None` when the text holds only whitespace.
pub(crate) fn not_an_object(bytes: &[u8]) -> Option<bool> {
    bytes
        .iter()
        .find(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
        .map(|b| *b != b'{')
}

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
    /// Offers the bytes from the record at `index` on, as a file of `shape` holds it, with
    /// whether they run to the end of the file: a sink that decodes the record there itself and
    /// takes it ([`decode_front`]) saves the framing pass; what it does not take is handed on
    /// through [`Frames::record`]. By default nothing is taken.
    fn take(&mut self, shape: FileShape, index: usize, bytes: &[u8], all: bool) -> Take {
        let _ = (shape, index, bytes, all);
        Take::Refused
    }
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
/// already). `buf` is the read buffer, kept between files.
pub(crate) fn frame(
    reader: &mut dyn Read,
    kind: RecordKind,
    max_record: usize,
    buf: &mut Vec<u8>,
    sink: &mut dyn Frames,
) -> io::Result<()> {
    let mut s = Scanner::with_buffer(reader, max_record, std::mem::take(buf));
    let framed = frame_records(&mut s, kind, sink);
    *buf = s.into_buffer();
    match framed {
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
                if s.take_with(|bytes, all| sink.take(shape, index, bytes, all))?
                    .is_none()
                {
                    let (bytes, start) = s.value(MAX_DEPTH - 1)?;
                    sink.record(element, index, start, bytes);
                }
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
            if s.take_with(|bytes, all| sink.take(shape, 0, bytes, all))?
                .is_none()
            {
                let (bytes, start) = s.value(MAX_DEPTH)?;
                sink.record(k, 0, start, bytes);
            }
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

/// The typed decode of the record at the front of `bytes`, as a file of `shape` holds it, for a
/// [`Frames::take`]: the length of its text (with the whitespace after a file's one record), and
/// the record when `keep` is set, when the record is one the typed readers of the whole file
/// take; what the framing is to do otherwise. `all` says whether `bytes` run to the end of the
/// file.
///
/// The verdict equals framing the record and parsing its text on its own, as
/// [`crate::v1::Record::parse`] does: the text is UTF-8 and decodes. (The framing's own nesting
/// limit applies to the records the decode refuses: the typed readers decide what they take.)
#[cfg(feature = "validate")]
pub(crate) fn decode_front(
    shape: FileShape,
    bytes: &[u8],
    all: bool,
    keep: bool,
) -> Result<(Option<crate::v1::Record>, usize), Take> {
    use crate::v1::{EventRecord, Record};
    match shape {
        FileShape::ArrayOf(RecordKind::Event) => {
            if not_an_object(bytes) == Some(true) {
                return Err(Take::Refused);
            }
            let mut one = serde_json::Deserializer::from_slice(bytes).into_iter::<EventRecord>();
            match one.next() {
                Some(Ok(event)) => {
                    let n = one.byte_offset();
                    let text = &bytes[..n];
                    if std::str::from_utf8(text).is_err() {
                        return Err(Take::Refused);
                    }
                    let kept = if keep {
                        Some(Record::Event(event))
                    } else {
                        None
                    };
                    Ok((kept, n))
                }
                Some(Err(e)) if e.is_eof() && !all => Err(Take::More),
                _ => Err(Take::Refused),
            }
        }
        FileShape::ArrayOf(_) => Err(Take::Refused),
        FileShape::One(_) if !all => Err(Take::More),
        FileShape::One(kind) => {
            let text = std::str::from_utf8(bytes).map_err(|_| Take::Refused)?;
            let record = Record::parse(kind, text).map_err(|_| Take::Refused)?;
            Ok((keep.then_some(record), bytes.len()))
        }
    }
}

/// A record of a file decoded whole ([`decode_whole`]): where its text is in the file's, the
/// record, and whether it held a key its types keep as unknown.
// Kept whole for the record walk (feature `bundle`); validation alone only decodes.
#[cfg_attr(not(feature = "bundle"), allow(dead_code))]
#[derive(Debug)]
pub(crate) struct Whole {
    pub text: std::ops::Range<usize>,
    pub record: Kept,
    pub unknown_keys: bool,
}

/// A decoded record as it is kept: an event as itself (a [`crate::v1::Record`] takes the room of
/// its largest kind, several times an event's), any other record boxed.
/// (Nearly every record kept is an event: boxing it would cost an allocation per record.)
#[allow(clippy::large_enum_variant)]
#[cfg_attr(not(feature = "bundle"), allow(dead_code))]
#[derive(Debug)]
pub(crate) enum Kept {
    Event(crate::v1::EventRecord),
    Other(Box<crate::v1::Record>),
}

#[cfg_attr(not(feature = "bundle"), allow(dead_code))]
impl Kept {
    pub(crate) fn of(record: crate::v1::Record) -> Kept {
        match record {
            crate::v1::Record::Event(event) => Kept::Event(event),
            other => Kept::Other(Box::new(other)),
        }
    }

    pub(crate) fn into_record(self) -> crate::v1::Record {
        match self {
            Kept::Event(event) => crate::v1::Record::Event(event),
            Kept::Other(record) => *record,
        }
    }
}

/// The one-pass decode of a whole file's text as a file of `kind`: each record decoded with the
/// generated types and handed to `each` with where its text is (a file of one record: its text
/// without the whitespace around it), serde_json's stream decoder saying where each record ends.
/// False at the first thing it cannot take (the records before it have been handed on); a file it
/// takes whole is one the framing and the typed decode of each record take without a problem.
/// Whether a record held unknown keys is read from `diagwire_runtime`'s counter of the calling
/// thread.
pub(crate) fn decode_whole(kind: RecordKind, text: &str, each: &mut dyn FnMut(Whole)) -> bool {
    use crate::v1::{EventRecord, Record};
    let b = text.as_bytes();
    let ws = |mut i: usize| {
        while matches!(b.get(i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            i += 1;
        }
        i
    };
    if FileShape::of(kind) != FileShape::ArrayOf(RecordKind::Event) {
        let unknown_before = diagwire_runtime::unknown_keys_read();
        let Ok(record) = Record::parse(kind, text) else {
            return false;
        };
        let unknown_keys = diagwire_runtime::unknown_keys_read() != unknown_before;
        let start = ws(0);
        let end = text
            .trim_end_matches([' ', '\n', '\r', '\t'])
            .len()
            .max(start);
        each(Whole {
            text: start..end,
            record: Kept::Other(Box::new(record)),
            unknown_keys,
        });
        return true;
    }
    let mut at = ws(0);
    if b.get(at) != Some(&b'[') {
        return false;
    }
    at = ws(at + 1);
    if b.get(at) == Some(&b']') {
        return ws(at + 1) == b.len();
    }
    loop {
        let mut one = serde_json::Deserializer::from_str(&text[at..]).into_iter::<EventRecord>();
        let unknown_before = diagwire_runtime::unknown_keys_read();
        let Some(Ok(event)) = one.next() else {
            return false;
        };
        let end = at + one.byte_offset();
        each(Whole {
            text: at..end,
            record: Kept::Event(event),
            unknown_keys: diagwire_runtime::unknown_keys_read() != unknown_before,
        });
        at = ws(end);
        match b.get(at) {
            Some(b',') => at = ws(at + 1),
            Some(b']') => return ws(at + 1) == b.len(),
            _ => return false,
        }
    }
}

/// [`decode_whole`] of a file's bytes into a list: the file's records when the pass takes it
/// whole (its bytes UTF-8), `None` otherwise.
#[cfg_attr(not(feature = "bundle"), allow(dead_code))]
pub(crate) fn decode_whole_list(kind: RecordKind, bytes: &[u8]) -> Option<Vec<Whole>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut records = Vec::new();
    decode_whole(kind, text, &mut |w| records.push(w)).then_some(records)
}
