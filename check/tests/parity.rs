//! Sim-vs-prod parity on bundles of one scenario: a simulated and a production run (two seeds)
//! are at parity; a planted shift, a missing event type or a changed rate breaks it, and the
//! report names the field, the statistic and the quantiles.

mod common;

use std::sync::OnceLock;

use diagwire::bundle::read::Limits;
use diagwire::v1::*;
use diagwire_check::parity::{self, Config, Decider, GroupVerdict, ParityReport, Profile};
use diagwire_testkit::scenario::{Params, Run, generate};

fn sim() -> Run {
    generate(&Params::parity(11, WriterKind::Sim))
}

fn prod() -> Run {
    generate(&Params::parity(22, WriterKind::Collector))
}

#[track_caller]
fn profile(run: Run) -> Profile {
    let (_tmp, dir) = common::write(run);
    parity::profile(&dir, Limits::default(), &Config::builtin()).expect("bundle opens")
}

/// The unchanged simulated and production profiles, read once for all tests.
fn sim_profile() -> &'static Profile {
    static P: OnceLock<Profile> = OnceLock::new();
    P.get_or_init(|| profile(sim()))
}

fn prod_profile() -> &'static Profile {
    static P: OnceLock<Profile> = OnceLock::new();
    P.get_or_init(|| profile(prod()))
}

#[track_caller]
fn parity_of(sim: Run, prod: Run) -> ParityReport {
    parity::compare(&profile(sim), &profile(prod), &Config::builtin())
}

#[test]
fn a_simulated_and_a_production_run_of_one_scenario_are_at_parity() {
    let (sim, prod) = (sim_profile(), prod_profile());
    let report = parity::compare(sim, prod, &Config::builtin());
    assert!(report.passed(), "{}", report.to_markdown());
    // Every group read something from both bundles.
    for g in &Config::builtin().groups {
        assert!(
            report
                .groups
                .iter()
                .any(|r| r.group == g.id && r.verdict == GroupVerdict::Same),
            "group `{}` judged nothing",
            g.id
        );
    }
    // The simulator-only block is there on one side and left out of the comparison.
    let (_, applied) = sim.coverage.roles["stage"]
        .field("IrohState", "links_applied")
        .unwrap();
    let (_, none) = prod.coverage.roles["stage"]
        .field("IrohState", "links_applied")
        .unwrap();
    assert!(applied.present > 0 && none.present == 0);
    assert!(
        !report
            .shape
            .iter()
            .any(|d| d.subject.contains("links_applied"))
    );
    assert!(report.to_markdown().contains("**Parity holds**"));
}

#[test]
fn slower_successful_dials_in_production_break_parity_naming_field_statistic_and_quantiles() {
    let mut p = Params::parity(22, WriterKind::Collector);
    p.dial_success_scale = 1.6;
    let report = parity::compare(sim_profile(), &profile(generate(&p)), &Config::builtin());
    assert!(!report.passed());
    let fails: Vec<(&str, &str)> = report
        .failures()
        .map(|g| (g.group.as_str(), g.class.as_str()))
        .collect();
    assert_eq!(
        fails,
        [
            ("dial.duration", "Success"),
            ("reachability.last_dial_duration", "-")
        ],
        "{}",
        report.to_markdown()
    );
    let dial = report.failures().next().unwrap();
    assert_eq!(
        dial.decider,
        Decider::Wasserstein,
        "more than 1000 dials a side"
    );
    let (_, over_sd) = dial.w1.unwrap();
    assert!(over_sd > 0.1);
    let (qs, qp) = (dial.q_sim.unwrap(), dial.q_prod.unwrap());
    assert!(qp[0] > qs[0] * 1.4, "the median moved: {qs:?} {qp:?}");
    let sentence = parity::shift_sentence(dial, &report.thresholds);
    for part in [
        "`DialOutcome.duration_ms` [Success]",
        "Wasserstein-1",
        "p50/p90/p99/max sim",
    ] {
        assert!(sentence.contains(part), "{sentence}");
    }
    assert!(report.to_markdown().contains(&sentence));
    // Refused and timed-out dials did not move.
    assert!(
        report
            .groups
            .iter()
            .filter(|g| g.group == "dial.duration" && g.class != "Success")
            .all(|g| g.verdict == GroupVerdict::Same)
    );
}

#[test]
fn a_shift_in_a_small_sample_is_judged_by_ks() {
    let short = |seed, writer, scale| {
        let mut p = Params::parity(seed, writer);
        p.duration_ms = 150_000;
        p.dial_success_scale = scale;
        generate(&p)
    };
    let report = parity_of(
        short(11, WriterKind::Sim, 1.0),
        short(22, WriterKind::Collector, 2.0),
    );
    let dial = report
        .groups
        .iter()
        .find(|g| g.group == "dial.duration" && g.class == "Success")
        .unwrap();
    assert!(dial.n_sim <= 1000 && dial.n_prod <= 1000);
    assert_eq!(
        (dial.decider, dial.verdict),
        (Decider::Ks, GroupVerdict::Shift)
    );
    let (d, _, _) = dial.ks.unwrap();
    assert!(d > 0.3 && dial.p_adjusted.unwrap() < 0.01, "{dial:?}");
    let same = parity_of(
        short(11, WriterKind::Sim, 1.0),
        short(22, WriterKind::Collector, 1.0),
    );
    assert!(same.passed(), "{}", same.to_markdown());
}

