//! The bundle layout, in one place: which file of a bundle, of the collector's staging tree or of a
//! record file given by name holds which records, how node directories are labelled, and how
//! sequence numbers are spelled.
//!
//! A bundle (see `docs/legacy-wire.md`) is one run directory:
//!
//! ```text
//! <run_id>/MANIFEST.json
//! <run_id>/<label>/boot.json                          the node's latest boot record
//! <run_id>/<label>/boot/boot-NNNNNN.json              earlier boot records, only when there are several
//! <run_id>/<label>/events/events-NNNNNN.json          one posted batch of event records each
//! <run_id>/<label>/snapshots/snapshot-NNNNNN.json     one snapshot each
//! <run_id>/<label>/finalize.json                      the latest finalize record
//! <run_id>/<label>/finalize/finalize-NNNNNN.json      earlier finalize records
//! <run_id>/<label>/vastai/vastai_<kind>-NNNNNN.json   vast.ai monitoring records
//! ```
//!
//! The collector's staging tree holds one file per post, `<root>/<run_id>/<node_id>/<kind>-NNNNNN.json`
//! with `kind` one of `boot`, `events`, `snapshot`, `finalize` or `vastai_<kind>`. `NNNNNN` is a
//! sequence number from 1, zero-padded to six digits (more digits when it needs them).
//!
//! Every record file but the manifest may also be written in the binary form (`docs/protobuf.md`):
//! the same name with `.pb` in place of `.json` (`boot.pb`, `events/events-000001.pb`). The
//! extension says how a file is encoded ([`Encoding`]); the kind and the sequence number are read the
//! same way, so one record is never both `…-000001.json` and `…-000001.pb`. `MANIFEST.json`, the
//! bundle's index, is always JSON.

use crate::v1::RecordKind;

/// The width sequence numbers are padded to.
pub const SEQ_WIDTH: usize = 6;

/// The name of the manifest file at the top of a run directory.
pub const MANIFEST: &str = "MANIFEST.json";

/// How a record file is encoded, from its name's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Encoding {
    /// JSON text (`.json`).
    #[default]
    Json,
    /// One protobuf message of the record kind (`.pb`), as `diagwire-proto` encodes it.
    Protobuf,
}

impl Encoding {
    /// Both encodings.
    pub const ALL: [Encoding; 2] = [Encoding::Json, Encoding::Protobuf];

    /// The file name extension, without the dot: `json` or `pb`.
    pub fn extension(self) -> &'static str {
        match self {
            Encoding::Json => "json",
            Encoding::Protobuf => "pb",
        }
    }

    /// The media type a collector accepts a body of this encoding under: `application/json` or
    /// `application/x-protobuf`.
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Json => "application/json",
            Encoding::Protobuf => "application/x-protobuf",
        }
    }

    /// The encoding a `Content-Type` header names: its media type, before any parameters, compared
    /// without regard to case; `application/protobuf` and `application/vnd.google.protobuf` are the
    /// other spellings protobuf clients send.
    pub fn of_content_type(header: &str) -> Option<Encoding> {
        let media = header.split(';').next().unwrap_or_default().trim();
        let is = |t: &str| media.eq_ignore_ascii_case(t);
        if is("application/json") {
            Some(Encoding::Json)
        } else if is("application/x-protobuf")
            || is("application/protobuf")
            || is("application/vnd.google.protobuf")
        {
            Some(Encoding::Protobuf)
        } else {
            None
        }
    }

    /// The encoding of a file name (`….json` or `….pb`) and the name without its extension.
    pub fn split_name(name: &str) -> Option<(&str, Encoding)> {
        Encoding::ALL.into_iter().find_map(|e| {
            let stem = name.strip_suffix(e.extension())?.strip_suffix('.')?;
            Some((stem, e))
        })
    }

    /// The encoding a file name's extension says, `None` for any other extension.
    pub fn of_name(name: &str) -> Option<Encoding> {
        Encoding::split_name(name).map(|(_, e)| e)
    }
}

/// What a file of a node directory holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileKind {
    /// Boot records (`boot.json`, `boot/boot-NNNNNN.json`).
    Boot,
    /// A batch of event records (`events/events-NNNNNN.json`).
    Events,
    /// A snapshot (`snapshots/snapshot-NNNNNN.json`).
    Snapshot,
    /// Finalize records (`finalize.json`, `finalize/finalize-NNNNNN.json`).
    Finalize,
    /// A vast.ai monitoring record of the named kind (`instance`, `sample`, `logs`, `lifecycle`,
    /// or a later one): `vastai/vastai_<kind>-NNNNNN.json`.
    Vastai(String),
}

