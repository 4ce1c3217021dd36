//! The JSON output of `diagwire check --format json` and `diagwire parity --format json` as types,
//! and the source of their published JSON Schemas (`schemas/tools/check.schema.json` and
//! `schemas/tools/parity.schema.json`, derived with schemars). `docs/behaviour.md` explains every
//! rule, statistic and threshold; the field docs here become the schemas' descriptions.
//! The reports' `to_json` methods live here too, so that the reports never import their output.
//! A statistic that is not a finite number (an empty sample's quantile) prints as `null`, as
//! serde_json writes it, and the schema says so.

use std::collections::BTreeMap;

use diagwire::Location;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::coverage::{Coverage, DiffKind, Difference, has_provenance, is_tracked, struct_fields};
use crate::parity::{Decider, GroupResult, GroupVerdict, ParityReport};
use crate::rulebook::Level;
use crate::significance::PMethod;
use crate::verdict::{CheckReport, Finding, RuleResult, Status, Witness};

/// The version of these JSON shapes (a semantic version, bumped by the contract's rules: a new
/// optional key is minor, a removed or retyped key is major).
pub const FORMAT_VERSION: &str = "1.2.0";

/// `diagwire check --format json`: the behaviour check of one bundle, with its coverage, its
/// shifts against a baseline and its coverage gate when asked for.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CheckOutput {
    /// The version of this JSON shape.
    #[schemars(extend("const" = FORMAT_VERSION))]
    pub format_version: &'static str,
    /// The rules' verdict.
    pub check: CheckReportOutput,
    /// The coverage and absence statistics (with `--coverage` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<CoverageOutput>,
    /// The coverage set against the baseline's (with `--baseline` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineOutput>,
    /// The contract coverage against the required percentage (with `--fail-on-coverage-below`
    /// only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage_gate: Option<CoverageGate>,
}

impl CheckOutput {
    /// The output of one check: `coverage` when it is to be shown, `baseline` as the baseline
    /// bundle and the differences against it, `gate` as the required and the reached percentage.
    pub fn new(
        report: &CheckReport,
        coverage: Option<&Coverage>,
        baseline: Option<(String, &[Difference])>,
        gate: Option<(f64, f64)>,
    ) -> CheckOutput {
        CheckOutput {
            format_version: FORMAT_VERSION,
            check: CheckReportOutput::from(report),
            coverage: coverage.map(CoverageOutput::from),
            baseline: baseline.map(|(bundle, d)| BaselineOutput {
                bundle,
                flagged: d.iter().filter(|x| x.flagged).count() as u64,
                differences: d.iter().map(DifferenceOutput::from).collect(),
            }),
            coverage_gate: gate.map(|(required, percent)| CoverageGate {
                required,
                percent,
                passed: percent >= required,
            }),
        }
    }
}

/// `diagwire check --follow --format json`: one line per finding the moment it is decided, then
/// one line with the report of everything read.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FollowLine {
    /// The version of this JSON shape.
    #[schemars(extend("const" = FORMAT_VERSION))]
    pub format_version: &'static str,
    /// A finding, decided (never taken back: the report has it too).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finding: Option<FindingOutput>,
    /// The report, on the last line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<CheckOutput>,
    /// Why the follow ended, on the last line: `settled` (the finalize record landed and the run
    /// stayed quiet for the settle time), `closed` (the collector closed its live stream), `until`
    /// (the `--until` time ran out) or `interrupted`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<&'static str>,
    /// On the last line, when the report does not cover the whole run: why, how many records
    /// are missing, and the rules that are therefore inconclusive. The exit status is then 2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<Incomplete>,
}

/// Why a follow's report does not cover the whole run, and what it therefore cannot vouch for.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Incomplete {
    /// Why, in one sentence: records the collector could not give, a stream that failed or
    /// closed before the run's end, a follow stopped before the finalize, no run found.
    pub why: String,
    /// How many records are known to be missing; absent when that is unknown (the stream ended
    /// before the run did).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_records: Option<u64>,
    /// The rules without a finding: the missing records may hold one, so their pass cannot be
    /// vouched for (the findings of the other rules stand, though some may owe to what is
    /// missing: an outcome whose start was not read).
    pub inconclusive_rules: Vec<String>,
}

