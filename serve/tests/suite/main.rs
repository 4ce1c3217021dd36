//! The collector's integration tests, as one test binary: each file of this folder is a module (one
//! concern each), `common` (beside this folder, shared with `node_killed`, which has a main of its
//! own) what they share. One binary rather than one per file: each would link everything the
//! collector links, and linking them was most of the suite's build. `cargo test -p
//! diagwire-serve --test suite bounded` runs one file's tests.

#[path = "../common/mod.rs"]
mod common;

mod bounded;
mod crash;
mod declared;
mod dedupe;
mod door;
mod exactly_once;
mod hostile;
mod live;
mod observe;
mod quarantine;
mod replay;
mod replies;
