//! The rule file: rules as data.
//!
//! `check/behaviour-rules.json` lists every rule with its stable id, the scope it is evaluated per,
//! its level, the evaluator that implements it (`check`) with that evaluator's parameters, and a
//! description. [`Rulebook::builtin`] is that file, compiled in; [`Rulebook::from_json`] reads
//! another one (a stricter level, a rule left out, different ordering rules). Loading checks the
//! parameters against the contract's shape table, so a rule that names an event type or field the
//! contract does not have is refused instead of silently checking nothing.

use std::collections::BTreeSet;
use std::fmt;

use diagwire::shape::{FieldShape, PayloadShape, TypeKind, ValueShape};
use diagwire::v1::CONTRACT;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The rule file shipped with the crate.
pub const BUILTIN_RULES: &str = include_str!("../behaviour-rules.json");

/// How much a finding of a rule weighs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// The bundle breaks the contract: `diagwire check` fails.
    Violation,
    /// Worth fixing, but not a break of the contract.
    Improvement,
    /// For the reader's information.
    Information,
}

impl Level {
    /// The level as written in the rule file and in machine output.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Violation => "violation",
            Level::Improvement => "improvement",
            Level::Information => "information",
        }
    }
}

/// One rule of the rule book.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Stable id (`order.prompt_after_barrier`), never reused for another meaning.
    pub id: String,
    /// A short title.
    pub title: String,
    /// What the rule is evaluated per (`run`, `node`, `stage`, `event`, `object`, …).
    pub scope: String,
    /// How much a finding weighs.
    pub level: Level,
    /// What the rule requires, in words.
    pub description: String,
    /// The evaluator and its parameters.
    pub check: Check,
}

/// An evaluator with its parameters: what [`crate::evaluate`] implements.
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    /// Every file and record of the layout could be read.
    Readable,
    /// Events carry the identity fields of their scope.
    ScopeFields(ScopeFields),
    /// A node directory holds one node's records.
    NodeDirectory,
    /// Records name the manifest's run.
    ManifestRun,
    /// Values of the listed open enums are among the contract's values.
    KnownValues(KnownValues),
    /// A field of an event never holds one of the listed values.
    ForbiddenValues(ForbiddenValues),
    /// An event needs earlier events.
    Precedes(Precedes),
    /// No listed event comes after an event.
    NotBefore(NotBefore),
    /// How many events of a set a key may have.
    Count(Count),
    /// `monotonic_seq` never decreases per node.
    Monotonic(Monotonic),
    /// `DialStarted` and `DialOutcome` pair up.
    DialPairing(DialPairing),
    /// A source value implies a value.
    SourceImplies(SourceImplies),
    /// Every copy of the iroh version agrees.
    IrohVersion,
    /// No value is both reported natively and declared unaskable.
    GapContradicted,
    /// No absent gap-governed value without a declared gap or an error event.
    SilentGap,
}

/// One identity scope: the field that puts an event in it, the other fields it then needs, and
/// the scopes it lies within.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scope {
    /// The scope's name.
    pub scope: String,
    /// The field whose presence puts an event in the scope.
    pub key: String,
    /// Further fields the scope needs.
    pub requires: Vec<String>,
    /// Scopes this one lies within: their key fields are needed too.
    pub within: Vec<String>,
}

/// Parameters of `scope_fields`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeFields {
    /// The scope table.
    pub scopes: Vec<Scope>,
}

/// Parameters of `known_values`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnownValues {
    /// Names of open string enums of the contract.
    pub types: Vec<String>,
}

/// Values an event's field never holds, although its type allows them (a value type shared with
/// another event, whose values do not all make sense here).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForbiddenValues {
    /// The event type.
    pub event: String,
    /// The field of the event.
    pub field: String,
    /// The values it never holds.
    pub values: Vec<String>,
}

/// An earlier event an event needs: one of type `event` whose `match` fields equal the event's.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Need {
    /// The event type needed.
    pub event: String,
    /// The fields that must be equal.
    #[serde(rename = "match")]
    pub fields: Vec<String>,
}

/// Work that must be complete before an event: every `opened_by` event (matching the event on
/// `open_match`) that precedes it has a `closed_by` event of the same node (matching the opener
/// on `pair`) that precedes it too.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Completion {
    /// The event type that opens the work.
    pub opened_by: String,
    /// Fields the opener shares with the checked event.
    pub open_match: Vec<String>,
    /// The event type that closes it.
    pub closed_by: String,
    /// Fields the closer shares with the opener.
    pub pair: Vec<String>,
}

/// Parameters of `precedes`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Precedes {
    /// The event type checked (its first occurrence per node and key).
    pub event: String,
    /// Earlier events it needs.
    pub needs: Vec<Need>,
    /// Work that must be complete before it.
    pub completes: Vec<Completion>,
}

/// Parameters of `not_before`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotBefore {
    /// The event type whose first occurrence per key is checked.
    pub event: String,
    /// Event types that must not come after it.
    pub later: Vec<String>,
    /// The fields that must be equal.
    #[serde(rename = "match")]
    pub fields: Vec<String>,
}

