//! `iroh_version`: every copy of a node's iroh version agrees, within one boot (boot record,
//! snapshot identity, snapshot iroh block) and with the version its `iroh_api_missing` events name.

use std::collections::BTreeMap;

use diagwire::v1::{CustomPayload, Event};
use serde_json::Value;

use super::{End, Evaluator, Input, Kept, Stream, Tally, with_pointer};

/// The first copy of each distinct value, with what kind of record held it.
type Copies = BTreeMap<String, (Kept, &'static str)>;

/// The evaluator of `iroh_version`.
#[derive(Debug, Default)]
pub(crate) struct IrohVersion {
    /// Per node and boot sequence: version → first copy.
    groups: BTreeMap<(usize, u32), Copies>,
    /// Per node: the versions its `iroh_api_missing` events name.
    events: BTreeMap<usize, BTreeMap<String, Kept>>,
}

impl Evaluator for IrohVersion {
    fn take(&mut self, input: &Input<'_>, _: &Stream, out: &mut Tally<'_>) {
        match input {
            Input::Boot {
                node,
                identity,
                loc,
            } => {
                if let Some(v) = &identity.iroh_version {
                    out.checked += 1;
                    self.groups
                        .entry((*node, identity.boot_sequence))
                        .or_default()
                        .entry(v.clone())
                        .or_insert_with(|| {
                            (
                                Kept {
                                    loc: with_pointer(loc, "/iroh_version"),
                                    value: serde_json::to_value(identity).unwrap_or(Value::Null),
                                },
                                "boot record",
                            )
                        });
                }
            }
            Input::Snapshot {
                node,
                snapshot: s,
                loc,
            } => {
                let g = self
                    .groups
                    .entry((*node, s.identity.boot_sequence))
                    .or_default();
                if let Some(v) = &s.identity.iroh_version {
                    out.checked += 1;
                    g.entry(v.clone()).or_insert_with(|| {
                        (
                            Kept {
                                loc: with_pointer(loc, "/identity/iroh_version"),
                                value: Value::String(v.clone()),
                            },
                            "snapshot identity",
                        )
                    });
                }
                if let Some(v) = s.body.iroh.as_ref().and_then(|i| i.iroh_version.as_ref()) {
                    out.checked += 1;
                    g.entry(v.clone()).or_insert_with(|| {
                        (
                            Kept {
                                loc: with_pointer(loc, "/body/iroh/iroh_version"),
                                value: Value::String(v.clone()),
                            },
                            "snapshot iroh block",
                        )
                    });
                }
            }
            Input::Event(e) => {
                if let Event::Custom(c) = &e.record.event
                    && let CustomPayload::IrohApiMissing(m) = &c.payload
                {
                    out.checked += 1;
                    self.events
                        .entry(e.node)
                        .or_default()
                        .entry(m.iroh_version.clone())
                        .or_insert_with(|| Kept {
                            loc: with_pointer(e.loc, "/fields/iroh_version"),
                            value: serde_json::from_str(e.text).unwrap_or(Value::Null),
                        });
                }
            }
            _ => {}
        }
    }

    fn finish(self: Box<Self>, end: &End<'_>, out: &mut Tally<'_>) {
        let stream = end.stream;
        let mut versions: BTreeMap<usize, BTreeMap<String, Kept>> = BTreeMap::new();
        for ((node, boot), copies) in &self.groups {
            for (v, (k, _)) in copies {
                versions
                    .entry(*node)
                    .or_default()
                    .entry(v.clone())
                    .or_insert_with(|| k.clone());
            }
            if copies.len() > 1 {
                let mut all: Vec<(&String, &(Kept, &str))> = copies.iter().collect();
                all.sort_by_key(|(_, (k, _))| (k.loc.file.clone(), k.loc.pointer.clone()));
                let list = all
                    .iter()
                    .map(|(v, (_, what))| format!("`{v}` ({what})"))
                    .collect::<Vec<_>>()
                    .join(", ");
                out.find(
                    all[1].1.0.loc.clone(),
                    all.iter().map(|(_, (k, _))| k.witness()).collect(),
                    format!(
                        "boot sequence {boot} of node `{}` reports iroh versions {list}",
                        stream.label(*node)
                    ),
                );
            }
        }
        for (node, copies) in self.events {
            let known = versions.get(&node);
            for (v, kept) in copies {
                let Some(known) = known else { continue };
                if known.contains_key(&v) {
                    continue;
                }
                let mut witness = vec![kept.witness()];
                witness.extend(known.values().next().map(Kept::witness));
                out.find(
                    kept.loc.clone(),
                    witness,
                    format!(
                        "`iroh_api_missing` of node `{}` reports iroh version `{v}`, but its boot records and snapshots report {}",
                        stream.label(node),
                        known
                            .keys()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
        }
    }
}
