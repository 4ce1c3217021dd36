//! The fleet dataset's writers (`diagwire export`, `diagwire compact`), tried as a crash, a
//! second operator and an attacker would: a writer killed before each of its steps in turn
//! leaves the state before or after its change, and the next writer finishes it; writers started
//! together end as if they ran one after the other; a link planted anywhere under the dataset is
//! never followed; an unreadable part is reported and nothing half done; the counts a message
//! gives are records; a query reads exactly the parts the index lists.
//!
//! The rows a reader sees are counted from the `run_id` column of every listed part
//! ([`listed_rows`], milliseconds) rather than by `diagwire query` (DataFusion, seconds in a debug
//! build) after each of the hundreds of kills; [`read_both_ways`] ties the two on the states
//! before and after each change and on a killed writer's leftovers, and
//! `a_query_reads_exactly_the_parts_the_index_lists` shows they read the same files.

#![cfg(feature = "fleet")]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::common;
use common::{copy_tree, repo, text};
use diagwire_fleet::datafusion::arrow::array::{Array, AsArray};
use diagwire_fleet::datafusion::parquet::arrow::ProjectionMask;
use diagwire_fleet::datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

/// What any one command may take at most (a debug build, two cores shared).
const LIMIT: Duration = Duration::from_secs(120);

fn example() -> String {
    repo()
        .join("examples/bundles/n3-relay-flap")
        .to_string_lossy()
        .into_owned()
}

