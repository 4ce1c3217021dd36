//! One record: the typed parse decides, the schema explains.
//!
//! The contract's invariant is that a record's schema verdict equals its typed parse (the fuzz
//! targets check it), so a record the generated type reads is valid and costs one typed decode.
//! Only a record the type refuses is parsed again, as a JSON value that refuses duplicate keys, and
//! run through the JSON Schema validator to say where and why. With [`super::Options::cross_check`]
//! every record goes through both, and any disagreement is reported as a defect of the contract.

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::FileSink;
use crate::problem::{Location, ProblemKind};
use crate::scan::Position;
use crate::v1::{Record, RecordKind};
use crate::validate::Validators;

/// Where a record is: its file, its index in the file and where its text starts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At<'a> {
    pub file: &'a str,
    pub index: usize,
    pub start: Position,
}

impl At<'_> {
    fn location(&self, pointer: impl Into<String>) -> Location {
        Location::record(self.file, self.index, pointer)
            .with_position(self.start.line, self.start.column)
    }

    /// The location of a serde_json error inside the record's text, as a line and column of the
    /// file.
    fn error_location(&self, e: &serde_json::Error) -> Location {
        let (line, column) = if e.line() <= 1 {
            (
                self.start.line,
                self.start.column + e.column().saturating_sub(1) as u64,
            )
        } else {
            (self.start.line + e.line() as u64 - 1, e.column() as u64)
        };
        Location::record(self.file, self.index, "").with_position(line, column.max(1))
    }
}

/// Checks one record's text as a record of `kind`. Returns the record when it is valid and `keep`
/// is set, `Ok(None)` when it is valid, `Err(())` when it is not (its problems are in `sink`).
pub(crate) fn check_record(
    validators: &Validators,
    cross_check: bool,
    kind: RecordKind,
    bytes: &[u8],
    at: At<'_>,
    keep: bool,
    sink: &mut FileSink<'_>,
) -> Result<Option<Record>, ()> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            if sink.explains() {
                let before = &bytes[..e.valid_up_to()];
                let lines = before.iter().filter(|b| **b == b'\n').count() as u64;
                let column = match before.iter().rposition(|b| *b == b'\n') {
                    Some(nl) => before.len() - nl,
                    None => at.start.column as usize + before.len(),
                } as u64;
                sink.push(
                    ProblemKind::Encoding,
                    Location::record(at.file, at.index, "")
                        .with_position(at.start.line + lines, column),
                    "not UTF-8: an invalid byte sequence",
                );
            } else {
                sink.unexplained();
            }
            return Err(());
        }
    };
    if !sink.explains() && crate::frame::not_an_object(bytes) != Some(false) {
        // Not explained anyway: the typed decode's error is not worth building.
        sink.unexplained();
        return Err(());
    }
    match Record::parse(kind, text) {
        Ok(record) => {
            if cross_check {
                let value = parse_strict(text).ok();
                let violations = value
                    .map(|v| validators.violations(kind, &v))
                    .unwrap_or_default();
                if let Some(first) = violations.first() {
                    sink.push(
                        ProblemKind::ContractBug,
                        at.location(first.pointer.clone()),
                        format!(
                            "the typed parse accepts a record the schema rejects ({}); a defect of the contract, please report it",
                            first.message
                        ),
                    );
                    return Err(());
                }
            }
            Ok(keep.then_some(record))
        }
        Err(error) => {
            if sink.explains() {
                explain(validators, kind, text, at, &error, sink);
            } else {
                sink.unexplained();
            }
            Err(())
        }
    }
}

/// Says why the typed parse refused `text`.
fn explain(
    validators: &Validators,
    kind: RecordKind,
    text: &str,
    at: At<'_>,
    typed: &serde_json::Error,
    sink: &mut FileSink<'_>,
) {
    let value = match parse_strict(text) {
        Ok(v) => v,
        Err(Strict::Duplicate { pointer, key }) => {
            sink.push(
                ProblemKind::DuplicateKey,
                at.location(pointer),
                format!("the key `{key}` appears twice in one object; readers refuse the record"),
            );
            return;
        }
        Err(Strict::Json(e)) => {
            let (kind, message) = json_error(&e);
            sink.push(kind, at.error_location(&e), message);
            return;
        }
    };
    let violations = validators.violations(kind, &value);
    if violations.is_empty() {
        sink.push(
            ProblemKind::ContractBug,
            at.error_location(typed),
            format!(
                "the schema accepts the record but the typed parse refuses it ({}); a defect of the contract, please report it",
                serde_message(typed)
            ),
        );
        return;
    }
    for v in violations {
        sink.push(ProblemKind::Schema, at.location(v.pointer), v.message);
    }
}

