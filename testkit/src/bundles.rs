//! The bundles of the hand-run benchmarks: a run of any size, generated deterministically from the
//! example run `n3-relay-flap` (`diagwire-example`). Its four nodes are copied into several
//! clusters with new node ids, and the run is repeated epoch after epoch with its clocks and
//! sequence numbers shifted, every event file holding a few of the example's batches. The bundle's
//! layout and manifest come from the library's [`diagwire::bundle::Writer`]; the files are written
//! one at a time into a gzip'd tar by the library's [`TarGzWriter`] (the bytes `write_tar_gz`
//! writes, as the collector serves them), so the generator never holds the bundle in memory.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use diagwire::bundle::Writer;
use diagwire::bundle::output::TarGzWriter;
use diagwire::bundle::read::{BundleReader, Limits};
use diagwire::layout::{self, FileKind, Role};
use diagwire::v1::{BundleWriter, Manifest, WriterKind};
use diagwire_example::bytes32;
use diagwire_runtime::SplitMix64;
use serde_json::Value;

/// How far one epoch shifts the run's clocks.
const EPOCH_MS: u64 = 120_000;
/// How far one epoch shifts the nodes' sequence numbers.
const EPOCH_SEQ: u64 = 100_000;
/// Node clusters (copies of the example's four nodes).
const CLUSTERS: usize = 4;
/// The example's event batches in one events file.
const BATCHES_PER_FILE: usize = 4;
/// A megabyte, as the bundles' names count it.
pub const MB: u64 = 1_000_000;

/// What a bundle kept from an earlier run holds.
pub fn measure(path: &Path) -> Made {
    let mut reader = BundleReader::open(path, Limits::default()).expect("the bundle opens");
    let mut made = Made {
        files: 0,
        raw_bytes: 0,
        gz_bytes: std::fs::metadata(path).expect("the bundle is there").len(),
    };
    for file in reader.files() {
        let file = file.expect("the bundle reads");
        made.files += 1;
        made.raw_bytes += file.bytes.len() as u64;
    }
    made
}

/// One node of the example run, as JSON values.
struct TemplateNode {
    id: [u8; 32],
    boot: Value,
    batches: Vec<Value>,
    snapshots: Vec<Value>,
    finalize: Option<Value>,
}

/// The example run, and the bytes one epoch of one cluster takes.
pub struct Template {
    nodes: Vec<TemplateNode>,
    span: (u64, u64),
    epoch_bytes: u64,
}

/// What was written.
pub struct Made {
    /// Files in the bundle.
    pub files: usize,
    /// Their bytes uncompressed.
    pub raw_bytes: u64,
    /// The archive's bytes.
    pub gz_bytes: u64,
}

/// How one copy of a node differs from the example's: node ids, clocks, sequence numbers.
struct Shift<'a> {
    ids: &'a HashMap<[u8; 32], [u8; 32]>,
    hexes: &'a [(String, String)],
    ms: u64,
    seq: u64,
}

impl Shift<'_> {
    fn apply(&self, v: &mut Value, key: &str) {
        match v {
            Value::Array(items) => {
                if items.len() == 32 {
                    let mut id = [0u8; 32];
                    let all = items.iter().zip(id.iter_mut()).all(|(x, b)| {
                        x.as_u64()
                            .and_then(|n| u8::try_from(n).ok())
                            .map(|n| *b = n)
                            .is_some()
                    });
                    if all && let Some(to) = self.ids.get(&id) {
                        *v = Value::from(to.to_vec());
                        return;
                    }
                }
                for item in items {
                    self.apply(item, key);
                }
            }
            Value::Object(map) => {
                for (k, item) in map.iter_mut() {
                    self.apply(item, k);
                }
            }
            Value::String(s) => {
                for (from, to) in self.hexes {
                    if s.contains(from.as_str()) {
                        *s = s.replace(from.as_str(), to);
                    }
                }
            }
            Value::Number(n) => {
                if let Some(x) = n.as_u64() {
                    if key.ends_with("_ms") && x > 1_000_000_000_000 {
                        *v = Value::from(x + self.ms);
                    } else if key == "monotonic_seq" {
                        *v = Value::from(x + self.seq);
                    }
                }
            }
            _ => {}
        }
    }
}

