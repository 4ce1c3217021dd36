//! Bundles from every swactor generation (the oldest, with 14 event variants; the middle one, with
//! 22; the newest, with 27) validate without a problem, as a directory and as a collector tarball.
#![cfg(all(feature = "bundle", feature = "validate"))]

mod common;

use std::path::PathBuf;

use common::{Node, bundle, problems};
use diagwire::bundle::BundleContents;
use diagwire::bundle::output::{write_dir, write_tar_gz};

fn both_forms_validate_clean(b: &BundleContents) {
    let dir = tempfile::tempdir().expect("temp dir");
    let run_dir: PathBuf = write_dir(b, dir.path()).expect("write dir");
    assert_eq!(problems(&run_dir), Vec::<String>::new(), "directory form");
    let tarball = dir.path().join("bundle.tar.gz");
    write_tar_gz(b, std::fs::File::create(&tarball).expect("create")).expect("write tar.gz");
    assert_eq!(problems(&tarball), Vec::<String>::new(), "tarball form");
}

/// The events an oldest-generation node writes (14 variants: no relay session, gossip or
/// subprocess events).
const OLDEST_EVENTS: &[&str] = &[
    "event/swim-transition.json",
    "event/dial-started.json",
    "event/dial-outcome-timeout.json",
    "event/dial-outcome-error.json",
    "event/iroh-conn-type-changed.json",
    "event/relay-changed.json",
    "event/swim-metadata-sent.json",
    "event/swim-metadata-received.json",
    "event/connection-cache-hit.json",
    "event/connection-cache-miss.json",
    "event/connection-cache-invalidated.json",
    "event/node-map-update.json",
    "event/message-sent.json",
    "event/message-received.json",
    "event/probe-sent.json",
    "event/probe-received.json",
    "event/error.json",
    "event/custom-worker-starting.json",
    "event/custom-worker-exited.json",
    "event/custom-iroh-api-missing-legacy.json",
    "event/custom-clock-sample.json",
];

/// What the 22-variant generation adds.
const MIDDLE_EVENTS: &[&str] = &[
    "event/relay-session-state-changed.json",
    "event/relay-session-opened.json",
    "event/relay-session-closed.json",
    "event/gossip-received.json",
    "event/subprocess-spawned.json",
    "event/subprocess-exited.json",
];

/// What the newest (27-variant) generation adds.
const NEWEST_EVENTS: &[&str] = &[
    "event/swim-probe-sent.json",
    "event/swim-probe-acked.json",
    "event/swim-probe-timed-out.json",
    "event/inference-response-sent.json",
    "event/custom-iroh-api-missing.json",
];

#[test]
fn an_oldest_generation_bundle_validates_clean() {
    let nodes = [
        Node {
            label: "orchestrator",
            boot: "boot/orchestrator-local-dev.json",
            events: vec![OLDEST_EVENTS[..10].to_vec(), OLDEST_EVENTS[10..].to_vec()],
            snapshots: vec![
                "snapshot/snap-older-generation.json",
                "snapshot/host-older-generation.json",
            ],
            finalize: Some("finalize/exit-reason.json"),
        },
        Node {
            label: "stage-0",
            boot: "boot/stage-rental-id-only-in-container-id.json",
            events: vec![OLDEST_EVENTS.to_vec()],
            snapshots: vec!["snapshot/snap-older-generation.json"],
            finalize: None,
        },
    ];
    both_forms_validate_clean(&bundle("run-oldest", &nodes, false));
}

#[test]
fn a_middle_generation_bundle_validates_clean() {
    let events: Vec<&str> = OLDEST_EVENTS.iter().chain(MIDDLE_EVENTS).copied().collect();
    let nodes = [Node {
        label: "stage-1",
        boot: "boot/vastai-stage-every-field-set.json",
        events: vec![events],
        snapshots: vec![
            "snapshot/snap-older-generation.json",
            "snapshot/tier3-probes.json",
        ],
        finalize: None,
    }];
    both_forms_validate_clean(&bundle("run-middle", &nodes, false));
}

#[test]
fn a_newest_generation_collector_tarball_validates_clean() {
    let events: Vec<&str> = OLDEST_EVENTS
        .iter()
        .chain(MIDDLE_EVENTS)
        .chain(NEWEST_EVENTS)
        .copied()
        .collect();
    let nodes = [
        Node {
            label: "orchestrator",
            boot: "boot/orchestrator-local-dev.json",
            events: vec![events.clone()],
            snapshots: vec![
                "snapshot/snap-full-newest-generation.json",
                "snapshot/tier3-all-blocks.json",
            ],
            finalize: Some("finalize/exit-reason.json"),
        },
        Node {
            label: "relay",
            boot: "boot/relay-node.json",
            events: vec![vec![
                "event/relay-session-opened.json",
                "event/relay-session-closed.json",
            ]],
            snapshots: vec!["snapshot/tier3-relay-server.json"],
            finalize: None,
        },
    ];
    both_forms_validate_clean(&bundle("run-newest", &nodes, true));
}
