//! The compiled JSON Schema validator of each record kind, beside the typed parse: where and why a
//! record breaks its schema.
//!
//! A record is valid when the schema accepts it; the typed parse must then succeed too (the test
//! suite checks that the two verdicts agree on every fixture).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::Value;

use crate::Contract;
use crate::v1::{self, RecordKind};

/// One schema violation: where in the record, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer into the record (empty for the record itself).
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

/// Error building the validators (a schema the `jsonschema` crate cannot compile).
#[derive(Debug)]
pub struct BuildError(String);

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BuildError {}

/// Compiled validators, one per record kind, for the schemas of this build.
///
/// [`Validators::on_demand`] compiles them when a record first needs one: the typed parse decides
/// whether a record is valid and the schemas only explain a refused record (or cross-check, when
/// asked), so a bundle whose records all read never needs them, and compiling every kind's schema
/// (about 10 ms) would come before the first byte of the bundle is read.
pub struct Validators {
    /// The validators, or why they could not be built; set on first use for validators made
    /// [`Validators::on_demand`].
    by_kind: OnceLock<Result<ByKind, BuildError>>,
    /// What an on-demand compile reads: a contract's schema texts and record kinds (nothing for
    /// validators compiled from texts at once).
    source: Source,
}

type Source = (
    &'static [(&'static str, &'static str)],
    &'static [diagwire_runtime::RecordInfo],
);

type ByKind = BTreeMap<String, jsonschema::Validator>;

impl Validators {
    /// Compiles the schemas compiled into this crate.
    pub fn new() -> Result<Self, BuildError> {
        Self::for_contract(&v1::CONTRACT)
    }

    /// Compiles the schemas of a contract version (the current one or a release reader's).
    pub fn for_contract(contract: &Contract) -> Result<Self, BuildError> {
        let source = (contract.schema_texts, contract.records);
        Ok(Validators {
            by_kind: OnceLock::from(Ok(Self::compile_source(source)?)),
            source,
        })
    }

    /// The validators of a contract version, compiled when a record first needs one (see the
    /// type's documentation). A schema that does not compile then explains nothing: a refused
    /// record keeps the typed parse's error. The contracts of this crate and of its release
    /// readers compile (their tests build them with [`Validators::for_contract`]).
    pub fn on_demand(contract: &Contract) -> Self {
        Validators {
            by_kind: OnceLock::new(),
            source: (contract.schema_texts, contract.records),
        }
    }

    /// The validators, compiled now if they were not yet.
    fn compiled(&self) -> Result<&ByKind, &BuildError> {
        self.by_kind
            .get_or_init(|| Self::compile_source(self.source))
            .as_ref()
    }

    fn compile_source((texts, records): Source) -> Result<ByKind, BuildError> {
        Self::compile(
            texts.iter().copied(),
            records.iter().map(|r| (r.kind, r.schema, r.def)),
        )
    }

    /// The validator of the record kind named `kind`, if these schemas have it (and compile).
    fn of(&self, kind: &str) -> Option<&jsonschema::Validator> {
        self.compiled().ok()?.get(kind)
    }

    /// Compiles a set of schema texts (stem, text) for the given record kinds.
    pub fn from_texts(
        texts: &[(&str, &str)],
        records: &[diagwire_runtime::RecordInfo],
    ) -> Result<Self, BuildError> {
        Self::from_parts(
            texts.iter().copied(),
            records.iter().map(|r| (r.kind, r.schema, r.def)),
        )
    }