impl FileKind {
    /// The record kind the file holds: an events file is one `event_batch`.
    pub fn record_kind(&self) -> RecordKind {
        match self {
            FileKind::Boot => RecordKind::Boot,
            FileKind::Events => RecordKind::EventBatch,
            FileKind::Snapshot => RecordKind::Snapshot,
            FileKind::Finalize => RecordKind::Finalize,
            FileKind::Vastai(_) => RecordKind::Vastai,
        }
    }

    /// The folder of a node directory that holds the numbered files of this kind.
    pub fn dir(&self) -> &'static str {
        match self {
            FileKind::Boot => "boot",
            FileKind::Events => "events",
            FileKind::Snapshot => "snapshots",
            FileKind::Finalize => "finalize",
            FileKind::Vastai(_) => "vastai",
        }
    }

    /// The staging file stem of the kind: `boot`, `events`, `snapshot`, `finalize`, `vastai_<kind>`.
    pub fn staged_stem(&self) -> String {
        match self {
            FileKind::Boot => "boot".into(),
            FileKind::Events => "events".into(),
            FileKind::Snapshot => "snapshot".into(),
            FileKind::Finalize => "finalize".into(),
            FileKind::Vastai(kind) => format!("vastai_{kind}"),
        }
    }

    fn from_staged_stem(stem: &str) -> Option<FileKind> {
        Some(match stem {
            "boot" => FileKind::Boot,
            "events" => FileKind::Events,
            "snapshot" => FileKind::Snapshot,
            "finalize" => FileKind::Finalize,
            _ => {
                let kind = stem.strip_prefix("vastai_")?;
                if !is_vastai_kind(kind) {
                    return None;
                }
                FileKind::Vastai(kind.to_owned())
            }
        })
    }
}

/// Whether `kind` can name a vast.ai record file: one or more ASCII letters, digits and `_`.
pub fn is_vastai_kind(kind: &str) -> bool {
    !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The part a file plays in a bundle.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Role {
    /// `MANIFEST.json`.
    Manifest,
    /// `<label>/boot.json` or `<label>/finalize.json`: the latest record of its kind.
    Latest(FileKind),
    /// A numbered file: `NNNNNN` is its sequence number.
    Numbered(FileKind, u64),
    /// Anything else.
    Unknown,
}

impl Role {
    /// The record kind of the file, `None` for a file outside the layout.
    pub fn record_kind(&self) -> Option<RecordKind> {
        match self {
            Role::Manifest => Some(RecordKind::Manifest),
            Role::Latest(k) | Role::Numbered(k, _) => Some(k.record_kind()),
            Role::Unknown => None,
        }
    }

    /// What the file holds, `None` for the manifest and files outside the layout.
    pub fn file_kind(&self) -> Option<&FileKind> {
        match self {
            Role::Latest(k) | Role::Numbered(k, _) => Some(k),
            Role::Manifest | Role::Unknown => None,
        }
    }
}

/// A path inside a run directory, as the layout reads it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BundlePath {
    /// The node label (the first path component) of a file inside a node directory.
    pub node: Option<String>,
    /// The file's part.
    pub role: Role,
    /// How the file is encoded (JSON for a file outside the layout).
    pub encoding: Encoding,
}

/// Reads a `/`-separated path relative to the run directory: `MANIFEST.json` is the manifest,
/// `stage-0/boot.json` the latest boot record of `stage-0`. A file outside the layout is
/// [`Role::Unknown`], with the first path component as its node when it is inside a directory.
pub fn parse_bundle_path(rel: &str) -> BundlePath {
    let outside = |node: Option<&str>| BundlePath {
        node: node.map(str::to_owned),
        role: Role::Unknown,
        encoding: Encoding::Json,
    };
    if rel == MANIFEST {
        return BundlePath {
            node: None,
            role: Role::Manifest,
            encoding: Encoding::Json,
        };
    }
    let Some((node, rest)) = rel.split_once('/').filter(|(n, _)| !n.is_empty()) else {
        return outside(None);
    };
    let found = match rest.split_once('/') {
        None => latest_kind(rest).map(|(kind, encoding)| (Role::Latest(kind), encoding)),
        Some((dir, file)) => numbered_file(dir, file),
    };
    match found {
        Some((role, encoding)) => BundlePath {
            node: Some(node.to_owned()),
            role,
            encoding,
        },
        None => outside(Some(node)),
    }
}

/// The kind of `boot.json` / `finalize.json` (or `.pb`), the latest record of its kind.
fn latest_kind(name: &str) -> Option<(FileKind, Encoding)> {
    let (stem, encoding) = Encoding::split_name(name)?;
    let kind = match stem {
        "boot" => FileKind::Boot,
        "finalize" => FileKind::Finalize,
        _ => return None,
    };
    Some((kind, encoding))
}

