//! `diagwire check` and `diagwire parity`: what they print, in both formats, and their exit status.

use std::path::Path;
use std::process::Output;
use std::sync::OnceLock;

use diagwire::v1::{Event, WriterKind};
use diagwire_testkit::scenario::{Params, Run, generate};
use serde_json::Value;

use crate::common;
use common::diagwire;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

/// Writes scenario bundles once for the whole file: `small`, `small-no-rtt`, `sim`, `prod` and
/// `prod-shifted` under one temporary directory.
fn bundles() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let tmp = tempfile::tempdir().expect("temp dir");
        let mut no_rtt = generate(&Params::small(1));
        for n in &mut no_rtt.nodes {
            for e in &mut n.events {
                if let Event::ProbeReceived(p) = &mut e.event {
                    p.rtt_ms = None;
                }
            }
        }
        let mut shifted = Params::parity(22, WriterKind::Collector);
        shifted.dial_success_scale = 1.6;
        let runs: [(&str, Run); 5] = [
            ("small", generate(&Params::small(1))),
            ("small-no-rtt", no_rtt),
            ("sim", generate(&Params::parity(11, WriterKind::Sim))),
            ("prod", generate(&Params::parity(22, WriterKind::Collector))),
            ("prod-shifted", generate(&shifted)),
        ];
        for (name, run) in runs {
            let dir = tmp.path().join(name);
            std::fs::create_dir_all(&dir).unwrap();
            run.write_dir(&dir).unwrap();
        }
        tmp
    })
    .path()
}

fn bundle(name: &str) -> String {
    let parent = bundles().join(name);
    let run = std::fs::read_dir(&parent)
        .unwrap()
        .next()
        .expect("one run directory")
        .unwrap()
        .path();
    run.display().to_string()
}

const EXAMPLE: &str = "examples/bundles/n3-relay-flap";
const OLDEST_EXAMPLE: &str = "examples/bundles/n3-relay-flap-oldest";
const GOLDEN: &str = "compat-tests/fixtures/1.1.0/golden.tar.gz";

#[test]
fn a_bundle_keeping_every_rule_exits_zero_with_the_rule_coverage_table() {
    let o = diagwire(&["check", &bundle("small")]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.contains("**no violation**"), "{out}");
    assert!(
        out.contains("| `run.one_terminal_outcome` | violation | passed |"),
        "{out}"
    );
    assert!(out.contains("Every rule had something to check."), "{out}");
}

