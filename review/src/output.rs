//! The review's JSON output as types: what `diagwire diff --format json` and
//! `diagwire review --format json` print, and the source of their published JSON Schemas
//! (`schemas/tools/diff.schema.json`, `schemas/tools/review.schema.json`, derived with schemars).

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::Comparison;
use crate::confirm::Side;
use crate::proto::Status;
use crate::review::Review;

/// The version of the JSON shapes of `diff` and `review` (a semantic version, bumped by the
/// contract's rules: a new optional key is minor, a removed or retyped key is major).
pub const FORMAT_VERSION: &str = "1.0.0";

/// `diagwire diff --format json`: every change between two schema trees.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DiffOutput {
    /// The version of this JSON shape.
    #[schemars(extend("const" = FORMAT_VERSION))]
    pub format_version: &'static str,
    /// The comparison.
    #[serde(flatten)]
    pub comparison: ComparisonOutput,
}

/// One comparison of two schema trees.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ComparisonOutput {
    /// The older tree, as named.
    pub old: String,
    /// The newer tree, as named.
    pub new: String,
    /// The older tree's contract version, when it has one.
    pub old_version: Option<String>,
    /// The newer tree's contract version, when it has one.
    pub new_version: Option<String>,
    /// The bump the changes need (`patch`, `minor`, `major`); null without changes.
    pub required_bump: Option<&'static str>,
    /// The rule ids of the breaking changes.
    pub breaking: Vec<&'static str>,
    /// Whether the binary form was compared.
    pub protobuf: ProtobufOutput,
    /// Every change, each under a rule.
    pub findings: Vec<FindingOutput>,
}

/// Whether the binary form was compared, from which number tables, or why not.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ProtobufOutput {
    /// Both sides' descriptors were compared.
    Compared {
        /// Always true.
        compared: bool,
        /// The older side's number table.
        old_numbers: String,
        /// The newer side's number table.
        new_numbers: String,
    },
    /// The protobuf rules were not applied.
    Skipped {
        /// Always false.
        compared: bool,
        /// Why.
        skipped: String,
    },
}

/// One change.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FindingOutput {
    /// The rule's stable id.
    pub rule: &'static str,
    /// `json` or `protobuf`: the form the rule is about.
    pub form: &'static str,
    /// The bump the rule needs.
    pub bump: &'static str,
    /// The schema file stem.
    pub schema: String,
    /// The definition.
    pub def: String,
    /// The field, enum value or variant, if the change is about one.
    pub member: Option<String>,
    /// What changed, in words.
    pub detail: String,
    /// What an old reader does with records written after the change.
    pub old_reader_on_new_records: &'static str,
    /// What a new reader does with records written before the change.
    pub new_reader_on_old_records: &'static str,
    /// For a break, a record one side writes and the other refuses or misreads.
    pub counterexample: Option<CounterexampleOutput>,
}

/// A counterexample and what the readers said of it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CounterexampleOutput {
    /// The record kind.
    pub kind: String,
    /// `old` or `new`: the side that writes it.
    pub written_by: &'static str,
    /// The record.
    pub record: Value,
    /// Whether the readers confirmed the break.
    pub confirmed: bool,
    /// A note on how it was confirmed.
    pub note: String,
    /// Each reader's verdict.
    pub verdicts: Vec<VerdictOutput>,
}

/// One reader's verdict on a counterexample.
#[derive(Debug, Serialize, JsonSchema)]
pub struct VerdictOutput {
    /// The reader.
    pub reader: String,
    /// Whether it accepts the record.
    pub accepts: bool,
    /// What it said.
    pub detail: String,
}

/// `diagwire review --format json`: the working tree against its base and every release of the
/// current major.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReviewOutput {
    /// The version of this JSON shape.
    #[schemars(extend("const" = FORMAT_VERSION))]
    pub format_version: &'static str,
    /// Whether the review passes.
    pub passes: bool,
    /// Why it fails, one sentence each.
    pub failures: Vec<String>,
    /// `schemas/VERSION`.
    pub version: String,
    /// Whether the schemas changed against the base.
    pub schemas_changed: bool,
    /// Whether CHANGELOG.md records the change.
    pub changelog_updated: bool,
    /// The generated files that are stale.
    pub stale_generated: Vec<String>,
    /// Each comparison, with the bump it declares.
    pub comparisons: Vec<ReviewedComparison>,
}