/// The kind and message of a serde_json error about text that is not a readable JSON value.
pub(crate) fn json_error(e: &serde_json::Error) -> (ProblemKind, String) {
    let message = serde_message(e);
    if message.starts_with("recursion limit exceeded") {
        (
            ProblemKind::Parse,
            format!(
                "arrays and objects nest deeper than {} levels, which the readers refuse",
                crate::scan::MAX_DEPTH
            ),
        )
    } else if message.starts_with("number out of range") {
        (
            ProblemKind::Parse,
            "a number beyond the range of a 64-bit float, which the readers refuse".to_owned(),
        )
    } else if e.is_eof() {
        (
            ProblemKind::Encoding,
            format!("not JSON: the text ends inside a value ({message})"),
        )
    } else {
        (ProblemKind::Encoding, format!("not JSON: {message}"))
    }
}

/// A serde_json error's message without its ` at line L column C` (the location says where).
pub(crate) fn serde_message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    match full.rfind(" at line ") {
        Some(i) if e.line() > 0 => full[..i].to_owned(),
        _ => full,
    }
}

/// Why [`parse_strict`] failed.
pub(crate) enum Strict {
    /// The text is not JSON.
    Json(serde_json::Error),
    /// An object holds a key twice: where the second one is.
    Duplicate { pointer: String, key: String },
}

/// Parses JSON text into a value, refusing an object that holds a key twice (a parsed `Value`
/// would keep the last one silently; the typed parse rejects it) and saying where.
pub(crate) fn parse_strict(text: &str) -> Result<Value, Strict> {
    let duplicate = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let result = StrictSeed {
        pointer: String::new(),
        duplicate: &duplicate,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    match (result, duplicate.into_inner()) {
        (_, Some((pointer, key))) => Err(Strict::Duplicate { pointer, key }),
        (Ok(v), None) => Ok(v),
        (Err(e), None) => Err(Strict::Json(e)),
    }
}

struct StrictSeed<'a> {
    pointer: String,
    duplicate: &'a RefCell<Option<(String, String)>>,
}

impl<'de> DeserializeSeed<'de> for StrictSeed<'_> {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(StrictSeed {
            pointer: format!("{}/{}", self.pointer, out.len()),
            duplicate: self.duplicate,
        })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let pointer = format!(
                "{}/{}",
                self.pointer,
                crate::shape::escape_pointer_token(&key)
            );
            if out.contains_key(&key) {
                *self.duplicate.borrow_mut() = Some((pointer, key));
                return Err(serde::de::Error::custom("duplicate key"));
            }
            let v = map.next_value_seed(StrictSeed {
                pointer,
                duplicate: self.duplicate,
            })?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

impl Validators {
    /// Where and why a record's text breaks its schema: one `(kind, JSON pointer, message)` per
    /// reason, for a record its type refuses (a duplicate key, text that is not JSON, each schema
    /// violation). The hook a bundle walk explains refused records with
    /// ([`crate::bundle::records::Walk::explain`]).
    pub fn explain(&self, kind: RecordKind, text: &str) -> Vec<(ProblemKind, String, String)> {
        match parse_strict(text) {
            Ok(value) => self
                .violations(kind, &value)
                .into_iter()
                .map(|v| (ProblemKind::Schema, v.pointer, v.message))
                .collect(),
            Err(Strict::Duplicate { pointer, key }) => vec![(
                ProblemKind::DuplicateKey,
                pointer,
                format!("the key `{key}` appears twice in one object; readers refuse the record"),
            )],
            Err(Strict::Json(e)) => {
                let (kind, message) = json_error(&e);
                vec![(kind, String::new(), message)]
            }
        }
    }

    /// [`Validators::explain`] cut to the first `max` reasons, and whether there are more; the
    /// schema's errors are taken one at a time, so the cost is that of `max` reasons.
    pub fn explain_first(
        &self,
        kind: RecordKind,
        text: &str,
        max: usize,
    ) -> (Vec<(ProblemKind, String, String)>, bool) {
        match parse_strict(text) {
            Ok(value) => {
                let (found, more) = self.violations_first(kind, &value, max);
                let found = found
                    .into_iter()
                    .map(|v| (ProblemKind::Schema, v.pointer, v.message))
                    .collect();
                (found, more)
            }
            Err(_) => {
                let mut all = self.explain(kind, text);
                let more = all.len() > max;
                all.truncate(max);
                (all, more)
            }
        }
    }
}
