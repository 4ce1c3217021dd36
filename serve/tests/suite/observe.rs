//! An observable collector: after a few posts (a boot, an events batch and its retry, a body that
//! is not JSON, a finalize) and with a live subscriber connected, `GET /metrics` (the Prometheus
//! text format, parsed) shows each counter moved as the posts say; and the binary with
//! `--log info --log-format json` writes one JSON line per request with its run, node, kind,
//! staging number, status, bytes and latency.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;

use common::*;
use diagwire_serve::client::{Connection, subscribe};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

const RUN: &str = "n3-relay-flap";

fn example(path: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/bundles/n3-relay-flap/stage-0")
            .join(path),
    )
    .unwrap()
}

/// A sample's name and labels, e.g. `diagwire_serve_posts_total` and `{kind: boot, status: 200}`.
type Sample = (String, BTreeMap<String, String>);

/// A sample's labels by name.
type Labels = BTreeMap<String, String>;

/// The samples of a Prometheus text page, comments left out.
fn parse(text: &str) -> BTreeMap<Sample, f64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample is `series value`");
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => (name, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        let labels = labels
            .split(',')
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (k, v) = l.split_once('=').expect("a label is k=\"v\"");
                (k.to_owned(), v.trim_matches('"').to_owned())
            })
            .collect();
        out.insert((name.to_owned(), labels), value.parse().unwrap());
    }
    out
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_move_with_the_posts() {
    bounded(30, async {
        let root = tempfile::tempdir().unwrap();
        let server = start(config(root.path())).await;
        let node = "node-a";
        let boot = example("boot.json");
        let events = example("events/events-000001.json");
        let records = serde_json::from_slice::<Vec<serde_json::Value>>(&events)
            .unwrap()
            .len() as f64;
        // A subscriber of another run, still connected when the metrics are read (this run's
        // stream ends at its finalize).
        let _sub = subscribe(&format!("http://{}/diag/stream/later", server.addr), None)
            .await
            .unwrap();
        let mut conn = Connection::new(server.addr);
        for (kind, body, status) in [
            ("boot", boot.clone(), 200),
            ("events", events.clone(), 200),
            ("events", events.clone(), 200),
            ("snapshot", b"not json".to_vec(), 400),
            ("finalize", br#"{"exit_reason":"completed"}"#.to_vec(), 200),
        ] {
            let reply = post(&mut conn, kind, RUN, node, &body).await;
            assert_eq!(reply.status, status, "{kind}");
        }
        let page = conn.get("/metrics").await.unwrap();
        assert_eq!(page.status, 200);
        let samples = parse(std::str::from_utf8(&page.body).unwrap());
        let posts = |kind, status| {
            (
                "diagwire_serve_posts_total",
                labels(&[("kind", kind), ("status", status)]),
            )
        };
        let plain = |name| (name, labels(&[]));
        let cases: Vec<((&str, Labels), f64)> = vec![
            (posts("boot", "200"), 1.0),
            (posts("events", "200"), 2.0),
            (posts("snapshot", "400"), 1.0),
            (posts("finalize", "200"), 1.0),
            (
                (
                    "diagwire_serve_post_bytes_total",
                    labels(&[("kind", "boot"), ("status", "200")]),
                ),
                boot.len() as f64,
            ),
            (plain("diagwire_serve_deduplicated_records_total"), records),
            (plain("diagwire_serve_quarantined_posts_total"), 1.0),
            (plain("diagwire_serve_conflicting_records_total"), 0.0),
            (
                (
                    "diagwire_serve_ack_seconds_count",
                    labels(&[("kind", "events")]),
                ),
                2.0,
            ),
            (plain("diagwire_serve_open_runs"), 1.0),
            (plain("diagwire_serve_live_subscribers"), 1.0),
            (plain("diagwire_serve_assemblies_total"), 1.0),
            (plain("diagwire_serve_assembly_seconds_count"), 1.0),
        ];
        let mut wrong = Vec::new();
        for ((name, l), want) in cases {
            let got = samples.get(&(name.to_owned(), l.clone())).copied();
            if got != Some(want) {
                wrong.push(format!("{name}{l:?}: {got:?}, expected {want}"));
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_is_one_json_log_line() {
    bounded(30, async {
        let root = tempfile::tempdir().unwrap();
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_diagwire-serve"))
            .args(["--listen", "127.0.0.1:0", "--log", "info", "--log-format", "json"])
            .arg("--root")
            .arg(root.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next_line().await.unwrap().unwrap();
        let addr = first.strip_prefix("listening on ").unwrap().parse().unwrap();
        let mut conn = Connection::new(addr);
        let boot = example("boot.json");
        assert_eq!(post(&mut conn, "boot", RUN, "node-a", &boot).await.status, 200);
        // A control character in a header (CSI, a C1 control) never reaches the log raw.
        let mut raw = tokio::net::TcpStream::connect(addr).await.unwrap();
        tokio::io::AsyncWriteExt::write_all(
            &mut raw,
            b"POST /diag/boot HTTP/1.1\r\nhost: t\r\nx-run-id: run\xc2\x9b31mx\r\nx-node-id: node-a\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
        )
        .await
        .unwrap();
        let mut reply = String::new();
        raw.read_to_string(&mut reply).await.unwrap();
        assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
        child.start_kill().unwrap();
        child.wait().await.unwrap();
        let mut log = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut log)
            .await
            .unwrap();
        assert!(
            !log.contains('\u{9b}'),
            "a control character reached the log"
        );
        let requests: Vec<serde_json::Value> = log
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("each line is JSON"))
            .filter(|l| l["target"] == "diagwire_serve::request")
            .collect();
        assert_eq!(requests.len(), 2, "{log}");
        let f = &requests[0]["fields"];
        assert_eq!(f["status"], 200);
        assert_eq!(f["run"], RUN);
        assert_eq!(f["node"], "node-a");
        assert_eq!(f["kind"], "boot");
        assert_eq!(f["seq"], 1);
        assert_eq!(f["bytes"], boot.len() as u64);
        assert!(f["latency_ms"].as_f64().is_some(), "{f}");
        assert_eq!(requests[1]["fields"]["status"], 400);
        assert!(requests[1]["fields"].get("seq").is_none(), "{log}");
    })
    .await;
}
