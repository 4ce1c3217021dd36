//! The oldest-generation variant: which events the oldest swactor generation writes (and how it
//! names the worker's start and exit), and what its snapshots leave out.

use diagwire::Json;
use serde_json::json;

use crate::script::*;

use diagwire::v1::*;

use crate::play::*;
use crate::world::*;

impl Run<'_> {
    /// The event as the oldest generation writes it, if it writes it at all.
    pub(crate) fn oldest_event(&self, n: usize, event: Event) -> Option<Event> {
        let stage_index = self.specs[n].stage;
        Some(match event {
            Event::MessageSent(mut m) => {
                m.trace_id = None;
                m.parent_trace_id = None;
                m.into()
            }
            Event::MessageReceived(mut m) => {
                m.trace_id = None;
                m.parent_trace_id = None;
                m.into()
            }
            Event::SubprocessSpawned(e) if e.label == "worker" => {
                custom(CustomPayload::WorkerStarting(Json(json!({
                    "command": e.command,
                    "stage_index": stage_index,
                }))))
            }
            Event::SubprocessExited(e) if e.label == "worker" => {
                let status = match (e.exit_code, e.exit_signal) {
                    (Some(code), _) => format!("exit status: {code}"),
                    (None, Some(9)) => "signal: 9 (SIGKILL)".to_owned(),
                    (None, Some(sig)) => format!("signal: {sig}"),
                    (None, None) => "unknown".to_owned(),
                };
                custom(CustomPayload::WorkerExited(Json(json!({
                    "python_traceback": null,
                    "stage_index": stage_index,
                    "status": status,
                    "stderr_tail": ["Killed"],
                    "uptime_ms": e.uptime_ms,
                }))))
            }
            Event::Custom(c) => match c.payload {
                CustomPayload::IrohApiMissing(mut f) => {
                    f.fields = oldest_gaps()
                        .iter()
                        .map(|g| g.as_ref().to_owned())
                        .collect();
                    custom(CustomPayload::IrohApiMissing(f))
                }
                CustomPayload::ClockSample(_)
                | CustomPayload::RegisterName(_)
                | CustomPayload::WorkerReady(_) => Event::Custom(c),
                _ => return None,
            },
            Event::Error(e) if e.component == "app_introspect" => return None,
            e @ (Event::SwimTransition(_)
            | Event::DialStarted(_)
            | Event::DialOutcome(_)
            | Event::IrohConnTypeChanged(_)
            | Event::RelayChanged(_)
            | Event::SwimMetadataSent(_)
            | Event::SwimMetadataReceived(_)
            | Event::ConnectionCacheHit(_)
            | Event::ConnectionCacheMiss(_)
            | Event::ConnectionCacheInvalidated(_)
            | Event::NodeMapUpdate(_)
            | Event::ProbeSent(_)
            | Event::ProbeReceived(_)
            | Event::Error(_)) => e,
            _ => return None,
        })
    }
}

/// Strips a snapshot body to what the oldest generation writes.
pub(crate) fn oldest_body(body: &mut SnapshotBody) {
    body.registry = None;
    body.relay_server = None;
    body.subprocess = None;
    body.app = None;
    body.actors = None;
    if let Some(iroh) = &mut body.iroh {
        iroh.iroh_version = None;
        iroh.relay_session = None;
        iroh.api_gaps = oldest_gaps();
        for peer in &mut iroh.peers {
            peer.conn_type_source = None;
        }
    }
    if let Some(net) = body.host.as_mut().and_then(|h| h.network.as_mut()) {
        net.udp_kernel_stats = None;
        for interface in &mut net.interfaces {
            interface.counters = None;
        }
    }
    if let Some(probes) = &mut body.probes {
        for probe in &mut probes.probes {
            probe.target_port = None;
            probe.relay_url = None;
        }
    }
}

/// The fixed five API gaps the oldest generation lists.
pub(crate) fn oldest_gaps() -> Vec<ApiGap> {
    all_gaps().into_iter().take(5).collect()
}
