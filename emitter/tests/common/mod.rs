//! What the emitter's tests share: a collector on 127.0.0.1 on a runtime of its own (the emitter
//! is blocking, the tests are plain threads), the records it accepted, in the order it accepted
//! them (its live stream), and the records a test posts.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use diagwire::NodeId;
use diagwire::v1::{
    EventRecord, Finalize, Identity, RunCompleted, Snapshot, SnapshotBody, SnapshotTrigger,
};
use diagwire_serve::client::{StreamEvent, Waited};
use diagwire_serve::{Collector, Config};

/// The longest any one wait of a test lasts: a bound, never an assertion on time.
pub const BOUND: Duration = Duration::from_secs(60);

/// A collector serving on 127.0.0.1, stopped when dropped.
pub struct Server {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(5));
        }
    }
}

/// A collector on `root`, on `port` (0: any free port), with a short finalize wait.
pub fn serve(root: &Path, port: u16) -> Server {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut config = Config::new(root);
    config.finalize_wait = Duration::from_millis(100);
    let collector = Collector::open(config).expect("the collector opens");
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(("127.0.0.1", port)))
        .expect("the port is free");
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    runtime.spawn(async move {
        let _ = diagwire_serve::serve(listener, collector, async {
            let _ = stopped.await;
        })
        .await;
    });
    Server {
        addr,
        stop: Some(stop),
        runtime: Some(runtime),
    }
}

/// A port nothing listens on (a collector that is down), to start one on later.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// What a collector accepted of a run, in the order it accepted it: (route kind, body).
pub fn accepted(addr: SocketAddr, run: &str, want: usize) -> Vec<(String, serde_json::Value)> {
    let url = format!("http://{addr}/diag/stream/{run}");
    let mut follow = diagwire_serve::client::follow(&url, Some(0)).expect("the stream opens");
    let mut out = Vec::new();
    while out.len() < want {
        match follow.wait(BOUND) {
            Waited::Item(Ok(StreamEvent::Record { record, .. })) => {
                let record = serde_json::to_value(&record).unwrap();
                let kind = record["kind"].as_str().unwrap_or_default().to_owned();
                out.push((kind, record["body"].clone()));
            }
            Waited::Item(Ok(StreamEvent::End { .. })) | Waited::Ended => break,
            Waited::Item(Ok(StreamEvent::Lagged { skipped })) => {
                panic!("the stream skipped {skipped} records")
            }
            Waited::Item(Err(e)) => panic!("the stream failed: {e}"),
            Waited::Nothing => panic!("the collector accepted {} of {want} posts", out.len()),
        }
    }
    out
}

/// The node every test posts as.
pub fn node() -> NodeId {
    NodeId::from([0x11; 32])
}

/// Event `seq` of the node.
pub fn event(run: &str, seq: u64) -> EventRecord {
    EventRecord::new(node(), seq, 1_779_733_870_000 + seq, RunCompleted::new(run))
}

/// The node's boot record.
pub fn boot(run: &str) -> Identity {
    let mut identity = Identity::new(
        node().to_hex(),
        node().short(),
        "stage",
        run,
        1_779_733_870_000,
        0,
    );
    identity.stage_index = Some(0);
    identity
}

/// Snapshot `n` of the node.
pub fn snapshot(run: &str, n: u64) -> Snapshot {
    Snapshot::new(
        boot(run),
        run,
        format!("{}-{n}", node().short()),
        1_779_733_875_000 + n,
        n,
        SnapshotTrigger::Periodic,
        SnapshotBody::new(vec![]),
    )
}

/// A finalize record.
pub fn finalize() -> Finalize {
    let mut f = Finalize::new();
    f.exit_reason = Some("completed".into());
    f
}

/// A record as the collector's stream gives it: the body with the keys the emitter adds taken
/// out, so it compares with what the test enqueued.
pub fn without_dropped(mut body: serde_json::Value) -> serde_json::Value {
    if let Some(o) = body.as_object_mut() {
        o.remove("diag_records_dropped");
    }
    body
}