#[test]
fn the_example_bundle_passes_and_exercises_every_rule() {
    let o = diagwire(&["check", EXAMPLE]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(
        out.contains("1196 record(s) read, 0 unreadable. 18 of 18 rule(s) had something to check; **no violation**"),
        "{out}"
    );
    assert!(
        out.contains("| `absence.derived_status_unknown` | violation | passed | 77 | 0 | 0 |"),
        "{out}"
    );
    assert!(
        out.contains("| `dial.start_has_outcome` | violation | passed | 25 | 3 | 0 |"),
        "{out}"
    );
    assert!(
        out.contains("| `order.prompt_after_barrier` | violation | passed | 1 | 0 | 0 |"),
        "{out}"
    );
    assert!(out.contains("Every rule had something to check."), "{out}");
    let j = json(&diagwire(&["check", EXAMPLE, "--format", "json"]));
    let statuses: Vec<&str> = j["check"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses.len(), 18);
    assert!(!statuses.contains(&"failed"), "{statuses:?}");
}

#[test]
fn the_oldest_generation_example_passes_and_lists_the_rules_it_never_exercised() {
    let o = diagwire(&["check", OLDEST_EXAMPLE]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(
        out.contains("656 record(s) read, 0 unreadable. 9 of 18 rule(s) had something to check; **no violation**"),
        "{out}"
    );
    assert!(out.contains("Never had anything to check"), "{out}");
    assert!(
        out.contains("| `order.prompt_after_barrier` | violation | not exercised | 0 | 0 | 0 |"),
        "{out}"
    );
}

#[test]
fn the_golden_bundle_reports_its_duplicate_terminal_events_in_json() {
    let o = diagwire(&["check", GOLDEN, "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    let rule = j["check"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "run.one_terminal_outcome")
        .unwrap()
        .clone();
    assert_eq!(rule["findings_total"], 1);
    let f = &rule["findings"][0];
    assert_eq!(f["level"], "violation");
    assert!(
        f["location"]["file"]
            .as_str()
            .unwrap()
            .contains("golden.tar.gz!")
    );
    assert!(f["location"]["record"].is_u64());
    let witness: Vec<&str> = f["witness"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["value"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(witness.len(), 2);
    assert!(
        witness
            .iter()
            .all(|t| *t == "run_completed" || *t == "run_faulted")
    );
    assert!(f["message"].as_str().unwrap().contains("has 4 events"));
}

#[test]
fn coverage_prints_the_absence_table() {
    let o = diagwire(&["check", &bundle("small"), "--coverage"]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert!(out.contains("## Absence"), "{out}");
    assert!(out.contains("| stage | `IrohPeer.latency_ms` |"), "{out}");
    assert!(out.contains("could not ask (gap)"));
    let j = json(&diagwire(&[
        "check",
        &bundle("small"),
        "--coverage",
        "--format",
        "json",
    ]));
    let pct = j["coverage"]["contract"]["percent"].as_f64().unwrap();
    assert!(pct > 0.0 && pct < 100.0);
    assert!(
        j["coverage"]["roles"]["stage"]["types"]["IrohPeer"]["fields"]["latency_ms"]["unavailable"]
            ["api_gap"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn the_coverage_gate_fails_below_its_percentage() {
    let j = json(&diagwire(&[
        "check",
        &bundle("small"),
        "--coverage",
        "--format",
        "json",
    ]));
    let pct = j["coverage"]["contract"]["percent"].as_f64().unwrap();
    let above = format!("{}", (pct + 1.0).min(100.0));
    let below = format!("{}", (pct - 1.0).max(0.0));
    let o = diagwire(&[
        "check",
        &bundle("small"),
        "--fail-on-coverage-below",
        &above,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("is below the required"));
    let o = diagwire(&[
        "check",
        &bundle("small"),
        "--fail-on-coverage-below",
        &below,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = diagwire(&["check", &bundle("small"), "--fail-on-coverage-below", "120"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_field_gone_since_the_baseline_fails_the_check() {
    let o = diagwire(&["check", &bundle("small"), "--baseline", &bundle("small")]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("0 difference(s), 0 flagged"));
    let o = diagwire(&[
        "check",
        &bundle("small-no-rtt"),
        "--baseline",
        &bundle("small"),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    assert_eq!(j["check"]["passed"], true, "the rules themselves pass");
    let flagged: Vec<&str> = j["baseline"]["differences"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["flagged"] == true)
        .map(|d| d["subject"].as_str().unwrap())
        .collect();
    assert_eq!(flagged, ["ProbeReceived.rtt_ms", "ProbeReceived.rtt_ms"]);
}

#[test]
fn parity_holds_for_one_scenario_and_fails_on_a_planted_shift() {
    let o = diagwire(&["parity", &bundle("sim"), &bundle("prod")]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("**Parity holds**"));
    let o = diagwire(&["parity", &bundle("sim"), &bundle("prod-shifted")]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.contains("**Parity fails**"), "{out}");
    assert!(
        out.contains("* `DialOutcome.duration_ms` [Success] (`dial.duration`): Wasserstein-1 = "),
        "{out}"
    );
    assert!(out.contains("p50/p90/p99/max sim "));
    let j = json(&diagwire(&[
        "parity",
        &bundle("sim"),
        &bundle("prod-shifted"),
        "--format",
        "json",
    ]));
    assert_eq!(j["passed"], false);
    let shifted: Vec<(&str, &str)> = j["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["verdict"] == "shift")
        .map(|g| {
            (
                g["field"].as_str().unwrap(),
                g["decided_by"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shifted,
        [
            ("DialOutcome.duration_ms", "wasserstein"),
            ("PeerReachability.last_dial_duration_ms", "wasserstein")
        ]
    );
    assert!(j["groups"][0]["quantiles"]["sim"]["p99"].is_number());
}

#[test]
fn a_bundle_that_cannot_be_opened_exits_two() {
    let o = diagwire(&["check", "no/such/bundle"]);
    assert_eq!(o.status.code(), Some(2));
    let o = diagwire(&["parity", "no/such/sim", EXAMPLE]);
    assert_eq!(o.status.code(), Some(2));
}
