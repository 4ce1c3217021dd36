//! Drafts the `CHANGELOG.md` section of the next release from a comparison with the last release,
//! in the file's own style: a heading with the version and date, a summary paragraph, then the
//! changes grouped as breaking, added, changed and documentation, each bullet naming its rule.

use std::fmt::Write;

use diagwire_schema::Version;

use crate::Comparison;
use crate::catalog::{self, Bump, Rule};

/// The version after `last` that a change needing `bump` calls for.
pub fn next_version(last: &Version, bump: Bump) -> Version {
    match bump {
        Bump::Major => Version::new(last.major + 1, 0, 0),
        Bump::Minor => Version::new(last.major, last.minor + 1, 0),
        Bump::Patch => Version::new(last.major, last.minor, last.patch + 1),
    }
}

/// The section for `version`, dated `date`, from the comparison of the last release with the
/// working tree.
pub fn draft(c: &Comparison, version: &Version, date: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## {version} — {date}\n");
    let breaking: Vec<_> = c.breaking().collect();
    let additive = |rule: &Rule| {
        matches!(
            *rule,
            catalog::RECORD_KIND_ADDED
                | catalog::FIELD_ADDED_OPTIONAL
                | catalog::ENUM_VALUE_ADDED_OPEN
                | catalog::UNION_VARIANT_ADDED_OPEN
                | catalog::PROVENANCE_WIDENED
        )
    };
    let added: Vec<_> = c
        .findings
        .iter()
        .filter(|f| additive(f.finding.rule))
        .collect();
    let changed: Vec<_> = c
        .findings
        .iter()
        .filter(|f| {
            f.finding.rule.bump == Bump::Minor
                && !additive(f.finding.rule)
                && *f.finding.rule != catalog::TYPE_ADDED
        })
        .collect();
    let docs = c
        .findings
        .iter()
        .filter(|f| f.finding.rule.bump == Bump::Patch)
        .count();
    let summary = if !breaking.is_empty() {
        format!(
            "A breaking release: {} change(s) that an older reader refuses or misreads, or that break Rust callers; {} addition(s). Readers of {} must be upgraded, and old bundles read with a reader of their own version.",
            breaking.len(),
            added.len(),
            crate::md::text(&c.old)
        )
    } else if !added.is_empty() || !changed.is_empty() {
        format!(
            "All additive: a reader of {} keeps the new fields, values and variants as unknowns and writes them back, and a reader of this release shows what older records lack as absent. {} addition(s), {} other compatible change(s).",
            crate::md::text(&c.old),
            added.len(),
            changed.len()
        )
    } else {
        "Documentation only: no reader and no caller can tell the difference.".to_owned()
    };
    let _ = writeln!(out, "{summary}\n");
    let section = |out: &mut String, title: &str, items: &[&crate::Checked]| {
        if items.is_empty() {
            return;
        }
        let _ = writeln!(out, "### {title}\n");
        for f in items {
            let _ = writeln!(
                out,
                "- {} (`{}`).",
                crate::md::fragment(&f.finding.detail),
                f.finding.rule.id
            );
        }
        out.push('\n');
    };
    section(&mut out, "Breaking (contract)", &breaking);
    section(&mut out, "Added (contract)", &added);
    section(&mut out, "Changed (contract)", &changed);
    if docs > 0 {
        let _ = writeln!(
            out,
            "### Documentation\n\n- {docs} description, order or file-placement change(s); no wire or API change.\n"
        );
    }
    out
}