/// `<dir>/<stem>-NNNNNN.json` (or `.pb`) inside a node directory.
fn numbered_file(dir: &str, file: &str) -> Option<(Role, Encoding)> {
    let (kind, seq) = parse_staged_name(file)?;
    let encoding = Encoding::of_name(file)?;
    (dir == kind.dir()).then_some((Role::Numbered(kind, seq), encoding))
}

/// The path of a JSON file inside the run directory: the inverse of [`parse_bundle_path`].
pub fn bundle_path(label: &str, role: &Role) -> String {
    bundle_path_as(label, role, Encoding::Json)
}

/// The path of a file of `encoding` inside the run directory (the manifest is always
/// `MANIFEST.json`): the inverse of [`parse_bundle_path`].
pub fn bundle_path_as(label: &str, role: &Role, encoding: Encoding) -> String {
    let ext = encoding.extension();
    match role {
        Role::Manifest => MANIFEST.to_owned(),
        Role::Latest(FileKind::Boot) => format!("{label}/boot.{ext}"),
        Role::Latest(FileKind::Finalize) => format!("{label}/finalize.{ext}"),
        Role::Latest(kind) | Role::Numbered(kind, _) => {
            let seq = match role {
                Role::Numbered(_, seq) => *seq,
                _ => 0,
            };
            format!(
                "{label}/{}/{}",
                kind.dir(),
                staged_name_as(kind, seq, encoding)
            )
        }
        Role::Unknown => label.to_owned(),
    }
}

/// `<stem>-NNNNNN.json`, the name of a numbered file (in staging and in a bundle's subfolders).
pub fn staged_name(kind: &FileKind, seq: u64) -> String {
    staged_name_as(kind, seq, Encoding::Json)
}

/// `<stem>-NNNNNN.json` or `<stem>-NNNNNN.pb`: the name of a numbered file of `encoding`.
pub fn staged_name_as(kind: &FileKind, seq: u64, encoding: Encoding) -> String {
    format!(
        "{}-{}.{}",
        kind.staged_stem(),
        format_seq(seq),
        encoding.extension()
    )
}

/// A sequence number zero-padded to [`SEQ_WIDTH`] digits.
pub fn format_seq(seq: u64) -> String {
    format!("{seq:0SEQ_WIDTH$}")
}

/// `<stem>-NNNNNN.json` or `<stem>-NNNNNN.pb` → (kind, sequence number); [`Encoding::of_name`]
/// tells the two apart. Only the exact spelling [`staged_name_as`] writes is accepted, so two
/// names of one encoding never map to one number (`boot-1.json` beside `boot-000001.json` is not
/// a staged name).
pub fn parse_staged_name(name: &str) -> Option<(FileKind, u64)> {
    let (stem, _) = Encoding::split_name(name)?;
    let (stem, digits) = stem.rsplit_once('-')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let seq: u64 = digits.parse().ok()?;
    if format_seq(seq) != digits {
        return None;
    }
    Some((FileKind::from_staged_stem(stem)?, seq))
}

/// The record kind a record file's name implies when it is given on its own (outside a bundle):
/// `MANIFEST.json`, `boot.json` and `boot-NNNNNN.json`, `events-NNNNNN.json` (an `event_batch`),
/// `snapshot-NNNNNN.json`, `finalize.json` and `finalize-NNNNNN.json`, `vastai_<kind>-NNNNNN.json`,
/// and each of them (but the manifest) with `.pb` in place of `.json`.
pub fn kind_of_file_name(name: &str) -> Option<RecordKind> {
    if name == MANIFEST {
        return Some(RecordKind::Manifest);
    }
    match latest_kind(name) {
        Some((kind, _)) => Some(kind.record_kind()),
        None => parse_staged_name(name).map(|(kind, _)| kind.record_kind()),
    }
}

/// The directory label of a node: `stage-<index>` for a stage with an index, else its role when
/// that is not empty, else `node-<first 8 characters of the id>`. [`assign_labels`] makes them
/// unique and safe.
pub fn node_label(role: Option<&str>, stage_index: Option<u32>, node_id: &str) -> String {
    match (role, stage_index) {
        (Some("stage"), Some(i)) => format!("stage-{i}"),
        (Some(r), _) if !r.is_empty() => r.to_owned(),
        _ => format!("node-{}", node_id.chars().take(8).collect::<String>()),
    }
}

/// Makes a string one safe path component, as the collector does for staging names: characters
/// outside `[A-Za-z0-9._-]` become `_`; an empty name, `.` and `..` become `_`.
pub fn sanitize_component(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match out.as_str() {
        "" | "." | ".." => "_".to_owned(),
        _ => out,
    }
}

