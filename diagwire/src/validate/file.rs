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
use super::{FileSink, Report, Validator};
use crate::frame::{FileShape, Frames, Kept, Whole, decode_front, decode_whole_list, frame};
use crate::problem::{Location, ProblemKind};
use crate::scan::{Position, Take};
use crate::v1::{EventRecord, Record, RecordKind};

/// Files up to this size are read whole and decoded in one typed pass first, by default
/// ([`super::Options::in_memory_bytes`]).
pub const IN_MEMORY: u64 = 8 << 20;

/// A file's content as a check takes it: its bytes, already in memory, or a reader of them.
pub(crate) enum Body<'a> {
    Bytes(&'a [u8]),
    Reader(&'a mut dyn Read),
}

impl Validator<'_> {
    /// Checks what `reader` yields as a file of `kind` named `file`. `size` is what the file's
    /// metadata says, when known. Returns the record of a one-record file when it is valid and
    /// `keep` is set. With `decoded`, a file read in one typed pass keeps its records there
    /// ([`decode_whole`]: each with where its text is), for the record walk to hand on without
    /// decoding them again; it is left `None` when the file needs framing. An error reading the
    /// file ends the check of its records; it is returned, not reported (the caller knows whether
    /// a reader reports it already).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn validate_reader_keep(
        &mut self,
        file: &str,
        kind: RecordKind,
        size: Option<u64>,
        body: Body<'_>,
        keep: bool,
        decoded: Option<&mut Option<Vec<Whole>>>,
        report: &mut Report,
    ) -> io::Result<Option<Record>> {
        report.files += 1;
        let in_memory = self.options.in_memory_bytes;
        let reader = match body {
            // A file already in memory is decoded where it is.
            Body::Bytes(bytes) if bytes.len() as u64 <= in_memory => {
                return self.whole(file, kind, bytes, keep, decoded, report);
            }
            Body::Bytes(bytes) => return self.scan(file, kind, &mut &bytes[..], keep, report),
            Body::Reader(reader) => reader,
        };
        if size.is_some_and(|s| s <= in_memory) {
            let mut buf = std::mem::take(&mut self.buf);
            buf.clear();
            let read = reader
                .take(in_memory.saturating_add(1))
                .read_to_end(&mut buf);
            let result = match read {
                Ok(_) if buf.len() as u64 <= in_memory => {
                    self.whole(file, kind, &buf, keep, decoded, report)
                }
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

    /// A file held whole: one typed pass ([`fast`]), or the record-by-record check when that
    /// pass cannot take it.
    fn whole(
        &mut self,
        file: &str,
        kind: RecordKind,
        bytes: &[u8],
        keep: bool,
        decoded: Option<&mut Option<Vec<Whole>>>,
        report: &mut Report,
    ) -> io::Result<Option<Record>> {
        match fast(kind, bytes, keep, decoded) {
            Some((n, kept)) => {
                report.records += n;
                Ok(kept)
            }
            None => self.scan(file, kind, &mut &bytes[..], keep, report),
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
        let checked = self.validate_reader_keep(
            file,
            kind,
            Some(size),
            Body::Bytes(&text),
            keep,
            None,
            report,
        );
        // Lines and columns of the decoded text would point nowhere in the binary file; the record
        // and the JSON pointer locate a problem.
        for p in &mut report.problems[before..] {
            if p.location.file == file {
                p.location.position = None;
            }
        }
        checked
    }

    /// [`Validator::validate_reader_keep`] without keeping the record.
    pub fn validate_reader(
        &mut self,
        file: &str,
        kind: RecordKind,
        size: Option<u64>,
        reader: &mut dyn Read,
        report: &mut Report,
    ) -> io::Result<()> {
        self.validate_reader_keep(file, kind, size, Body::Reader(reader), false, None, report)
            .map(|_| ())
    }

    /// The record-by-record check: the file framed ([`crate::frame`]), each record checked.
    fn scan(
        &mut self,
        file: &str,
        kind: RecordKind,
        reader: &mut dyn Read,
        keep: bool,
        report: &mut Report,
    ) -> io::Result<Option<Record>> {
        let options = self.options;
        let mut frames = CheckFrames {
            validators: self.validators,
            cross_check: options.cross_check,
            keep,
            file,
            sink: FileSink::new(report, &options, file),
            kept: None,
            records: false,
        };
        let mut buf = std::mem::take(&mut self.scan_buf);
        let framed = frame(
            reader,
            kind,
            options.max_record_bytes,
            &mut buf,
            &mut frames,
        );
        self.scan_buf = buf;
        framed?;
        Ok(frames.kept)
    }
}

/// Checks each record framing hands on, and reports each way the file breaks its shape.
struct CheckFrames<'a, 'r> {
    validators: &'a crate::validate::Validators,
    cross_check: bool,
    keep: bool,
    file: &'a str,
    sink: FileSink<'r>,
    /// The record of a one-record file, when it is valid and kept.
    kept: Option<Record>,
    /// Whether a record was seen (a problem after it means the file is not read as its kind).
    records: bool,
}

impl Frames for CheckFrames<'_, '_> {
    /// A record the typed decode takes is valid; the rest are framed and explained. (The cross
    /// check parses every record twice, so it frames every record.)
    fn take(&mut self, shape: FileShape, _index: usize, bytes: &[u8], all: bool) -> Take {
        if self.cross_check {
            return Take::Refused;
        }
        match decode_front(shape, bytes, all, self.keep) {
            Ok((kept, n)) => {
                self.records = true;
                self.sink.record(true);
                self.kept = kept;
                Take::Took(n)
            }
            Err(take) => take,
        }
    }

    fn record(&mut self, kind: RecordKind, index: usize, start: Position, bytes: &[u8]) {
        self.records = true;
        let at = At {
            file: self.file,
            index,
            start,
        };
        let verdict = check_record(
            self.validators,
            self.cross_check,
            kind,
            bytes,
            at,
            self.keep,
            &mut self.sink,
        );
        self.sink.record(verdict.is_ok());
        self.kept = verdict.ok().flatten();
    }

    fn problem(&mut self, kind: ProblemKind, at: Option<Position>, message: String) {
        if self.records {
            self.kept = None;
        }
        let location = match at {
            Some(at) => Location::file(self.file).with_position(at.line, at.column),
            None => Location::file(self.file),
        };
        self.sink.push(kind, location, message);
        self.sink.unreadable();
    }
}

/// The one typed pass over a whole file: the number of records and the record of a one-record
/// file when `keep` is set, or `None` when anything is wrong. With `decoded`, the records are
/// kept there, each with where its text is.
fn fast(
    kind: RecordKind,
    bytes: &[u8],
    keep: bool,
    decoded: Option<&mut Option<Vec<Whole>>>,
) -> Option<(usize, Option<Record>)> {
    let text = std::str::from_utf8(bytes).ok()?;
    if let Some(slot) = decoded {
        let records = match slot.take() {
            // Decoded ahead from these bytes as this kind, by the record walk.
            Some(records) => records,
            None => decode_whole_list(kind, bytes)?,
        };
        let kept = match (keep, &records[..]) {
            (
                true,
                [
                    Whole {
                        record: Kept::Other(one),
                        ..
                    },
                ],
            ) => Some((**one).clone()),
            _ => None,
        };
        let n = records.len();
        *slot = Some(records);
        return Some((n, kept));
    }
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
pub(super) fn validate_path(
    validator: &mut Validator<'_>,
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
            validator.options(),
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
            report.push(validator.options(), e.into());
            return;
        }
    };
    let size = opened.size();
    let checked = match crate::layout::Encoding::of_name(name) {
        Some(crate::layout::Encoding::Protobuf) => validator
            .check_binary(&file, kind, &mut opened, false, report)
            .map(|_| ()),
        _ => validator.validate_reader(&file, kind, Some(size), &mut opened, report),
    };
    if let Err(e) = checked {
        let options = *validator.options();
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
