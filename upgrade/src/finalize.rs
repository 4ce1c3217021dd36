//! Finalize records: `shutdown_reason` becomes the contract's `exit_reason`; the rest is kept.

use serde_json::{Map, Value};

use diagwire::ProblemKind;
use diagwire::v1::{self, RecordKind};

use crate::located::at;
use crate::upgrader::Upgrader;

impl Upgrader<'_> {
    /// One finalize record of the simulator as the contract's finalize record.
    pub(crate) fn finalize(&mut self, rel: &str) -> Option<v1::Finalize> {
        let obj = self.read_object(rel)?;
        self.note_envelope(rel, Some(0), &obj);
        let mut candidate = Map::new();
        for (k, v) in &obj {
            match k.as_str() {
                "schema_version" | "kind" => {}
                "shutdown_reason"
                    if (v.is_string() || v.is_null()) && !obj.contains_key("exit_reason") =>
                {
                    candidate.insert("exit_reason".into(), v.clone());
                }
                _ => {
                    candidate.insert(k.clone(), v.clone());
                }
            }
        }
        let candidate = Value::Object(candidate);
        match self.parse::<v1::Finalize>(RecordKind::Finalize, &candidate) {
            Ok(record) => {
                self.report_unknown(
                    &at(rel, Some(0), ""),
                    RecordKind::Finalize,
                    "finalize record",
                    &candidate,
                    None,
                );
                Some(record)
            }
            Err(why) => {
                self.note(
                    ProblemKind::Schema,
                    at(rel, Some(0), ""),
                    format!("does not fit the contract's finalize record ({why}); not written"),
                );
                None
            }
        }
    }
}
