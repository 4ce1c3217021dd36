//! The behavioural contract of the event stream (`diagwire check`), coverage and absence
//! statistics (`diagwire check --coverage`), and sim-vs-prod parity (`diagwire parity`).
//!
//! The schemas say what one record may look like; this crate checks how records relate. The rules
//! are data ([`rulebook`], from `check/behaviour-rules.json`): each has a stable id, a scope, a
//! level and a description, and names one of the evaluators of [`evaluate`]. [`check_bundle`]
//! reads a bundle once, record by record (`diagwire::bundle::records::walk_into`), and feeds every
//! record to the evaluators and, when asked, to the [`coverage`] collector; only per-node and
//! per-key state is kept, never the bundle. [`verdict`] is what a check reports. [`parity`]
//! compares two bundles' coverage and the distributions of the fields the simulator must
//! reproduce, with the tests of [`significance`]. [`output`] is the JSON both commands print, as
//! types with a JSON Schema; it imports the reports, never the other way round. The synthetic runs
//! the tests and benchmarks use live in the dev-only crate `diagwire-testkit`.
//!
//! `docs/behaviour.md` explains every rule, statistic and threshold.

use std::path::Path;

use diagwire::bundle::read::{BundleReader, Limits, ReadError};
use diagwire::bundle::records::{Walk, walk_into};

pub mod blocks;
pub mod coverage;
pub mod evaluate;
pub mod expect;
pub mod follow;
pub mod monitor;
pub mod output;
pub mod parity;
pub mod rulebook;
pub mod significance;
pub mod verdict;

pub use coverage::Coverage;
pub use evaluate::driver::{Fed, Progress, RecordRef};
pub use evaluate::{Checker, Nodes, Options};
pub use expect::{Fault, Verdict};
pub use monitor::Monitor;
pub use rulebook::{Level, Rule, Rulebook};
pub use verdict::{CheckReport, Finding, RuleResult, Status, Witness};

/// What one pass over a bundle produced.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The rules' verdict.
    pub report: CheckReport,
    /// The coverage and absence statistics, when asked for.
    pub coverage: Option<Coverage>,
}

/// Checks the bundle at `path` (a directory or a `.tar.gz`) against `rulebook` in one streaming
/// pass, collecting coverage statistics too when `with_coverage` is set. Fails only when the bundle
/// cannot be opened at all; everything else is a finding.
pub fn check_bundle(
    path: &Path,
    limits: Limits,
    rulebook: &Rulebook,
    opts: Options,
    with_coverage: bool,
) -> Result<Checked, ReadError> {
    check_bundle_walk(path, limits, Walk::default(), rulebook, opts, with_coverage)
}

/// Like [`check_bundle`], reading as `walk` says (with an `Explain` hook, a refused record's
/// problem says where in it, as validation does).
pub fn check_bundle_walk(
    path: &Path,
    limits: Limits,
    walk: Walk<'_>,
    rulebook: &Rulebook,
    opts: Options,
    with_coverage: bool,
) -> Result<Checked, ReadError> {
    let mut reader = BundleReader::open(path, limits)?;
    let source = reader.source().display().to_string();
    let archive = reader.source().is_file();
    let run_id = reader.run_id().to_owned();
    let mut monitor = Monitor::for_bundle(rulebook, opts, &source, archive, &run_id);
    let mut coverage = with_coverage.then(|| Coverage::new(&source));
    match &mut coverage {
        Some(c) => walk_into(&mut reader, walk, &mut [&mut monitor, c]),
        None => walk_into(&mut reader, walk, &mut [&mut monitor]),
    };
    Ok(Checked {
        report: monitor.finish(),
        coverage: coverage.map(Coverage::finish),
    })
}

/// The coverage and absence statistics of the bundle at `path`, in one pass.
pub fn coverage_of(path: &Path, limits: Limits) -> Result<Coverage, ReadError> {
    let mut reader = BundleReader::open(path, limits)?;
    let mut coverage = Coverage::new(&reader.source().display().to_string());
    walk_into(&mut reader, Walk::default(), &mut [&mut coverage]);
    Ok(coverage.finish())
}
