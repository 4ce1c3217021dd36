//! `monotonic_seq` within a node's stream: never back, except a restart a boot record explains.

use super::*;

// seq.monotonic

#[test]
fn a_sequence_number_going_back_is_found_with_the_two_records() {
    let mut run = base();
    let stage = run.node_mut("stage-0");
    let i = stage.find(tag("MessageReceived")).unwrap();
    let before = stage.events[..i]
        .iter()
        .rev()
        .find(|e| !is_clock_sample(e))
        .unwrap()
        .monotonic_seq;
    stage.events[i].monotonic_seq = before.saturating_sub(3).max(2);
    let f = violates(run, "seq.monotonic");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].witness.len(), 2);
    assert_eq!(witness_types(&f[0])[1], "MessageReceived");
    assert!(f[0].message.contains("goes back from"), "{}", f[0].message);
}

#[test]
fn clock_samples_numbered_by_the_sink_are_excepted() {
    let report = passes(base(), "seq.monotonic");
    // The exception is what keeps the scenario passing: without it the sink's numbers break it.
    let text = diagwire_check::rulebook::BUILTIN_RULES.replace(
        r#""except_custom_kinds": ["clock_sample"]"#,
        r#""except_custom_kinds": []"#,
    );
    let strict = Rulebook::from_json(&text).unwrap();
    let (_tmp, dir) = common::write(base());
    let checked = diagwire_check::check_bundle(
        &dir,
        diagwire::bundle::read::Limits::default(),
        &strict,
        diagwire_check::Options::default(),
        false,
    )
    .unwrap();
    assert!(checked.report.rule("seq.monotonic").unwrap().findings_total > 0);
    assert!(report.rule("seq.monotonic").unwrap().checked > 100);
}

fn restart(run: &mut Run, label: &str) {
    let node = run.node_mut(label);
    let half = node.events.len() / 2;
    let mut seq = 0;
    for e in node.events[half..]
        .iter_mut()
        .filter(|e| !is_clock_sample(e))
    {
        seq += 1;
        e.monotonic_seq = seq;
    }
}

#[test]
fn a_restart_is_allowed_once_per_later_boot() {
    let mut run = base();
    restart(&mut run, "stage-1");
    let node = run.node_mut("stage-1");
    let mut first = node.identity.clone();
    first.boot_sequence = 0;
    node.identity.boot_sequence = 1;
    node.earlier_boots.push(first);
    passes(run, "seq.monotonic");
}

#[test]
fn a_restart_without_a_later_boot_is_found() {
    let mut run = base();
    restart(&mut run, "stage-1");
    let f = violates(run, "seq.monotonic");
    assert_eq!(f.len(), 1);
    assert!(
        f[0].message.contains("only 1 boot record(s)"),
        "{}",
        f[0].message
    );
}
