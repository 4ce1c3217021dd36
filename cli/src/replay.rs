//! `diagwire replay BUNDLE --collector URL`: posts a bundle's records to a collector as its nodes
//! would, through the emitter library (`diagwire_emitter`): one emitter per node (its own
//! thread and connection, so nodes post concurrently), each node's records in its own order —
//! its boot records (the earlier ones, then the latest), its events files, its snapshots, its
//! vast.ai records — and every node's finalize records last, once the other records of every
//! node were acknowledged. Each file is posted as it is in the bundle (JSON or protobuf), an
//! events file as one post; with `--run-id`, every record that names its run is posted as JSON
//! naming the new one instead (a boot record's `run_id`, a snapshot's `run_id` and
//! `identity.run_id`, an event's `run_id`), so the run's records agree with it; finalize and
//! vast.ai records carry no run id and are posted unchanged. Used to move runs between
//! collectors, load-test one and reproduce an incident into a live `check --follow`.
//!
//! The bundle is read once through the library's reader, one file at a time: a node's queue
//! holds at most [`QUEUE`] files, and the sender waits while it is full, so memory stays
//! bounded whatever the bundle's size (the finalize records, at most a few per node, wait
//! until the end).
//!
//! Exit status: 0 when every record was acknowledged, 1 when some were not (or some files could
//! not be read), 2 when the replay could not run.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use diagwire::bundle::read::{BundleReader, Limits};
use diagwire::layout::{FileKind, Role, parse_bundle_path};
use diagwire::problem::printable;
use diagwire::v1::Manifest;
use diagwire_emitter::{Config, Emitter, Stats};

/// How many files a node's queue holds before the reader waits for its emitter.
const QUEUE: usize = 16;

/// The arguments.
pub struct Args {
    /// The bundle: a directory or a `.tar.gz`.
    pub bundle: PathBuf,
    /// The collector's base URL.
    pub collector: String,
    /// The run id to post under instead of the bundle's.
    pub run_id: Option<String>,
    /// A spool directory: each node's posts are spooled under `DIR/<node id>/`.
    pub spool: Option<PathBuf>,
    /// How long to wait for the acknowledgements at the end.
    pub timeout: Duration,
    /// Whether each post opens its own connection.
    pub connection_per_post: bool,
}

fn could_not_run(message: impl std::fmt::Display) -> ExitCode {
    crate::fail(&message.to_string())
}

/// One node of the bundle: its emitter and what it was given.
struct Node {
    emitter: Emitter,
    /// Files handed to the emitter.
    given: u64,
    /// The latest boot (`boot.json`), posted after the earlier ones (`boot/boot-NNNNNN.json`).
    latest_boot: Option<Vec<u8>>,
    /// Finalize records, posted last: the earlier ones, then `finalize.json`.
    finalizes: Vec<Vec<u8>>,
    latest_finalize: Option<Vec<u8>>,
}