fn hex(id: &[u8; 32]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

fn pretty(v: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(v).expect("a value serializes");
    bytes.push(b'\n');
    bytes
}

impl Template {
    /// The example run `n3-relay-flap`, ready to be copied.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Template {
        let example = diagwire_example::n3_relay_flap();
        let json = |path: &str| -> Value {
            serde_json::from_slice(&example.files[path]).expect("the example's files are JSON")
        };
        let manifest: Manifest =
            serde_json::from_value(json(layout::MANIFEST)).expect("the example's manifest");
        let mut nodes = Vec::new();
        for node in &manifest.nodes {
            let hex = node.node_id_hex.0.clone();
            let mut id = [0u8; 32];
            for (i, b) in id.iter_mut().enumerate() {
                *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex");
            }
            let mut batches = Vec::new();
            let mut snapshots = Vec::new();
            let prefix = format!("{}/", node.label);
            for (path, bytes) in example.files.range(prefix.clone()..) {
                if !path.starts_with(&prefix) {
                    break;
                }
                match layout::parse_bundle_path(path).role {
                    Role::Numbered(FileKind::Events, _) => {
                        batches.push(serde_json::from_slice(bytes).expect("JSON"))
                    }
                    Role::Numbered(FileKind::Snapshot, _) => {
                        snapshots.push(serde_json::from_slice(bytes).expect("JSON"))
                    }
                    _ => {}
                }
            }
            let finalize = node
                .finalize_recorded
                .then(|| json(&format!("{}/finalize.json", node.label)));
            nodes.push(TemplateNode {
                id,
                boot: json(&format!("{}/boot.json", node.label)),
                batches,
                snapshots,
                finalize,
            });
        }
        let span = (
            manifest.run_start_collector_ms.unwrap_or(0),
            manifest.run_end_collector_ms.unwrap_or(0),
        );
        let epoch_bytes = example
            .files
            .iter()
            .filter(|(p, _)| p.contains("/events/") || p.contains("/snapshots/"))
            .map(|(_, b)| b.len() as u64)
            .sum();
        Template {
            nodes,
            span,
            epoch_bytes,
        }
    }

    /// Writes a bundle of about `target` bytes uncompressed as a gzip'd tar at `path`, its run
    /// named `bench-<MB>mb`.
    pub fn write(&self, target: u64, path: &Path) -> io::Result<Made> {
        self.write_run(target, path, &format!("bench-{}mb", target / MB))
    }

    /// [`Template::write`] for the run `run_id`: runs of other ids have other node ids.
    pub fn write_run(&self, target: u64, path: &Path, run_id: &str) -> io::Result<Made> {
        let epochs = target.div_ceil(self.epoch_bytes * CLUSTERS as u64).max(1);
        let run_id = run_id.to_owned();
        let seed = run_id.bytes().fold(0x7661_6c69_6461_7465u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        let mut rng = SplitMix64::new(seed);
        // Per cluster: template id → copy id.
        let clusters: Vec<HashMap<[u8; 32], [u8; 32]>> = (0..CLUSTERS)
            .map(|_| {
                self.nodes
                    .iter()
                    .map(|n| (n.id, bytes32(&mut rng)))
                    .collect()
            })
            .collect();
        let hexes: Vec<Vec<(String, String)>> = clusters
            .iter()
            .map(|ids| {
                let mut pairs: Vec<(String, String)> =
                    ids.iter().map(|(a, b)| (hex(a), hex(b))).collect();
                pairs.push((diagwire_example::RUN_ID.to_owned(), run_id.clone()));
                pairs
            })
            .collect();
        let shift = |c: usize, epoch: u64| Shift {
            ids: &clusters[c],
            hexes: &hexes[c],
            ms: epoch * EPOCH_MS,
            seq: epoch * EPOCH_SEQ,
        };
        // The layout and manifest from the Writer, with the numbered files as placeholders that
        // are generated while the archive is written.
        let writer = BundleWriter::new(WriterKind::Sim, "diagwire-validate-bench", "0");
        let mut bundle = Writer::new(run_id.clone(), writer);
        let mut plan: HashMap<(String, FileKind, u64), Gen> = HashMap::new();
        for (c, ids) in clusters.iter().enumerate() {
            for (t, node) in self.nodes.iter().enumerate() {
                let hex_id = hex(&ids[&node.id]);
                let mut boot = node.boot.clone();
                shift(c, 0).apply(&mut boot, "");
                bundle.add_file(&hex_id, FileKind::Boot, Some(1), pretty(&boot));
                let (mut events, mut snaps) = (0, 0);
                for epoch in 0..epochs {
                    for first in (0..node.batches.len()).step_by(BATCHES_PER_FILE) {
                        events += 1;
                        bundle.add_file(&hex_id, FileKind::Events, Some(events), Vec::new());
                        let what = GenFile::Events { first };
                        plan.insert(
                            (hex_id.clone(), FileKind::Events, events),
                            (c, t, epoch, what),
                        );
                    }
                    for index in 0..node.snapshots.len() {
                        snaps += 1;
                        bundle.add_file(&hex_id, FileKind::Snapshot, Some(snaps), Vec::new());
                        let what = GenFile::Snapshot { index };
                        plan.insert(
                            (hex_id.clone(), FileKind::Snapshot, snaps),
                            (c, t, epoch, what),
                        );
                    }
                }
                if let Some(f) = &node.finalize {
                    let mut f = f.clone();
                    shift(c, epochs - 1).apply(&mut f, "");
                    bundle.add_file(&hex_id, FileKind::Finalize, Some(1), pretty(&f));
                }
            }
        }
        bundle.collector_span(self.span.0, self.span.1 + (epochs - 1) * EPOCH_MS);
        let done = bundle.finish();
        assert!(done.problems.is_empty(), "{:?}", done.problems);
        let labels: HashMap<&str, &str> = done
            .manifest
            .nodes
            .iter()
            .map(|n| (n.label.as_str(), n.node_id_hex.0.as_str()))
            .collect();

        let out = BufWriter::with_capacity(1 << 20, File::create(path)?);
        let mut tar = TarGzWriter::new(&run_id, out)?;
        let mut made = Made {
            files: 0,
            raw_bytes: 0,
            gz_bytes: 0,
        };
        for (rel, bytes) in &done.contents.files {
            let generated;
            let bytes = if bytes.is_empty() {
                let at = layout::parse_bundle_path(rel);
                let (Some(label), Role::Numbered(kind, seq)) = (at.node.as_deref(), at.role) else {
                    panic!("a placeholder at {rel}");
                };
                let key = (labels[label].to_owned(), kind, seq);
                let (c, t, epoch, what) = &plan[&key];
                let node = &self.nodes[*t];
                let mut value = match what {
                    GenFile::Events { first } => Value::Array(
                        node.batches[*first..(*first + BATCHES_PER_FILE).min(node.batches.len())]
                            .iter()
                            .flat_map(|b| b.as_array().cloned().unwrap_or_default())
                            .collect(),
                    ),
                    GenFile::Snapshot { index } => node.snapshots[*index].clone(),
                };
                shift(*c, *epoch).apply(&mut value, "");
                generated = pretty(&value);
                &generated
            } else {
                bytes
            };
            tar.append(rel, bytes)?;
            made.files += 1;
            made.raw_bytes += bytes.len() as u64;
        }
        let mut out = tar.finish()?;
        out.flush()?;
        drop(out);
        made.gz_bytes = std::fs::metadata(path)?.len();
        Ok(made)
    }
}

/// Which example file a placeholder is made from: (cluster, template node, epoch, file).
type Gen = (usize, usize, u64, GenFile);

enum GenFile {
    Events { first: usize },
    Snapshot { index: usize },
}
