//! Sim-vs-prod parity: whether a simulated bundle is observably the same as a production bundle
//! of the same scenario.
//!
//! First the shape ([`crate::coverage::compare`] in parity mode): the same record kinds, event
//! types and field-presence sets per node role, and the same absence mixes, leaving out what only
//! a simulator writes (`sim_only` in `check/parity-groups.json`). Then the distributions of the
//! fields the simulator must reproduce, each group read from the records as `parity-groups.json`
//! says, and split into classes (the dial outcome, the message kind, …):
//!
//! * numeric groups (`values`, `inter_arrival`, `dwell`): the quantile table (p50, p90, p99, max),
//!   the two-sample KS statistic D and its p-value, and the Wasserstein-1 distance, also divided by
//!   the pooled sample's standard deviation (the "normed" distance). While both samples are at most
//!   `large_n`, KS decides (closed-form p from `closed_form_min_n` values up on untied data,
//!   permutations otherwise); above, KS finds differences too small to matter, so the normalized
//!   Wasserstein distance decides against `w1_over_sd`;
//! * category groups (`mix`): the chi-squared test of homogeneity (permutations when an expected
//!   count is below 5) up to `large_n`, the total variation distance against `tvd` above;
//! * rates (`rate`): events per node-minute, compared with the conditional binomial test up to
//!   `large_n` events, by their ratio against `rate_ratio` above.
//!
//! P-values that decide are adjusted with Holm's method over all of a report's groups, and a group
//! is a shift when its adjusted p is below `alpha`. A class with fewer than `min_n` values on a
//! side is not judged, unless the other side has at least `min_n` and this one none: that is a
//! class only one bundle has.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write;
use std::path::Path;

use diagwire::bundle::read::{BundleReader, Limits, ReadError};
use diagwire::bundle::records::{Item, walk};
use diagwire::v1::{Event, Record};
use diagwire::view::{Buffer, Tape};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::coverage::{self, Coverage, Difference, Mode};
use crate::significance::{self, PMethod};

/// The parity configuration shipped with the crate.
pub const BUILTIN_GROUPS: &str = include_str!("../parity-groups.json");

/// The thresholds of distribution parity.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thresholds {
    /// Family-wise significance level (Holm).
    pub alpha: f64,
    /// Fewest values a class needs on each side to be judged.
    pub min_n: usize,
    /// Above this many values on both sides, effect sizes decide instead of p-values.
    pub large_n: usize,
    /// Fewest values on each side for the closed-form KS p-value.
    pub closed_form_min_n: usize,
    /// Permutations of a permutation p-value (at least; more when many groups are tested, so
    /// that the smallest permutation p-value can pass Holm's adjustment).
    pub permutations: usize,
    /// Largest Wasserstein-1 distance, as a share of the pooled standard deviation, that is not a shift.
    pub w1_over_sd: f64,
    /// Largest total variation distance of two mixes that is not a shift.
    pub tvd: f64,
    /// Largest ratio of two rates (either way) that is not a shift.
    pub rate_ratio: f64,
}

/// How a group's samples are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupKind {
    /// The value at `value` of each matching record (or array item).
    Values,
    /// The wall-clock gap between consecutive matching events of one node and class.
    InterArrival,
    /// Matching events per node-minute.
    Rate,
    /// The mix of the values at `value`.
    Mix,
    /// How long a state held: the gap between consecutive `since` values of one key.
    Dwell,
}

/// One distribution group.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    /// Stable id.
    pub id: String,
    /// The contract field it reads, for the report.
    pub field: String,
    /// How samples are taken.
    pub kind: GroupKind,
    /// `event` or `snapshot`.
    pub record: String,
    /// The event type (for `event` records).
    #[serde(rename = "type", default)]
    pub event_type: Option<String>,
    /// A pointer to an array of the record whose items are sampled.
    #[serde(default)]
    pub each: Option<String>,
    /// The pointer of the value.
    #[serde(default)]
    pub value: Option<String>,
    /// The pointer of the class.
    #[serde(default)]
    pub by: Option<String>,
    /// Pointers that make a sample distinct (repeats are dropped).
    #[serde(default)]
    pub distinct_by: Vec<String>,
    /// `dwell`: the pointer of the time the state was entered.
    #[serde(default)]
    pub since: Option<String>,
    /// `dwell`: the pointer of the state.
    #[serde(default)]
    pub state: Option<String>,
    /// `dwell`: the pointer of what the state is about.
    #[serde(default)]
    pub key: Option<String>,
    /// What it measures.
    pub description: String,
}

/// The parity configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[allow(dead_code)]
    #[serde(default)]
    description: Option<String>,
    /// Thresholds.
    pub thresholds: Thresholds,
    /// Subjects only a simulator writes, left out of shape parity.
    pub sim_only: Vec<String>,
    /// The distribution groups.
    pub groups: Vec<Group>,
}

