//! Playing the script: each node's state (its view of peers, relay session, probes and
//! subprocesses, its event sink), the steps in time order, what each node posts to the collector
//! and when it arrives, and the collector's bundle, written through the bundle `Writer`.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use crate::{OLDEST_RUN_ID, RUN_ID};
use diagwire::bundle::{BundleContents, Writer};

use diagwire::v1::*;
use diagwire_runtime::SplitMix64;

use crate::Generation;
use crate::script::*;
use crate::world::*;

#[derive(Default)]
pub(crate) struct PeerView {
    pub(crate) last_inbound: Option<u64>,
    pub(crate) last_outbound_ok: Option<u64>,
    pub(crate) dial_started: Option<u64>,
    pub(crate) dial_outcome: Option<String>,
    pub(crate) dial_duration: Option<u64>,
    pub(crate) opinion: Option<PeerState>,
    pub(crate) since: Option<u64>,
    pub(crate) history: Vec<StateTransition>,
    pub(crate) metadata_seen: Option<u64>,
    pub(crate) ping_sent: Option<u64>,
    pub(crate) ack_received: Option<u64>,
    pub(crate) ping_received: Option<u64>,
    pub(crate) suspect_since: Option<u64>,
    pub(crate) conn: Option<ConnType>,
    pub(crate) generation: u64,
    pub(crate) created: Option<u64>,
    pub(crate) last_send: Option<u64>,
    pub(crate) failure_at: Option<u64>,
    pub(crate) failure_reason: Option<String>,
    pub(crate) conn_at_last_use: Option<ConnType>,
}

pub(crate) struct Sub {
    pub(crate) label: String,
    pub(crate) pid: u32,
    pub(crate) cmdline: String,
    pub(crate) spawn_at: u64,
    /// When it exited, with its exit code or the signal that killed it.
    pub(crate) exit: Option<(u64, Option<i32>, Option<i32>)>,
}

/// What a relay server knows of its sessions.
#[derive(Default)]
pub(crate) struct RelayView {
    /// Open sessions: member index → relay wall time of the open.
    pub(crate) open: BTreeMap<usize, u64>,
    pub(crate) opens: u64,
    pub(crate) closes: u64,
    /// Bytes of closed sessions.
    pub(crate) bytes: (u64, u64),
    pub(crate) by_reason: BTreeMap<String, u64>,
}

pub(crate) struct ProbeSlot {
    pub(crate) target: &'static str,
    pub(crate) kind: ProbeKind,
    pub(crate) addr: &'static str,
    pub(crate) last_attempted: u64,
    pub(crate) last_outcome: ProbeOutcome,
    pub(crate) last_rtt: Option<u64>,
    pub(crate) last_error: Option<String>,
    pub(crate) attempts: u64,
    pub(crate) successes: u64,
}

pub(crate) struct NodeState {
    pub(crate) seq: u64,
    pub(crate) sink_seq: u64,
    pub(crate) snap_n: u64,
    pub(crate) pending: Vec<EventRecord>,
    pub(crate) boot: Option<Identity>,
    pub(crate) batches: Vec<Vec<EventRecord>>,
    pub(crate) snapshots: Vec<Snapshot>,
    pub(crate) finalize: Option<Finalize>,
    pub(crate) done: bool,
    pub(crate) hinted: bool,
    pub(crate) peers: BTreeMap<usize, PeerView>,
    pub(crate) relay_status: RelaySessionStatus,
    pub(crate) relay_changed: Option<u64>,
    pub(crate) home_relay: Option<String>,
    pub(crate) recent: VecDeque<SwimMessage>,
    pub(crate) subs: Vec<Sub>,
    pub(crate) probes: Vec<ProbeSlot>,
    pub(crate) relay: RelayView,
    /// Requests between `ObjectLoaded` and `StepCompleted`.
    pub(crate) in_flight: u32,
    /// Steps this node completed.
    pub(crate) steps: u64,
    /// Whether the stage was stopped.
    pub(crate) stopped: bool,
    pub(crate) rng: SplitMix64,
}

