//! Recognition: whether a directory is the simulator's prod-shape output, from its manifest or a
//! node's boot record, before anything is upgraded.

use std::fs;
use std::path::Path;

use serde_json::{Value, json};

use diagwire::layout;

use crate::Object;
use crate::input::{MAX_PROBE_BYTES, is_regular_file, read_json};

/// Most top-level directories recognition looks into.
const MAX_PROBE_DIRS: usize = 10_000;

/// Whether `dir` is a simulator prod-shape directory: its `MANIFEST.json` is an object with
/// `kind: "manifest"` and `origin: "sim"` (or `schema_version`), or, without a readable manifest, a
/// node directory's `boot.json` carries `schema_version` and `kind: "boot"`. A collector bundle (whose
/// records carry neither) and an empty directory are not.
pub fn is_sim_prod_shape(dir: &Path) -> bool {
    let manifest = dir.join(layout::MANIFEST);
    if is_regular_file(&manifest)
        && let Ok(Value::Object(m)) = read_json(&manifest, MAX_PROBE_BYTES)
    {
        return is_sim_manifest(&m);
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    for entry in entries.flatten().take(MAX_PROBE_DIRS) {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let boot = entry.path().join("boot.json");
        if !is_regular_file(&boot) {
            continue;
        }
        if let Ok(Value::Object(b)) = read_json(&boot, MAX_PROBE_BYTES)
            && b.contains_key("schema_version")
            && b.get("kind") == Some(&json!("boot"))
        {
            return true;
        }
    }
    false
}

pub(crate) fn is_sim_manifest(m: &Object) -> bool {
    m.get("kind") == Some(&json!("manifest"))
        && (m.get("origin") == Some(&json!("sim")) || m.contains_key("schema_version"))
}
