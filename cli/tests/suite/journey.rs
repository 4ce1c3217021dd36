//! The journey of a run: one run, one answer, whichever way it reaches the tools.
//!
//! For generated runs (the testkit scenario, [`SEEDS_IN_CI`] seeds; `DIAGWIRE_JOURNEY_SEEDS=N`
//! runs N), the run is taken along every path a run reaches diagwire by, and each path must give
//! the answer its bundle directory gives:
//!
//! 1. the bundle directory, the reference;
//! 2. a `.tar.gz` of it, its members in name order, in a directory order (a shuffle of every
//!    directory's entries, seeded, as `tar czf` of a directory lists what `readdir` gives) and in
//!    reverse order;
//! 3. the collector (feature `serve`): its files posted as nodes post them, the collector killed
//!    (SIGKILL) after a seeded fraction of the posts and restarted on the same root, then the
//!    remaining posts and the finalize; the served bundle is `ROOT/bundles/<run>.tar.gz`;
//! 4. the live stream: `check --follow` attached at a seeded point of the posting after the
//!    restart, which must end on its own with the verdict of the served bundle.
//!
//! The answers compared, one check function each: `summary --format json` ([`same_summary`]),
//! `check --format json`'s rule table ([`same_rule_table`]), `validate --format json`'s problems
//! ([`same_problems`]) and (feature `fleet`) the rows `export` writes, read back with `query`
//! ([`same_rows`]). What is path-specific — and only that — is left out, in one place:
//! [`PATH_SPECIFIC`]. The contract version the manifest declares is not: the directory's `Writer`
//! and the collector each declare what the one rule says of the records
//! ([`declared_by_the_rule`]).
//!
//! Every command runs within [`LIMIT`] and is killed past it; the collector listens on
//! 127.0.0.1 only and is killed when its case ends.

use crate::common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{diagwire_within, text};
use diagwire_runtime::SplitMix64;
use diagwire_testkit::scenario::{Params, generate};
use serde_json::Value;

/// Seeds run by `cargo test`; `DIAGWIRE_JOURNEY_SEEDS=N` runs seeds 1 to N.
const SEEDS_IN_CI: u64 = 3;

/// The longest any one command may run (debug build, a shared 2-core machine) before it is
/// killed and the case fails.
const LIMIT: Duration = Duration::from_secs(120);

/// What differs between paths by design, never compared: `(output, JSON pointer, why it is
/// path-specific)`. The output is `summary` (a pointer into its JSON) or a dataset table (a
/// pointer into the JSON array of its rows); `*` is every element of an array. Each is documented
/// (`docs/summary.md`, "The same run by any path", and `docs/collector.md`).
const PATH_SPECIFIC: &[(&str, &str, &str)] = &[
    (
        "summary",
        "/validation/first/*/file",
        "a problem names the file as a person finds it: a directory path, or `archive.tar.gz!inner`",
    ),
    (
        "summary",
        "/run/start_ms",
        "the run's span on the clock of the collector that wrote the manifest: its receive times",
    ),
    (
        "summary",
        "/run/end_ms",
        "the run's span on the clock of the collector that wrote the manifest: its receive times",
    ),
    (
        "runs",
        "/*/bundle",
        "the file name of the bundle the run was exported from (a directory or an archive)",
    ),
    (
        "runs",
        "/*/run_start_collector_ms",
        "the receive times of the collector that wrote the manifest",
    ),
    (
        "runs",
        "/*/run_end_collector_ms",
        "the receive times of the collector that wrote the manifest",
    ),
    (
        "runs",
        "/*/writer",
        "the manifest names what wrote the bundle: the simulator's `Writer`, or the collector",
    ),
];

/// The seeds this run of the tests takes.
fn seeds() -> Vec<u64> {
    let n = std::env::var("DIAGWIRE_JOURNEY_SEEDS")
        .ok()
        .map(|v| {
            v.parse::<u64>()
                .expect("DIAGWIRE_JOURNEY_SEEDS is a number")
        })
        .unwrap_or(SEEDS_IN_CI);
    (1..=n).collect()
}

