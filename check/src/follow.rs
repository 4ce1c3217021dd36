//! Following a run directory while it is written (`diagwire check --follow`): a bundle directory
//! (`<label>/boot.json`, `<label>/events/events-NNNNNN.json`, …, `MANIFEST.json`) or a collector's
//! staging directory of one run (`<node_id>/<kind>-NNNNNN.json|.pb`), or a staging root holding one
//! run. Each [`Follower::poll`] lists the directory, reads every record file that landed since the
//! last one — a node's files in their sequence order — and feeds its records to a [`Monitor`].
//! A directory that holds no record file yet (a staging root before its first run, a bundle
//! directory before its first file) is waited on: the first poll that finds a run's file decides
//! which run directory is followed ([`Follower::waiting`] until then).
//!
//! Writers publish a file by renaming it into place, so a file that is there is whole; a name
//! outside the layout (a writer's temporary name) is not read. A file that does not parse is
//! waited for rather than misread: it is read again whenever its size or time changes, and
//! reported as unreadable only once it has stayed unchanged for the settle time (or when the
//! follow ends). Polling, not file-system notification: it needs nothing from the platform, works
//! the same on every file system (network mounts included), and a poll every 50 ms keeps the
//! latency from a landing to its finding well under a quarter second.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use diagwire::bundle::read::{Limits, Links, open_record_file_with};
use diagwire::layout::{self, Encoding, FileKind, Role};
use diagwire::problem::{Location, Problem, ProblemKind, ReadErrorKind};
use diagwire::v1::{EventRecord, Record, RecordKind};
use serde_json::value::RawValue;

use crate::evaluate::driver::{Fed, RecordRef};
use crate::monitor::Monitor;

/// One record file of the followed directory.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Landing {
    /// Its node (`None` for the manifest).
    node: Option<String>,
    /// Its kind and sequence number (0 for `boot.json`, `finalize.json`, the manifest).
    kind: Option<FileKind>,
    seq: u64,
    encoding: Encoding,
}

/// What is known of a file seen.
#[derive(Debug)]
enum Seen {
    /// Read (or reported).
    Done,
    /// Did not parse: read again when it changes, reported once it stayed as it is.
    Waiting {
        len: u64,
        modified: Option<SystemTime>,
        since: Instant,
        problem: Problem,
    },
}

/// What one poll read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Landed {
    /// Record files read.
    pub files: u64,
    /// Records fed.
    pub records: u64,
    /// Whether a finalize record was among them.
    pub finalize: bool,
}

/// A run directory followed while it is written.
#[derive(Debug)]
pub struct Follower {
    /// The directory as given.
    given: PathBuf,
    /// The run directory followed, once one is found.
    root: Option<PathBuf>,
    limits: Limits,
    seen: BTreeMap<String, Seen>,
    /// Whether a finalize record has been read.
    pub finalized: bool,
}

impl Follower {
    /// Follows `path`: a run directory (bundle or staging), or a staging root holding one run
    /// (or none yet: the first to appear is followed). Fails when `path` is not a directory or
    /// holds several runs.
    pub fn new(path: &Path, limits: Limits) -> Result<Follower, String> {
        let meta = fs::symlink_metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if !meta.is_dir() {
            return Err(format!(
                "{}: not a directory (follow a bundle directory or a collector's staging directory)",
                path.display()
            ));
        }
        let mut follower = Follower {
            given: path.to_path_buf(),
            root: None,
            limits,
            seen: BTreeMap::new(),
            finalized: false,
        };
        follower.find_run()?;
        Ok(follower)
    }

    /// Looks for the run directory while none is known; fails when several runs appeared.
    pub fn find_run(&mut self) -> Result<(), String> {
        if self.root.is_none() {
            self.root = run_directory(&self.given)?;
        }
        Ok(())
    }

    /// Whether no run directory has been found yet (nothing of a run is under the path).
    pub fn waiting(&self) -> bool {
        self.root.is_none()
    }

    /// The run directory followed (the path as given while waiting).
    pub fn root(&self) -> &Path {
        self.root.as_deref().unwrap_or(&self.given)
    }

