//! Schema review: what a change to the schemas does to every reader, which version bump it needs,
//! a record that shows each break, and in which order swactor's programs must roll out.
//!
//! [`diff::diff`] classifies every difference between two schema trees under a rule of
//! [`catalog`], and [`proto::diff`] every difference of their protobuf forms (when both trees have
//! a number table), each difference a [`finding::Finding`]; [`confirm`] builds a counterexample for each breaking finding and runs the
//! readers (or, for the protobuf form, the codec) on it; [`review`] compares the working tree with a git base and every release of the support
//! window and checks the declared version, the changelog and the generated code; [`report`]
//! renders it all as Markdown or JSON; [`changelog`] drafts the next release's section.

pub mod catalog;
pub mod changelog;
pub mod confirm;
pub mod diff;
pub mod finding;
pub mod instance;
pub mod md;
pub mod output;
pub mod proto;
pub mod report;
pub mod review;
pub mod tree;

use catalog::Bump;
use confirm::{Counterexample, Readers};
use finding::Finding;
use tree::Tree;

/// The most counterexamples one comparison builds; each later breaking finding says it has none
/// and why, so a tree with thousands of breaks is reviewed in bounded time.
pub const MAX_COUNTEREXAMPLES: usize = 100;

/// A finding with its counterexample, when its rule breaks a reader on the wire.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The finding.
    pub finding: Finding,
    /// The record that shows the break, confirmed by the readers.
    pub counterexample: Option<Counterexample>,
}

/// Everything that differs from one tree to another.
pub struct Comparison {
    /// How the older tree is named.
    pub old: String,
    /// How the newer tree is named.
    pub new: String,
    /// The older tree's version.
    pub old_version: Option<semver::Version>,
    /// The newer tree's version.
    pub new_version: Option<semver::Version>,
    /// Every finding, sorted by place.
    pub findings: Vec<Checked>,
    /// Whether the protobuf forms were compared (both trees had a number table), or why not.
    pub protobuf: proto::Status,
}

impl Comparison {
    /// The bump the changes need: the highest of their rules' (patch when nothing changed).
    pub fn required(&self) -> Bump {
        self.findings
            .iter()
            .map(|c| c.finding.rule.bump)
            .max()
            .unwrap_or(Bump::Patch)
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.findings.is_empty()
    }

    /// The findings no rule classifies.
    pub fn unclassified(&self) -> impl Iterator<Item = &Checked> {
        self.findings
            .iter()
            .filter(|c| *c.finding.rule == catalog::UNCLASSIFIED)
    }

    /// The findings that need a major bump.
    pub fn breaking(&self) -> impl Iterator<Item = &Checked> {
        self.findings
            .iter()
            .filter(|c| c.finding.rule.bump == Bump::Major)
    }
}

/// Compares two trees (their JSON forms, and their protobuf forms when both have a number table)
/// and confirms a counterexample for every finding whose rule breaks a reader.
///
/// A number table that is there but cannot be read or cannot number its tree fails the
/// comparison (fail closed); only a side without any table skips the protobuf rules.
pub fn compare(old: &Tree, new: &Tree) -> anyhow::Result<Comparison> {
    if let Some(why) = proto::broken(old, new) {
        anyhow::bail!("the protobuf forms cannot be compared: {why}");
    }
    let (ro, rn) = (Readers::new(old)?, Readers::new(new)?);
    let breaks = |f: &Finding| f.rule.old_reader.breaks() || f.rule.new_reader.breaks();
    // Each counterexample costs a walk of the tree and a run of the readers: past
    // MAX_COUNTEREXAMPLES, a breaking finding says why it has none instead.
    let mut built = 0usize;
    let mut budget = |finding: &Finding| -> Option<Option<Counterexample>> {
        if !breaks(finding) {
            return Some(None);
        }
        built += 1;
        if built > MAX_COUNTEREXAMPLES {
            return Some(Some(confirm::not_built(format!(
                "not built: this comparison already has {MAX_COUNTEREXAMPLES} counterexamples"
            ))));
        }
        None
    };
    let mut findings: Vec<Checked> = Vec::new();
    for finding in diff::diff(old, new) {
        let counterexample =
            budget(&finding).unwrap_or_else(|| confirm::counterexample(&finding, &ro, &rn));
        findings.push(Checked {
            counterexample,
            finding,
        });
    }
    let protobuf = match proto::sides(old, new) {
        Ok((po, pn)) => {
            for finding in proto::diff(&po, &pn, &old.model, &new.model) {
                let counterexample = budget(&finding).unwrap_or_else(|| {
                    confirm::protobuf(&finding, &po, &pn, &old.model, &new.model)
                });
                findings.push(Checked {
                    counterexample,
                    finding,
                });
            }
            proto::Status::Compared {
                old: po.table,
                new: pn.table,
            }
        }
        Err(why) => proto::Status::Skipped(why),
    };
    findings.sort_by(|a, b| {
        (&a.finding.at, a.finding.rule.id).cmp(&(&b.finding.at, b.finding.rule.id))
    });
    Ok(Comparison {
        old: old.label.clone(),
        new: new.label.clone(),
        old_version: old.version.clone(),
        new_version: new.version.clone(),
        findings,
        protobuf,
    })
}
