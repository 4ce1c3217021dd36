//! The fleet dataset's integration tests, as one test binary: each file of this folder is a module
//! (one concern each). One binary rather than one per file: each would link DataFusion, arrow and
//! parquet. `cargo test -p diagwire-fleet --test suite evolution` runs one file's tests.

mod dataset;
mod evolution;
mod quarantine;
mod report;
