//! Two coverages side by side: for `--baseline` (what disappeared or shifted since the baseline)
//! and for the shape half of parity (what one bundle has and the other lacks, and whether the
//! absence mixes differ, tested with [`crate::significance`] and Holm-adjusted).

use std::collections::BTreeSet;
use std::fmt::Write;

use schemars::JsonSchema;
use serde::Serialize;

use super::{Coverage, RoleCoverage, has_provenance, is_tracked, struct_fields};
use crate::significance;

/// How two coverages are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `a` is the bundle checked, `b` its baseline: what disappeared or shifted is flagged, what
    /// appeared is information.
    Baseline,
    /// Shape parity: anything one side has and the other lacks is flagged either way.
    Parity,
}

/// The thresholds of a comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// Family-wise significance level (Holm-adjusted over every test of the comparison).
    pub alpha: f64,
    /// Smallest change of a presence share, or total variation distance of a mix, that is flagged.
    pub min_effect: f64,
    /// Fewest observations on the side that has something for its loss to be flagged (baseline).
    pub min_count: u64,
    /// Permutations for small-count mixes.
    pub rounds: usize,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            alpha: 0.01,
            min_effect: 0.1,
            min_count: 5,
            rounds: 999,
        }
    }
}

/// What kind of difference it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DiffKind {
    /// A node role only one side has.
    Role,
    /// A record kind one side has and the other does not.
    RecordKind,
    /// An event type one side has and the other does not.
    EventType,
    /// A field present on one side and never present on the other (its type seen on both).
    Field,
    /// The share of instances with the field present changed.
    PresenceShare,
    /// The mix of reported / derived / could not ask / not observed changed.
    AbsenceMix,
}

impl DiffKind {
    /// As machine output writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            DiffKind::Role => "role",
            DiffKind::RecordKind => "record_kind",
            DiffKind::EventType => "event_type",
            DiffKind::Field => "field",
            DiffKind::PresenceShare => "presence_share",
            DiffKind::AbsenceMix => "absence_mix",
        }
    }
}

/// One difference between two coverages.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// What kind.
    pub kind: DiffKind,
    /// The node role.
    pub role: String,
    /// What differs: a record kind, an event type, `Type.field`.
    pub subject: String,
    /// Side A's counts, in words.
    pub a: String,
    /// Side B's counts, in words.
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

fn excluded(exclude: &[String], subject: &str) -> bool {
    exclude
        .iter()
        .any(|e| subject == e || subject.starts_with(&format!("{e}.")))
}