    /// Reads what landed since the last poll into `monitor`; a file that has not parsed for
    /// `settle` without changing is reported as unreadable. While no run directory is known it
    /// looks for one first ([`Follower::find_run`], whose error it leaves for that call to
    /// report) and reads nothing until one is found.
    pub fn poll(&mut self, monitor: &mut Monitor<'_>, settle: Duration) -> Landed {
        let mut landed = Landed::default();
        if self.waiting() {
            // An error (several runs) is for the caller of `find_run` to report.
            let _ = self.find_run();
            if self.waiting() {
                return landed;
            }
        }
        let mut due: Vec<(Landing, String)> = Vec::new();
        for (rel, landing) in self.list(monitor) {
            match self.seen.get(&rel) {
                Some(Seen::Done) => {}
                Some(Seen::Waiting { len, modified, .. }) => {
                    let meta = fs::symlink_metadata(self.root().join(&rel)).ok();
                    let now = meta.as_ref().map(|m| (m.len(), m.modified().ok()));
                    if now != Some((*len, *modified)) {
                        due.push((landing, rel));
                    }
                }
                None => due.push((landing, rel)),
            }
        }
        due.sort();
        for (landing, rel) in due {
            self.read(&rel, &landing, monitor, &mut landed);
        }
        let now = Instant::now();
        for seen in self.seen.values_mut() {
            if let Seen::Waiting { since, problem, .. } = seen
                && now.duration_since(*since) >= settle
            {
                monitor.problem(problem);
                *seen = Seen::Done;
            }
        }
        landed
    }

    /// Ends the follow: every file still waiting is reported as unreadable.
    pub fn finish(&mut self, monitor: &mut Monitor<'_>) {
        for seen in self.seen.values_mut() {
            if let Seen::Waiting { problem, .. } = seen {
                monitor.problem(problem);
                *seen = Seen::Done;
            }
        }
    }

    fn shown(&self, rel: &str) -> String {
        format!("{}/{rel}", self.root().display())
    }

    /// Every record file of the layout under the root, by relative path. Links and special files
    /// are reported once and never read.
    fn list(&mut self, monitor: &mut Monitor<'_>) -> Vec<(String, Landing)> {
        let mut out = Vec::new();
        let mut refused = Vec::new();
        let mut stack: Vec<(PathBuf, String, usize)> =
            vec![(self.root().to_path_buf(), String::new(), 0)];
        while let Some((dir, prefix, depth)) = stack.pop() {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(name) = entry.file_name().into_string() else {
                    continue;
                };
                let rel = format!("{prefix}{name}");
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    if depth < 2 {
                        stack.push((entry.path(), format!("{rel}/"), depth + 1));
                    }
                    continue;
                }
                let Some(landing) = landing(&rel) else {
                    continue;
                };
                if !kind.is_file() {
                    if !self.seen.contains_key(&rel) {
                        refused.push(rel);
                    }
                    continue;
                }
                out.push((rel, landing));
            }
        }
        for rel in refused {
            monitor.problem(&Problem::new(
                ProblemKind::Read(ReadErrorKind::Link),
                Location::file(self.shown(&rel)),
                "a symbolic link or special file where a record file belongs; not followed",
            ));
            self.seen.insert(rel, Seen::Done);
        }
        out
    }

    fn read(&mut self, rel: &str, landing: &Landing, monitor: &mut Monitor<'_>, out: &mut Landed) {
        let path = self.root().join(rel);
        let file = self.shown(rel);
        let meta = fs::symlink_metadata(&path).ok();
        let stamp = meta.as_ref().map(|m| (m.len(), m.modified().ok()));
        let kind = landing
            .kind
            .as_ref()
            .map_or(RecordKind::Manifest, FileKind::record_kind);
        let text = read_text(&path, landing.encoding, kind, self.limits);
        let text = match text {
            Ok(t) => t,
            Err((problem_kind, message)) => {
                let problem = Problem::new(problem_kind, Location::file(&file), message);
                return self.wait(rel, stamp, problem);
            }
        };
        let node = landing.node.as_deref();
        if kind == RecordKind::EventBatch {
            let raws: Vec<&RawValue> = match serde_json::from_str(&text) {
                Ok(r) => r,
                Err(e) => {
                    let problem = Problem::new(
                        ProblemKind::Encoding,
                        Location::file(&file),
                        format!("not a JSON array of events: {e}"),
                    );
                    return self.wait(rel, stamp, problem);
                }
            };
            self.seen.insert(rel.to_owned(), Seen::Done);
            out.files += 1;
            for (i, raw) in raws.iter().enumerate() {
                let at = Location::record(&file, i, "");
                match serde_json::from_str::<EventRecord>(raw.get()) {
                    Ok(e) => {
                        out.records += 1;
                        monitor.take(&Fed {
                            node,
                            record: RecordRef::Event(&e),
                            text: Some(raw.get()),
                            location: at,
                        });
                    }
                    Err(err) => monitor.problem(&Problem::new(
                        ProblemKind::Parse,
                        at,
                        format!("not an event record: {err}"),
                    )),
                }
            }
            return;
        }
        let record = match Record::parse(kind, &text) {
            Ok(r) => r,
            Err(e) => {
                let problem = Problem::new(
                    ProblemKind::Parse,
                    Location::record(&file, 0, ""),
                    format!("not a {kind} record: {e}"),
                );
                return self.wait(rel, stamp, problem);
            }
        };
        self.seen.insert(rel.to_owned(), Seen::Done);
        out.files += 1;
        out.records += 1;
        if matches!(record, Record::Finalize(_)) {
            out.finalize = true;
            self.finalized = true;
        }
        monitor.take(&Fed {
            node,
            record: (&record).into(),
            text: Some(&text),
            location: Location::record(&file, 0, ""),
        });
    }

    fn wait(&mut self, rel: &str, stamp: Option<(u64, Option<SystemTime>)>, problem: Problem) {
        let (len, modified) = stamp.unwrap_or((0, None));
        let since = match self.seen.get(rel) {
            Some(Seen::Waiting {
                len: l,
                modified: m,
                since,
                ..
            }) if (*l, *m) == (len, modified) => *since,
            _ => Instant::now(),
        };
        self.seen.insert(
            rel.to_owned(),
            Seen::Waiting {
                len,
                modified,
                since,
                problem,
            },
        );
    }
}