impl Config {
    /// The shipped configuration.
    pub fn builtin() -> Config {
        Config::from_json(BUILTIN_GROUPS).expect("OK because a test loads the shipped file")
    }

    /// Reads a configuration and checks it against the contract.
    pub fn from_json(text: &str) -> Result<Config, String> {
        let c: Config =
            serde_json::from_str(text).map_err(|e| format!("not a parity file: {e}"))?;
        let mut ids = BTreeSet::new();
        for g in &c.groups {
            if !ids.insert(&g.id) {
                return Err(format!("group `{}` appears twice", g.id));
            }
            match g.record.as_str() {
                "event" => {
                    let t = g
                        .event_type
                        .as_deref()
                        .ok_or_else(|| format!("group `{}` needs an event type", g.id))?;
                    if crate::rulebook::event_fields(t).is_none() {
                        return Err(format!("group `{}`: `{t}` is not an event type", g.id));
                    }
                }
                "snapshot" => {}
                other => return Err(format!("group `{}`: unknown record `{other}`", g.id)),
            }
            let needs_value = matches!(g.kind, GroupKind::Values | GroupKind::Mix);
            if needs_value && g.value.is_none() {
                return Err(format!("group `{}` needs a value pointer", g.id));
            }
            if g.kind == GroupKind::Dwell && (g.since.is_none() || g.state.is_none()) {
                return Err(format!("group `{}` needs since and state pointers", g.id));
            }
        }
        Ok(c)
    }
}

#[derive(Debug, Default, Clone)]
struct GroupSamples {
    values: BTreeMap<String, Vec<f64>>,
    mixes: BTreeMap<String, BTreeMap<String, u64>>,
    count: u64,
    last: BTreeMap<(String, String), u64>,
    seen: HashSet<String>,
    dwell: BTreeMap<(String, String), (u64, String)>,
}

/// What parity reads from one bundle: its coverage and the samples of every group.
#[derive(Debug, Clone)]
pub struct Profile {
    /// The coverage and absence statistics.
    pub coverage: Coverage,
    samples: Vec<GroupSamples>,
    /// The token buffer the records' views share.
    buffer: Buffer,
    /// Per node directory, the first and last event wall clock.
    spans: BTreeMap<String, (u64, u64)>,
}

impl Profile {
    /// Node-minutes of event stream.
    pub fn exposure_minutes(&self) -> f64 {
        self.spans
            .values()
            .map(|(a, b)| b.saturating_sub(*a) as f64 / 60_000.0)
            .sum()
    }
}

/// The class a value names: a string's text, an object's first key, `-` for none or `null`, and
/// any other value's JSON text.
fn class_of(tape: &Tape<'_>, v: Option<usize>) -> String {
    match v {
        None => "-".to_owned(),
        Some(v) if tape.is_null(v) => "-".to_owned(),
        Some(v) if tape.is_object(v) => tape
            .first_entry(v)
            .map_or_else(|| "-".into(), |(k, _)| k.into_owned()),
        Some(v) => match tape.as_str(v) {
            Some(s) => s.into_owned(),
            None => tape.canonical(v).unwrap_or_default(),
        },
    }
}

/// The value at `ptr` from `v` (`v` itself without one).
fn at(tape: &Tape<'_>, v: usize, ptr: &Option<String>) -> Option<usize> {
    match ptr {
        Some(p) => tape.pointer(v, p),
        None => Some(v),
    }
}

impl Profile {
    /// The profile of a bundle read from `source` before any record: nothing seen.
    pub fn empty(source: &str, config: &Config) -> Profile {
        Profile {
            coverage: Coverage::new(source),
            samples: vec![GroupSamples::default(); config.groups.len()],
            buffer: Buffer::default(),
            spans: BTreeMap::new(),
        }
    }
}

/// Reads the coverage and group samples of the bundle at `path` in one pass.
pub fn profile(path: &Path, limits: Limits, config: &Config) -> Result<Profile, ReadError> {
    let mut reader = BundleReader::open(path, limits)?;
    let mut p = Profile::empty(&reader.source().display().to_string(), config);
    let mut problems = 0;
    walk(
        &mut reader,
        |item| p.record(&item, config),
        |_| problems += 1,
    );
    for _ in 0..problems {
        p.coverage.problem();
    }
    p.coverage = std::mem::take(&mut p.coverage).finish();
    Ok(p)
}

impl Profile {
    fn record(&mut self, item: &Item<'_>, config: &Config) {
        // The record's view, whole: a group's pointers may lead into any array.
        let tape = match Tape::read_whole(item.text, std::mem::take(&mut self.buffer)) {
            Ok(tape) => tape,
            Err(buffer) => {
                self.buffer = buffer;
                self.coverage.problem();
                return;
            }
        };
        self.coverage.record(item);
        self.samples_of(item, &tape, config);
        self.buffer = tape.into_buffer();
    }

