//! What the collector's tests share: a collector on a loopback port, posting as nodes, reading
//! and validating a served bundle.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use diagwire::bundle::BundleContents;
use diagwire::bundle::read::{Limits, read_all};
use diagwire::v1::{PostAck, RunsListing};
use diagwire::validate::{Report, Validators};
use diagwire_serve::client::{Connection, Reply};
use diagwire_serve::{Collector, Config};

/// A collector serving on 127.0.0.1, stopped when dropped.
pub struct Server {
    pub addr: SocketAddr,
    pub collector: Arc<Collector>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The bytes of `path` in the example bundle `examples/bundles/n3-relay-flap`.
pub fn example(path: &str) -> Vec<u8> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/bundles/n3-relay-flap")
        .join(path);
    std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The record at `path` in the example's node directory `stage-0`, as JSON.
pub fn stage0(path: &str) -> serde_json::Value {
    let path = format!("stage-0/{path}");
    serde_json::from_slice(&example(&path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The node id (hex) of the example's node `stage-0`.
pub fn stage0_node() -> String {
    stage0("boot.json")["node_id_hex"]
        .as_str()
        .expect("the example's boot record has node_id_hex")
        .to_owned()
}

/// The collector binary (`diagwire-serve`) on a free loopback port over `root`, its log off the
/// test's output, killed when dropped; with `capped`, under a 2 GiB address-space cap
/// (`ulimit -v`). Returns it and the address it says it listens on.
pub async fn spawn_binary(root: &Path, capped: bool) -> (tokio::process::Child, SocketAddr) {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let serve = env!("CARGO_BIN_EXE_diagwire-serve");
    let mut command = if capped {
        let mut sh = tokio::process::Command::new("sh");
        sh.arg("-c")
            .arg("ulimit -v 2097152 && exec \"$0\" \"$@\"")
            .arg(serve);
        sh
    } else {
        tokio::process::Command::new(serve)
    };
    let mut child = command
        .args([
            "--listen",
            "127.0.0.1:0",
            "--finalize-wait",
            "100ms",
            "--root",
        ])
        .arg(root)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the collector binary starts");
    let mut lines = BufReader::new(child.stdout.take().expect("its output")).lines();
    let first = lines
        .next_line()
        .await
        .expect("its output reads")
        .expect("the collector prints its address");
    let addr = first
        .strip_prefix("listening on ")
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("the collector did not say where it listens: {first:?}"));
    (child, addr)
}

/// A node's posts: its node id and, in order, each post's route (`boot`, `events`, …) and body.
pub type NodePosts = (String, Vec<(String, Vec<u8>)>);

/// The posts that send the bundle `contents` (whose manifest is `manifest`) back as its nodes
/// made them, in the library's [`PostPlan`](diagwire::layout::PostPlan) order: each node's own
/// posts, then the finalizes (node id and body) to be made after every other post.
pub fn node_posts(
    contents: &BundleContents,
    manifest: &diagwire::v1::Manifest,
) -> (Vec<NodePosts>, Vec<(String, Vec<u8>)>) {
    let plan = diagwire::layout::PostPlan::of(contents.files.keys().map(String::as_str));
    let id_of = |label: &str| -> String {
        let node = manifest.nodes.iter().find(|n| n.label == label);
        node.unwrap_or_else(|| panic!("node directory {label} is not in the manifest"))
            .node_id_hex
            .0
            .clone()
    };
    let body = |path: &str| contents.files[path].clone();
    let nodes = plan
        .nodes
        .iter()
        .map(|(label, posts)| {
            let posts = posts
                .iter()
                .map(|(kind, path)| (kind.staged_stem(), body(path)));
            (id_of(label), posts.collect())
        })
        .collect();
    let finalizes = plan
        .finalizes
        .iter()
        .map(|(label, _, path)| (id_of(label), body(path)))
        .collect();
    (nodes, finalizes)
}

/// A configuration for tests: a short finalize wait.
pub fn config(root: &Path) -> Config {
    let mut config = Config::new(root);
    config.finalize_wait = Duration::from_millis(100);
    config
}

pub async fn start(config: Config) -> Server {
    let collector = Collector::open(config).expect("the collector opens");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let c = collector.clone();
    tokio::spawn(async move {
        let _ = diagwire_serve::serve(listener, c, async {
            let _ = stopped.await;
        })
        .await;
    });
    Server {
        addr,
        collector,
        stop: Some(stop),
    }
}

/// Posts JSON as a node.
pub async fn post(conn: &mut Connection, kind: &str, run: &str, node: &str, body: &[u8]) -> Reply {
    conn.post(
        kind,
        run,
        node,
        1_779_733_870_000,
        "application/json",
        Bytes::copy_from_slice(body),
    )
    .await
    .expect("the collector answers")
}

/// The reply's body as JSON.
pub fn json(reply: &Reply) -> serde_json::Value {
    serde_json::from_slice(&reply.body).unwrap_or(serde_json::Value::Null)
}

/// A post's reply read as the contract's `PostAck` (`schemas/collector.schema.json`).
pub fn ack(reply: &Reply) -> Result<PostAck, String> {
    serde_json::from_slice(&reply.body).map_err(|e| {
        format!(
            "not a PostAck ({e}): {}",
            String::from_utf8_lossy(&reply.body).escape_debug()
        )
    })
}

/// A `GET /diag/runs` reply read as the contract's `RunsListing`.
pub fn listing(reply: &Reply) -> Result<RunsListing, String> {
    serde_json::from_slice(&reply.body).map_err(|e| {
        format!(
            "not a runs listing ({e}): {}",
            String::from_utf8_lossy(&reply.body).escape_debug()
        )
    })
}

/// Reads a served `.tar.gz` (through a file, as a reader would) and validates it.
pub fn open_bundle(tar: &[u8]) -> (BundleContents, Report) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bundle.tar.gz");
    std::fs::write(&path, tar).unwrap();
    let (contents, errors) = read_all(&path, Limits::default()).expect("the bundle reads");
    assert!(errors.is_empty(), "{errors:?}");
    let validators = Validators::new().unwrap();
    let mut reader = diagwire::validate::bundle::open(&path, Limits::default()).unwrap();
    let report =
        diagwire::validate::bundle::validate_bundle(&validators, &mut reader, &mut |_, _| {});
    (contents, report)
}

/// Runs `f` with a bound on its time.
pub async fn bounded<T>(secs: u64, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .expect("the test finished within its time bound")
}
