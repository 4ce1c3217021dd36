//! The simulator's run through the live monitor of the behavioural rules, in process: no bundle is
//! written, and the test asserts the contract in its own terms — every rule passed, each node's
//! lifecycle in order, the events of each scope carrying their identity fields — as swactor's tests
//! do on a simulated run.

use diagwire::v1::{EventRecord, EventType, Finalize, Identity, Snapshot};
use diagwire_check::{Monitor, Rulebook};
use diagwire_consumer_simulator::{RUN_ID, Sink, run};

/// The scenario's records, straight into the monitor (the node is its id, as a collector files it).
struct Live<'r>(Monitor<'r>);

impl Sink for Live<'_> {
    fn boot(&mut self, identity: &Identity) {
        self.0.boot(&identity.node_id_hex.0, identity);
    }
    fn events(&mut self, node: &Identity, batch: &[EventRecord]) {
        self.0.events(&node.node_id_hex.0, batch);
    }
    fn snapshot(&mut self, snapshot: &Snapshot) {
        self.0.snapshot(&snapshot.identity.node_id_hex.0, snapshot);
    }
    fn finalize(&mut self, node: &Identity, finalize: &Finalize) {
        self.0.finalize(&node.node_id_hex.0, finalize);
    }
}

#[test]
fn the_simulated_run_keeps_the_contract_without_writing_a_bundle() {
    let rules = Rulebook::builtin();
    let mut live = Live(Monitor::new(&rules, RUN_ID));
    run(&mut live);
    assert!(live.0.decided().is_empty(), "nothing broke while it ran");
    let verdict = live.0.conclude();
    verdict.expect_passed();
    verdict.expect_identity_fields();
    verdict.expect_rule("order.prompt_after_barrier");
    verdict.expect_rule("run.one_terminal_outcome");
    let orchestrator = diagwire_consumer_simulator::orchestrator_id().to_hex();
    verdict.expect_lifecycle(
        &orchestrator.0,
        &[
            EventType::NodeStarted,
            EventType::NodeAvailable,
            EventType::PoolReady,
            EventType::RunPlanned,
            EventType::ReadinessBarrierPassed,
            EventType::PromptInjected,
            EventType::RunCompleted,
            EventType::RunTornDown,
        ],
    );
    let stage = diagwire_consumer_simulator::stage_id().to_hex();
    verdict.expect_lifecycle(
        &stage.0,
        &[
            EventType::NodeStarted,
            EventType::WeightsLoaded,
            EventType::StageReady,
            EventType::StageStopped,
        ],
    );
}

#[test]
fn a_failed_assertion_says_what_is_missing_and_what_was_seen() {
    let rules = Rulebook::builtin();
    let mut live = Live(Monitor::new(&rules, RUN_ID));
    run(&mut live);
    let verdict = live.0.conclude();
    let stage = diagwire_consumer_simulator::stage_id().to_hex();
    let err = verdict
        .check_lifecycle(&stage.0, &[EventType::StageReady, EventType::WeightsLoaded])
        .unwrap_err();
    assert!(
        err.contains("step 2 `weights_loaded`") && err.contains("`stage_ready`"),
        "{err}"
    );
    let err = verdict
        .check_fault(
            diagwire::v1::FaultReason::Timeout,
            diagwire::v1::FaultComponent::Orchestrator,
        )
        .unwrap_err();
    assert!(err.contains("faults seen: none"), "{err}");
}
