//! The command-line tool's integration tests, as one test binary: each file of this folder is a
//! module (one concern each), `common` what they share. One binary rather than one per file: each
//! would link everything the tool links, and linking them was most of the suite's build.
//! `cargo test -p diagwire-cli --test suite journey` runs one file's tests.

mod common;

mod architecture;
mod behaviour;
mod closed_pipe;
mod convert_bounded;
mod dataset_writers;
mod exit_status;
mod fleet_quarantine;
mod fleet_report;
mod follow;
mod hostile_values;
mod journey;
mod json_outputs;
mod member_order;
mod one_verdict;
mod output_schemas;
mod query;
mod reading_hostile;
mod renamed_bundle;
mod replay;
mod review;
mod review_hostile;
mod review_snapshots;
mod serve;
mod upgrade;
mod validate;
mod writers;
