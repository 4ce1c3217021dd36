//! The collector's staging tree for the assembly and serve-decision tests: run [`RUN`] with nodes
//! [`ORCH`], [`STAGE_A`] … written from the wire fixtures, and what an assembly of it gave.
//!
//! The tests that use it include it on its own (`#[path = "common/staging.rs"] mod staging;`), so
//! they need only the feature `bundle`.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use diagwire::bundle::assemble::{Assembled, assemble};
use diagwire::v1::{BundleWriter, Manifest, WriterKind};

pub const RUN: &str = "run-2026-05-25-a7f3";

pub const ORCH: &str = "5f8a3c0e9b1d4f2a6c7e8091a2b3c4d5e6f708192a3b4c5d6e7f808192a3b4c5";
pub const STAGE_A: &str = "afae7c9954560276cd9bea9bfe46918bc12bffa6665b3fa9b6b146e7c54b5f97";
pub const STAGE_B: &str = "8039dee39733fbc3fb47085742683c99070993126b792617e35e38b0ede4b12f";
pub const STAGE_C: &str = "1b6e0c3d4f5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
pub const RELAY: &str = "c4e1f07a2b9d38e6a5f4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a2918d0e1";

macro_rules! fixture {
    ($path:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../compat-tests/fixtures/wire/",
            $path
        ))
    };
}

pub const BOOT_TEMPLATE: &str = fixture!("boot/stage-rental-id-only-in-container-id.json");
pub const EVENTS: &str = fixture!("event_batch/realistic-batch.json");
pub const EMPTY_EVENTS: &str = fixture!("event_batch/empty-batch.json");
pub const SNAPSHOT: &str = fixture!("snapshot/snap-minimal-empty-reachability.json");
pub const FINALIZE: &str = fixture!("finalize/exit-reason.json");
pub const FINALIZE_EMPTY: &str = fixture!("finalize/empty-object.json");
pub const VASTAI_INSTANCE: &str = fixture!("vastai/instance-pre-running-minimal.json");
pub const VASTAI_SAMPLE: &str = fixture!("vastai/host-sample-minimal.json");
pub const VASTAI_LOGS: &str = fixture!("vastai/logs-stdout.json");
pub const VASTAI_LIFECYCLE: &str = fixture!("vastai/lifecycle-deploy-start.json");
/// A boot record of role `stage` and stage index 1 without its `run_id`.
pub const BAD_BOOT: &str = fixture!("boot/invalid/missing-run-id.json");
pub const BAD_EVENTS: &str = fixture!("event_batch/invalid/one-record-missing-duration-ms.json");

/// A boot record (pretty JSON, as staged) of node `id` with the given role and stage index.
pub fn boot(id: &str, role: &str, stage_index: Option<u32>) -> String {
    let mut value: serde_json::Value = serde_json::from_str(BOOT_TEMPLATE).unwrap();
    value["node_id_hex"] = id.into();
    value["node_id_short"] = id[..8].into();
    value["role"] = role.into();
    value["stage_index"] = stage_index.into();
    serde_json::to_string_pretty(&value).unwrap() + "\n"
}

/// The collector, as the writer of every assembled bundle.
pub fn collector() -> BundleWriter {
    BundleWriter::new(WriterKind::Collector, "swactor-collector", "0.9.0")
}

/// A collector staging root holding run [`RUN`].
pub struct Staging(tempfile::TempDir);

impl Staging {
    pub fn new() -> Staging {
        let staging = Staging(tempfile::tempdir().unwrap());
        fs::create_dir_all(staging.run_dir()).unwrap();
        staging
    }

    pub fn root(&self) -> &Path {
        self.0.path()
    }

    pub fn run_dir(&self) -> PathBuf {
        self.root().join(RUN)
    }

    pub fn put(&self, node: &str, file: &str, bytes: impl AsRef<[u8]>) -> &Staging {
        let dir = self.run_dir().join(node);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(file), bytes).unwrap();
        self
    }

    pub fn put_at(&self, node: &str, file: &str, bytes: &str, mtime_ms: u64) -> &Staging {
        self.put(node, file, bytes);
        let f = fs::File::options()
            .write(true)
            .open(self.run_dir().join(node).join(file))
            .unwrap();
        f.set_modified(UNIX_EPOCH + Duration::from_millis(mtime_ms))
            .unwrap();
        self
    }

    pub fn remove(&self, node: &str, file: &str) {
        fs::remove_file(self.run_dir().join(node).join(file)).unwrap();
    }

    pub fn remove_node(&self, node: &str) {
        fs::remove_dir_all(self.run_dir().join(node)).unwrap();
    }

    pub fn assemble(&self) -> Assembled {
        assemble(self.root(), RUN, collector()).unwrap()
    }
}

pub fn labels(manifest: &Manifest) -> Vec<&str> {
    manifest.nodes.iter().map(|n| n.label.as_str()).collect()
}

pub fn paths(assembled: &Assembled) -> Vec<&str> {
    assembled
        .contents
        .files
        .keys()
        .map(String::as_str)
        .collect()
}

pub fn file<'a>(assembled: &'a Assembled, path: &str) -> &'a [u8] {
    assembled
        .contents
        .files
        .get(path)
        .unwrap_or_else(|| panic!("{path} not in the bundle: {:?}", paths(assembled)))
}

/// A place in staging, `<run_id>/<parts…>`, as problems are located.
pub fn at(parts: &[&str]) -> String {
    std::iter::once(RUN)
        .chain(parts.iter().copied())
        .collect::<Vec<_>>()
        .join("/")
}
