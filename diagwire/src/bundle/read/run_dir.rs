//! Finding the run directory in a listing of regular files: the directory holding `MANIFEST.json`
//! (at the top, or at most two levels down), or, without a manifest, the one holding node
//! directories. The same rule for a directory bundle and an archive.

use crate::layout::{Role, parse_bundle_path};

/// The run directory among a list of regular-file paths (normalized, relative to the top): `""` when
/// the top itself is the run directory, else its path (`run` or `wrapper/run`). `Err` explains why
/// there is none.
pub(super) fn find_run_dir(files: &[&str]) -> Result<String, String> {
    if files.contains(&"MANIFEST.json") {
        return Ok(String::new());
    }
    // A run directory at the top, or inside one wrapping directory.
    for depth in [0, 1] {
        let mut with_manifest: Vec<&str> = files
            .iter()
            .filter_map(|f| f.strip_suffix("/MANIFEST.json"))
            .filter(|d| d.matches('/').count() == depth)
            .collect();
        with_manifest.sort_unstable();
        with_manifest.dedup();
        match with_manifest.as_slice() {
            [one] => return Ok((*one).to_owned()),
            [] => {}
            several => {
                return Err(format!(
                    "holds several run directories ({}); open one of them",
                    several.join(", ")
                ));
            }
        }
    }
    // No manifest: node directories at the top, or inside a single top-level directory.
    let is_node_file = |p: &str| parse_bundle_path(p).role != Role::Unknown;
    if files.iter().any(|f| is_node_file(f)) {
        return Ok(String::new());
    }
    let mut tops: Vec<&str> = files
        .iter()
        .filter_map(|f| f.split_once('/'))
        .map(|(d, _)| d)
        .collect();
    tops.sort_unstable();
    tops.dedup();
    if let [top] = tops.as_slice() {
        let mut inside = files
            .iter()
            .filter_map(|f| f.strip_prefix(*top)?.strip_prefix('/'));
        if inside.any(is_node_file) {
            return Ok((*top).to_owned());
        }
    }
    if files.is_empty() {
        Err("holds no files".to_owned())
    } else {
        Err("holds no MANIFEST.json and no node directories".to_owned())
    }
}

/// The path of `rel` inside the run directory `run_dir` (`""` for the top), if it is inside.
pub(super) fn strip_run_dir<'a>(rel: &'a str, run_dir: &str) -> Option<&'a str> {
    if run_dir.is_empty() {
        Some(rel)
    } else {
        rel.strip_prefix(run_dir)?.strip_prefix('/')
    }
}
