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
pub mod read;
mod refs;
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
/// Files are read through [`read`]: regular files only, links never followed, sizes capped.
pub fn read_dir(dir: &Path, display: &str) -> Result<Vec<SchemaFile>> {
    let mut out = Vec::new();
    for (file, text) in read::schema_files(dir, display)? {
        let stem = file.strip_suffix(".schema.json").unwrap_or(&file);
        out.push(parse_file(&format!("{display}/{file}"), stem, &text)?);
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(out)
}

/// Parses one schema file's text, keeping key order.
pub fn parse_file(display: &str, stem: &str, text: &str) -> Result<SchemaFile> {
    let doc: ordered::J = serde_json::from_str(text).map_err(|e| {
        anyhow::anyhow!(
            "{display}: not valid JSON (line {}, column {}): {}",
            e.line(),
            e.column(),
            problem::printable(&e.to_string())
        )
    })?;
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
    let unresolved = refs::problems(files).err().unwrap_or_default();
    let mut m = match lower::lower(files) {
        Ok(m) if unresolved.is_empty() => m,
        Ok(_) => return Err(outside(unresolved)),
        Err(mut problems) => {
            problems.extend(unresolved);
            return Err(outside(problems));
        }
    };
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
    read_version(&root.join("schemas/VERSION"), "schemas/VERSION")
}

/// The semantic version in the file `path` (a regular UTF-8 file of at most
/// [`read::SMALL_CAP`] bytes), named `shown` in messages.
pub fn read_version(path: &Path, shown: &str) -> Result<Version> {
    let text = read::read_text(path, shown, read::SMALL_CAP)?;
    Version::parse(text.trim()).with_context(|| {
        format!(
            "{shown}: `{}` is not a semantic version",
            problem::printable(text.trim())
        )
    })
}

/// The versions frozen under `root/schemas/releases/`, in semantic-version order (a pre-release
/// sorts before its release). A folder whose name is not a semantic version is an error.
pub fn released_versions(root: &Path) -> Result<Vec<Version>> {
    let mut out = Vec::new();
    let dir = root.join("schemas/releases");
    if fs::symlink_metadata(&dir).is_ok() {
        for entry in read::list(&dir, "schemas/releases")? {
            if entry.file_type.is_symlink() {
                bail!(
                    "schemas/releases/{}: a symbolic link (links are never followed in a schema tree)",
                    problem::printable(&entry.name)
                );
            }
            if !entry.file_type.is_dir() {
                continue;
            }
            let name = entry.name;
            match Version::parse(&name) {
                Ok(v) => out.push(v),
                Err(e) => bail!(
                    "schemas/releases/{}: not a semantic version ({e})",
                    problem::printable(&name)
                ),
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
