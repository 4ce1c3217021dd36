//! Node identity: each node directory's id (its hex name, or one derived from the run id and the
//! name), the run id, and the contract's identity for each of a node's boot records.
//!
//! The derivation hashes with FNV-1a written here rather than a hashing crate: derived ids are
//! pinned by tests and must never change with a dependency's release.

use std::io;

use serde_json::{Value, json};

use diagwire::layout;
use diagwire::v1::{self, RecordKind};
use diagwire::{Location, NodeId, ProblemKind};
use diagwire_runtime::rng::mix64;

use crate::contract::record_keys;
use crate::located::{at, describe, key_pointer, quote};
use crate::nodes::{Node, NodeDir};
use crate::upgrader::Upgrader;
use crate::{Object, invalid};

/// The node id a directory name or peer reference spells in hex (any case).
pub(crate) fn hex_node_id(s: &str) -> Option<NodeId> {
    if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        s.to_ascii_lowercase().parse().ok()
    } else {
        None
    }
}

/// A stable node id for a directory whose name is not a node id: FNV-1a over the run id, the name
/// and a counter, mixed with the SplitMix64 finalizer, for each 8 of the 32 bytes. The same run id and
/// name always give the same id, on every platform.
pub(crate) fn derived_node_id(run_id: &str, name: &str) -> NodeId {
    let mut out = [0u8; 32];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let seed = format!("diagwire-sim-node\0{run_id}\0{name}\0{i}");
        for b in seed.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        chunk.copy_from_slice(&mix64(h).to_be_bytes());
    }
    NodeId(out)
}

/// A node id as the contract's byte array.
pub(crate) fn id_bytes(id: &NodeId) -> Value {
    Value::Array(id.0.iter().map(|b| Value::from(*b)).collect())
}

/// Whether a run id can name the bundle's top-level directory as it is: [`layout::sanitize_component`]
/// leaves it unchanged (ASCII letters, digits, `.`, `_` and `-`; not empty, `.` or `..`).
pub(crate) fn safe_run_id(s: &str) -> bool {
    layout::sanitize_component(s) == s
}

