//! The behavioural contract, rule by rule: for each rule a bundle that breaks it once (the finding
//! names the rule and the records involved, and no other rule fires) and one that keeps it (the
//! rule had something to check and passed). The bundles are the synthetic scenario with one change.
//! The cases are grouped by concern, one file each; this file holds the helpers and the cases about
//! the rule book as a whole.

#[path = "../common/mod.rs"]
mod common;

mod absence;
mod dials;
mod examples;
mod order;
mod outcomes;
mod records;
mod sequence;

use diagwire::v1::*;
use diagwire_check::{CheckReport, Finding, Rulebook, Status};
use diagwire_testkit::scenario::{Params, Run, generate, is_clock_sample};
use serde_json::Value;
use std::path::PathBuf;

fn base() -> Run {
    generate(&Params::small(1))
}

/// The findings of `rule` on `run`, which must break that rule and no other.
#[track_caller]
fn violates(run: Run, rule: &str) -> Vec<Finding> {
    let report = common::check_run(run);
    let r = report.rule(rule).expect("a rule of the catalog");
    assert!(
        r.findings_total > 0,
        "`{rule}` found nothing:\n{}",
        report.to_markdown()
    );
    let others: Vec<&str> = report
        .rules
        .iter()
        .filter(|x| x.id != rule && x.findings_total > 0)
        .map(|x| x.id.as_str())
        .collect();
    assert!(
        others.is_empty(),
        "other rules fired too: {others:?}\n{}",
        report.to_markdown()
    );
    assert!(!report.passed());
    for f in &r.findings {
        assert_eq!(f.rule, rule);
        assert!(
            !f.message.is_empty() && !f.message.contains('\n'),
            "{}",
            f.message
        );
        assert!(f.location.file.ends_with(".json"), "{}", f.location);
    }
    r.findings.clone()
}

/// `run` keeps every rule, and `rule` had something to check.
#[track_caller]
fn passes(run: Run, rule: &str) -> CheckReport {
    let report = common::check_run(run);
    assert!(report.passed(), "{}", report.to_markdown());
    let r = report.rule(rule).expect("a rule of the catalog");
    assert_eq!(r.status(), Status::Passed, "{}", report.to_markdown());
    report
}

/// The `type` of every witness record.
fn witness_types(f: &Finding) -> Vec<String> {
    f.witness
        .iter()
        .map(|w| {
            w.value
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

fn is<T>(f: fn(&Event) -> Option<&T>) -> impl Fn(&Event) -> bool {
    move |e| f(e).is_some()
}

fn dial_started(e: &Event) -> Option<&DialStarted> {
    match e {
        Event::DialStarted(d) => Some(d),
        _ => None,
    }
}

fn dial_outcome(e: &Event) -> Option<&DialOutcome> {
    match e {
        Event::DialOutcome(d) => Some(d),
        _ => None,
    }
}

fn tag(t: &'static str) -> impl Fn(&Event) -> bool {
    move |e| e.tag() == t
}

#[test]
fn the_scenario_keeps_every_rule_and_exercises_every_rule() {
    let report = common::check_run(base());
    assert!(report.passed(), "{}", report.to_markdown());
    let idle: Vec<&str> = report.not_exercised().map(|r| r.id.as_str()).collect();
    assert!(idle.is_empty(), "not exercised: {idle:?}");
    assert_eq!(
        report.records,
        report.rule("bundle.readable").unwrap().checked
    );
}

// Rules that had nothing to check.

#[test]
fn a_bundle_without_events_passes_only_vacuously_and_says_so() {
    let mut run = base();
    for n in &mut run.nodes {
        n.events.clear();
        n.snapshots.clear();
    }
    let report = common::check_run(run);
    assert!(report.passed());
    let idle: Vec<&str> = report.not_exercised().map(|r| r.id.as_str()).collect();
    for id in [
        "seq.monotonic",
        "dial.outcome_has_start",
        "order.prompt_after_barrier",
        "absence.no_silent_gap",
        "run.one_terminal_outcome",
    ] {
        assert!(
            idle.contains(&id),
            "{id} should not count as passed: {idle:?}"
        );
    }
    let json = report.to_json();
    let statuses: Vec<&str> = json["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert!(statuses.contains(&"not_exercised") && statuses.contains(&"passed"));
}

#[test]
fn every_rule_of_the_catalog_has_cases_in_these_files() {
    let source = [
        include_str!("main.rs"),
        include_str!("absence.rs"),
        include_str!("dials.rs"),
        include_str!("examples.rs"),
        include_str!("order.rs"),
        include_str!("outcomes.rs"),
        include_str!("records.rs"),
        include_str!("sequence.rs"),
    ]
    .concat();
    for rule in &Rulebook::builtin().rules {
        assert!(
            source.matches(&format!("\"{}\"", rule.id)).count() >= 2,
            "rule `{}` needs a breaking and a keeping case here",
            rule.id
        );
    }
}
