//! Re-encoding a bundle's record files: JSON to the binary form or back (feature `proto`).
//!
//! Every record file is decoded to its JSON value and written in the target encoding at the same
//! place of the layout with the target extension; the manifest stays `MANIFEST.json`. The
//! conversion is exact in both directions: a converted bundle converted back holds the same JSON
//! values (`docs/protobuf.md`). A file that does not decode as its kind is copied unchanged and
//! reported, so nothing is lost; so is a record file whose converted form would be over the
//! reader's per-file limit ([`Limits::max_file_bytes`], default caps), so that what is written
//! always reads back. Files outside the layout are reported and left out.
//!
//! [`convert_each`] streams: it reads the bundle one file at a time and hands each converted file
//! on as soon as it is made, so memory holds one file (within the reader's caps) whatever the
//! bundle holds. An events file is never one JSON value: its records are converted one at a time
//! (framed by [`crate::frame`] as validation frames them, or item by item from an `EventBatch`),
//! so beside the file and its result memory holds one record. A record that does not convert is a
//! problem located by the file, its index and its line and column (or protobuf path and byte),
//! the first [`MAX_PROBLEMS_PER_FILE`] of a file listed and the rest counted, and the file is
//! copied unchanged. The codec takes a record as a JSON value, so a record (or a file of one
//! record) of more than [`MAX_RECORD_VALUES`] values is copied unchanged and reported rather than
//! held. [`convert`] collects the files in memory.

use std::io;

use serde_json::Value;

use super::BundleContents;
use super::read::{BundleReader, Limits};
use super::records::MAX_PROBLEMS_PER_FILE;
use crate::binary::MAX_BINARY_FILE_BYTES;
use crate::frame::{Frames, frame};
use crate::layout::{self, Encoding};
use crate::problem::{Location, Problem, ProblemKind, ReadErrorKind};
use crate::scan::Position;
use crate::v1::RecordKind;

/// The bundle `reader` opens with every record file in `to`, and the problems met (files that
/// could not be read, were copied unchanged because they do not decode as their kind, or were
/// left out). Holds the whole result in memory; [`convert_each`] does not.
pub fn convert(reader: &mut BundleReader, to: Encoding) -> (BundleContents, Vec<Problem>) {
    let mut out = BundleContents::new(reader.run_id());
    let problems = convert_each(reader, to, |path, bytes| {
        if out.files.contains_key(path) {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, path));
        }
        out.files.insert(path.to_owned(), bytes.to_vec());
        Ok(())
    });
    match problems {
        Ok(problems) => (out, problems),
        Err(e) => {
            let at = Location::file(reader.source().display().to_string());
            (
                out,
                vec![Problem::new(ProblemKind::Layout, at, e.to_string())],
            )
        }
    }
}

/// Converts the bundle `reader` opens one file at a time, handing each file of the result to
/// `put` (its path relative to the run directory, and its bytes) in the order the reader yields
/// them, and returns the problems met. A `put` failing with [`io::ErrorKind::AlreadyExists`]
/// (two files of the bundle convert to the same path) is reported and the later file left out;
/// any other failure of `put` stops the conversion and is returned, as is a result that would be
/// over the reader's total limit.
pub fn convert_each(
    reader: &mut BundleReader,
    to: Encoding,
    mut put: impl FnMut(&str, &[u8]) -> io::Result<()>,
) -> io::Result<Vec<Problem>> {
    let caps = Limits::default();
    let mut problems = Vec::new();
    let mut written: u64 = 0;
    for file in reader.files() {
        let file = match file {
            Ok(f) => f,
            Err(e) => {
                problems.push(e.into());
                continue;
            }
        };
        let kind = file.role.record_kind();
        let (path, bytes) = match (kind, file.node.as_deref()) {
            (None, _) => {
                problems.push(Problem::new(
                    ProblemKind::Layout,
                    Location::file(&file.location),
                    "a file outside the bundle layout; left out",
                ));
                continue;
            }
            // The manifest, and files already in the target encoding.
            (Some(_), None) => (file.path, file.bytes),
            (Some(_), Some(_)) if file.encoding == to => (file.path, file.bytes),
            (Some(kind), Some(node)) => {
                let converted = Converting {
                    location: &file.location,
                    from: file.encoding,
                    to,
                    kind,
                    max: caps.max_file_bytes,
                }
                .file(&file.bytes);
                match converted {
                    Ok(bytes) => (layout::bundle_path_as(node, &file.role, to), bytes),
                    Err(found) => {
                        problems.extend(found);
                        (file.path, file.bytes)
                    }
                }
            }
        };
        written = written.saturating_add(bytes.len() as u64);
        if written > caps.max_total_bytes {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the converted bundle is over the total limit of {} bytes at `{path}`",
                    caps.max_total_bytes
                ),
            ));
        }
        match put(&path, &bytes) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                problems.push(Problem::new(
                    ProblemKind::Layout,
                    Location::file(&file.location),
                    format!("another file of the bundle converts to `{path}` too; left out"),
                ));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(problems)
}