impl NodeState {
    pub(crate) fn new(n: usize) -> Self {
        let slot = |target, kind, addr| ProbeSlot {
            target,
            kind,
            addr,
            last_attempted: 0,
            last_outcome: ProbeOutcome::Pending,
            last_rtt: None,
            last_error: None,
            attempts: 0,
            successes: 0,
        };
        NodeState {
            seq: 0,
            sink_seq: 0,
            snap_n: 0,
            pending: Vec::new(),
            boot: None,
            batches: Vec::new(),
            snapshots: Vec::new(),
            finalize: None,
            done: false,
            hinted: false,
            peers: BTreeMap::new(),
            relay_status: RelaySessionStatus::Unknown,
            relay_changed: None,
            home_relay: None,
            recent: VecDeque::new(),
            subs: Vec::new(),
            relay: RelayView::default(),
            in_flight: 0,
            steps: 0,
            stopped: false,
            probes: vec![
                slot(ECHO_PROBE, ProbeKind::UdpEcho, ECHO_PROBE_ADDR),
                slot(RELAY_PROBE, ProbeKind::UdpRelay, RELAY_PROBE_ADDR),
            ],
            rng: SplitMix64::new(0x5eed_0000 + n as u64),
        }
    }

    pub(crate) fn receive(
        &mut self,
        kind: SwimMessageKind,
        peer: NodeIdHex,
        at_ms: u64,
        sequence: Option<u64>,
    ) {
        if self.recent.len() == SWIM_RING {
            self.recent.pop_front();
        }
        let mut message = SwimMessage::new(kind, peer, at_ms);
        message.sequence = sequence;
        self.recent.push_back(message);
    }
}

pub(crate) struct Run<'a> {
    pub(crate) specs: &'a [Spec],
    pub(crate) generation: Generation,
    pub(crate) nodes: Vec<NodeState>,
    pub(crate) queue: BinaryHeap<Reverse<(u64, u64, usize)>>,
    pub(crate) ops: Vec<Option<Step>>,
    pub(crate) finalize_recv: Option<u64>,
    pub(crate) assemble_at: Option<u64>,
    pub(crate) first_recv: Option<u64>,
    pub(crate) last_recv: Option<u64>,
    pub(crate) net: SplitMix64,
}

impl<'a> Run<'a> {
    pub(crate) fn new(specs: &'a [Spec], generation: Generation) -> Self {
        Run {
            specs,
            generation,
            nodes: (0..specs.len()).map(NodeState::new).collect(),
            queue: BinaryHeap::new(),
            ops: Vec::new(),
            finalize_recv: None,
            assemble_at: None,
            first_recv: None,
            last_recv: None,
            net: SplitMix64::new(0xc011_ec70_2000_0001),
        }
    }

    pub(crate) fn push(&mut self, step: Step) {
        let i = self.ops.len();
        self.queue.push(Reverse((step.t, i as u64, i)));
        self.ops.push(Some(step));
    }

    pub(crate) fn play(&mut self, steps: Vec<Step>) {
        for s in steps {
            self.push(s);
        }
        while let Some(Reverse((t, _, i))) = self.queue.pop() {
            if self.assemble_at.is_some_and(|a| t > a) {
                break;
            }
            let Some(step) = self.ops[i].take() else {
                continue;
            };
            let n = step.node;
            if self.nodes[n].done {
                continue;
            }
            // The oldest generation has no relay observability: its relay posts nothing.
            if n == RELAY && self.generation == Generation::Oldest {
                continue;
            }
            match step.op {
                Op::Boot => {
                    let identity = self.identity(n);
                    if self.post(n, t).is_some() {
                        self.nodes[n].boot = Some(identity);
                    }
                }
                Op::Emit(event) => self.record(n, t, event),
                Op::Touch(touch) => self.touch(n, t, touch),
                Op::Flush => self.flush(n, t),
                Op::Snapshot(trigger) => self.snapshot(n, t, trigger),
                Op::ClockSample(fields) => {
                    let node = &mut self.nodes[n];
                    node.sink_seq += 1;
                    node.pending.push(EventRecord::new(
                        self.specs[n].id,
                        node.sink_seq,
                        self.specs[n].wall(t),
                        custom(CustomPayload::ClockSample(fields)),
                    ));
                }
                Op::Finalize(reason) => {
                    let recv = t + self.specs[n].uplink + self.net.range(0, 3);
                    self.received(recv);
                    self.finalize_recv = Some(recv);
                    self.assemble_at = Some(recv + FINALIZE_WAIT + 38);
                    let mut finalize = Finalize::new();
                    finalize.exit_reason = Some(reason);
                    // A current emitter reports its dropped records (none here); the oldest
                    // generation's nodes did not count them.
                    if self.generation == Generation::Current {
                        finalize.diag_records_dropped = Some(0);
                    }
                    self.nodes[n].finalize = Some(finalize);
                    self.nodes[n].done = true;
                }
            }
        }
    }

