//! The live monitor's verdicts do not depend on how records travel: a bundle checked from disk
//! and the same records fed to a monitor — re-batched at any split, interleaved across nodes in any
//! order that keeps each node's own order — give the same verdict on every rule, and every finding
//! handed on early is in the final report. Runs are the synthetic scenario, clean or with one rule
//! broken. `ARBTEST_BUDGET_MS` sets the time spent on generated feeds (a few seconds by default;
//! arbtest prints the seed of a failure).

mod common;

use std::collections::BTreeMap;

use diagwire::bundle::read::{BundleReader, Limits};
use diagwire::bundle::records::{Consumer, Item, Walk, walk_into};
use diagwire::v1::*;
use diagwire::{Location, Problem};
use diagwire_check::{
    CheckReport, Fed, Finding, Monitor, Nodes, Options, RecordRef, Rulebook, Status,
};
use diagwire_testkit::scenario::{Params, Run, generate};
use serde_json::Value;

fn budget_ms() -> u64 {
    std::env::var("ARBTEST_BUDGET_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4_000)
}

fn tag(t: &'static str) -> impl Fn(&Event) -> bool {
    move |e: &Event| e.tag() == t
}

/// The scenario of `seed`, clean or with one rule broken (`plant` picks which).
fn scenario(seed: u64, plant: u8) -> Run {
    let mut run = generate(&Params::small(seed));
    let orch = run.node_mut("orchestrator");
    match plant % 5 {
        1 => orch.move_after(tag("readiness_barrier_passed"), tag("run_completed")),
        2 => {
            orch.push(RunFaulted::new(
                "scenario-small",
                FaultReason::Timeout,
                FaultComponent::Orchestrator,
            ));
        }
        3 => {
            orch.remove_first(tag("readiness_barrier_passed"));
        }
        4 => {
            run.node_mut("stage-0").remove_first(tag("weights_loaded"));
        }
        _ => {}
    }
    run
}

/// A bundle's records as the walk yields them: the manifest, and each node's in its order.
#[derive(Default)]
struct Records {
    manifest: Option<Manifest>,
    nodes: BTreeMap<String, Vec<Record>>,
}

impl Consumer for Records {
    fn record(&mut self, item: &Item<'_>) {
        match (item.node, item.record) {
            (None, Record::Manifest(m)) => self.manifest = Some(m.clone()),
            (Some(n), r) => self.nodes.entry(n.to_owned()).or_default().push(r.clone()),
            _ => {}
        }
    }
    fn problem(&mut self, p: &Problem) {
        panic!("the scenario reads cleanly: {p}");
    }
}

/// What must not depend on the feed: per rule, its status, counts and the records its findings
/// name (locations differ: a file on disk, a position in a feed).
type Shape = Vec<(String, Status, u64, u64, u64, Vec<Vec<Value>>)>;

fn shape(report: &CheckReport) -> Shape {
    report
        .rules
        .iter()
        .map(|r| {
            let mut witnesses: Vec<Vec<Value>> = r.findings.iter().map(witness_values).collect();
            witnesses.sort_by_key(|w| serde_json::to_string(w).unwrap());
            (
                r.id.clone(),
                r.status(),
                r.findings_total,
                r.checked,
                r.inconclusive,
                witnesses,
            )
        })
        .collect()
}

fn witness_values(f: &Finding) -> Vec<Value> {
    f.witness.iter().map(|w| w.value.clone()).collect()
}

/// Writes `run`, checks it from disk and reads its records back.
fn on_disk(run: Run) -> (CheckReport, Records) {
    let (_tmp, dir) = common::write(run);
    let report = common::check_path(&dir).report;
    let mut reader = BundleReader::open(&dir, Limits::default()).unwrap();
    let mut records = Records::default();
    walk_into(&mut reader, Walk::default(), &mut [&mut records]);
    (report, records)
}

/// Feeds `records` to a fresh monitor: the manifest first, then `next` picks which node goes on
/// and how many of its next records travel together (a batch when they are all events).
fn feed(
    records: &Records,
    mut next: impl FnMut(&[usize]) -> (usize, usize),
) -> (CheckReport, Vec<Finding>) {
    let rules = Rulebook::builtin();
    let mut monitor = Monitor::with(
        &rules,
        "scenario-small",
        Options::default(),
        Nodes::Manifest,
    );
    let mut early = Vec::new();
    monitor.manifest(records.manifest.as_ref().expect("a manifest"));
    let labels: Vec<&String> = records.nodes.keys().collect();
    let mut at = vec![0usize; labels.len()];
    loop {
        let open: Vec<usize> = (0..labels.len())
            .filter(|&i| at[i] < records.nodes[labels[i]].len())
            .collect();
        if open.is_empty() {
            break;
        }
        let (pick, size) = next(&open);
        let node = open[pick % open.len()];
        let list = &records.nodes[labels[node]];
        let end = at[node].saturating_add(size.max(1)).min(list.len());
        let chunk = &list[at[node]..end];
        at[node] = end;
        let events: Option<Vec<EventRecord>> = chunk
            .iter()
            .map(|r| match r {
                Record::Event(e) => Some(e.clone()),
                _ => None,
            })
            .collect();
        match events {
            Some(batch) if batch.len() > 1 => monitor.events(labels[node], &batch),
            _ => {
                for r in chunk {
                    monitor.take(&Fed {
                        node: Some(labels[node]),
                        record: RecordRef::from(r),
                        text: None,
                        location: Location::record(format!("feed/{}", labels[node]), 0, ""),
                    });
                }
            }
        }
        early.extend(monitor.decided());
    }
    early.extend(monitor.decided());
    (monitor.finish(), early)
}

/// The verdict of `records` fed as `next` says equals the verdict from disk, and every early
/// finding is in the final report.
#[track_caller]
fn same_verdict(
    disk: &CheckReport,
    records: &Records,
    next: impl FnMut(&[usize]) -> (usize, usize),
) {
    let (live, early) = feed(records, next);
    assert_eq!(
        shape(&live),
        shape(disk),
        "live:\n{}\ndisk:\n{}",
        live.to_markdown(),
        disk.to_markdown()
    );
    for f in &early {
        let r = live.rule(&f.rule).unwrap();
        assert!(
            r.findings.iter().any(|g| g.location == f.location),
            "early finding {} not in the report",
            f.message
        );
    }
}

#[test]
fn one_node_after_another_gives_the_bundles_verdict() {
    for plant in 0..5 {
        let (disk, records) = on_disk(scenario(1, plant));
        same_verdict(&disk, &records, |_| (0, usize::MAX));
    }
}

#[test]
fn one_record_at_a_time_round_robin_gives_the_bundles_verdict() {
    for plant in 0..5 {
        let (disk, records) = on_disk(scenario(1, plant));
        let mut turn = 0;
        same_verdict(&disk, &records, |open| {
            turn += 1;
            (turn % open.len(), 1)
        });
    }
}

#[test]
fn a_violation_across_nodes_is_decided_before_the_stream_ends() {
    let (_, records) = on_disk(scenario(1, 1));
    let mut turn = 0;
    let (_, early) = feed(&records, |open| {
        turn += 1;
        (turn % open.len(), 3)
    });
    assert!(
        early.iter().any(|f| f.rule == "order.prompt_after_barrier"),
        "decided while records were still coming: {early:?}"
    );
}

#[test]
fn any_batching_and_interleaving_gives_the_bundles_verdict() {
    let disks: Vec<(CheckReport, Records)> = (0..5u8)
        .map(|plant| on_disk(scenario(u64::from(plant % 2) + 1, plant)))
        .collect();
    let mut runs = 0u64;
    arbtest::arbtest(|u| {
        runs += 1;
        let (disk, records) = &disks[u.choose_index(disks.len())?];
        let mut choices: Vec<(usize, usize)> = Vec::new();
        while !u.is_empty() && choices.len() < 4_096 {
            choices.push((u.arbitrary::<u8>()? as usize, u.int_in_range(1..=40)?));
        }
        let mut i = 0;
        same_verdict(disk, records, |_| {
            i += 1;
            choices.get(i).copied().unwrap_or((0, usize::MAX))
        });
        Ok(())
    })
    .budget_ms(budget_ms());
    eprintln!("{runs} generated feeds gave the bundle's verdict");
}
