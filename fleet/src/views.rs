//! The shipped views, defined once: each is a `SELECT` in `fleet/views/<name>.sql`, compiled in
//! here for `diagwire query` and read from the same files by the DuckDB and Spark tests, so every
//! engine runs the same text. They use only SQL the three engines share (no JSON functions, no
//! list-to-rows function: a list's elements are read by position, as `list_positions` explains),
//! identifiers that are keywords double-quoted.

/// One view.
#[derive(Debug)]
pub struct View {
    /// Its name.
    pub name: &'static str,
    /// Its `SELECT`.
    pub sql: &'static str,
    /// Computed once when the session opens and held as one in-memory batch rather than
    /// re-planned into every query that names it: for `list_positions`, whose 10,000 rows
    /// DataFusion's cross join would otherwise hand on one row per batch, in every view that
    /// reads a list. The other engines define it as a view of the same text.
    pub materialized: bool,
}

/// Every shipped view; a view may use the ones before it.
pub const VIEWS: &[View] = &[
    View {
        name: "node_labels",
        sql: include_str!("../views/node_labels.sql"),
        materialized: false,
    },
    View {
        name: "list_positions",
        sql: include_str!("../views/list_positions.sql"),
        materialized: true,
    },
    View {
        name: "dials",
        sql: include_str!("../views/dials.sql"),
        materialized: false,
    },
    View {
        name: "swim_transitions",
        sql: include_str!("../views/swim_transitions.sql"),
        materialized: false,
    },
    View {
        name: "probe_rtt_samples",
        sql: include_str!("../views/probe_rtt_samples.sql"),
        materialized: false,
    },
    View {
        name: "probe_rtts",
        sql: include_str!("../views/probe_rtts.sql"),
        materialized: false,
    },
    View {
        name: "kernel_drops",
        sql: include_str!("../views/kernel_drops.sql"),
        materialized: false,
    },
    View {
        name: "relay_sessions",
        sql: include_str!("../views/relay_sessions.sql"),
        materialized: false,
    },
    View {
        name: "subprocesses",
        sql: include_str!("../views/subprocesses.sql"),
        materialized: false,
    },
];