impl Incomplete {
    /// What `report` cannot vouch for, for `why` (`missing_records` when known).
    pub fn new(report: &CheckReport, why: String, missing_records: Option<u64>) -> Incomplete {
        Incomplete {
            why,
            missing_records,
            inconclusive_rules: report
                .rules
                .iter()
                .filter(|r| r.findings_total == 0)
                .map(|r| r.id.clone())
                .collect(),
        }
    }

    /// The Markdown paragraph the report is preceded by.
    pub fn to_markdown(&self) -> String {
        use diagwire::problem::printable;
        let missing = match self.missing_records {
            Some(n) => format!(" {n} record(s) of the run are missing."),
            None => String::new(),
        };
        let rules: Vec<String> = self
            .inconclusive_rules
            .iter()
            .map(|r| format!("`{}`", printable(r)))
            .collect();
        format!(
            "**Incomplete**: {}.{missing} Inconclusive, as a pass cannot be vouched for: {}. Exit status 2.\n",
            printable(&self.why),
            if rules.is_empty() {
                "none".to_owned()
            } else {
                rules.join(", ")
            }
        )
    }
}

impl FollowLine {
    /// The line of a finding.
    pub fn finding(f: &Finding) -> FollowLine {
        FollowLine {
            format_version: FORMAT_VERSION,
            finding: Some(FindingOutput::from(f)),
            report: None,
            ended: None,
            incomplete: None,
        }
    }

    /// The last line.
    pub fn report(
        report: CheckOutput,
        ended: &'static str,
        incomplete: Option<Incomplete>,
    ) -> FollowLine {
        FollowLine {
            format_version: FORMAT_VERSION,
            finding: None,
            report: Some(report),
            ended: Some(ended),
            incomplete,
        }
    }
}

/// The rules' verdict on one bundle.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CheckReportOutput {
    /// The bundle as given.
    pub bundle: String,
    /// Its run id (the manifest's, else the run directory's name).
    pub run_id: String,
    /// The contract version the rules were evaluated with.
    pub contract_version: String,
    /// Records read.
    pub records: u64,
    /// Files and records that could not be read.
    pub unreadable: u64,
    /// Whether no rule at level `violation` has a finding.
    pub passed: bool,
    /// The number of findings of rules at level `violation`.
    pub violations: u64,
    /// Every rule, in the rule book's order.
    pub rules: Vec<RuleOutput>,
}

impl From<&CheckReport> for CheckReportOutput {
    fn from(r: &CheckReport) -> Self {
        CheckReportOutput {
            bundle: r.bundle.clone(),
            run_id: r.run_id.clone(),
            contract_version: r.contract_version.clone(),
            records: r.records,
            unreadable: r.unreadable,
            passed: r.passed(),
            violations: r.violations(),
            rules: r.rules.iter().map(RuleOutput::from).collect(),
        }
    }
}

/// One rule's result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RuleOutput {
    /// The rule's stable id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its scope.
    pub scope: String,
    /// Its level.
    pub level: Level,
    /// Whether it had anything to check, and how it went.
    pub status: Status,
    /// How many things (records, pairs, runs, …) it examined.
    pub checked: u64,
    /// How many of those it could not decide (a dial still in flight when the stream ended).
    pub inconclusive: u64,
    /// How many findings it had in all.
    pub findings_total: u64,
    /// The findings kept (at most the report's cap per rule), in bundle order.
    pub findings: Vec<FindingOutput>,
}

impl From<&RuleResult> for RuleOutput {
    fn from(r: &RuleResult) -> Self {
        RuleOutput {
            id: r.id.clone(),
            title: r.title.clone(),
            scope: r.scope.clone(),
            level: r.level,
            status: r.status(),
            checked: r.checked,
            inconclusive: r.inconclusive,
            findings_total: r.findings_total,
            findings: r.findings.iter().map(FindingOutput::from).collect(),
        }
    }
}