/// Writes the scenario of `seed` as a bundle directory under `parent`; returns it and its run id.
fn bundle_dir(seed: u64, parent: &Path) -> (PathBuf, String) {
    let mut params = Params::small(seed);
    params.run_id = format!("journey-{seed}");
    let dir = generate(&params).write_dir(parent).unwrap();
    (dir, params.run_id)
}

/// Runs `diagwire` with `args` within [`LIMIT`].
fn run(args: &[&OsStr]) -> std::process::Output {
    diagwire_within(args, LIMIT)
}

/// `args` as the `OsStr`s [`run`] takes.
fn os<'a>(args: &'a [&'a dyn AsRef<OsStr>]) -> Vec<&'a OsStr> {
    args.iter().map(|a| a.as_ref()).collect()
}

/// `diagwire TOOL --format json BUNDLE`'s JSON (every tool of the comparison exits 0 or 1 with a
/// report; 2 or no JSON fails the case).
fn json_of(tool: &str, bundle: &Path) -> (Option<i32>, Value) {
    let out = run(&os(&[&tool, &"--format", &"json", &bundle]));
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "`{tool} {}` printed no JSON ({e}), exit {:?}: {}",
            bundle.display(),
            out.status.code(),
            text(&out.stderr)
        )
    });
    (out.status.code(), v)
}

/// Removes what [`PATH_SPECIFIC`] names for `output` from `v`.
fn without_path_specific(output: &str, mut v: Value) -> Value {
    fn remove(v: &mut Value, parts: &[&str]) {
        match parts {
            [] => {}
            [last] => match v {
                Value::Object(m) => {
                    m.remove(*last);
                }
                Value::Array(a) if *last == "*" => a.clear(),
                _ => {}
            },
            [first, rest @ ..] => match v {
                Value::Object(m) => {
                    if let Some(inner) = m.get_mut(*first) {
                        remove(inner, rest);
                    }
                }
                Value::Array(a) if *first == "*" => a.iter_mut().for_each(|e| remove(e, rest)),
                _ => {}
            },
        }
    }
    for (_, at, _) in PATH_SPECIFIC.iter().filter(|(o, _, _)| *o == output) {
        let parts: Vec<&str> = at.trim_start_matches('/').split('/').collect();
        remove(&mut v, &parts);
    }
    v
}

/// The JSON pointers at which `a` and `b` differ, with both values (at most 20).
fn differences(a: &Value, b: &Value) -> Vec<String> {
    fn walk(a: &Value, b: &Value, at: String, out: &mut Vec<String>) {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                for k in keys {
                    let (l, r) = (x.get(k), y.get(k));
                    walk(
                        l.unwrap_or(&Value::Null),
                        r.unwrap_or(&Value::Null),
                        format!("{at}/{k}"),
                        out,
                    );
                }
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                for (i, (l, r)) in x.iter().zip(y).enumerate() {
                    walk(l, r, format!("{at}/{i}"), out);
                }
            }
            _ if a != b => out.push(format!("{at}: {a} != {b}")),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(a, b, String::new(), &mut out);
    out.truncate(20);
    out
}

/// Asserts that `got` is `want`, naming each difference.
fn same(what: &str, path: &str, want: &Value, got: &Value) {
    let diff = differences(want, got);
    assert!(
        diff.is_empty(),
        "{path}: {what} differs from the bundle directory's (reference != {path}):\n  {}",
        diff.join("\n  ")
    );
}

