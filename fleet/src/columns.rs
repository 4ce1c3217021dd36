//! The dataset's columns: every table, its columns and every struct a column reaches, as plain
//! data of the types in `table.rs`. `cargo codegen` writes them from the schemas into
//! `generated/fleet/columns.rs` (machine-written, as everything under `generated/`), which this
//! module compiles in; `crate::arrow_schema` turns them into Arrow schemas.

#![allow(missing_docs)]

include!("../../generated/fleet/columns.rs");
