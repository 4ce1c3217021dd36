//! `diagwire replay`: the example bundle, posted to a collector as its nodes would, comes back
//! from it with the same records, node by node and kind by kind, and validates; a collector that
//! is not there is a failure that says how many posts were not acknowledged; a bundle that
//! cannot be read is a replay that cannot run.
#![cfg(feature = "serve")]

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::collector::{serve, served};
use common::{diagwire_within, repo, text};
use diagwire::bundle::read::{Limits, read_all};
use diagwire::layout::{Role, parse_bundle_path};
use diagwire_testkit::proxy::{Proxy, Schedule};
use serde_json::Value;

/// The longest one run of the binary may take.
const LIMIT: Duration = Duration::from_secs(300);

/// A bundle's records: per node label and record kind, in order (numbered files by number, then
/// the latest `boot.json`/`finalize.json`; an events file's records one by one).
fn records(bundle: &Path) -> BTreeMap<(String, String), Vec<Value>> {
    let (contents, errors) = read_all(bundle, Limits::default()).expect("the bundle reads");
    assert!(errors.is_empty(), "{errors:?}");
    let mut numbered: BTreeMap<(String, String), BTreeMap<u64, Value>> = BTreeMap::new();
    let mut latest: BTreeMap<(String, String), Value> = BTreeMap::new();
    for (path, bytes) in &contents.files {
        let at = parse_bundle_path(path);
        let (Some(node), Some(kind)) = (at.node.clone(), at.role.file_kind()) else {
            continue;
        };
        let key = (node, kind.staged_stem());
        let value: Value = serde_json::from_slice(bytes).expect("a record file is JSON");
        match at.role {
            Role::Numbered(_, seq) => {
                numbered.entry(key).or_default().insert(seq, value);
            }
            _ => {
                latest.insert(key, value);
            }
        }
    }
    let mut out: BTreeMap<(String, String), Vec<Value>> = BTreeMap::new();
    for (key, files) in numbered {
        let list = out.entry(key.clone()).or_default();
        for (_, value) in files {
            match (key.1.as_str(), value) {
                ("events", Value::Array(events)) => list.extend(events),
                (_, value) => list.push(value),
            }
        }
    }
    for (key, value) in latest {
        out.entry(key).or_default().push(value);
    }
    out
}

fn example() -> PathBuf {
    repo().join("examples/bundles/n3-relay-flap")
}

/// The example bundle as a `.tar.gz` in `dir`.
fn archived(dir: &Path) -> PathBuf {
    let path = dir.join("n3-relay-flap.tar.gz");
    let file = std::fs::File::create(&path).unwrap();
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    tar.append_dir_all("n3-relay-flap", example()).unwrap();
    tar.into_inner().unwrap().finish().unwrap();
    path
}

/// How a replay reaches the collector.
enum Way {
    /// Straight.
    Direct,
    /// Through a proxy that faults by this schedule, a connection per post so that each post
    /// meets the schedule (a retried post may then reach the collector twice).
    Faulty(Schedule),
}

/// Replays `bundle` (whose records are `original`'s, the run `run` in it) into a fresh
/// collector (as `run_id` when given) along `way` and checks the served bundle: the same records
/// as the original, each once, kind by kind and node by node, and valid.
fn check_replayed(bundle: &Path, original: &Path, run: &str, run_id: Option<&str>, way: Way) {
    let root = tempfile::tempdir().unwrap();
    let (_collector, addr) = serve(root.path());
    let proxy = match &way {
        Way::Direct => None,
        Way::Faulty(schedule) => {
            let addr = addr.parse().expect("the collector's address");
            Some(Proxy::start(addr, schedule.clone()).expect("the proxy starts"))
        }
    };
    let url = match &proxy {
        None => format!("http://{addr}"),
        Some(proxy) => format!("http://{}", proxy.addr),
    };
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "replay".as_ref(),
        bundle.as_os_str(),
        "--collector".as_ref(),
        url.as_ref(),
    ];
    if let Some(id) = run_id {
        args.push("--run-id".as_ref());
        args.push(id.as_ref());
    }
    if proxy.is_some() {
        args.push("--connection-per-post".as_ref());
    }
    let out = diagwire_within(&args, LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("acknowledged"),
        "{}",
        text(&out.stderr)
    );
    if let Some(proxy) = &proxy {
        // [passed, dropped, lost answers, reset, delayed, partitioned]
        let [_, dropped, lost, ..] = proxy.counts();
        assert!(
            dropped > 0 && lost > 0,
            "the schedule dropped {dropped} requests and lost {lost} answers"
        );
    }

    let served = served(root.path(), run_id.unwrap_or(run));
    let (mut want, got) = (records(original), records(&served));
    if let Some(id) = run_id {
        // The records that name their run name the new one; the others are unchanged.
        for records in want.values_mut() {
            for r in records {
                for own in own_run_ids(r) {
                    *own = Value::from(id);
                }
            }
        }
        check_every_run_id_is(&got, id);
    }
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "the nodes and record kinds"
    );
    for (key, records) in &want {
        assert_eq!(&got[key], records, "{key:?}");
    }
    let validated = diagwire_within(&["validate".as_ref(), served.as_os_str()], LIMIT);
    assert_eq!(
        validated.status.code(),
        Some(0),
        "{}{}",
        text(&validated.stdout),
        text(&validated.stderr)
    );
}

