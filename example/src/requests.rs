//! Inference requests in the script: each request through orchestrator → stage-0 → stage-1 →
//! stage-2 → orchestrator, with its traced messages, per-stage steps and `pp.*` events, and the
//! response that times out during the relay outage.

use crate::RUN_ID;

use diagwire::v1::*;

use crate::script::*;
use crate::world::*;

impl Script<'_> {
    /// Inference requests through the pipeline; stage-2 answers the orchestrator.
    /// Returns the orchestrator's exit reason and when the last token arrived.
    pub(crate) fn requests(&mut self) -> (String, u64) {
        // The orchestrator pauses while its relay session is down and until every stage is alive.
        let mut starts = Vec::new();
        let mut t = self.barrier + 300;
        while t < self.specs[ORCH].relay_lost {
            starts.push(t);
            t += REQUEST_EVERY;
        }
        let mut t = self.recovered[ORCH].max(self.specs[ORCH].relay_back) + 1_000;
        while t + 2_500 < RUN_DONE {
            starts.push(t);
            t += REQUEST_EVERY;
        }
        let mut unanswered = Vec::new();
        let mut redial = true;
        let mut last_token = 0;
        for (i, &t0) in starts.iter().enumerate() {
            let rid = format!("req-{:04}", i + 1);
            let seq = i as u64 + 1;
            let object = 1_000 * seq;
            let mut t = t0;
            if t0 > RELAY_BACK && redial {
                // The orchestrator's cached connection to stage-0 was invalidated in the outage.
                redial = false;
                self.emit(t, ORCH, ConnectionCacheMiss::new(self.id(1)));
                self.emit(t + 1, ORCH, dial_started(self.id(1), 1));
                let d = self.rng.range(380, 520);
                self.dial_success(ORCH, 1, t + 1 + d, 1, d);
                t += d + 2;
            } else {
                self.cache_hit(ORCH, 1, t);
            }
            let size = 1_800 + self.rng.range(0, 400) as u32;
            let trace = |hop: u32| format!("{rid}/{hop}");
            self.emit(t, ORCH, PromptInjected::new(RUN_ID, EDGE0, object, seq));
            self.emit(
                t + 1,
                ORCH,
                traced(
                    message(true, self.id(1), "inference_request", size),
                    trace(0),
                    None,
                ),
            );
            t += 1 + lat(ORCH, 1);
            self.emit(
                t,
                1,
                traced(
                    message(false, self.id(ORCH), "inference_request", size),
                    trace(0),
                    None,
                ),
            );
            for k in 1..NODES {
                let stage = k as u32 - 1;
                let generation = self.loaded[k].map_or(1, |(_, g)| g);
                let inbound = EDGE0 + u64::from(stage);
                let ring = 10 * k as u64;
                self.emit(
                    t + 1,
                    k,
                    ObjectLoaded::new(
                        RUN_ID,
                        stage,
                        inbound,
                        ring,
                        object + u64::from(stage),
                        seq,
                        generation,
                    ),
                );
                let step = 100 * seq + u64::from(stage);
                let mut started = ExecuteStepStarted::new(RUN_ID, stage, step, generation);
                started.sequence = Some(seq);
                self.emit(t + 2, k, started);
                let compute = self.rng.range(330, 420);
                if k == 2 {
                    let depth = self.rng.range(0, 2) as u32;
                    self.emit(
                        t + 3,
                        k,
                        custom(CustomPayload::PpWorkerDispatch(
                            PpWorkerDispatchFields::new("forward", depth, rid.clone()),
                        )),
                    );
                    let worked = compute - 9;
                    self.emit(
                        t + 3 + worked,
                        k,
                        custom(CustomPayload::PpWorkerComplete(
                            PpWorkerCompleteFields::new(
                                worked as f64 - 0.25,
                                "forward",
                                rid.clone(),
                            ),
                        )),
                    );
                }
                t += compute;
                let mut done = StepCompleted::new(RUN_ID, stage, step, generation);
                done.sequence = Some(seq);
                self.emit(t, k, done);
                self.emit(
                    t + 1,
                    k,
                    ObjectProduced::new(
                        RUN_ID,
                        stage,
                        inbound + 1,
                        ring + 1,
                        object + u64::from(stage) + 1,
                        seq,
                        generation,
                    ),
                );
                if k == 3 {
                    let decode = 38.0 + self.rng.range(0, 16) as f64 / 4.0;
                    let token = 128_000 + self.rng.range(0, 2_000) as u32;
                    self.emit(
                        t + 2,
                        k,
                        custom(CustomPayload::PpTokenEmitted(PpTokenEmittedFields::new(
                            decode,
                            0,
                            rid.clone(),
                            token,
                        ))),
                    );
                    break;
                }
                self.cache_hit(k, k + 1, t + 2);
                self.emit(
                    t + 3,
                    k,
                    custom(CustomPayload::PpActivationSent(
                        PpActivationSentFields::new(262_144, stage, true, rid.clone(), stage + 1),
                    )),
                );
                self.emit(
                    t + 3,
                    k,
                    traced(
                        message(true, self.id(k + 1), "activations", 262_144),
                        trace(k as u32),
                        Some(trace(k as u32 - 1)),
                    ),
                );
                t += 3 + lat(k, k + 1);
                self.emit(
                    t,
                    k + 1,
                    traced(
                        message(false, self.id(k), "activations", 262_144),
                        trace(k as u32),
                        Some(trace(k as u32 - 1)),
                    ),
                );
                self.emit(
                    t,
                    k + 1,
                    custom(CustomPayload::PpActivationReceived(
                        PpActivationReceivedFields::new(
                            262_144,
                            stage,
                            true,
                            rid.clone(),
                            stage + 1,
                        ),
                    )),
                );
            }
            t += self.rng.range(20, 40);
            let bytes = 3_900 + self.rng.range(0, 700);
            self.cache_hit(3, ORCH, t);
            let (at, outcome) = if link_up(self.specs, 3, ORCH, t) {
                let at = t + 2 * lat(3, ORCH) + 3;
                let got = t + lat(3, ORCH);
                self.emit(
                    got,
                    ORCH,
                    traced(
                        message(false, self.id(3), "inference_response", bytes as u32),
                        trace(3),
                        Some(trace(2)),
                    ),
                );
                let mut received = InferenceResponseReceived::new(self.id(3), rid.clone(), bytes);
                received.trace_id = Some(trace(3));
                received.parent_trace_id = Some(trace(2));
                self.emit(got + 1, ORCH, received);
                self.emit(
                    got + 2,
                    ORCH,
                    TokenReceived::new(RUN_ID, LAST_EDGE, object + 3, seq),
                );
                last_token = got + 2;
                (at, InferenceSendOutcome::Success)
            } else {
                unanswered.push(rid.clone());
                let mut fault = FaultDetected::new(FaultReason::Timeout, FaultComponent::Transport);
                fault.run_id = Some(RUN_ID.to_owned());
                fault.stage_index = Some(2);
                fault.edge_id = Some(LAST_EDGE);
                fault.node_id_hex = Some(self.specs[ORCH].hex.clone());
                fault.detail = Some(format!(
                    "response to {rid} not acknowledged by the orchestrator within {SEND_TIMEOUT} ms"
                ));
                self.emit(t + SEND_TIMEOUT + 1, 3, fault);
                (t + SEND_TIMEOUT, InferenceSendOutcome::Timeout)
            };
            let mut sent = InferenceResponseSent::new(self.id(ORCH), rid.clone(), bytes, outcome);
            sent.trace_id = Some(trace(3));
            sent.parent_trace_id = Some(trace(2));
            self.emit(at, 3, sent);
        }
        let reason = format!(
            "pipeline finished: {} of {} requests answered ({}: no response)",
            starts.len() - unanswered.len(),
            starts.len(),
            unanswered.join(", ")
        );
        (reason, last_token)
    }
}
