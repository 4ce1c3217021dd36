//! The records of a bundle, one at a time, typed: what tools that read a whole bundle (summaries,
//! behavioural checks, parity) walk over.
//!
//! Files come in the reader's order (for a directory, sorted by path, so each node's events files
//! in sequence order); an events file yields each event record on its own. A binary (`.pb`) file
//! yields the records it encodes, with their JSON text ([`crate::binary`]). A file that cannot be
//! read, is not UTF-8 (or not the protobuf of its kind) or does not parse as its kind is reported as a [`Problem`] and the walk goes
//! on, so one bad file never costs the records around it.

use serde::de::DeserializeSeed;

use super::read::BundleReader;
use crate::layout::Role;
use crate::problem::{Location, Problem, ProblemKind};
use crate::v1::{EventRecord, Record, RecordKind};

/// One record and where it is.
#[derive(Debug)]
pub struct Item<'a> {
    /// The file's path inside the run directory.
    pub path: &'a str,
    /// The node directory the file is in (`None` for the manifest).
    pub node: Option<&'a str>,
    /// The file's part in the layout.
    pub role: &'a Role,
    /// The record's index in its file (0 but for events files).
    pub index: usize,
    /// The record; an events file's records come as [`Record::Event`].
    pub record: &'a Record,
    /// The record's JSON text, as written.
    pub text: &'a str,
}

/// Walks every record of `reader`, calling `on_record` for each and `on_problem` for each file or
/// record that cannot be read. Files outside the layout are skipped.
pub fn walk(
    reader: &mut BundleReader,
    mut on_record: impl FnMut(Item<'_>),
    mut on_problem: impl FnMut(Problem),
) {
    let source = reader.source().display().to_string();
    let archive = reader.source().is_file();
    for file in reader.files() {
        let file = match file {
            Ok(f) => f,
            Err(e) => {
                on_problem(e.into());
                continue;
            }
        };
        let Some(kind) = file.role.record_kind() else {
            continue;
        };
        let shown = if archive {
            format!("{source}!{}", file.path)
        } else {
            format!("{source}/{}", file.path)
        };
        let bytes = match crate::binary::json_text(file.encoding, kind, &file.bytes) {
            Ok(b) => b,
            Err(message) => {
                on_problem(Problem::new(
                    ProblemKind::Encoding,
                    Location::file(shown),
                    message,
                ));
                continue;
            }
        };
        let Ok(text) = std::str::from_utf8(&bytes) else {
            on_problem(Problem::new(
                ProblemKind::Encoding,
                Location::file(shown),
                "not UTF-8",
            ));
            continue;
        };
        let node = file.node.as_deref();
        if kind == RecordKind::EventBatch {
            let mut index = 0;
            let mut each = |raw: &serde_json::value::RawValue| {
                let t = raw.get();
                match serde_json::from_str::<EventRecord>(t) {
                    Ok(r) => on_record(Item {
                        path: &file.path,
                        node,
                        role: &file.role,
                        index,
                        record: &Record::Event(r),
                        text: t,
                    }),
                    Err(e) => on_problem(Problem::new(
                        ProblemKind::Parse,
                        Location::record(&shown, index, ""),
                        format!("not an event record: {e}"),
                    )),
                }
                index += 1;
            };
            let mut de = serde_json::Deserializer::from_str(text);
            if let Err(e) = EachElement(&mut each).deserialize(&mut de) {
                on_problem(Problem::new(
                    ProblemKind::Shape,
                    Location::file(&shown),
                    format!("not a JSON array of event records: {e}"),
                ));
            }
            continue;
        }
        match Record::parse(kind, text) {
            Ok(record) => on_record(Item {
                path: &file.path,
                node,
                role: &file.role,
                index: 0,
                record: &record,
                text,
            }),
            Err(e) => on_problem(Problem::new(
                ProblemKind::Parse,
                Location::record(&shown, 0, ""),
                format!("not a {kind} record: {e}"),
            )),
        }
    }
}

/// Hands each element of a JSON array to a closure as raw text, without holding the array.
struct EachElement<'f, F>(&'f mut F);

impl<'de, F: FnMut(&serde_json::value::RawValue)> DeserializeSeed<'de> for EachElement<'_, F> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, F: FnMut(&serde_json::value::RawValue)> serde::de::Visitor<'de> for EachElement<'_, F> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON array")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(raw) = seq.next_element::<&'de serde_json::value::RawValue>()? {
            (self.0)(raw);
        }
        Ok(())
    }
}