/// What the tools answer about one bundle: each tool's exit status and its comparable output.
struct Answers {
    /// `summary --format json`, path-specific fields left out.
    summary: (Option<i32>, Value),
    /// `check --format json`'s rule table.
    rules: (Option<i32>, Value),
    /// `validate --format json`'s problems.
    problems: (Option<i32>, Value),
    /// (feature `fleet`) the rows of each of [`TABLES`] that `export` writes, path-specific
    /// columns left out.
    #[cfg(feature = "fleet")]
    rows: Vec<(&'static str, Value)>,
}

/// Asks every tool about `bundle` (a dataset, if any, under `scratch`).
fn answers(bundle: &Path, scratch: &Path) -> Answers {
    let (code, summary) = json_of("summary", bundle);
    let (check_code, check) = json_of("check", bundle);
    #[cfg(not(feature = "fleet"))]
    let _ = scratch;
    Answers {
        summary: (code, without_path_specific("summary", summary)),
        rules: (check_code, rule_table(&check["check"])),
        problems: problems(bundle),
        #[cfg(feature = "fleet")]
        rows: rows(bundle, scratch),
    }
}

/// `summary --format json` gives the same object (path-specific fields left out) and exit status.
fn same_summary(path: &str, a: &Answers, b: &Answers) {
    assert_eq!(a.summary.0, b.summary.0, "{path}: summary's exit status");
    same("the summary", path, &a.summary.1, &b.summary.1);
}

/// `rule id → [status, findings]` of a check report (`check` JSON's `check`).
fn rule_table(report: &Value) -> Value {
    let rules = report["rules"].as_array().expect("a report with rules");
    let table: BTreeMap<String, Value> = rules
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_owned(),
                serde_json::json!([r["status"], r["findings_total"]]),
            )
        })
        .collect();
    serde_json::to_value(table).unwrap()
}

/// `check --format json` gives the same rule table and exit status.
fn same_rule_table(path: &str, a: &Answers, b: &Answers) {
    assert_eq!(a.rules.0, b.rules.0, "{path}: check's exit status");
    same("the rule table", path, &a.rules.1, &b.rules.1);
}

/// `validate --format json`'s problems of `bundle`: kind and message, the bundle's own path in a
/// message replaced by `BUNDLE`.
fn problems(bundle: &Path) -> (Option<i32>, Value) {
    let (code, v) = json_of("validate", bundle);
    let me = bundle.to_string_lossy().into_owned();
    let list: Vec<Value> = v["problems"]
        .as_array()
        .expect("validate's problems")
        .iter()
        .map(|p| {
            let message = p["message"].as_str().unwrap().replace(&me, "BUNDLE");
            serde_json::json!({"kind": p["kind"], "message": message})
        })
        .collect();
    (code, Value::Array(list))
}

/// `validate --format json` lists the same problems, with the same exit status.
fn same_problems(path: &str, a: &Answers, b: &Answers) {
    assert_eq!(a.problems.0, b.problems.0, "{path}: validate's exit status");
    same("the problem list", path, &a.problems.1, &b.problems.1);
}

/// The rows of the dataset's tables, in a fixed order.
#[cfg(feature = "fleet")]
const TABLES: &[(&str, &str)] = &[
    ("runs", "SELECT * FROM runs"),
    ("nodes", "SELECT * FROM nodes ORDER BY node"),
    (
        "snapshots",
        "SELECT * FROM snapshots ORDER BY node, file_seq",
    ),
    (
        "events",
        "SELECT * FROM events ORDER BY node, monotonic_seq, file_seq, record_index",
    ),
];

/// `export`s `bundle` into a dataset of its own under `scratch`; the rows of each of [`TABLES`],
/// path-specific columns left out.
#[cfg(feature = "fleet")]
fn rows(bundle: &Path, scratch: &Path) -> Vec<(&'static str, Value)> {
    let scratch = tempfile::tempdir_in(scratch).unwrap();
    let dataset = scratch.path().join("dataset");
    let out = run(&os(&[&"export", &bundle, &"--to", &dataset]));
    assert_eq!(
        out.status.code(),
        Some(0),
        "export {}: {}",
        bundle.display(),
        text(&out.stderr)
    );
    TABLES
        .iter()
        .map(|(table, sql)| {
            let out = run(&os(&[&"query", &dataset, sql, &"--format", &"json"]));
            assert_eq!(out.status.code(), Some(0), "{sql}: {}", text(&out.stderr));
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            (*table, without_path_specific(table, v))
        })
        .collect()
}