    /// Adds what a record (read as `tape`) gives each group.
    fn samples_of(&mut self, item: &Item<'_>, tape: &Tape<'_>, config: &Config) {
        let label = item.node.unwrap_or("").to_owned();
        let (record, tag, wall) = match item.record {
            Record::Event(e) => {
                let span = self
                    .spans
                    .entry(label.clone())
                    .or_insert((e.wall_ms, e.wall_ms));
                span.0 = span.0.min(e.wall_ms);
                span.1 = span.1.max(e.wall_ms);
                let tag = match &e.event {
                    Event::Other(o) => o.tag.clone(),
                    ev => ev.tag().to_owned(),
                };
                ("event", Some(tag), e.wall_ms)
            }
            Record::Snapshot(s) => ("snapshot", None, s.wall_ms),
            _ => return,
        };
        for (g, samples) in config.groups.iter().zip(&mut self.samples) {
            if g.record != record {
                continue;
            }
            if record == "event" && g.event_type.as_deref() != tag.as_deref() {
                continue;
            }
            let items: Vec<usize> = match &g.each {
                Some(ptr) => match tape.pointer(0, ptr) {
                    Some(a) if tape.is_array(a) => tape.elements(a).collect(),
                    _ => Vec::new(),
                },
                None => vec![0],
            };
            for it in items {
                let class = class_of(tape, g.by.as_ref().and_then(|b| tape.pointer(it, b)));
                match g.kind {
                    GroupKind::Values => {
                        let Some(x) = at(tape, it, &g.value).and_then(|v| tape.as_f64(v)) else {
                            continue;
                        };
                        if !g.distinct_by.is_empty() {
                            let key = std::iter::once(label.clone())
                                .chain(g.distinct_by.iter().map(|d| {
                                    tape.pointer(it, d)
                                        .and_then(|v| tape.canonical(v))
                                        .unwrap_or_else(|| "null".into())
                                }))
                                .collect::<Vec<_>>()
                                .join("\u{1f}");
                            if !samples.seen.insert(key) {
                                continue;
                            }
                        }
                        samples.values.entry(class).or_default().push(x);
                    }
                    GroupKind::InterArrival => {
                        let key = (label.clone(), class.clone());
                        if let Some(prev) = samples.last.insert(key, wall) {
                            samples
                                .values
                                .entry(class)
                                .or_default()
                                .push(wall.saturating_sub(prev) as f64);
                        }
                    }
                    GroupKind::Rate => samples.count += 1,
                    GroupKind::Mix => {
                        let cat = class_of(tape, at(tape, it, &g.value));
                        *samples
                            .mixes
                            .entry(class)
                            .or_default()
                            .entry(cat)
                            .or_default() += 1;
                    }
                    GroupKind::Dwell => {
                        let (Some(since), Some(state)) = (
                            at(tape, it, &g.since).and_then(|v| tape.as_u64(v)),
                            g.state.as_ref().and_then(|s| tape.pointer(it, s)),
                        ) else {
                            continue;
                        };
                        let state = class_of(tape, Some(state));
                        let key = (
                            label.clone(),
                            class_of(tape, g.key.as_ref().and_then(|k| tape.pointer(it, k))),
                        );
                        match samples.dwell.get(&key) {
                            Some((prev, prev_state)) if since > *prev => {
                                let d = (since - prev) as f64;
                                let ps = prev_state.clone();
                                samples.values.entry(ps).or_default().push(d);
                                samples.dwell.insert(key, (since, state));
                            }
                            Some(_) => {}
                            None => {
                                samples.dwell.insert(key, (since, state));
                            }
                        }
                    }
                }
            }
        }
    }
}

/// How a group was judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GroupVerdict {
    /// Within the thresholds.
    Same,
    /// A shift past the threshold.
    Shift,
    /// Only one bundle has this class.
    OneSided,
    /// Too few values to judge.
    TooFew,
}

impl GroupVerdict {
    /// As machine output writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupVerdict::Same => "same",
            GroupVerdict::Shift => "shift",
            GroupVerdict::OneSided => "one_sided",
            GroupVerdict::TooFew => "too_few",
        }
    }

    /// Whether it fails parity.
    pub fn fails(self) -> bool {
        matches!(self, GroupVerdict::Shift | GroupVerdict::OneSided)
    }
}

/// The statistic that decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decider {
    /// The KS p-value.
    Ks,
    /// The normalized Wasserstein-1 distance.
    Wasserstein,
    /// The chi-squared homogeneity p-value.
    ChiSquared,
    /// The total variation distance.
    TotalVariation,
    /// The conditional binomial p-value of two rates.
    RateTest,
    /// The ratio of two rates.
    RateRatio,
    /// Nothing (too few values, or one-sided).
    None,
}

