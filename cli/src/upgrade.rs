//! Upgrade of the simulator's prod-shape directory into the contract's bundle.
//!
//! The simulator writes a plain directory that looks like a collector bundle but is not one: every
//! record carries `schema_version` and `kind`, boot records have no identity, events sit in an
//! envelope with a `records` array and name their type `variant`, node ids are hex strings, and a
//! `sim/` folder holds the simulator's own files. [`upgrade`] reads such a directory and returns the
//! bundle in the collector layout with every record in the contract's types ([`Upgraded`]), plus
//! the list of everything that had no place in the contract, as [`Problem`]s. It never writes
//! anything; [`diagwire::bundle::output`] does.
//!
//! The records go through [`Writer`], which lays the files out ([`diagwire::layout`]) and derives
//! the manifest, so an upgraded bundle and its manifest follow the same rules as an assembled one.
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

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::io::{self, Read};
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use diagwire::bundle::{BundleContents, Writer};
use diagwire::layout::{self, FileKind};
use diagwire::problem::ReadErrorKind;
use diagwire::shape::{self, TypeKind, escape_pointer};
use diagwire::v1::{self, RecordKind};
use diagwire::validate::{Validators, Violation};
use diagwire::{Location, NodeId, Problem, ProblemKind};

/// A JSON object.
type Object = Map<String, Value>;

/// The program name the upgraded bundle's manifest gives as its writer.
pub const WRITER_NAME: &str = "diagwire-upgrade";

/// Largest file the upgrade reads; a bigger one is listed and skipped.
const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Largest `MANIFEST.json` or `boot.json` that recognition reads.
const MAX_PROBE_BYTES: u64 = 1024 * 1024;
/// Most top-level directories recognition looks into.
const MAX_PROBE_DIRS: usize = 10_000;
/// Deepest directory level listed inside a folder outside the layout.
const MAX_LIST_DEPTH: usize = 16;
/// Longest excerpt of a value quoted in a problem's message, in characters.
const MAX_QUOTE: usize = 300;

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

