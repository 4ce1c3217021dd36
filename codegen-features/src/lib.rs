//! The generator's output for every feature schema of `codegen/tests/features/`, compiled.
//!
//! `cargo codegen` renders each feature schema on its own into `src/features/<stem>.rs` (the same
//! text as the snapshot in `codegen/tests/snapshots/`), so a snapshot that changes must still
//! compile, and `tests/behaviour.rs` exercises each construct's wire behaviour through these types.

#[rustfmt::skip]
pub mod features;
