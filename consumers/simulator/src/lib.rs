//! swactor's simulator as a consumer of diagwire: a two-node run (an orchestrator and one stage)
//! through boot, planning, weights, readiness, a prompt, a SWIM suspicion, completion and teardown,
//! emitted into a [`Sink`]. The binary writes it as a bundle through the bundle writer; a test feeds
//! the same scenario to the live monitor of the behavioural rules, in process, without a bundle.

use diagwire::NodeId;
use diagwire::v1::{
    Event, EventRecord, Finalize, Identity, NodeAvailable, NodeStarted, PeerState, PoolReady,
    PromptInjected, ReadinessBarrierPassed, RunCompleted, RunPlanned, RunTornDown, Snapshot,
    SnapshotBody, SnapshotTrigger, StageProvisionStarted, StageReady, StageStopped, StopRunSent,
    SwimTransition, WeightsLoaded,
};

/// The run's id.
pub const RUN_ID: &str = "sim-two-nodes";
/// The run's start, in ms since the epoch.
pub const T0: u64 = 1_779_733_870_000;

/// Where the simulator's records go: a bundle writer, a collector, a monitor.
pub trait Sink {
    /// A node's boot record.
    fn boot(&mut self, identity: &Identity);
    /// A batch of one node's events, in its order.
    fn events(&mut self, node: &Identity, batch: &[EventRecord]);
    /// A snapshot of a node.
    fn snapshot(&mut self, snapshot: &Snapshot);
    /// The finalize record the orchestrator sends.
    fn finalize(&mut self, node: &Identity, finalize: &Finalize);
}

/// The orchestrator's id.
pub fn orchestrator_id() -> NodeId {
    NodeId::from([0xaa; 32])
}

/// The stage's id.
pub fn stage_id() -> NodeId {
    NodeId::from([0xbb; 32])
}

fn identity(id: NodeId, role: &str, stage: Option<u32>) -> Identity {
    let mut identity = Identity::new(id.to_hex(), id.short(), role, RUN_ID, T0, 0);
    identity.stage_index = stage;
    identity
}

/// A node's events, numbered from `first` and a millisecond apart from `start` (ms after `T0`).
fn numbered(id: NodeId, first: u64, start: u64, events: Vec<Event>) -> Vec<EventRecord> {
    (first..)
        .zip(start..)
        .zip(events)
        .map(|((seq, at), e)| EventRecord::new(id, seq, T0 + at, e))
        .collect()
}

/// Runs the scenario into `sink`: boot records, each node's events in two batches (before and
/// after the prompt), a periodic snapshot of each, then the finalize record.
pub fn run(sink: &mut dyn Sink) {
    let (orch_id, stage_id) = (orchestrator_id(), stage_id());
    let orchestrator = identity(orch_id, "orchestrator", None);
    let stage = identity(stage_id, "stage", Some(0));
    sink.boot(&orchestrator);
    sink.boot(&stage);

    let started = |id: NodeId| {
        let mut e = NodeStarted::new(id.to_hex());
        e.run_id = Some(RUN_ID.to_owned());
        Event::from(e)
    };
    let available = |id: NodeId| {
        let mut e = NodeAvailable::new(id.to_hex());
        e.run_id = Some(RUN_ID.to_owned());
        Event::from(e)
    };
    let stage_events = numbered(
        stage_id,
        1,
        100,
        vec![
            started(stage_id),
            available(stage_id),
            WeightsLoaded::new(RUN_ID, 0, 1).into(),
            StageReady::new(RUN_ID, 0).into(),
        ],
    );
    let orch_early = numbered(
        orch_id,
        1,
        50,
        vec![
            started(orch_id),
            available(orch_id),
            PoolReady::new(RUN_ID, vec![orch_id.to_hex(), stage_id.to_hex()]).into(),
            RunPlanned::new(RUN_ID, 1).into(),
            StageProvisionStarted::new(RUN_ID, 0, stage_id.to_hex()).into(),
        ],
    );
    sink.events(&orchestrator, &orch_early);
    sink.events(&stage, &stage_events);

    let late = numbered(
        orch_id,
        6,
        1_000,
        vec![
            ReadinessBarrierPassed::new(RUN_ID).into(),
            PromptInjected::new(RUN_ID, 100, 1, 1).into(),
            SwimTransition::new(
                stage_id,
                PeerState::Alive,
                PeerState::Suspect,
                "probe timed out",
            )
            .into(),
            RunCompleted::new(RUN_ID).into(),
            StopRunSent::new(RUN_ID, 0, stage_id.to_hex()).into(),
            RunTornDown::new(RUN_ID).into(),
        ],
    );
    sink.events(&orchestrator, &late);
    let stopped = numbered(
        stage_id,
        5,
        1_004,
        vec![StageStopped::new(RUN_ID, 0).into()],
    );
    sink.events(&stage, &stopped);

    for (who, seq) in [(&orchestrator, 1), (&stage, 0)] {
        sink.snapshot(&Snapshot::new(
            who.clone(),
            RUN_ID,
            format!("{}-0", who.node_id_short),
            T0 + 5_000,
            seq,
            SnapshotTrigger::Periodic,
            SnapshotBody::new(vec![]),
        ));
    }
    let mut finalize = Finalize::new();
    finalize.exit_reason = Some("completed".to_owned());
    sink.finalize(&orchestrator, &finalize);
}