/// `export` writes the same rows, as many of each table.
#[cfg(feature = "fleet")]
fn same_rows(path: &str, a: &Answers, b: &Answers) {
    for ((table, want), (_, got)) in a.rows.iter().zip(&b.rows) {
        let count = |v: &Value| v.as_array().unwrap().len();
        assert_eq!(count(want), count(got), "{path}: rows of `{table}`");
        same(&format!("the `{table}` rows"), path, want, got);
    }
}

/// Every answer about the bundle of `path` is the reference's.
fn same_answers(path: &str, reference: &Answers, b: &Answers) {
    same_summary(path, reference, b);
    same_rule_table(path, reference, b);
    same_problems(path, reference, b);
    #[cfg(feature = "fleet")]
    same_rows(path, reference, b);
}

/// A tar member: its path under the archive's top and, for a file, where its bytes are.
type Member = (String, Option<PathBuf>);

/// The members of the bundle at `dir` under `<run_id>/`, each directory before what it holds;
/// every directory's entries in name order, or shuffled by `rng` when given.
fn members(dir: &Path, run_id: &str, mut rng: Option<&mut SplitMix64>) -> Vec<Member> {
    fn walk(dir: &Path, inside: &str, rng: &mut Option<&mut SplitMix64>, out: &mut Vec<Member>) {
        out.push((format!("{inside}/"), None));
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        if let Some(rng) = rng.as_deref_mut() {
            for i in (1..entries.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                entries.swap(i, j);
            }
        }
        for e in entries {
            let name = format!("{inside}/{}", e.file_name().unwrap().to_string_lossy());
            if e.is_dir() {
                walk(&e, &name, rng, out);
            } else {
                out.push((name, Some(e)));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, run_id, &mut rng, &mut out);
    out
}

/// Writes `members`, in their order, as a `.tar.gz` at `to`.
fn write_archive(members: &[Member], to: &Path) {
    let gz = flate2::write::GzEncoder::new(
        std::fs::File::create(to).unwrap(),
        flate2::Compression::fast(),
    );
    let mut tar = tar::Builder::new(gz);
    for (name, file) in members {
        let mut header = tar::Header::new_gnu();
        header.set_mode(if file.is_some() { 0o644 } else { 0o755 });
        header.set_mtime(0);
        match file {
            Some(file) => {
                let bytes = std::fs::read(file).unwrap();
                header.set_entry_type(tar::EntryType::Regular);
                header.set_size(bytes.len() as u64);
                tar.append_data(&mut header, name, bytes.as_slice())
                    .unwrap();
            }
            None => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_size(0);
                tar.append_data(&mut header, name, std::io::empty())
                    .unwrap();
            }
        }
    }
    tar.into_inner().unwrap().finish().unwrap();
}

/// The archives of the bundle at `dir`: each order's name and its `.tar.gz` under `scratch`.
fn archives(dir: &Path, run_id: &str, seed: u64, scratch: &Path) -> Vec<(&'static str, PathBuf)> {
    let in_name_order = members(dir, run_id, None);
    let mut rng = SplitMix64(seed);
    let in_directory_order = members(dir, run_id, Some(&mut rng));
    let mut in_reverse = in_name_order.clone();
    in_reverse.reverse();
    [
        ("a .tar.gz in name order", in_name_order),
        ("a .tar.gz in a directory order", in_directory_order),
        ("a .tar.gz in reverse order", in_reverse),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, (name, members))| {
        let at = scratch.join(format!("archive-{i}"));
        std::fs::create_dir_all(&at).unwrap();
        let file = at.join(format!("{run_id}.tar.gz"));
        write_archive(&members, &file);
        (name, file)
    })
    .collect()
}

#[test]
fn a_run_archived_in_any_member_order_reads_as_its_directory() {
    for seed in seeds() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, run_id) = bundle_dir(seed, &tmp.path().join("src"));
        let reference = answers(&dir, tmp.path());
        for (path, archive) in archives(&dir, &run_id, seed, tmp.path()) {
            let path = format!("seed {seed}, {path}");
            same_answers(&path, &reference, &answers(&archive, tmp.path()));
        }
    }
}

