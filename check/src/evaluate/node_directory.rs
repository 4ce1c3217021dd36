//! `node_directory`: a node directory holds one node's records. Every boot record, snapshot and
//! event names a node id; the directory belongs to the manifest's node of that label, else to the
//! node of its latest boot record, else to the first id seen, and every other id is a finding.

use std::collections::{BTreeMap, HashMap};

use diagwire::NodeId;
use diagwire_runtime::short_hex;
use serde_json::Value;

use super::{End, Evaluator, Input, Kept, Stream, Tally, note};

/// The evaluator of `node_directory`.
#[derive(Debug, Default)]
pub(crate) struct NodeDirectory {
    /// Per node: distinct ids seen with the first record of each and how many records.
    ids: BTreeMap<usize, BTreeMap<String, (Kept, u64)>>,
    /// Per node: the id of its latest event (an event naming the same id is not noted again).
    last: HashMap<usize, NodeId>,
}

impl Evaluator for NodeDirectory {
    fn take(&mut self, input: &Input<'_>, _: &Stream, out: &mut Tally<'_>) {
        match input {
            Input::Boot {
                node,
                identity,
                loc,
            } => {
                out.checked += 1;
                let id = &identity.node_id_hex.0;
                note(
                    self.ids.entry(*node).or_default(),
                    id,
                    loc,
                    "/node_id_hex",
                    || Value::String(id.clone()),
                );
            }
            Input::Snapshot {
                node,
                snapshot,
                loc,
            } => {
                out.checked += 1;
                let id = &snapshot.identity.node_id_hex.0;
                note(
                    self.ids.entry(*node).or_default(),
                    id,
                    loc,
                    "/identity/node_id_hex",
                    || Value::String(id.clone()),
                );
            }
            Input::Event(e) => {
                out.checked += 1;
                let id = e.record.node_id;
                if self.last.get(&e.node) != Some(&id) {
                    self.last.insert(e.node, id);
                    let hex = id.to_hex().0;
                    note(
                        self.ids.entry(e.node).or_default(),
                        &hex,
                        e.loc,
                        "/node_id",
                        || serde_json::from_str(e.text).unwrap_or(Value::Null),
                    );
                }
            }
            _ => {}
        }
    }

    fn finish(self: Box<Self>, end: &End<'_>, out: &mut Tally<'_>) {
        let stream = end.stream;
        for (node, seen) in self.ids {
            let label = stream.label(node);
            let reference = stream
                .manifest_ids
                .get(label)
                .cloned()
                .or_else(|| stream.nodes[node].latest_boot_id.clone())
                .or_else(|| seen.keys().next().cloned());
            let Some(reference) = reference else {
                continue;
            };
            for (id, (kept, n)) in &seen {
                if *id == reference {
                    continue;
                }
                out.find(
                    kept.loc.clone(),
                    vec![kept.witness()],
                    format!(
                        "{n} record(s) in directory `{label}` name node {}…, but the directory belongs to node {}…",
                        short_hex(id),
                        short_hex(&reference)
                    ),
                );
            }
        }
    }
}
