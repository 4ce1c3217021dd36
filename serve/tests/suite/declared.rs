//! The collector declares what the records are: a run posted by its nodes comes back with the
//! contract versions the original bundle declares (per node, and for the run: none for a 1.0.0
//! writer), so the summary's absence reasoning on the served bundle is the original's, and the
//! manifest's collector times are the ones `/diag/runs` reports. One case per run: the current
//! generation, the oldest generation, and a run whose nodes are of both.

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use common::*;
use diagwire::bundle::BundleContents;
use diagwire::bundle::read::{Limits, read_all};
use diagwire::layout::parse_bundle_path;
use diagwire::v1::Manifest;
use diagwire_serve::client::Connection;
use serde_json::Value;

/// The example bundles.
fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/bundles")
}

/// A run as its original bundle holds it.
struct Original {
    /// The bundle directory (`<dir>/<run_id>`).
    path: PathBuf,
    contents: BundleContents,
    manifest: Manifest,
    _dir: Option<tempfile::TempDir>,
}

fn example(name: &str) -> Original {
    let path = examples().join(name);
    let (contents, errors) = read_all(&path, Limits::default()).unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    let manifest = serde_json::from_slice(&contents.files["MANIFEST.json"]).unwrap();
    Original {
        path,
        contents,
        manifest,
        _dir: None,
    }
}

/// A run of both generations: the orchestrator and the relay of the current example (contract
/// 1.3.0 writers) and the stages of the oldest (1.0.0 writers), with the manifest such a run's
/// writers declare: each newer node its version, the run none (one of its writers declares none).
fn mixed() -> Original {
    let (new, old) = (example("n3-relay-flap"), example("n3-relay-flap-oldest"));
    let run_id = "n3-relay-flap-mixed";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(run_id);
    let mut manifest = Manifest::new(run_id.to_owned());
    for (from, labels) in [
        (&new, ["orchestrator", "relay"]),
        (&old, ["stage", "stage"]),
    ] {
        for node in &from.manifest.nodes {
            if labels.iter().any(|l| node.label.starts_with(l)) {
                manifest.nodes.push(node.clone());
            }
        }
        for (rel, bytes) in &from.contents.files {
            let at = parse_bundle_path(rel);
            if at
                .node
                .is_some_and(|n| labels.iter().any(|l| n.starts_with(l)))
            {
                let to = rel.split('/').fold(path.clone(), |p, c| p.join(c));
                fs::create_dir_all(to.parent().unwrap()).unwrap();
                fs::write(to, bytes).unwrap();
            }
        }
    }
    manifest.nodes.sort_by(|a, b| a.label.cmp(&b.label));
    manifest.finalize_received = true;
    manifest.run_start_collector_ms = new.manifest.run_start_collector_ms;
    manifest.run_end_collector_ms = new.manifest.run_end_collector_ms;
    fs::write(
        path.join("MANIFEST.json"),
        serde_json::to_vec_pretty(&manifest).unwrap(),
    )
    .unwrap();
    let (contents, errors) = read_all(&path, Limits::default()).unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    Original {
        path,
        contents,
        manifest,
        _dir: Some(dir),
    }
}

/// Posts every record of `original` as its nodes would (boots first, then events batches and
/// snapshots by number, the finalize after everyone), and returns the served bundle's path.
async fn post_and_serve(original: &Original, server: &Server, out: &Path) -> PathBuf {
    let run = original.manifest.run_id.clone();
    let mut conn = Connection::new(server.addr);
    let (nodes, mut finalizes) = node_posts(&original.contents, &original.manifest);
    for (node, posts) in nodes {
        for (route, body) in posts {
            let reply = post(&mut conn, &route, &run, &node, &body).await;
            assert_eq!(
                reply.status,
                200,
                "{}",
                String::from_utf8_lossy(&reply.body)
            );
        }
    }
    assert_eq!(finalizes.len(), 1, "the run has one finalize record");
    let (finalizer, body) = finalizes.remove(0);
    assert_eq!(
        post(&mut conn, "finalize", &run, &finalizer, &body)
            .await
            .status,
        200
    );
    let served = conn.get(&format!("/diag/bundle/{run}")).await.unwrap();
    assert_eq!(served.status, 200);
    let path = out.join(format!("{run}.tar.gz"));
    fs::write(&path, &served.body).unwrap();
    path
}

/// The contract versions a manifest declares: the run's, then each node's by node id.
fn declared(m: &Manifest) -> (Option<String>, BTreeMap<String, Option<String>>) {
    let nodes = m
        .nodes
        .iter()
        .map(|n| (n.node_id_hex.0.clone(), n.contract_version.clone()))
        .collect();
    (m.contract_version.clone(), nodes)
}

/// What the summary says is absent and why: the sections without data, each host's absent
/// fields, and the run's absent values other than `writer` (a served bundle names the collector
/// that wrote it, whatever generation its records are).
fn absences(bundle: &Path) -> Value {
    let summary = diagwire_summary::summarize(bundle, Limits::default()).unwrap();
    let json = diagwire_summary::render::json(&summary);
    let run: Vec<&Value> = json["run"]["absent"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["field"] != "writer")
        .collect();
    let hosts: BTreeMap<&str, &Value> = json["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["node"].as_str().unwrap(), &h["absent"]))
        .collect();
    serde_json::json!({ "sections": json["absent"], "hosts": hosts, "run": run })
}

/// Checks one run: posted and served, it declares what the original declares, the summary's
/// absences are the original's, and the collector times are those of `/diag/runs`.
async fn check_served_run(original: Original) {
    let root = tempfile::tempdir().unwrap();
    let server = start(config(root.path())).await;
    let served = post_and_serve(&original, &server, root.path()).await;
    let (contents, errors) = read_all(&served, Limits::default()).unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    let manifest: Manifest = serde_json::from_slice(&contents.files["MANIFEST.json"]).unwrap();

    assert_eq!(
        declared(&manifest),
        declared(&original.manifest),
        "the served manifest declares what the original declares"
    );
    assert_eq!(
        absences(&served),
        absences(&original.path),
        "the summary's absences of the served bundle are the original's"
    );

    let mut conn = Connection::new(server.addr);
    let runs = json(&conn.get("/diag/runs").await.unwrap());
    let listed = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run_id"] == manifest.run_id.as_str())
        .expect("/diag/runs lists the run");
    assert_eq!(
        (
            listed["run_start_collector_ms"].as_u64(),
            listed["run_end_collector_ms"].as_u64()
        ),
        (
            manifest.run_start_collector_ms,
            manifest.run_end_collector_ms
        ),
        "the manifest's collector times are those /diag/runs reports"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_current_run_comes_back_declaring_the_current_contract() {
    bounded(120, check_served_run(example("n3-relay-flap"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_run_comes_back_declaring_no_contract_version_as_its_writers_did() {
    bounded(120, check_served_run(example("n3-relay-flap-oldest"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_both_generations_comes_back_with_each_node_declaring_its_own() {
    bounded(120, check_served_run(mixed())).await;
}