/// What each writer declares, by the one rule (`docs/collector.md`, "What the manifest
/// declares"): the library's `Writer`, which builds the records of its own contract, declares
/// that contract for every node and the run; the collector, which copies records it did not build,
/// declares per node the newest generation its records prove (`diagwire::generation`; none when
/// they prove nothing beyond 1.0.0) and for the run the oldest of its nodes' (none when one
/// declares none) — a lower bound of the writer's. Asserts that the directory (the `Writer`) and
/// `served` (the collector) each declare what the rule says of the directory's records, then
/// gives `served` the directory's declarations, so that everything else is compared as is.
#[cfg(feature = "serve")]
fn declared_by_the_rule(path: &str, dir: &Path, reference: &Answers, served: &mut Answers) {
    use diagwire::bundle::read::{Limits, read_all};
    use diagwire::generation::{cmp_versions, declared, newer, proven_file};

    let (contents, errors) = read_all(dir, Limits::default()).unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    let mut proven: BTreeMap<String, Option<&'static str>> = BTreeMap::new();
    for (rel, bytes) in &contents.files {
        let at = diagwire::layout::parse_bundle_path(rel);
        let (Some(node), Some(kind)) = (at.node, at.role.file_kind()) else {
            continue;
        };
        if matches!(kind, diagwire::layout::FileKind::Vastai(_)) {
            continue;
        }
        let was = proven.entry(node).or_default();
        *was = newer(*was, proven_file(kind, at.encoding, bytes));
    }
    let by_node: BTreeMap<String, Option<String>> = proven
        .into_iter()
        .map(|(label, p)| (label, declared(p)))
        .collect();
    let run: Option<String> = by_node
        .values()
        .map(|v| v.clone().ok_or(()))
        .collect::<Result<Vec<_>, ()>>()
        .ok()
        .and_then(|v| v.into_iter().min_by(|a, b| cmp_versions(a, b)));
    let writer = Value::from(diagwire::CONTRACT_VERSION);
    let collector = run.map_or(Value::Null, Value::from);

    let mut reference = Answers {
        summary: reference.summary.clone(),
        rules: reference.rules.clone(),
        problems: reference.problems.clone(),
        #[cfg(feature = "fleet")]
        rows: reference.rows.clone(),
    };
    let says = |label: &str| {
        by_node
            .get(label)
            .cloned()
            .flatten()
            .map_or(Value::Null, Value::from)
    };
    declares(
        path,
        "the Writer",
        &mut reference,
        &writer,
        &|_| writer.clone(),
        &writer,
    );
    declares(path, "the collector", served, &collector, &says, &writer);
}

/// Asserts that `answers` say the run's declaration is `run_says` and each node's `node_says`,
/// then replaces them with `writer`'s.
#[cfg(feature = "serve")]
fn declares(
    path: &str,
    who: &str,
    answers: &mut Answers,
    run_says: &Value,
    node_says: &dyn Fn(&str) -> Value,
    writer: &Value,
) {
    let at = &mut answers.summary.1["run"]["contract_version"];
    assert_eq!(
        at, run_says,
        "{path}: the run's contract_version {who} declares (summary)"
    );
    *at = writer.clone();
    #[cfg(feature = "fleet")]
    for (table, rows) in answers.rows.iter_mut() {
        if *table != "runs" {
            continue;
        }
        for row in rows.as_array_mut().unwrap() {
            assert_eq!(&row["contract_version"], run_says, "{path}: runs, {who}");
            row["contract_version"] = writer.clone();
            for node in row["nodes"].as_array_mut().unwrap() {
                let label = node["label"].as_str().unwrap().to_owned();
                assert_eq!(
                    node["contract_version"],
                    node_says(&label),
                    "{path}: node {label}, {who}"
                );
                node["contract_version"] = writer.clone();
            }
        }
    }
    #[cfg(not(feature = "fleet"))]
    let _ = node_says;
}

/// The collector and its live stream.
#[cfg(feature = "serve")]
mod through_a_collector {
    use super::*;
    use common::Reaped;
    use common::collector::{Post, make, posts, serve, served};
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::sync::mpsc;
    use std::time::Instant;

