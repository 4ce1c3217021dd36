//! `diagwire check` and `diagwire parity`: the behavioural contract of a bundle, its coverage and
//! absence statistics, and sim-vs-prod parity (the `diagwire-check` crate; `docs/behaviour.md`).

use std::path::Path;
use std::process::ExitCode;

use clap::ValueEnum;
use diagwire::bundle::read::Limits;
use diagwire::problem::{json_compact, json_pretty};
use diagwire_check::coverage::{self, Mode, Thresholds};
use diagwire_check::output::{CheckOutput, ParityOutput};
use diagwire_check::parity::{self, Config};
use diagwire_check::{Options, Rulebook};
use serde::Serialize;

/// Output format of `check` and `parity`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Markdown.
    Md,
    /// JSON.
    Json,
}

use crate::fail;

/// Prints `output` as pretty JSON, through a `serde_json::Value` so that keys come out sorted.
fn print_json<T: Serialize>(output: &T) {
    let v = serde_json::to_value(output).expect("OK because every output type serializes to JSON");
    println!(
        "{}",
        json_pretty(&v).expect("OK because a Value always serializes")
    );
}

/// Prints `output` as one line of JSON (keys sorted), for output read line by line.
pub fn print_json_line<T: Serialize>(output: &T) {
    let v = serde_json::to_value(output).expect("OK because every output type serializes to JSON");
    println!(
        "{}",
        json_compact(&v).expect("OK because a Value always serializes")
    );
}

/// `diagwire check BUNDLE [--coverage] [--baseline OTHER] [--fail-on-coverage-below P]`.
///
/// Exit status: 0 when no rule at level `violation` has a finding, no baseline shift is flagged
/// and the coverage is not below P; 1 otherwise; 2 when a bundle cannot be opened.
pub fn check(
    bundle: &Path,
    show_coverage: bool,
    baseline: Option<&Path>,
    fail_below: Option<f64>,
    format: Format,
) -> ExitCode {
    if let Some(p) = fail_below
        && !(0.0..=100.0).contains(&p)
    {
        return fail("--fail-on-coverage-below takes a percentage from 0 to 100");
    }
    let rulebook = Rulebook::builtin();
    let need_coverage = show_coverage || baseline.is_some() || fail_below.is_some();
    let verdict = crate::validate::bundle_verdict();
    let walk = crate::validate::walk(&verdict);
    let checked = match diagwire_check::check_bundle_walk(
        bundle,
        Limits::default(),
        walk,
        &rulebook,
        Options::default(),
        need_coverage,
    ) {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    let diffs = match (baseline, &checked.coverage) {
        (Some(b), Some(cov)) => {
            let base = match diagwire_check::coverage_of(b, Limits::default()) {
                Ok(c) => c,
                Err(e) => return fail(&e.to_string()),
            };
            Some(coverage::compare(
                cov,
                &base,
                Mode::Baseline,
                &[],
                &Thresholds::default(),
            ))
        }
        _ => None,
    };
    let percent = checked.coverage.as_ref().map(|c| c.contract.percent());
    let below = fail_below.zip(percent).filter(|(p, got)| got < p);
    let flagged = diffs
        .as_ref()
        .map_or(0, |d| d.iter().filter(|x| x.flagged).count());
    match format {
        Format::Md => {
            print!("{}", checked.report.to_markdown());
            if show_coverage && let Some(c) = &checked.coverage {
                println!();
                print!("{}", c.to_markdown());
            }
            if let (Some(d), Some(b)) = (&diffs, baseline) {
                println!();
                print!(
                    "{}",
                    coverage::differences_markdown(
                        "Shifts against the baseline",
                        d,
                        &checked.report.bundle,
                        &b.display().to_string()
                    )
                );
            }
            if let (Some(p), Some(got)) = (fail_below, percent) {
                println!(
                    "\nContract coverage {got:.1}% {} the required {p}%.",
                    if got < p { "is below" } else { "meets" }
                );
            }
        }
        Format::Json => {
            let out = CheckOutput::new(
                &checked.report,
                checked.coverage.as_ref().filter(|_| show_coverage),
                baseline
                    .zip(diffs.as_deref())
                    .map(|(b, d)| (b.display().to_string(), d)),
                fail_below.zip(percent),
            );
            print_json(&out);
        }
    }
    if checked.report.passed() && flagged == 0 && below.is_none() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `diagwire parity SIM PROD`: exit status 0 when parity holds, 1 when it fails, 2 when a bundle
/// cannot be opened.
pub fn parity(sim: &Path, prod: &Path, format: Format) -> ExitCode {
    let config = Config::builtin();
    let report = match parity::parity(sim, prod, Limits::default(), &config) {
        Ok(r) => r,
        Err(e) => return fail(&e.to_string()),
    };
    match format {
        Format::Md => print!("{}", report.to_markdown()),
        Format::Json => print_json(&ParityOutput::from(&report)),
    }
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