/// The largest single record of an events file read, as validation reads it.
const MAX_RECORD_BYTES: usize = 64 << 20;

/// The most JSON values a record may hold to be converted to the binary form. The codec takes a
/// record as a `serde_json::Value`, tens of bytes per value, so a record of tens of millions of
/// values (a 63 MiB array of zeros, inside an object or not) is copied unchanged, not held.
const MAX_RECORD_VALUES: usize = 1 << 22;

/// Whether the JSON `text` may hold more than `max` values: one, and one more after each `,`,
/// `[` and `{` outside strings (an upper bound, counted without parsing).
fn too_many_values(text: &[u8], max: usize) -> bool {
    let (mut count, mut in_string, mut escaped) = (1usize, false, false);
    for &b in text {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if matches!(b, b',' | b'[' | b'{') {
            count += 1;
            if count > max {
                return true;
            }
        }
    }
    false
}

/// What a record over [`MAX_RECORD_VALUES`] is told.
fn too_many_values_message() -> String {
    format!(
        "holds more than {MAX_RECORD_VALUES} JSON values, more than convert holds of one record"
    )
}

/// One record file being converted: where it is, its encoding and the target's, its kind, and the
/// largest result kept.
struct Converting<'a> {
    location: &'a str,
    from: Encoding,
    to: Encoding,
    kind: RecordKind,
    max: u64,
}

