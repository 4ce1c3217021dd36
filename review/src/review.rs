//! The review of a pull request's schemas: the working tree against a git base and, transitively,
//! against every frozen release of the support window, with the version, changelog and
//! generated-code checks and the rollout order.
//!
//! The support window is every frozen release of the current major version: a bundle reader must
//! read everything written since the major began, so a change must be compatible with each of them,
//! not only with the previous one.
//!
//! Each comparison covers the protobuf form as well: a release is encoded with its frozen numbers
//! (`schemas/releases/<v>/proto-numbers.json`), the working tree and the git base with
//! `schemas/proto-numbers.json`.

use std::path::Path;

use anyhow::Result;
use diagwire_schema::Version;
use diagwire_schema::read;

use crate::catalog::{Bump, Effect};
use crate::tree::{Tree, git};
use crate::{Comparison, compare};

/// A program of swactor that reads or writes records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// The node: posts boot records, events, snapshots and finalize records; reads the collector's
    /// replies.
    Node,
    /// The simulator: writes whole bundles.
    Simulator,
    /// The collector: reads what nodes post; writes bundles, manifests and its replies.
    Collector,
    /// Everything that opens a bundle afterwards (post-processors, `diagwire summary`, dashboards).
    BundleReaders,
}

impl Role {
    /// The role's name in a report.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Node => "node",
            Role::Simulator => "simulator",
            Role::Collector => "collector",
            Role::BundleReaders => "bundle readers",
        }
    }
}

/// Who writes and who reads a record kind.
pub fn roles(kind: &str) -> (&'static [Role], &'static [Role]) {
    match kind {
        "boot" | "event" | "event_batch" | "snapshot" | "finalize" | "vastai" => (
            &[Role::Node, Role::Simulator],
            &[Role::Collector, Role::BundleReaders],
        ),
        "manifest" => (&[Role::Collector, Role::Simulator], &[Role::BundleReaders]),
        "post_ack" | "error" => (&[Role::Collector], &[Role::Node]),
        _ => (&[Role::Collector], &[Role::BundleReaders]),
    }
}

/// The order to roll a change out in, per role: who goes first and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Rollout {
    /// Roles in the order they upgrade.
    pub order: Vec<Role>,
    /// Why.
    pub why: String,
}

/// The rollout order of a comparison's changes.
pub fn rollout(c: &Comparison, new: &Tree) -> Rollout {
    let mut readers_first = false;
    let mut new_reader_breaks = false;
    let mut touched: Vec<&str> = Vec::new();
    let b = crate::instance::Builder::new(&new.model);
    for f in &c.findings {
        let rule = f.finding.rule;
        if rule.old_reader.breaks() || rule.old_reader == Effect::KeepsUnknown {
            readers_first = true;
        }
        if rule.new_reader.breaks() {
            new_reader_breaks = true;
        }
        if let Some(kind) = f
            .counterexample
            .as_ref()
            .map(|x| x.kind.clone())
            .or_else(|| {
                let def = &f.finding.at.def;
                b.route(&crate::instance::Target::Def(def.clone()))
                    .or_else(|| b.route(&crate::instance::Target::TypeUse(def.clone())))
                    .map(|r| r.0)
            })
            && let Some(k) = new
                .model
                .records()
                .into_iter()
                .find(|(k2, _)| *k2 == kind)
                .map(|(k, _)| k)
            && !touched.contains(&k)
        {
            touched.push(k);
        }
    }
    let mut readers: Vec<Role> = Vec::new();
    let mut writers: Vec<Role> = Vec::new();
    for k in &touched {
        let (w, r) = roles(k);
        for x in r {
            if !readers.contains(x) {
                readers.push(*x);
            }
        }
        for x in w {
            if !writers.contains(x) {
                writers.push(*x);
            }
        }
    }
    // A role that both reads and writes the touched kinds goes with the readers.
    writers.retain(|w| !readers.contains(w));
    readers.sort();
    readers.reverse();
    let mut order = readers.clone();
    order.extend(writers.iter().copied());
    let why = if c.findings.is_empty() {
        "nothing changed: any order".to_owned()
    } else if new_reader_breaks {
        "new readers cannot read records written before the change, and bundles keep those records: no order makes this safe; readers must read both forms before writers switch".to_owned()
    } else if readers_first {
        format!(
            "readers first ({}), then writers ({}): old readers keep new fields and variants as unknowns, but only upgraded readers understand them",
            names(&readers),
            names(&writers)
        )
    } else {
        "any order: no reader is affected".to_owned()
    };
    Rollout { order, why }
}