impl Decider {
    /// As machine output writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Decider::Ks => "ks",
            Decider::Wasserstein => "wasserstein",
            Decider::ChiSquared => "chi_squared",
            Decider::TotalVariation => "total_variation",
            Decider::RateTest => "rate_test",
            Decider::RateRatio => "rate_ratio",
            Decider::None => "none",
        }
    }
}

/// One class of one group, judged.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupResult {
    /// The group's id.
    pub group: String,
    /// The field it reads.
    pub field: String,
    /// The class (`Success`, `activations`, `-` for none).
    pub class: String,
    /// How the samples were taken.
    pub kind: GroupKind,
    /// Values (or events, for rates) on the simulated side.
    pub n_sim: u64,
    /// And on the production side.
    pub n_prod: u64,
    /// p50, p90, p99, max of the simulated side (numeric groups).
    pub q_sim: Option<[f64; 4]>,
    /// And of the production side.
    pub q_prod: Option<[f64; 4]>,
    /// KS statistic, p-value and how it was computed (numeric groups).
    pub ks: Option<(f64, f64, PMethod)>,
    /// Wasserstein-1 distance and its share of the pooled spread (numeric groups).
    pub w1: Option<(f64, f64)>,
    /// Category shares of each side (mix groups).
    pub mix: Option<(BTreeMap<String, f64>, BTreeMap<String, f64>)>,
    /// Chi-squared p-value and total variation distance (mix groups).
    pub mix_test: Option<(f64, f64, PMethod)>,
    /// Events per node-minute of each side, and the test's p-value (rate groups).
    pub rates: Option<(f64, f64, f64)>,
    /// The statistic that decided.
    pub decider: Decider,
    /// The deciding p-value, when a test decided.
    pub p: Option<f64>,
    /// It after Holm's adjustment.
    pub p_adjusted: Option<f64>,
    /// The verdict.
    pub verdict: GroupVerdict,
}

/// The parity of two bundles.
#[derive(Debug, Clone)]
pub struct ParityReport {
    /// The simulated bundle.
    pub sim: String,
    /// The production bundle.
    pub prod: String,
    /// Shape differences.
    pub shape: Vec<Difference>,
    /// Distribution groups, judged.
    pub groups: Vec<GroupResult>,
    /// The thresholds used.
    pub thresholds: Thresholds,
    /// What reading each bundle found: the simulated one, then the production one.
    pub reading: [Reading; 2],
}

/// What reading one bundle of a parity found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    /// Records read.
    pub records: u64,
    /// Files and records that could not be read (or that their types refuse).
    pub unreadable: u64,
}

impl Reading {
    /// The share of what was read that could not be, from 0 to 1.
    pub fn unreadable_share(&self) -> f64 {
        match self.records + self.unreadable {
            0 => 0.0,
            all => self.unreadable as f64 / all as f64,
        }
    }
}

/// The largest share of a bundle's records that may be unreadable before parity fails: more, and
/// what was read no longer stands for the run.
pub const MAX_UNREADABLE_SHARE: f64 = 0.01;

impl ParityReport {
    /// Whether parity holds: something was compared (at least one class judged), at most
    /// [`MAX_UNREADABLE_SHARE`] of either bundle could not be read, the shape matches and no group
    /// shifted.
    pub fn passed(&self) -> bool {
        !self.nothing_to_compare()
            && self.unreadable_sides().next().is_none()
            && !self.shape.iter().any(|d| d.flagged)
            && !self.groups.iter().any(|g| g.verdict.fails())
    }

    /// Classes with enough values on both sides to be judged.
    pub fn judged(&self) -> usize {
        self.groups
            .iter()
            .filter(|g| g.verdict != GroupVerdict::TooFew)
            .count()
    }

    /// Whether no class could be judged: parity cannot hold on nothing.
    pub fn nothing_to_compare(&self) -> bool {
        self.judged() == 0
    }

    /// The sides ("simulated", "production") more of which could not be read than
    /// [`MAX_UNREADABLE_SHARE`] allows, with what reading them found.
    pub fn unreadable_sides(&self) -> impl Iterator<Item = (&'static str, &Reading)> {
        ["simulated", "production"]
            .into_iter()
            .zip(self.reading.iter())
            .filter(|(_, r)| r.unreadable_share() > MAX_UNREADABLE_SHARE)
    }

    /// The groups that fail.
    pub fn failures(&self) -> impl Iterator<Item = &GroupResult> {
        self.groups.iter().filter(|g| g.verdict.fails())
    }

