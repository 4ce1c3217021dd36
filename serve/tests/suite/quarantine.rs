//! One verdict on a served bundle with a quarantined body: `validate`, `summary` and `check`'s
//! `bundle.readable` report the same problems, one per body, located at the body, with the reason
//! the collector recorded (escaped), and the summary lists the body with its reason in every
//! format. One case per kind of quarantined body.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use diagwire::bundle::read::Limits;
use diagwire::validate::Validators;
use diagwire_serve::client::Connection;

/// A body posted to a route that the collector keeps in quarantine, and words its reason holds.
struct Case {
    route: &'static str,
    body: &'static [u8],
    status: u16,
    why: &'static str,
}

/// A boot record, so the run has a node besides its quarantine.
fn boot() -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/bundles/n3-relay-flap/stage-0/boot.json");
    std::fs::read(path).unwrap()
}

/// Posts the boot, the case's body and a finalize; returns the served bundle's path.
async fn served_with(case: &Case, root: &Path) -> PathBuf {
    let server = start(config(root)).await;
    let mut conn = Connection::new(server.addr);
    let identity: serde_json::Value = serde_json::from_slice(&boot()).unwrap();
    let (run, node) = (
        identity["run_id"].as_str().unwrap(),
        identity["node_id_hex"].as_str().unwrap(),
    );
    assert_eq!(
        post(&mut conn, "boot", run, node, &boot()).await.status,
        200
    );
    assert_eq!(
        post(&mut conn, case.route, run, node, case.body)
            .await
            .status,
        case.status
    );
    let fin = br#"{"exit_reason":"completed"}"#;
    assert_eq!(
        post(&mut conn, "finalize", run, node, fin).await.status,
        200
    );
    let served = conn.get(&format!("/diag/bundle/{run}")).await.unwrap();
    assert_eq!(served.status, 200);
    let path = root.join(format!("{run}.tar.gz"));
    std::fs::write(&path, &served.body).unwrap();
    path
}

/// Checks that the three tools agree on the served bundle and show the reason.
fn check_one_verdict(bundle: &Path, case: &Case) {
    let validators = Validators::new().unwrap();
    let mut reader = diagwire::validate::bundle::open(bundle, Limits::default()).unwrap();
    let report =
        diagwire::validate::bundle::validate_bundle(&validators, &mut reader, &mut |_, _| {});
    let validated: Vec<(String, String)> = report
        .problems
        .iter()
        .map(|p| (p.location.file.clone(), p.message.clone()))
        .collect();
    assert_eq!(
        validated.len(),
        1,
        "one problem for one body: {validated:?}"
    );
    let (file, message) = &validated[0];
    assert!(file.contains("!n3-relay-flap/@quarantine/"), "{file}");
    assert!(!file.ends_with(".why.json"), "located at the body: {file}");
    assert!(
        message.starts_with("quarantined at ingest: ") && message.contains(case.why),
        "{message}"
    );
    assert!(
        !message.chars().any(char::is_control),
        "escaped: {message:?}"
    );

    let summary = diagwire_summary::summarize(bundle, Limits::default()).unwrap();
    let json = diagwire_summary::render::json(&summary);
    let summarized: Vec<(String, String)> = json["validation"]["first"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let s = |k: &str| p[k].as_str().unwrap_or_default().to_owned();
            (s("file"), s("message"))
        })
        .collect();
    assert_eq!(json["validation"]["problems"], 1);
    assert_eq!(
        summarized, validated,
        "the summary's problems are validate's"
    );
    assert_eq!(json["validation"]["quarantined"], 1);
    let listed = &json["validation"]["quarantined_bodies"][0];
    assert_eq!(listed["file"], file.as_str());
    assert!(
        message.ends_with(listed["why"].as_str().unwrap()),
        "{listed}"
    );
    let markdown = diagwire_summary::render::markdown(&summary);
    let html = diagwire_summary::html::page(&summary);
    for (format, text) in [("md", &markdown), ("html", &html)] {
        assert!(
            text.contains("Quarantined at ingest") && text.contains(case.why),
            "the {format} summary lists the body with its reason"
        );
    }

    let checked = diagwire_check::check_bundle(
        bundle,
        Limits::default(),
        &diagwire_check::Rulebook::builtin(),
        diagwire_check::Options::default(),
        false,
    )
    .unwrap();
    let readable = checked
        .report
        .rules
        .iter()
        .find(|r| r.id == "bundle.readable")
        .expect("the rule book has bundle.readable");
    assert_eq!(
        readable.findings_total, 1,
        "check counts what validate counts"
    );
    assert_eq!(readable.findings[0].location.file, *file);
    assert!(readable.findings[0].message.contains(case.why));
}

async fn check_case(case: Case) {
    let root = tempfile::tempdir().unwrap();
    let bundle = served_with(&case, root.path()).await;
    check_one_verdict(&bundle, &case);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_not_json_is_one_problem_with_its_reason() {
    let case = Case {
        route: "snapshot",
        body: b"{",
        status: 400,
        why: "posted to /diag/snapshot",
    };
    bounded(60, check_case(case)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_body_that_is_not_a_record_of_its_kind_is_one_problem_with_its_reason() {
    let case = Case {
        route: "boot",
        body: b"[1, 2]",
        status: 200,
        why: "posted to /diag/boot",
    };
    bounded(60, check_case(case)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_of_an_unknown_kind_is_one_problem_with_its_reason() {
    let case = Case {
        route: "metrics",
        body: b"{}",
        status: 404,
        why: "posted to /diag/metrics: unknown record kind",
    };
    bounded(60, check_case(case)).await;
}