fn names(roles: &[Role]) -> String {
    if roles.is_empty() {
        return "none".into();
    }
    roles
        .iter()
        .map(|r| r.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One comparison of the review, with the version it must satisfy.
pub struct Step {
    /// The comparison.
    pub comparison: Comparison,
    /// The bump `schemas/VERSION` declares against the older tree's version, if both are known.
    pub declared: Option<Bump>,
    /// Whether this comparison binds the version (a frozen release), or only shows the pull
    /// request's own changes (the git base).
    pub binding: bool,
    /// The rollout order.
    pub rollout: Rollout,
}

impl Step {
    /// Whether the declared version covers the changes.
    pub fn version_ok(&self) -> bool {
        !self.binding
            || self.comparison.is_empty()
            || self
                .declared
                .is_some_and(|d| d >= self.comparison.required())
    }
}

/// The whole review.
pub struct Review {
    /// `schemas/VERSION` of the working tree.
    pub version: Version,
    /// Each comparison: the base first (when there is one), then every release of the window.
    pub steps: Vec<Step>,
    /// Whether the schemas differ from the base (or from the newest release without a base).
    pub schemas_changed: bool,
    /// Whether `CHANGELOG.md` changed since the base, or has a section for `schemas/VERSION`.
    pub changelog_ok: bool,
    /// Generated files that do not match the schemas.
    pub stale_generated: Vec<String>,
}

impl Review {
    /// Every reason the review fails, in words; empty when it passes.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for s in &self.steps {
            let c = &s.comparison;
            for u in c.unclassified() {
                out.push(format!(
                    "unclassified change in {} → {}: {}",
                    c.old, c.new, u.finding.detail
                ));
            }
            if !s.version_ok() {
                out.push(format!(
                    "{} → {} needs a {} bump, schemas/VERSION {} declares {}",
                    c.old,
                    c.new,
                    c.required(),
                    self.version,
                    s.declared.map_or("none".into(), |d| d.to_string())
                ));
            }
        }
        if self.schemas_changed && !self.changelog_ok {
            out.push("the schemas changed but CHANGELOG.md did not".into());
        }
        if !self.stale_generated.is_empty() {
            out.push(format!(
                "generated code is stale ({}): run `cargo codegen`",
                self.stale_generated.join(", ")
            ));
        }
        out
    }
}

/// Reviews the working tree's `schemas/` under `root` against the git revision `base` (when given)
/// and against every frozen release of the current major version.
pub fn review(root: &Path, base: Option<&str>) -> Result<Review> {
    if let Some(rev) = base {
        crate::tree::check_revision(rev)?;
    }
    match read::regular_file(&root.join("CHANGELOG.md"), "CHANGELOG.md") {
        Err(e) if !e.missing => return Err(e.into()),
        _ => {}
    }
    let mut work = Tree::load_dir(&root.join("schemas"))?;
    work.label = "working tree".into();
    let version = diagwire_schema::contract_version(root)?;
    work.version = Some(version.clone());
    let releases = diagwire_schema::released_versions(root)?;
    let mut steps = Vec::new();
    let mut schemas_changed = false;
    let mut changelog_ok = true;
    if let Some(rev) = base {
        let old = Tree::at_revision(root, rev)?;
        let comparison = compare(&old, &work)?;
        schemas_changed = !comparison.is_empty() || old.texts != work.texts;
        if schemas_changed {
            let diff = git(
                root,
                &[
                    "diff",
                    "--name-only",
                    "--end-of-options",
                    rev,
                    "--",
                    "CHANGELOG.md",
                ],
            )?;
            let untracked = git(root, &["status", "--porcelain", "--", "CHANGELOG.md"])?;
            changelog_ok = !diff.trim().is_empty() || !untracked.trim().is_empty();
        }
        let declared = old
            .version
            .as_ref()
            .and_then(|v| Bump::between(v, &version));
        steps.push(Step {
            rollout: rollout(&comparison, &work),
            comparison,
            declared,
            binding: false,
        });
    }
    let window: Vec<&Version> = releases
        .iter()
        .filter(|r| r.major == version.major)
        .collect();
    for r in &window {
        let mut old = Tree::load_dir(&root.join(format!("schemas/releases/{r}")))?;
        old.label = format!("release {r}");
        let comparison = compare(&old, &work)?;
        if base.is_none() && Some(*r) == releases.last() {
            schemas_changed = !comparison.is_empty();
            if schemas_changed {
                // A changelog that is there must be readable: a FIFO, a link or a file past the
                // cap fails the review, located; only a missing one reads as empty.
                let text = match read::read_text(
                    &root.join("CHANGELOG.md"),
                    "CHANGELOG.md",
                    read::TEXT_CAP,
                ) {
                    Ok(t) => t,
                    Err(e) if e.missing => String::new(),
                    Err(e) => return Err(e.into()),
                };
                changelog_ok = text.lines().any(|l| {
                    l.starts_with(&format!("## {version} ")) || l.trim() == format!("## {version}")
                });
            }
        }
        steps.push(Step {
            rollout: rollout(&comparison, &work),
            declared: Bump::between(r, &version),
            comparison,
            binding: true,
        });
    }
    let expected = diagwire_codegen::generate(root)?;
    let stale_generated = diagwire_codegen::stale_files(root, &expected)?
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    Ok(Review {
        version,
        steps,
        schemas_changed,
        changelog_ok,
        stale_generated,
    })
}