/// Whether `dir` is a simulator prod-shape directory: its `MANIFEST.json` is an object with
/// `kind: "manifest"` and `origin: "sim"` (or `schema_version`), or, without a readable manifest, a
/// node directory's `boot.json` carries `schema_version` and `kind: "boot"`. A collector bundle (whose
/// records carry neither) and an empty directory are not.
pub fn is_sim_prod_shape(dir: &Path) -> bool {
    let manifest = dir.join(layout::MANIFEST);
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
/// `InvalidData`), or names no run id that can name a bundle directory as it is (a missing run id,
/// or one with control characters, path separators or anything else outside ASCII letters, digits,
/// `.`, `_` and `-`; `InvalidData`). Error messages do not repeat `dir`.
pub fn upgrade(dir: &Path) -> Result<Upgraded, io::Error> {
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
    let upgrader = Upgrader {
        root: dir,
        validators,
        names: HashMap::new(),
        problems: Vec::new(),
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

/// A file's JSON, or the kind of problem and why it could not be read.
fn read_json(path: &Path, limit: u64) -> Result<Value, (ProblemKind, String)> {
    match read_limited(path, limit) {
        Err(e) => Err((
            ProblemKind::Read(ReadErrorKind::Io),
            format!("unreadable ({e})"),
        )),
        Ok(None) => Err((
            ProblemKind::Read(ReadErrorKind::TooLarge),
            format!("larger than {limit} bytes"),
        )),
        Ok(Some(bytes)) => serde_json::from_slice(&bytes)
            .map_err(|e| (ProblemKind::Encoding, format!("not JSON ({e})"))),
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

/// A location in the simulator's directory (see the module documentation).
fn at(file: &str, record: Option<usize>, pointer: impl Into<String>) -> Location {
    Location::at(file, record, pointer)
}

/// `/<key>`.
fn key_pointer(key: &str) -> String {
    format!("/{}", escape_pointer(key))
}

/// The keys of a struct of the contract, from the generated shape table.
fn field_keys(def: &str) -> BTreeSet<&'static str> {
    match v1::CONTRACT.get(def).map(|t| &t.kind) {
        Some(TypeKind::Struct { fields, .. }) => fields.iter().map(|f| f.key).collect(),
        _ => BTreeSet::new(),
    }
}

/// The keys of a record of `kind` itself, without those of a union it absorbs.
fn record_keys(kind: RecordKind) -> BTreeSet<&'static str> {
    field_keys(kind.info().def)
}

/// The keys an event record holds beside its type's fields: the record's own and the tag of the
/// event union it absorbs (`node_id`, `monotonic_seq`, `wall_ms`, `type`).
fn event_envelope_keys() -> BTreeSet<&'static str> {
    let def = RecordKind::Event.info().def;
    let mut keys = field_keys(def);
    if let Some(TypeKind::Struct {
        flatten: Some(union),
        ..
    }) = v1::CONTRACT.get(def).map(|t| &t.kind)
    {
        if let Some(TypeKind::Union { tag, .. }) = v1::CONTRACT.get(union).map(|t| &t.kind) {
            keys.insert(tag);
        }
    }
    keys
}

/// The fields of event type `tag` that hold a byte-array node id, and those that hold a hex one.
fn event_id_fields(tag: &str) -> (Vec<&'static str>, Vec<&'static str>) {
    shape::variant_def(&v1::CONTRACT, "Event", tag)
        .map(|def| shape::node_id_fields(&v1::CONTRACT, def))
        .unwrap_or_default()
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

/// A boot or finalize file of a node in the simulator's own naming: `boot.json` / `finalize.json`
/// is number 0, `boot-<n>.json` / `finalize-<n>.json` number `n`, written with any number of digits
/// (`boot-001.json`). This reads only the simulator's input; the bundle's names are the layout's,
/// which the writer produces.
fn sim_record_file(name: &str) -> Option<(FileKind, u64)> {
    let stem = name.strip_suffix(".json")?;
    let (base, n) = match stem.split_once('-') {
        None => (stem, 0),
        Some((base, digits)) => {
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (base, digits.parse().ok()?)
        }
    };
    match base {
        "boot" => Some((FileKind::Boot, n)),
        "finalize" => Some((FileKind::Finalize, n)),
        _ => None,
    }
}

/// Whether a run id can name the bundle's top-level directory as it is: [`layout::sanitize_component`]
/// leaves it unchanged (ASCII letters, digits, `.`, `_` and `-`; not empty, `.` or `..`).
fn safe_run_id(s: &str) -> bool {
    layout::sanitize_component(s) == s
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

/// What a file found in a folder outside the layout is: the kind of problem and its message.
type Describe = fn(&str, &Path) -> (ProblemKind, String);

/// What `sim/<file>` is.
fn describe_sim_file(rel: &str, path: &Path) -> (ProblemKind, String) {
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
    (
        ProblemKind::Unmapped,
        format!("{what}; simulator-only, the contract's layout has no place for it; not copied"),
    )
}

fn describe_stray(_rel: &str, _path: &Path) -> (ProblemKind, String) {
    (
        ProblemKind::Layout,
        "a file outside the simulator's prod-shape layout; not copied".to_owned(),
    )
}

/// The files of one node directory of the simulator's layout, each as its relative path.
#[derive(Default)]
struct NodeDir {
    name: String,
    /// `(n, path)` per [`sim_record_file`]; oldest first.
    boots: Vec<(u64, String)>,
    finalizes: Vec<(u64, String)>,
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
    /// Its boot records that fit the contract, oldest first.
    identities: Vec<v1::Identity>,
    /// The role and stage index of the latest of them, or the directory name without one.
    role: String,
    stage_index: Option<u32>,
}

impl Node {
    /// The identity of boot `boot_sequence` (else the latest); whether it matched.
    fn identity_for(&self, boot_sequence: Option<u32>) -> Option<(&v1::Identity, bool)> {
        if let Some(seq) = boot_sequence {
            if let Some(i) = self
                .identities
                .iter()
                .rev()
                .find(|i| i.boot_sequence == seq)
            {
                return Some((i, true));
            }
        }
        self.identities.last().map(|i| (i, false))
    }

    /// An identity for snapshots of a node without a boot record that fits the contract.
    fn placeholder_identity(&self, run_id: &str) -> v1::Identity {
        let mut identity =
            v1::Identity::new(self.id.to_hex(), self.id.short(), &self.role, run_id, 0, 0);
        identity.stage_index = self.stage_index;
        identity
    }
}

struct Upgrader<'a> {
    root: &'a Path,
    validators: Validators,
    /// Node directory name → node id, to resolve peers named by directory.
    names: HashMap<String, NodeId>,
    problems: Vec<Problem>,
}

impl Upgrader<'_> {
    fn note(&mut self, kind: ProblemKind, location: Location, message: impl Into<String>) {
        self.problems.push(Problem::new(kind, location, message));
    }

    fn run(mut self) -> io::Result<Upgraded> {
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
            nodes.push(self.node(dir, boots, &run_id));
        }

        let mut writer = Writer::new(
            run_id.clone(),
            v1::BundleWriter::new(v1::WriterKind::Sim, WRITER_NAME, env!("CARGO_PKG_VERSION")),
        );
        for node in &nodes {
            self.write_node(node, &run_id, &mut writer);
        }
        let mut finished = writer.finish();

        // The writer names a node by the id it posted under; the simulator's directory names it.
        let prefix = format!("{run_id}/");
        for mut problem in finished.problems {
            let id = problem.location.file.strip_prefix(&prefix).unwrap_or("");
            if let Some(node) = nodes.iter().find(|n| n.id.to_string() == id) {
                problem.location = Location::file(&node.dir.name);
            }
            self.problems.push(problem);
        }

        let extra = self.manifest_extra(manifest.as_ref(), &run_id, nodes.len());
        if !extra.is_empty() {
            finished.manifest.extra.extend(extra);
            finished
                .contents
                .insert_json(layout::MANIFEST, &finished.manifest);
            let value = serde_json::to_value(&finished.manifest)
                .expect("OK because contract types always serialize");
            self.report_unknown(
                &at(layout::MANIFEST, Some(0), ""),
                RecordKind::Manifest,
                "manifest",
                &value,
                None,
            );
        }

        self.problems
            .sort_by(|a, b| (&a.location, &a.message).cmp(&(&b.location, &b.message)));
        Ok(Upgraded {
            contents: finished.contents,
            manifest: finished.manifest,
            problems: self.problems,
        })
    }

    /// Walks the top level: the manifest, the node directories, and everything else (listed).
    fn scan(&mut self) -> io::Result<Scanned> {
        let mut manifest = None;
        let mut dirs = Vec::new();
        for e in entries(self.root)? {
            if !e.utf8 {
                self.not_utf8(&e.name);
                continue;
            }
            let path = self.root.join(&e.name);
            match (e.kind, e.name.as_str()) {
                (EntryKind::File, layout::MANIFEST) => {
                    manifest = self.read_object(layout::MANIFEST)
                }
                (EntryKind::Dir, "sim") => self.list_tree("sim", &path, 0, describe_sim_file),
                (EntryKind::Dir, name) => {
                    if let Some(dir) = self.scan_node(name, &path) {
                        dirs.push(dir);
                    }
                }
                (EntryKind::Symlink, _) => self.symlink(&e.name),
                _ => self.entry_of_tree(&e.name, &path, describe_stray),
            }
        }
        Ok(Scanned { manifest, dirs })
    }

    fn not_utf8(&mut self, rel: &str) {
        self.note(
            ProblemKind::Read(ReadErrorKind::UnsafePath),
            Location::file(rel),
            "a name that is not UTF-8; skipped",
        );
    }

    fn symlink(&mut self, rel: &str) {
        self.note(
            ProblemKind::Read(ReadErrorKind::Link),
            Location::file(rel),
            "a symbolic link; not followed",
        );
    }

    fn entry_of_tree(&mut self, rel: &str, path: &Path, what: Describe) {
        let (kind, message) = what(rel, path);
        self.note(kind, Location::file(rel), message);
    }

    /// Lists every file under `path` as not copied, with `what` saying what it is.
    fn list_tree(&mut self, rel: &str, path: &Path, depth: usize, what: Describe) {
        if depth > MAX_LIST_DEPTH {
            self.note(
                ProblemKind::Layout,
                Location::file(rel),
                "a directory nested too deep; not listed further, not copied",
            );
            return;
        }
        let list = match entries(path) {
            Ok(list) => list,
            Err(e) => {
                self.note(
                    ProblemKind::Read(ReadErrorKind::Io),
                    Location::file(rel),
                    format!("an unreadable directory ({e}); not copied"),
                );
                return;
            }
        };
        if list.is_empty() {
            self.note(
                ProblemKind::Layout,
                Location::file(rel),
                "an empty directory outside the contract's layout; not copied",
            );
        }
        for e in list {
            let child = format!("{rel}/{}", e.name);
            match e.kind {
                _ if !e.utf8 => self.not_utf8(&child),
                EntryKind::Dir => self.list_tree(&child, &path.join(&e.name), depth + 1, what),
                EntryKind::Symlink => self.symlink(&child),
                EntryKind::File => self.entry_of_tree(&child, &path.join(&e.name), what),
                EntryKind::Other => self.note(
                    ProblemKind::Read(ReadErrorKind::Io),
                    Location::file(child),
                    "not a regular file; not copied",
                ),
            }
        }
    }

    /// The files of a node directory; `None` when the directory holds no node records (its files
    /// are then listed). `detector/verdicts.json` is listed as the detector's output.
    fn scan_node(&mut self, name: &str, path: &Path) -> Option<NodeDir> {
        let list = match entries(path) {
            Ok(list) => list,
            Err(e) => {
                self.note(
                    ProblemKind::Read(ReadErrorKind::Io),
                    Location::file(name),
                    format!("an unreadable directory ({e}); skipped"),
                );
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
                self.not_utf8(&rel);
                continue;
            }
            match (e.kind, e.name.as_str()) {
                (EntryKind::File, "verdicts.json") if name == "detector" => {
                    let what = match read_json(&path.join(&e.name), MAX_FILE_BYTES) {
                        Ok(Value::Array(a)) => {
                            format!("the detector's verdicts ({} entries)", a.len())
                        }
                        _ => "the detector's verdicts".to_owned(),
                    };
                    self.note(
                        ProblemKind::Unmapped,
                        Location::file(rel),
                        format!(
                            "{what}; simulator-only, the contract has no place for it; not copied"
                        ),
                    );
                }
                (EntryKind::File, file) => match sim_record_file(file) {
                    Some((FileKind::Boot, n)) => dir.boots.push((n, rel)),
                    Some((_, n)) => dir.finalizes.push((n, rel)),
                    None => strays.push((rel, e.kind, path.join(&e.name))),
                },
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
                EntryKind::Symlink => self.symlink(&rel),
                _ => self.entry_of_tree(&rel, &p, describe_stray),
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
                self.note(
                    ProblemKind::Read(ReadErrorKind::Io),
                    Location::file(rel),
                    format!("an unreadable directory ({e}); skipped"),
                );
                return Vec::new();
            }
        };
        let mut files = Vec::new();
        for e in list {
            let child = format!("{rel}/{}", e.name);
            match e.kind {
                _ if !e.utf8 => self.not_utf8(&child),
                EntryKind::File if e.name.ends_with(".json") => files.push(child),
                EntryKind::Dir => self.list_tree(&child, &path.join(&e.name), 2, describe_stray),
                EntryKind::Symlink => self.symlink(&child),
                _ => self.entry_of_tree(&child, &path.join(&e.name), describe_stray),
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
                    ProblemKind::Shape,
                    Location::file(rel),
                    format!("not a JSON object ({}); skipped", quote(&other)),
                );
                None
            }
            Err((kind, why)) => {
                self.note(kind, Location::file(rel), format!("{why}; skipped"));
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
            return Err(invalid(
                "no run id (neither MANIFEST.json nor a boot record has a string `run_id`)"
                    .to_owned(),
            ));
        };
        if !safe_run_id(run_id) {
            return Err(invalid(format!(
                "run id {} cannot name the bundle's directory: a run id must be one path component \
                 of ASCII letters, digits, `.`, `_` and `-`, and not `.` or `..`",
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
                    ProblemKind::Layout,
                    Location::file(&dir.name),
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
        };
        for (i, (rel, boot)) in boots.iter().enumerate() {
            let fallback_seq = u32::try_from(i).unwrap_or(u32::MAX);
            if let Some(identity) = self.identity(&node, rel, boot, run_id, fallback_seq) {
                node.identities.push(identity);
            }
        }
        match node.identities.last() {
            Some(latest) => {
                node.role = latest.role.clone();
                node.stage_index = latest.stage_index;
            }
            None => node.role = node.dir.name.clone(),
        }
        node
    }

    /// The contract's identity for one boot record of the simulator; `None` (listed) when it cannot
    /// be made to fit.
    fn identity(
        &mut self,
        node: &Node,
        rel: &str,
        boot: &Object,
        run_id: &str,
        fallback_seq: u32,
    ) -> Option<v1::Identity> {
        let key_at = |key: &str| at(rel, Some(0), key_pointer(key));
        let stage_index = match boot.get("stage_index") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) => Some(n),
                None => {
                    self.note(
                        ProblemKind::Schema,
                        key_at("stage_index"),
                        format!(
                            "`stage_index` {} is not a stage index; written as null",
                            quote(v)
                        ),
                    );
                    None
                }
            },
        };
        let boot_sequence = boot
            .get("boot_sequence")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok());
        let boot_sequence = boot_sequence.unwrap_or_else(|| {
            self.note(
                ProblemKind::Shape,
                key_at("boot_sequence"),
                format!("no usable `boot_sequence`; written as {fallback_seq}, its place among the node's boots"),
            );
            fallback_seq
        });
        let start = boot
            .get("wall_ms")
            .and_then(Value::as_u64)
            .unwrap_or_else(|| {
                self.note(
                    ProblemKind::Shape,
                    key_at("wall_ms"),
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
        let mut base = v1::Identity::new(
            node.id.to_hex(),
            node.id.short(),
            role,
            record_run_id,
            start,
            boot_sequence,
        );
        base.stage_index = stage_index;
        let mut identity =
            serde_json::to_value(&base).expect("OK because contract types always serialize");
        self.note_envelope(rel, Some(0), boot);
        let own = record_keys(RecordKind::Boot);
        for (k, v) in boot {
            match k.as_str() {
                "schema_version" | "kind" | "stage_index" | "boot_sequence" | "wall_ms" => {}
                "run_id" if v.is_string() => {}
                // The node is the directory: its id is not the record's to choose.
                "node_id_hex" if *v == identity[k.as_str()] => {}
                "node_id_hex" => self.note(
                    ProblemKind::Unmapped,
                    key_at(k),
                    format!(
                        "`node_id_hex` ({}) replaced: the node's id comes from its directory",
                        quote(v)
                    ),
                ),
                _ if own.contains(k.as_str()) => {
                    // A key the identity has: the simulator's value wins when it fits.
                    let before = identity[k.as_str()].clone();
                    identity[k.as_str()] = v.clone();
                    let violations = self.validators.violations(RecordKind::Boot, &identity);
                    if !violations.is_empty() {
                        identity[k.as_str()] = before;
                        self.note(
                            ProblemKind::Schema,
                            key_at(k),
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
        match self.parse::<v1::Identity>(RecordKind::Boot, &identity) {
            Ok(record) => {
                self.report_unknown(
                    &at(rel, Some(0), ""),
                    RecordKind::Boot,
                    "boot record",
                    &identity,
                    None,
                );
                Some(record)
            }
            Err(why) => {
                self.note(
                    ProblemKind::Schema,
                    at(rel, Some(0), ""),
                    format!("does not fit the contract's boot record ({why}); not written"),
                );
                None
            }
        }
    }

    /// Lists the simulator's envelope keys of a record, which the upgrade drops.
    fn note_envelope(&mut self, rel: &str, record: Option<usize>, object: &Object) {
        for key in ["schema_version", "kind"] {
            if let Some(v) = object.get(key) {
                self.note(
                    ProblemKind::Unmapped,
                    at(rel, record, key_pointer(key)),
                    format!(
                        "the simulator's envelope key `{key}` ({}) dropped: the contract names a \
                         record's kind by the file's place in the layout",
                        quote(v)
                    ),
                );
            }
        }
    }

    fn write_node(&mut self, node: &Node, run_id: &str, writer: &mut Writer) {
        let hex = node.id.to_hex();
        // Boots oldest first: the writer makes the last one `boot.json`.
        for identity in &node.identities {
            writer.boot(identity);
        }
        if node.identities.is_empty() {
            self.note(
                ProblemKind::Layout,
                Location::file(&node.dir.name),
                "no boot record that fits the contract: no boot.json written, and its snapshots embed \
                 an identity with `process_start_unix_ms` 0",
            );
        }
        for rel in &node.dir.events {
            if let Some(batch) = self.events_file(node, rel) {
                writer.events(&hex, &batch);
            }
        }
        for (index, rel) in node.dir.snapshots.iter().enumerate() {
            if let Some(snapshot) = self.snapshot(node, rel, index, run_id) {
                writer.snapshot(&snapshot);
            }
        }
        // Finalizes oldest first: the writer makes the last one `finalize.json`.
        for (_, rel) in &node.dir.finalizes {
            if let Some(finalize) = self.finalize(rel) {
                writer.finalize(&hex, &finalize);
            }
        }
    }

    /// One events file: the envelope's `records`, each upgraded on its own.
    fn events_file(&mut self, node: &Node, rel: &str) -> Option<Vec<v1::EventRecord>> {
        let envelope = self.read_object(rel)?;
        let Some(Value::Array(records)) = envelope.get("records") else {
            self.note(
                ProblemKind::Shape,
                Location::file(rel),
                "an events file without a `records` array; skipped",
            );
            return None;
        };
        self.note_envelope(rel, None, &envelope);
        for (k, v) in &envelope {
            if matches!(k.as_str(), "schema_version" | "kind" | "records") {
                continue;
            }
            self.note(
                ProblemKind::Unmapped,
                at(rel, None, key_pointer(k)),
                format!(
                    "`{k}` ({}) of the events envelope dropped: an events file in the contract is a bare \
                     JSON array of event records",
                    quote(v)
                ),
            );
        }
        let mut out = Vec::new();
        for (i, record) in records.iter().enumerate() {
            if let Some(event) = self.event(node, rel, i, record) {
                out.push(event);
            }
        }
        Some(out)
    }

    /// The node id a hex string (any case) or a node's directory name names.
    fn resolve_id(&self, value: &Value) -> Option<NodeId> {
        value
            .as_str()
            .and_then(|s| hex_node_id(s).or_else(|| self.names.get(s).copied()))
    }

    /// A hex string or a node's directory name as the contract's byte-array node id.
    fn to_id_bytes(&self, value: &Value) -> Value {
        self.resolve_id(value)
            .map_or_else(|| value.clone(), |id| id_bytes(&id))
    }

    /// A node's directory name (or upper-case hex) as the contract's hex node id.
    fn to_id_hex(&self, value: &Value) -> Value {
        self.resolve_id(value)
            .map_or_else(|| value.clone(), |id| Value::String(id.to_string()))
    }

    /// Event record `index` of events file `rel` as the contract's event record.
    fn event(
        &mut self,
        node: &Node,
        rel: &str,
        index: usize,
        record: &Value,
    ) -> Option<v1::EventRecord> {
        let here = |pointer: &str| at(rel, Some(index), pointer);
        let Some(obj) = record.as_object() else {
            self.note(
                ProblemKind::Shape,
                here(""),
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
                ProblemKind::Shape,
                here(""),
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
                    ProblemKind::Shape,
                    here(""),
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
            let (id_fields, hex_fields) = event_id_fields(variant);
            let envelope = event_envelope_keys();
            for (k, v) in rest {
                let v = if id_fields.contains(&k.as_str()) {
                    self.to_id_bytes(&v)
                } else if hex_fields.contains(&k.as_str()) {
                    self.to_id_hex(&v)
                } else {
                    v
                };
                if envelope.contains(k.as_str()) {
                    self.note(
                        ProblemKind::Unmapped,
                        here(&key_pointer(&k)),
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
        let problem = match self.parse::<v1::EventRecord>(RecordKind::Event, &candidate) {
            Ok(event) => {
                if matches!(event.event, v1::Event::Other(_)) {
                    self.note(
                        ProblemKind::Unmapped,
                        here("/variant"),
                        format!("event type `{variant}` is unknown to the contract; kept as an unknown event type"),
                    );
                } else {
                    let what = format!("`{name}` event");
                    self.report_unknown(&here(""), RecordKind::Event, &what, &candidate, None);
                }
                return Some(event);
            }
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
        match self.parse::<v1::EventRecord>(RecordKind::Event, &fallback) {
            Ok(event) => {
                self.note(
                    ProblemKind::Schema,
                    here(""),
                    format!(
                        "a `{name}` event that does not fit the contract ({problem}); kept as a `Custom` \
                         event of kind `{fallback_kind}` with its fields as the simulator wrote them"
                    ),
                );
                Some(event)
            }
            Err(_) => {
                self.note(
                    ProblemKind::Schema,
                    here(""),
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
    ) -> Option<v1::Snapshot> {
        let here = |pointer: &str| at(rel, Some(0), pointer);
        let obj = self.read_object(rel)?;
        let wall_ms = obj.get("wall_ms").and_then(Value::as_u64);
        let seq = obj.get("monotonic_seq").and_then(Value::as_u64);
        let (Some(wall_ms), Some(seq)) = (wall_ms, seq) else {
            self.note(
                ProblemKind::Shape,
                here(""),
                "a snapshot without an integer `wall_ms` and an integer `monotonic_seq`; skipped",
            );
            return None;
        };
        self.note_envelope(rel, Some(0), &obj);
        let snapshot_id = match obj.get("snapshot_id") {
            Some(Value::String(s)) => s.clone(),
            other => {
                let id = format!("{}-{index}", node.id.short());
                let was = other.map_or("none".to_owned(), quote);
                self.note(
                    ProblemKind::Shape,
                    here("/snapshot_id"),
                    format!("no string `snapshot_id` ({was}); written as `{id}`"),
                );
                id
            }
        };
        let boot_sequence = obj
            .get("boot_sequence")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok());
        let (identity, matched) = match node.identity_for(boot_sequence) {
            Some((identity, matched)) => (identity.clone(), matched),
            None => (node.placeholder_identity(run_id), false),
        };
        if !matched && !node.identities.is_empty() && obj.contains_key("boot_sequence") {
            self.note(
                ProblemKind::Unmapped,
                here("/boot_sequence"),
                format!(
                    "no boot record with `boot_sequence` {}; the snapshot embeds the node's latest \
                     identity and keeps `boot_sequence` as an unknown key",
                    quote(&obj["boot_sequence"])
                ),
            );
        }

        let mut candidate = Map::new();
        candidate.insert(
            "identity".into(),
            serde_json::to_value(&identity).expect("OK because contract types always serialize"),
        );
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
        let own = record_keys(RecordKind::Snapshot);
        for (k, v) in &obj {
            match k.as_str() {
                "schema_version" | "kind" | "snapshot_id" | "wall_ms" | "monotonic_seq"
                | "trigger" | "body" => {}
                "boot_sequence" if matched => {}
                "run_id" if v.is_string() => {}
                _ if own.contains(k.as_str()) => self.note(
                    ProblemKind::Unmapped,
                    here(&key_pointer(k)),
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
            let violations = self.validators.violations(RecordKind::Snapshot, &candidate);
            if violations.is_empty() {
                break;
            }
            let mut fixed = false;
            let blocks: BTreeSet<String> = violations
                .iter()
                .filter_map(|v| body_block(&v.pointer))
                .collect();
            for block in blocks {
                let in_block: Vec<Violation> = violations
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
                    ProblemKind::Schema,
                    here(&format!("/body{}", key_pointer(&block))),
                    format!(
                        "body block `{block}` does not fit the contract ({}); {done}: {}",
                        describe(&in_block),
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
                    ProblemKind::Schema,
                    here("/trigger"),
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
        match self.parse::<v1::Snapshot>(RecordKind::Snapshot, &candidate) {
            Ok(record) => {
                // The embedded identity's keys were listed with its boot record.
                self.report_unknown(
                    &here(""),
                    RecordKind::Snapshot,
                    "snapshot",
                    &candidate,
                    Some("/identity"),
                );
                Some(record)
            }
            Err(why) => {
                self.note(
                    ProblemKind::Schema,
                    here(""),
                    format!("does not fit the contract's snapshot ({why}); not written"),
                );
                None
            }
        }
    }

    /// The simulator's trigger as the contract's `{kind, data}`.
    fn trigger(&mut self, rel: &str, trigger: Option<&Value>) -> Value {
        let here = at(rel, Some(0), "/trigger");
        let unit = |kind: &str| json!({ "kind": kind });
        match trigger {
            None => {
                self.note(
                    ProblemKind::Shape,
                    here,
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
                            ProblemKind::Unmapped,
                            here,
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
                    ProblemKind::Unmapped,
                    here,
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
        let here = || at(rel, Some(0), "/body");
        let mut body = match body {
            Some(Value::Object(m)) => m.clone(),
            None => {
                self.note(
                    ProblemKind::Shape,
                    here(),
                    "the snapshot has no body; written as an empty body",
                );
                Map::new()
            }
            Some(other) => {
                self.note(
                    ProblemKind::Shape,
                    here(),
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
                ProblemKind::Unmapped,
                here(),
                "no `reachability`: the simulator does not record it; written as an empty list, which the \
                 contract requires",
            );
        }
        let network_keys = field_keys("HostNetwork");
        if let Some(Value::Object(host)) = body.get_mut("host") {
            if !host.contains_key("network") {
                let moved: Vec<String> = host
                    .keys()
                    .filter(|k| network_keys.contains(k.as_str()))
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
    fn finalize(&mut self, rel: &str) -> Option<v1::Finalize> {
        let obj = self.read_object(rel)?;
        self.note_envelope(rel, Some(0), &obj);
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
        match self.parse::<v1::Finalize>(RecordKind::Finalize, &candidate) {
            Ok(record) => {
                self.report_unknown(
                    &at(rel, Some(0), ""),
                    RecordKind::Finalize,
                    "finalize record",
                    &candidate,
                    None,
                );
                Some(record)
            }
            Err(why) => {
                self.note(
                    ProblemKind::Schema,
                    at(rel, Some(0), ""),
                    format!("does not fit the contract's finalize record ({why}); not written"),
                );
                None
            }
        }
    }

    /// The keys of the simulator's manifest that the derived manifest keeps as unknown keys; lists
    /// the others, which the derivation replaces or which disagree with the files.
    fn manifest_extra(&mut self, sim: Option<&Object>, run_id: &str, nodes: usize) -> Object {
        let mut extra = Map::new();
        let Some(sim) = sim else {
            self.note(
                ProblemKind::Manifest,
                Location::file(layout::MANIFEST),
                "the simulator's directory has no readable manifest; the manifest is derived from the files",
            );
            return extra;
        };
        self.note_envelope(layout::MANIFEST, Some(0), sim);
        let own = record_keys(RecordKind::Manifest);
        for (k, v) in sim {
            let here = at(layout::MANIFEST, Some(0), key_pointer(k));
            match k.as_str() {
                "schema_version" | "kind" => {}
                "run_id" if v.as_str() == Some(run_id) => {}
                "node_count" if v.as_u64() == Some(nodes as u64) => {}
                "node_count" => self.note(
                    ProblemKind::Manifest,
                    here,
                    format!(
                        "`node_count` ({}) disagrees with the {nodes} node directories found; the manifest \
                         lists the directories",
                        quote(v)
                    ),
                ),
                _ if own.contains(k.as_str()) => self.note(
                    ProblemKind::Manifest,
                    here,
                    format!(
                        "`{k}` ({}) replaced: the upgrade derives it from the files",
                        quote(v)
                    ),
                ),
                _ => {
                    extra.insert(k.clone(), v.clone());
                }
            }
        }
        extra
    }

    /// Validates `value` as a record of `kind` and parses it into its type.
    fn parse<T: DeserializeOwned>(&self, kind: RecordKind, value: &Value) -> Result<T, String> {
        let violations = self.validators.violations(kind, value);
        if !violations.is_empty() {
            return Err(describe(&violations));
        }
        serde_json::from_value(value.clone()).map_err(|e| e.to_string())
    }

    /// Lists every key of `value` (a record of `kind` at `record`) that the contract keeps only as
    /// an unknown key, except those under the pointer `skip`.
    fn report_unknown(
        &mut self,
        record: &Location,
        kind: RecordKind,
        what: &str,
        value: &Value,
        skip: Option<&str>,
    ) {
        for pointer in shape::unknown_keys(&v1::CONTRACT, kind.as_str(), value) {
            if skip.is_some_and(|s| pointer == s || pointer.starts_with(&format!("{s}/"))) {
                continue;
            }
            let quoted = value
                .pointer(&pointer)
                .map_or_else(String::new, |v| format!(" ({})", quote(v)));
            let message = format!(
                "key `{pointer}`{quoted} has no place in the contract's {what}; kept as an unknown key"
            );
            let mut location = record.clone();
            location.pointer = pointer;
            self.note(ProblemKind::Unmapped, location, message);
        }
    }
}

/// The body block a violation's pointer is in (`/body/<block>/…`).
fn body_block(pointer: &str) -> Option<String> {
    let rest = pointer.strip_prefix("/body/")?;
    let block = rest.split('/').next()?;
    (!block.is_empty()).then(|| block.replace("~1", "/").replace("~0", "~"))
}
