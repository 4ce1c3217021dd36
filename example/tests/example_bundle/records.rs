//! The records' own framing: host context in boot records, event batch sizes, sequence numbers
//! and the periodic snapshot cadence.

use diagwire::v1::{CustomPayload, Event, RecordKind, SnapshotTrigger};
use diagwire_example::n3_relay_flap;
use serde_json::Value;

use crate::support::*;

#[test]
fn boot_records_carry_host_context_for_rentals_and_none_for_the_local_orchestrator() {
    let p = parsed();
    let orch = &p.boots["orchestrator"];
    assert_eq!(orch.container_id, None);
    assert_eq!(orch.host_ip_public, None);
    assert_eq!(orch.vastai_contract_id, None);
    for stage in p.stages() {
        let boot = &p.boots[&stage];
        assert!(boot.container_id.is_some(), "{stage}");
        assert!(boot.host_ip_public.is_some(), "{stage}");
        assert!(boot.host_country.is_some(), "{stage}");
        assert!(boot.datacenter_id.is_some(), "{stage}");
        assert_eq!(boot.stage_count, Some(3), "{stage}");
    }
}

#[test]
fn event_batches_are_nonempty_and_at_most_512_records() {
    let bundle = n3_relay_flap();
    let mut batches = 0;
    for (path, bytes) in &bundle.files {
        if kind_of(path) == Some(RecordKind::EventBatch) {
            let batch: Vec<Value> = serde_json::from_slice(bytes).expect("array");
            assert!((1..=512).contains(&batch.len()), "{path}: {}", batch.len());
            batches += 1;
        }
    }
    assert!(batches >= 150, "{batches} event batches");
}

#[test]
fn event_sequence_numbers_rise_except_for_clock_samples() {
    let p = parsed();
    for (label, records) in &p.events {
        let seqs: Vec<u64> = records
            .iter()
            .filter(|r| !matches!(&r.event, Event::Custom(c) if matches!(c.payload, CustomPayload::ClockSample(_))))
            .map(|r| r.monotonic_seq)
            .collect();
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "{label}");
    }
}

#[test]
fn periodic_snapshots_come_every_five_seconds() {
    let p = parsed();
    for node in &p.manifest.nodes {
        let times: Vec<u64> = p
            .snapshots_of(&node.label)
            .iter()
            .filter(|s| s.trigger == SnapshotTrigger::Periodic)
            .map(|s| s.wall_ms)
            .collect();
        assert!(times.len() >= 9, "{}: {}", node.label, times.len());
        for w in times.windows(2) {
            assert!((4_990..=5_010).contains(&(w[1] - w[0])), "{}", node.label);
        }
    }
}