/// `diagwire replay`.
pub fn replay(args: &Args) -> ExitCode {
    let shown = printable(&args.bundle.display().to_string()).into_owned();
    let manifest = match read_manifest(&args.bundle) {
        Ok(m) => m,
        Err(e) => return could_not_run(e),
    };
    let run_id = args
        .run_id
        .clone()
        .unwrap_or_else(|| manifest.run_id.clone());
    let mut reader = match BundleReader::open(&args.bundle, Limits::default()) {
        Ok(r) => r,
        Err(e) => return could_not_run(e),
    };
    let mut nodes: BTreeMap<String, Node> = BTreeMap::new();
    for entry in &manifest.nodes {
        let node_id = entry.node_id_hex.0.clone();
        let mut config = Config::new(args.collector.clone(), run_id.clone(), node_id.clone());
        config.queue_capacity = QUEUE;
        config.report_dropped = false;
        config.spool = args.spool.as_ref().map(|s| s.join(&node_id));
        config.keep_alive = !args.connection_per_post;
        let emitter = match Emitter::start(config) {
            Ok(e) => e,
            Err(e) => return could_not_run(e),
        };
        nodes.insert(
            entry.label.clone(),
            Node {
                emitter,
                given: 0,
                latest_boot: None,
                finalizes: Vec::new(),
                latest_finalize: None,
            },
        );
    }
    let progress = progress_bar(reader.file_count() as u64);
    let (mut unreadable, mut skipped) = (0u64, 0u64);
    for item in reader.files() {
        if let Some(bar) = &progress {
            bar.inc(1);
        }
        let file = match item {
            Ok(f) => f,
            Err(e) => {
                eprintln!("not posted: {shown}: {}", printable(&e.to_string()));
                unreadable += 1;
                continue;
            }
        };
        let at = parse_bundle_path(&file.path);
        // The manifest is the collector's to write; quarantined bodies and files outside the
        // layout were never records of a node.
        let (Some(label), Some(kind)) = (at.node.as_deref(), at.role.file_kind()) else {
            if at.role != Role::Manifest {
                skipped += 1;
            }
            continue;
        };
        let Some(node) = nodes.get_mut(label) else {
            eprintln!(
                "warning: {}: no node of the manifest has the label {}; not posted",
                printable(&file.location),
                printable(label)
            );
            skipped += 1;
            continue;
        };
        let latest = matches!(at.role, Role::Latest(_));
        let bytes = match (&args.run_id, kind) {
            (Some(id), FileKind::Boot | FileKind::Snapshot | FileKind::Events) => {
                match renamed(kind, at.encoding, &file.bytes, id) {
                    Ok(bytes) => bytes,
                    Err(e) => {
                        eprintln!(
                            "not posted: {}",
                            printable(&format!("{}: {e}", file.location))
                        );
                        unreadable += 1;
                        continue;
                    }
                }
            }
            _ => file.bytes,
        };
        match kind {
            FileKind::Boot if latest => node.latest_boot = Some(bytes),
            FileKind::Finalize if latest => node.latest_finalize = Some(bytes),
            FileKind::Finalize => node.finalizes.push(bytes),
            kind => {
                if !matches!(kind, FileKind::Boot)
                    && let Some(boot) = node.latest_boot.take()
                {
                    give(node, FileKind::Boot, boot, args.timeout);
                }
                give(node, kind.clone(), bytes, args.timeout);
            }
        }
    }
    for node in nodes.values_mut() {
        if let Some(boot) = node.latest_boot.take() {
            give(node, FileKind::Boot, boot, args.timeout);
        }
    }
    // Every other record is acknowledged (or left in the spool) before any finalize is posted:
    // a finalize makes the collector assemble the run.
    for node in nodes.values() {
        let _ = node.emitter.flush(args.timeout);
    }
    for node in nodes.values_mut() {
        let finalizes = std::mem::take(&mut node.finalizes);
        for body in finalizes.into_iter().chain(node.latest_finalize.take()) {
            give(node, FileKind::Finalize, body, args.timeout);
        }
    }
    if let Some(bar) = &progress {
        bar.finish_and_clear();
    }
    let mut total = Stats::default();
    let mut given = 0;
    for (_, node) in std::mem::take(&mut nodes) {
        given += node.given;
        let stats = node.emitter.finish(args.timeout);
        total.posted += stats.posted;
        total.rejected += stats.rejected;
        total.pending += stats.pending;
        total.quarantined += stats.quarantined;
        total.retried += stats.retried;
    }
    let missing = given.saturating_sub(total.posted);
    eprintln!(
        "replayed {shown} as run {}: {} of {given} posts acknowledged ({} retried{})",
        printable(&run_id),
        total.posted,
        total.retried,
        if total.quarantined > 0 {
            format!(", {} quarantined by the collector", total.quarantined)
        } else {
            String::new()
        }
    );
    if skipped > 0 {
        eprintln!("{skipped} files of the bundle are no record of a node and were not posted");
    }
    if missing > 0 || unreadable > 0 {
        if missing > 0 {
            eprintln!(
                "{missing} posts were not acknowledged ({} refused by the collector, {} still \
                 pending{})",
                total.rejected,
                total.pending,
                if args.spool.is_some() {
                    ", kept in the spool"
                } else {
                    ""
                }
            );
        }
        if unreadable > 0 {
            eprintln!("{unreadable} files of the bundle could not be read");
        }
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Hands one file to a node's emitter, waiting while its queue is full (at most `timeout`; a
/// file not taken by then is counted as not acknowledged).
fn give(node: &mut Node, kind: FileKind, body: Vec<u8>, timeout: Duration) {
    node.given += 1;
    node.emitter.raw_within(kind, body, timeout);
}

/// A boot record, a snapshot or an events file naming run `run_id` instead of its own, as JSON
/// whatever the file's encoding: every run id the record carries of its own ([`rename_run`]).
fn renamed(
    kind: &FileKind,
    encoding: diagwire::layout::Encoding,
    bytes: &[u8],
    run_id: &str,
) -> Result<Vec<u8>, String> {
    let text = diagwire::binary::json_text(encoding, kind.record_kind(), bytes)?;
    let mut record: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| format!("not JSON: {e}"))?;
    rename_run(kind, &mut record, run_id);
    // Written like every JSON the tool writes (`\uXXXX` for what a terminal would interpret):
    // the same value, which the collector stores as posted.
    diagwire::problem::json_compact(&record)
        .map(String::into_bytes)
        .map_err(|e| e.to_string())
}

/// Sets the run ids a record of `kind` carries of its own to `run_id`: a boot record's `run_id`,
/// a snapshot's `run_id` and `identity.run_id`, and, in an events file (an array of events, or
/// one event), each event's `run_id` where it names a run (an event not tied to a run, its
/// `run_id` absent or null, stays so).
fn rename_run(kind: &FileKind, record: &mut serde_json::Value, run_id: &str) {
    use serde_json::Value;
    let id = Value::String(run_id.to_owned());
    match kind {
        FileKind::Events => {
            let events = match record {
                Value::Array(events) => events.iter_mut().collect::<Vec<_>>(),
                one => vec![one],
            };
            for event in events {
                if let Some(own) = event.get_mut("run_id").filter(|v| v.is_string()) {
                    *own = id.clone();
                }
            }
        }
        _ => {
            if let Some(o) = record.as_object_mut() {
                o.insert("run_id".into(), id.clone());
                if let Some(identity) = o.get_mut("identity").and_then(|i| i.as_object_mut()) {
                    identity.insert("run_id".into(), id);
                }
            }
        }
    }
}

/// The bundle's manifest: the first pass of the reader, stopped at `MANIFEST.json`.
fn read_manifest(bundle: &Path) -> Result<Manifest, String> {
    let shown = printable(&bundle.display().to_string()).into_owned();
    let mut reader = BundleReader::open(bundle, Limits::default()).map_err(|e| e.to_string())?;
    for item in reader.files() {
        let Ok(file) = item else { continue };
        if file.path == "MANIFEST.json" {
            return serde_json::from_slice(&file.bytes)
                .map_err(|e| format!("{shown}: MANIFEST.json: {e}"));
        }
    }
    Err(format!(
        "{shown}: no MANIFEST.json: the nodes' ids are unknown"
    ))
}

fn progress_bar(files: u64) -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(files);
    bar.set_style(
        indicatif::ProgressStyle::with_template("replaying {bar:40} {pos}/{len} files")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    Some(bar)
}
