//! The shipped example bundles (both generations) keep every rule; a copy that guesses its relay
//! statuses breaks only the derived-status rule, at a lower level when the rule file says so, with
//! the findings kept per rule capped.

use super::*;

/// A copy of the example bundle in which every snapshot of a stage presents an inferred relay
/// status as an observation (`connected` with `status_source:
/// derived`): the bundle a writer that guesses would produce. Returns the directory and how many snapshots it changed.
fn example_with_guessed_relay_statuses() -> (tempfile::TempDir, PathBuf, u64) {
    let example = common::repo().join("examples/bundles/n3-relay-flap");
    let out = tempfile::tempdir().unwrap();
    let root = out.path().join("n3-relay-flap");
    let mut changed = 0;
    let mut stack = vec![example.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let to = root.join(path.strip_prefix(&example).unwrap());
            if path.is_dir() {
                std::fs::create_dir_all(&to).unwrap();
                stack.push(path);
                continue;
            }
            let mut bytes = std::fs::read(&path).unwrap();
            let is_snapshot = path.parent().is_some_and(|p| p.ends_with("snapshots"));
            let is_stage = path.strip_prefix(&example).is_ok_and(|p| {
                p.starts_with("stage-0") || p.starts_with("stage-1") || p.starts_with("stage-2")
            });
            if is_snapshot && is_stage {
                let mut v: Value = serde_json::from_slice(&bytes).unwrap();
                v["body"]["iroh"]["relay_session"]["status"] = "connected".into();
                bytes = serde_json::to_vec_pretty(&v).unwrap();
                changed += 1;
            }
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::write(&to, bytes).unwrap();
        }
    }
    (out, root, changed)
}

#[test]
fn the_example_bundle_keeps_every_rule_and_names_the_idle_ones() {
    let example = common::repo().join("examples/bundles/n3-relay-flap");
    let report = common::check_path(&example).report;
    assert!(report.passed(), "{}", report.to_markdown());
    // Every member's snapshot (23 + 3 × 18) has a relay session, derived and unknown.
    assert_eq!(
        report
            .rule("absence.derived_status_unknown")
            .unwrap()
            .checked,
        77
    );
    // The example has the whole run lifecycle, so every rule has something to check.
    let idle: Vec<&str> = report.not_exercised().map(|r| r.id.as_str()).collect();
    assert!(idle.is_empty(), "{idle:?}");
    for (id, checked) in [
        ("run.one_terminal_outcome", 1),
        ("order.prompt_after_barrier", 1),
        ("order.stage_ready_after_local_readiness", 3),
        ("fault.known_values", 4),
        ("dial.start_has_outcome", 25),
    ] {
        assert_eq!(report.rule(id).unwrap().checked, checked, "{id}");
    }
    // The three redials after the orchestrator exited are still in flight at the end.
    assert_eq!(
        report.rule("dial.start_has_outcome").unwrap().inconclusive,
        3
    );
    assert!(
        report
            .to_markdown()
            .contains("Every rule had something to check.")
    );
}

#[test]
fn the_oldest_generation_example_keeps_every_rule_and_names_the_idle_ones() {
    let example = common::repo().join("examples/bundles/n3-relay-flap-oldest");
    let report = common::check_path(&example).report;
    assert!(report.passed(), "{}", report.to_markdown());
    // That generation writes no lifecycle events, no relay session and no per-probe SWIM events:
    // those rules say so.
    let idle: Vec<&str> = report.not_exercised().map(|r| r.id.as_str()).collect();
    assert_eq!(
        idle,
        [
            "identity.scope_fields",
            "fault.known_values",
            "swim.acked_not_timed_out",
            "order.prompt_after_barrier",
            "order.stage_ready_after_local_readiness",
            "order.torn_down_after_teardown",
            "run.one_terminal_outcome",
            "run.terminal_outcome_recorded",
            "absence.derived_status_unknown",
        ]
    );
    assert!(report.to_markdown().contains("Never had anything to check"));
}

#[test]
fn a_bundle_guessing_its_relay_statuses_breaks_only_the_derived_status_rule() {
    let (_keep, bundle, changed) = example_with_guessed_relay_statuses();
    let report = common::check_path(&bundle).report;
    let failed: Vec<&str> = report
        .rules
        .iter()
        .filter(|r| r.status() == Status::Failed)
        .map(|r| r.id.as_str())
        .collect();
    assert_eq!(
        failed,
        ["absence.derived_status_unknown"],
        "{}",
        report.to_markdown()
    );
    assert_eq!(
        report
            .rule("absence.derived_status_unknown")
            .unwrap()
            .findings_total,
        changed
    );
    assert!(changed > 0);
}

#[test]
fn a_rule_below_violation_level_is_reported_without_failing_the_check() {
    let text = diagwire_check::rulebook::BUILTIN_RULES.replacen(
        r#""id": "absence.derived_status_unknown",
      "title": "A derived relay status reads unknown",
      "scope": "object",
      "level": "violation""#,
        r#""id": "absence.derived_status_unknown",
      "title": "A derived relay status reads unknown",
      "scope": "object",
      "level": "improvement""#,
        1,
    );
    let catalog = Rulebook::from_json(&text).unwrap();
    assert_eq!(
        catalog.get("absence.derived_status_unknown").unwrap().level,
        diagwire_check::Level::Improvement
    );
    let (_keep, example, _) = example_with_guessed_relay_statuses();
    let checked = diagwire_check::check_bundle(
        &example,
        diagwire::bundle::read::Limits::default(),
        &catalog,
        diagwire_check::Options::default(),
        false,
    )
    .unwrap();
    assert!(checked.report.passed());
    assert!(
        checked
            .report
            .rule("absence.derived_status_unknown")
            .unwrap()
            .findings_total
            > 0
    );
}

#[test]
fn findings_kept_per_rule_are_capped_and_the_rest_counted() {
    let (_keep, example, _) = example_with_guessed_relay_statuses();
    let checked = diagwire_check::check_bundle(
        &example,
        diagwire::bundle::read::Limits::default(),
        &Rulebook::builtin(),
        diagwire_check::Options {
            max_findings_per_rule: 3,
        },
        false,
    )
    .unwrap();
    let r = checked
        .report
        .rule("absence.derived_status_unknown")
        .unwrap();
    assert_eq!(r.findings.len(), 3);
    assert!(r.findings_total > 3);
    assert!(
        checked
            .report
            .to_markdown()
            .contains(&format!("and {} more", r.findings_total - 3))
    );
}
