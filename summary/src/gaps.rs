//! Why a section of the summary has no data: one [`Absence`] row per section and node that has
//! nothing to show, with the reason in words (no relay node, writers that predate an event, an
//! introspector not installed, no traffic on an instrumented transport).

use crate::model::{Absence, Summary};

/// The absence rows of a summary, given which event families the pass read.
pub(crate) fn absences(
    s: &Summary,
    swim_probes: bool,
    gossip: bool,
    closes: bool,
    messages: bool,
) -> Vec<Absence> {
    let mut out = Vec::new();
    let has_relay = s.nodes.values().any(|n| n.role.as_deref() == Some("relay"));
    let legacy = s
        .manifest
        .as_ref()
        .is_some_and(|m| m.contract_version.is_none());
    if !has_relay {
        out.push(Absence {
            section: "relay sessions",
            why: "no node of the run has the role `relay`, so nothing reported relay-side sessions (relay observability not configured, or a bundle from before it)".into(),
        });
    } else if !closes && s.relay_totals.is_empty() {
        out.push(Absence {
            section: "relay sessions",
            why: "the relay node posted neither a `relay_server` report nor a `RelaySessionClosed` event".into(),
        });
    }
    if !swim_probes {
        out.push(Absence {
            section: "probe RTT distribution",
            why: if legacy {
                "no `SwimProbeSent`/`Acked`/`TimedOut` events: the writers predate per-probe SWIM events".into()
            } else {
                "no `SwimProbeSent`/`Acked`/`TimedOut` events in the bundle".into()
            },
        });
    }
    if !gossip {
        out.push(Absence {
            section: "gossip receipts",
            why: "no `GossipReceived` events: the writers predate them, or nothing was gossiped"
                .into(),
        });
    }
    for n in s.nodes.values() {
        if n.snapshots > 0 && n.with_host == 0 {
            out.push(Absence {
                section: "kernel network drops",
                why: format!("`{}` posted no host block: its host introspector is not installed, or the host is not Linux", n.label),
            });
        } else if n.with_host > 0 && !s.drop_series.keys().any(|(node, _)| *node == n.label) {
            out.push(Absence {
                section: "kernel network drops",
                why: format!(
                    "`{}` posted host blocks without drop or error counters: its writer predates them",
                    n.label
                ),
            });
        }
        if n.snapshots > 0 && n.with_probes == 0 {
            out.push(Absence {
                section: "probe outcomes",
                why: format!(
                    "`{}` posted no probe block: no probe scheduler is installed",
                    n.label
                ),
            });
        }
        if !n.api_gaps.is_empty() {
            out.push(Absence {
                section: "iroh introspection",
                why: format!(
                    "`{}` could not ask its transport for {}",
                    n.label,
                    n.api_gaps
                        .iter()
                        .map(|g| format!("`{g}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        if n.boot.is_none() && n.listed {
            out.push(Absence {
                section: "hosts",
                why: format!("`{}` has no boot record", n.label),
            });
        }
    }
    if !messages {
        out.push(Absence {
            section: "bandwidth",
            why: "no `MessageSent`/`MessageReceived` events: no instrumented transport carried traffic".into(),
        });
    }
    if s.inference_total == 0 {
        out.push(Absence {
            section: "inference responses",
            why: "no `InferenceResponseSent` events: no request was answered in the run, or the writers predate the event".into(),
        });
    }
    out
}
