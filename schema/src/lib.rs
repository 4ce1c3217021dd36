//! The diagwire schema profile: reading the JSON Schemas of a contract version, checking them
//! against the profile (`schemas/README.md`) and lowering them into one resolved [`model::Model`].
//!
//! The generator (`diagwire-codegen`) renders the model into Rust; the schema review compares the
//! models of two versions. Every problem names the schema file and the JSON pointer of the
//! offending schema. Nothing here writes a file.

mod check;
mod enforced;
mod honesty;
mod lower;
pub mod model;
pub mod ordered;
pub mod problem;
mod resolve;
pub mod units;

use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};
pub use semver::Version;

pub use problem::{OutsideProfile, SchemaProblem};

/// One schema file: the path it is reported under, its stem (`event` for `event.schema.json`, also
/// its module name and `$id` suffix) and its document.
pub type SchemaFile = (String, String, ordered::J);

/// The profile's grammar as a meta-schema, compiled in.
pub const PROFILE_META_SCHEMA: &str = include_str!("profile.schema.json");

/// Reads `dir/*.schema.json`, sorted by stem; `display` is the folder name used in messages.
pub fn read_dir(dir: &Path, display: &str) -> Result<Vec<SchemaFile>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let Some(file) = path.file_name().and_then(|f| f.to_str()) else {
            continue;
        };
        let Some(stem) = file.strip_suffix(".schema.json") else {
            continue;
        };
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        out.push(parse_file(&format!("{display}/{file}"), stem, &text)?);
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(out)
}

/// Parses one schema file's text, keeping key order.
pub fn parse_file(display: &str, stem: &str, text: &str) -> Result<SchemaFile> {
    let doc: ordered::J =
        serde_json::from_str(text).with_context(|| format!("{display}: not valid JSON"))?;
    Ok((display.to_owned(), stem.to_owned(), doc))
}

/// Reads `dir/*.schema.json` like [`read_dir`] for files named in kebab case (the generator's
/// feature and lint schemas): the stem, and so the expected `$id` and the module name, is the file
/// stem with `-` replaced by `_`.
pub fn read_kebab_dir(dir: &Path, display: &str) -> Result<Vec<SchemaFile>> {
    let mut files = read_dir(dir, display)?;
    for (_, stem, _) in &mut files {
        *stem = stem.replace('-', "_");
    }
    files.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(files)
}

/// Every `$defs` entry of `files`: the file's path, the definition's name and its schema.
pub(crate) fn definitions(files: &[SchemaFile]) -> impl Iterator<Item = (&str, &str, &ordered::J)> {
    files.iter().flat_map(|(path, _, doc)| {
        doc.get("$defs")
            .and_then(ordered::J::as_obj)
            .into_iter()
            .flatten()
            .map(move |(name, def)| (path.as_str(), name.as_str(), def))
    })
}

/// Lowers schema documents into the resolved model, or lists every profile violation.
pub fn load(files: &[SchemaFile]) -> Result<model::Model, OutsideProfile> {
    let mut m = lower::lower(files).map_err(outside)?;
    resolve::resolve(&mut m).map_err(outside)?;
    grammar_problems(files).map_err(outside)?;
    Ok(m)
}

/// Reads and loads the schema folder `dir`.
pub fn load_dir(dir: &Path, display: &str) -> Result<model::Model> {
    Ok(load(&read_dir(dir, display)?)?)
}

/// Lowers the schemas being edited (`schemas/`) like [`load`], and also refuses every keyword that
/// states a bound the typed parse does not enforce (`minItems` or `maxItems` on an array that is not
/// a tuple, `maxItems` on a tuple, `pattern` on a `hex64` id, a `node-id-bytes` id not bounded to 32
/// integers), so the schema and the types give every record the same verdict; and refuses every
/// absence discriminator a reader could not answer "could not ask" through (a gap name no
/// `api_gaps` list can hold, a `*_source` that is not a linked `ValueSource`, an always-present
/// value without a source that can say `unavailable`); and refuses a unit outside the vocabulary of
/// [`units`], a retired unit spelling, and one property name in two units.
///
/// [`load`] accepts such bounds because frozen releases, and the older trees a review compares
/// with, were written before this rule and never change.
pub fn load_current(files: &[SchemaFile]) -> Result<model::Model, OutsideProfile> {
    let m = load(files)?;
    let mut current = enforced::problems(files);
    current.extend(honesty::problems(files));
    current.extend(units::problems(files));
    if current.is_empty() {
        Ok(m)
    } else {
        Err(outside(current))
    }
}

/// Reads and loads the schema folder `dir` with [`load_current`].
pub fn load_current_dir(dir: &Path, display: &str) -> Result<model::Model> {
    Ok(load_current(&read_dir(dir, display)?)?)
}

/// Validates every document against the profile's meta-schema; the checks of [`lower`] run first
/// and give the more precise message where both apply, so this catches what they do not look at
/// (keys inside array items, annotation values).
fn grammar_problems(files: &[SchemaFile]) -> Result<(), problem::Problems> {
    let meta: serde_json::Value = serde_json::from_str(PROFILE_META_SCHEMA)
        .expect("OK because the meta-schema is valid JSON");
    let validator = jsonschema::validator_for(&meta).expect("OK because the meta-schema compiles");
    let mut out = Vec::new();
    for (path, _, doc) in files {
        let value = doc.to_value();
        for e in validator.iter_errors(&value) {
            out.push(SchemaProblem::new(
                path,
                e.instance_path().to_string(),
                format!("{e} (profile grammar)"),
            ));
        }
    }
    if out.is_empty() { Ok(()) } else { Err(out) }
}

fn outside(problems: problem::Problems) -> OutsideProfile {
    OutsideProfile { problems }
}

/// The contract version in `schemas/VERSION` under `root`, which must be a semantic version.
pub fn contract_version(root: &Path) -> Result<Version> {
    let text =
        fs::read_to_string(root.join("schemas/VERSION")).context("reading schemas/VERSION")?;
    Version::parse(text.trim()).with_context(|| {
        format!(
            "schemas/VERSION: `{}` is not a semantic version",
            text.trim()
        )
    })
}

/// The versions frozen under `root/schemas/releases/`, in semantic-version order (a pre-release
/// sorts before its release). A folder whose name is not a semantic version is an error.
pub fn released_versions(root: &Path) -> Result<Vec<Version>> {
    let mut out = Vec::new();
    let dir = root.join("schemas/releases");
    if dir.exists() {
        for entry in fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let entry = entry?;
            if !entry.path().is_dir() {
                continue;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            match Version::parse(&name) {
                Ok(v) => out.push(v),
                Err(e) => bail!("schemas/releases/{name}: not a semantic version ({e})"),
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The Rust module of a release: `1.0.0` → `v1_0_0`, `1.2.0-rc.1` → `v1_2_0_rc_1`.
pub fn release_module(version: &Version) -> String {
    format!("v{}", version.to_string().replace(['.', '-', '+'], "_"))
}
