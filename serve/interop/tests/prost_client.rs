//! A client whose types prost-build generated from the contract's `.proto` posts protobuf
//! bodies to the collector: every node's boot, its first events batches and snapshots (read from
//! the example bundle, carried through the prost types) and a finalize built with the prost
//! types alone. The assembled bundle validates, and every record decodes to the JSON it started
//! as.

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use diagwire::bundle::read::{Limits, read_all};
use diagwire::layout::Encoding;
use diagwire::v1::RecordKind;
use diagwire_serve::client::Connection;
use diagwire_serve::{Collector, Config};
use diagwire_serve_interop::v1;
use prost::Message;

const PB: &str = "application/x-protobuf";

fn example() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bundles/n3-relay-flap")
}

/// The record at `path` of the example bundle, carried through the prost type `M`: encoded by
/// diagwire's codec, read into `M`, written again by prost.
fn through_prost<M: Message + Default>(
    kind: RecordKind,
    path: &str,
) -> (serde_json::Value, Vec<u8>) {
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(example().join(path)).unwrap()).unwrap();
    let ours = diagwire::binary::encode_value(Encoding::Protobuf, kind, &json).unwrap();
    let message =
        M::decode(ours.as_slice()).unwrap_or_else(|e| panic!("{path}: prost reads it: {e}"));
    (json, message.encode_to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_bodies_from_prost_types_come_back_as_the_same_json() {
    tokio::time::timeout(Duration::from_secs(60), run())
        .await
        .expect("bounded");
}

async fn run() {
    let root = tempfile::tempdir().unwrap();
    let mut config = Config::new(root.path());
    config.finalize_wait = Duration::from_millis(100);
    let collector = Collector::open(config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(diagwire_serve::serve(
        listener,
        collector,
        std::future::pending(),
    ));
    let mut conn = Connection::new(addr);

    // (bundle path it will have, the JSON it started as)
    let mut expected = Vec::new();
    let mut run_id = String::new();
    let mut orchestrator = String::new();
    for label in ["orchestrator", "relay", "stage-0", "stage-1", "stage-2"] {
        let (boot_json, boot) =
            through_prost::<v1::Identity>(RecordKind::Boot, &format!("{label}/boot.json"));
        let node = boot_json["node_id_hex"].as_str().unwrap().to_owned();
        run_id = boot_json["run_id"].as_str().unwrap().to_owned();
        if label == "orchestrator" {
            orchestrator = node.clone();
        }
        let mut posts = vec![("boot", boot, boot_json, format!("{label}/boot.pb"))];
        for n in 1..=3 {
            let (json, bytes) = through_prost::<v1::EventBatch>(
                RecordKind::EventBatch,
                &format!("{label}/events/events-{n:06}.json"),
            );
            posts.push((
                "events",
                bytes,
                json,
                format!("{label}/events/events-{n:06}.pb"),
            ));
        }
        for n in 1..=2 {
            let (json, bytes) = through_prost::<v1::Snapshot>(
                RecordKind::Snapshot,
                &format!("{label}/snapshots/snapshot-{n:06}.json"),
            );
            posts.push((
                "snapshot",
                bytes,
                json,
                format!("{label}/snapshots/snapshot-{n:06}.pb"),
            ));
        }
        for (kind, bytes, json, path) in posts {
            let reply = conn
                .post(kind, &run_id, &node, 0, PB, Bytes::from(bytes))
                .await
                .unwrap();
            assert_eq!(
                reply.status,
                200,
                "{path}: {}",
                String::from_utf8_lossy(&reply.body)
            );
            let ack: diagwire::v1::PostAck = serde_json::from_slice(&reply.body).unwrap();
            assert!(ack.problems.is_empty(), "{path}: {ack:?}");
            expected.push((path, json));
        }
    }
    // A finalize written with the prost types alone.
    let finalize = v1::Finalize {
        exit_reason: Some("completed".into()),
        ..Default::default()
    };
    let reply = conn
        .post(
            "finalize",
            &run_id,
            &orchestrator,
            0,
            PB,
            Bytes::from(finalize.encode_to_vec()),
        )
        .await
        .unwrap();
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    expected.push((
        "orchestrator/finalize.pb".into(),
        serde_json::json!({ "exit_reason": "completed" }),
    ));

    let served = conn.get(&format!("/diag/bundle/{run_id}")).await.unwrap();
    assert_eq!(served.status, 200);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bundle.tar.gz");
    std::fs::write(&path, &served.body).unwrap();
    let validators = diagwire::validate::Validators::new().unwrap();
    let mut reader = diagwire::validate::bundle::open(&path, Limits::default()).unwrap();
    let report =
        diagwire::validate::bundle::validate_bundle(&validators, &mut reader, &mut |_, _| {});
    assert!(report.is_clean(), "{:?}", report.problems);
    let (bundle, _) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(
        bundle.files.len(),
        expected.len() + 1,
        "every post and the manifest"
    );
    for (path, json) in expected {
        let bytes = &bundle.files[&path];
        let kind = diagwire::layout::parse_bundle_path(&path)
            .role
            .record_kind()
            .unwrap();
        let text = diagwire::binary::json_text(Encoding::Protobuf, kind, bytes).unwrap();
        let decoded: serde_json::Value = serde_json::from_slice(&text).unwrap();
        assert_eq!(decoded, json, "{path}");
    }
}