/// One finding of one rule.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FindingOutput {
    /// The rule's id.
    pub rule: String,
    /// The rule's level.
    pub level: Level,
    /// Where the finding is: the record that breaks the rule (or the first of them).
    pub location: LocationOutput,
    /// One sentence saying why.
    pub message: String,
    /// The records involved: the fewest that show the break.
    pub witness: Vec<WitnessOutput>,
}

impl From<&Finding> for FindingOutput {
    fn from(f: &Finding) -> Self {
        FindingOutput {
            rule: f.rule.clone(),
            level: f.level,
            location: LocationOutput::from(&f.location),
            message: f.message.clone(),
            witness: f.witness.iter().map(WitnessOutput::from).collect(),
        }
    }
}

/// One record (or the part of one) a finding is about.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WitnessOutput {
    /// Where it is.
    pub location: LocationOutput,
    /// The record, or the part of it at the pointer.
    pub value: Value,
}

impl From<&Witness> for WitnessOutput {
    fn from(w: &Witness) -> Self {
        WitnessOutput {
            location: LocationOutput::from(&w.location),
            value: w.value.clone(),
        }
    }
}

/// Where something is in a bundle.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LocationOutput {
    /// The file as a person would find it.
    pub file: String,
    /// The record's index in the file (0 for a file holding one record); null for the file as a
    /// whole.
    pub record: Option<u64>,
    /// JSON pointer into the record (empty for the record itself).
    pub pointer: String,
}

impl From<&Location> for LocationOutput {
    fn from(l: &Location) -> Self {
        LocationOutput {
            file: l.file.clone(),
            record: l.record.map(|r| r as u64),
            pointer: l.pointer.clone(),
        }
    }
}

/// The coverage and absence statistics of one bundle.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CoverageOutput {
    /// The bundle as given.
    pub bundle: String,
    /// The contract version the records were read with.
    pub contract_version: String,
    /// Records read.
    pub records: u64,
    /// Files and records that could not be read.
    pub unreadable: u64,
    /// How much of the contract the bundle holds.
    pub contract: ContractOutput,
    /// Per node role (`(bundle)` for files outside the node directories), what it holds.
    pub roles: BTreeMap<String, RoleOutput>,
}

impl From<&Coverage> for CoverageOutput {
    fn from(c: &Coverage) -> Self {
        let k = &c.contract;
        CoverageOutput {
            bundle: c.bundle.clone(),
            contract_version: c.contract_version.clone(),
            records: c.records,
            unreadable: c.unreadable,
            contract: ContractOutput {
                fields_total: k.fields_total,
                fields_seen: k.fields_seen,
                percent: (k.percent() * 10.0).round() / 10.0,
                event_types_total: k.event_types_total,
                event_types_seen: k.event_types_seen,
                unseen_event_types: k.unseen_event_types.clone(),
                unseen_fields: k.unseen_fields.clone(),
            },
            roles: c
                .roles
                .iter()
                .map(|(name, r)| {
                    let types = r
                        .types
                        .iter()
                        .map(|(t, s)| {
                            let fields = struct_fields(t)
                                .unwrap_or(&[])
                                .iter()
                                .zip(&s.fields)
                                .filter(|(f, _)| is_tracked(f))
                                .map(|(f, c)| {
                                    let prov = has_provenance(f);
                                    let field = FieldOutput {
                                        presence: f.presence.name().to_owned(),
                                        present: c.present,
                                        null: c.null,
                                        absent: c.absent,
                                        reported: prov.then_some(c.reported),
                                        derived: prov.then_some(c.derived),
                                        unavailable: prov.then_some(UnavailableOutput {
                                            api_gap: c.api_gap,
                                            not_observed: c.not_observed,
                                            source_unavailable: c.source_unavailable,
                                        }),
                                    };
                                    (f.key.to_owned(), field)
                                })
                                .collect();
                            let stats = TypeOutput {
                                instances: s.instances,
                                fields,
                            };
                            ((*t).to_owned(), stats)
                        })
                        .collect();
                    let role = RoleOutput {
                        nodes: r.nodes.iter().cloned().collect(),
                        record_kinds: r.record_kinds.clone(),
                        event_types: r.event_types.clone(),
                        unknown_event_types: r.unknown_event_types.clone(),
                        custom_kinds: r.custom_kinds.clone(),
                        unknown_keys: r.unknown_keys.clone(),
                        types,
                    };
                    (name.clone(), role)
                })
                .collect(),
        }
    }
}