    /// Compiles schema texts `(stem, text)` for record kinds `(kind, schema stem, definition)`:
    /// the form for schemas read at run time, such as a tree a review compares.
    pub fn from_parts<'a>(
        texts: impl IntoIterator<Item = (&'a str, &'a str)>,
        records: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>,
    ) -> Result<Self, BuildError> {
        let by_kind = Self::compile(texts, records)?;
        Ok(Validators {
            by_kind: OnceLock::from(Ok(by_kind)),
            source: (&[], &[]),
        })
    }

    fn compile<'a>(
        texts: impl IntoIterator<Item = (&'a str, &'a str)>,
        records: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>,
    ) -> Result<ByKind, BuildError> {
        let mut docs = Vec::new();
        for (stem, text) in texts {
            let doc: Value = serde_json::from_str(text)
                .map_err(|e| BuildError(format!("schemas/{stem}.schema.json: {e}")))?;
            docs.push((format!("urn:diagwire:{stem}"), doc));
        }
        let registry = jsonschema::Registry::new()
            .extend(docs.iter().map(|(id, doc)| (id.as_str(), doc)))
            .and_then(|b| b.prepare())
            .map_err(|e| BuildError(format!("schema registry: {e}")))?;
        let mut by_kind = BTreeMap::new();
        for (kind, schema, def) in records {
            let root = serde_json::json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "$ref": format!("urn:diagwire:{schema}#/$defs/{def}"),
            });
            let validator = jsonschema::options()
                .with_registry(&registry)
                .with_keyword("format", integer_format)
                .build(&root)
                .map_err(|e| BuildError(format!("record kind `{kind}`: {e}")))?;
            by_kind.insert(kind.to_owned(), validator);
        }
        Ok(by_kind)
    }

    /// The record kinds these validators know.
    pub fn kinds(&self) -> impl Iterator<Item = &str> + '_ {
        self.compiled()
            .into_iter()
            .flat_map(|k| k.keys().map(String::as_str))
    }

    /// Every schema violation of `record` as a record of `kind`.
    pub fn violations(&self, kind: RecordKind, record: &Value) -> Vec<Violation> {
        self.violations_named(kind.as_str(), record)
            .unwrap_or_default()
    }

    /// Every schema violation of `record` as a record of the kind named `kind`; `None` when these
    /// schemas have no such kind (validators of another contract version).
    pub fn violations_named(&self, kind: &str, record: &Value) -> Option<Vec<Violation>> {
        let v = self.of(kind)?;
        let mut out = Vec::new();
        for e in v.iter_errors(record) {
            explain(&e, &mut out);
        }
        out.dedup();
        Some(out)
    }

    /// The first `max` schema violations of `record` as a record of `kind`, and whether it has
    /// more: the validator's errors are taken one at a time, so a record with a million
    /// violations costs what `max` of them cost.
    pub fn violations_first(
        &self,
        kind: RecordKind,
        record: &Value,
        max: usize,
    ) -> (Vec<Violation>, bool) {
        let Some(v) = self.of(kind.as_str()) else {
            return (Vec::new(), false);
        };
        let mut out = Vec::new();
        let mut errors = v.iter_errors(record);
        for e in errors.by_ref() {
            explain(&e, &mut out);
            out.dedup();
            if out.len() >= max {
                break;
            }
        }
        let more = out.len() > max || errors.next().is_some();
        out.truncate(max);
        (out, more)
    }

    /// Whether `record` is a valid record of `kind` (false for a kind these schemas do not have).
    pub fn is_valid(&self, kind: RecordKind, record: &Value) -> bool {
        self.of(kind.as_str()).is_some_and(|v| v.is_valid(record))
    }
}

/// The profile's integer widths (`format: uint64` …) also say how the number is written.
///
/// JSON Schema counts `1.0` as an integer, but swactor's readers (and the generated types) only take
/// integers written without a fraction or exponent, so the validator checks that too: the schema's
/// verdict and the typed parse then agree. `format: double` and string formats stay annotations.
fn integer_format<'a>(
    _parent: &'a serde_json::Map<String, Value>,
    value: &'a Value,
    _path: jsonschema::paths::Location,
) -> Result<Box<dyn for<'i> jsonschema::Keyword<'i>>, jsonschema::ValidationError<'a>> {
    let integer = matches!(
        value.as_str(),
        Some("uint8" | "uint16" | "uint32" | "uint64" | "int32" | "int64")
    );
    Ok(Box::new(WrittenAsInteger(integer)))
}

/// Rejects a number written with a fraction or exponent where an integer is required.
struct WrittenAsInteger(bool);

