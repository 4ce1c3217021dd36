//! Upgrade of the simulator's prod-shape directory into the contract's bundle.
//!
//! The simulator writes a plain directory that looks like a collector bundle but is not one: every
//! record carries `schema_version` and `kind`, boot records have no identity, events sit in an
//! envelope with a `records` array and name their type `variant`, node ids are hex strings, and a
//! `sim/` folder holds the simulator's own files. [`upgrade`] reads such a directory and returns the
//! bundle in the collector layout with every record in the contract's types ([`Upgraded`]), plus
//! the list of everything that had no place in the contract, as [`Problem`]s, without writing
//! anything; [`upgrade_to`] writes the same bundle to disk as it goes instead
//! ([`diagwire::bundle::StreamWriter`]), so memory stays bounded whatever the directory holds.
//!
//! Every file written is within the reader's per-file limit ([`upgrade_within`]): an events file
//! is read one record at a time ([`stream`] below) and written as several numbered events files
//! when one would be too large, so the output always validates.
//!
//! The records go through the bundle [`Writer`](diagwire::bundle::Writer), which lays the files
//! out ([`diagwire::layout`]) and derives the manifest, so an upgraded bundle and its manifest
//! follow the same rules as an assembled one.
//! Which keys a record holds that the contract does not know, and which event fields hold node ids,
//! come from the generated shape table ([`diagwire::shape`]); every record is checked against the
//! contract's schemas ([`Validators`]) and parsed into its type before it is written.
//!
//! Mapping rules:
//!
//! * **Run id.** The manifest's `run_id`, else the first boot record's. It names the bundle's
//!   directory, so it must be one safe path component as it is (ASCII letters, digits, `.`, `_`
//!   and `-`, not `.` or `..`); anything else is refused rather than rewritten.
//! * **Nodes.** Every top-level directory with a boot, finalize, events or snapshots entry is a node.
//!   Its id is the directory name when that is a 64-character hex id, otherwise an id derived from
//!   the run id and the name (stable: the same input gives the same id; listed). Its label is the
//!   writer's: from the role and stage index of its latest boot record, `-<first 8 id chars>` added
//!   when several nodes would share one, `node-<first 8 id chars>` without a boot record.
//! * **Boot** (`boot.json`, then `boot-<n>.json` by number) → [`v1::Identity`]: `node_id_hex` and
//!   `node_id_short` from the node id, `role` `stage` when `stage_index` is set and otherwise the
//!   directory name, `run_id`, `process_start_unix_ms` from `wall_ms`, `boot_sequence`; every host
//!   field (`hostname`, `container_id`, versions, …) and `stage_count` are `null`. The latest boot is
//!   the bundle's `boot.json`, earlier ones are numbered under `boot/`.
//! * **Events** (`events/<boot_seq>.json`, one file per boot) → one events file each, a JSON array
//!   of [`v1::EventRecord`]: `variant` becomes `type`; the envelope `node_id` is the node's id;
//!   fields the contract types as node ids turn from hex strings (or a node's directory name) into
//!   byte arrays, and hex node-id fields from directory names into hex. A `Custom` event takes
//!   `user_kind` as its `kind` and its remaining keys as `fields`; `register_name` fields are renamed
//!   to the contract's (`address` → `actor_addr_hex`, `peer_node_id` → `our_node_id_hex`, plus
//!   `wall_ms` and the node's `stage_index`). An event whose type the contract does not know is kept
//!   as an unknown type (listed); one whose fields do not fit its type is kept as a `Custom` event of
//!   kind `sim.<type>` with its fields as written (listed).
//! * **Snapshots** (`snapshots/<idx>.json`) → one snapshot file each, a [`v1::Snapshot`] embedding
//!   the identity of the boot it belongs to. The trigger is mapped from a string (`Periodic`,
//!   `OnDemand`), the contract's `{kind, data}` form or serde's external form; anything else is kept
//!   as an unknown trigger kind (listed). Body blocks are kept when they fit the contract; the
//!   simulator's `host` block carries network fields at its own level, which move under
//!   `host.network` (`scraped_at_ms` taken from `refreshed_at_ms`). A block that does not fit is
//!   dropped (listed). The required `reachability` list, which the simulator does not record, is
//!   written empty (listed).
//! * **Finalize** (`finalize.json`, then `finalize-<n>.json` by number) → [`v1::Finalize`] with
//!   `exit_reason` = `shutdown_reason`; the latest is the bundle's `finalize.json`, earlier ones are
//!   numbered under `finalize/`.
//! * **Manifest** → derived by the writer from the files written, with `contract_version` and a
//!   writer of kind `sim` named [`WRITER_NAME`]; the simulator's manifest keys the contract does not
//!   know are kept as unknown keys (listed), those it does know are replaced (listed).
//!
//! What has no place is listed: the simulator's envelope keys `schema_version` and `kind` (dropped:
//! the contract names the record kind by the file's place), the files under `sim/`,
//! `detector/verdicts.json` and any other file outside the layout (not copied), and every key the
//! contract does not know (`duration_ms`, `mutation_count`, `origin`, `monotonic_seq` of a boot, …),
//! which the contract's types keep as unknown keys, so they are also written.
//!
//! Each problem is located in the simulator's directory: `location.file` is the path relative to
//! it (`/`-separated). A file holding one record (boot, snapshot, finalize, manifest) is record 0;
//! the records of an events file are the entries of its `records` array. `location.pointer` is a
//! JSON pointer into that record, and into the file itself for the keys of an events envelope
//! (which have no record index).
//!
//! The crate's files, one job each: `recognize` tells a simulator directory from anything else,
//! `input` reads its files within caps, `stream` parses a large
//! events file one record at a time, `scan` walks it into node directories, `identity` derives
//! each node's id and boot identities, `events`, `snapshot`, `finalize` and `manifest` map the
//! records onto the contract, `contract` asks the generated shape table which keys a record has,
//! `unmapped` builds the list of what had no place, and `upgrader` runs the pass.

