//! The relay server node: its own reports in the script (sessions opened and closed, the listener
//! restart) and its snapshot, which holds only its identity and `relay_server` block.

use crate::RUN_ID;
use crate::snapshot::host_state;

use diagwire::v1::*;

use crate::play::*;
use crate::script::*;
use crate::world::*;

impl Script<'_> {
    /// The relay server: its boot and loops, a session per member, every session closed by the
    /// relay when its listener restarts at `RELAY_DOWN`, reopened when it is back, and the
    /// orchestrator's closed by the orchestrator when its process exits.
    pub(crate) fn relay_server(&mut self) {
        let n = RELAY;
        self.at(120, n, Op::Boot);
        let mut k = 1;
        loop {
            let t = 5_000 * k + self.rng.range(0, 3);
            if t >= STAGE_END {
                break;
            }
            self.at(t, n, Op::Snapshot(SnapshotTrigger::Periodic));
            k += 1;
        }
        let mut t = 1_000;
        while t < STAGE_END {
            self.at(t, n, Op::Flush);
            t += 2_000 + self.rng.range(0, 30);
        }
        let specs = self.specs;
        let mut closes = Vec::new();
        for m in 0..NODES {
            let s = &specs[m];
            let hex = s.hex.clone();
            let opened = s.relay_up - RELAY_LAT[m];
            self.emit(
                opened,
                n,
                RelaySessionOpened::new(hex.clone(), specs[n].wall(opened)),
            );
            let closed = RELAY_DOWN + 3 * m as u64;
            closes.push((
                closed,
                m,
                opened,
                RelayCloseInitiator::Relay,
                RELAY_CLOSE_REASON,
            ));
            let reopened = s.relay_back - RELAY_LAT[m];
            self.emit(
                reopened,
                n,
                RelaySessionOpened::new(hex, specs[n].wall(reopened)),
            );
            if m == ORCH {
                closes.push((
                    ORCH_EXIT + RELAY_LAT[m],
                    m,
                    reopened,
                    RelayCloseInitiator::Peer,
                    "client_closed",
                ));
            }
        }
        for (closed, m, opened, initiator, reason) in closes {
            let (rx, tx) = relay_bytes(m, closed - opened);
            self.emit(
                closed,
                n,
                RelaySessionClosed::new(
                    specs[m].hex.clone(),
                    specs[n].wall(opened),
                    specs[n].wall(closed),
                    closed - opened,
                    initiator,
                    reason,
                    rx,
                    tx,
                ),
            );
        }
        self.emit(
            RELAY_DOWN + 40,
            n,
            ErrorEvent::new(
                "relay_server",
                "listener restart for certificate rotation: bind 0.0.0.0:443: Address in use (os error 98); retrying every 2 s",
            ),
        );
    }
}

impl Run<'_> {
    /// The relay server's snapshot: no SWIM, iroh endpoint or probes, its sessions instead.
    pub(crate) fn capture_relay(&mut self, t: u64, trigger: SnapshotTrigger) -> Snapshot {
        let n = RELAY;
        let s = &self.specs[n];
        let w = s.wall(t);
        let identity = self.identity(n);
        let node = &mut self.nodes[n];
        let age = t.saturating_sub(s.boot);
        let relay = &node.relay;
        let (mut rx, mut tx) = relay.bytes;
        for (&m, &opened) in &relay.open {
            let (r, x) = relay_bytes(m, w.saturating_sub(opened));
            rx += r;
            tx += x;
        }
        let mut server =
            RelayServer::new(relay.open.len() as u64, relay.opens, relay.closes, rx, tx);
        server.counters_source = Some(ValueSource::Relay);
        server.closes_by_reason = relay
            .by_reason
            .iter()
            .map(|(r, c)| (r.clone(), *c))
            .collect();
        let mut process = ProcessStats::new();
        process.rss_bytes =
            Some(21_500_000 + relay.open.len() as u64 * 180_000 + node.rng.range(0, 40_000));
        process.vm_size_bytes = Some(612_000_000);
        process.open_fd_count = Some(19 + relay.open.len() as u64 * 2);
        process.cpu_ms = Some(age * 4 / 100 + 60);
        process.tokio = Some(TokioStats::new(TokioFlavor::MultiThread));
        process.captured_at_ms = w - 1;
        let scraped = w - node.rng.range(20, 45);
        let mut body = SnapshotBody::new(Vec::new());
        body.host = Some(host_state(s, n, t, scraped));
        body.process = Some(process);
        body.relay_server = Some(server);
        let snapshot_id = format!("{}-{}", s.short(), node.snap_n);
        let mut snapshot = Snapshot::new(identity, RUN_ID, snapshot_id, w, node.seq, trigger, body);
        snapshot.diag_records_dropped = Some(0);
        snapshot
    }
}
