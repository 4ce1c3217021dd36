//! The scenario's timeline: the script of steps (events, state changes, flushes, snapshots,
//! finalize) each node takes and when, decided up front in the order [`Script::build`] calls its
//! parts, and the constructors of the events it uses most.

use diagwire::v1::*;
use diagwire_runtime::SplitMix64;

use crate::world::*;

/// A state change without an event of its own (a received SWIM message).
#[derive(Clone, Copy)]
pub(crate) enum Touch {
    Ping { from: usize, seq: u64 },
    PingReq { from: usize, seq: u64 },
    JoinRequest { from: usize },
    JoinResponse { from: usize, members: u64 },
}

// Steps live only while the script plays; boxing the event would cost an allocation per event.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Op {
    Boot,
    Emit(Event),
    Touch(Touch),
    Flush,
    Snapshot(SnapshotTrigger),
    ClockSample(ClockSampleFields),
    Finalize(String),
}

pub(crate) struct Step {
    pub(crate) t: u64,
    pub(crate) node: usize,
    pub(crate) op: Op,
}

pub(crate) struct Script<'a> {
    pub(crate) specs: &'a [Spec],
    pub(crate) steps: Vec<Step>,
    pub(crate) rng: SplitMix64,
    /// `alive_at[n][m]`: when `n` first considers `m` alive (after joining or learning of it).
    pub(crate) alive_at: [[Option<u64>; NODES]; NODES],
    /// When `n`'s dials to `m` succeeded: the connection generation at a time is how many did.
    pub(crate) dials: [[Vec<u64>; NODES]; NODES],
    /// When `n` last saw a peer come back alive after the relay went down.
    pub(crate) recovered: [u64; NODES],
    /// When each stage's weights were loaded, and by which worker generation.
    pub(crate) loaded: [Option<(u64, u64)>; NODES],
    /// Where each stage's shard download ran (start, end), when it downloaded one.
    pub(crate) downloads: [Option<(u64, u64)>; NODES],
    /// When the orchestrator passed the readiness barrier.
    pub(crate) barrier: u64,
}

impl<'a> Script<'a> {
    pub(crate) fn new(specs: &'a [Spec]) -> Self {
        Script {
            specs,
            steps: Vec::new(),
            rng: SplitMix64::new(0x0b5e_55ed_f1a9_0003),
            alive_at: [[None; NODES]; NODES],
            dials: Default::default(),
            recovered: [0; NODES],
            loaded: [None; NODES],
            downloads: [None; NODES],
            barrier: 0,
        }
    }

    pub(crate) fn at(&mut self, t: u64, node: usize, op: Op) {
        self.steps.push(Step { t, node, op });
    }

    pub(crate) fn emit(&mut self, t: u64, node: usize, event: impl Into<Event>) {
        self.at(t, node, Op::Emit(event.into()));
    }

    /// The generation of `a`'s cached connection to `b` at `t`.
    pub(crate) fn generation(&self, a: usize, b: usize, t: u64) -> u64 {
        self.dials[a][b].iter().filter(|&&d| d <= t).count() as u64
    }

    pub(crate) fn id(&self, n: usize) -> NodeId {
        self.specs[n].id
    }

    pub(crate) fn end(&self, n: usize) -> u64 {
        if n == ORCH { FINALIZE_AT } else { STAGE_END }
    }

    pub(crate) fn build(mut self) -> Vec<Step> {
        for n in 0..NODES {
            self.boot(n);
        }
        self.joins();
        for n in 0..NODES {
            self.swim(n);
        }
        self.outage();
        self.readiness();
        let (exit_reason, last_token) = self.requests();
        self.teardown(last_token);
        self.relay_server();
        self.after_exit();
        self.at(FINALIZE_AT, ORCH, Op::Snapshot(SnapshotTrigger::OnDemand));
        self.at(FINALIZE_AT + 40, ORCH, Op::Flush);
        self.at(FINALIZE_AT + 80, ORCH, Op::Finalize(exit_reason));
        self.steps
    }
}

pub(crate) fn custom(payload: CustomPayload) -> Event {
    CustomEvent::new(payload).into()
}

pub(crate) fn relay_change(from: RelaySessionStatus, to: RelaySessionStatus) -> Event {
    let mut change = RelaySessionStateChanged::new(from, to);
    change.relay_url = Some(RELAY_URL.to_owned());
    change.into()
}

pub(crate) fn dial_started(peer: NodeId, attempt: u32) -> Event {
    DialStarted::new(peer, attempt, DIAL_TIMEOUT).into()
}

pub(crate) fn swim_transition(peer: NodeId, from: PeerState, to: PeerState, reason: &str) -> Event {
    SwimTransition::new(peer, from, to, reason).into()
}

pub(crate) fn metadata_received(specs: &[Spec], from: usize) -> Event {
    SwimMetadataReceived::new(specs[from].id, 1, specs[from].meta_hash).into()
}

pub(crate) fn conn_type_changed(peer: NodeId, old: ConnType, new: ConnType) -> Event {
    IrohConnTypeChanged::new(peer, old, new).into()
}

/// Sets the causal trace ids of a message event.
pub(crate) fn traced(event: Event, trace_id: String, parent: Option<String>) -> Event {
    match event {
        Event::MessageSent(mut m) => {
            m.trace_id = Some(trace_id);
            m.parent_trace_id = parent;
            m.into()
        }
        Event::MessageReceived(mut m) => {
            m.trace_id = Some(trace_id);
            m.parent_trace_id = parent;
            m.into()
        }
        other => other,
    }
}

pub(crate) fn message(sent: bool, peer: NodeId, kind: &str, size: u32) -> Event {
    if sent {
        MessageSent::new(peer, kind, size).into()
    } else {
        MessageReceived::new(peer, kind, size).into()
    }
}

pub(crate) fn probe_sent(target: &str, kind: ProbeKind) -> Event {
    ProbeSent::new(target, kind).into()
}

pub(crate) fn probe_received(
    target: &str,
    kind: ProbeKind,
    rtt_ms: Option<u64>,
    outcome: ProbeOutcome,
) -> Event {
    let mut received = ProbeReceived::new(target, kind, outcome);
    received.rtt_ms = rtt_ms;
    received.into()
}
