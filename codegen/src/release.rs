//! Releases: frozen copies of the schemas under `schemas/releases/<version>/`.
//!
//! `cargo codegen release` copies the current schemas into the folder of the version in
//! `schemas/VERSION` and appends their fingerprints to `schemas/releases/FROZEN`; the tests then fail
//! if a released file changes, disappears or appears, or if the current schemas differ from the
//! release of the current version (a schema change needs a new version). The release's protobuf
//! field numbers are frozen beside its schemas, in `schemas/releases/<version>/proto-numbers.json`,
//! at the same time, and fingerprinted with them.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::contract_version;

/// The fingerprint list, one `fnv1a64 <hex> <version>/<file>` line per released file (each schema
/// and the release's number table).
pub const FROZEN: &str = "schemas/releases/FROZEN";

/// FNV-1a, 64 bits: a fingerprint against accidental edits (review guards against deliberate ones).
pub fn fingerprint(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The files of a release folder that are frozen: its schemas and its number table.
fn frozen_files(dir: &Path) -> Result<Vec<String>> {
    let mut out = schema_files(dir)?;
    if dir.join(crate::proto::NUMBERS_NAME).is_file() {
        out.push(crate::proto::NUMBERS_NAME.to_owned());
    }
    Ok(out)
}

fn schema_files(dir: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.ends_with(".schema.json") {
            out.push(name);
        }
    }
    out.sort();
    Ok(out)
}

/// Copies the current schemas into `schemas/releases/<VERSION>/` and records their fingerprints.
pub fn cut(root: &Path) -> Result<String> {
    let version = contract_version(root)?.to_string();
    let dir = root.join("schemas/releases").join(&version);
    if dir.exists() {
        bail!(
            "schemas/releases/{version}/ already exists and is frozen; bump schemas/VERSION first"
        );
    }
    fs::create_dir_all(&dir)?;
    let mut lines = fs::read_to_string(root.join(FROZEN)).unwrap_or_default();
    for name in schema_files(&root.join("schemas"))? {
        let bytes = fs::read(root.join("schemas").join(&name))?;
        fs::write(dir.join(&name), &bytes)?;
        lines.push_str(&format!(
            "fnv1a64 {} {version}/{name}\n",
            fingerprint(&bytes)
        ));
    }
    // The protobuf numbers of the release are frozen beside the schemas, never regenerated.
    let files = crate::read_schemas(root, &format!("schemas/releases/{version}"))?;
    let model = diagwire_schema::load(&files)?;
    let numbers = crate::proto::update_numbers(&crate::proto::read_numbers(root)?, &[&model]);
    let frozen = crate::proto::freeze(&numbers, &model)?.render();
    fs::write(dir.join(crate::proto::NUMBERS_NAME), &frozen)?;
    lines.push_str(&format!(
        "fnv1a64 {} {version}/{}\n",
        fingerprint(frozen.as_bytes()),
        crate::proto::NUMBERS_NAME
    ));
    fs::write(root.join(FROZEN), lines)?;
    Ok(format!(
        "released {version}: schemas/releases/{version}/. Record it in CHANGELOG.md and commit."
    ))
}

/// Every way the released files differ from their recorded fingerprints.
pub fn frozen_problems(root: &Path) -> Result<Vec<String>> {
    let text = fs::read_to_string(root.join(FROZEN)).context("reading schemas/releases/FROZEN")?;
    let mut problems = Vec::new();
    let mut listed = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [algo, hash, rel] = parts[..] else {
            problems.push(format!("{FROZEN}: malformed line `{line}`"));
            continue;
        };
        if algo != "fnv1a64" {
            problems.push(format!("{FROZEN}: unknown fingerprint `{algo}`"));
        }
        listed.push(rel.to_owned());
        match fs::read(root.join("schemas/releases").join(rel)) {
            Ok(bytes) if fingerprint(&bytes) == hash => {}
            Ok(_) => problems.push(format!("schemas/releases/{rel} changed after its release; released schemas are immutable: revert it and make the change in a new version")),
            Err(_) => problems.push(format!("schemas/releases/{rel} is missing; released schemas are immutable")),
        }
    }
    for entry in fs::read_dir(root.join("schemas/releases"))? {
        let entry = entry?;
        if !entry.path().is_dir() {
            continue;
        }
        let version = entry.file_name().to_string_lossy().into_owned();
        for name in frozen_files(&entry.path())? {
            let rel = format!("{version}/{name}");
            if !listed.contains(&rel) {
                problems.push(format!("schemas/releases/{rel} is not recorded in {FROZEN}; cut releases with `cargo codegen release`"));
            }
        }
    }
    Ok(problems)
}

/// When the release of the current version exists but the current schemas differ from it, says so.
pub fn unreleased_change(root: &Path) -> Result<Option<String>> {
    let version = contract_version(root)?.to_string();
    let dir = root.join("schemas/releases").join(&version);
    if !dir.exists() {
        return Ok(None);
    }
    let current = schema_files(&root.join("schemas"))?;
    let released = schema_files(&dir)?;
    let mut differ = Vec::new();
    for name in current.iter().chain(released.iter()) {
        let a = fs::read(root.join("schemas").join(name)).ok();
        let b = fs::read(dir.join(name)).ok();
        if a != b && !differ.contains(name) {
            differ.push(name.clone());
        }
    }
    Ok((!differ.is_empty()).then(|| {
        format!(
            "schemas/{} differ from the frozen release {version}: bump schemas/VERSION, record the change in CHANGELOG.md, and cut the release with `cargo codegen release` when it ships",
            differ.join(", schemas/")
        )
    }))
}