impl<'i> jsonschema::Keyword<'i> for WrittenAsInteger {
    fn validate(&self, instance: &'i Value) -> Result<(), jsonschema::ValidationError<'i>> {
        if self.is_valid(instance) {
            Ok(())
        } else {
            Err(jsonschema::ValidationError::custom(format!(
                "{instance} is not written as an integer"
            )))
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        !(self.0 && matches!(instance, Value::Number(n) if n.is_f64()))
    }
}

/// Turns one validation error into the violations a person needs to read.
///
/// A union (`oneOf`) error says only that no branch matched; the useful errors are those of the
/// branch whose tag did match, so branches that failed on the tag (`const`, the catch-all's `not`)
/// or on the type of the whole value are dropped and the rest are explained in turn. The `anyOf`
/// of a nullable reference is explained by its reference branch.
fn explain(e: &jsonschema::ValidationError<'_>, out: &mut Vec<Violation>) {
    use jsonschema::error::ValidationErrorKind as K;
    let here = e.instance_path().to_string();
    let branches = match e.kind() {
        K::OneOfNotValid { context } | K::AnyOf { context } => context,
        _ => {
            out.push(Violation {
                pointer: here,
                message: short(e.to_string()),
            });
            return;
        }
    };
    let relevant: Vec<_> = branches
        .iter()
        .filter(|errors| {
            !errors.iter().any(|b| {
                matches!(b.kind(), K::Constant { .. } | K::Not { .. })
                    || (matches!(b.kind(), K::Type { .. }) && b.instance_path().to_string() == here)
            })
        })
        .collect();
    if relevant.is_empty() {
        out.push(Violation {
            pointer: here,
            message: "matches none of the known variants (unknown or missing tag, or a value of the wrong type)".into(),
        });
        return;
    }
    if relevant.len() == 1 {
        for b in relevant[0] {
            explain(b, out);
        }
        return;
    }
    // Several branches fit the tag equally badly (typically: the tag itself is missing). Report what
    // they all agree on.
    let explained: Vec<Vec<Violation>> = relevant
        .iter()
        .map(|errors| {
            let mut v = Vec::new();
            errors.iter().for_each(|b| explain(b, &mut v));
            v
        })
        .collect();
    let common: Vec<Violation> = explained[0]
        .iter()
        .filter(|v| explained[1..].iter().all(|other| other.contains(v)))
        .cloned()
        .collect();
    if common.is_empty() {
        out.push(Violation {
            pointer: here,
            message: "matches none of the known variants".into(),
        });
    } else {
        out.extend(common);
    }
}

fn short(mut message: String) -> String {
    const MAX: usize = 240;
    if message.len() > MAX {
        let mut cut = MAX;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push('…');
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An event whose `wall_ms` is a string: the typed parse refuses it and the schema says where.
    const BAD_EVENT: &str = r#"{"type":"boot","wall_ms":"soon"}"#;

    #[test]
    fn validators_on_demand_compile_when_first_asked_and_explain_as_compiled_ones_do() {
        let lazy = Validators::on_demand(&v1::CONTRACT);
        assert!(lazy.by_kind.get().is_none(), "compiled before any use");
        let record: Value = serde_json::from_str(BAD_EVENT).unwrap();
        let eager = Validators::new().expect("the contract's schemas compile");
        let want = eager.violations(RecordKind::Event, &record);
        assert!(!want.is_empty(), "{BAD_EVENT} breaks the event schema");
        assert_eq!(lazy.violations(RecordKind::Event, &record), want);
        assert!(matches!(lazy.by_kind.get(), Some(Ok(_))));
        assert_eq!(
            lazy.kinds().collect::<Vec<_>>(),
            eager.kinds().collect::<Vec<_>>()
        );
    }

    #[test]
    fn validators_on_demand_of_schemas_that_do_not_compile_explain_nothing() {
        const TEXTS: &[(&str, &str)] = &[("broken", r#"{"$defs": {"X": {"type": 7}}}"#)];
        const RECORDS: &[diagwire_runtime::RecordInfo] = &[diagwire_runtime::RecordInfo {
            kind: "event",
            schema: "broken",
            def: "X",
        }];
        let broken = Validators {
            by_kind: OnceLock::new(),
            source: (TEXTS, RECORDS),
        };
        let record: Value = serde_json::from_str(BAD_EVENT).unwrap();
        assert!(broken.violations(RecordKind::Event, &record).is_empty());
        assert!(matches!(broken.by_kind.get(), Some(Err(_))));
    }
}
