//! Staging retention: which staged runs the collector deletes, by age and under a size cap, and
//! which it keeps (unfinished runs, runs with a clock ahead of now).
#![cfg(feature = "bundle")]

use diagwire::bundle::assemble::{RetentionPolicy, StagedRun, retention_plan};

const DAY_MS: u64 = 24 * 60 * 60 * 1000;
const NOW: u64 = 1_779_733_878_000;

/// A run last written `age_ms` before [`NOW`].
fn run(run_id: &str, age_ms: u64, bytes: u64, finalized: bool) -> StagedRun {
    StagedRun {
        run_id: run_id.to_owned(),
        last_write_unix_ms: NOW - age_ms,
        bytes,
        finalized,
    }
}

/// A run last written `ahead_ms` after [`NOW`], as a skewed clock can make it.
fn future_run(run_id: &str, ahead_ms: u64, bytes: u64) -> StagedRun {
    StagedRun {
        last_write_unix_ms: NOW + ahead_ms,
        ..run(run_id, 0, bytes, false)
    }
}

/// Keep runs `keep_days` days under a cap of `cap` bytes.
fn policy(keep_days: u64, cap: u64) -> RetentionPolicy {
    RetentionPolicy {
        keep_unfinalized_ms: keep_days * DAY_MS,
        disk_cap_bytes: cap,
    }
}

/// `name: [runs], policy => [run ids deleted, in order];`
macro_rules! retains {
    ($($name:ident: [$($run:expr),* $(,)?], $policy:expr => [$($deleted:expr),* $(,)?];)*) => {$(
        #[test]
        fn $name() {
            let deleted: &[&str] = &[$($deleted),*];
            assert_eq!(retention_plan(&[$($run),*], &$policy, NOW), deleted);
        }
    )*};
}

retains! {
    under_the_cap_no_run_younger_than_the_window_is_deleted: [
        run("a", 29 * DAY_MS, 10, false),
        run("b", 29 * DAY_MS, 10, true),
        run("c", DAY_MS, 10, false),
        run("d", 0, 10, true),
    ], policy(30, 40) => [];
    runs_are_kept_until_the_window_has_fully_elapsed: [
        run("just-young", 30 * DAY_MS - 1, 1, false),
        run("just-old", 30 * DAY_MS, 1, false),
    ], policy(30, 1 << 40) => ["just-old"];
    runs_older_than_the_window_are_deleted_whether_finalized_or_not: [
        run("old-finalized", 40 * DAY_MS, 1, true),
        run("old-unfinalized", 31 * DAY_MS, 1, false),
        run("young", DAY_MS, 1, false),
    ], policy(30, 1 << 40) => ["old-finalized", "old-unfinalized"];
    // 120 bytes, cap 50: the three oldest go, whatever their state, the newest stays.
    over_the_cap_runs_are_deleted_oldest_first_until_under_it: [
        run("newest", 0, 30, false),
        run("oldest", 3 * DAY_MS, 30, false),
        run("middle", 2 * DAY_MS, 30, true),
        run("older", 2 * DAY_MS + 1, 30, false),
    ], policy(30, 50) => ["oldest", "older", "middle"];
    exactly_at_the_cap_nothing_young_is_deleted: [
        run("a", DAY_MS, 25, false),
        run("b", 0, 25, false),
    ], policy(30, 50) => [];
    over_the_cap_runs_written_at_the_same_time_go_in_run_id_order: [
        run("run-c", DAY_MS, 10, false),
        run("run-a", DAY_MS, 10, false),
        run("run-b", DAY_MS, 10, false),
    ], policy(30, 15) => ["run-a", "run-b"];
    expired_and_over_cap_runs_are_listed_oldest_first: [
        run("young-big", DAY_MS, 100, false),
        run("expired", 60 * DAY_MS, 1, true),
        run("young-small", 0, 1, false),
        run("young-older", 2 * DAY_MS, 100, false),
    ], policy(30, 150) => ["expired", "young-older"];
    a_last_write_in_the_future_counts_as_young:
        [future_run("skewed", DAY_MS, 1)], policy(30, 10) => [];
}

#[test]
fn the_default_policy_keeps_staging_thirty_days_under_a_fifty_gib_cap() {
    let default = RetentionPolicy::default();
    assert_eq!(default.keep_unfinalized_ms, 30 * DAY_MS);
    assert_eq!(default.disk_cap_bytes, 50 << 30);
}