    /// As Markdown.
    pub fn to_markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# Parity of `{}` (simulated) and `{}` (production)\n",
            diagwire::problem::printable(&self.sim),
            diagwire::problem::printable(&self.prod)
        );
        let shape_flags = self.shape.iter().filter(|d| d.flagged).count();
        let fails: Vec<&GroupResult> = self.failures().collect();
        let _ = writeln!(
            s,
            "{}: {shape_flags} shape difference(s), {} distribution shift(s) in {} judged class(es).\n",
            if self.nothing_to_compare() {
                "**Nothing to compare**"
            } else if self.passed() {
                "**Parity holds**"
            } else {
                "**Parity fails**"
            },
            fails.len(),
            self.judged()
        );
        if self.nothing_to_compare() {
            let _ = writeln!(
                s,
                "No class of any group has {} values on both sides ({} record(s) read from the simulated bundle, {} from the production one), so parity is not shown.\n",
                self.thresholds.min_n, self.reading[0].records, self.reading[1].records
            );
        }
        for (side, r) in ["simulated", "production"].into_iter().zip(&self.reading) {
            if r.unreadable > 0 {
                let _ = writeln!(
                    s,
                    "* The {side} bundle: {} of {} record(s) and file(s) could not be read ({:.1}%){}.",
                    r.unreadable,
                    r.records + r.unreadable,
                    100.0 * r.unreadable_share(),
                    if r.unreadable_share() > MAX_UNREADABLE_SHARE {
                        format!(
                            ", over the {:.0}% parity allows",
                            100.0 * MAX_UNREADABLE_SHARE
                        )
                    } else {
                        String::new()
                    }
                );
            }
        }
        for g in &fails {
            let _ = writeln!(s, "* {}", shift_sentence(g, &self.thresholds));
        }
        if !fails.is_empty() {
            let _ = writeln!(s);
        }
        if self.shape.is_empty() {
            let _ = writeln!(
                s,
                "## Shape parity\n\nSame record kinds, event types and field-presence sets per node role, and no absence mix moved.\n"
            );
        } else {
            s.push_str(&coverage::differences_markdown(
                "Shape parity",
                &self.shape,
                &self.sim,
                &self.prod,
            ));
            let _ = writeln!(s);
        }
        let _ = writeln!(s, "## Distribution parity\n");
        let _ = writeln!(
            s,
            "| group | field | class | n sim | n prod | sim p50 / p90 / p99 / max | prod p50 / p90 / p99 / max | KS D (p) | W1 (÷ sd) | decided by | p (Holm) | verdict |"
        );
        let _ = writeln!(s, "|---|---|---|---:|---:|---|---|---|---|---|---:|---|");
        for g in &self.groups {
            let q = |q: Option<[f64; 4]>| {
                q.map_or_else(String::new, |q| {
                    q.iter()
                        .map(|x| fmt_num(*x))
                        .collect::<Vec<_>>()
                        .join(" / ")
                })
            };
            let (qs, qp) = match (&g.mix, &g.rates) {
                (Some((ms, mp)), _) => (mix_cell(ms), mix_cell(mp)),
                (_, Some((rs, rp, _))) => (format!("{rs:.3}/min"), format!("{rp:.3}/min")),
                _ => (q(g.q_sim), q(g.q_prod)),
            };
            let _ = writeln!(
                s,
                "| `{}` | `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                g.group,
                g.field,
                g.class,
                g.n_sim,
                g.n_prod,
                qs,
                qp,
                g.ks.map_or_else(String::new, |(d, p, m)| format!(
                    "{d:.3} ({p:.2e}, {})",
                    m.as_str()
                )),
                g.w1.map_or_else(String::new, |(w, r)| format!("{} ({r:.3})", fmt_num(w))),
                g.decider.as_str(),
                g.p_adjusted
                    .map_or_else(String::new, |p| format!("{p:.2e}")),
                if g.verdict.fails() {
                    format!("**{}**", g.verdict.as_str())
                } else {
                    g.verdict.as_str().to_owned()
                }
            );
        }
        s
    }
}

fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

