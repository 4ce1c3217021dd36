//! Events: an events file's envelope and each of its records mapped onto the contract's event
//! record (`variant` → `type`, node ids from hex or directory names to the contract's forms,
//! `Custom` and `register_name` renamed), kept as a simulator `Custom` kind when it does not fit.

use serde_json::{Map, Value, json};

use diagwire::v1::{self, RecordKind};
use diagwire::{Location, NodeId, ProblemKind};

use std::io;

use crate::Object;
use crate::contract::{event_envelope_keys, event_id_fields};
use crate::identity::{hex_node_id, id_bytes};
use crate::located::{at, key_pointer, quote};
use crate::nodes::Node;
use crate::size::pretty_size;
use crate::stream::{self, Envelope};
use crate::upgrader::{Out, Upgrader};

impl Upgrader<'_> {
    /// One events file: the envelope's `records`, each upgraded on its own, written to `out` as
    /// one or more events files of the node that each fit the reader's per-file cap (one unless
    /// the file is large), a record at a time. The file is read within the read cap and its
    /// records parsed one at a time ([`crate::stream`]); `false` when it was skipped, an error
    /// when `out` could not write.
    pub(crate) fn events_file(
        &mut self,
        node: &Node,
        rel: &str,
        out: &mut dyn Out,
    ) -> io::Result<bool> {
        let Some(bytes) = self.read_bytes(rel) else {
            return Ok(false);
        };
        let (envelope, found) = match stream::envelope(&bytes) {
            Ok(Envelope::Object { keys, records }) => (keys, records),
            Ok(Envelope::NotObject(what)) => {
                self.note(
                    ProblemKind::Shape,
                    Location::file(rel),
                    format!("not a JSON object ({what}); skipped"),
                );
                return Ok(false);
            }
            Err(e) => {
                self.note(
                    ProblemKind::Encoding,
                    Location::file(rel),
                    format!("not JSON ({e}); skipped"),
                );
                return Ok(false);
            }
        };
        let Some(found) = found else {
            self.note(
                ProblemKind::Shape,
                Location::file(rel),
                "an events file without a `records` array; skipped",
            );
            return Ok(false);
        };
        self.note_envelope(rel, None, &envelope);
        for (k, v) in &envelope {
            if matches!(k.as_str(), "schema_version" | "kind" | "records") {
                continue;
            }
            self.note(
                ProblemKind::Unmapped,
                at(rel, None, key_pointer(k)),
                format!(
                    "`{k}` ({}) of the events envelope dropped: an events file in the contract is a bare \
                     JSON array of event records",
                    quote(v)
                ),
            );
        }
        let cap = self.max_file_bytes;
        let hex = node.id.to_hex();
        let mut batch = Batch::default();
        let mut failed = out.begin_events(&hex).err();
        let parsed = stream::records(&bytes, &found, &mut |i, record| {
            if failed.is_some() {
                return;
            }
            let Some(event) = self.event(node, rel, i, &record) else {
                return;
            };
            let size = element_size(&event);
            if ARRAY_BYTES + size > cap {
                self.note(
                    ProblemKind::Layout,
                    at(rel, Some(i), ""),
                    format!(
                        "an event record of {size} bytes once written, over the per-file limit of \
                         {cap} bytes; dropped"
                    ),
                );
                return;
            }
            if batch.records > 0 && batch.bytes + SEPARATOR_BYTES + size > cap {
                if let Err(e) = out.end_events().and_then(|()| out.begin_events(&hex)) {
                    failed = Some(e);
                    return;
                }
                batch = Batch::default();
            }
            batch.add(size);
            if let Err(e) = out.event(&event) {
                failed = Some(e);
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        if let Err(e) = parsed {
            // The bytes were JSON a moment ago; they are not read again.
            self.note(
                ProblemKind::Encoding,
                Location::file(rel),
                format!("not JSON ({e}); the records after the error skipped"),
            );
        }
        out.end_events()?;
        Ok(true)
    }

    /// The node id a hex string (any case) or a node's directory name names.
    pub(crate) fn resolve_id(&self, value: &Value) -> Option<NodeId> {
        value
            .as_str()
            .and_then(|s| hex_node_id(s).or_else(|| self.names.get(s).copied()))
    }

    /// A hex string or a node's directory name as the contract's byte-array node id.
    pub(crate) fn to_id_bytes(&self, value: &Value) -> Value {
        self.resolve_id(value)
            .map_or_else(|| value.clone(), |id| id_bytes(&id))
    }

    /// A node's directory name (or upper-case hex) as the contract's hex node id.
    pub(crate) fn to_id_hex(&self, value: &Value) -> Value {
        self.resolve_id(value)
            .map_or_else(|| value.clone(), |id| Value::String(id.to_string()))
    }

    /// Event record `index` of events file `rel` as the contract's event record.
    pub(crate) fn event(
        &mut self,
        node: &Node,
        rel: &str,
        index: usize,
        record: &Value,
    ) -> Option<v1::EventRecord> {
        let here = |pointer: &str| at(rel, Some(index), pointer);
        let Some(obj) = record.as_object() else {
            self.note(
                ProblemKind::Shape,
                here(""),
                format!(
                    "an event record that is not a JSON object ({}); dropped",
                    quote(record)
                ),
            );
            return None;
        };
        let wall_ms = obj.get("wall_ms").and_then(Value::as_u64);
        let seq = obj.get("monotonic_seq").and_then(Value::as_u64);
        let variant = obj.get("variant").and_then(Value::as_str);
        let (Some(wall_ms), Some(seq), Some(variant)) = (wall_ms, seq, variant) else {
            self.note(
                ProblemKind::Shape,
                here(""),
                format!(
                    "an event record without an integer `wall_ms`, an integer `monotonic_seq` and a \
                     string `variant`; dropped: {}",
                    quote(record)
                ),
            );
            return None;
        };
        let mut rest: Object = obj
            .iter()
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "variant" | "user_kind" | "wall_ms" | "monotonic_seq"
                )
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut candidate = Map::new();
        candidate.insert("node_id".into(), id_bytes(&node.id));
        candidate.insert("monotonic_seq".into(), seq.into());
        candidate.insert("wall_ms".into(), wall_ms.into());

        let name; // the type, or the custom kind, for messages and the fallback kind
        let as_written; // the fields as the simulator wrote them, for the fallback
        if variant == "Custom" {
            let kind = match obj.get("user_kind") {
                Some(Value::String(k)) => Some(k.clone()),
                Some(other) => {
                    rest.insert("user_kind".into(), other.clone());
                    None
                }
                None => match rest.remove("kind") {
                    Some(Value::String(k)) => Some(k),
                    Some(other) => {
                        rest.insert("kind".into(), other);
                        None
                    }
                    None => None,
                },
            };
            let kind = kind.unwrap_or_else(|| {
                self.note(
                    ProblemKind::Shape,
                    here(""),
                    "a `Custom` event without a string `user_kind`; written as kind `sim.custom`",
                );
                "sim.custom".to_owned()
            });
            let mut fields = if rest.len() == 1 && rest.contains_key("fields") {
                rest.remove("fields").unwrap_or(Value::Null)
            } else {
                Value::Object(rest)
            };
            as_written = fields.clone();
            if kind == "register_name" {
                self.adapt_register_name(node, wall_ms, &mut fields);
            }
            candidate.insert("type".into(), json!("Custom"));
            candidate.insert("kind".into(), json!(kind));
            candidate.insert("fields".into(), fields);
            name = kind;
        } else {
            if let Some(user_kind) = obj.get("user_kind") {
                rest.insert("user_kind".into(), user_kind.clone());
            }
            as_written = Value::Object(rest.clone());
            let (id_fields, hex_fields) = event_id_fields(variant);
            let envelope = event_envelope_keys();
            for (k, v) in rest {
                let v = if id_fields.contains(&k.as_str()) {
                    self.to_id_bytes(&v)
                } else if hex_fields.contains(&k.as_str()) {
                    self.to_id_hex(&v)
                } else {
                    v
                };
                if envelope.contains(k.as_str()) {
                    self.note(
                        ProblemKind::Unmapped,
                        here(&key_pointer(&k)),
                        format!(
                            "`{k}` ({}) collides with the contract's envelope; dropped (the contract's \
                             `{k}` is the emitting node's / the event type)",
                            quote(&v)
                        ),
                    );
                    continue;
                }
                candidate.insert(k, v);
            }
            candidate.insert("type".into(), json!(variant));
            name = variant.to_owned();
        }

        let candidate = Value::Object(candidate);
        let problem = match self.parse::<v1::EventRecord>(RecordKind::Event, &candidate) {
            Ok(event) => {
                if matches!(event.event, v1::Event::Other(_)) {
                    self.note(
                        ProblemKind::Unmapped,
                        here("/variant"),
                        format!("event type `{variant}` is unknown to the contract; kept as an unknown event type"),
                    );
                } else {
                    let what = format!("`{name}` event");
                    self.report_unknown(&here(""), RecordKind::Event, &what, &candidate, None);
                }
                return Some(event);
            }
            Err(why) => why,
        };

        // The fields do not fit the type: keep the event, as a Custom event of a simulator kind.
        let fallback_kind = format!("sim.{name}");
        let fallback = json!({
            "node_id": id_bytes(&node.id),
            "monotonic_seq": seq,
            "wall_ms": wall_ms,
            "type": "Custom",
            "kind": fallback_kind,
            "fields": as_written,
        });
        match self.parse::<v1::EventRecord>(RecordKind::Event, &fallback) {
            Ok(event) => {
                self.note(
                    ProblemKind::Schema,
                    here(""),
                    format!(
                        "a `{name}` event that does not fit the contract ({problem}); kept as a `Custom` \
                         event of kind `{fallback_kind}` with its fields as the simulator wrote them"
                    ),
                );
                Some(event)
            }
            Err(_) => {
                self.note(
                    ProblemKind::Schema,
                    here(""),
                    format!(
                        "a `{name}` event that does not fit the contract ({problem}); dropped: {}",
                        quote(record)
                    ),
                );
                None
            }
        }
    }

    /// Renames the simulator's `register_name` fields to the contract's.
    pub(crate) fn adapt_register_name(&self, node: &Node, wall_ms: u64, fields: &mut Value) {
        let Some(f) = fields.as_object_mut() else {
            return;
        };
        if !f.contains_key("actor_addr_hex")
            && let Some(address) = f.remove("address")
        {
            f.insert("actor_addr_hex".into(), address);
        }
        let ours = f
            .remove("our_node_id_hex")
            .or_else(|| f.remove("peer_node_id"));
        if let Some(ours) = ours {
            f.insert("our_node_id_hex".into(), self.to_id_hex(&ours));
        }
        f.entry("wall_ms").or_insert_with(|| wall_ms.into());
        if let Some(stage_index) = node.stage_index {
            f.entry("stage_index").or_insert_with(|| stage_index.into());
        }
    }
}

/// The bytes of a JSON array of one element around its element: `[`, a newline before the element
/// and after it, `]`, and the file's final newline.
const ARRAY_BYTES: u64 = 5;
/// The bytes between two elements of a JSON array: `,` and a newline.
const SEPARATOR_BYTES: u64 = 2;

/// The events file being written: how many records it holds and its size so far (the records
/// themselves are written as they come, never kept).
#[derive(Default)]
struct Batch {
    records: usize,
    bytes: u64,
}

impl Batch {
    fn add(&mut self, size: u64) {
        self.bytes += if self.records == 0 {
            ARRAY_BYTES + size
        } else {
            SEPARATOR_BYTES + size
        };
        self.records += 1;
    }
}

/// The bytes an event takes as an element of an events file (pretty JSON, keys in alphabetical
/// order as the writer writes them), its indentation included: counted, not kept.
pub(crate) fn element_size(event: &v1::EventRecord) -> u64 {
    let value = serde_json::to_value(event).expect("OK because contract types always serialize");
    let counted = pretty_size(&value);
    // One level deeper in the array: two more spaces on each of its lines.
    counted.bytes + 2 * counted.newlines + 2
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes counted are the sizes written, for the writer's pretty JSON with its final
    /// newline.
    #[test]
    fn an_events_file_is_as_large_as_counted() {
        let node = diagwire::NodeId([7; 32]);
        let events: Vec<v1::EventRecord> = (0..3)
            .map(|i| {
                let mut e = json!({"node_id": id_bytes(&node), "monotonic_seq": i, "wall_ms": 5,
                                   "type": "Custom", "kind": "k", "fields": {"a": [1, {"b": i}]}});
                e["fields"]["n"] = json!(i);
                serde_json::from_value(e).expect("an event")
            })
            .collect();
        for n in 1..=events.len() {
            let mut batch = Batch::default();
            for e in &events[..n] {
                batch.add(element_size(e));
            }
            let value = serde_json::to_value(&events[..n]).expect("value");
            let mut written = serde_json::to_vec_pretty(&value).expect("json");
            written.push(b'\n');
            assert_eq!(batch.bytes, written.len() as u64, "{n} event(s)");
        }
    }
}
