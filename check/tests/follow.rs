//! Following a directory while it is written: what lands is read once, in order; a half-written
//! file is waited for, not misread; what stays broken, links and special files are reported,
//! located, never followed. Each case writes into a fresh directory between polls and checks what
//! the monitor was given.

use std::path::Path;
use std::time::Duration;

use diagwire::NodeId;
use diagwire::bundle::read::Limits;
use diagwire::v1::{EventRecord, Identity, ReadinessBarrierPassed};
use diagwire_check::follow::Follower;
use diagwire_check::{CheckReport, Monitor, Rulebook};

const SETTLE: Duration = Duration::from_millis(150);

fn node() -> (NodeId, String) {
    let id = NodeId::from([9; 32]);
    let hex = id.to_hex().0;
    (id, hex)
}

fn boot_json() -> String {
    let (id, _) = node();
    serde_json::to_string(&Identity::new(
        id.to_hex(),
        id.short(),
        "stage",
        "run",
        1,
        0,
    ))
    .unwrap()
}

fn events_json(n: u64) -> String {
    let (id, _) = node();
    let batch: Vec<EventRecord> = (1..=n)
        .map(|i| EventRecord::new(id, i, 10 + i, ReadinessBarrierPassed::new("run")))
        .collect();
    serde_json::to_string(&batch).unwrap()
}