/// One unique, safe label per node, in the order given. `nodes` are `(wanted label, node id)`.
///
/// Labels are made safe with [`sanitize_component`]; a label several nodes want gets
/// `-<first 8 characters of the id>` appended (then the whole id, then a counter, should that still
/// collide); no label is `MANIFEST.json`. Returns the labels and, for each label that had to be made
/// safe, `(node id, wanted, written)`.
pub fn assign_labels(nodes: &[(String, String)]) -> (Vec<String>, Vec<(String, String, String)>) {
    let mut renamed = Vec::new();
    let bases: Vec<String> = nodes
        .iter()
        .map(|(wanted, id)| {
            let safe = sanitize_component(wanted);
            if safe != *wanted {
                renamed.push((id.clone(), wanted.clone(), safe.clone()));
            }
            safe
        })
        .collect();
    let mut shared: std::collections::BTreeMap<&str, usize> = Default::default();
    for base in &bases {
        *shared.entry(base).or_default() += 1;
    }
    let mut used: std::collections::BTreeSet<String> = [MANIFEST.to_owned()].into();
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by(|&a, &b| (&bases[a], &nodes[a].1).cmp(&(&bases[b], &nodes[b].1)));
    let mut out = vec![String::new(); nodes.len()];
    for i in order {
        let base = &bases[i];
        let id = sanitize_component(&nodes[i].1);
        let short: String = id.chars().take(8).collect();
        let mut candidates = Vec::new();
        if shared[base.as_str()] == 1 {
            candidates.push(base.clone());
        }
        candidates.push(format!("{base}-{short}"));
        candidates.push(format!("{base}-{id}"));
        let label = match candidates.into_iter().find(|c| !used.contains(c)) {
            Some(l) => l,
            None => (2u64..)
                .map(|n| format!("{base}-{short}-{n}"))
                .find(|c| !used.contains(c))
                .unwrap_or_default(),
        };
        used.insert(label.clone());
        out[i] = label;
    }
    (out, renamed)
}

/// How a bundle's files go back to a collector as its nodes posted them (`diagwire replay` and
/// the tests that stand in for nodes): each node's posts in the node's own order, and the
/// finalizes, which go last, after every node's other posts.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PostPlan {
    /// Per node label (in label order), its posts in order: its boot records (numbered ones by
    /// number, the latest last), then its events, snapshots and vast.ai files by number (at one
    /// number in that order).
    pub nodes: Vec<(String, Vec<(FileKind, String)>)>,
    /// The finalize records (per node by label: numbered ones by number, the latest last).
    pub finalizes: Vec<(String, FileKind, String)>,
}

impl PostPlan {
    /// The plan for the bundle-relative `paths` (`/`-separated, as [`parse_bundle_path`] reads
    /// them); the manifest and files outside the layout are not posts and are left out.
    pub fn of<'a>(paths: impl IntoIterator<Item = &'a str>) -> PostPlan {
        // Sort key within a node: phase (boot, the rest, finalize), number (a latest file after
        // every numbered one), kind, path.
        type Key = (u8, u64, u8, String);
        let mut by_node: std::collections::BTreeMap<String, Vec<(Key, FileKind)>> =
            std::collections::BTreeMap::new();
        for path in paths {
            let at = parse_bundle_path(path);
            let (Some(label), Some(kind)) = (at.node, at.role.file_kind().cloned()) else {
                continue;
            };
            let number = match at.role {
                Role::Numbered(_, n) => n,
                _ => u64::MAX,
            };
            let (phase, rank) = match kind {
                FileKind::Boot => (0, 0),
                FileKind::Events => (1, 0),
                FileKind::Snapshot => (1, 1),
                FileKind::Vastai(_) => (1, 2),
                FileKind::Finalize => (2, 0),
            };
            by_node
                .entry(label)
                .or_default()
                .push(((phase, number, rank, path.to_owned()), kind));
        }
        let mut plan = PostPlan::default();
        for (label, mut posts) in by_node {
            posts.sort_by(|a, b| a.0.cmp(&b.0));
            let mut own = Vec::new();
            for ((phase, _, _, path), kind) in posts {
                if phase == 2 {
                    plan.finalizes.push((label.clone(), kind, path));
                } else {
                    own.push((kind, path));
                }
            }
            plan.nodes.push((label, own));
        }
        plan
    }

    /// How many posts the plan makes.
    pub fn len(&self) -> usize {
        self.nodes.iter().map(|(_, p)| p.len()).sum::<usize>() + self.finalizes.len()
    }

    /// Whether the plan makes no post.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
