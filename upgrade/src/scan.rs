//! The walk of the simulator's directory: the manifest, the node directories and their record files,
//! and every other entry listed as not copied (`sim/` files described by what they hold).

use std::io;
use std::path::Path;

use serde_json::Value;

use diagwire::layout::{self, FileKind};
use diagwire::problem::ReadErrorKind;
use diagwire::{Location, ProblemKind};

use crate::input::{
    EntryKind, MAX_FILE_BYTES, MAX_LIST_DEPTH, MAX_PROBE_BYTES, entries, read_limited,
    sim_record_file,
};
use crate::nodes::{NodeDir, Scanned};
use crate::upgrader::Upgrader;

/// What a file found in a folder outside the layout is: the kind of problem and its message.
pub(crate) type Describe = fn(&str, &Path) -> (ProblemKind, String);

/// What `sim/<file>` is.
pub(crate) fn describe_sim_file(rel: &str, path: &Path) -> (ProblemKind, String) {
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

pub(crate) fn describe_stray(_rel: &str, _path: &Path) -> (ProblemKind, String) {
    (
        ProblemKind::Layout,
        "a file outside the simulator's prod-shape layout; not copied".to_owned(),
    )
}

impl Upgrader<'_> {
    /// Walks the top level: the manifest, the node directories, and everything else (listed).
    pub(crate) fn scan(&mut self) -> io::Result<Scanned> {
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

    pub(crate) fn not_utf8(&mut self, rel: &str) {
        self.note(
            ProblemKind::Read(ReadErrorKind::UnsafePath),
            Location::file(rel),
            "a name that is not UTF-8; skipped",
        );
    }

    pub(crate) fn symlink(&mut self, rel: &str) {
        self.note(
            ProblemKind::Read(ReadErrorKind::Link),
            Location::file(rel),
            "a symbolic link; not followed",
        );
    }

    pub(crate) fn entry_of_tree(&mut self, rel: &str, path: &Path, what: Describe) {
        let (kind, message) = what(rel, path);
        self.note(kind, Location::file(rel), message);
    }

    /// Lists every file under `path` as not copied, with `what` saying what it is.
    pub(crate) fn list_tree(&mut self, rel: &str, path: &Path, depth: usize, what: Describe) {
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
    pub(crate) fn scan_node(&mut self, name: &str, path: &Path) -> Option<NodeDir> {
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
                    // Counted without building the entries: the file may be large.
                    let entries = read_limited(&path.join(&e.name), MAX_FILE_BYTES)
                        .ok()
                        .flatten()
                        .and_then(|bytes| crate::stream::array_len(&bytes));
                    let what = match entries {
                        Some(n) => format!("the detector's verdicts ({n} entries)"),
                        None => "the detector's verdicts".to_owned(),
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
    pub(crate) fn scan_record_dir(&mut self, rel: &str, path: &Path) -> Vec<String> {
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
}
