//! Each node's lifecycle in the script: boot (relay session, registration, host notices, the
//! periodic loops), the stages' workers and subprocesses, the probe scheduler's rounds, the run's
//! lifecycle up to the readiness barrier, and the teardown.

use diagwire::Json;
use serde_json::json;

use crate::RUN_ID;

use diagwire::v1::*;

use crate::script::*;
use crate::world::*;

impl Script<'_> {
    /// Boot, relay session, registration, subprocesses, host notices and the periodic loops.
    pub(crate) fn boot(&mut self, n: usize) {
        let specs = self.specs;
        let s = &specs[n];
        let b = s.boot;
        let end = self.end(n);
        let (relay_up, wall_reg, is_stage) = (s.relay_up, s.wall(b + 300), s.is_stage());
        let name = match s.stage {
            Some(i) => format!("n3/stage-{i}"),
            None => "n3/orchestrator".to_owned(),
        };
        let mut register =
            RegisterNameFields::new(name, s.actor_addr.clone(), s.hex.clone(), wall_reg);
        register.stage_index = s.stage;
        let meta_hash = s.meta_hash;
        self.at(b + 120, n, Op::Boot);
        let mut started = NodeStarted::new(s.hex.clone());
        started.run_id = Some(RUN_ID.to_owned());
        self.emit(b + 125, n, started);
        self.emit(
            b + 130,
            n,
            custom(CustomPayload::IrohApiMissing(IrohApiMissingFields::new(
                IROH_VERSION,
                all_gaps().iter().map(|g| g.as_ref().to_owned()).collect(),
                "iroh 0.96 exposes none of these; read them as could-not-ask, never as zero",
            ))),
        );
        self.emit(
            b + 140,
            n,
            relay_change(RelaySessionStatus::Unknown, RelaySessionStatus::Connecting),
        );
        self.emit(
            relay_up,
            n,
            relay_change(
                RelaySessionStatus::Connecting,
                RelaySessionStatus::Connected,
            ),
        );
        if n == ORCH {
            let mut changed = RelayChanged::new();
            changed.new_url = Some(RELAY_URL.to_owned());
            self.emit(relay_up + 3, n, changed);
        }
        if is_stage {
            self.emit(
                b + 260,
                n,
                ErrorEvent::new(
                    "host_introspect",
                    "nf_conntrack_count unreadable: No such file or directory (os error 2)",
                ),
            );
        }
        self.emit(b + 300, n, custom(CustomPayload::RegisterName(register)));
        self.emit(b + 310, n, SwimMetadataSent::new(1, meta_hash));
        if is_stage {
            self.subprocesses(n);
        }
        // Periodic snapshots every 5 s, batches about every second, probes every 10 s.
        let mut k = 1;
        loop {
            let t = b + 5_000 * k + self.rng.range(0, 3);
            if t >= end {
                break;
            }
            self.at(t, n, Op::Snapshot(SnapshotTrigger::Periodic));
            k += 1;
        }
        let mut t = b + 1_000;
        while t < end {
            self.at(t, n, Op::Flush);
            t += 1_000 + self.rng.range(0, 30);
        }
        let mut t = b + 1_500;
        while t < end {
            self.probe_round(n, t);
            t += PROBE_PERIOD;
        }
    }

    /// Each stage's weights and subprocesses. Stage-0 serves a shard baked into its image in the
    /// node process and spawns nothing. Stage-1 fetches its shard, and its Python worker is killed
    /// by the kernel's OOM killer while loading; the second worker loads and reports
    /// `worker_ready`. Stage-2 fetches its shard and serves it in process; its `gpu-probe`
    /// (`nvidia-smi`), which should answer within a second, hangs in the driver, so its GPU
    /// memory is not reported.
    pub(crate) fn subprocesses(&mut self, n: usize) {
        let specs = self.specs;
        let s = &specs[n];
        let i = s.stage.unwrap_or(0);
        let pid = s.pid;
        let spawn = s.boot + 400;
        if i == 0 {
            self.loaded[n] = Some((spawn + 1_000 + self.rng.range(0, 300), 1));
            return;
        }
        let fetch_cmd = format!(
            "/opt/venv/bin/python -m n3.fetch_shard --stage {i} --dest /workspace/shard-{i}"
        );
        let fetch_pid = pid + 4;
        let fetch_ms = 1_600 + self.rng.range(0, 600);
        self.emit(
            spawn,
            n,
            SubprocessSpawned::new("shard-fetch", fetch_pid, fetch_cmd.clone()),
        );
        let mut exited = SubprocessExited::new("shard-fetch", fetch_pid, fetch_cmd);
        exited.exit_code = Some(0);
        exited.uptime_ms = Some(fetch_ms);
        self.emit(spawn + fetch_ms, n, exited);
        self.downloads[n] = Some((spawn + 2, spawn + fetch_ms + 1));
        let fetched = spawn + fetch_ms;
        if i == 2 {
            self.loaded[n] = Some((fetched + 1_100 + self.rng.range(0, 300), 1));
            let probe_at = fetched + 1_500;
            let probe_cmd = "nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader";
            self.emit(
                probe_at,
                n,
                SubprocessSpawned::new("gpu-probe", pid + 40, probe_cmd),
            );
            self.emit(
                probe_at + 5_000,
                n,
                ErrorEvent::new(
                    "app_introspect",
                    "gpu-probe (nvidia-smi) has not answered within 5000 ms; AppState.gpu_mem_used_bytes and AppState.gpu_mem_total_bytes are not reported",
                ),
            );
            return;
        }
        let worker_cmd = format!(
            "/opt/venv/bin/python -m n3.worker --stage {i} --shard /workspace/shard-{i} --listen 127.0.0.1:7100"
        );
        let first_at = fetched + 120;
        let first_pid = pid + 31;
        self.emit(
            first_at,
            n,
            SubprocessSpawned::new("worker", first_pid, worker_cmd.clone()),
        );
        let killed_after = 1_050 + self.rng.range(0, 200);
        let mut killed = SubprocessExited::new("worker", first_pid, worker_cmd.clone());
        killed.exit_signal = Some(9);
        killed.uptime_ms = Some(killed_after);
        self.emit(first_at + killed_after, n, killed);
        let mut fault = FaultDetected::new(FaultReason::OutOfMemory, FaultComponent::GpuWorkerCtl);
        fault.run_id = Some(RUN_ID.to_owned());
        fault.stage_index = Some(i);
        fault.worker_generation = Some(1);
        fault.node_id_hex = Some(s.hex.clone());
        fault.detail = Some(
            "worker generation 1 killed by the OOM killer (signal 9) while loading; respawning with --max-batch 4"
                .to_owned(),
        );
        self.emit(first_at + killed_after + 3, n, fault);
        let worker_at = first_at + killed_after + 180;
        let worker_pid = first_pid + 3;
        self.emit(
            worker_at,
            n,
            SubprocessSpawned::new("worker", worker_pid, format!("{worker_cmd} --max-batch 4")),
        );
        let load_ms = 1_200 + self.rng.range(0, 600);
        self.emit(
            worker_at + load_ms,
            n,
            custom(CustomPayload::WorkerReady(Json(json!({
                "label": "worker",
                "pid": worker_pid,
                "stage_index": i,
                "model": format!("llama-3.1-8b-pp3-shard-{i}"),
                "load_ms": load_ms,
            })))),
        );
        self.loaded[n] = Some((worker_at + load_ms + 4, 2));
    }

    /// One round of the two outbound probes.
    pub(crate) fn probe_round(&mut self, n: usize, t: u64) {
        let uplink = self.specs[n].uplink;
        let echo_target = format!("{ECHO_PROBE} ({ECHO_PROBE_ADDR})");
        self.emit(t, n, probe_sent(&echo_target, ProbeKind::UdpEcho));
        let rtt = 2 * uplink + self.rng.range(1, 6);
        self.emit(
            t + rtt,
            n,
            probe_received(
                &echo_target,
                ProbeKind::UdpEcho,
                Some(rtt),
                ProbeOutcome::Ok,
            ),
        );
        let t = t + 20;
        let relay_target = format!("{RELAY_PROBE} ({RELAY_PROBE_ADDR})");
        self.emit(t, n, probe_sent(&relay_target, ProbeKind::UdpRelay));
        if n != ORCH {
            // vast.ai's edge drops the relay's UDP port: no answer at all.
            self.emit(
                t + PROBE_TIMEOUT,
                n,
                probe_received(
                    &relay_target,
                    ProbeKind::UdpRelay,
                    None,
                    ProbeOutcome::Timeout,
                ),
            );
        } else if (RELAY_DOWN..RELAY_BACK).contains(&t) {
            // The relay host is up but its server process is not: ICMP port unreachable.
            self.emit(
                t + 31,
                n,
                probe_received(
                    &relay_target,
                    ProbeKind::UdpRelay,
                    None,
                    ProbeOutcome::Refused,
                ),
            );
        } else {
            let rtt = 26 + self.rng.range(0, 9);
            self.emit(
                t + rtt,
                n,
                probe_received(
                    &relay_target,
                    ProbeKind::UdpRelay,
                    Some(rtt),
                    ProbeOutcome::Ok,
                ),
            );
        }
    }

    /// The run's lifecycle up to the readiness barrier: the pool, the plan, each stage's weights
    /// and edges, each stage ready, then the barrier.
    // Node indexes address several per-node tables at once, not one slice.
    #[allow(clippy::needless_range_loop)]
    pub(crate) fn readiness(&mut self) {
        let specs = self.specs;
        for k in 0..NODES {
            let at = self.alive_at[k]
                .iter()
                .flatten()
                .min()
                .copied()
                .unwrap_or(specs[k].boot + 1_000);
            let mut available = NodeAvailable::new(specs[k].hex.clone());
            available.run_id = Some(RUN_ID.to_owned());
            self.emit(at + 5, k, available);
        }
        let pool = (1..NODES)
            .filter_map(|k| self.alive_at[ORCH][k])
            .max()
            .unwrap_or(0)
            + 30;
        let hexes = (0..NODES).map(|k| specs[k].hex.clone()).collect();
        self.emit(pool, ORCH, PoolReady::new(RUN_ID, hexes));
        self.emit(pool + 10, ORCH, RunPlanned::new(RUN_ID, 3));
        for k in 1..NODES {
            let stage = k as u32 - 1;
            self.emit(
                pool + 10 + k as u64,
                ORCH,
                StageProvisionStarted::new(RUN_ID, stage, specs[k].hex.clone()),
            );
        }
        for (edge, ring) in [(EDGE0, 1), (LAST_EDGE, 2)] {
            self.emit(pool + 20, ORCH, EdgeProvisionStarted::new(RUN_ID, edge));
            let ready = pool + 20 + 2 * lat(ORCH, if edge == EDGE0 { 1 } else { 3 }) + 30;
            self.emit(ready, ORCH, EdgeReady::new(RUN_ID, edge, ring));
        }
        let mut barrier = 0;
        for k in 1..NODES {
            let stage = k as u32 - 1;
            if let Some((from, to)) = self.downloads[k] {
                self.emit(from, k, WeightsDownloadStarted::new(RUN_ID, stage));
                self.emit(to, k, WeightsDownloaded::new(RUN_ID, stage));
            }
            let (loaded, generation) = self.loaded[k].unwrap_or((pool, 1));
            self.emit(loaded, k, WeightsLoaded::new(RUN_ID, stage, generation));
            let provisioned = pool + 10 + k as u64 + lat(ORCH, k);
            let mut ready_at = loaded;
            for (j, edge) in [EDGE0 + u64::from(stage), EDGE0 + u64::from(stage) + 1]
                .into_iter()
                .enumerate()
            {
                let mut started = EdgeProvisionStarted::new(RUN_ID, edge);
                started.stage_index = Some(stage);
                let at = provisioned + 5 + j as u64;
                self.emit(at, k, started);
                let ready = at + 60 + self.rng.range(0, 80);
                let mut done = EdgeReady::new(RUN_ID, edge, 10 * k as u64 + j as u64);
                done.stage_index = Some(stage);
                self.emit(ready, k, done);
                ready_at = ready_at.max(ready);
            }
            let ready = ready_at + 30;
            self.emit(ready, k, StageReady::new(RUN_ID, stage));
            barrier = barrier.max(ready + lat(k, ORCH) + 20);
        }
        self.emit(barrier, ORCH, ReadinessBarrierPassed::new(RUN_ID));
        self.barrier = barrier;
    }

    /// The run completes after its last token; the orchestrator stops every stage and reports
    /// the run torn down once each stage stopped.
    pub(crate) fn teardown(&mut self, last_token: u64) {
        let done = last_token + 60;
        self.emit(done, ORCH, RunCompleted::new(RUN_ID));
        let mut torn = done;
        for k in 1..NODES {
            let stage = k as u32 - 1;
            let sent = done + 10 + k as u64;
            self.emit(
                sent,
                ORCH,
                StopRunSent::new(RUN_ID, stage, self.specs[k].hex.clone()),
            );
            let stopped = sent + lat(ORCH, k) + 120 + self.rng.range(0, 150);
            self.emit(stopped, k, StageStopped::new(RUN_ID, stage));
            torn = torn.max(stopped + lat(k, ORCH) + 300);
        }
        self.emit(torn, ORCH, RunTornDown::new(RUN_ID));
    }
}
