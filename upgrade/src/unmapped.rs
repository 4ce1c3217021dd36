//! The report of what could not be mapped: every item is a located [`Problem`] in the simulator's
//! directory, with the offending value quoted (cut short) and the validator's reasons.

use serde_json::Value;

use diagwire::v1::{self, RecordKind};
use diagwire::{Location, Problem, ProblemKind, shape};

use crate::Object;
use crate::located::{at, key_pointer, quote};
use crate::upgrader::Upgrader;

impl Upgrader<'_> {
    /// Lists one item.
    pub(crate) fn note(
        &mut self,
        kind: ProblemKind,
        location: Location,
        message: impl Into<String>,
    ) {
        self.problems.push(Problem::new(kind, location, message));
    }

    /// Lists the simulator's envelope keys of a record, which the upgrade drops.
    pub(crate) fn note_envelope(&mut self, rel: &str, record: Option<usize>, object: &Object) {
        for key in ["schema_version", "kind"] {
            if let Some(v) = object.get(key) {
                self.note(
                    ProblemKind::Unmapped,
                    at(rel, record, key_pointer(key)),
                    format!(
                        "the simulator's envelope key `{key}` ({}) dropped: the contract names a \
                         record's kind by the file's place in the layout",
                        quote(v)
                    ),
                );
            }
        }
    }

    /// Lists every key of `value` (a record of `kind` at `record`) that the contract keeps only as
    /// an unknown key, except those under the pointer `skip`.
    pub(crate) fn report_unknown(
        &mut self,
        record: &Location,
        kind: RecordKind,
        what: &str,
        value: &Value,
        skip: Option<&str>,
    ) {
        for pointer in shape::unknown_keys(&v1::CONTRACT, kind.as_str(), value) {
            if skip.is_some_and(|s| pointer == s || pointer.starts_with(&format!("{s}/"))) {
                continue;
            }
            let quoted = value
                .pointer(&pointer)
                .map_or_else(String::new, |v| format!(" ({})", quote(v)));
            let message = format!(
                "key `{pointer}`{quoted} has no place in the contract's {what}; kept as an unknown key"
            );
            let mut location = record.clone();
            location.pointer = pointer;
            self.note(ProblemKind::Unmapped, location, message);
        }
    }
}