/// The run ids a record carries of its own: its `run_id` (a boot record's, a snapshot's, an
/// event's) and a snapshot's `identity.run_id`, where they name a run (not null).
fn own_run_ids(record: &mut Value) -> Vec<&mut Value> {
    let Some(o) = record.as_object_mut() else {
        return Vec::new();
    };
    let mut ids = Vec::new();
    for (key, value) in o.iter_mut() {
        if key == "run_id" && value.is_string() {
            ids.push(value);
        } else if key == "identity" {
            ids.extend(value.get_mut("run_id").filter(|id| id.is_string()));
        }
    }
    ids
}

/// Every run id that every record of a served bundle carries is `id`, and boot records,
/// events and snapshots each carry some.
fn check_every_run_id_is(records: &BTreeMap<(String, String), Vec<Value>>, id: &str) {
    let mut named: BTreeMap<&str, usize> = BTreeMap::new();
    for ((node, kind), list) in records {
        for record in list {
            let mut record = record.clone();
            for own in own_run_ids(&mut record) {
                assert_eq!(
                    own.as_str(),
                    Some(id),
                    "{node}'s {kind} record names its run"
                );
                *named.entry(kind).or_default() += 1;
            }
        }
    }
    for kind in ["boot", "events", "snapshot"] {
        assert!(
            named.get(kind).is_some_and(|&n| n > 0),
            "no {kind} record names its run: {named:?}"
        );
    }
}

#[test]
fn a_replayed_directory_bundle_comes_back_with_the_same_records() {
    check_replayed(&example(), &example(), "n3-relay-flap", None, Way::Direct);
}

/// Replayed under another run id, every record that names its run (boot records, snapshots and
/// their identities, events) names the new one, and the served bundle validates clean.
#[test]
fn a_replayed_archive_under_another_run_id_comes_back_with_the_same_records() {
    let dir = tempfile::tempdir().unwrap();
    let archive = archived(dir.path());
    check_replayed(
        &archive,
        &example(),
        "n3-relay-flap",
        Some("moved-run"),
        Way::Direct,
    );
}

/// A legacy run replayed through a proxy that drops 15% of the requests and loses 15% of the
/// answers (the collector stored the post, the node never heard and posts it again): every
/// record comes back exactly once, for each seed.
#[test]
fn a_legacy_run_replayed_through_lost_requests_and_lost_answers_comes_back_exactly_once() {
    let oldest = repo().join("examples/bundles/n3-relay-flap-oldest");
    for seed in [1, 2] {
        let schedule = Schedule {
            seed,
            drop_request: 15,
            lose_answer: 15,
            reset_mid_body: 0,
            delay: 0,
            max_delay: Duration::ZERO,
            partition: 0,
            partition_for: Duration::ZERO,
        };
        check_replayed(
            &oldest,
            &oldest,
            &run_of(&oldest),
            None,
            Way::Faulty(schedule),
        );
    }
}

/// The run id the manifest of the bundle directory `dir` names.
fn run_of(dir: &Path) -> String {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("MANIFEST.json")).unwrap()).unwrap();
    manifest["run_id"].as_str().expect("run_id").to_owned()
}

/// A collector that is not there: nothing is acknowledged, the replay says how many posts were
/// not and exits 1; with `--spool`, the posts wait there, one folder per node.
#[test]
fn posts_a_collector_never_acknowledged_are_counted_and_kept_in_the_spool() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let spool = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let out = diagwire_within(
        &[
            "replay".as_ref(),
            example().as_os_str(),
            "--collector".as_ref(),
            url.as_ref(),
            "--timeout".as_ref(),
            "200ms".as_ref(),
            "--spool".as_ref(),
            spool.path().as_os_str(),
        ],
        LIMIT,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let files: usize = std::fs::read_dir(example())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|node| walk(&node.path()))
        .sum();
    assert!(
        stderr.contains(&format!("{files} posts were not acknowledged")),
        "{files} files: {stderr}"
    );
    let spooled: usize = walk(spool.path());
    assert_eq!(spooled, files, "every post is in the spool");
}

/// Files under `dir`, recursively.
fn walk(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| {
            if e.path().is_dir() {
                walk(&e.path())
            } else {
                1
            }
        })
        .sum()
}

/// What cannot be replayed at all exits 2 with a located error: a bundle that is not there, a
/// collector URL the emitter cannot post to.
#[test]
fn a_replay_that_cannot_run_exits_2() {
    let missing = repo().join("examples/bundles/no-such-bundle");
    let example = example();
    let cases: &[(&[&std::ffi::OsStr], &str)] = &[
        (
            &[
                "replay".as_ref(),
                missing.as_os_str(),
                "--collector".as_ref(),
                "http://127.0.0.1:9".as_ref(),
            ],
            "no-such-bundle",
        ),
        (
            &[
                "replay".as_ref(),
                example.as_os_str(),
                "--collector".as_ref(),
                "ftp://host".as_ref(),
            ],
            "collector URL \"ftp://host\"",
        ),
    ];
    for (args, want) in cases {
        let out = diagwire_within(args, LIMIT);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(want), "{want}: {stderr}");
    }
}
