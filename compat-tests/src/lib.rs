//! Wire fixtures and the checks every fixture goes through.
//!
//! `fixtures/wire/<record kind>/*.json` are records in the exact shape swactor writes; each must be
//! schema-valid, parse into its generated type and serialize back to the same JSON value.
//! `fixtures/wire/<record kind>/invalid/*.json` break one rule each; the schema and the typed parse
//! must both reject them.

pub mod fuzzing;
pub mod golden;
pub mod legacy;
pub mod rng;
pub mod schema_review;
pub mod stream;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use diagwire::v1::{Record, RecordKind};
use diagwire::validate::Validators;
use serde_json::Value;

/// The `fixtures/` folder of this crate.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Validators for the current schemas, compiled once per test binary.
pub fn validators() -> &'static Validators {
    static V: OnceLock<Validators> = OnceLock::new();
    V.get_or_init(|| Validators::new().expect("the shipped schemas compile"))
}

/// One fixture file.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// Path relative to `fixtures/`.
    pub name: String,
    /// The file's text.
    pub text: String,
}

impl Fixture {
    /// The fixture as a JSON value.
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", self.name))
    }
}

fn read_dir_json(dir: &Path) -> Vec<Fixture> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "json") {
            let name = p
                .strip_prefix(fixtures_dir())
                .unwrap_or(&p)
                .display()
                .to_string();
            let text = fs::read_to_string(&p).unwrap_or_else(|e| panic!("{name}: {e}"));
            out.push(Fixture { name, text });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The valid wire fixtures of a record kind.
pub fn valid(kind: &str) -> Vec<Fixture> {
    read_dir_json(&fixtures_dir().join("wire").join(kind))
}

/// The invalid wire fixtures of a record kind.
pub fn invalid(kind: &str) -> Vec<Fixture> {
    read_dir_json(&fixtures_dir().join("wire").join(kind).join("invalid"))
}

/// The record kind a fixture folder is named after.
#[track_caller]
pub fn kind(name: &str) -> RecordKind {
    RecordKind::from_name(name).unwrap_or_else(|| panic!("no record kind `{name}`"))
}

/// Problems of one valid fixture: schema violations, parse error, or a lossy round trip.
pub fn problems_of_valid(kind: RecordKind, f: &Fixture) -> Vec<String> {
    let mut out = Vec::new();
    let original = f.value();
    for v in validators().violations(kind, &original) {
        out.push(format!("{} {}: schema: {}", f.name, v.pointer, v.message));
    }
    match Record::parse(kind, &f.text) {
        Err(e) => out.push(format!("{}: typed parse failed: {e}", f.name)),
        Ok(record) => {
            let back = serde_json::to_value(&record).expect("serialize");
            if back != original {
                out.push(format!(
                    "{}: round trip changed the record\n  before: {}\n  after:  {}",
                    f.name, original, back
                ));
            }
            match Record::from_value(kind, original.clone()) {
                Ok(again) if again == record => {}
                Ok(_) => out.push(format!(
                    "{}: parsing from a Value gave a different record",
                    f.name
                )),
                Err(e) => out.push(format!("{}: parsing from a Value failed: {e}", f.name)),
            }
        }
    }
    out
}

/// Problems of one invalid fixture: the schema or the typed parse accepted it.
pub fn problems_of_invalid(kind: RecordKind, f: &Fixture) -> Vec<String> {
    let mut out = Vec::new();
    let value = f.value();
    if validators().is_valid(kind, &value) {
        out.push(format!(
            "{}: the schema accepts a record that breaks a rule",
            f.name
        ));
    }
    if Record::parse(kind, &f.text).is_ok() {
        out.push(format!(
            "{}: the typed parse accepts a record that breaks a rule",
            f.name
        ));
    }
    out
}

/// Runs both checks over every fixture of `kind`, and fails listing every problem.
#[track_caller]
pub fn check_kind(name: &str) {
    let kind = kind(name);
    let valid = valid(name);
    let invalid = invalid(name);
    assert!(
        !valid.is_empty(),
        "no valid fixtures for record kind `{kind}`"
    );
    let mut problems = Vec::new();
    for f in &valid {
        problems.extend(problems_of_valid(kind, f));
    }
    for f in &invalid {
        problems.extend(problems_of_invalid(kind, f));
    }
    assert!(
        problems.is_empty(),
        "{} problem(s) in the `{kind}` fixtures:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