fn mix_cell(m: &BTreeMap<String, f64>) -> String {
    m.iter()
        .map(|(k, v)| format!("{k} {:.1}%", v * 100.0))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One sentence naming the field, the statistic and the quantiles of a failing group.
pub fn shift_sentence(g: &GroupResult, t: &Thresholds) -> String {
    let what = format!("`{}` [{}] (`{}`)", g.field, g.class, g.group);
    match g.verdict {
        GroupVerdict::OneSided => format!(
            "{what}: {} values in the simulated bundle, {} in the production one",
            g.n_sim, g.n_prod
        ),
        _ => {
            let stat = match g.decider {
                Decider::Ks => g.ks.map_or_else(String::new, |(d, _, m)| {
                    format!(
                        "KS D = {d:.3}, p = {:.2e} after Holm ({}) < {}",
                        g.p_adjusted.unwrap_or(1.0),
                        m.as_str(),
                        t.alpha
                    )
                }),
                Decider::Wasserstein => g.w1.map_or_else(String::new, |(w, r)| {
                    format!(
                        "Wasserstein-1 = {} = {r:.3} of the pooled standard deviation > {}",
                        fmt_num(w),
                        t.w1_over_sd
                    )
                }),
                Decider::ChiSquared => format!(
                    "chi-squared p = {:.2e} after Holm < {}",
                    g.p_adjusted.unwrap_or(1.0),
                    t.alpha
                ),
                Decider::TotalVariation => g.mix_test.map_or_else(String::new, |(_, tvd, _)| {
                    format!("total variation {tvd:.3} > {}", t.tvd)
                }),
                Decider::RateTest => format!(
                    "rate test p = {:.2e} after Holm < {}",
                    g.p_adjusted.unwrap_or(1.0),
                    t.alpha
                ),
                Decider::RateRatio => format!("rate ratio past {}", t.rate_ratio),
                Decider::None => String::new(),
            };
            let shape = match (&g.q_sim, &g.q_prod, &g.mix, &g.rates) {
                (Some(a), Some(b), _, _) => format!(
                    "; p50/p90/p99/max sim {} vs prod {}",
                    a.iter().map(|x| fmt_num(*x)).collect::<Vec<_>>().join("/"),
                    b.iter().map(|x| fmt_num(*x)).collect::<Vec<_>>().join("/")
                ),
                (_, _, Some((a, b)), _) => format!("; sim {} vs prod {}", mix_cell(a), mix_cell(b)),
                (_, _, _, Some((a, b, _))) => {
                    format!("; sim {a:.3} vs prod {b:.3} per node-minute")
                }
                _ => String::new(),
            };
            format!("{what}: {stat}{shape}")
        }
    }
}

/// Compares the profiles of a simulated and a production bundle.
pub fn compare(sim: &Profile, prod: &Profile, config: &Config) -> ParityReport {
    let t = config.thresholds;
    let shape = coverage::compare(
        &sim.coverage,
        &prod.coverage,
        Mode::Parity,
        &config.sim_only,
        &coverage::Thresholds {
            alpha: t.alpha,
            min_effect: t.tvd,
            min_count: t.min_n as u64,
            rounds: t.permutations,
        },
    );
    // Past MAX_CLASSES classes in a group, the smallest are pooled.
    let samples: Vec<[Classes; 2]> = (0..config.groups.len())
        .map(|i| {
            let (a, b) = (&sim.samples[i], &prod.samples[i]);
            let (va, vb) = pooled(&a.values, &b.values, Vec::len, |m, v| {
                m.extend_from_slice(v)
            });
            let (ma, mb) = pooled(
                &a.mixes,
                &b.mixes,
                |m| m.values().sum::<u64>() as usize,
                |m, v| {
                    for (k, n) in v {
                        *m.entry(k.clone()).or_default() += n;
                    }
                },
            );
            [(va, ma), (vb, mb)]
        })
        .collect();
    // Permutation p-values must be able to get below alpha / (number of tests) after Holm's
    // adjustment: with B rounds the smallest is 1 / (B + 1), so B is at least 2 · classes / alpha.
    let classes: usize = config
        .groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let [(va, ma), (vb, mb)] = &samples[i];
            match g.kind {
                GroupKind::Rate => 1,
                GroupKind::Mix => ma.keys().chain(mb.keys()).collect::<BTreeSet<_>>().len(),
                _ => va.keys().chain(vb.keys()).collect::<BTreeSet<_>>().len(),
            }
        })
        .sum();
    let t = Thresholds {
        permutations: t
            .permutations
            .max(significance::rounds_for(classes, t.alpha)),
        ..t
    };
    let mut groups = Vec::new();
    let mut seed = 0x5EED_u64;
    for (i, g) in config.groups.iter().enumerate() {
        let (a, b) = (&sim.samples[i], &prod.samples[i]);
        let [(va, ma), (vb, mb)] = &samples[i];
        seed = seed.wrapping_add(1);
        match g.kind {
            GroupKind::Values | GroupKind::InterArrival | GroupKind::Dwell => {
                let classes: BTreeSet<&String> = va.keys().chain(vb.keys()).collect();
                for class in classes {
                    let empty = Vec::new();
                    let xa = significance::sorted_finite(va.get(class).unwrap_or(&empty));
                    let xb = significance::sorted_finite(vb.get(class).unwrap_or(&empty));
                    groups.push(numeric(g, class, &xa, &xb, &t, seed));
                }
            }
            GroupKind::Mix => {
                let classes: BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
                for class in classes {
                    let empty = BTreeMap::new();
                    let xa = ma.get(class).unwrap_or(&empty);
                    let xb = mb.get(class).unwrap_or(&empty);
                    groups.push(mix(g, class, xa, xb, &t, seed));
                }
            }
            GroupKind::Rate => {
                groups.push(rate(
                    g,
                    a.count,
                    sim.exposure_minutes(),
                    b.count,
                    prod.exposure_minutes(),
                    &t,
                ));
            }
        }
    }
    let ps: Vec<f64> = groups.iter().filter_map(|g| g.p).collect();
    let mut adjusted = significance::holm(&ps).into_iter();
    for g in &mut groups {
        if g.p.is_some() {
            g.p_adjusted = adjusted.next();
            if g.verdict == GroupVerdict::Same && g.p_adjusted.is_some_and(|p| p < t.alpha) {
                g.verdict = GroupVerdict::Shift;
            }
        }
    }
    let reading = |p: &Profile| Reading {
        records: p.coverage.records,
        unreadable: p.coverage.unreadable,
    };
    ParityReport {
        sim: sim.coverage.bundle.clone(),
        prod: prod.coverage.bundle.clone(),
        shape,
        groups,
        thresholds: t,
        reading: [reading(sim), reading(prod)],
    }
}