/// A record file's JSON text, or why it cannot be read (the problem's kind and message).
fn read_text(
    path: &Path,
    encoding: Encoding,
    kind: RecordKind,
    limits: Limits,
) -> Result<String, (ProblemKind, String)> {
    let mut bytes = Vec::new();
    open_record_file_with(path, limits, Links::Refuse)
        .map_err(|e| (ProblemKind::Read(e.kind), e.message.clone()))?
        .read_to_end(&mut bytes)
        .map_err(|e| (ProblemKind::Read(ReadErrorKind::Io), e.to_string()))?;
    let text = diagwire::binary::json_text(encoding, kind, &bytes)
        .map_err(|e| (ProblemKind::Encoding, e))?;
    String::from_utf8(text.into_owned()).map_err(|_| (ProblemKind::Encoding, "not UTF-8".into()))
}

/// The record file `rel` is, in a bundle's layout or a staging directory's; `None` outside both.
fn landing(rel: &str) -> Option<Landing> {
    let parts: Vec<&str> = rel.split('/').collect();
    if let [node, name] = parts[..]
        && let Some((kind, seq)) = layout::parse_staged_name(name)
    {
        return Some(Landing {
            node: Some(node.to_owned()),
            kind: Some(kind),
            seq,
            encoding: Encoding::of_name(name)?,
        });
    }
    let p = layout::parse_bundle_path(rel);
    let (kind, seq) = match &p.role {
        Role::Manifest => (None, 0),
        Role::Latest(k) => (Some(k.clone()), 0),
        Role::Numbered(k, seq) => (Some(k.clone()), *seq),
        Role::Unknown => return None,
    };
    Some(Landing {
        node: p.node,
        kind,
        seq,
        encoding: p.encoding,
    })
}

/// The run directory under `path`: `path` itself when it holds a run's files (a staging run
/// directory, or any file of a bundle's layout), the one run of a staging root, `None` while it
/// holds neither; an error when a staging root holds several runs.
fn run_directory(path: &Path) -> Result<Option<PathBuf>, String> {
    if let Some(run) = staging_run(path)? {
        return Ok(Some(run));
    }
    let mut stack = vec![(path.to_path_buf(), String::new(), 0)];
    while let Some((dir, prefix, depth)) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let rel = format!("{prefix}{name}");
            match entry.file_type() {
                Ok(t) if t.is_dir() && depth < 2 => {
                    stack.push((entry.path(), format!("{rel}/"), depth + 1));
                }
                Ok(t) if !t.is_dir() && landing(&rel).is_some() => {
                    return Ok(Some(path.to_path_buf()));
                }
                _ => {}
            }
        }
    }
    Ok(None)
}

/// The one run directory of a staging root (`<root>/<run_id>/<node_id>/<kind>-NNNNNN.json`);
/// `None` when `path` is not a staging root; an error when it holds several runs.
fn staging_run(path: &Path) -> Result<Option<PathBuf>, String> {
    let dirs = |p: &Path| -> Vec<PathBuf> {
        fs::read_dir(p)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default()
    };
    // A staged file directly in a node directory; in a bundle the same names sit in the folder of
    // their kind (`events/events-000001.json`), which is not a node directory.
    let staged = |p: &Path| {
        let folder = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        fs::read_dir(p).is_ok_and(|rd| {
            rd.flatten().any(|e| {
                e.file_name()
                    .to_str()
                    .and_then(layout::parse_staged_name)
                    .is_some_and(|(kind, _)| kind.dir() != folder)
            })
        })
    };
    if dirs(path).iter().any(|node| staged(node)) {
        return Ok(None);
    }
    let mut runs: Vec<PathBuf> = dirs(path)
        .into_iter()
        .filter(|run| dirs(run).iter().any(|node| staged(node)))
        .collect();
    runs.sort();
    match runs.len() {
        0 => Ok(None),
        1 => Ok(runs.pop()),
        _ => Err(format!(
            "{} holds {} runs; follow one of them: {}",
            path.display(),
            runs.len(),
            runs.iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}