/// How much of the contract a bundle holds.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ContractOutput {
    /// Fields of the contract (those with an optional presence or an absence discriminator).
    pub fields_total: u64,
    /// Of those, the fields present at least once.
    pub fields_seen: u64,
    /// `fields_seen` as a percentage of `fields_total`, to one decimal.
    #[schemars(with = "Option<f64>")]
    pub percent: f64,
    /// Event types of the contract.
    pub event_types_total: u64,
    /// Of those, the event types seen at least once.
    pub event_types_seen: u64,
    /// The event types never seen.
    pub unseen_event_types: Vec<String>,
    /// The fields never present (`Type.field`).
    pub unseen_fields: Vec<String>,
}

/// What the nodes of one role hold.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RoleOutput {
    /// The node directories of this role.
    pub nodes: Vec<String>,
    /// Records per record kind.
    pub record_kinds: BTreeMap<String, u64>,
    /// Events per event type of the contract.
    pub event_types: BTreeMap<String, u64>,
    /// Events per event type the contract does not know.
    pub unknown_event_types: BTreeMap<String, u64>,
    /// `Custom` events per payload kind.
    pub custom_kinds: BTreeMap<String, u64>,
    /// Keys the contract does not know, per `kind:/pointer/key`, with how often they occur (the
    /// number of distinct keys is capped).
    pub unknown_keys: BTreeMap<String, u64>,
    /// Per struct type of the contract, its instances and the counts of its tracked fields.
    pub types: BTreeMap<String, TypeOutput>,
}

/// The instances of one struct type and the counts of its tracked fields.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TypeOutput {
    /// Instances of the type.
    pub instances: u64,
    /// Per tracked field (an optional presence or an absence discriminator), by key, its counts.
    pub fields: BTreeMap<String, FieldOutput>,
}

/// The counts of one field over the instances of its type.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FieldOutput {
    /// The field's presence in the contract (`required`, `nullable`, `omittable`, `default`,
    /// `skip-default`).
    pub presence: String,
    /// Present with a value.
    pub present: u64,
    /// Written as `null`.
    pub null: u64,
    /// Left out.
    pub absent: u64,
    /// Present and reported natively (fields with an absence discriminator only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reported: Option<u64>,
    /// Present and derived (fields with an absence discriminator only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub derived: Option<u64>,
    /// Why it was unavailable (fields with an absence discriminator only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<UnavailableOutput>,
}

/// Why a field with an absence discriminator was unavailable, counted.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UnavailableOutput {
    /// Absent, and the applicable `api_gaps` names the field's gap: could not ask.
    pub api_gap: u64,
    /// Absent without a declared gap: not observed.
    pub not_observed: u64,
    /// The paired source field says `unavailable`: could not ask.
    pub source_unavailable: u64,
}

/// The coverage set against a baseline's.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BaselineOutput {
    /// The baseline bundle as given.
    pub bundle: String,
    /// How many differences count against the bundle.
    pub flagged: u64,
    /// Every difference.
    pub differences: Vec<DifferenceOutput>,
}

/// The contract coverage against the required percentage.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CoverageGate {
    /// The required percentage.
    pub required: f64,
    /// The contract coverage reached, in percent.
    #[schemars(with = "Option<f64>")]
    pub percent: f64,
    /// Whether it meets the required percentage.
    pub passed: bool,
}

