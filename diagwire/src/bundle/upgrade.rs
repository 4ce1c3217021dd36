//! Upgrade of the simulator's prod-shape directory (legacy-wire §11.2) into the contract's bundle.
//!
//! The simulator writes a plain directory that looks like a collector bundle but is not one: every
//! record carries `schema_version` and `kind`, boot records have no identity, events sit in an
//! envelope with a `records` array and name their type `variant`, node ids are hex strings, and a
//! `sim/` folder holds the simulator's own files. [`upgrade`] reads such a directory and returns the
//! bundle in the collector layout (see [`super`]) with every record in the contract's types, plus the
//! list of everything that had no place in the contract ([`Unmapped`]). It never writes anything;
//! [`super::write`] does.
//!
//! Mapping rules:
//!
//! * **Nodes.** Every top-level directory with a boot, finalize, events or snapshots entry is a node.
//!   Its id is the directory name when that is a 64-character hex id, otherwise an id derived from
//!   the run id and the name (stable: the same input gives the same id; listed). Its label is
//!   [`super::node_label`] of its role and stage index; colliding labels get `-<first 8 id chars>`.
//! * **Boot** (`boot.json`, `boot-NNN.json`, oldest first) → [`crate::v1::Identity`]: `node_id_hex`
//!   and `node_id_short` from the node id, `role` `stage` when `stage_index` is set and otherwise the
//!   directory name, `run_id`, `process_start_unix_ms` from `wall_ms`, `boot_sequence`; every host
//!   field (`hostname`, `container_id`, versions, …) and `stage_count` are `null`. The latest boot is
//!   written as `<label>/boot.json`, earlier ones as `<label>/boot/boot-NNNNNN.json`.
//! * **Events** (`events/<boot_seq>.json`, one file per boot) → `<label>/events/events-NNNNNN.json`,
//!   a JSON array of [`crate::v1::EventRecord`]: `variant` becomes `type`; the envelope `node_id` is the
//!   node's id; typed node-id fields of known event types (`peer`, `target`, `source_peer`,
//!   `target_peer`) turn from hex strings (or a node's directory name) into byte arrays and
//!   `*_node_id_hex` fields from directory names into hex. A `Custom` event takes `user_kind` as its
//!   `kind` and its remaining keys as `fields`; `register_name` fields are renamed to the contract's
//!   (`address` → `actor_addr_hex`, `peer_node_id` → `our_node_id_hex`, plus `wall_ms` and the node's
//!   `stage_index`). An event whose type the contract does not know is kept as an unknown type
//!   (listed); one whose fields do not fit its type is kept as a `Custom` event of kind
//!   `sim.<type>` with its fields as written (listed).
//! * **Snapshots** (`snapshots/<idx>.json`) → `<label>/snapshots/snapshot-NNNNNN.json`, a
//!   [`crate::v1::Snapshot`] embedding the identity of the boot it belongs to. The trigger is mapped
//!   from a string (`Periodic`, `OnDemand`), the contract's `{kind, data}` form or serde's external
//!   form; anything else is kept as an unknown trigger kind (listed). Body blocks are kept when they
//!   fit the contract; the simulator's `host` block carries network fields at its own level, which
//!   move under `host.network` (`scraped_at_ms` taken from `refreshed_at_ms`). A block that does
//!   not fit is dropped (listed). The required `reachability` list, which the simulator does not
//!   record, is written empty (listed).
//! * **Finalize** (`finalize.json`, `finalize-NNN.json`, oldest first) → [`crate::v1::Finalize`] with
//!   `exit_reason` = `shutdown_reason`; the latest is `<label>/finalize.json`, earlier ones
//!   `<label>/finalize/finalize-NNNNNN.json`.
//! * **Manifest** → [`crate::v1::Manifest`] derived from the files written (one source of truth):
//!   `finalize_received`, per node its counts and flags, no collector times (there was no collector).
//!
//! What has no place is listed: the simulator's envelope keys `schema_version` and `kind` (dropped:
//! the contract names the record kind by the file's place), the files under `sim/`,
//! `detector/verdicts.json` and any other file outside the layout (not copied), and every key the
//! contract does not know (`duration_ms`, `mutation_count`, `origin`, `monotonic_seq` of a boot, …),
//! which the contract's types keep as unknown keys, so they are also written.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::path::Path;

use serde_json::{Map, Value, json};

use super::{BundleContents, node_label};
use crate::NodeId;
use crate::v1;
use crate::validate::{Validators, Violation};

/// A JSON object.
type Object = Map<String, Value>;

/// Largest file the upgrade reads; a bigger one is listed and skipped.
const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Largest `MANIFEST.json` or `boot.json` that recognition reads.
const MAX_PROBE_BYTES: u64 = 1024 * 1024;
/// Most top-level directories recognition looks into.
const MAX_PROBE_DIRS: usize = 10_000;
/// Deepest directory level listed inside a folder outside the layout.
const MAX_LIST_DEPTH: usize = 16;
/// Longest excerpt of a value quoted in an [`Unmapped`] entry, in characters.
const MAX_QUOTE: usize = 300;

/// Something in the simulator's directory that has no place in the contract, and what the upgrade
/// did with it (dropped, not copied, or kept as an unknown key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmapped {
    /// Where: the path relative to the simulator's directory (`/`-separated), followed by `#` and a
    /// JSON pointer when the entry is about one record or key of a file.
    pub path: String,
    /// What it was and what the upgrade did with it.
    pub what: String,
}

impl fmt::Display for Unmapped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.what)
    }
}

