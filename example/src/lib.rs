//! The example bundles: `n3-relay-flap`, a deterministic, realistic run built from the contract
//! types, and `n3-relay-flap-oldest`, the same run as the oldest swactor generation records it.
//!
//! The run has a locally launched orchestrator, three pipeline stages on vast.ai rentals
//! (stage-0 in Germany, stage-1 in the Netherlands, stage-2 in the US, whose clock runs 1.3 s
//! ahead) and the iroh relay server they share, which reports its own sessions (role `relay`).
//! The orchestrator sits behind a NAT, so it reaches the stages only through the relay; the
//! stages reach each other directly.
//!
//! What happens, in collector time (run-relative seconds):
//!
//! * 0–13 s: the relay and the orchestrator boot, the stages at 6–8 s (host context in every boot
//!   record; stage-2's rental id was not forwarded, so it is only in `container_id`). Relay
//!   sessions open and go `unknown → connecting → connected`; the stages join through the
//!   orchestrator and dial each other (relayed first, then hole-punched to direct), each dial
//!   with its QUIC handshake. The run's lifecycle follows: pool ready, run planned, stages
//!   provisioned, weights loaded, edges ready, stages ready, the readiness barrier. Stage-0 serves
//!   a shard baked into its image and spawns nothing; stage-1 fetches its shard, its first Python
//!   worker is killed by the OOM killer (signal 9, a `fault_detected`) and the second reports
//!   `worker_ready`; stage-2 fetches its shard and serves it in process, and its `gpu-probe`
//!   (`nvidia-smi`) hangs, so its app block declares the GPU memory gaps.
//! * 13–21 s: inference requests flow orchestrator → stage-0 → stage-1 → stage-2 → orchestrator
//!   (`prompt_injected`, per-stage steps and objects, `pp.*` events, traced messages).
//! * 21 s: the relay restarts its listener for a certificate rotation and cannot bind it again
//!   until 35.5 s: it closes every session (`RelaySessionClosed`, initiator `relay`). Every
//!   node's relay session flips `connected → disconnected → connecting`; the orchestrator's
//!   `udp_relay` probe is refused (the stages' always times out). Stage-2's response to request 3
//!   times out (`InferenceResponseSent` with `send_outcome: timeout`, a `fault_detected`). The
//!   orchestrator's connections to the stages are lost; the stages' redials to the orchestrator
//!   time out (`DialOutcome: Timeout`) while the stages keep probing each other directly. SWIM
//!   probes across the relay time out, and every relay-only peer goes `Suspect`, then `Dead`,
//!   each transition with its `Transition` snapshot.
//! * 35.5 s: the relay is back; sessions reopen and reconnect, the pending dials succeed,
//!   dead-member reprobes are acked and the peers come back `Alive`; requests resume about 38 s.
//! * About 50 s: the run completes; the orchestrator stops the stages and reports the run torn
//!   down. At 53 s it takes an on-demand snapshot, flushes, posts its finalize and exits (the
//!   relay sees its session closed by the peer); the stages see their connections to it closed
//!   and redial, and those dials are still in flight when the collector assembles the bundle 5 s
//!   later, after the stages answered its `snapshot_now` hint.
//!
//! Each node posts an event batch about every second (with `clock_sample` records of the previous
//! replies, which reuse the sink's own sequence numbers as swactor's do) and a periodic snapshot
//! every 5 s. The SWIM recent-messages ring is cut to its last 6 entries (swactor keeps 64) to keep
//! the bundle small.
//!
//! The records are modelled, not observed, so the bundle's writer is a simulator
//! ([`WriterKind::Sim`], `diagwire-example`). What the collector stored goes through
//! [`diagwire::bundle::Writer`], which lays the files out, writes them as the collector does and
//! derives `MANIFEST.json` from them; this crate only decides what each node posted and when.
//!
//! Generation is a pure function: no clock, no randomness source but a fixed-seed PRNG, no I/O.

use diagwire::bundle::BundleContents;

mod lifecycle;
mod links;
mod oldest;
mod play;
mod relay;
mod requests;
mod script;
mod snapshot;
mod swim;
mod world;

use play::Run;
use script::Script;
use world::specs;

pub use world::bytes32;

/// The run id of the example bundle, which is also the name of its directory.
pub const RUN_ID: &str = "n3-relay-flap";

/// The run id (and directory) of the same run as the oldest swactor generation records it.
pub const OLDEST_RUN_ID: &str = "n3-relay-flap-oldest";

/// Builds the example bundle: an orchestrator, three stages and their relay through a relay
/// outage, with its `MANIFEST.json`. The same bytes on every call.
pub fn n3_relay_flap() -> BundleContents {
    generate(Generation::Current)
}

/// The same run as the oldest swactor generation writes it (see `docs/legacy-wire.md`): its 14
/// event types only (no relay-session, gossip, subprocess, per-probe SWIM, inference-response,
/// lifecycle or handshake events, no `pp.*` kinds; the worker supervisor's `worker_starting` and
/// `worker_exited` instead of subprocess events), snapshots without the blocks and fields later
/// generations added (`relay_server`, `subprocess`, `app`, `actors`, the iroh block's version and
/// relay session, per-peer `conn_type_source`, kernel counters), the fixed five API gaps, no relay
/// node, and a manifest without a contract version, writer or vast.ai counts.
pub fn n3_relay_flap_oldest() -> BundleContents {
    generate(Generation::Oldest)
}

/// Which swactor generation writes the records.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Generation {
    /// Every record kind and field of the current contract.
    Current,
    /// The oldest generation's 14 event types and snapshot blocks.
    Oldest,
}

fn generate(generation: Generation) -> BundleContents {
    let specs = specs();
    let steps = Script::new(&specs).build();
    let mut run = Run::new(&specs, generation);
    run.play(steps);
    run.into_bundle()
}