/// Parameters of `count`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Count {
    /// The event types counted together.
    pub events: Vec<String>,
    /// The fields that make the key counted per.
    pub per: Vec<String>,
    /// The fewest a key may have (keys are those any event names in `per`).
    pub min: Option<u64>,
    /// The most a key may have.
    pub max: Option<u64>,
    /// Apply only when the manifest says the bundle was finalized.
    pub only_if_finalized: bool,
    /// Check only the bundle's own run (`per` must be `["run_id"]`).
    pub only_bundle_run: bool,
}

/// Parameters of `monotonic`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Monotonic {
    /// `Custom` kinds numbered by another counter.
    pub except_custom_kinds: Vec<String>,
}

/// Which half of the dial pairing a rule checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DialSide {
    /// Every outcome has its start.
    Outcome,
    /// Every start has its outcome.
    Start,
}

/// Parameters of `dial_pairing`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DialPairing {
    /// The half checked.
    pub side: DialSide,
    /// How long past its budget an attempt may still be unanswered at the end of the stream.
    pub grace_ms: u64,
}

/// Parameters of `source_implies`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceImplies {
    /// The struct type.
    #[serde(rename = "type")]
    pub type_name: String,
    /// The value field.
    pub field: String,
    /// Its source field.
    pub source: String,
    /// The source value the rule applies to.
    pub when: String,
    /// The value the field must then have.
    pub must_be: String,
}

/// Why a rule file was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RulebookError(pub String);

impl fmt::Display for RulebookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RulebookError {}

/// The rules, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Rulebook {
    /// The rules.
    pub rules: Vec<Rule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[allow(dead_code)]
    description: Option<String>,
    rules: Vec<RawRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    id: String,
    title: String,
    scope: String,
    level: Level,
    check: String,
    #[serde(default)]
    params: Value,
    description: String,
}

impl Rulebook {
    /// The shipped rule file.
    pub fn builtin() -> Rulebook {
        Rulebook::from_json(BUILTIN_RULES)
            .expect("OK because a test loads the shipped rule file against the contract")
    }

    /// Reads a rule file and checks it against the contract.
    pub fn from_json(text: &str) -> Result<Rulebook, RulebookError> {
        let raw: RawFile = serde_json::from_str(text)
            .map_err(|e| RulebookError(format!("not a rule file: {e}")))?;
        let mut ids = BTreeSet::new();
        let mut rules = Vec::new();
        for r in raw.rules {
            if !ids.insert(r.id.clone()) {
                return Err(RulebookError(format!("rule id `{}` appears twice", r.id)));
            }
            if r.id.is_empty() || r.description.trim().is_empty() {
                return Err(RulebookError(format!(
                    "rule `{}` needs an id and a description",
                    r.id
                )));
            }
            let check = parse_check(&r.check, r.params)
                .map_err(|e| RulebookError(format!("rule `{}`: {e}", r.id)))?;
            validate(&check).map_err(|e| RulebookError(format!("rule `{}`: {e}", r.id)))?;
            rules.push(Rule {
                id: r.id,
                title: r.title,
                scope: r.scope,
                level: r.level,
                description: r.description,
                check,
            });
        }
        Ok(Rulebook { rules })
    }

    /// The rule with that id.
    pub fn get(&self, id: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.id == id)
    }
}

fn params<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, String> {
    serde_json::from_value(v).map_err(|e| format!("bad params: {e}"))
}

fn no_params(v: &Value) -> Result<(), String> {
    match v {
        Value::Null => Ok(()),
        Value::Object(m) if m.is_empty() => Ok(()),
        _ => Err("this check takes no params".into()),
    }
}

fn parse_check(name: &str, p: Value) -> Result<Check, String> {
    Ok(match name {
        "readable" => no_params(&p).map(|()| Check::Readable)?,
        "scope_fields" => Check::ScopeFields(params(p)?),
        "node_directory" => no_params(&p).map(|()| Check::NodeDirectory)?,
        "manifest_run" => no_params(&p).map(|()| Check::ManifestRun)?,
        "known_values" => Check::KnownValues(params(p)?),
        "forbidden_values" => Check::ForbiddenValues(params(p)?),
        "precedes" => Check::Precedes(params(p)?),
        "not_before" => Check::NotBefore(params(p)?),
        "count" => Check::Count(params(p)?),
        "monotonic" => Check::Monotonic(params(p)?),
        "dial_pairing" => Check::DialPairing(params(p)?),
        "source_implies" => Check::SourceImplies(params(p)?),
        "iroh_version" => no_params(&p).map(|()| Check::IrohVersion)?,
        "gap_contradicted" => no_params(&p).map(|()| Check::GapContradicted)?,
        "silent_gap" => no_params(&p).map(|()| Check::SilentGap)?,
        other => return Err(format!("unknown check `{other}`")),
    })
}

/// The struct of the event variant tagged `tag`, if the contract has one.
pub(crate) fn event_fields(tag: &str) -> Option<&'static [FieldShape]> {
    let def = diagwire::shape::variant_def(&CONTRACT, "Event", tag)?;
    match CONTRACT.get(def)?.kind {
        TypeKind::Struct { fields, .. } => Some(fields),
        _ => None,
    }
}