/// Whether `dir` is a simulator prod-shape directory: its `MANIFEST.json` is an object with
/// `kind: "manifest"` and `origin: "sim"` (or `schema_version`), or, without a readable manifest, a
/// node directory's `boot.json` carries `schema_version` and `kind: "boot"`. A collector bundle (whose
/// records carry neither) and an empty directory are not.
pub fn is_sim_prod_shape(dir: &Path) -> bool {
    let manifest = dir.join("MANIFEST.json");
    if is_regular_file(&manifest) {
        if let Ok(Value::Object(m)) = read_json(&manifest, MAX_PROBE_BYTES) {
            return is_sim_manifest(&m);
        }
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    for entry in entries.flatten().take(MAX_PROBE_DIRS) {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let boot = entry.path().join("boot.json");
        if !is_regular_file(&boot) {
            continue;
        }
        if let Ok(Value::Object(b)) = read_json(&boot, MAX_PROBE_BYTES) {
            if b.contains_key("schema_version") && b.get("kind") == Some(&json!("boot")) {
                return true;
            }
        }
    }
    false
}

/// Converts the simulator prod-shape directory `dir` into a bundle in the collector layout with
/// every record in the contract's types, and lists everything that had no place in the contract.
///
/// Every record written validates against the contract's schemas and parses into its type; a record
/// that cannot be made to fit is listed and left out. Fails when `dir` cannot be read (the I/O
/// error, e.g. `NotFound`), is not a simulator prod-shape directory ([`is_sim_prod_shape`];
/// `InvalidData`), or names no run id that can name a bundle directory (`InvalidData`).
pub fn upgrade(dir: &Path) -> Result<(BundleContents, Vec<Unmapped>), io::Error> {
    if !fs::metadata(dir)?.is_dir() {
        return Err(invalid(format!("{}: not a directory", dir.display())));
    }
    if !is_sim_prod_shape(dir) {
        return Err(invalid(format!(
            "{}: not a simulator prod-shape directory (no MANIFEST.json with `kind: \"manifest\"` and \
             `origin: \"sim\"`, and no boot record with `schema_version` and `kind`)",
            dir.display()
        )));
    }
    let validators = Validators::new().map_err(|e| io::Error::other(e.to_string()))?;
    let upgrader = Upgrader {
        root: dir,
        validators,
        schemas: Schemas::new(),
        names: HashMap::new(),
        unmapped: Vec::new(),
    };
    upgrader.run()
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

fn is_sim_manifest(m: &Object) -> bool {
    m.get("kind") == Some(&json!("manifest"))
        && (m.get("origin") == Some(&json!("sim")) || m.contains_key("schema_version"))
}

fn is_regular_file(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

/// The bytes of a file, or `None` when it is larger than `limit`.
fn read_limited(path: &Path, limit: u64) -> io::Result<Option<Vec<u8>>> {
    let file = fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

fn read_json(path: &Path, limit: u64) -> Result<Value, String> {
    match read_limited(path, limit) {
        Err(e) => Err(format!("unreadable ({e})")),
        Ok(None) => Err(format!("larger than {limit} bytes")),
        Ok(Some(bytes)) => serde_json::from_slice(&bytes).map_err(|e| format!("not JSON ({e})")),
    }
}

/// A value as JSON text, cut to [`MAX_QUOTE`] characters.
fn quote(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(MAX_QUOTE) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// The first violations, as `<pointer>: <message>`.
fn describe(violations: &[Violation]) -> String {
    let mut parts: Vec<String> = violations
        .iter()
        .take(3)
        .map(|v| {
            let at = if v.pointer.is_empty() {
                "/"
            } else {
                v.pointer.as_str()
            };
            format!("{at}: {}", v.message)
        })
        .collect();
    if violations.len() > 3 {
        parts.push(format!("… {} more", violations.len() - 3));
    }
    parts.join("; ")
}

fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// The node id a directory name or peer reference spells in hex (any case).
fn hex_node_id(s: &str) -> Option<NodeId> {
    if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        s.to_ascii_lowercase().parse().ok()
    } else {
        None
    }
}

/// A stable node id for a directory whose name is not a node id: FNV-1a over the run id, the name
/// and a counter, mixed with the SplitMix64 finalizer, for each 8 of the 32 bytes. The same run id and
/// name always give the same id, on every platform.
fn derived_node_id(run_id: &str, name: &str) -> NodeId {
    let mut out = [0u8; 32];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let seed = format!("diagwire-sim-node\0{run_id}\0{name}\0{i}");
        for b in seed.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        h ^= h >> 31;
        chunk.copy_from_slice(&h.to_be_bytes());
    }
    NodeId(out)
}

fn id_bytes(id: &NodeId) -> Value {
    Value::Array(id.0.iter().map(|b| Value::from(*b)).collect())
}

/// `<prefix><digits>.json` → the number.
fn numbered(name: &str, prefix: &str) -> Option<u32> {
    let digits = name.strip_prefix(prefix)?.strip_suffix(".json")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A run id that can name the bundle's top-level directory.
fn usable_run_id(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains(['/', '\\', '\0'])
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum EntryKind {
    File,
    Dir,
    Symlink,
    Other,
}

struct Entry {
    name: String,
    utf8: bool,
    kind: EntryKind,
}

/// The entries of a directory, sorted by name; symbolic links are reported as such, not followed.
fn entries(dir: &Path) -> io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let kind = match entry.file_type() {
            Ok(t) if t.is_symlink() => EntryKind::Symlink,
            Ok(t) if t.is_dir() => EntryKind::Dir,
            Ok(t) if t.is_file() => EntryKind::File,
            _ => EntryKind::Other,
        };
        let raw = entry.file_name();
        let (name, utf8) = match raw.to_str() {
            Some(s) => (s.to_owned(), true),
            None => (raw.to_string_lossy().into_owned(), false),
        };
        out.push(Entry { name, utf8, kind });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// What `sim/<file>` is, for its [`Unmapped`] entry.
fn describe_sim_file(rel: &str, path: &Path) -> String {
    let bytes = read_limited(path, MAX_PROBE_BYTES).ok().flatten();
    let text = bytes.as_deref().and_then(|b| std::str::from_utf8(b).ok());
    let what = match rel {
        "sim/seed" => match text.map(str::trim) {
            Some(seed) if !seed.is_empty() && seed.len() <= 40 => {
                format!("the simulator's run seed ({seed})")
            }
            _ => "the simulator's run seed".to_owned(),
        },
        "sim/spec.toml" => match text {
            Some(t) => format!(
                "the topology spec the simulator ran ({} lines)",
                t.lines().count()
            ),
            None => "the topology spec the simulator ran".to_owned(),
        },
        "sim/links_applied.json" => {
            match text.and_then(|t| serde_json::from_str::<Value>(t).ok()) {
                Some(Value::Array(a)) => {
                    format!(
                        "the link parameters the simulator applied ({} entries)",
                        a.len()
                    )
                }
                _ => "the link parameters the simulator applied".to_owned(),
            }
        }
        "sim/mutations.log" => match text {
            Some(t) => format!(
                "the simulator's mutation log ({} entries)",
                t.lines().filter(|l| !l.trim().is_empty()).count()
            ),
            None => "the simulator's mutation log".to_owned(),
        },
        _ => "a simulator-only file".to_owned(),
    };
    format!("{what}; simulator-only, the contract's layout has no place for it; not copied")
}

fn describe_stray(_rel: &str, _path: &Path) -> String {
    "a file outside the simulator's prod-shape layout; not copied".to_owned()
}

/// The files of one node directory of the simulator's layout, each as its relative path.
#[derive(Default)]
struct NodeDir {
    name: String,
    /// `(n, path)`: `boot.json` is 0, `boot-NNN.json` is NNN; oldest first.
    boots: Vec<(u32, String)>,
    finalizes: Vec<(u32, String)>,
    events: Vec<String>,
    snapshots: Vec<String>,
}

/// The top level of the simulator's directory.
struct Scanned {
    manifest: Option<Object>,
    dirs: Vec<NodeDir>,
}

/// One node while it is being upgraded.
struct Node {
    dir: NodeDir,
    id: NodeId,
    /// The identities of its readable boot records, oldest first, with their boot sequence.
    identities: Vec<(String, u32, Value)>,
    role: String,
    stage_index: Option<u32>,
    label: String,
}

impl Node {
    /// The identity of boot `boot_sequence` (else the latest); whether it matched.
    fn identity_for(&self, boot_sequence: Option<u32>) -> Option<(&Value, bool)> {
        if let Some(seq) = boot_sequence {
            if let Some((_, _, v)) = self.identities.iter().rev().find(|(_, s, _)| *s == seq) {
                return Some((v, true));
            }
        }
        self.identities.last().map(|(_, _, v)| (v, false))
    }

    /// An identity for snapshots of a node without a readable boot record.
    fn placeholder_identity(&self, run_id: &str) -> Value {
        json!({
            "node_id_hex": self.id.to_string(),
            "node_id_short": self.id.short(),
            "role": self.role,
            "stage_index": self.stage_index,
            "stage_count": null,
            "run_id": run_id,
            "vastai_contract_id": null,
            "host_ip_public": null,
            "host_country": null,
            "datacenter_id": null,
            "hostname": null,
            "container_id": null,
            "process_start_unix_ms": 0,
            "boot_sequence": 0,
            "binary_version": null,
            "git_sha": null,
            "iroh_version": null,
            "home_relay_url_at_boot": null,
        })
    }
}

/// What one node directory became in the bundle, for the manifest.
struct Written {
    boot: bool,
    events: u64,
    snapshots: u64,
    finalize: bool,
}

struct Upgrader<'a> {
    root: &'a Path,
    validators: Validators,
    schemas: Schemas,
    /// Node directory name → node id, to resolve peers named by directory.
    names: HashMap<String, NodeId>,
    unmapped: Vec<Unmapped>,
}

impl Upgrader<'_> {
    fn note(&mut self, path: impl Into<String>, what: impl Into<String>) {
        self.unmapped.push(Unmapped {
            path: path.into(),
            what: what.into(),
        });
    }

    fn run(mut self) -> io::Result<(BundleContents, Vec<Unmapped>)> {
        let Scanned { manifest, dirs } = self.scan()?;

        // Read every boot record first: the run id may come from one, and node ids come from it.
        let mut boots: Vec<Vec<(String, Object)>> = Vec::new();
        for dir in &dirs {
            let mut read = Vec::new();
            for (_, rel) in &dir.boots {
                if let Some(obj) = self.read_object(rel) {
                    read.push((rel.clone(), obj));
                }
            }
            boots.push(read);
        }
        let run_id = self.run_id(manifest.as_ref(), &boots)?;

        let mut nodes = Vec::new();
        for (dir, boots) in dirs.into_iter().zip(boots) {
            let node = self.node(dir, boots, &run_id);
            nodes.push(node);
        }
        self.assign_labels(&mut nodes);

        let mut bundle = BundleContents::new(run_id.clone());
        let mut written = Vec::new();
        for node in &nodes {
            written.push(self.write_node(node, &run_id, &mut bundle));
        }
        let manifest_value = self.manifest(manifest.as_ref(), &run_id, &nodes, &written);
        match self.parse("manifest", &manifest_value) {
            Ok(record) => bundle.insert_json("MANIFEST.json", &record),
            Err(why) => {
                return Err(invalid(format!(
                    "{}: the upgraded manifest does not fit the contract: {why}",
                    self.root.display()
                )));
            }
        }
        self.report_unknown(
            "MANIFEST.json",
            "manifest",
            "manifest",
            &manifest_value,
            None,
        );
        self.unmapped.sort_by(|a, b| a.path.cmp(&b.path));
        Ok((bundle, self.unmapped))
    }

    /// Walks the top level: the manifest, the node directories, and everything else (listed).
    fn scan(&mut self) -> io::Result<Scanned> {
        let mut manifest = None;
        let mut dirs = Vec::new();
        for e in entries(self.root)? {
            if !e.utf8 {
                self.note(&e.name, "a name that is not UTF-8; skipped");
                continue;
            }
            let path = self.root.join(&e.name);
            match (e.kind, e.name.as_str()) {
                (EntryKind::File, "MANIFEST.json") => manifest = self.read_object("MANIFEST.json"),
                (EntryKind::Dir, "sim") => self.list_tree("sim", &path, 0, describe_sim_file),
                (EntryKind::Dir, name) => {
                    if let Some(dir) = self.scan_node(name, &path) {
                        dirs.push(dir);
                    }
                }
                (EntryKind::Symlink, _) => self.note(&e.name, "a symbolic link; not followed"),
                _ => self.note(&e.name, describe_stray(&e.name, &path)),
            }
        }
        Ok(Scanned { manifest, dirs })
    }

    /// Lists every file under `path` as not copied, with `what` saying what it is.
    fn list_tree(&mut self, rel: &str, path: &Path, depth: usize, what: fn(&str, &Path) -> String) {
        if depth > MAX_LIST_DEPTH {
            self.note(
                rel,
                "a directory nested too deep; not listed further, not copied",
            );
            return;
        }
        let list = match entries(path) {
            Ok(list) => list,
            Err(e) => {
                self.note(rel, format!("an unreadable directory ({e}); not copied"));
                return;
            }
        };
        if list.is_empty() {
            self.note(
                rel,
                "an empty directory outside the contract's layout; not copied",
            );
        }
        for e in list {
            let child = format!("{rel}/{}", e.name);
            match e.kind {
                _ if !e.utf8 => self.note(child, "a name that is not UTF-8; skipped"),
                EntryKind::Dir => self.list_tree(&child, &path.join(&e.name), depth + 1, what),
                EntryKind::Symlink => self.note(child, "a symbolic link; not followed"),
                EntryKind::File => {
                    let text = what(&child, &path.join(&e.name));
                    self.note(child, text);
                }
                EntryKind::Other => self.note(child, "not a regular file; not copied"),
            }
        }
    }

    /// The files of a node directory; `None` when the directory holds no node records (its files
    /// are then listed). `detector/verdicts.json` is listed as the detector's output.
    fn scan_node(&mut self, name: &str, path: &Path) -> Option<NodeDir> {
        let list = match entries(path) {
            Ok(list) => list,
            Err(e) => {
                self.note(name, format!("an unreadable directory ({e}); skipped"));
                return None;
            }
        };
        let mut dir = NodeDir {
            name: name.to_owned(),
            ..NodeDir::default()
        };
        let mut record_dirs = false;
        let mut strays = Vec::new();
        for e in list {
            let rel = format!("{name}/{}", e.name);
            if !e.utf8 {
                self.note(rel, "a name that is not UTF-8; skipped");
                continue;
            }
            match (e.kind, e.name.as_str()) {
                (EntryKind::File, "boot.json") => dir.boots.push((0, rel)),
                (EntryKind::File, "finalize.json") => dir.finalizes.push((0, rel)),
                (EntryKind::File, "verdicts.json") if name == "detector" => {
                    let what = match read_json(&path.join(&e.name), MAX_FILE_BYTES) {
                        Ok(Value::Array(a)) => {
                            format!("the detector's verdicts ({} entries)", a.len())
                        }
                        _ => "the detector's verdicts".to_owned(),
                    };
                    self.note(
                        rel,
                        format!(
                            "{what}; simulator-only, the contract has no place for it; not copied"
                        ),
                    );
                }
                (EntryKind::File, n) if numbered(n, "boot-").is_some() => {
                    dir.boots.push((numbered(n, "boot-").unwrap_or(0), rel));
                }
                (EntryKind::File, n) if numbered(n, "finalize-").is_some() => {
                    dir.finalizes
                        .push((numbered(n, "finalize-").unwrap_or(0), rel));
                }
                (EntryKind::Dir, sub @ ("events" | "snapshots")) => {
                    record_dirs = true;
                    let files = self.scan_record_dir(&rel, &path.join(sub));
                    if sub == "events" {
                        dir.events = files;
                    } else {
                        dir.snapshots = files;
                    }
                }
                _ => strays.push((rel, e.kind, path.join(&e.name))),
            }
        }
        for (rel, kind, p) in strays {
            match kind {
                EntryKind::Dir => self.list_tree(&rel, &p, 1, describe_stray),
                EntryKind::Symlink => self.note(rel, "a symbolic link; not followed"),
                _ => {
                    let what = describe_stray(&rel, &p);
                    self.note(rel, what);
                }
            }
        }
        dir.boots.sort();
        dir.finalizes.sort();
        let is_node = record_dirs || !dir.boots.is_empty() || !dir.finalizes.is_empty();
        is_node.then_some(dir)
    }

    /// The `*.json` files of an `events/` or `snapshots/` directory, sorted; anything else is listed.
    fn scan_record_dir(&mut self, rel: &str, path: &Path) -> Vec<String> {
        let list = match entries(path) {
            Ok(list) => list,
            Err(e) => {
                self.note(rel, format!("an unreadable directory ({e}); skipped"));
                return Vec::new();
            }
        };
        let mut files = Vec::new();
        for e in list {
            let child = format!("{rel}/{}", e.name);
            match e.kind {
                _ if !e.utf8 => self.note(child, "a name that is not UTF-8; skipped"),
                EntryKind::File if e.name.ends_with(".json") => files.push(child),
                EntryKind::Dir => self.list_tree(&child, &path.join(&e.name), 2, describe_stray),
                EntryKind::Symlink => self.note(child, "a symbolic link; not followed"),
                _ => {
                    let text = describe_stray(&child, &path.join(&e.name));
                    self.note(child, text);
                }
            }
        }
        files
    }

    /// A JSON object file of the simulator's directory; anything else is listed.
    fn read_object(&mut self, rel: &str) -> Option<Object> {
        match read_json(&self.root.join(rel), MAX_FILE_BYTES) {
            Ok(Value::Object(m)) => Some(m),
            Ok(other) => {
                self.note(
                    rel,
                    format!("not a JSON object ({}); skipped", quote(&other)),
                );
                None
            }
            Err(why) => {
                self.note(rel, format!("{why}; skipped"));
                None
            }
        }
    }

    /// The run id: the manifest's, else the first boot record's.
    fn run_id(
        &mut self,
        manifest: Option<&Object>,
        boots: &[Vec<(String, Object)>],
    ) -> io::Result<String> {
        let from_manifest = manifest
            .and_then(|m| m.get("run_id"))
            .and_then(Value::as_str);
        let from_boot = || {
            boots
                .iter()
                .flatten()
                .find_map(|(_, b)| b.get("run_id").and_then(Value::as_str))
        };
        let Some(run_id) = from_manifest.or_else(from_boot) else {
            return Err(invalid(format!(
                "{}: no run id (neither MANIFEST.json nor a boot record has a string `run_id`)",
                self.root.display()
            )));
        };
        if !usable_run_id(run_id) {
            return Err(invalid(format!(
                "{}: run id {} cannot name a bundle directory",
                self.root.display(),
                quote(&json!(run_id))
            )));
        }
        Ok(run_id.to_owned())
    }

    /// The node's id and identities.
    fn node(&mut self, dir: NodeDir, boots: Vec<(String, Object)>, run_id: &str) -> Node {
        let id = match hex_node_id(&dir.name) {
            Some(id) => id,
            None => {
                let id = derived_node_id(run_id, &dir.name);
                self.note(
                    &dir.name,
                    format!(
                        "directory name `{}` is not a hex node id; node id derived from the run id and \
                         the name: {id}",
                        dir.name
                    ),
                );
                id
            }
        };
        self.names.insert(dir.name.clone(), id);
        let mut node = Node {
            dir,
            id,
            identities: Vec::new(),
            role: String::new(),
            stage_index: None,
            label: String::new(),
        };
        for (i, (rel, boot)) in boots.iter().enumerate() {
            let fallback_seq = u32::try_from(i).unwrap_or(u32::MAX);
            let (seq, identity) = self.identity(&node, rel, boot, run_id, fallback_seq);
            node.identities.push((rel.clone(), seq, identity));
        }
        match node.identities.last() {
            Some((_, _, latest)) => {
                node.role = latest["role"].as_str().unwrap_or_default().to_owned();
                node.stage_index = latest["stage_index"]
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok());
            }
            None => node.role = node.dir.name.clone(),
        }
        node
    }

    /// The contract's identity for one boot record of the simulator.
    fn identity(
        &mut self,
        node: &Node,
        rel: &str,
        boot: &Object,
        run_id: &str,
        fallback_seq: u32,
    ) -> (u32, Value) {
        let stage_index = match boot.get("stage_index") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) => Some(n),
                None => {
                    self.note(
                        format!("{rel}#/stage_index"),
                        format!(
                            "`stage_index` {} is not a stage index; written as null",
                            quote(v)
                        ),
                    );
                    None
                }
            },
        };
        let boot_sequence = match boot.get("boot_sequence") {
            Some(v) => v.as_u64().and_then(|n| u32::try_from(n).ok()),
            None => None,
        };
        let boot_sequence = boot_sequence.unwrap_or_else(|| {
            self.note(
                format!("{rel}#/boot_sequence"),
                format!("no usable `boot_sequence`; written as {fallback_seq}, its place among the node's boots"),
            );
            fallback_seq
        });
        let start = boot
            .get("wall_ms")
            .and_then(Value::as_u64)
            .unwrap_or_else(|| {
                self.note(
                    format!("{rel}#/wall_ms"),
                    "no usable `wall_ms`; `process_start_unix_ms` written as 0",
                );
                0
            });
        let record_run_id = boot.get("run_id").and_then(Value::as_str).unwrap_or(run_id);
        let role = if stage_index.is_some() {
            "stage"
        } else {
            node.dir.name.as_str()
        };
        let mut identity = json!({
            "node_id_hex": node.id.to_string(),
            "node_id_short": node.id.short(),
            "role": role,
            "stage_index": stage_index,
            "stage_count": null,
            "run_id": record_run_id,
            "vastai_contract_id": null,
            "host_ip_public": null,
            "host_country": null,
            "datacenter_id": null,
            "hostname": null,
            "container_id": null,
            "process_start_unix_ms": start,
            "boot_sequence": boot_sequence,
            "binary_version": null,
            "git_sha": null,
            "iroh_version": null,
            "home_relay_url_at_boot": null,
        });
        self.note_envelope(rel, boot);
        let own = self.schemas.properties("identity", "Identity");
        for (k, v) in boot {
            match k.as_str() {
                "schema_version" | "kind" | "stage_index" | "boot_sequence" | "wall_ms" => {}
                "run_id" if v.is_string() => {}
                _ if own.contains(k) => {
                    // A key the identity has: the simulator's value wins when it fits.
                    let before = identity[k.as_str()].clone();
                    identity[k.as_str()] = v.clone();
                    let violations = self.violations("boot", &identity);
                    if !violations.is_empty() {
                        identity[k.as_str()] = before;
                        self.note(
                            format!("{rel}#/{}", escape_pointer(k)),
                            format!(
                                "`{k}` {} does not fit the contract's boot record ({}); dropped",
                                quote(v),
                                describe(&violations)
                            ),
                        );
                    }
                }
                _ => {
                    if let Some(obj) = identity.as_object_mut() {
                        obj.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (boot_sequence, identity)
    }

    /// Lists the simulator's envelope keys of a record, which the upgrade drops.
    fn note_envelope(&mut self, rel: &str, record: &Object) {
        let present: Vec<String> = ["schema_version", "kind"]
            .iter()
            .filter_map(|k| record.get(*k).map(|v| format!("`{k}` ({})", quote(v))))
            .collect();
        if !present.is_empty() {
            self.note(
                rel,
                format!(
                    "the simulator's envelope {} dropped: the contract names a record's kind by the \
                     file's place in the layout",
                    present.join(" and ")
                ),
            );
        }
    }

    /// Labels per [`node_label`]; labels shared by several nodes get `-<first 8 id chars>`.
    fn assign_labels(&mut self, nodes: &mut [Node]) {
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for node in nodes.iter_mut() {
            node.label = node_label(Some(&node.role), node.stage_index, &node.id.to_string());
            *count.entry(node.label.clone()).or_default() += 1;
        }
        let mut taken = BTreeSet::new();
        for node in nodes.iter_mut() {
            if count[&node.label] > 1 {
                node.label = format!("{}-{}", node.label, node.id.short());
            }
            if !taken.insert(node.label.clone()) {
                node.label = format!("{}-{}", node.label, node.id);
                taken.insert(node.label.clone());
            }
        }
    }

    fn write_node(&mut self, node: &Node, run_id: &str, bundle: &mut BundleContents) -> Written {
        let label = &node.label;
        let mut written = Written {
            boot: false,
            events: 0,
            snapshots: 0,
            finalize: false,
        };

        // Boots: the latest is boot.json, earlier ones go under boot/.
        let mut boots = Vec::new();
        for (rel, _, identity) in &node.identities {
            match self.parse("boot", identity) {
                Ok(record) => {
                    self.report_unknown(rel, "boot", "boot record", identity, None);
                    boots.push(record);
                }
                Err(why) => self.note(
                    rel.as_str(),
                    format!("does not fit the contract's boot record ({why}); not written"),
                ),
            }
        }
        if node.identities.is_empty() {
            self.note(
                node.dir.name.as_str(),
                "no readable boot record: no boot.json written, and its snapshots embed an identity \
                 with `process_start_unix_ms` 0",
            );
        }
        let n = boots.len();
        for (i, record) in boots.into_iter().enumerate() {
            if i + 1 == n {
                bundle.insert_json(format!("{label}/boot.json"), &record);
                written.boot = true;
            } else {
                bundle.insert_json(format!("{label}/boot/boot-{:06}.json", i + 1), &record);
            }
        }

        for rel in &node.dir.events {
            if let Some(batch) = self.events_file(node, rel) {
                written.events += 1;
                bundle.insert_json(
                    format!("{label}/events/events-{:06}.json", written.events),
                    &batch,
                );
            }
        }

        for (index, rel) in node.dir.snapshots.iter().enumerate() {
            if let Some(record) = self.snapshot(node, rel, index, run_id) {
                written.snapshots += 1;
                bundle.insert_json(
                    format!("{label}/snapshots/snapshot-{:06}.json", written.snapshots),
                    &record,
                );
            }
        }

        // Finalizes: the latest is finalize.json, earlier ones go under finalize/.
        let mut finalizes = Vec::new();
        for (_, rel) in &node.dir.finalizes {
            if let Some(record) = self.finalize(rel) {
                finalizes.push(record);
            }
        }
        let n = finalizes.len();
        for (i, record) in finalizes.into_iter().enumerate() {
            if i + 1 == n {
                bundle.insert_json(format!("{label}/finalize.json"), &record);
                written.finalize = true;
            } else {
                bundle.insert_json(
                    format!("{label}/finalize/finalize-{:06}.json", i + 1),
                    &record,
                );
            }
        }
        written
    }

    /// One events file: the envelope's `records`, each upgraded on its own.
    fn events_file(&mut self, node: &Node, rel: &str) -> Option<Vec<v1::EventRecord>> {
        let envelope = self.read_object(rel)?;
        let Some(Value::Array(records)) = envelope.get("records") else {
            self.note(rel, "an events file without a `records` array; skipped");
            return None;
        };
        self.note_envelope(rel, &envelope);
        for (k, v) in &envelope {
            if matches!(k.as_str(), "schema_version" | "kind" | "records") {
                continue;
            }
            self.note(
                format!("{rel}#/{}", escape_pointer(k)),
                format!(
                    "`{k}` ({}) of the events envelope dropped: an events file in the contract is a bare \
                     JSON array of event records",
                    quote(v)
                ),
            );
        }
        let mut out = Vec::new();
        for (i, record) in records.iter().enumerate() {
            let at = format!("{rel}#/records/{i}");
            if let Some(event) = self.event(node, &at, record) {
                out.push(event);
            }
        }
        Some(out)
    }

    /// A hex string or a node's directory name as the contract's byte-array node id.
    fn to_id_bytes(&self, value: &Value) -> Value {
        match value
            .as_str()
            .and_then(|s| hex_node_id(s).or_else(|| self.names.get(s).copied()))
        {
            Some(id) => id_bytes(&id),
            None => value.clone(),
        }
    }

    /// A node's directory name (or upper-case hex) as the contract's hex node id.
    fn to_id_hex(&self, value: &Value) -> Value {
        match value
            .as_str()
            .and_then(|s| hex_node_id(s).or_else(|| self.names.get(s).copied()))
        {
            Some(id) => Value::String(id.to_string()),
            None => value.clone(),
        }
    }

    /// One event record of the simulator as the contract's event record.
    fn event(&mut self, node: &Node, at: &str, record: &Value) -> Option<v1::EventRecord> {
        let Some(obj) = record.as_object() else {
            self.note(
                at,
                format!(
                    "an event record that is not a JSON object ({}); dropped",
                    quote(record)
                ),
            );
            return None;
        };
        let wall_ms = obj.get("wall_ms").and_then(Value::as_u64);
        let seq = obj.get("monotonic_seq").and_then(Value::as_u64);
        let variant = obj.get("variant").and_then(Value::as_str);
        let (Some(wall_ms), Some(seq), Some(variant)) = (wall_ms, seq, variant) else {
            self.note(
                at,
                format!(
                    "an event record without an integer `wall_ms`, an integer `monotonic_seq` and a \
                     string `variant`; dropped: {}",
                    quote(record)
                ),
            );
            return None;
        };
        let mut rest: Object = obj
            .iter()
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "variant" | "user_kind" | "wall_ms" | "monotonic_seq"
                )
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut candidate = Map::new();
        candidate.insert("node_id".into(), id_bytes(&node.id));
        candidate.insert("monotonic_seq".into(), seq.into());
        candidate.insert("wall_ms".into(), wall_ms.into());

        let name; // the type, or the custom kind, for messages and the fallback kind
        let as_written; // the fields as the simulator wrote them, for the fallback
        if variant == "Custom" {
            let kind = match obj.get("user_kind") {
                Some(Value::String(k)) => Some(k.clone()),
                Some(other) => {
                    rest.insert("user_kind".into(), other.clone());
                    None
                }
                None => match rest.remove("kind") {
                    Some(Value::String(k)) => Some(k),
                    Some(other) => {
                        rest.insert("kind".into(), other);
                        None
                    }
                    None => None,
                },
            };
            let kind = kind.unwrap_or_else(|| {
                self.note(
                    at,
                    "a `Custom` event without a string `user_kind`; written as kind `sim.custom`",
                );
                "sim.custom".to_owned()
            });
            let mut fields = if rest.len() == 1 && rest.contains_key("fields") {
                rest.remove("fields").unwrap_or(Value::Null)
            } else {
                Value::Object(rest)
            };
            as_written = fields.clone();
            if kind == "register_name" {
                self.adapt_register_name(node, wall_ms, &mut fields);
            }
            candidate.insert("type".into(), json!("Custom"));
            candidate.insert("kind".into(), json!(kind));
            candidate.insert("fields".into(), fields);
            name = kind;
        } else {
            if let Some(user_kind) = obj.get("user_kind") {
                rest.insert("user_kind".into(), user_kind.clone());
            }
            as_written = Value::Object(rest.clone());
            let (id_fields, hex_fields) = self.schemas.id_fields(variant);
            for (k, v) in rest {
                let v = if id_fields.contains(&k) {
                    self.to_id_bytes(&v)
                } else if hex_fields.contains(&k) {
                    self.to_id_hex(&v)
                } else {
                    v
                };
                if matches!(k.as_str(), "node_id" | "type") {
                    self.note(
                        format!("{at}/{k}"),
                        format!(
                            "`{k}` ({}) collides with the contract's envelope; dropped (the contract's \
                             `{k}` is the emitting node's / the event type)",
                            quote(&v)
                        ),
                    );
                    continue;
                }
                candidate.insert(k, v);
            }
            candidate.insert("type".into(), json!(variant));
            name = variant.to_owned();
        }

        let candidate = Value::Object(candidate);
        let problem = match self.parse("event", &candidate) {
            Ok(v1::Record::Event(event)) => {
                if matches!(event.event, v1::Event::Other(_)) {
                    self.note(
                        at,
                        format!("event type `{variant}` is unknown to the contract; kept as an unknown event type"),
                    );
                } else {
                    let what = format!("`{name}` event");
                    self.report_unknown(at, "event", &what, &candidate, None);
                }
                return Some(event);
            }
            Ok(_) => "not an event record".to_owned(),
            Err(why) => why,
        };

        // The fields do not fit the type: keep the event, as a Custom event of a simulator kind.
        let fallback_kind = format!("sim.{name}");
        let fallback = json!({
            "node_id": id_bytes(&node.id),
            "monotonic_seq": seq,
            "wall_ms": wall_ms,
            "type": "Custom",
            "kind": fallback_kind,
            "fields": as_written,
        });
        match self.parse("event", &fallback) {
            Ok(v1::Record::Event(event)) => {
                self.note(
                    at,
                    format!(
                        "a `{name}` event that does not fit the contract ({problem}); kept as a `Custom` \
                         event of kind `{fallback_kind}` with its fields as the simulator wrote them"
                    ),
                );
                Some(event)
            }
            _ => {
                self.note(
                    at,
                    format!(
                        "a `{name}` event that does not fit the contract ({problem}); dropped: {}",
                        quote(record)
                    ),
                );
                None
            }
        }
    }

    /// Renames the simulator's `register_name` fields to the contract's.
    fn adapt_register_name(&self, node: &Node, wall_ms: u64, fields: &mut Value) {
        let Some(f) = fields.as_object_mut() else {
            return;
        };
        if !f.contains_key("actor_addr_hex") {
            if let Some(address) = f.remove("address") {
                f.insert("actor_addr_hex".into(), address);
            }
        }
        let ours = f
            .remove("our_node_id_hex")
            .or_else(|| f.remove("peer_node_id"));
        if let Some(ours) = ours {
            f.insert("our_node_id_hex".into(), self.to_id_hex(&ours));
        }
        f.entry("wall_ms").or_insert_with(|| wall_ms.into());
        if let Some(stage_index) = node.stage_index {
            f.entry("stage_index").or_insert_with(|| stage_index.into());
        }
    }

    /// One snapshot of the simulator as the contract's snapshot.
    fn snapshot(
        &mut self,
        node: &Node,
        rel: &str,
        index: usize,
        run_id: &str,
    ) -> Option<v1::Record> {
        let obj = self.read_object(rel)?;
        let wall_ms = obj.get("wall_ms").and_then(Value::as_u64);
        let seq = obj.get("monotonic_seq").and_then(Value::as_u64);
        let (Some(wall_ms), Some(seq)) = (wall_ms, seq) else {
            self.note(
                rel,
                "a snapshot without an integer `wall_ms` and an integer `monotonic_seq`; skipped",
            );
            return None;
        };
        self.note_envelope(rel, &obj);
        let snapshot_id = match obj.get("snapshot_id") {
            Some(Value::String(s)) => s.clone(),
            other => {
                let id = format!("{}-{index}", node.id.short());
                let was = other.map_or("none".to_owned(), quote);
                self.note(
                    format!("{rel}#/snapshot_id"),
                    format!("no string `snapshot_id` ({was}); written as `{id}`"),
                );
                id
            }
        };
        let boot_sequence = obj
            .get("boot_sequence")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok());
        let placeholder;
        let identity = match node.identity_for(boot_sequence) {
            Some((identity, matched)) => {
                if !matched && obj.contains_key("boot_sequence") {
                    self.note(
                        format!("{rel}#/boot_sequence"),
                        format!(
                            "no boot record with `boot_sequence` {}; the snapshot embeds the node's latest \
                             identity and keeps `boot_sequence` as an unknown key",
                            quote(&obj["boot_sequence"])
                        ),
                    );
                }
                identity
            }
            None => {
                placeholder = node.placeholder_identity(run_id);
                &placeholder
            }
        };
        let matched = node.identity_for(boot_sequence).is_some_and(|(_, m)| m);

        let mut candidate = Map::new();
        candidate.insert("identity".into(), identity.clone());
        candidate.insert(
            "run_id".into(),
            obj.get("run_id")
                .filter(|v| v.is_string())
                .cloned()
                .unwrap_or_else(|| json!(run_id)),
        );
        candidate.insert("snapshot_id".into(), json!(snapshot_id));
        candidate.insert("wall_ms".into(), wall_ms.into());
        candidate.insert("monotonic_seq".into(), seq.into());
        let trigger = self.trigger(rel, obj.get("trigger"));
        candidate.insert("trigger".into(), trigger);
        let body = self.body(rel, obj.get("body"));
        candidate.insert("body".into(), body);
        let own = self.schemas.properties("snapshot", "Snapshot");
        for (k, v) in &obj {
            match k.as_str() {
                "schema_version" | "kind" | "snapshot_id" | "wall_ms" | "monotonic_seq"
                | "trigger" | "body" => {}
                "boot_sequence" if matched => {}
                "run_id" if v.is_string() => {}
                _ if own.contains(k) => self.note(
                    format!("{rel}#/{}", escape_pointer(k)),
                    format!(
                        "`{k}` ({}) replaced: the upgrade writes it from the node's records",
                        quote(v)
                    ),
                ),
                _ => {
                    candidate.insert(k.clone(), v.clone());
                }
            }
        }
        let mut candidate = Value::Object(candidate);

        // Drop what does not fit, block by block, until the snapshot fits.
        let mut trigger_replaced = false;
        for _ in 0..16 {
            let violations = self.violations("snapshot", &candidate);
            if violations.is_empty() {
                break;
            }
            let mut fixed = false;
            let blocks: BTreeSet<String> = violations
                .iter()
                .filter_map(|v| body_block(&v.pointer))
                .collect();
            for block in blocks {
                let at: Vec<Violation> = violations
                    .iter()
                    .filter(|v| body_block(&v.pointer).as_deref() == Some(block.as_str()))
                    .cloned()
                    .collect();
                let old = candidate["body"]
                    .as_object_mut()
                    .and_then(|b| {
                        if block == "reachability" {
                            b.insert(block.clone(), json!([]))
                        } else {
                            b.remove(&block)
                        }
                    })
                    .unwrap_or(Value::Null);
                let done = if block == "reachability" {
                    "replaced by an empty list"
                } else {
                    "dropped"
                };
                self.note(
                    format!("{rel}#/body/{}", escape_pointer(&block)),
                    format!(
                        "body block `{block}` does not fit the contract ({}); {done}: {}",
                        describe(&at),
                        quote(&old)
                    ),
                );
                fixed = true;
            }
            let trigger_at: Vec<Violation> = violations
                .iter()
                .filter(|v| v.pointer == "/trigger" || v.pointer.starts_with("/trigger/"))
                .cloned()
                .collect();
            if !trigger_at.is_empty() && !trigger_replaced {
                trigger_replaced = true;
                let original = obj.get("trigger").cloned().unwrap_or(Value::Null);
                self.note(
                    format!("{rel}#/trigger"),
                    format!(
                        "trigger {} does not fit the contract ({}); kept as the unknown trigger kind \
                         `sim.trigger` with the value as its data",
                        quote(&original),
                        describe(&trigger_at)
                    ),
                );
                candidate["trigger"] = json!({"kind": "sim.trigger", "data": original});
                fixed = true;
            }
            if !fixed {
                break;
            }
        }
        match self.parse("snapshot", &candidate) {
            Ok(record) => {
                self.report_unknown(rel, "snapshot", "snapshot", &candidate, Some("/identity"));
                Some(record)
            }
            Err(why) => {
                self.note(
                    rel,
                    format!("does not fit the contract's snapshot ({why}); not written"),
                );
                None
            }
        }
    }

    /// The simulator's trigger as the contract's `{kind, data}`.
    fn trigger(&mut self, rel: &str, trigger: Option<&Value>) -> Value {
        let at = format!("{rel}#/trigger");
        let unit = |kind: &str| json!({ "kind": kind });
        match trigger {
            None => {
                self.note(
                    at,
                    "the snapshot has no trigger; written as the unknown trigger kind `sim.none`",
                );
                unit("sim.none")
            }
            Some(Value::String(s)) => {
                let normalized: String = s
                    .chars()
                    .filter(|c| !matches!(c, '_' | '-' | ' '))
                    .flat_map(char::to_lowercase)
                    .collect();
                match normalized.as_str() {
                    "periodic" => unit("Periodic"),
                    "ondemand" => unit("OnDemand"),
                    _ => {
                        let kind = if v1::SnapshotTrigger::TAGS.contains(&s.as_str()) {
                            format!("sim.{s}")
                        } else {
                            s.clone()
                        };
                        self.note(
                            at,
                            format!(
                                "trigger {} is not a kind the contract knows; kept as the unknown trigger \
                                 kind `{kind}`",
                                quote(&json!(s))
                            ),
                        );
                        unit(&kind)
                    }
                }
            }
            Some(Value::Object(m)) if m.get("kind").is_some_and(Value::is_string) => {
                Value::Object(m.clone())
            }
            Some(Value::Object(m))
                if m.len() == 1
                    && m.keys()
                        .all(|k| v1::SnapshotTrigger::TAGS.contains(&k.as_str())) =>
            {
                // serde's external form: `{"Transition": "seq-7"}`, `{"Periodic": null}`.
                let (kind, data) = m
                    .iter()
                    .next()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .unwrap_or_default();
                if data.is_null() {
                    unit(&kind)
                } else {
                    json!({ "kind": kind, "data": data })
                }
            }
            Some(other) => {
                self.note(
                    at,
                    format!(
                        "trigger {} is not a form the contract knows; kept as the unknown trigger kind \
                         `sim.trigger` with the value as its data",
                        quote(other)
                    ),
                );
                json!({ "kind": "sim.trigger", "data": other })
            }
        }
    }

    /// The simulator's snapshot body, with the contract's required `reachability` and the host
    /// block's network fields under `network`.
    fn body(&mut self, rel: &str, body: Option<&Value>) -> Value {
        let at = format!("{rel}#/body");
        let mut body = match body {
            Some(Value::Object(m)) => m.clone(),
            None => {
                self.note(
                    at.as_str(),
                    "the snapshot has no body; written as an empty body",
                );
                Map::new()
            }
            Some(other) => {
                self.note(
                    at.as_str(),
                    format!(
                        "a body that is not a JSON object ({}); written as an empty body",
                        quote(other)
                    ),
                );
                Map::new()
            }
        };
        if !body.contains_key("reachability") {
            body.insert("reachability".into(), json!([]));
            self.note(
                at.as_str(),
                "no `reachability`: the simulator does not record it; written as an empty list, which the \
                 contract requires",
            );
        }
        let network_keys = self.schemas.properties("host", "HostNetwork");
        if let Some(Value::Object(host)) = body.get_mut("host") {
            if !host.contains_key("network") {
                let moved: Vec<String> = host
                    .keys()
                    .filter(|k| network_keys.contains(*k))
                    .cloned()
                    .collect();
                if !moved.is_empty() {
                    let mut network = Map::new();
                    for k in moved {
                        if let Some(v) = host.remove(&k) {
                            network.insert(k, v);
                        }
                    }
                    if !host.contains_key("scraped_at_ms") {
                        if let Some(refreshed) = network.get("refreshed_at_ms") {
                            host.insert("scraped_at_ms".into(), refreshed.clone());
                        }
                    }
                    host.insert("network".into(), Value::Object(network));
                }
            }
        }
        Value::Object(body)
    }

    /// One finalize record of the simulator as the contract's finalize record.
    fn finalize(&mut self, rel: &str) -> Option<v1::Record> {
        let obj = self.read_object(rel)?;
        self.note_envelope(rel, &obj);
        let mut candidate = Map::new();
        for (k, v) in &obj {
            match k.as_str() {
                "schema_version" | "kind" => {}
                "shutdown_reason"
                    if (v.is_string() || v.is_null()) && !obj.contains_key("exit_reason") =>
                {
                    candidate.insert("exit_reason".into(), v.clone());
                }
                _ => {
                    candidate.insert(k.clone(), v.clone());
                }
            }
        }
        let candidate = Value::Object(candidate);
        match self.parse("finalize", &candidate) {
            Ok(record) => {
                self.report_unknown(rel, "finalize", "finalize record", &candidate, None);
                Some(record)
            }
            Err(why) => {
                self.note(
                    rel,
                    format!("does not fit the contract's finalize record ({why}); not written"),
                );
                None
            }
        }
    }

    /// The manifest of the upgraded bundle, from what was written.
    fn manifest(
        &mut self,
        sim: Option<&Object>,
        run_id: &str,
        nodes: &[Node],
        written: &[Written],
    ) -> Value {
        let mut entries: Vec<(String, String, Value)> = nodes
            .iter()
            .zip(written)
            .map(|(node, w)| {
                let (role, stage_index) = match node.identities.last() {
                    Some(_) if w.boot => (json!(node.role), json!(node.stage_index)),
                    _ => (Value::Null, Value::Null),
                };
                let entry = json!({
                    "node_id_hex": node.id.to_string(),
                    "label": node.label,
                    "role": role,
                    "stage_index": stage_index,
                    "boot_recorded": w.boot,
                    "event_batches": w.events,
                    "snapshots": w.snapshots,
                    "finalize_recorded": w.finalize,
                    "vastai_records": 0,
                });
                (node.label.clone(), node.id.to_string(), entry)
            })
            .collect();
        entries.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        let mut manifest = Map::new();
        manifest.insert("run_id".into(), json!(run_id));
        manifest.insert("run_start_collector_ms".into(), Value::Null);
        manifest.insert("run_end_collector_ms".into(), Value::Null);
        manifest.insert(
            "finalize_received".into(),
            json!(written.iter().any(|w| w.finalize)),
        );
        manifest.insert(
            "nodes".into(),
            Value::Array(entries.into_iter().map(|e| e.2).collect()),
        );
        let Some(sim) = sim else {
            self.note(
                "MANIFEST.json",
                "the simulator's directory has no readable manifest; the manifest is derived from the files",
            );
            return Value::Object(manifest);
        };
        self.note_envelope("MANIFEST.json", sim);
        let own = self.schemas.properties("manifest", "Manifest");
        for (k, v) in sim {
            let at = format!("MANIFEST.json#/{}", escape_pointer(k));
            match k.as_str() {
                "schema_version" | "kind" => {}
                "run_id" if v.as_str() == Some(run_id) => {}
                "node_count" if v.as_u64() == Some(nodes.len() as u64) => {}
                "node_count" => self.note(
                    at,
                    format!(
                        "`node_count` ({}) disagrees with the {} node directories found; the manifest lists \
                         the directories",
                        quote(v),
                        nodes.len()
                    ),
                ),
                _ if own.contains(k) => self.note(
                    at,
                    format!("`{k}` ({}) replaced: the upgrade derives it from the files", quote(v)),
                ),
                _ => {
                    manifest.insert(k.clone(), v.clone());
                }
            }
        }
        Value::Object(manifest)
    }

    fn violations(&self, kind: &str, value: &Value) -> Vec<Violation> {
        self.validators.violations(kind, value).unwrap_or_else(|| {
            vec![Violation {
                pointer: String::new(),
                message: format!("unknown record kind `{kind}`"),
            }]
        })
    }

    /// Validates `value` as a record of `kind` and parses it into its type.
    fn parse(&self, kind: &str, value: &Value) -> Result<v1::Record, String> {
        let violations = self.violations(kind, value);
        if !violations.is_empty() {
            return Err(describe(&violations));
        }
        match v1::Record::from_value(kind, value.clone()) {
            Some(Ok(record)) => Ok(record),
            Some(Err(e)) => Err(e.to_string()),
            None => Err(format!("unknown record kind `{kind}`")),
        }
    }

    /// Lists every key of `value` that the contract keeps only as an unknown key.
    fn report_unknown(
        &mut self,
        at: &str,
        kind: &str,
        what: &str,
        value: &Value,
        skip: Option<&str>,
    ) {
        for pointer in self.schemas.unknown_keys(kind, value) {
            if skip.is_some_and(|s| pointer == s || pointer.starts_with(&format!("{s}/"))) {
                continue;
            }
            let quoted = value
                .pointer(&pointer)
                .map_or_else(String::new, |v| format!(" ({})", quote(v)));
            self.note(
                at,
                format!("key `{pointer}`{quoted} has no place in the contract's {what}; kept as an unknown key"),
            );
        }
    }
}

/// The body block a violation's pointer is in (`/body/<block>/…`).
fn body_block(pointer: &str) -> Option<String> {
    let rest = pointer.strip_prefix("/body/")?;
    let block = rest.split('/').next()?;
    (!block.is_empty()).then(|| block.replace("~1", "/").replace("~0", "~"))
}

/// The contract's schemas as JSON, to find a type's properties and the keys a value has beyond them.
struct Schemas {
    defs: HashMap<(&'static str, String), Value>,
}

impl Schemas {
    fn new() -> Self {
        let mut defs = HashMap::new();
        for (stem, text) in v1::SCHEMA_TEXTS {
            let Ok(Value::Object(doc)) = serde_json::from_str::<Value>(text) else {
                continue;
            };
            if let Some(Value::Object(d)) = doc.get("$defs") {
                for (name, def) in d {
                    defs.insert((*stem, name.clone()), def.clone());
                }
            }
        }
        Schemas { defs }
    }

    fn def(&self, stem: &'static str, name: &str) -> Option<&Value> {
        self.defs.get(&(stem, name.to_owned()))
    }

    /// The definition a `$ref` names, from inside schema file `stem`.
    fn resolve(&self, stem: &'static str, reference: &str) -> Option<(&'static str, &Value)> {
        let (file, name) = reference.split_once("#/$defs/")?;
        let stem = if file.is_empty() {
            stem
        } else {
            let wanted = file.strip_prefix("urn:diagwire:")?;
            v1::SCHEMA_TEXTS
                .iter()
                .map(|(s, _)| *s)
                .find(|s| *s == wanted)?
        };
        Some((stem, self.def(stem, name)?))
    }

    /// The property names of a struct definition.
    fn properties(&self, stem: &'static str, name: &str) -> BTreeSet<String> {
        self.def(stem, name)
            .and_then(|d| d.get("properties"))
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The event variant struct whose `type` is `tag`.
    fn event_variant(&self, tag: &str) -> Option<&Value> {
        let union = self.def("event", "Event")?;
        union.get("oneOf")?.as_array()?.iter().find_map(|branch| {
            let (_, def) = self.resolve("event", branch.get("$ref")?.as_str()?)?;
            (def.pointer("/properties/type/const")?.as_str()? == tag).then_some(def)
        })
    }

    /// The properties of event type `tag` that hold a byte-array node id, and those that hold a hex one.
    fn id_fields(&self, tag: &str) -> (BTreeSet<String>, BTreeSet<String>) {
        let mut bytes = BTreeSet::new();
        let mut hex = BTreeSet::new();
        let props = self
            .event_variant(tag)
            .and_then(|d| d.get("properties"))
            .and_then(Value::as_object);
        for (k, p) in props.into_iter().flatten() {
            let refs: Vec<&str> = match p.get("anyOf").and_then(Value::as_array) {
                Some(branches) => branches
                    .iter()
                    .filter_map(|b| b.get("$ref")?.as_str())
                    .collect(),
                None => p.get("$ref").and_then(Value::as_str).into_iter().collect(),
            };
            if refs.iter().any(|r| r.ends_with("#/$defs/NodeId")) {
                bytes.insert(k.clone());
            } else if refs.iter().any(|r| r.ends_with("#/$defs/NodeIdHex")) {
                hex.insert(k.clone());
            }
        }
        (bytes, hex)
    }

    /// JSON pointers of the keys of `value` (a record of `kind`) that no schema property names.
    fn unknown_keys(&self, kind: &str, value: &Value) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(info) = v1::RECORDS.iter().find(|r| r.kind == kind) {
            if let Some(def) = self.def(info.schema, info.def) {
                self.walk(info.schema, def, value, "", &mut out);
            }
        }
        out
    }

    fn walk(
        &self,
        stem: &'static str,
        schema: &Value,
        value: &Value,
        ptr: &str,
        out: &mut Vec<String>,
    ) {
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            if let Some((s, def)) = self.resolve(stem, reference) {
                self.walk(s, def, value, ptr, out);
            }
            return;
        }
        if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
            if !value.is_null() {
                for branch in branches.iter().filter(|b| b.get("$ref").is_some()) {
                    self.walk(stem, branch, value, ptr, out);
                }
            }
            return;
        }
        if let Some(union) = schema.get("x-union") {
            self.walk_union(stem, schema, union, value, ptr, out);
            return;
        }
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            let Some(obj) = value.as_object() else {
                return;
            };
            let mut rest = Map::new();
            for (k, v) in obj {
                match props.get(k) {
                    Some(p) => self.walk(stem, p, v, &format!("{ptr}/{}", escape_pointer(k)), out),
                    None => {
                        rest.insert(k.clone(), v.clone());
                    }
                }
            }
            if rest.is_empty() {
                return;
            }
            let flattened = schema
                .pointer("/allOf/0/$ref")
                .and_then(Value::as_str)
                .and_then(|r| self.resolve(stem, r));
            match flattened {
                Some((s, union)) => {
                    // An adjacent union takes only its tag and content keys; an internal one takes all.
                    let adjacent = union.pointer("/x-union/style") == Some(&json!("adjacent"));
                    let (tag, content) = (
                        union
                            .pointer("/x-union/tag")
                            .and_then(Value::as_str)
                            .unwrap_or_default(),
                        union
                            .pointer("/x-union/content")
                            .and_then(Value::as_str)
                            .unwrap_or_default(),
                    );
                    let mut claimed = Map::new();
                    for (k, v) in rest {
                        if !adjacent || k == tag || k == content {
                            claimed.insert(k, v);
                        } else {
                            out.push(format!("{ptr}/{}", escape_pointer(&k)));
                        }
                    }
                    self.walk(s, union, &Value::Object(claimed), ptr, out);
                }
                None => out.extend(rest.keys().map(|k| format!("{ptr}/{}", escape_pointer(k)))),
            }
            return;
        }
        if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
            if items.is_object() {
                for (i, item) in array.iter().enumerate() {
                    self.walk(stem, items, item, &format!("{ptr}/{i}"), out);
                }
            }
        }
    }

    /// The branch of a union that `value`'s tag selects; unknown tags are the caller's to report.
    fn walk_union(
        &self,
        stem: &'static str,
        schema: &Value,
        union: &Value,
        value: &Value,
        ptr: &str,
        out: &mut Vec<String>,
    ) {
        let Some(tag_key) = union.get("tag").and_then(Value::as_str) else {
            return;
        };
        let Some(tag) = value.get(tag_key).and_then(Value::as_str) else {
            return;
        };
        let Some(branches) = schema.get("oneOf").and_then(Value::as_array) else {
            return;
        };
        let tag_const = format!("/properties/{}/const", escape_pointer(tag_key));
        match union.get("style").and_then(Value::as_str) {
            Some("internal") => {
                for branch in branches {
                    let Some((s, def)) = branch
                        .get("$ref")
                        .and_then(Value::as_str)
                        .and_then(|r| self.resolve(stem, r))
                    else {
                        continue;
                    };
                    if def.pointer(&tag_const).and_then(Value::as_str) == Some(tag) {
                        self.walk(s, def, value, ptr, out);
                        return;
                    }
                }
            }
            Some("adjacent") => {
                let content_key = union
                    .get("content")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                for branch in branches {
                    if branch.pointer(&tag_const).and_then(Value::as_str) != Some(tag) {
                        continue;
                    }
                    let content_schema =
                        branch.pointer(&format!("/properties/{}", escape_pointer(content_key)));
                    if let (Some(cs), Some(content)) = (content_schema, value.get(content_key)) {
                        self.walk(
                            stem,
                            cs,
                            content,
                            &format!("{ptr}/{}", escape_pointer(content_key)),
                            out,
                        );
                    }
                    return;
                }
            }
            _ => {}
        }
    }
}
