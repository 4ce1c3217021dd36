//! The `diagwire` tool's library half: what the subcommands do, beside the library users depend on.
//!
//! [`upgrade`] converts the simulator's prod-shape directory into a contract bundle. A program that
//! only reads or writes records does not need it, so it lives here rather than in `diagwire`.

pub mod upgrade;
