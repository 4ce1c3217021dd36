//! What an evaluator keeps of a record to decide later or to show as a witness: an event's place
//! and text ([`Ev`]), a value with its location ([`Kept`]), and the first copy of each distinct
//! value ([`note`]).

use std::collections::BTreeMap;

use diagwire::Location;
use serde_json::Value;

use crate::verdict::Witness;

/// An event kept for a later decision.
#[derive(Debug, Clone)]
pub(crate) struct Ev {
    /// The node it came from.
    pub node: usize,
    /// Its `monotonic_seq`.
    pub seq: u64,
    /// Its `wall_ms`.
    pub wall: u64,
    /// Its place in the stream.
    pub ord: u64,
    /// Where it is.
    pub loc: Location,
    /// Its JSON text.
    pub text: String,
}

impl Ev {
    /// The event as a witness.
    pub fn witness(&self) -> Witness {
        Witness {
            location: self.loc.clone(),
            value: serde_json::from_str(&self.text).unwrap_or(Value::Null),
        }
    }

    /// Whether it comes before `other` of the same node in the stream's order.
    pub fn earlier_than(&self, other: &Ev) -> bool {
        (self.seq, self.ord) < (other.seq, other.ord)
    }
}

/// A record (or part of one) kept as a witness.
#[derive(Debug, Clone)]
pub(crate) struct Kept {
    /// Where it is.
    pub loc: Location,
    /// Its value.
    pub value: Value,
}

impl Kept {
    /// The value as a witness.
    pub fn witness(&self) -> Witness {
        Witness {
            location: self.loc.clone(),
            value: self.value.clone(),
        }
    }
}

/// `loc` pointing at `ptr` inside its record.
pub(crate) fn with_pointer(loc: &Location, ptr: &str) -> Location {
    let mut l = loc.clone();
    l.pointer = ptr.to_owned();
    l
}

/// Counts one more copy of `key`, keeping the first (at `ptr` of the record at `loc`).
pub(crate) fn note(
    map: &mut BTreeMap<String, (Kept, u64)>,
    key: &str,
    loc: &Location,
    ptr: &str,
    value: impl FnOnce() -> Value,
) {
    match map.get_mut(key) {
        Some((_, n)) => *n += 1,
        None => {
            map.insert(
                key.to_owned(),
                (
                    Kept {
                        loc: with_pointer(loc, ptr),
                        value: value(),
                    },
                    1,
                ),
            );
        }
    }
}