#[test]
fn an_event_type_the_simulator_never_writes_breaks_shape_parity() {
    let mut s = sim();
    for n in &mut s.nodes {
        n.events
            .retain(|e| !matches!(e.event, Event::ConnectionCacheInvalidated(_)));
    }
    let report = parity::compare(&profile(s), prod_profile(), &Config::builtin());
    let shape: Vec<(&str, &str)> = report
        .shape
        .iter()
        .filter(|d| d.flagged)
        .map(|d| (d.role.as_str(), d.subject.as_str()))
        .collect();
    assert_eq!(
        shape,
        [
            ("orchestrator", "ConnectionCacheInvalidated"),
            ("stage", "ConnectionCacheInvalidated"),
        ],
        "{}",
        report.to_markdown()
    );
    assert!(!report.passed());
}

#[test]
fn a_rate_the_simulator_underestimates_is_a_shift() {
    let mut s = sim();
    let mut k = 0;
    for n in &mut s.nodes {
        n.events.retain(|e| {
            if matches!(e.event, Event::IrohConnTypeChanged(_)) {
                k += 1;
                k % 5 == 0
            } else {
                true
            }
        });
    }
    let report = parity::compare(&profile(s), prod_profile(), &Config::builtin());
    let fails: Vec<&str> = report.failures().map(|g| g.group.as_str()).collect();
    assert_eq!(
        fails,
        ["iroh_conn_type_changed.rate"],
        "{}",
        report.to_markdown()
    );
    let g = report.failures().next().unwrap();
    assert_eq!(g.decider, Decider::RateTest);
    let (rs, rp, _) = g.rates.unwrap();
    assert!(rs * 3.0 < rp, "{rs} vs {rp}");
    assert!(report.shape.iter().all(|d| !d.flagged));
}

#[test]
fn a_changed_outcome_mix_fails_parity() {
    let mut p = prod();
    // Production probes of the relay port always time out; the simulator's mostly succeed.
    for n in &mut p.nodes {
        for e in &mut n.events {
            if let Event::ProbeReceived(r) = &mut e.event
                && r.kind == ProbeKind::UdpRelay
            {
                r.outcome = ProbeOutcome::Timeout;
                r.rtt_ms = None;
            }
        }
    }
    let report = parity::compare(sim_profile(), &profile(p), &Config::builtin());
    let g = report
        .groups
        .iter()
        .find(|g| g.group == "probe_received.outcome_mix" && g.class == "udp_relay")
        .unwrap();
    assert_eq!(g.verdict, GroupVerdict::Shift, "{}", report.to_markdown());
    assert_eq!(g.decider, Decider::ChiSquared);
    let sentence = parity::shift_sentence(g, &report.thresholds);
    assert!(sentence.contains("timeout 100.0%"), "{sentence}");
    // And the round-trip time, now missing from those probes, shows in the shape.
    let shape: Vec<(&str, &str)> = report
        .shape
        .iter()
        .filter(|d| d.flagged)
        .map(|d| (d.role.as_str(), d.subject.as_str()))
        .collect();
    assert_eq!(
        shape,
        [
            ("orchestrator", "ProbeReceived.rtt_ms"),
            ("stage", "ProbeReceived.rtt_ms")
        ]
    );
}

#[test]
fn the_parity_file_loads_and_refuses_what_the_contract_does_not_have() {
    let c = Config::builtin();
    assert!(c.groups.len() >= 10);
    let bad =
        parity::BUILTIN_GROUPS.replace("\"type\": \"DialOutcome\"", "\"type\": \"DialOutcomes\"");
    assert!(
        Config::from_json(&bad)
            .unwrap_err()
            .contains("`DialOutcomes` is not an event type")
    );
    let dup = parity::BUILTIN_GROUPS
        .replace("\"id\": \"message_sent.size\"", "\"id\": \"dial.duration\"");
    assert!(
        Config::from_json(&dup)
            .unwrap_err()
            .contains("appears twice")
    );
    assert!(Config::from_json("{}").is_err());
}

#[test]
fn bundles_with_nothing_to_judge_are_not_at_parity_and_say_so() {
    let config = Config::builtin();
    let empty = Profile::empty("manifest-only", &config);
    let report = parity::compare(&empty, &empty, &config);
    assert!(report.nothing_to_compare() && !report.passed());
    assert!(
        report
            .to_markdown()
            .contains("**Nothing to compare**: 0 shape difference(s)"),
        "{}",
        report.to_markdown()
    );
}

#[test]
fn parity_fails_when_more_than_a_share_of_a_bundle_cannot_be_read() {
    let mut sim = sim_profile().clone();
    sim.coverage.unreadable = sim.coverage.records / 50;
    let report = parity::compare(&sim, prod_profile(), &Config::builtin());
    assert!(!report.passed(), "{}", report.to_markdown());
    let md = report.to_markdown();
    assert!(md.contains("* The simulated bundle: "), "{md}");
    assert!(md.contains("over the 1% parity allows"), "{md}");
    // Below the share, the same records are named but parity holds.
    let mut sim = sim_profile().clone();
    sim.coverage.unreadable = 1;
    let report = parity::compare(&sim, prod_profile(), &Config::builtin());
    assert!(report.passed(), "{}", report.to_markdown());
    assert!(
        report
            .to_markdown()
            .contains("* The simulated bundle: 1 of ")
    );
}
