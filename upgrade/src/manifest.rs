//! The simulator's manifest: which of its keys the derived manifest keeps as unknown keys, and which
//! it replaces or which disagree with the files (listed).

use serde_json::Map;

use diagwire::layout;
use diagwire::v1::RecordKind;
use diagwire::{Location, ProblemKind};

use crate::Object;
use crate::contract::record_keys;
use crate::located::{at, key_pointer, quote};
use crate::upgrader::Upgrader;

impl Upgrader<'_> {
    /// The keys of the simulator's manifest that the derived manifest keeps as unknown keys; lists
    /// the others, which the derivation replaces or which disagree with the files.
    pub(crate) fn manifest_extra(
        &mut self,
        sim: Option<&Object>,
        run_id: &str,
        nodes: usize,
    ) -> Object {
        let mut extra = Map::new();
        let Some(sim) = sim else {
            self.note(
                ProblemKind::Manifest,
                Location::file(layout::MANIFEST),
                "the simulator's directory has no readable manifest; the manifest is derived from the files",
            );
            return extra;
        };
        self.note_envelope(layout::MANIFEST, Some(0), sim);
        let own = record_keys(RecordKind::Manifest);
        for (k, v) in sim {
            let here = at(layout::MANIFEST, Some(0), key_pointer(k));
            match k.as_str() {
                "schema_version" | "kind" => {}
                "run_id" if v.as_str() == Some(run_id) => {}
                "node_count" if v.as_u64() == Some(nodes as u64) => {}
                "node_count" => self.note(
                    ProblemKind::Manifest,
                    here,
                    format!(
                        "`node_count` ({}) disagrees with the {nodes} node directories found; the manifest \
                         lists the directories",
                        quote(v)
                    ),
                ),
                _ if own.contains(k.as_str()) => self.note(
                    ProblemKind::Manifest,
                    here,
                    format!(
                        "`{k}` ({}) replaced: the upgrade derives it from the files",
                        quote(v)
                    ),
                ),
                _ => {
                    extra.insert(k.clone(), v.clone());
                }
            }
        }
        extra
    }
}