impl Converting<'_> {
    /// The file's bytes in the target encoding, or the problems that keep it unchanged. An events
    /// file goes record by record, so memory holds the file, its result and one record; a record
    /// that does not convert is reported with its index (and where it is, when known), the first
    /// [`MAX_PROBLEMS_PER_FILE`] of them, the rest counted.
    fn file(&self, bytes: &[u8]) -> Result<Vec<u8>, Vec<Problem>> {
        let mut found = Found {
            location: self.location,
            problems: Vec::new(),
            more: 0,
        };
        let out = match (self.kind, self.from, self.to) {
            (RecordKind::EventBatch, Encoding::Json, Encoding::Protobuf) => {
                self.events_to_binary(bytes, &mut found)
            }
            (RecordKind::EventBatch, Encoding::Protobuf, Encoding::Json) => {
                self.events_to_json(bytes, &mut found)
            }
            _ => self.one(bytes, &mut found),
        };
        match out {
            Some(out) if found.problems.is_empty() => Ok(out),
            _ => Err(found.finish()),
        }
    }

    /// A file of one record, converted whole.
    fn one(&self, bytes: &[u8], found: &mut Found<'_>) -> Option<Vec<u8>> {
        let kind = self.kind;
        let converted = match self.to {
            Encoding::Protobuf if too_many_values(bytes, MAX_RECORD_VALUES) => {
                Err(too_many_values_message())
            }
            Encoding::Protobuf => serde_json::from_slice::<Value>(bytes)
                .map_err(|e| format!("not JSON: {e}"))
                .and_then(|v| {
                    diagwire_proto::encode(diagwire_proto::current(), kind, &v)
                        .map_err(|e| format!("cannot encode the {kind} record as protobuf: {e}"))
                }),
            Encoding::Json if bytes.len() > MAX_BINARY_FILE_BYTES => Err(format!(
                "larger than the {MAX_BINARY_FILE_BYTES} bytes a binary record file may have"
            )),
            Encoding::Json => diagwire_proto::decode(diagwire_proto::current(), kind, bytes)
                .map(|v| crate::binary::pretty_json(&v))
                .map_err(|e| format!("not the protobuf of a {kind} record: {e}")),
        };
        let converted = converted.and_then(|bytes| {
            if bytes.len() as u64 > self.max {
                Err(format!(
                    "{} bytes once converted, over the per-file limit of {} bytes",
                    bytes.len(),
                    self.max
                ))
            } else {
                Ok(bytes)
            }
        });
        match converted {
            Ok(bytes) => Some(bytes),
            Err(message) => {
                found.file(ProblemKind::Encoding, None, message);
                None
            }
        }
    }

    /// An events file of JSON, framed record by record ([`crate::frame`], as validation reads
    /// it): each record is parsed on its own and appended to the `EventBatch` as its next item.
    fn events_to_binary(&self, bytes: &[u8], found: &mut Found<'_>) -> Option<Vec<u8>> {
        let mut sink = ToBinary {
            out: Vec::new(),
            max: self.max,
            over: false,
            found,
        };
        let framed = frame(
            &mut &bytes[..],
            RecordKind::EventBatch,
            MAX_RECORD_BYTES,
            &mut Vec::new(),
            &mut sink,
        );
        let (out, over) = (sink.out, sink.over);
        if let Err(e) = framed {
            found.file(ProblemKind::Read(ReadErrorKind::Io), None, e.to_string());
        }
        if over {
            found.file(ProblemKind::Encoding, None, self.over_limit());
        }
        Some(out)
    }

    /// An events file in the binary form: one `EventBatch`, whose items (field 1, one event each)
    /// are decoded one at a time and written as the elements of the JSON array, as they come.
    fn events_to_json(&self, bytes: &[u8], found: &mut Found<'_>) -> Option<Vec<u8>> {
        if bytes.len() > MAX_BINARY_FILE_BYTES {
            found.file(
                ProblemKind::Encoding,
                None,
                format!(
                    "larger than the {MAX_BINARY_FILE_BYTES} bytes a binary record file may have"
                ),
            );
            return None;
        }
        let mut out = Capped {
            bytes: Vec::new(),
            max: self.max,
        };
        let mut rest = bytes;
        let mut index = 0;
        let items = std::iter::from_fn(|| {
            while !rest.is_empty() {
                let offset = bytes.len() - rest.len();
                let (item, after) = match next_item(rest) {
                    Ok(split) => split,
                    Err(message) => {
                        found.file(
                            ProblemKind::Encoding,
                            None,
                            format!(
                                "not the protobuf of an events file at byte {offset}: {message}"
                            ),
                        );
                        return None;
                    }
                };
                rest = after;
                let at = index;
                index += 1;
                // The item alone is an `EventBatch` of one event: decoded as the whole file's
                // items are, with the same limits.
                match diagwire_proto::decode(
                    diagwire_proto::current(),
                    RecordKind::EventBatch,
                    item,
                ) {
                    Ok(Value::Array(mut one)) if one.len() == 1 && found.problems.is_empty() => {
                        return one.pop();
                    }
                    // The file is copied unchanged: the rest is only checked, for the report.
                    Ok(_) => {}
                    Err(e) => found.record(
                        ProblemKind::Encoding,
                        Location::record(found.location, at, ""),
                        || {
                            format!(
                                "not the protobuf of an event record: at `{}` (byte {}): {}",
                                e.path,
                                offset + e.offset,
                                e.message
                            )
                        },
                    ),
                }
            }
            None
        });
        let written = {
            let mut json = serde_json::Serializer::pretty(&mut out);
            serde::Serializer::collect_seq(&mut json, items)
        };
        if written.is_err() {
            found.file(ProblemKind::Encoding, None, self.over_limit());
            return None;
        }
        let mut bytes = out.bytes;
        bytes.push(b'\n');
        if bytes.len() as u64 > self.max {
            found.file(ProblemKind::Encoding, None, self.over_limit());
            return None;
        }
        Some(bytes)
    }

    fn over_limit(&self) -> String {
        format!(
            "more than {} bytes once converted, over the per-file limit",
            self.max
        )
    }
}

/// The next item of an `EventBatch`'s bytes: the item with its key and length (itself the
/// message of a batch of one), and what follows it.
fn next_item(bytes: &[u8]) -> Result<(&[u8], &[u8]), String> {
    use prost::encoding::{WireType, decode_key, decode_varint};
    let mut cursor = bytes;
    let (number, wire) = decode_key(&mut cursor).map_err(|e| e.to_string())?;
    if number != 1 || wire != WireType::LengthDelimited {
        return Err(format!(
            "field {number} of wire type {wire:?}, where an events file holds only its events (field 1, length-delimited)"
        ));
    }
    let len = decode_varint(&mut cursor).map_err(|e| e.to_string())?;
    let head = bytes.len() - cursor.len();
    match usize::try_from(len) {
        Ok(len) if len <= cursor.len() => Ok(bytes.split_at(head + len)),
        _ => Err(format!(
            "an event of {len} bytes announced, {} left",
            cursor.len()
        )),
    }
}