/// One difference between two coverages.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DifferenceOutput {
    /// What kind of difference it is.
    pub kind: DiffKind,
    /// The node role.
    pub role: String,
    /// What differs: a record kind, an event type, `Type.field`.
    pub subject: String,
    /// Side A's counts, in words (the bundle checked, or the simulated one).
    pub a: String,
    /// Side B's counts, in words (the baseline, or the production bundle).
    pub b: String,
    /// The test's p-value, for shares and mixes.
    pub p: Option<f64>,
    /// The p-value after Holm's adjustment over the comparison.
    pub p_adjusted: Option<f64>,
    /// The effect size: change of share, or total variation distance.
    pub effect: Option<f64>,
    /// Whether the difference counts against the bundle.
    pub flagged: bool,
}

impl From<&Difference> for DifferenceOutput {
    fn from(d: &Difference) -> Self {
        DifferenceOutput {
            kind: d.kind,
            role: d.role.clone(),
            subject: d.subject.clone(),
            a: d.a.clone(),
            b: d.b.clone(),
            p: d.p,
            p_adjusted: d.p_adjusted,
            effect: d.effect,
            flagged: d.flagged,
        }
    }
}

/// `diagwire parity --format json`: the parity of a simulated and a production bundle.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ParityOutput {
    /// The version of this JSON shape.
    #[schemars(extend("const" = FORMAT_VERSION))]
    pub format_version: &'static str,
    /// The simulated bundle as given.
    pub sim: String,
    /// The production bundle as given.
    pub prod: String,
    /// Whether parity holds: at least one class judged, at most 1% of either bundle unreadable,
    /// the shape matches and no group shifted.
    pub passed: bool,
    /// Classes with enough values on both sides to be judged (0: nothing to compare).
    pub judged_classes: u64,
    /// What reading the simulated bundle found.
    pub sim_reading: ReadingOutput,
    /// What reading the production bundle found.
    pub prod_reading: ReadingOutput,
    /// The thresholds used.
    pub thresholds: ParityThresholds,
    /// Shape differences (side A is the simulated bundle, side B the production one).
    pub shape: Vec<DifferenceOutput>,
    /// Distribution groups, one per class, judged.
    pub groups: Vec<GroupOutput>,
}

impl From<&ParityReport> for ParityOutput {
    fn from(r: &ParityReport) -> Self {
        let t = &r.thresholds;
        ParityOutput {
            format_version: FORMAT_VERSION,
            sim: r.sim.clone(),
            prod: r.prod.clone(),
            passed: r.passed(),
            judged_classes: r.judged() as u64,
            sim_reading: ReadingOutput::from(&r.reading[0]),
            prod_reading: ReadingOutput::from(&r.reading[1]),
            thresholds: ParityThresholds {
                alpha: t.alpha,
                min_n: t.min_n as u64,
                large_n: t.large_n as u64,
                closed_form_min_n: t.closed_form_min_n as u64,
                permutations: t.permutations as u64,
                w1_over_sd: t.w1_over_sd,
                tvd: t.tvd,
                rate_ratio: t.rate_ratio,
            },
            shape: r.shape.iter().map(DifferenceOutput::from).collect(),
            groups: r.groups.iter().map(GroupOutput::from).collect(),
        }
    }
}

/// What reading one bundle of a parity found.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReadingOutput {
    /// Records read.
    pub records: u64,
    /// Files and records that could not be read (or that their types refuse).
    pub unreadable: u64,
}

impl From<&crate::parity::Reading> for ReadingOutput {
    fn from(r: &crate::parity::Reading) -> Self {
        ReadingOutput {
            records: r.records,
            unreadable: r.unreadable,
        }
    }
}

/// The thresholds of a parity comparison.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ParityThresholds {
    /// Family-wise significance level (Holm).
    pub alpha: f64,
    /// Fewest values a class needs on each side to be judged.
    pub min_n: u64,
    /// Above this many values on both sides, effect sizes decide instead of p-values.
    pub large_n: u64,
    /// Fewest values on each side for the closed-form KS p-value.
    pub closed_form_min_n: u64,
    /// Permutations of a permutation p-value (at least).
    pub permutations: u64,
    /// Largest Wasserstein-1 distance, as a share of the pooled standard deviation, that is not a
    /// shift.
    pub w1_over_sd: f64,
    /// Largest total variation distance of two mixes that is not a shift.
    pub tvd: f64,
    /// Largest ratio of two rates (either way) that is not a shift.
    pub rate_ratio: f64,
}

