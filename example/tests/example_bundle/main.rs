//! The example bundles `n3-relay-flap` and `n3-relay-flap-oldest`: deterministic, valid file by
//! file, consistent with their manifests, telling their story, and shipped as generated.
//!
//! One module per concern: `wellformed` (each file on its own), `manifest`, `records` (framing),
//! `network` and `workload` (the run's story), `provenance` (absence), `oldest` (the oldest
//! generation) and `shipped` (the checked-in copies); `support` holds what they share.

mod manifest;
mod network;
mod oldest;
mod provenance;
mod records;
mod shipped;
mod support;
mod wellformed;
mod workload;
