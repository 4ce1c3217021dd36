//! The compatibility gate's tests, as one test binary: each file of this folder is a module (one
//! concern each: the cross-release matrix, preservation, the golden bundles, the wire fixtures, the
//! binary codecs, the fuzz corpus replayed). One binary rather than one per file: each would link
//! everything the library links. `released_constructors/` stays a binary of its own (generated).
//! `cargo test -p diagwire-compat-tests --test suite compat_matrix` runs one file's tests.

mod arbitrary_records;
mod compat_matrix;
mod event_mirror;
mod fuzz_replay;
mod golden_bundles;
mod honesty;
mod legacy_mirror;
mod preservation;
mod proto_codecs;
mod proto_matrix;
mod wire_fixtures;