fn base(g: &Group, class: &str, n_sim: u64, n_prod: u64) -> GroupResult {
    GroupResult {
        group: g.id.clone(),
        field: g.field.clone(),
        class: class.to_owned(),
        kind: g.kind,
        n_sim,
        n_prod,
        q_sim: None,
        q_prod: None,
        ks: None,
        w1: None,
        mix: None,
        mix_test: None,
        rates: None,
        decider: Decider::None,
        p: None,
        p_adjusted: None,
        verdict: GroupVerdict::TooFew,
    }
}

fn small(n_a: usize, n_b: usize, t: &Thresholds) -> Option<GroupVerdict> {
    if n_a.min(n_b) >= t.min_n {
        return None;
    }
    if n_a.min(n_b) == 0 && n_a.max(n_b) >= t.min_n {
        Some(GroupVerdict::OneSided)
    } else {
        Some(GroupVerdict::TooFew)
    }
}

fn numeric(g: &Group, class: &str, a: &[f64], b: &[f64], t: &Thresholds, seed: u64) -> GroupResult {
    let mut r = base(g, class, a.len() as u64, b.len() as u64);
    let q = |x: &[f64]| -> Option<[f64; 4]> {
        if x.is_empty() {
            return None;
        }
        let v = significance::quantiles(x, &[0.5, 0.9, 0.99]);
        Some([v[0], v[1], v[2], x[x.len() - 1]])
    };
    r.q_sim = q(a);
    r.q_prod = q(b);
    if let Some(v) = small(a.len(), b.len(), t) {
        r.verdict = v;
        return r;
    }
    let large = a.len().min(b.len()) > t.large_n;
    let ks = if large {
        // Only shown: above large_n the Wasserstein distance decides.
        let d = significance::ks_statistic(a, b);
        (
            d,
            significance::ks_p_asymptotic(d, a.len(), b.len()),
            PMethod::ClosedForm,
        )
    } else {
        significance::ks_test(a, b, t.closed_form_min_n, t.permutations, seed)
    };
    let w = significance::wasserstein1(a, b);
    let pooled = significance::sorted_finite(&a.iter().chain(b).copied().collect::<Vec<_>>());
    let ratio = w / significance::spread(&pooled);
    r.ks = Some(ks);
    r.w1 = Some((w, ratio));
    r.verdict = GroupVerdict::Same;
    if !large {
        r.decider = Decider::Ks;
        r.p = Some(ks.1);
    } else {
        r.decider = Decider::Wasserstein;
        if ratio > t.w1_over_sd {
            r.verdict = GroupVerdict::Shift;
        }
    }
    r
}

fn mix(
    g: &Group,
    class: &str,
    a: &BTreeMap<String, u64>,
    b: &BTreeMap<String, u64>,
    t: &Thresholds,
    seed: u64,
) -> GroupResult {
    let cats: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let ca: Vec<u64> = cats
        .iter()
        .map(|c| a.get(*c).copied().unwrap_or(0))
        .collect();
    let cb: Vec<u64> = cats
        .iter()
        .map(|c| b.get(*c).copied().unwrap_or(0))
        .collect();
    let (na, nb) = (ca.iter().sum::<u64>(), cb.iter().sum::<u64>());
    let mut r = base(g, class, na, nb);
    let share = |m: &BTreeMap<String, u64>, n: u64| -> BTreeMap<String, f64> {
        m.iter()
            .map(|(k, v)| (k.clone(), if n == 0 { 0.0 } else { *v as f64 / n as f64 }))
            .collect()
    };
    r.mix = Some((share(a, na), share(b, nb)));
    if let Some(v) = small(na as usize, nb as usize, t) {
        r.verdict = v;
        return r;
    }
    let (_, p, method) = significance::mix_test(&ca, &cb, t.permutations, seed);
    let tvd = significance::total_variation(&ca, &cb);
    r.mix_test = Some((p, tvd, method));
    r.verdict = GroupVerdict::Same;
    if (na.min(nb) as usize) <= t.large_n {
        r.decider = Decider::ChiSquared;
        r.p = Some(p);
    } else {
        r.decider = Decider::TotalVariation;
        if tvd > t.tvd {
            r.verdict = GroupVerdict::Shift;
        }
    }
    r
}