    pub(crate) fn received(&mut self, recv: u64) {
        self.first_recv = Some(self.first_recv.map_or(recv, |f| f.min(recv)));
        self.last_recv = Some(self.last_recv.map_or(recv, |l| l.max(recv)));
    }

    /// A POST from node `n` at `t`: whether (and when) the collector stored it before assembly.
    /// Schedules the clock sample of the reply and answers a pending `snapshot_now` hint.
    pub(crate) fn post(&mut self, n: usize, t: u64) -> Option<u64> {
        let uplink = self.specs[n].uplink;
        let recv = t + uplink + self.net.range(0, 4);
        if self.assemble_at.is_some_and(|a| recv > a) {
            return None;
        }
        self.received(recv);
        let send = recv + self.net.range(1, 3);
        let reply = send + uplink + self.net.range(0, 4);
        self.push(Step {
            t: reply,
            node: n,
            op: Op::ClockSample(ClockSampleFields::new(
                self.specs[n].wall(t),
                T0 + recv,
                T0 + send,
            )),
        });
        if n != ORCH && self.finalize_recv.is_some_and(|f| recv > f) && !self.nodes[n].hinted {
            self.nodes[n].hinted = true;
            self.push(Step {
                t: reply + 1,
                node: n,
                op: Op::Snapshot(SnapshotTrigger::OnDemand),
            });
        }
        Some(recv)
    }