    /// `check --follow URL --format json`, started; its stdout lines arrive on the receiver.
    fn follow(url: &str) -> (Reaped, mpsc::Receiver<String>) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_diagwire"))
            .args(["check", "--follow", url, "--format", "json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        (Reaped(child), rx)
    }

    /// The follow's exit status and last line, once it ends on its own within [`LIMIT`].
    fn follow_report(mut child: Reaped, lines: mpsc::Receiver<String>) -> (Option<i32>, Value) {
        let start = Instant::now();
        let code = loop {
            if let Some(status) = child.0.try_wait().unwrap() {
                break status.code();
            }
            assert!(
                start.elapsed() < LIMIT,
                "the follow did not end on its own within {LIMIT:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let last = lines.iter().last().expect("the follow printed its report");
        (code, serde_json::from_str(&last).unwrap())
    }

    /// The follow's verdict is `check`'s of the served bundle: exit status and rule table.
    fn same_verdict_as_served(path: &str, follow: (Option<i32>, Value), served: &Answers) {
        let (code, report) = follow;
        assert_eq!(report["ended"], "settled", "{path}: {report}");
        assert!(
            report.get("incomplete").is_none(),
            "{path}: the follow missed records: {}",
            report["incomplete"]
        );
        assert_eq!(code, served.rules.0, "{path}: the follow's exit status");
        same(
            "the follow's rule table",
            path,
            &served.rules.1,
            &rule_table(&report["report"]["check"]),
        );
    }

    /// Posts the run at `dir` to a collector over `root`, killing it after a seeded number of
    /// the posts before the finalize and restarting it; a follow attaches at a seeded point after
    /// the restart. Returns the served bundle and the follow's end.
    fn post_with_a_crash(
        dir: &Path,
        run_id: &str,
        seed: u64,
        root: &Path,
    ) -> (PathBuf, (Option<i32>, Value)) {
        let posts: Vec<Post> = posts(dir);
        let before_finalize = posts
            .iter()
            .position(|(route, _, _)| *route == "/diag/finalize")
            .expect("a finalize");
        // Both draws are inclusive: the crash comes after 1 to all of the posts before the
        // finalize; the follow attaches before one of the posts after the restart, or after the
        // last one.
        let mut rng = SplitMix64(seed ^ 0x6a6f_7572_6e65_7921);
        let crash_at = rng.range(1, before_finalize as u64) as usize;
        let attach_at = rng.range(crash_at as u64, posts.len() as u64) as usize;
        let (server, addr) = serve(root);
        for p in &posts[..crash_at] {
            make(&addr, run_id, p);
        }
        drop(server); // SIGKILL, then reaped
        let (server, addr) = serve(root);
        let url = format!("http://{addr}/diag/stream/{run_id}");
        let mut follower = None;
        for (i, p) in posts.iter().enumerate().skip(crash_at) {
            if i == attach_at {
                follower = Some(follow(&url));
            }
            make(&addr, run_id, p);
        }
        let (child, lines) = follower.unwrap_or_else(|| follow(&url));
        let end = follow_report(child, lines);
        drop(server);
        (served(root, run_id), end)
    }

    #[test]
    fn a_run_posted_to_a_collector_killed_midway_is_served_as_its_directory_and_followed_to_the_same_verdict()
     {
        for seed in seeds() {
            let tmp = tempfile::tempdir().unwrap();
            let (dir, run_id) = bundle_dir(seed, &tmp.path().join("src"));
            let (served, follow) =
                post_with_a_crash(&dir, &run_id, seed, &tmp.path().join("collector"));
            let mut served = answers(&served, tmp.path());
            same_verdict_as_served(&format!("seed {seed}, the live stream"), follow, &served);
            let reference = answers(&dir, tmp.path());
            let path = format!("seed {seed}, the served bundle");
            declared_by_the_rule(&path, &dir, &reference, &mut served);
            same_answers(&path, &reference, &served);
        }
    }
}
