//! The summary of the shipped example bundles: every section has data or names its absence.

use std::path::{Path, PathBuf};

use diagwire::bundle::read::Limits;
use diagwire_summary::model::Bucket;
use diagwire_summary::{render, summarize};

fn example(run: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/bundles")
        .join(run)
}

#[test]
fn the_example_fills_every_section() {
    let s = summarize(&example("n3-relay-flap"), Limits::default()).expect("summary");
    let j = render::json(&s);
    assert_eq!(j["run"]["nodes"], 5);
    assert_eq!(j["validation"]["records"], 1196);
    assert_eq!(j["validation"]["problems"], 0);
    // Relay sessions: 4 closed by the relay when its listener restarted, 1 by the orchestrator.
    let totals = &j["relay_totals"][0];
    assert_eq!(totals["relay"], "relay");
    assert_eq!(
        (&totals["active"], &totals["opens"], &totals["closes"]),
        (&3.into(), &8.into(), &5.into())
    );
    let sessions = j["relay_sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 4);
    assert_eq!(
        sessions
            .iter()
            .filter(|c| c["initiator"] == "relay" && c["reason"] == "listener_restart")
            .count(),
        3
    );
    // Dials: three redials of the orchestrator are still in flight at the end.
    let dials = j["dials"].as_array().unwrap();
    let orch = dials.iter().find(|d| d["peer"] == "orchestrator").unwrap();
    assert_eq!(
        (
            &orch["started"],
            &orch["succeeded"],
            &orch["failed"],
            &orch["in_flight"]
        ),
        (&15.into(), &6.into(), &6.into(), &3.into())
    );
    // Every subprocess bucket appears.
    let buckets: Vec<(String, Bucket)> = s
        .subprocesses
        .iter()
        .map(|r| (r.node.clone(), r.bucket))
        .collect();
    for (node, bucket) in [
        ("stage-0", Bucket::NeverSpawned),
        ("stage-1", Bucket::Exited),
        ("stage-1", Bucket::Healthy),
        ("stage-2", Bucket::Stuck),
    ] {
        assert!(
            buckets.contains(&(node.to_owned(), bucket)),
            "{node} {bucket:?}: {buckets:?}"
        );
    }
    // Gossip of two kinds; the orchestrator gets no piggyback; the relay is no member of the
    // mesh, so its receiving nothing is no gap.
    assert_eq!(
        render::gossip_gaps(&s),
        ["`orchestrator` received no `swim_piggyback` gossip from anyone."]
    );
    // Kernel drops rise on the lossy stage-1 host.
    let drops: Vec<(String, String, i128)> = s
        .kernel_drops
        .iter()
        .filter(|(n, _, _)| n == "stage-1")
        .cloned()
        .collect();
    assert!(
        drops.contains(&("stage-1".into(), "udp.rcvbuf_errors".into(), 32)),
        "{drops:?}"
    );
    // Bandwidth: the pipeline's messages, by node, direction and kind and by peer.
    let by_kind = j["bandwidth"]["by_kind"].as_array().unwrap();
    assert_eq!(by_kind.len(), 7);
    assert_eq!(
        by_kind[0],
        serde_json::json!({"node": "orchestrator", "direction": "sent",
            "kind": "inference_request", "count": 5, "bytes": 9878})
    );
    assert_eq!(j["bandwidth"]["by_peer"].as_array().unwrap().len(), 7);
    // The orchestrator's connection cache gave the stages' last failure reasons.
    let from: Vec<(&str, &str)> = sessions
        .iter()
        .map(|c| {
            (
                c["peer"].as_str().unwrap(),
                c["node_last_failure_from"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(from.contains(&("stage-0", "orchestrator")), "{from:?}");
    assert!(from.contains(&("orchestrator", "stage-2")), "{from:?}");
    assert_eq!(j["first_dead"]["peer_probe_ok"], true);
    let md = render::markdown(&s);
    assert!(
        !md.contains("Not observed: no node of the run has the role `relay`"),
        "{md}"
    );
    assert!(!md.contains("No `GossipReceived` events."));
    assert!(
        md.contains("## Bandwidth (by node, by kind and peer)"),
        "{md}"
    );
}

#[test]
fn the_examples_say_every_absence_in_words() {
    for (run, want) in [
        (
            "n3-relay-flap",
            "- `orchestrator`: rental not applicable (a `local` host has no provider rental)",
        ),
        (
            "n3-relay-flap-oldest",
            "- contract version: not reported by this writer generation (a contract 1.0.0 writer",
        ),
    ] {
        let s = summarize(&example(run), Limits::default()).expect("summary");
        let md = render::markdown(&s);
        assert!(md.contains(want), "{run}: {md}");
        assert!(!md.contains('?'), "{run}: {md}");
        assert!(!diagwire_summary::html::page(&s).contains('?'), "{run}");
    }
}

#[test]
fn the_oldest_generation_example_names_what_it_lacks() {
    let s = summarize(&example("n3-relay-flap-oldest"), Limits::default()).expect("summary");
    let j = render::json(&s);
    assert_eq!(j["run"]["nodes"], 4);
    assert_eq!(j["run"]["contract_version"], serde_json::Value::Null);
    assert_eq!(j["validation"]["records"], 656);
    assert_eq!(j["validation"]["problems"], 0);
    let sections: Vec<&str> = s.absent.iter().map(|a| a.section).collect();
    for section in [
        "relay sessions",
        "probe RTT distribution",
        "gossip receipts",
        "inference responses",
    ] {
        assert!(sections.contains(&section), "{section}: {sections:?}");
    }
    // Workers are known from the legacy worker events: stage-1's first is killed, its second
    // comes up; the other stages never start one.
    let workers: Vec<(String, String, &str)> = j["subprocesses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["node"].as_str().unwrap().to_owned(),
                r["label"].as_str().unwrap().to_owned(),
                r["bucket"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        workers,
        [
            ("stage-0".into(), "-".into(), "never_spawned"),
            (
                "stage-1".into(),
                "worker #1 (legacy events, no pid)".into(),
                "exited"
            ),
            (
                "stage-1".into(),
                "worker #2 (legacy events, no pid)".into(),
                "healthy"
            ),
            ("stage-2".into(), "-".into(), "never_spawned"),
        ]
    );
    // Its host blocks have no drop counters: said once per node, not "nothing moved".
    let drops = s
        .absent
        .iter()
        .filter(|a| a.section == "kernel network drops")
        .count();
    assert_eq!(drops, 4);
    let md = render::markdown(&s);
    assert!(
        md.contains("the writers predate per-probe SWIM events"),
        "{md}"
    );
    assert!(
        md.contains("No node posted drop or error counters (see Absence)."),
        "{md}"
    );
}

/// Each example converted to the binary form (`.pb` record files, in a directory and in a
/// `.tar.gz`) summarizes to the same JSON as its JSON form, but for where it was read from and the
/// files' extension.
#[test]
fn each_example_summarizes_the_same_in_the_binary_form() {
    use diagwire::bundle::convert::convert;
    use diagwire::bundle::read::BundleReader;
    use diagwire::layout::Encoding;

    for run in ["n3-relay-flap", "n3-relay-flap-oldest"] {
        let json_form = example(run);
        let want = render::json(&summarize(&json_form, Limits::default()).expect("summary"));
        let mut reader = BundleReader::open(&json_form, Limits::default()).expect("opens");
        let (binary, problems) = convert(&mut reader, Encoding::Protobuf);
        assert!(problems.is_empty(), "{problems:?}");
        let pb = binary.files.keys().filter(|p| p.ends_with(".pb")).count();
        assert_eq!(
            pb,
            binary.files.len() - 1,
            "every record file but the manifest"
        );
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = diagwire::bundle::output::write_dir(&binary, tmp.path()).expect("write");
        let archive = tmp.path().join(format!("{run}.tar.gz"));
        diagwire::bundle::output::write_tar_gz(
            &binary,
            std::fs::File::create(&archive).expect("create"),
        )
        .expect("tar");
        for read_from in [dir, archive] {
            let got = render::json(&summarize(&read_from, Limits::default()).expect("summary"));
            let got = serde_json::to_string_pretty(&got)
                .expect("json")
                .replace(
                    &read_from.display().to_string(),
                    &json_form.display().to_string(),
                )
                .replace(".pb", ".json");
            let want = serde_json::to_string_pretty(&want).expect("json");
            assert_eq!(got, want, "{}", read_from.display());
        }
    }
}

#[test]
fn the_json_written_row_by_row_is_the_json_of_the_whole_value() {
    for run in ["n3-relay-flap", "n3-relay-flap-oldest"] {
        let s = summarize(&example(run), Limits::default()).unwrap();
        let whole = serde_json::to_string_pretty(&render::json(&s)).unwrap() + "\n";
        let mut written = Vec::new();
        render::write_json(&s, &mut written).unwrap();
        assert_eq!(String::from_utf8(written).unwrap(), whole, "{run}");
    }
    let empty = diagwire_summary::model::Summary {
        run_id: "r".into(),
        ..Default::default()
    };
    let whole = serde_json::to_string_pretty(&render::json(&empty)).unwrap() + "\n";
    let mut written = Vec::new();
    render::write_json(&empty, &mut written).unwrap();
    assert_eq!(String::from_utf8(written).unwrap(), whole, "no buckets");
}
