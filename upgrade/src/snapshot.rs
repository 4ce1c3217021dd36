//! Snapshots: each mapped onto the contract's snapshot, embedding the identity of its boot, with the
//! trigger in the contract's form and body blocks that do not fit dropped (listed).

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use diagwire::ProblemKind;
use diagwire::v1::{self, RecordKind};
use diagwire::validate::Violation;

use crate::contract::{field_keys, record_keys};
use crate::located::{at, describe, key_pointer, quote};
use crate::nodes::Node;
use crate::upgrader::Upgrader;

impl Upgrader<'_> {
    /// One snapshot of the simulator as the contract's snapshot.
    pub(crate) fn snapshot(
        &mut self,
        node: &Node,
        rel: &str,
        index: usize,
        run_id: &str,
    ) -> Option<v1::Snapshot> {
        let here = |pointer: &str| at(rel, Some(0), pointer);
        let obj = self.read_object(rel)?;
        let wall_ms = obj.get("wall_ms").and_then(Value::as_u64);
        let seq = obj.get("monotonic_seq").and_then(Value::as_u64);
        let (Some(wall_ms), Some(seq)) = (wall_ms, seq) else {
            self.note(
                ProblemKind::Shape,
                here(""),
                "a snapshot without an integer `wall_ms` and an integer `monotonic_seq`; skipped",
            );
            return None;
        };
        self.note_envelope(rel, Some(0), &obj);
        let snapshot_id = match obj.get("snapshot_id") {
            Some(Value::String(s)) => s.clone(),
            other => {
                let id = format!("{}-{index}", node.id.short());
                let was = other.map_or("none".to_owned(), quote);
                self.note(
                    ProblemKind::Shape,
                    here("/snapshot_id"),
                    format!("no string `snapshot_id` ({was}); written as `{id}`"),
                );
                id
            }
        };
        let boot_sequence = obj
            .get("boot_sequence")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok());
        let (identity, matched) = match node.identity_for(boot_sequence) {
            Some((identity, matched)) => (identity.clone(), matched),
            None => (node.placeholder_identity(run_id), false),
        };
        if !matched && !node.identities.is_empty() && obj.contains_key("boot_sequence") {
            self.note(
                ProblemKind::Unmapped,
                here("/boot_sequence"),
                format!(
                    "no boot record with `boot_sequence` {}; the snapshot embeds the node's latest \
                     identity and keeps `boot_sequence` as an unknown key",
                    quote(&obj["boot_sequence"])
                ),
            );
        }

        let mut candidate = Map::new();
        candidate.insert(
            "identity".into(),
            serde_json::to_value(&identity).expect("OK because contract types always serialize"),
        );
        candidate.insert(
            "run_id".into(),
            obj.get("run_id")
                .filter(|v| v.is_string())
                .cloned()
                .unwrap_or_else(|| json!(run_id)),
        );
        candidate.insert("snapshot_id".into(), json!(snapshot_id));
        candidate.insert("wall_ms".into(), wall_ms.into());
        candidate.insert("monotonic_seq".into(), seq.into());
        let trigger = self.trigger(rel, obj.get("trigger"));
        candidate.insert("trigger".into(), trigger);
        let body = self.body(rel, obj.get("body"));
        candidate.insert("body".into(), body);
        let own = record_keys(RecordKind::Snapshot);
        for (k, v) in &obj {
            match k.as_str() {
                "schema_version" | "kind" | "snapshot_id" | "wall_ms" | "monotonic_seq"
                | "trigger" | "body" => {}
                "boot_sequence" if matched => {}
                "run_id" if v.is_string() => {}
                _ if own.contains(k.as_str()) => self.note(
                    ProblemKind::Unmapped,
                    here(&key_pointer(k)),
                    format!(
                        "`{k}` ({}) replaced: the upgrade writes it from the node's records",
                        quote(v)
                    ),
                ),
                _ => {
                    candidate.insert(k.clone(), v.clone());
                }
            }
        }
        let mut candidate = Value::Object(candidate);

        // Drop what does not fit, block by block, until the snapshot fits.
        let mut trigger_replaced = false;
        for _ in 0..16 {
            let violations = self.validators.violations(RecordKind::Snapshot, &candidate);
            if violations.is_empty() {
                break;
            }
            let mut fixed = false;
            let blocks: BTreeSet<String> = violations
                .iter()
                .filter_map(|v| body_block(&v.pointer))
                .collect();
            for block in blocks {
                let in_block: Vec<Violation> = violations
                    .iter()
                    .filter(|v| body_block(&v.pointer).as_deref() == Some(block.as_str()))
                    .cloned()
                    .collect();
                let old = candidate["body"]
                    .as_object_mut()
                    .and_then(|b| {
                        if block == "reachability" {
                            b.insert(block.clone(), json!([]))
                        } else {
                            b.remove(&block)
                        }
                    })
                    .unwrap_or(Value::Null);
                let done = if block == "reachability" {
                    "replaced by an empty list"
                } else {
                    "dropped"
                };
                self.note(
                    ProblemKind::Schema,
                    here(&format!("/body{}", key_pointer(&block))),
                    format!(
                        "body block `{block}` does not fit the contract ({}); {done}: {}",
                        describe(&in_block),
                        quote(&old)
                    ),
                );
                fixed = true;
            }
            let trigger_at: Vec<Violation> = violations
                .iter()
                .filter(|v| v.pointer == "/trigger" || v.pointer.starts_with("/trigger/"))
                .cloned()
                .collect();
            if !trigger_at.is_empty() && !trigger_replaced {
                trigger_replaced = true;
                let original = obj.get("trigger").cloned().unwrap_or(Value::Null);
                self.note(
                    ProblemKind::Schema,
                    here("/trigger"),
                    format!(
                        "trigger {} does not fit the contract ({}); kept as the unknown trigger kind \
                         `sim.trigger` with the value as its data",
                        quote(&original),
                        describe(&trigger_at)
                    ),
                );
                candidate["trigger"] = json!({"kind": "sim.trigger", "data": original});
                fixed = true;
            }
            if !fixed {
                break;
            }
        }
        match self.parse::<v1::Snapshot>(RecordKind::Snapshot, &candidate) {
            Ok(record) => {
                // The embedded identity's keys were listed with its boot record.
                self.report_unknown(
                    &here(""),
                    RecordKind::Snapshot,
                    "snapshot",
                    &candidate,
                    Some("/identity"),
                );
                Some(record)
            }
            Err(why) => {
                self.note(
                    ProblemKind::Schema,
                    here(""),
                    format!("does not fit the contract's snapshot ({why}); not written"),
                );
                None
            }
        }
    }

    /// The simulator's trigger as the contract's `{kind, data}`.
    pub(crate) fn trigger(&mut self, rel: &str, trigger: Option<&Value>) -> Value {
        let here = at(rel, Some(0), "/trigger");
        let unit = |kind: &str| json!({ "kind": kind });
        match trigger {
            None => {
                self.note(
                    ProblemKind::Shape,
                    here,
                    "the snapshot has no trigger; written as the unknown trigger kind `sim.none`",
                );
                unit("sim.none")
            }
            Some(Value::String(s)) => {
                let normalized: String = s
                    .chars()
                    .filter(|c| !matches!(c, '_' | '-' | ' '))
                    .flat_map(char::to_lowercase)
                    .collect();
                match normalized.as_str() {
                    "periodic" => unit("Periodic"),
                    "ondemand" => unit("OnDemand"),
                    _ => {
                        let kind = if v1::SnapshotTrigger::TAGS.contains(&s.as_str()) {
                            format!("sim.{s}")
                        } else {
                            s.clone()
                        };
                        self.note(
                            ProblemKind::Unmapped,
                            here,
                            format!(
                                "trigger {} is not a kind the contract knows; kept as the unknown trigger \
                                 kind `{kind}`",
                                quote(&json!(s))
                            ),
                        );
                        unit(&kind)
                    }
                }
            }
            Some(Value::Object(m)) if m.get("kind").is_some_and(Value::is_string) => {
                Value::Object(m.clone())
            }
            Some(Value::Object(m))
                if m.len() == 1
                    && m.keys()
                        .all(|k| v1::SnapshotTrigger::TAGS.contains(&k.as_str())) =>
            {
                // serde's external form: `{"Transition": "seq-7"}`, `{"Periodic": null}`.
                let (kind, data) = m
                    .iter()
                    .next()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .unwrap_or_default();
                if data.is_null() {
                    unit(&kind)
                } else {
                    json!({ "kind": kind, "data": data })
                }
            }
            Some(other) => {
                self.note(
                    ProblemKind::Unmapped,
                    here,
                    format!(
                        "trigger {} is not a form the contract knows; kept as the unknown trigger kind \
                         `sim.trigger` with the value as its data",
                        quote(other)
                    ),
                );
                json!({ "kind": "sim.trigger", "data": other })
            }
        }
    }

    /// The simulator's snapshot body, with the contract's required `reachability` and the host
    /// block's network fields under `network`.
    pub(crate) fn body(&mut self, rel: &str, body: Option<&Value>) -> Value {
        let here = || at(rel, Some(0), "/body");
        let mut body = match body {
            Some(Value::Object(m)) => m.clone(),
            None => {
                self.note(
                    ProblemKind::Shape,
                    here(),
                    "the snapshot has no body; written as an empty body",
                );
                Map::new()
            }
            Some(other) => {
                self.note(
                    ProblemKind::Shape,
                    here(),
                    format!(
                        "a body that is not a JSON object ({}); written as an empty body",
                        quote(other)
                    ),
                );
                Map::new()
            }
        };
        if !body.contains_key("reachability") {
            body.insert("reachability".into(), json!([]));
            self.note(
                ProblemKind::Unmapped,
                here(),
                "no `reachability`: the simulator does not record it; written as an empty list, which the \
                 contract requires",
            );
        }
        let network_keys = field_keys("HostNetwork");
        if let Some(Value::Object(host)) = body.get_mut("host")
            && !host.contains_key("network")
        {
            let moved: Vec<String> = host
                .keys()
                .filter(|k| network_keys.contains(k.as_str()))
                .cloned()
                .collect();
            if !moved.is_empty() {
                let mut network = Map::new();
                for k in moved {
                    if let Some(v) = host.remove(&k) {
                        network.insert(k, v);
                    }
                }
                if !host.contains_key("scraped_at_ms")
                    && let Some(refreshed) = network.get("refreshed_at_ms")
                {
                    host.insert("scraped_at_ms".into(), refreshed.clone());
                }
                host.insert("network".into(), Value::Object(network));
            }
        }
        Value::Object(body)
    }
}

/// The body block a violation's pointer is in (`/body/<block>/…`).
fn body_block(pointer: &str) -> Option<String> {
    let rest = pointer.strip_prefix("/body/")?;
    let block = rest.split('/').next()?;
    (!block.is_empty()).then(|| block.replace("~1", "/").replace("~0", "~"))
}