/// One class of one distribution group, judged.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GroupOutput {
    /// The group's id.
    pub group: String,
    /// The field it reads.
    pub field: String,
    /// The class (`Success`, `activations`, `-` for none).
    pub class: String,
    /// Values (or events, for rates) on the simulated side.
    pub n_sim: u64,
    /// And on the production side.
    pub n_prod: u64,
    /// The quantiles of each side (numeric groups with values on both sides).
    pub quantiles: Option<QuantilePair>,
    /// The two-sample Kolmogorov-Smirnov test (numeric groups).
    pub ks: Option<KsOutput>,
    /// The Wasserstein-1 distance (numeric groups).
    pub wasserstein1: Option<Wasserstein1>,
    /// The category shares of each side (mix groups).
    pub mix: Option<MixOutput>,
    /// The chi-squared homogeneity test of the two mixes (mix groups).
    pub mix_test: Option<MixTest>,
    /// Events per node-minute of each side, and the test's p-value (rate groups).
    pub rates_per_node_minute: Option<Rates>,
    /// The statistic that decided.
    pub decided_by: Decider,
    /// The deciding p-value, when a test decided.
    pub p: Option<f64>,
    /// It after Holm's adjustment.
    pub p_adjusted: Option<f64>,
    /// The verdict.
    pub verdict: GroupVerdict,
}

impl From<&GroupResult> for GroupOutput {
    fn from(g: &GroupResult) -> Self {
        let q = |q: [f64; 4]| Quantiles {
            p50: q[0],
            p90: q[1],
            p99: q[2],
            max: q[3],
        };
        GroupOutput {
            group: g.group.clone(),
            field: g.field.clone(),
            class: g.class.clone(),
            n_sim: g.n_sim,
            n_prod: g.n_prod,
            quantiles: g.q_sim.zip(g.q_prod).map(|(s, p)| QuantilePair {
                sim: q(s),
                prod: q(p),
            }),
            ks: g.ks.map(|(d, p, method)| KsOutput { d, p, method }),
            wasserstein1: g
                .w1
                .map(|(distance, over_sd)| Wasserstein1 { distance, over_sd }),
            mix: g.mix.as_ref().map(|(s, p)| MixOutput {
                sim: s.clone(),
                prod: p.clone(),
            }),
            mix_test: g
                .mix_test
                .map(|(p, tvd, method)| MixTest { p, tvd, method }),
            rates_per_node_minute: g.rates.map(|(sim, prod, p)| Rates { sim, prod, p }),
            decided_by: g.decider,
            p: g.p,
            p_adjusted: g.p_adjusted,
            verdict: g.verdict,
        }
    }
}

/// The quantiles of both sides.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct QuantilePair {
    /// The simulated side's.
    pub sim: Quantiles,
    /// The production side's.
    pub prod: Quantiles,
}

/// The quantiles of one side.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Quantiles {
    /// The median.
    #[schemars(with = "Option<f64>")]
    pub p50: f64,
    /// The 90th percentile.
    #[schemars(with = "Option<f64>")]
    pub p90: f64,
    /// The 99th percentile.
    #[schemars(with = "Option<f64>")]
    pub p99: f64,
    /// The largest value.
    #[schemars(with = "Option<f64>")]
    pub max: f64,
}

/// A two-sample Kolmogorov-Smirnov test.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct KsOutput {
    /// The KS statistic.
    #[schemars(with = "Option<f64>")]
    pub d: f64,
    /// Its p-value.
    #[schemars(with = "Option<f64>")]
    pub p: f64,
    /// How the p-value was computed.
    pub method: PMethod,
}

/// The Wasserstein-1 distance of two samples.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Wasserstein1 {
    /// The distance, in the field's unit.
    #[schemars(with = "Option<f64>")]
    pub distance: f64,
    /// Its share of the pooled standard deviation.
    #[schemars(with = "Option<f64>")]
    pub over_sd: f64,
}