/// One comparison of a review.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReviewedComparison {
    /// The comparison.
    #[serde(flatten)]
    pub comparison: ComparisonOutput,
    /// The bump the versions declare; null when they declare none.
    pub declared_bump: Option<&'static str>,
    /// Whether the comparison decides the verdict (against the base) or is shown only.
    pub binding: bool,
    /// Whether the declared bump is at least the required one.
    pub version_ok: bool,
    /// The order in which to roll out the change.
    pub rollout: RolloutOutput,
}

/// The rollout order of a change.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RolloutOutput {
    /// The roles, first to last.
    pub order: Vec<&'static str>,
    /// Why.
    pub why: String,
}

impl ComparisonOutput {
    /// The JSON output of a comparison.
    pub fn new(c: &Comparison) -> Self {
        ComparisonOutput {
            old: c.old.clone(),
            new: c.new.clone(),
            old_version: c.old_version.as_ref().map(ToString::to_string),
            new_version: c.new_version.as_ref().map(ToString::to_string),
            required_bump: (!c.is_empty()).then(|| c.required().as_str()),
            breaking: c.breaking().map(|f| f.finding.rule.id).collect(),
            protobuf: match &c.protobuf {
                Status::Compared { old, new } => ProtobufOutput::Compared {
                    compared: true,
                    old_numbers: old.clone(),
                    new_numbers: new.clone(),
                },
                Status::Skipped(why) => ProtobufOutput::Skipped {
                    compared: false,
                    skipped: crate::md::plain(why),
                },
            },
            findings: c
                .findings
                .iter()
                .map(|f| {
                    let r = f.finding.rule;
                    FindingOutput {
                        rule: r.id,
                        form: if r.is_protobuf() { "protobuf" } else { "json" },
                        bump: r.bump.as_str(),
                        schema: f.finding.at.schema.clone(),
                        def: f.finding.at.def.clone(),
                        member: f.finding.at.member.clone(),
                        detail: crate::md::plain(&f.finding.detail),
                        old_reader_on_new_records: r.old_reader.as_str(),
                        new_reader_on_old_records: r.new_reader.as_str(),
                        counterexample: f.counterexample.as_ref().map(|x| CounterexampleOutput {
                            kind: x.kind.clone(),
                            written_by: match x.written_by {
                                Side::Old => "old",
                                Side::New => "new",
                            },
                            record: x.record.clone(),
                            confirmed: x.confirmed,
                            note: crate::md::plain(&x.note),
                            verdicts: x
                                .verdicts
                                .iter()
                                .map(|v| VerdictOutput {
                                    reader: crate::md::plain(&v.reader),
                                    accepts: v.accepts,
                                    detail: crate::md::plain(&v.detail),
                                })
                                .collect(),
                        }),
                    }
                })
                .collect(),
        }
    }
}

impl DiffOutput {
    /// The JSON output of `diff`.
    pub fn new(c: &Comparison) -> Self {
        DiffOutput {
            format_version: FORMAT_VERSION,
            comparison: ComparisonOutput::new(c),
        }
    }
}

impl ReviewOutput {
    /// The JSON output of `review`.
    pub fn new(r: &Review) -> Self {
        let failures = r.failures();
        ReviewOutput {
            format_version: FORMAT_VERSION,
            passes: failures.is_empty(),
            failures: failures.iter().map(|f| crate::md::plain(f)).collect(),
            version: r.version.to_string(),
            schemas_changed: r.schemas_changed,
            changelog_updated: r.changelog_ok,
            stale_generated: r.stale_generated.clone(),
            comparisons: r
                .steps
                .iter()
                .map(|s| ReviewedComparison {
                    comparison: ComparisonOutput::new(&s.comparison),
                    declared_bump: s.declared.map(|b| b.as_str()),
                    binding: s.binding,
                    version_ok: s.version_ok(),
                    rollout: RolloutOutput {
                        order: s.rollout.order.iter().map(|r| r.as_str()).collect(),
                        why: s.rollout.why.clone(),
                    },
                })
                .collect(),
        }
    }
}