/// One step of a case: write something, or wait, then poll.
enum Step {
    /// Write `text` at the staging path `<node>/<name>` in place (not renamed: as a careless writer
    /// would).
    Write(&'static str, String),
    /// Make `<node>/<name>` a symbolic link to `target`.
    Link(&'static str, &'static str),
    /// Make `<node>/<name>` a fifo (no writer ever opens it: opening it to read would block).
    Fifo(&'static str),
    /// Let the settle time pass.
    Settle,
}

/// Runs `steps`, polling after each, then ends the follow; returns the report.
fn follow(dir: &Path, steps: Vec<Step>) -> CheckReport {
    let rules = Rulebook::builtin();
    let mut monitor = Monitor::new(&rules, "run");
    let mut follower = Follower::new(dir, Limits::default()).unwrap();
    let (_, hex) = node();
    let node_dir = dir.join(&hex);
    std::fs::create_dir_all(&node_dir).unwrap();
    for step in steps {
        match step {
            Step::Write(name, text) => std::fs::write(node_dir.join(name), text).unwrap(),
            Step::Link(name, target) => {
                std::os::unix::fs::symlink(target, node_dir.join(name)).unwrap()
            }
            Step::Fifo(name) => {
                let made = std::process::Command::new("mkfifo")
                    .arg(node_dir.join(name))
                    .status()
                    .unwrap();
                assert!(made.success(), "mkfifo");
            }
            Step::Settle => std::thread::sleep(SETTLE + Duration::from_millis(50)),
        }
        follower.poll(&mut monitor, SETTLE);
    }
    follower.finish(&mut monitor);
    monitor.finish()
}

/// The case's report: `records` records read, `unreadable` problems, each problem's location
/// naming `located` when given.
#[track_caller]
fn expect(steps: Vec<Step>, records: u64, unreadable: u64, located: Option<&str>) {
    let tmp = tempfile::tempdir().unwrap();
    let report = follow(tmp.path(), steps);
    assert_eq!(
        (report.records, report.unreadable),
        (records, unreadable),
        "{}",
        report.to_markdown()
    );
    if let Some(name) = located {
        let r = report.rule("bundle.readable").unwrap();
        assert!(
            r.findings.iter().all(|f| f.location.file.ends_with(name)),
            "{}",
            report.to_markdown()
        );
    }
}

#[test]
fn files_that_land_are_read_once() {
    expect(
        vec![
            Step::Write("boot-000001.json", boot_json()),
            Step::Write("events-000001.json", events_json(3)),
            Step::Settle,
        ],
        4,
        0,
        None,
    );
}

#[test]
fn a_half_written_file_is_waited_for_then_read_whole() {
    let whole = events_json(5);
    let half = whole[..whole.len() / 2].to_owned();
    expect(
        vec![
            Step::Write("boot-000001.json", boot_json()),
            Step::Write("events-000001.json", half),
            Step::Write("events-000001.json", whole),
        ],
        6,
        0,
        None,
    );
}

#[test]
fn a_file_that_stays_broken_is_reported_after_the_settle_time() {
    expect(
        vec![
            Step::Write("boot-000001.json", boot_json()),
            Step::Write("events-000001.json", "[{\"node_id\":".to_owned()),
            Step::Settle,
            Step::Settle,
        ],
        1,
        1,
        Some("events-000001.json"),
    );
}

#[test]
fn one_bad_event_costs_only_itself() {
    let mut batch: Vec<serde_json::Value> = serde_json::from_str(&events_json(3)).unwrap();
    batch[1]["monotonic_seq"] = serde_json::json!("two");
    expect(
        vec![
            Step::Write("boot-000001.json", boot_json()),
            Step::Write("events-000001.json", serde_json::to_string(&batch).unwrap()),
        ],
        3,
        1,
        Some("events-000001.json"),
    );
}

#[test]
fn a_link_where_a_record_file_belongs_is_reported_and_not_followed() {
    expect(
        vec![
            Step::Write("boot-000001.json", boot_json()),
            Step::Link("events-000001.json", "/etc/passwd"),
            Step::Settle,
        ],
        1,
        1,
        Some("events-000001.json"),
    );
}

#[test]
fn a_fifo_where_a_record_file_belongs_is_reported_and_never_blocks() {
    expect(
        vec![
            Step::Write("boot-000001.json", boot_json()),
            Step::Fifo("events-000001.json"),
            Step::Settle,
        ],
        1,
        1,
        Some("events-000001.json"),
    );
}

#[test]
fn names_outside_the_layout_are_not_read() {
    expect(
        vec![
            Step::Write("boot-000001.json", boot_json()),
            Step::Write(".events-000001.json.partial", "[".to_owned()),
            Step::Write("notes.txt", "hello".to_owned()),
            Step::Settle,
        ],
        1,
        0,
        None,
    );
}

/// A staging root: what lands under it, in order (`<run>/<node>/<name>`), and after each landing
/// whether the follower is still waiting for a run and which run it follows.
#[test]
fn a_staging_root_is_waited_on_until_its_first_run_appears() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("staging");
    std::fs::create_dir_all(&root).unwrap();
    let (_, hex) = node();
    let rules = Rulebook::builtin();
    let mut monitor = Monitor::new(&rules, "r1");
    let mut follower = Follower::new(&root, Limits::default()).unwrap();
    let steps: [(&str, String, Option<&str>); 3] = [
        // A run directory and a writer's temporary name: nothing of a run yet.
        ("r1/.boot-000001.json.partial", boot_json(), None),
        ("r1/boot-000001.json", boot_json(), Some("r1")),
        ("r1/events-000001.json", events_json(2), Some("r1")),
    ];
    for (rel, text, run) in steps {
        let (dir, name) = rel.split_once('/').unwrap();
        let at = root.join(dir).join(&hex);
        std::fs::create_dir_all(&at).unwrap();
        std::fs::write(at.join(name), text).unwrap();
        follower.poll(&mut monitor, SETTLE);
        assert_eq!(follower.waiting(), run.is_none(), "after {rel}");
        if let Some(run) = run {
            assert_eq!(follower.root(), root.join(run), "after {rel}");
        }
    }
    follower.finish(&mut monitor);
    assert_eq!(
        monitor.finish().records,
        3,
        "the boot record and two events"
    );
    // Two runs appearing at once cannot be told apart: the follower says so.
    let two = tmp.path().join("two");
    for run in ["a", "b"] {
        let at = two.join(run).join(&hex);
        std::fs::create_dir_all(&at).unwrap();
        std::fs::write(at.join("boot-000001.json"), boot_json()).unwrap();
    }
    let err = Follower::new(&two, Limits::default()).unwrap_err();
    assert!(err.contains("holds 2 runs"), "{err}");
}