/// The category shares of both sides.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MixOutput {
    /// The simulated side's share per category.
    #[schemars(with = "BTreeMap<String, Option<f64>>")]
    pub sim: BTreeMap<String, f64>,
    /// The production side's share per category.
    #[schemars(with = "BTreeMap<String, Option<f64>>")]
    pub prod: BTreeMap<String, f64>,
}

/// The chi-squared homogeneity test of two mixes.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MixTest {
    /// Its p-value.
    #[schemars(with = "Option<f64>")]
    pub p: f64,
    /// The total variation distance of the two mixes.
    #[schemars(with = "Option<f64>")]
    pub tvd: f64,
    /// How the p-value was computed.
    pub method: PMethod,
}

/// The event rates of both sides.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Rates {
    /// Events per node-minute on the simulated side.
    #[schemars(with = "Option<f64>")]
    pub sim: f64,
    /// Events per node-minute on the production side.
    #[schemars(with = "Option<f64>")]
    pub prod: f64,
    /// The conditional binomial test's p-value.
    #[schemars(with = "Option<f64>")]
    pub p: f64,
}

/// `value` as JSON: what the `to_json` functions of the reports return.
fn to_value<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("OK because every output type serializes to JSON")
}

impl CheckReport {
    /// The report as JSON: the `check` key of [`CheckOutput`].
    pub fn to_json(&self) -> Value {
        to_value(&CheckReportOutput::from(self))
    }
}

impl Finding {
    /// The finding as JSON.
    pub fn to_json(&self) -> Value {
        to_value(&FindingOutput::from(self))
    }
}

impl Coverage {
    /// The coverage as JSON: the `coverage` key of [`CheckOutput`].
    pub fn to_json(&self) -> Value {
        to_value(&CoverageOutput::from(self))
    }
}

impl Difference {
    /// As JSON.
    pub fn to_json(&self) -> Value {
        to_value(&DifferenceOutput::from(self))
    }
}

impl ParityReport {
    /// As JSON: [`ParityOutput`].
    pub fn to_json(&self) -> Value {
        to_value(&ParityOutput::from(self))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_finding_with_its_witness_keeps_its_json_shape() {
        let f = Finding {
            rule: "seq.monotonic".into(),
            level: Level::Violation,
            location: Location::at("stage-1/events.jsonl", Some(3), ""),
            witness: vec![Witness {
                location: Location::at("stage-1/events.jsonl", None, "/seq"),
                value: json!({"seq": 2}),
            }],
            message: "seq went back".into(),
        };
        assert_eq!(
            f.to_json(),
            json!({
                "rule": "seq.monotonic",
                "level": "violation",
                "location": {"file": "stage-1/events.jsonl", "record": 3, "pointer": ""},
                "message": "seq went back",
                "witness": [{
                    "location": {"file": "stage-1/events.jsonl", "record": null, "pointer": "/seq"},
                    "value": {"seq": 2},
                }],
            })
        );
    }

    #[test]
    fn the_enums_are_written_as_machine_output_spells_them() {
        for (v, s) in [
            (
                to_value(&Status::NotExercised),
                Status::NotExercised.as_str(),
            ),
            (to_value(&Level::Information), Level::Information.as_str()),
            (
                to_value(&GroupVerdict::OneSided),
                GroupVerdict::OneSided.as_str(),
            ),
            (
                to_value(&GroupVerdict::TooFew),
                GroupVerdict::TooFew.as_str(),
            ),
            (to_value(&Decider::ChiSquared), Decider::ChiSquared.as_str()),
            (to_value(&Decider::None), Decider::None.as_str()),
            (
                to_value(&DiffKind::AbsenceMix),
                DiffKind::AbsenceMix.as_str(),
            ),
            (to_value(&PMethod::ClosedForm), PMethod::ClosedForm.as_str()),
        ] {
            assert_eq!(v, Value::String(s.to_owned()));
        }
    }
}
