//! The manifest agrees with the files: counts, node directories, finalize, the run window, the
//! contract version and the simulator writer; every record names the same run.

use std::collections::BTreeSet;

use diagwire::CONTRACT_VERSION;
use diagwire::bundle::BundleContents;
use diagwire::layout::{self, FileKind, Role, node_label, parse_bundle_path};
use diagwire::v1::{CustomPayload, Event, WriterKind};
use diagwire_example::{RUN_ID, n3_relay_flap, n3_relay_flap_oldest};

use crate::support::*;

#[test]
fn manifest_counts_match_the_files() {
    manifest_counts_match(&n3_relay_flap(), Some(0));
    manifest_counts_match(&n3_relay_flap_oldest(), None);
}

fn manifest_counts_match(bundle: &BundleContents, vastai_records: Option<u64>) {
    let p = Parsed::new(bundle);
    let mut files = 1; // MANIFEST.json
    for node in &p.manifest.nodes {
        let l = &node.label;
        let count = |kind: FileKind| {
            bundle
                .files
                .keys()
                .map(|f| parse_bundle_path(f))
                .filter(|f| f.node.as_deref() == Some(l) && f.role.file_kind() == Some(&kind))
                .count() as u64
        };
        let has = |role: Role| bundle.files.contains_key(&layout::bundle_path(l, &role));
        assert_eq!(node.boot_recorded, has(Role::Latest(FileKind::Boot)), "{l}");
        assert_eq!(node.event_batches, count(FileKind::Events), "{l}");
        assert_eq!(node.snapshots, count(FileKind::Snapshot), "{l}");
        assert_eq!(
            node.finalize_recorded,
            has(Role::Latest(FileKind::Finalize)),
            "{l}"
        );
        assert_eq!(count(FileKind::Boot), u64::from(node.boot_recorded), "{l}");
        assert_eq!(
            count(FileKind::Finalize),
            u64::from(node.finalize_recorded),
            "{l}"
        );
        assert_eq!(node.vastai_records, vastai_records, "{l}");
        for (kind, n) in [
            (FileKind::Events, node.event_batches),
            (FileKind::Snapshot, node.snapshots),
        ] {
            for i in 1..=n {
                let path = layout::bundle_path(l, &Role::Numbered(kind.clone(), i));
                assert!(bundle.files.contains_key(&path), "{path} missing");
            }
        }
        files += u64::from(node.boot_recorded)
            + node.event_batches
            + node.snapshots
            + u64::from(node.finalize_recorded);
    }
    assert_eq!(
        files,
        bundle.files.len() as u64,
        "files the manifest does not count"
    );
}

#[test]
fn manifest_declares_this_contract_version_and_a_simulator_as_its_writer() {
    let p = parsed();
    assert_eq!(
        p.manifest.contract_version.as_deref(),
        Some(CONTRACT_VERSION)
    );
    let writer = p.manifest.writer.as_ref().expect("writer");
    assert_eq!(writer.kind, WriterKind::Sim);
    assert_eq!(writer.kind.as_ref(), "sim");
    assert_eq!(writer.name, "diagwire-example");
    assert_eq!(writer.version, env!("CARGO_PKG_VERSION"));
    for node in &p.manifest.nodes {
        assert_eq!(
            node.contract_version.as_deref(),
            Some(CONTRACT_VERSION),
            "{}",
            node.label
        );
    }
}

#[test]
fn manifest_lists_every_node_directory_under_its_label() {
    let bundle = n3_relay_flap();
    let p = Parsed::new(&bundle);
    let dirs: BTreeSet<&str> = bundle
        .files
        .keys()
        .filter_map(|f| f.split_once('/').map(|(d, _)| d))
        .collect();
    let labels: BTreeSet<&str> = p.manifest.nodes.iter().map(|n| n.label.as_str()).collect();
    assert_eq!(dirs, labels);
    assert_eq!(
        labels,
        BTreeSet::from(["orchestrator", "relay", "stage-0", "stage-1", "stage-2"])
    );
    let in_order: Vec<&str> = p.manifest.nodes.iter().map(|n| n.label.as_str()).collect();
    assert!(in_order.is_sorted(), "{in_order:?}");
    for node in &p.manifest.nodes {
        let boot = &p.boots[&node.label];
        assert_eq!(
            node.label,
            node_label(node.role.as_deref(), node.stage_index, &node.node_id_hex.0)
        );
        assert_eq!(node.node_id_hex, boot.node_id_hex);
        assert_eq!(node.role.as_deref(), Some(boot.role.as_str()));
        assert_eq!(node.stage_index, boot.stage_index);
    }
}

#[test]
fn finalize_received_and_only_the_orchestrator_finalized() {
    let p = parsed();
    assert!(p.manifest.finalize_received);
    assert_eq!(p.finalizes, BTreeSet::from(["orchestrator".to_owned()]));
    let finalizers: Vec<&str> = p
        .manifest
        .nodes
        .iter()
        .filter(|n| n.finalize_recorded)
        .map(|n| n.label.as_str())
        .collect();
    assert_eq!(finalizers, ["orchestrator"]);
}

#[test]
fn run_window_covers_every_collector_time_and_lasts_about_a_minute() {
    let p = parsed();
    let start = p.manifest.run_start_collector_ms.expect("run start");
    let end = p.manifest.run_end_collector_ms.expect("run end");
    assert!(
        (50_000..=70_000).contains(&(end - start)),
        "{}",
        end - start
    );
    let mut samples = 0;
    for records in p.events.values() {
        for r in records {
            let Event::Custom(c) = &r.event else { continue };
            if let CustomPayload::ClockSample(f) = &c.payload {
                samples += 1;
                assert!(
                    start <= f.collector_recv_ms && f.collector_send_ms <= end,
                    "{f:?}"
                );
            }
        }
    }
    assert!(samples > 100, "{samples} clock samples");
}

#[test]
fn run_id_is_the_same_in_every_record() {
    let bundle = n3_relay_flap();
    let p = Parsed::new(&bundle);
    assert_eq!(bundle.run_id, RUN_ID);
    assert_eq!(p.manifest.run_id, RUN_ID);
    assert_eq!(p.boots.len(), 5);
    for boot in p.boots.values() {
        assert_eq!(boot.run_id, RUN_ID);
    }
    let mut snapshots = 0;
    for snap in p.snapshots.values().flatten() {
        assert_eq!(snap.run_id, RUN_ID);
        assert_eq!(snap.identity.run_id, RUN_ID);
        snapshots += 1;
    }
    assert!(snapshots >= 40, "{snapshots} snapshots");
}
