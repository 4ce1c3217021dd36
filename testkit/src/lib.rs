//! Test support for the workspace, kept out of the library crates: [`scenario`] generates the
//! bundles of a synthetic run that the tests and benchmarks of `diagwire-check` (and the CLI's
//! `check` and `parity` tests) write and read; [`orders`] archives one bundle with its members in
//! different orders; [`bench`] holds what the hand-run benchmarks share; [`proxy`] is a TCP proxy
//! that injects network faults by a seeded schedule between a client and a server.
//! The crate is a dev-dependency only and is never
//! published.

pub mod bench;
pub mod bundles;
pub mod orders;
pub mod proxy;
pub mod scenario;