fn rate(g: &Group, ca: u64, ta: f64, cb: u64, tb: f64, t: &Thresholds) -> GroupResult {
    let mut r = base(g, "-", ca, cb);
    if ta <= 0.0 || tb <= 0.0 {
        return r;
    }
    let (ra, rb) = (ca as f64 / ta, cb as f64 / tb);
    let p = significance::rate_test(ca, ta, cb, tb);
    r.rates = Some((ra, rb, p));
    if ca + cb == 0 {
        return r;
    }
    r.verdict = GroupVerdict::Same;
    if (ca.min(cb) as usize) <= t.large_n {
        r.decider = Decider::RateTest;
        r.p = Some(p);
    } else {
        r.decider = Decider::RateRatio;
        let ratio = if ra > rb { ra / rb } else { rb / ra };
        if ratio > t.rate_ratio {
            r.verdict = GroupVerdict::Shift;
        }
    }
    r
}

/// The most classes of one group judged one by one; past it, the classes with the fewest values on
/// both sides together are pooled into one, [`OTHER_CLASSES`], so the number of tests (and with it
/// the permutations each needs to pass Holm's adjustment) stays bounded and the time of a parity
/// grows with the records, not with the square of the classes.
pub const MAX_CLASSES: usize = 64;

/// The name of the class that pools the smallest classes of a group past [`MAX_CLASSES`].
pub const OTHER_CLASSES: &str = "(other classes)";

/// One side's classes of a group: the numeric samples and the mixes, by class.
type Classes<'a> = (ByClass<'a, Vec<f64>>, ByClass<'a, BTreeMap<String, u64>>);

/// One side's samples of a group by class, borrowed from its profile unless pooled.
type ByClass<'a, V> = Cow<'a, BTreeMap<String, V>>;

/// The classes of one group on both sides, the smallest pooled past [`MAX_CLASSES`] (borrowed as
/// they are when there are not that many).
fn pooled<'a, V: Clone + Default>(
    a: &'a BTreeMap<String, V>,
    b: &'a BTreeMap<String, V>,
    size: impl Fn(&V) -> usize,
    merge: impl Fn(&mut V, &V),
) -> (ByClass<'a, V>, ByClass<'a, V>) {
    let classes: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    if classes.len() <= MAX_CLASSES {
        return (Cow::Borrowed(a), Cow::Borrowed(b));
    }
    let mut by_size: Vec<(usize, &String)> = classes
        .into_iter()
        .map(|c| (a.get(c).map_or(0, &size) + b.get(c).map_or(0, &size), c))
        .collect();
    by_size.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(y.1)));
    let kept: BTreeSet<&String> = by_size[..MAX_CLASSES - 1].iter().map(|(_, c)| *c).collect();
    let pool = |side: &BTreeMap<String, V>| {
        let mut out = BTreeMap::new();
        for (class, v) in side {
            if kept.contains(class) {
                out.insert(class.clone(), v.clone());
            } else {
                merge(out.entry(OTHER_CLASSES.to_owned()).or_default(), v);
            }
        }
        Cow::Owned(out)
    };
    (pool(a), pool(b))
}

/// Profiles both bundles and compares them.
pub fn parity(
    sim: &Path,
    prod: &Path,
    limits: Limits,
    config: &Config,
) -> Result<ParityReport, ReadError> {
    let a = profile(sim, limits, config)?;
    let b = profile(prod, limits, config)?;
    Ok(compare(&a, &b, config))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A profile whose first numeric group holds `classes` classes of `n` values each.
    fn many_classes(config: &Config, classes: usize, n: usize, shift: f64) -> Profile {
        let mut p = Profile::empty("many", config);
        let i = config
            .groups
            .iter()
            .position(|g| matches!(g.kind, GroupKind::Values))
            .expect("a numeric group");
        for c in 0..classes {
            let values = (0..n).map(|v| v as f64 + shift).collect();
            p.samples[i].values.insert(format!("kind-{c:05}"), values);
        }
        p
    }

    #[test]
    fn classes_past_the_cap_are_pooled_so_the_tests_stay_bounded() {
        let config = Config::builtin();
        let (a, b) = (
            many_classes(&config, 2_000, 10, 0.0),
            many_classes(&config, 2_000, 10, 0.0),
        );
        let report = compare(&a, &b, &config);
        let group = &config
            .groups
            .iter()
            .find(|g| matches!(g.kind, GroupKind::Values))
            .expect("a numeric group")
            .id;
        let judged: Vec<&GroupResult> =
            report.groups.iter().filter(|g| &g.group == group).collect();
        assert_eq!(judged.len(), MAX_CLASSES);
        assert!(judged.iter().any(|g| g.class == OTHER_CLASSES));
        assert!(
            report.failures().next().is_none(),
            "{}",
            report.to_markdown()
        );
    }
}