/// Compares coverage `a` with `b`, leaving out subjects named in `exclude` (a record kind, an event
/// type, a type or `Type.field`).
pub fn compare(
    a: &Coverage,
    b: &Coverage,
    mode: Mode,
    exclude: &[String],
    t: &Thresholds,
) -> Vec<Difference> {
    let mut out = Vec::new();
    let mut mixes: Vec<(usize, [u64; 4], [u64; 4])> = Vec::new();
    let roles: BTreeSet<&String> = a.roles.keys().chain(b.roles.keys()).collect();
    let empty = RoleCoverage::default();
    let set_diff = |out: &mut Vec<Difference>,
                    kind: DiffKind,
                    role: &str,
                    subject: &str,
                    na: u64,
                    nb: u64,
                    unit: &str| {
        if (na == 0) == (nb == 0) || excluded(exclude, subject) {
            return;
        }
        let flagged = match mode {
            Mode::Parity => true,
            Mode::Baseline => na == 0 && nb >= t.min_count,
        };
        out.push(Difference {
            kind,
            role: role.to_owned(),
            subject: subject.to_owned(),
            a: format!("{na} {unit}"),
            b: format!("{nb} {unit}"),
            p: None,
            p_adjusted: None,
            effect: None,
            flagged,
        });
    };
    for role in roles {
        let ra = a.roles.get(role).unwrap_or(&empty);
        let rb = b.roles.get(role).unwrap_or(&empty);
        if ra.record_kinds.is_empty() || rb.record_kinds.is_empty() {
            let ca: u64 = ra.record_kinds.values().sum();
            let cb: u64 = rb.record_kinds.values().sum();
            set_diff(&mut out, DiffKind::Role, role, role, ca, cb, "record(s)");
            continue;
        }
        let kinds: BTreeSet<&String> = ra
            .record_kinds
            .keys()
            .chain(rb.record_kinds.keys())
            .collect();
        for k in kinds {
            let ca = ra.record_kinds.get(k).copied().unwrap_or(0);
            let cb = rb.record_kinds.get(k).copied().unwrap_or(0);
            set_diff(&mut out, DiffKind::RecordKind, role, k, ca, cb, "record(s)");
        }
        let tags: BTreeSet<&String> = ra
            .event_types
            .keys()
            .chain(rb.event_types.keys())
            .chain(ra.unknown_event_types.keys())
            .chain(rb.unknown_event_types.keys())
            .collect();
        for tag in tags {
            let ca = ra.event_types.get(tag).or(ra.unknown_event_types.get(tag));
            let cb = rb.event_types.get(tag).or(rb.unknown_event_types.get(tag));
            set_diff(
                &mut out,
                DiffKind::EventType,
                role,
                tag,
                ca.copied().unwrap_or(0),
                cb.copied().unwrap_or(0),
                "event(s)",
            );
        }
        let types: BTreeSet<&&'static str> = ra
            .types
            .keys()
            .filter(|k| rb.types.contains_key(*k))
            .collect();
        for type_name in types {
            if excluded(exclude, type_name) {
                continue;
            }
            let (sa, sb) = (&ra.types[*type_name], &rb.types[*type_name]);
            for (i, f) in struct_fields(type_name).unwrap_or(&[]).iter().enumerate() {
                let subject = format!("{type_name}.{}", f.key);
                if excluded(exclude, &subject) {
                    continue;
                }
                let fa = sa.fields.get(i).copied().unwrap_or_default();
                let fb = sb.fields.get(i).copied().unwrap_or_default();
                let before = out.len();
                set_diff(
                    &mut out,
                    DiffKind::Field,
                    role,
                    &subject,
                    fa.present,
                    fb.present,
                    "present",
                );
                if let Some(d) = out.get_mut(before) {
                    d.a = format!("present in {} of {}", fa.present, sa.instances);
                    d.b = format!("present in {} of {}", fb.present, sb.instances);
                    continue;
                }
                if has_provenance(f) {
                    let (ma, mb) = (fa.mix(), fb.mix());
                    if ma.iter().sum::<u64>() == 0 || mb.iter().sum::<u64>() == 0 {
                        continue;
                    }
                    let effect = significance::total_variation(&ma, &mb);
                    mixes.push((out.len(), ma, mb));
                    out.push(Difference {
                        kind: DiffKind::AbsenceMix,
                        role: role.clone(),
                        subject,
                        a: mix_text(&ma),
                        b: mix_text(&mb),
                        p: Some(1.0),
                        p_adjusted: None,
                        effect: Some(effect),
                        flagged: false,
                    });
                } else if is_tracked(f) && sa.instances > 0 && sb.instances > 0 {
                    let (p, _) = significance::two_proportions(
                        fa.present,
                        sa.instances,
                        fb.present,
                        sb.instances,
                    );
                    let effect = fa.present as f64 / sa.instances as f64
                        - fb.present as f64 / sb.instances as f64;
                    out.push(Difference {
                        kind: DiffKind::PresenceShare,
                        role: role.clone(),
                        subject,
                        a: format!("present in {} of {}", fa.present, sa.instances),
                        b: format!("present in {} of {}", fb.present, sb.instances),
                        p: Some(p),
                        p_adjusted: None,
                        effect: Some(effect),
                        flagged: false,
                    });
                }
            }
        }
    }
    // Mix p-values last: their permutations must resolve alpha over every test of the comparison.
    let tests = out.iter().filter(|d| d.p.is_some()).count();
    let rounds = t.rounds.max(significance::rounds_for(tests, t.alpha));
    for (i, ma, mb) in mixes {
        out[i].p = Some(significance::mix_test(&ma, &mb, rounds, 0xC0FFEE).1);
    }
    let ps: Vec<f64> = out.iter().filter_map(|d| d.p).collect();
    let adjusted = significance::holm(&ps);
    let mut it = adjusted.into_iter();
    for d in &mut out {
        if d.p.is_some() {
            d.p_adjusted = it.next();
            let significant = d.p_adjusted.is_some_and(|p| p < t.alpha);
            let large = d.effect.is_some_and(|e| e.abs() >= t.min_effect);
            d.flagged = significant && large;
        }
    }
    // Keep what says something: set differences, flagged shifts, and shares or mixes that moved
    // at least as far as the threshold (without being significant).
    out.retain(|d| d.p.is_none() || d.flagged || d.effect.is_some_and(|e| e.abs() >= t.min_effect));
    out
}

fn mix_text(m: &[u64; 4]) -> String {
    format!(
        "reported {}, derived {}, could not ask {}, not observed {}",
        m[0], m[1], m[2], m[3]
    )
}

/// The baseline comparison as Markdown.
pub fn differences_markdown(title: &str, diffs: &[Difference], a: &str, b: &str) -> String {
    let mut s = String::new();
    let flagged = diffs.iter().filter(|d| d.flagged).count();
    let _ = writeln!(s, "## {title}\n");
    let _ = writeln!(
        s,
        "{} difference(s), {flagged} flagged. A = `{a}`, B = `{b}`.\n",
        diffs.len()
    );
    if diffs.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "| flagged | kind | role | subject | A | B | effect | p (Holm) |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---:|---:|");
    for d in diffs {
        let _ = writeln!(
            s,
            "| {} | {} | {} | `{}` | {} | {} | {} | {} |",
            if d.flagged { "**yes**" } else { "no" },
            d.kind.as_str(),
            d.role,
            d.subject,
            d.a,
            d.b,
            d.effect.map_or_else(String::new, |e| format!("{e:+.3}")),
            d.p_adjusted
                .map_or_else(String::new, |p| format!("{p:.2e}"))
        );
    }
    s
}