use std::fs;
use std::io;
use std::path::Path;

use serde_json::{Map, Value};

use diagwire::Problem;
use diagwire::bundle::read::Limits;
use diagwire::bundle::{BundleContents, StreamWriter, Written};
use diagwire::v1;
use diagwire::validate::Validators;

mod contract;
mod events;
mod finalize;
mod identity;
mod input;
mod located;
mod manifest;
mod nodes;
mod recognize;
mod scan;
mod size;
mod snapshot;
mod stream;
mod unmapped;
mod upgrader;

pub use recognize::is_sim_prod_shape;

/// A JSON object.
pub(crate) type Object = Map<String, Value>;

/// The program name the upgraded bundle's manifest gives as its writer.
pub const WRITER_NAME: &str = "diagwire-upgrade";

/// An upgraded bundle: its files, its manifest (also in the files as `MANIFEST.json`), and every
/// item of the simulator's directory that could not be mapped onto the contract, sorted by
/// location.
#[derive(Debug, Clone, PartialEq)]
pub struct Upgraded {
    /// Every file of the run directory, `MANIFEST.json` included.
    pub contents: BundleContents,
    /// The manifest.
    pub manifest: v1::Manifest,
    /// What had no place in the contract, or did not fit it, and what the upgrade did with it.
    pub problems: Vec<Problem>,
}

/// Converts the simulator prod-shape directory `dir` into a bundle in the collector layout with
/// every record in the contract's types, and lists everything that had no place in the contract.
///
/// Every record written validates against the contract's schemas and parses into its type; a record
/// that cannot be made to fit is listed and left out. Fails when `dir` cannot be read (the I/O
/// error, e.g. `NotFound`), is not a simulator prod-shape directory ([`is_sim_prod_shape`];
/// `InvalidData`), or names no run id that can name a bundle directory as it is (a missing run id,
/// or one with control characters, path separators or anything else outside ASCII letters, digits,
/// `.`, `_` and `-`; `InvalidData`). Error messages do not repeat `dir`.
pub fn upgrade(dir: &Path) -> Result<Upgraded, io::Error> {
    upgrade_within(dir, Limits::default())
}

/// [`upgrade`], writing files that [`diagwire::bundle::read::BundleReader`] with `limits` reads:
/// an events file that would be over `limits.max_file_bytes` is split into several numbered
/// events files (in record order, each as large as fits), and a single record that would be over
/// it on its own is listed and left out. [`upgrade`] uses the default [`Limits`].
pub fn upgrade_within(dir: &Path, limits: Limits) -> Result<Upgraded, io::Error> {
    upgrader(dir, limits)?.run()
}

/// Where [`upgrade_to`] writes the bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output<'a> {
    /// The run directory `<parent>/<run_id>` under this parent directory (created when missing);
    /// an existing `<run_id>` that is not an empty directory is refused.
    Dir(&'a Path),
    /// A deterministic `.tar.gz` at this path, which must not exist; its directory must.
    TarGz(&'a Path),
}

/// [`upgrade_within`], writing the bundle to disk as it goes instead of returning it: every file
/// is written out as soon as it is made ([`StreamWriter`]), so memory holds one record (and the
/// events file being read, within the read cap) whatever the directory holds. The output is byte
/// for byte what [`upgrade_within`] returns, written as [`diagwire::bundle::output`] writes it;
/// it appears under its name only once complete, and nothing is left behind on failure.
/// [`Written::problems`] is the list of what had no place, as [`Upgraded::problems`].
pub fn upgrade_to(dir: &Path, limits: Limits, out: Output<'_>) -> Result<Written, Failed> {
    upgrader(dir, limits)
        .map_err(Failed::Input)?
        .run_to(|run_id, writer| match out {
            Output::Dir(parent) => StreamWriter::to_dir(parent, run_id, writer),
            Output::TarGz(path) => StreamWriter::to_tar_gz(path, run_id, writer),
        })
}

/// Why [`upgrade_to`] failed: the input could not be upgraded (as [`upgrade`] fails; the message
/// does not repeat the directory), or the output could not be written (nothing is left of it).
#[derive(Debug)]
pub enum Failed {
    /// The simulator's directory could not be read or is not one.
    Input(io::Error),
    /// The bundle could not be written.
    Output(io::Error),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Input(e) | Failed::Output(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Failed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Failed::Input(e) | Failed::Output(e) => Some(e),
        }
    }
}

/// The pass over `dir`, once it is known to be a simulator directory.
fn upgrader(dir: &Path, limits: Limits) -> Result<upgrader::Upgrader<'_>, io::Error> {
    if !fs::metadata(dir)?.is_dir() {
        return Err(invalid("not a directory".to_owned()));
    }
    if !is_sim_prod_shape(dir) {
        return Err(invalid(
            "not a simulator prod-shape directory (no MANIFEST.json with `kind: \"manifest\"` and \
             `origin: \"sim\"`, and no boot record with `schema_version` and `kind`)"
                .to_owned(),
        ));
    }
    let validators = Validators::new().map_err(|e| io::Error::other(e.to_string()))?;
    Ok(upgrader::Upgrader {
        root: dir,
        validators,
        names: std::collections::HashMap::new(),
        problems: Vec::new(),
        max_file_bytes: limits.max_file_bytes,
    })
}

pub(crate) fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}
