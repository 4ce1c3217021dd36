//! The oldest-generation bundle holds only what that generation knew.

use std::collections::BTreeSet;

use diagwire::v1::Event;
use diagwire_example::{OLDEST_RUN_ID, n3_relay_flap_oldest};

use crate::support::*;

#[test]
fn the_oldest_generation_writes_only_what_it_knew() {
    let bundle = n3_relay_flap_oldest();
    let p = Parsed::new(&bundle);
    assert_eq!(p.manifest.run_id, OLDEST_RUN_ID);
    assert_eq!(p.manifest.contract_version, None);
    assert!(p.manifest.writer.is_none());
    let labels: BTreeSet<&str> = p.manifest.nodes.iter().map(|n| n.label.as_str()).collect();
    assert_eq!(
        labels,
        BTreeSet::from(["orchestrator", "stage-0", "stage-1", "stage-2"])
    );
    for node in &p.manifest.nodes {
        assert_eq!(node.contract_version, None);
        assert_eq!(node.vastai_records, None);
    }
    let oldest: BTreeSet<&str> = BTreeSet::from([
        "SwimTransition",
        "DialStarted",
        "DialOutcome",
        "IrohConnTypeChanged",
        "RelayChanged",
        "SwimMetadataSent",
        "SwimMetadataReceived",
        "ConnectionCacheHit",
        "ConnectionCacheMiss",
        "ConnectionCacheInvalidated",
        "NodeMapUpdate",
        "MessageSent",
        "MessageReceived",
        "ProbeSent",
        "ProbeReceived",
        "Error",
        "Custom",
    ]);
    let mut kinds = BTreeSet::new();
    for r in p.events.values().flatten() {
        assert!(oldest.contains(r.event.tag()), "{}", r.event.tag());
        if let Event::Custom(c) = &r.event {
            kinds.insert(c.payload.tag().to_owned());
        }
        if let Event::MessageSent(m) = &r.event {
            assert_eq!(m.trace_id, None);
        }
    }
    assert_eq!(
        kinds,
        BTreeSet::from(
            [
                "clock_sample",
                "iroh_api_missing",
                "register_name",
                "worker_exited",
                "worker_ready",
                "worker_starting"
            ]
            .map(str::to_owned)
        )
    );
    for snap in p.snapshots.values().flatten() {
        let b = &snap.body;
        assert!(
            b.relay_server.is_none()
                && b.subprocess.is_none()
                && b.app.is_none()
                && b.actors.is_none()
        );
        let iroh = b.iroh.as_ref().expect("iroh block");
        assert_eq!(iroh.iroh_version, None);
        assert!(iroh.relay_session.is_none());
        assert_eq!(iroh.api_gaps.len(), 5);
        let net = b.host.as_ref().and_then(|h| h.network.as_ref());
        assert!(net.is_none_or(|n| n.udp_kernel_stats.is_none()));
    }
    // Same run, same nodes: the newer bundle holds every event type the oldest does, and more.
    let newer = parsed();
    assert_eq!(
        newer.boots["stage-1"].node_id_hex,
        p.boots["stage-1"].node_id_hex
    );
}
