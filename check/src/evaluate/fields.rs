//! An event's fields as the evaluators read them ([`super::EventIn::value`]): its JSON text read
//! as a [`Tape`], so that an evaluator looks a field up without a `serde_json::Value` being built
//! of every event; a whole value is built only for a witness.

use std::borrow::Cow;

use serde_json::Value;

use super::key::Part;
use diagwire::view::{Buffer, Tape};

/// The fields of one event record.
#[derive(Debug)]
pub(crate) struct Fields<'t> {
    text: &'t str,
    tape: Tape<'t>,
}

impl<'t> Fields<'t> {
    /// Reads `text`, a JSON object, with `buffer`'s allocation; gives the buffer back when it is
    /// not one JSON object.
    pub fn read(text: &'t str, buffer: Buffer) -> Result<Fields<'t>, Buffer> {
        match Tape::read(text, buffer) {
            Ok(tape) if tape.is_object(0) => Ok(Fields { text, tape }),
            Ok(tape) => Err(tape.into_buffer()),
            Err(b) => Err(b),
        }
    }

    /// Gives the tape's buffer back, for the next event.
    pub fn into_buffer(self) -> Buffer {
        self.tape.into_buffer()
    }

    fn at(&self, key: &str) -> Option<usize> {
        self.tape.get(0, key)
    }

    /// Whether the event has `key` (`null` included).
    pub fn contains(&self, key: &str) -> bool {
        self.at(key).is_some()
    }

    /// Whether the event has `key`, not `null`.
    pub fn has(&self, key: &str) -> bool {
        self.at(key).is_some_and(|v| !self.tape.is_null(v))
    }

    /// The string under `key`, if it is one.
    pub fn str_of(&self, key: &str) -> Option<Cow<'t, str>> {
        self.tape.as_str(self.at(key)?)
    }

    /// The key part `key` gives: its value's JSON text, `None` when absent or `null`.
    pub fn part(&self, key: &str) -> Part {
        let v = self.at(key).filter(|&v| !self.tape.is_null(v))?;
        self.tape.canonical(v)
    }

    /// The whole event as a JSON value, for a witness.
    pub fn value(&self) -> Value {
        serde_json::from_str(self.text).unwrap_or(Value::Null)
    }
}
