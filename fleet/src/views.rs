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

/// A view whose `SELECT` is `fleet/views/<name>.sql`; `materialized` as [`View::materialized`].
macro_rules! view {
    ($name:literal) => {
        view!($name, false)
    };
    ($name:literal, $materialized:literal) => {
        View {
            name: $name,
            sql: include_str!(concat!("../views/", $name, ".sql")),
            materialized: $materialized,
        }
    };
}

/// Every shipped view; a view may use the ones before it.
pub const VIEWS: &[View] = &[
    view!("node_labels"),
    view!("list_positions", true),
    view!("dials"),
    view!("swim_transitions"),
    view!("probe_rtt_samples"),
    view!("probe_rtts"),
    view!("kernel_drops"),
    view!("relay_sessions"),
    view!("subprocesses"),
    view!("quarantined_per_node"),
];