/// Every event variant struct of the contract: (tag, fields).
pub(crate) fn event_variants() -> Vec<(&'static str, &'static [FieldShape])> {
    let mut out = Vec::new();
    if let Some(TypeKind::Union { variants, .. }) = CONTRACT.get("Event").map(|t| t.kind) {
        for v in variants {
            if let PayloadShape::Def(def) = v.payload
                && let Some(TypeKind::Struct { fields, .. }) = CONTRACT.get(def).map(|t| t.kind)
            {
                out.push((v.tag, fields));
            }
        }
    }
    out
}

fn event_with_fields(tag: &str, fields: &[String]) -> Result<(), String> {
    let shape = event_fields(tag).ok_or_else(|| format!("`{tag}` is not an event type"))?;
    for f in fields {
        if !shape.iter().any(|s| s.key == f) {
            return Err(format!("event `{tag}` has no field `{f}`"));
        }
    }
    Ok(())
}

fn enum_values(name: &str) -> Option<&'static [&'static str]> {
    match CONTRACT.get(name)?.kind {
        TypeKind::Enum { values, .. } => Some(values),
        _ => None,
    }
}

fn validate(check: &Check) -> Result<(), String> {
    match check {
        Check::ScopeFields(s) => {
            let names: BTreeSet<&str> = s.scopes.iter().map(|s| s.scope.as_str()).collect();
            let all_fields: BTreeSet<&str> = event_variants()
                .iter()
                .flat_map(|(_, f)| f.iter().map(|f| f.key))
                .collect();
            for scope in &s.scopes {
                for f in std::iter::once(&scope.key).chain(&scope.requires) {
                    if !all_fields.contains(f.as_str()) {
                        return Err(format!("no event has a field `{f}`"));
                    }
                }
                for w in &scope.within {
                    if !names.contains(w.as_str()) {
                        return Err(format!("scope `{}` lies within unknown `{w}`", scope.scope));
                    }
                }
            }
        }
        Check::KnownValues(k) => {
            for t in &k.types {
                enum_values(t).ok_or_else(|| format!("`{t}` is not a string enum"))?;
            }
        }
        Check::ForbiddenValues(f) => {
            event_with_fields(&f.event, std::slice::from_ref(&f.field))?;
            if f.values.is_empty() {
                return Err("`values` is empty".into());
            }
        }
        Check::Precedes(p) => {
            let mut key_fields = Vec::new();
            for n in &p.needs {
                event_with_fields(&n.event, &n.fields)?;
                key_fields.extend(n.fields.iter().cloned());
            }
            for c in &p.completes {
                event_with_fields(&c.opened_by, &c.open_match)?;
                event_with_fields(&c.opened_by, &c.pair)?;
                event_with_fields(&c.closed_by, &c.pair)?;
                key_fields.extend(c.open_match.iter().cloned());
            }
            event_with_fields(&p.event, &key_fields)?;
        }
        Check::NotBefore(n) => {
            event_with_fields(&n.event, &n.fields)?;
            for l in &n.later {
                event_with_fields(l, &n.fields)?;
            }
        }
        Check::Count(c) => {
            if c.events.is_empty() || c.min.is_none() && c.max.is_none() {
                return Err("count needs events and a min or a max".into());
            }
            for e in &c.events {
                event_with_fields(e, &c.per)?;
            }
            if c.only_bundle_run && c.per != ["run_id"] {
                return Err("only_bundle_run needs per = [\"run_id\"]".into());
            }
        }
        Check::SourceImplies(s) => {
            let TypeKind::Struct { fields, .. } = CONTRACT
                .get(&s.type_name)
                .ok_or_else(|| format!("no type `{}`", s.type_name))?
                .kind
            else {
                return Err(format!("`{}` is not a struct", s.type_name));
            };
            let field = fields
                .iter()
                .find(|f| f.key == s.field)
                .ok_or_else(|| format!("`{}` has no field `{}`", s.type_name, s.field))?;
            if field.source != Some(s.source.as_str()) {
                return Err(format!(
                    "`{}.{}` is not paired with the source `{}`",
                    s.type_name, s.field, s.source
                ));
            }
            if let ValueShape::Ref(t) = field.value {
                let values = enum_values(t).unwrap_or(&[]);
                if !values.contains(&s.must_be.as_str()) {
                    return Err(format!("`{}` is not a value of `{t}`", s.must_be));
                }
            }
            if !crate::blocks::gap_blocks()
                .iter()
                .any(|b| crate::blocks::reaches(b.type_name, &s.type_name))
            {
                return Err(format!(
                    "`{}` does not occur in a snapshot block with an `api_gaps` list",
                    s.type_name
                ));
            }
        }
        Check::Readable
        | Check::NodeDirectory
        | Check::ManifestRun
        | Check::Monotonic(_)
        | Check::DialPairing(_)
        | Check::IrohVersion
        | Check::GapContradicted
        | Check::SilentGap => {}
    }
    Ok(())
}