/// What a file's conversion found: the problems listed, and how many more were not.
struct Found<'a> {
    location: &'a str,
    problems: Vec<Problem>,
    more: usize,
}

impl Found<'_> {
    /// A problem with the file as a whole (at `at` in its text, when known).
    fn file(&mut self, kind: ProblemKind, at: Option<Position>, message: String) {
        let mut location = Location::file(self.location);
        if let Some(at) = at {
            location = location.with_position(at.line, at.column);
        }
        self.problems.push(Problem::new(
            kind,
            location,
            format!("{message}; copied unchanged"),
        ));
    }

    /// A record that does not convert; its message is made only when it is listed.
    fn record(&mut self, kind: ProblemKind, at: Location, message: impl FnOnce() -> String) {
        if self.problems.len() >= MAX_PROBLEMS_PER_FILE {
            self.more += 1;
            return;
        }
        self.problems.push(Problem::new(
            kind,
            at,
            format!("{}; the file is copied unchanged", message()),
        ));
    }

    /// The problems, with one more counting those not listed.
    fn finish(mut self) -> Vec<Problem> {
        if self.more > 0 {
            self.problems.push(Problem::new(
                ProblemKind::Encoding,
                Location::file(self.location),
                format!(
                    "{} more record(s) of this file do not convert (the first {MAX_PROBLEMS_PER_FILE} are listed)",
                    self.more
                ),
            ));
        }
        self.problems
    }
}

/// Converts the records of a JSON events file one at a time into the items of an `EventBatch`.
struct ToBinary<'f, 'a> {
    out: Vec<u8>,
    max: u64,
    /// The result passed the per-file limit (and was dropped).
    over: bool,
    found: &'f mut Found<'a>,
}

impl Frames for ToBinary<'_, '_> {
    fn record(&mut self, _kind: RecordKind, index: usize, start: Position, bytes: &[u8]) {
        let location = self.found.location;
        let at = |pointer: &str| {
            Location::record(location, index, pointer).with_position(start.line, start.column)
        };
        // A record that is not an object is no event, whatever it holds: refused unparsed.
        if bytes.first() != Some(&b'{') {
            self.found.record(ProblemKind::Shape, at(""), || {
                "not an event record: an event is a JSON object".to_owned()
            });
            return;
        }
        if too_many_values(bytes, MAX_RECORD_VALUES) {
            self.found.record(
                ProblemKind::Read(ReadErrorKind::TooLarge),
                at(""),
                too_many_values_message,
            );
            return;
        }
        let value: Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(e) => {
                self.found
                    .record(ProblemKind::Encoding, at(""), || format!("not JSON: {e}"));
                return;
            }
        };
        // The record alone is an `EventBatch` of one event: its bytes are the batch's item, as
        // the whole file's encoding writes it.
        let batch = Value::Array(vec![value]);
        match diagwire_proto::encode(diagwire_proto::current(), RecordKind::EventBatch, &batch) {
            Ok(item) if self.found.problems.is_empty() && !self.over => {
                if (self.out.len() + item.len()) as u64 > self.max {
                    self.over = true;
                    self.out = Vec::new();
                } else {
                    self.out.extend_from_slice(&item);
                }
            }
            Ok(_) => {}
            Err(e) => {
                self.out = Vec::new();
                let pointer = match e.path.strip_prefix("/0") {
                    Some(inside) if inside.is_empty() || inside.starts_with('/') => inside,
                    _ => "",
                };
                self.found.record(ProblemKind::Encoding, at(pointer), || {
                    let message = if e.path.is_empty() {
                        "an event record the protobuf descriptor cannot hold".to_owned()
                    } else {
                        e.message.clone()
                    };
                    format!("cannot encode the event record as protobuf: {message}")
                });
            }
        }
    }

    fn problem(&mut self, kind: ProblemKind, at: Option<Position>, message: String) {
        self.out = Vec::new();
        self.found.file(kind, at, message);
    }
}

/// A buffer that refuses to grow past `max` bytes.
struct Capped {
    bytes: Vec<u8>,
    max: u64,
}

impl io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if (self.bytes.len() + buf.len()) as u64 > self.max {
            return Err(io::Error::other("over the per-file limit"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