impl Upgrader<'_> {
    /// The run id: the manifest's, else the first boot record's.
    pub(crate) fn run_id(
        &mut self,
        manifest: Option<&Object>,
        boots: &[Vec<(String, Object)>],
    ) -> io::Result<String> {
        let from_manifest = manifest
            .and_then(|m| m.get("run_id"))
            .and_then(Value::as_str);
        let from_boot = || {
            boots
                .iter()
                .flatten()
                .find_map(|(_, b)| b.get("run_id").and_then(Value::as_str))
        };
        let Some(run_id) = from_manifest.or_else(from_boot) else {
            return Err(invalid(
                "no run id (neither MANIFEST.json nor a boot record has a string `run_id`)"
                    .to_owned(),
            ));
        };
        if !safe_run_id(run_id) {
            return Err(invalid(format!(
                "run id {} cannot name the bundle's directory: a run id must be one path component \
                 of ASCII letters, digits, `.`, `_` and `-`, and not `.` or `..`",
                quote(&json!(run_id))
            )));
        }
        Ok(run_id.to_owned())
    }

    /// The node's id and identities.
    pub(crate) fn node(
        &mut self,
        dir: NodeDir,
        boots: Vec<(String, Object)>,
        run_id: &str,
    ) -> Node {
        let id = match hex_node_id(&dir.name) {
            Some(id) => id,
            None => {
                let id = derived_node_id(run_id, &dir.name);
                self.note(
                    ProblemKind::Layout,
                    Location::file(&dir.name),
                    format!(
                        "directory name `{}` is not a hex node id; node id derived from the run id and \
                         the name: {id}",
                        dir.name
                    ),
                );
                id
            }
        };
        self.names.insert(dir.name.clone(), id);
        let mut node = Node {
            dir,
            id,
            identities: Vec::new(),
            role: String::new(),
            stage_index: None,
        };
        for (i, (rel, boot)) in boots.iter().enumerate() {
            let fallback_seq = u32::try_from(i).unwrap_or(u32::MAX);
            if let Some(identity) = self.identity(&node, rel, boot, run_id, fallback_seq) {
                node.identities.push(identity);
            }
        }
        match node.identities.last() {
            Some(latest) => {
                node.role = latest.role.clone();
                node.stage_index = latest.stage_index;
            }
            None => node.role = node.dir.name.clone(),
        }
        node
    }

    /// The contract's identity for one boot record of the simulator; `None` (listed) when it cannot
    /// be made to fit.
    pub(crate) fn identity(
        &mut self,
        node: &Node,
        rel: &str,
        boot: &Object,
        run_id: &str,
        fallback_seq: u32,
    ) -> Option<v1::Identity> {
        let key_at = |key: &str| at(rel, Some(0), key_pointer(key));
        let stage_index = match boot.get("stage_index") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) => Some(n),
                None => {
                    self.note(
                        ProblemKind::Schema,
                        key_at("stage_index"),
                        format!(
                            "`stage_index` {} is not a stage index; written as null",
                            quote(v)
                        ),
                    );
                    None
                }
            },
        };
        let boot_sequence = boot
            .get("boot_sequence")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok());
        let boot_sequence = boot_sequence.unwrap_or_else(|| {
            self.note(
                ProblemKind::Shape,
                key_at("boot_sequence"),
                format!("no usable `boot_sequence`; written as {fallback_seq}, its place among the node's boots"),
            );
            fallback_seq
        });
        let start = boot
            .get("wall_ms")
            .and_then(Value::as_u64)
            .unwrap_or_else(|| {
                self.note(
                    ProblemKind::Shape,
                    key_at("wall_ms"),
                    "no usable `wall_ms`; `process_start_unix_ms` written as 0",
                );
                0
            });
        let record_run_id = boot.get("run_id").and_then(Value::as_str).unwrap_or(run_id);
        let role = if stage_index.is_some() {
            "stage"
        } else {
            node.dir.name.as_str()
        };
        let mut base = v1::Identity::new(
            node.id.to_hex(),
            node.id.short(),
            role,
            record_run_id,
            start,
            boot_sequence,
        );
        base.stage_index = stage_index;
        let mut identity =
            serde_json::to_value(&base).expect("OK because contract types always serialize");
        self.note_envelope(rel, Some(0), boot);
        let own = record_keys(RecordKind::Boot);
        for (k, v) in boot {
            match k.as_str() {
                "schema_version" | "kind" | "stage_index" | "boot_sequence" | "wall_ms" => {}
                "run_id" if v.is_string() => {}
                // The node is the directory: its id is not the record's to choose.
                "node_id_hex" if *v == identity[k.as_str()] => {}
                "node_id_hex" => self.note(
                    ProblemKind::Unmapped,
                    key_at(k),
                    format!(
                        "`node_id_hex` ({}) replaced: the node's id comes from its directory",
                        quote(v)
                    ),
                ),
                _ if own.contains(k.as_str()) => {
                    // A key the identity has: the simulator's value wins when it fits.
                    let before = identity[k.as_str()].clone();
                    identity[k.as_str()] = v.clone();
                    let violations = self.validators.violations(RecordKind::Boot, &identity);
                    if !violations.is_empty() {
                        identity[k.as_str()] = before;
                        self.note(
                            ProblemKind::Schema,
                            key_at(k),
                            format!(
                                "`{k}` {} does not fit the contract's boot record ({}); dropped",
                                quote(v),
                                describe(&violations)
                            ),
                        );
                    }
                }
                _ => {
                    if let Some(obj) = identity.as_object_mut() {
                        obj.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        match self.parse::<v1::Identity>(RecordKind::Boot, &identity) {
            Ok(record) => {
                self.report_unknown(
                    &at(rel, Some(0), ""),
                    RecordKind::Boot,
                    "boot record",
                    &identity,
                    None,
                );
                Some(record)
            }
            Err(why) => {
                self.note(
                    ProblemKind::Schema,
                    at(rel, Some(0), ""),
                    format!("does not fit the contract's boot record ({why}); not written"),
                );
                None
            }
        }
    }
}