/// Runs `diagwire` with `args` (`DATA` stands for the dataset), with `DIAGWIRE_FLEET_KILL_AT`
/// set to `kill_at` when given; killed and a panic past [`LIMIT`].
fn run(data: &Path, args: &[&str], kill_at: Option<usize>) -> Output {
    let mut command = spawn(data, args, kill_at);
    let start = std::time::Instant::now();
    loop {
        if command.try_wait().unwrap().is_some() {
            return command.wait_with_output().unwrap();
        }
        if start.elapsed() > LIMIT {
            let _ = command.kill();
            panic!("`diagwire {}` ran past {LIMIT:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn spawn(data: &Path, args: &[&str], kill_at: Option<usize>) -> Child {
    let args: Vec<OsString> = args
        .iter()
        .map(|a| {
            if *a == "DATA" {
                data.as_os_str().to_owned()
            } else {
                OsString::from(a)
            }
        })
        .collect();
    let mut command = Command::new(env!("CARGO_BIN_EXE_diagwire"));
    command
        .args(&args)
        .current_dir(repo())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("DIAGWIRE_FLEET_KILL_AT");
    if let Some(n) = kill_at {
        command.env("DIAGWIRE_FLEET_KILL_AT", n.to_string());
    }
    command.spawn().expect("run diagwire")
}

fn ok(data: &Path, args: &[&str]) {
    let out = run(data, args, None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "diagwire {}: {}",
        args.join(" "),
        text(&out.stderr)
    );
}

/// Rows per (table, run).
type Rows = BTreeMap<(String, String), u64>;

/// The rows every reader sees, per table and run, as `diagwire query` reads them.
fn contents(data: &Path) -> Rows {
    let sql = [
        "runs",
        "nodes",
        "events",
        "snapshots",
        "finalize",
        "vastai",
        "quarantine",
    ]
    .iter()
    .map(|t| format!("SELECT '{t}' AS t, run_id, COUNT(*) AS n FROM {t} GROUP BY run_id"))
    .collect::<Vec<_>>()
    .join(" UNION ALL ");
    let out = run(data, &["query", "DATA", &sql, "--format", "json"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    rows.iter()
        .map(|r| {
            (
                (
                    r["t"].as_str().unwrap().to_owned(),
                    r["run_id"].as_str().unwrap().to_owned(),
                ),
                r["n"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The rows every reader sees, per table and run, counted without a query engine: the `run_id`
/// column of each part file the index lists, the files a query reads. A listed part that is
/// missing or does not read is a failure (a writer's index lists only whole files).
fn listed_rows(data: &Path) -> Rows {
    let mut rows = Rows::new();
    for (table, rel) in listed(data) {
        let path = data.join(&rel);
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let column = builder.schema().index_of("run_id").unwrap();
        let mask = ProjectionMask::roots(builder.parquet_schema(), [column]);
        for batch in builder.with_projection(mask).build().unwrap() {
            let batch = batch.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let runs = batch.column(0).as_string::<i32>();
            assert_eq!(
                runs.null_count(),
                0,
                "{}: a row without run_id",
                path.display()
            );
            for run in runs.iter().flatten() {
                *rows.entry((table.clone(), run.to_owned())).or_default() += 1;
            }
        }
    }
    rows
}

/// The rows every reader sees, counted both ways ([`contents`], [`listed_rows`]), which agree.
fn read_both_ways(data: &Path) -> Rows {
    let queried = contents(data);
    assert_eq!(
        listed_rows(data),
        queried,
        "{}: the listed parts' rows are not what a query reads",
        data.display()
    );
    queried
}

/// The part files the index of `data` lists, as (table, path relative to `data`), sorted by path.
fn listed(data: &Path) -> Vec<(String, String)> {
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("_dataset.json")).unwrap())
            .unwrap();
    let mut listed: Vec<(String, String)> = index["files"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(t, v)| v.as_array().unwrap().iter().map(move |f| (t, f)))
        .map(|(t, f)| (t.clone(), f.as_str().unwrap().to_owned()))
        .collect();
    listed.sort_by(|a, b| a.1.cmp(&b.1));
    listed
}

/// Every file under `data` but the index's own (`_…`), relative and sorted.
fn parts_on_disk(data: &Path) -> Vec<String> {
    tree(data)
        .into_keys()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| !p.starts_with('_'))
        .collect()
}

/// Every file under `dir` (relative), links included, with its bytes (a link: its target).
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(dir).unwrap().to_owned();
            if m.file_type().is_symlink() {
                let target = std::fs::read_link(&p).unwrap();
                out.insert(rel, target.to_string_lossy().as_bytes().to_vec());
            } else if m.is_dir() {
                todo.push(p);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// The dataset holds exactly the files its index lists, and nothing a writer leaves on its way.
fn check_no_leftovers(data: &Path) {
    let listed: Vec<String> = listed(data).into_iter().map(|(_, f)| f).collect();
    assert_eq!(parts_on_disk(data), listed, "{}", data.display());
}

/// A writer's change, tried with a kill before each of its steps.
struct Crash {
    name: &'static str,
    /// What the dataset holds before (each a command's arguments).
    before: &'static [&'static [&'static str]],
    /// The change killed.
    change: &'static [&'static str],
    /// Whether the rows read after the change are those before it (a re-export).
    same_rows: bool,
}

const V1: &str = "compat-tests/fixtures/1.0.0/golden.tar.gz";
const V11: &str = "compat-tests/fixtures/1.1.0/golden.tar.gz";
const V12: &str = "compat-tests/fixtures/1.2.0/golden.tar.gz";

const CRASHES: &[Crash] = &[
    Crash {
        name: "the first export into an empty dataset",
        before: &[],
        change: &["export", V1, "--to", "DATA"],
        same_rows: false,
    },
    Crash {
        name: "an export of a run beside one already there",
        before: &[&["export", V1, "--to", "DATA"]],
        change: &["export", V12, "--to", "DATA"],
        same_rows: false,
    },
    Crash {
        name: "a re-export, which replaces the run's rows",
        before: &[&["export", V1, V11, "--to", "DATA"]],
        change: &["export", V11, "--to", "DATA"],
        same_rows: true,
    },
    Crash {
        name: "a compaction of partitions each run left a file in",
        before: &[
            &["export", V1, "--to", "DATA", "--no-compact"],
            &["export", V11, "--to", "DATA", "--no-compact"],
            &["export", V12, "--to", "DATA", "--no-compact"],
            &["export", V11, "--to", "DATA", "--no-compact"],
        ],
        change: &["compact", "DATA"],
        same_rows: true,
    },
];

/// Kills the change before its step 1, 2, … until it runs to its end: after each kill every
/// run's rows read exactly once, as before the change or as after it, and the next run of the
/// change ends as the uninterrupted one did, leaving nothing unlisted behind. The rows are
/// counted from the listed parts; a query reads the same before and after the change and where a
/// kill first left unlisted parts behind. Returns how many steps the change took.
fn check_crash(c: &Crash) -> usize {
    let base = tempfile::tempdir().unwrap();
    let data = base.path().join("data");
    for args in c.before {
        ok(&data, args);
    }
    let before = if c.before.is_empty() {
        Rows::new()
    } else {
        read_both_ways(&data)
    };
    let whole = tempfile::tempdir().unwrap();
    let whole_data = whole.path().join("data");
    if data.exists() {
        copy_tree(&data, &whole_data);
    }
    ok(&whole_data, c.change);
    let after = read_both_ways(&whole_data);
    match c.change[0] {
        // A compaction changes files, not rows: it merged some.
        "compact" => assert!(tree(&whole_data).len() < tree(&data).len(), "{}", c.name),
        // A re-export writes the same rows again: read once, not twice.
        _ if c.same_rows => assert_eq!(before, after, "{}", c.name),
        _ => assert_ne!(before, after, "{}: the change changes nothing", c.name),
    }
    let mut queried_leftovers = false;
    for step in 1..=400 {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("data");
        if data.exists() {
            copy_tree(&data, &d);
        }
        let out = run(&d, c.change, Some(step));
        if out.status.success() {
            assert!(step > 3, "{}: a change of {} step(s)", c.name, step - 1);
            // A change of a dataset that holds runs writes its new parts before it commits.
            assert!(
                queried_leftovers || c.before.is_empty(),
                "{}: no kill left unlisted parts behind",
                c.name
            );
            assert_eq!(listed_rows(&d), after, "{}", c.name);
            return step - 1;
        }
        let stderr = text(&out.stderr);
        assert!(
            out.status.code().is_none() && stderr.contains(&format!("stopped before step {step}")),
            "{}: step {step}: {:?} {stderr}",
            c.name,
            out.status
        );
        if d.join("_dataset.json").exists() {
            let leftovers = parts_on_disk(&d).len() != listed(&d).len();
            let seen = if leftovers && !queried_leftovers {
                queried_leftovers = true;
                read_both_ways(&d)
            } else {
                listed_rows(&d)
            };
            assert!(
                seen == before || seen == after,
                "{}: killed before step {step}: {stderr}: the rows read {seen:?}, \
                 before {before:?}, after {after:?}",
                c.name
            );
        }
        ok(&d, c.change);
        assert_eq!(
            listed_rows(&d),
            after,
            "{}: the change after a kill before step {step}",
            c.name
        );
        check_no_leftovers(&d);
    }
    panic!("{}: the change never ran to its end", c.name);
}

#[test]
fn a_writer_killed_before_any_of_its_steps_leaves_the_state_before_or_after_it() {
    // The cases side by side (each runs its commands one after the other): a case is dozens of
    // short processes, and the machine has more than one core.
    let steps: Vec<usize> = std::thread::scope(|s| {
        let cases: Vec<_> = CRASHES
            .iter()
            .map(|c| s.spawn(move || check_crash(c)))
            .collect();
        cases.into_iter().map(|c| c.join().unwrap()).collect()
    });
    eprintln!("steps killed before, per change: {steps:?}");
}

/// Writers started together into one dataset: each waits for the one before, and the dataset
/// ends as if they ran one after the other.
fn check_concurrent(bundles: &[&str]) {
    let seq = tempfile::tempdir().unwrap();
    let seq_data = seq.path().join("data");
    for b in bundles {
        ok(&seq_data, &["export", b, "--to", "DATA"]);
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let children: Vec<Child> = bundles
        .iter()
        .map(|b| spawn(&data, &["export", b, "--to", "DATA", "--wait", "5m"], None))
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    assert_eq!(listed_rows(&data), read_both_ways(&seq_data), "{bundles:?}");
    check_no_leftovers(&data);
}

#[test]
fn exports_started_together_end_as_if_run_one_after_the_other() {
    for bundles in [&[V1, V11][..], &[V1, V11, V12][..], &[V11, V11, V11][..]] {
        check_concurrent(bundles);
    }
}

/// Holds the writer lock of `data` with `flock(1)` until the returned child's input closes.
fn hold_lock(data: &Path) -> Child {
    std::fs::create_dir_all(data).unwrap();
    let mut child = Command::new("flock")
        .arg(data.join("_dataset.lock"))
        .args(["-c", "echo held; read line"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("flock (util-linux)");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "held");
    child
}

#[test]
fn a_writer_that_finds_another_waits_for_it_or_says_so_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    ok(&data, &["export", V1, "--to", "DATA"]);
    let index = std::fs::read(data.join("_dataset.json")).unwrap();
    let mut holder = hold_lock(&data);
    for args in [
        &["export", V11, "--to", "DATA", "--wait", "0s"][..],
        &["compact", "DATA", "--wait", "0s"][..],
    ] {
        let out = run(&data, args, None);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("_dataset.lock: another writer is changing this dataset"),
            "{stderr}"
        );
        assert_eq!(std::fs::read(data.join("_dataset.json")).unwrap(), index);
    }
    // Readers never take the lock.
    assert_eq!(contents(&data).len(), 6);
    // A writer that waits says so once, and goes on when the other is done.
    let mut waiting = spawn(
        &data,
        &["export", V11, "--to", "DATA", "--wait", "5m"],
        None,
    );
    let mut line = String::new();
    BufReader::new(waiting.stderr.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(
        line.contains("another writer is changing this dataset; waiting for it"),
        "{line}"
    );
    holder.stdin.as_mut().unwrap().write_all(b"\n").unwrap();
    holder.wait().unwrap();
    let out = waiting.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(listed_rows(&data).len(), 12);
}

/// A hostile or broken dataset: what is planted, the command, and what must come of it.
struct Hostile {
    name: &'static str,
    /// Plants the case into `data` (holding run 1.0.0, exported) with `outside` beside it.
    plant: fn(data: &Path, outside: &Path),
    command: &'static [&'static str],
    /// The exit status, and what standard error says (empty: anything).
    status: i32,
    says: &'static str,
}

/// The one partition folder of `table`.
fn partition(data: &Path, table: &str) -> PathBuf {
    let majors: Vec<PathBuf> = std::fs::read_dir(data.join(table))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let dates: Vec<PathBuf> = std::fs::read_dir(&majors[0])
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dates[0].clone()
}

fn part(data: &Path, table: &str) -> PathBuf {
    std::fs::read_dir(partition(data, table))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "parquet"))
        .unwrap()
}

/// Moves the partition folder of `table` to `outside` and puts a link to it in its place.
fn link_partition(data: &Path, outside: &Path, table: &str) {
    let p = partition(data, table);
    let target = outside.join(table);
    std::fs::rename(&p, &target).unwrap();
    std::os::unix::fs::symlink(&target, &p).unwrap();
}

fn link_to_outside_file(link: &Path, outside: &Path) {
    std::os::unix::fs::symlink(outside.join("secret"), link).unwrap();
}

const HOSTILE: &[Hostile] = &[
    Hostile {
        name: "the index's temporary file is a link: removed, never written through",
        plant: |d, o| link_to_outside_file(&d.join("_dataset.tmp"), o),
        command: &["export", V11, "--to", "DATA"],
        status: 0,
        says: "",
    },
    Hostile {
        name: "a part's temporary file is a link: removed, never written through",
        plant: |d, o| {
            let p = part(d, "events");
            link_to_outside_file(&p.with_extension("parquet.tmp"), o);
        },
        command: &["export", V1, "--to", "DATA"],
        status: 0,
        says: "",
    },
    Hostile {
        name: "a partition folder is a link: an export refuses it",
        plant: |d, o| link_partition(d, o, "events"),
        command: &["export", V1, "--to", "DATA"],
        status: 2,
        says: "is a symbolic link",
    },
    Hostile {
        name: "a partition folder is a link: a compaction refuses it",
        plant: |d, o| link_partition(d, o, "events"),
        command: &["compact", "DATA"],
        status: 2,
        says: "is a symbolic link",
    },
    Hostile {
        name: "a table folder is a link",
        plant: |d, o| {
            std::fs::rename(d.join("nodes"), o.join("nodes")).unwrap();
            std::os::unix::fs::symlink(o.join("nodes"), d.join("nodes")).unwrap();
        },
        command: &["export", V11, "--to", "DATA"],
        status: 2,
        says: "is a symbolic link",
    },
    Hostile {
        name: "the lock file is a link",
        plant: |d, o| {
            std::fs::remove_file(d.join("_dataset.lock")).unwrap();
            link_to_outside_file(&d.join("_dataset.lock"), o);
        },
        command: &["export", V11, "--to", "DATA"],
        status: 2,
        says: "_dataset.lock: is a symbolic link",
    },
    Hostile {
        name: "the staging folder is a link",
        plant: |d, o| std::os::unix::fs::symlink(o, d.join("_staging")).unwrap(),
        command: &["export", V11, "--to", "DATA"],
        status: 2,
        says: "_staging: is a symbolic link",
    },
    Hostile {
        name: "the index is a link: a query refuses it",
        plant: |d, o| {
            std::fs::rename(d.join("_dataset.json"), o.join("index")).unwrap();
            std::os::unix::fs::symlink(o.join("index"), d.join("_dataset.json")).unwrap();
        },
        command: &["query", "DATA", "SELECT COUNT(*) FROM events"],
        status: 2,
        says: "_dataset.json: is a symbolic link",
    },
    Hostile {
        name: "the index lists a file outside its table",
        plant: |d, _| {
            let path = d.join("_dataset.json");
            let mut index: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            index["files"]["events"] = serde_json::json!(["events/../../outside/secret"]);
            std::fs::write(&path, index.to_string()).unwrap();
        },
        command: &["query", "DATA", "SELECT COUNT(*) FROM events"],
        status: 2,
        says: "which is not a part file of that table",
    },
    Hostile {
        name: "an unreadable part: a query leaves it out and says so",
        plant: |d, _| std::fs::write(part(d, "events"), b"not parquet").unwrap(),
        command: &[
            "query",
            "DATA",
            "SELECT COUNT(*) AS n FROM nodes",
            "--format",
            "json",
        ],
        status: 0,
        says: "left out of the tables: ",
    },
    Hostile {
        name: "an unreadable part: an export that must rewrite it fails before changing anything",
        plant: |d, _| std::fs::write(part(d, "events"), b"not parquet").unwrap(),
        command: &["export", V1, "--to", "DATA"],
        status: 2,
        says: "the dataset is as it was",
    },
    Hostile {
        name: "a part the index does not list is never read, and the next writer deletes it",
        plant: |d, _| {
            let p = part(d, "events");
            std::fs::copy(&p, p.with_file_name("part-0000000000000000.parquet")).unwrap();
        },
        command: &["export", V11, "--to", "DATA"],
        status: 0,
        says: "",
    },
];

/// `clean`: the rows of run 1.0.0 exported, as every reader sees them.
fn check_hostile(h: &Hostile, clean: &Rows) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret"), b"not the dataset's").unwrap();
    ok(&data, &["export", V1, "--to", "DATA"]);
    assert_eq!(&listed_rows(&data), clean, "{}", h.name);
    (h.plant)(&data, &outside);
    let before = tree(&data);
    let outside_before = tree(&outside);
    let out = run(&data, h.command, None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(h.status), "{}: {stderr}", h.name);
    assert!(stderr.contains(h.says), "{}: {stderr}", h.name);
    assert!(!stderr.contains("panicked"), "{}: {stderr}", h.name);
    assert_eq!(
        tree(&outside),
        outside_before,
        "{}: outside changed",
        h.name
    );
    if h.status == 2 {
        assert_eq!(tree(&data), before, "{}: the dataset changed", h.name);
    }
    match h.command[0] {
        "export" if h.status == 0 => {
            // What the reader sees: the runs exported, each once; nothing unlisted left.
            check_no_leftovers(&data);
            let seen = listed_rows(&data);
            for (key, n) in clean {
                assert_eq!(seen.get(key), Some(n), "{}: {key:?}", h.name);
            }
        }
        "query" if h.status == 0 => {
            // The other tables still read.
            assert!(stderr.contains("part-"), "{}: {stderr}", h.name);
            let nodes: u64 = clean
                .iter()
                .filter(|((t, _), _)| t == "nodes")
                .map(|(_, n)| n)
                .sum();
            let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(rows, serde_json::json!([{ "n": nodes }]), "{}", h.name);
        }
        _ => {}
    }
}

#[test]
fn links_under_the_dataset_are_never_followed_and_broken_parts_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    ok(&data, &["export", V1, "--to", "DATA"]);
    let clean = read_both_ways(&data);
    for h in HOSTILE {
        check_hostile(h, &clean);
    }
}

/// A dataset whose folders hold what its index does not say, or miss what it says.
struct Unlisted {
    name: &'static str,
    /// Changes the dataset (runs 1.0.0 and 1.1.0, each exported without compaction).
    plant: fn(data: &Path),
    /// Whether a reader still sees the rows it saw before.
    same_rows: bool,
}

/// Sets the parts the index lists for `table`.
fn list_in_index(data: &Path, table: &str, files: Value) {
    let path = data.join("_dataset.json");
    let mut index: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    index["files"][table] = files;
    std::fs::write(&path, index.to_string()).unwrap();
}

const UNLISTED: &[Unlisted] = &[
    Unlisted {
        name: "a copy of every table's part under a name the index does not list is never read",
        plant: |d| {
            for (_, rel) in listed(d) {
                let p = d.join(rel);
                std::fs::copy(&p, p.with_file_name("part-0000000000000000.parquet")).unwrap();
            }
        },
        same_rows: true,
    },
    Unlisted {
        name: "a part taken out of the index is not read, though its file stays",
        plant: |d| {
            let keep: Vec<String> = listed(d)
                .into_iter()
                .filter(|(t, _)| t == "events")
                .map(|(_, f)| f)
                .skip(1)
                .collect();
            list_in_index(d, "events", serde_json::json!(keep));
        },
        same_rows: false,
    },
];

/// `base`: the dataset before `u` is planted (in a copy), whose readers see `before`. A query
/// reads what the listed parts hold, no more, no less.
fn check_unlisted(u: &Unlisted, base: &Path, before: &Rows) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    copy_tree(base, &data);
    (u.plant)(&data);
    let seen = read_both_ways(&data);
    if u.same_rows {
        assert_eq!(&seen, before, "{}", u.name);
    } else {
        assert_ne!(&seen, before, "{}: the case changes nothing", u.name);
    }
}

#[test]
fn a_query_reads_exactly_the_parts_the_index_lists() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("data");
    ok(&base, &["export", V1, "--to", "DATA", "--no-compact"]);
    ok(&base, &["export", V11, "--to", "DATA", "--no-compact"]);
    let before = read_both_ways(&base);
    for u in UNLISTED {
        check_unlisted(u, &base, &before);
    }
}

/// Breaks records and files of a copy of the example bundle; what the export says it left out.
struct Broken {
    name: &'static str,
    /// Breaks the copy.
    edit: fn(bundle: &Path),
    /// What standard error says, and what it must not say.
    says: &'static str,
    not: &'static str,
}

/// Makes the first `count` records of `file` (under `bundle`) refused: a text `monotonic_seq`.
fn refuse_records(bundle: &Path, file: &str, count: usize) {
    let path = bundle.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let broken = text.replacen(
        "\"monotonic_seq\": ",
        "\"monotonic_seq\": \"x\", \"_\": ",
        count,
    );
    std::fs::write(&path, broken).unwrap();
}

/// Cuts the end off `file` (under `bundle`): the file no longer reads.
fn truncate(bundle: &Path, file: &str) {
    let path = bundle.join(file);
    let text = std::fs::read(&path).unwrap();
    std::fs::write(&path, &text[..text.len() - 40]).unwrap();
}

const BROKEN: &[Broken] = &[
    Broken {
        name: "two refused records of one file are two records",
        edit: |b| refuse_records(b, "stage-2/events/events-000003.json", 2),
        says: "2 record(s) could not be read and were not exported",
        not: "file(s)",
    },
    Broken {
        name: "a file that does not read is one file, whatever it held",
        edit: |b| truncate(b, "orchestrator/events/events-000010.json"),
        says: "1 file(s) could not be read and none of their records were exported",
        not: "record(s)",
    },
    Broken {
        name: "records and files are counted apart",
        edit: |b| {
            refuse_records(b, "stage-2/events/events-000003.json", 3);
            truncate(b, "orchestrator/events/events-000010.json");
        },
        says: "3 record(s) could not be read and were not exported; 1 file(s) could not be read",
        not: "problem(s)",
    },
];

fn check_broken(b: &Broken) {
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle");
    copy_tree(Path::new(&example()), &bundle);
    (b.edit)(&bundle);
    let data = dir.path().join("data");
    let out = run(
        &data,
        &["export", &bundle.to_string_lossy(), "--to", "DATA"],
        None,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}: {stderr}", b.name);
    assert!(stderr.contains(b.says), "{}: {stderr}", b.name);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(!last.contains(b.not), "{}: {last}", b.name);
}

#[test]
fn an_export_counts_the_records_it_left_out() {
    for b in BROKEN {
        check_broken(b);
    }
}