    pub(crate) fn flush(&mut self, n: usize, t: u64) {
        if self.nodes[n].pending.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut self.nodes[n].pending);
        if self.post(n, t).is_some() {
            self.nodes[n].batches.push(batch);
        }
    }

    pub(crate) fn snapshot(&mut self, n: usize, t: u64, trigger: SnapshotTrigger) {
        let snap = self.capture(n, t, trigger);
        self.nodes[n].snap_n += 1;
        if self.post(n, t).is_some() {
            self.nodes[n].snapshots.push(snap);
        }
    }

    pub(crate) fn record(&mut self, n: usize, t: u64, event: Event) {
        let w = self.specs[n].wall(t);
        self.apply(n, w, &event);
        let event = match self.generation {
            Generation::Current => event,
            Generation::Oldest => match self.oldest_event(n, event) {
                Some(event) => event,
                None => return,
            },
        };
        let node = &mut self.nodes[n];
        node.seq += 1;
        let seq = node.seq;
        let transition = matches!(event, Event::SwimTransition(_));
        node.pending
            .push(EventRecord::new(self.specs[n].id, seq, w, event));
        if transition {
            self.snapshot(n, t, SnapshotTrigger::Transition(format!("seq-{seq}")));
        }
    }

    pub(crate) fn run_id(&self) -> &'static str {
        match self.generation {
            Generation::Current => RUN_ID,
            Generation::Oldest => OLDEST_RUN_ID,
        }
    }

    pub(crate) fn index_of(&self, id: &NodeId) -> usize {
        self.specs.iter().position(|s| s.id == *id).unwrap_or(ORCH)
    }

    /// Updates node `n`'s view from one of its own events at wall time `w`.
    pub(crate) fn apply(&mut self, n: usize, w: u64, event: &Event) {
        let peer_of = |id: &NodeId| self.index_of(id);
        match event {
            Event::SwimTransition(e) => {
                let m = peer_of(&e.peer);
                let p = self.nodes[n].peers.entry(m).or_default();
                p.opinion = Some(e.to.clone());
                p.since = Some(w);
                p.history.push(StateTransition::new(
                    e.from.clone(),
                    e.to.clone(),
                    w,
                    e.reason.clone(),
                ));
                p.suspect_since = (e.to == PeerState::Suspect).then_some(w);
            }
            Event::DialStarted(e) => {
                let m = peer_of(&e.peer);
                self.nodes[n].peers.entry(m).or_default().dial_started = Some(w);
            }
            Event::DialOutcome(e) => {
                let m = peer_of(&e.peer);
                let p = self.nodes[n].peers.entry(m).or_default();
                p.dial_outcome = Some(
                    match &e.outcome {
                        DialResult::Success => "Success",
                        DialResult::Timeout => "Timeout",
                        DialResult::Refused => "Refused",
                        DialResult::NoRoute => "NoRoute",
                        DialResult::Error(_) => "Error",
                    }
                    .to_owned(),
                );
                p.dial_duration = Some(e.duration_ms);
                if e.outcome == DialResult::Success {
                    p.generation += 1;
                    p.created = Some(w);
                    p.last_outbound_ok = Some(w);
                    if p.conn.is_none() {
                        p.conn = Some(ConnType::Relay);
                    }
                }
            }
            Event::IrohConnTypeChanged(e) => {
                let m = peer_of(&e.peer);
                self.nodes[n].peers.entry(m).or_default().conn = Some(e.new.clone());
            }
            Event::ConnectionCacheInvalidated(e) => {
                let m = peer_of(&e.peer);
                let p = self.nodes[n].peers.entry(m).or_default();
                p.failure_at = Some(w);
                p.failure_reason = Some(e.reason.clone());
            }
            Event::MessageSent(e) => {
                let m = peer_of(&e.peer);
                let p = self.nodes[n].peers.entry(m).or_default();
                p.last_outbound_ok = Some(w);
                p.last_send = Some(w);
                p.conn_at_last_use = p.conn.clone();
            }
            Event::MessageReceived(e) => {
                let m = peer_of(&e.peer);
                self.nodes[n].peers.entry(m).or_default().last_inbound = Some(w);
            }
            Event::GossipReceived(e) => {
                let m = peer_of(&e.source_peer);
                self.nodes[n].peers.entry(m).or_default().last_inbound = Some(w);
            }
            Event::SwimProbeSent(e) if e.kind == SwimProbeKind::Direct => {
                let m = peer_of(&e.target);
                self.nodes[n].peers.entry(m).or_default().ping_sent = Some(w);
            }
            Event::SwimProbeAcked(e) => {
                let m = peer_of(&e.target);
                let hex = self.specs[m].hex.clone();
                let node = &mut self.nodes[n];
                let p = node.peers.entry(m).or_default();
                p.ack_received = Some(w);
                p.last_inbound = Some(w);
                p.last_outbound_ok = Some(w);
                let kind = if e.kind == SwimProbeKind::Direct {
                    SwimMessageKind::Ack
                } else {
                    SwimMessageKind::IndirectAck
                };
                node.receive(kind, hex, w, Some(e.sequence));
            }
            Event::SwimMetadataReceived(e) => {
                let m = peer_of(&e.peer);
                self.nodes[n].peers.entry(m).or_default().metadata_seen = Some(e.version);
            }
            Event::RelaySessionStateChanged(e) => {
                self.nodes[n].relay_status = e.to_status.clone();
                self.nodes[n].relay_changed = Some(w);
            }
            Event::RelayChanged(e) => {
                self.nodes[n].home_relay = e.new_url.clone();
            }
            Event::SubprocessSpawned(e) => self.nodes[n].subs.push(Sub {
                label: e.label.clone(),
                pid: e.pid,
                cmdline: e.command.clone(),
                spawn_at: w,
                exit: None,
            }),
            Event::SubprocessExited(e) => {
                if let Some(s) = self.nodes[n].subs.iter_mut().find(|s| s.pid == e.pid) {
                    s.exit = Some((w, e.exit_code, e.exit_signal));
                }
            }
            Event::RelaySessionOpened(e) => {
                let m = self
                    .specs
                    .iter()
                    .position(|s| s.hex == e.peer_node_id_hex)
                    .unwrap_or(ORCH);
                let relay = &mut self.nodes[n].relay;
                relay.open.insert(m, e.at_ms);
                relay.opens += 1;
            }
            Event::RelaySessionClosed(e) => {
                let m = self
                    .specs
                    .iter()
                    .position(|s| s.hex == e.peer_node_id_hex)
                    .unwrap_or(ORCH);
                let relay = &mut self.nodes[n].relay;
                relay.open.remove(&m);
                relay.closes += 1;
                relay.bytes.0 += e.bytes_rx;
                relay.bytes.1 += e.bytes_tx;
                *relay.by_reason.entry(e.close_reason.clone()).or_default() += 1;
            }
            Event::ObjectLoaded(_) => self.nodes[n].in_flight += 1,
            Event::StepCompleted(_) => {
                let node = &mut self.nodes[n];
                node.in_flight = node.in_flight.saturating_sub(1);
                node.steps += 1;
            }
            Event::StageStopped(_) => self.nodes[n].stopped = true,
            Event::ProbeSent(e) => {
                if let Some(p) = self.nodes[n].probes.iter_mut().find(|p| p.kind == e.kind) {
                    p.last_attempted = w;
                    p.attempts += 1;
                }
            }
            Event::ProbeReceived(e) => {
                if let Some(p) = self.nodes[n].probes.iter_mut().find(|p| p.kind == e.kind) {
                    p.last_outcome = e.outcome.clone();
                    p.last_rtt = e.rtt_ms;
                    p.last_error = match e.outcome {
                        ProbeOutcome::Ok => None,
                        ProbeOutcome::Refused => {
                            Some("Connection refused (os error 111)".to_owned())
                        }
                        _ => Some(format!("no reply within {PROBE_TIMEOUT} ms")),
                    };
                    if e.outcome == ProbeOutcome::Ok {
                        p.successes += 1;
                    }
                }
            }
            _ => {}
        }
    }

    pub(crate) fn touch(&mut self, n: usize, t: u64, touch: Touch) {
        let w = self.specs[n].wall(t);
        let (from, kind, sequence) = match touch {
            Touch::Ping { from, seq } => (from, SwimMessageKind::Ping, Some(seq)),
            Touch::PingReq { from, seq } => (from, SwimMessageKind::PingReq, Some(seq)),
            Touch::JoinRequest { from } => (from, SwimMessageKind::JoinRequest, None),
            Touch::JoinResponse { from, members } => {
                (from, SwimMessageKind::JoinResponse, Some(members))
            }
        };
        let hex = self.specs[from].hex.clone();
        let node = &mut self.nodes[n];
        let p = node.peers.entry(from).or_default();
        p.last_inbound = Some(w);
        if matches!(touch, Touch::Ping { .. }) {
            p.ping_received = Some(w);
        }
        node.receive(kind, hex, w, sequence);
    }

    /// The bundle of what the collector stored: each node's latest boot record, its event batches
    /// and snapshots in the order they arrived, its finalize record. The collector's time span is
    /// from the first POST it received to the last.
    pub(crate) fn into_bundle(self) -> BundleContents {
        let writer = BundleWriter::new(
            WriterKind::Sim,
            "diagwire-example",
            env!("CARGO_PKG_VERSION"),
        );
        let mut bundle = Writer::new(self.run_id(), writer);
        for (s, node) in self.specs.iter().zip(&self.nodes) {
            if let Some(boot) = &node.boot {
                bundle.boot(boot);
            }
            for batch in &node.batches {
                bundle.events(&s.hex, batch);
            }
            for snapshot in &node.snapshots {
                bundle.snapshot(snapshot);
            }
            if let Some(finalize) = &node.finalize {
                bundle.finalize(&s.hex, finalize);
            }
        }
        if let (Some(first), Some(last)) = (self.first_recv, self.last_recv) {
            bundle.collector_span(T0 + first, T0 + last);
        }
        let done = bundle.finish();
        assert!(
            done.problems.is_empty(),
            "the example's labels are safe and no file is added twice: {:?}",
            done.problems
        );
        let mut contents = done.contents;
        if self.generation == Generation::Oldest {
            // The oldest collector's manifest: no contract version, writer or vast.ai counts.
            let mut manifest = done.manifest;
            manifest.contract_version = None;
            manifest.writer = None;
            for node in &mut manifest.nodes {
                node.contract_version = None;
                node.vastai_records = None;
            }
            contents.insert_json(diagwire::layout::MANIFEST, &manifest);
        }
        contents
    }
}
