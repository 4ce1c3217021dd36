//! The bodies the collector quarantines, from the post to the fleet dataset: the example run is
//! posted to `diagwire serve` with bodies that are not records of their kind among its posts, and
//! the served bundle, exported with `diagwire export` (exit status 0: a quarantined body is a row,
//! not a file left out), answers `diagwire query` with one `quarantine` row per body and
//! `quarantined_per_node` counts per node equal to `diagwire validate`'s "quarantined at ingest"
//! problems of the same bundle; each reason prints escaped.

#![cfg(all(feature = "fleet", feature = "serve"))]

use std::collections::BTreeMap;

use crate::common;
use common::collector::{make, post, posts, serve, served};
use common::{diagwire, repo, text};
use serde_json::Value;

const RUN: &str = "quarantined-run";

/// A body a node posts that is not a record of its kind: route, node id, body, and whether the
/// collector answers 200 (a JSON body) or refuses it (404 for an unknown kind).
struct Bad {
    route: &'static str,
    node: &'static str,
    body: &'static [u8],
    accepted: bool,
}

const BAD: &[Bad] = &[
    Bad {
        route: "/diag/boot",
        node: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        body: b"[1]",
        accepted: true,
    },
    Bad {
        route: "/diag/snapshot",
        node: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        body: b"{\"wall_ms\": \"\\u001b[2J\"}",
        accepted: true,
    },
    Bad {
        route: "/diag/metrics",
        node: "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
        body: b"x=1",
        accepted: false,
    },
];

fn json(args: &[&str]) -> Value {
    let out = diagwire(args);
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{args:?}: {}",
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

#[test]
fn the_collectors_quarantine_is_a_row_per_body_counted_per_node_as_validate_reports_it() {
    let root = tempfile::tempdir().unwrap();
    let (_collector, addr) = serve(root.path());
    let example = repo().join("examples/bundles/n3-relay-flap");
    let all = posts(&example);
    let (last, before) = all.split_last().expect("the example has posts");
    for p in before {
        make(&addr, RUN, p);
    }
    for bad in BAD {
        let status = post(&addr, bad.route, RUN, bad.node, bad.body);
        assert_eq!(
            status.contains(" 200 "),
            bad.accepted,
            "{}: {status}",
            bad.route
        );
    }
    make(&addr, RUN, last);
    let bundle = served(root.path(), RUN);
    let bundle_arg = bundle.to_string_lossy().into_owned();

    let data = root.path().join("data");
    let data_arg = data.to_string_lossy().into_owned();
    let out = diagwire(&["export", &bundle_arg, "--to", &data_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains(&format!("quarantine {}", BAD.len())),
        "export counts the rows: {said}"
    );

    let rows = json(&[
        "query",
        &data_arg,
        "SELECT node, route, bytes FROM quarantine ORDER BY node, file",
        "--format",
        "json",
    ]);
    let got: Vec<(String, String, u64)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["node"].as_str().unwrap().to_owned(),
                r["route"].as_str().unwrap().to_owned(),
                r["bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, String, u64)> = BAD
        .iter()
        .map(|b| {
            let kind = b.route.trim_start_matches("/diag/");
            (b.node.to_owned(), kind.to_owned(), b.body.len() as u64)
        })
        .collect();
    assert_eq!(got, want, "one row per body posted");

    // The view's counts per node are validate's problems per node.
    let view = json(&[
        "query",
        &data_arg,
        "SELECT node, bodies FROM quarantined_per_node WHERE run_id = 'quarantined-run'",
        "--format",
        "json",
    ]);
    let counted: BTreeMap<String, u64> = view
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["node"].as_str().unwrap().to_owned(),
                r["bodies"].as_u64().unwrap(),
            )
        })
        .collect();
    let validated = json(&["validate", &bundle_arg, "--format", "json"]);
    let mut reported: BTreeMap<String, u64> = BTreeMap::new();
    for p in validated["problems"].as_array().unwrap() {
        if !p["message"]
            .as_str()
            .unwrap()
            .starts_with("quarantined at ingest: ")
        {
            continue;
        }
        let file = p["file"].as_str().unwrap();
        let (_, rest) = file.split_once("@quarantine/").expect("in the quarantine");
        *reported
            .entry(rest.split('/').next().unwrap().to_owned())
            .or_default() += 1;
    }
    assert_eq!(counted, reported, "per node, as validate reports them");
    assert_eq!(reported.values().sum::<u64>(), BAD.len() as u64);

    // The reasons print escaped: nothing hidden reaches the terminal.
    let out = diagwire(&[
        "query",
        &data_arg,
        "SELECT reasons, problems FROM quarantine",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(
        !shown.chars().any(|c| c.is_control() && c != '\n'),
        "{shown:?}"
    );
    assert!(shown.contains("posted to /diag/boot"), "{shown}");
}
