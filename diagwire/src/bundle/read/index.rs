//! The one pass over an archive: recognizing it by its magic bytes, judging each entry from its
//! header, keeping each regular file's data (`spill.rs`), finding the run directory, keeping the
//! last copy of a duplicate, and the list of files and errors, in path order, that `iter.rs` yields.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use super::conflicts::{Node, path_conflicts};
use super::inflate::{At, Fail, stream_of};
use super::run_dir::{find_run_dir, strip_run_dir};
use super::spill::{Spill, SpillWriter};
use super::tar_reader::{RawEntry, Walker, is_directory, normalize_entry_name};
use super::{
    BundleReader, Layout, Limits, ReadError, ReadErrorKind, archive_location, manifest_run_id,
};

/// The first two bytes of every gzip member.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// One entry of the run directory to yield: a file to read or an error.
#[derive(Debug)]
pub(super) struct ArchiveItem {
    /// Where the entry's data starts in the uncompressed tar stream: identifies the entry.
    pub(super) data_pos: u64,
    pub(super) what: ArchiveAction,
}

/// What to yield for an [`ArchiveItem`].
#[derive(Debug)]
pub(super) enum ArchiveAction {
    File {
        rel: String,
        size: u64,
        /// The entry's name as the archive spells it, when that is not the run directory's name
        /// and `rel` joined ([`Locations::of`]).
        raw: Option<Box<str>>,
        /// Where its data is in the pass's [`Spill`].
        at: u64,
    },
    /// (Boxed, as [`Indexed`]'s errors are: one item per file.)
    Error(Box<ReadError>),
}

/// Where an archive's files are shown, `<archive>!<entry name>`, made when a file is yielded
/// rather than kept per entry: an archive may hold hundreds of thousands of entries, and the
/// archive's path would be repeated in each.
#[derive(Debug)]
pub(super) struct Locations {
    /// The archive's path, as shown.
    here: String,
    /// The run directory inside the archive (empty when the files are at its top level).
    run_dir: String,
}

impl Locations {
    /// The location of the file `rel` of the run directory, whose entry is named `raw` when
    /// that is not the run directory's name and `rel` joined.
    pub(super) fn of(&self, rel: &str, raw: Option<&str>) -> String {
        match raw {
            Some(raw) => archive_location(&self.here, raw),
            None if self.run_dir.is_empty() => archive_location(&self.here, rel),
            None => format!("{}!{}/{rel}", self.here, self.run_dir),
        }
    }
}

/// What the pass learned about one entry.
enum Indexed {
    File {
        name: String,
        size: u64,
        /// The entry's name as the archive spells it, when that is not `name` (a `./` or a
        /// doubled `/` that `name` has not).
        raw: Option<Box<str>>,
        at: u64,
    },
    /// A regular file over the per-file limit: an error, but it still tells where the run
    /// directory is.
    TooLarge { name: String, error: Box<ReadError> },
    /// (Errors are boxed: an archive may hold hundreds of thousands of entries, and each entry
    /// takes the room of the largest variant.)
    Error(Box<ReadError>),
    /// An entry passed over quietly (a directory).
    Quiet,
}

pub(super) fn open_archive(path: &Path, limits: Limits) -> Result<BundleReader, ReadError> {
    open_archive_keeping(path, limits, true)
}

/// [`open_archive`] of an archive its caller opened: `file`, shown and named as `path`.
pub(super) fn open_archive_file(
    file: File,
    path: &Path,
    limits: Limits,
) -> Result<BundleReader, ReadError> {
    archive_of(file, path, limits, true)
}

/// [`open_archive`]; `keep` false for a pass that does not keep the files' data (what happens when
/// no temporary file can be written), so that they are read by another pass.
///
/// In steps: [`sniff`] what the file is, make the one [`Pass`] over its entries, find the run
/// directory among the files it found ([`run_dir_of`]), and list what to yield
/// ([`run_dir_items`]).
pub(super) fn open_archive_keeping(
    path: &Path,
    limits: Limits,
    keep: bool,
) -> Result<BundleReader, ReadError> {
    let here = path.display().to_string();
    let file = File::open(path).map_err(io_error(&here))?;
    archive_of(file, path, limits, keep)
}

/// [`open_archive_keeping`] of the archive open as `file`. The archive is read at positions of
/// the reader's own (never at `file`'s offset), and kept open for the passes that read it again.
fn archive_of(
    file: File,
    path: &Path,
    limits: Limits,
    keep: bool,
) -> Result<BundleReader, ReadError> {
    let here = path.display().to_string();
    let gzip = sniff(&file, &here)?;
    let found = Pass::run(&file, gzip, keep, limits, &here)?;
    let run_dir = run_dir_of(&found, &here)?;
    let Found {
        indexed,
        conflicts,
        tail,
        broken: _,
        manifest_runs,
        data,
    } = found;
    let items = run_dir_items(indexed, conflicts, run_dir.as_deref(), &here);
    let (file_count, file_bytes) = file_totals(&items);
    let locations = Locations {
        here,
        run_dir: run_dir.clone().unwrap_or_default(),
    };
    let (run_id, dir_name) = run_names(path, run_dir, manifest_runs);
    Ok(BundleReader {
        source: path.to_path_buf(),
        run_id,
        dir_name,
        limits,
        layout: Layout::Archive {
            gzip,
            items,
            locations,
            spill: data,
            origin: file,
        },
        tail,
        file_count,
        file_bytes,
    })
}

/// The error of an I/O failure on the archive at `here`.
fn io_error(here: &str) -> impl Fn(io::Error) -> ReadError + '_ {
    move |e| ReadError::new(ReadErrorKind::Io, here, e.to_string())
}

/// Opens the archive and tells from its first bytes whether it is gzip'd (`true`) or a plain tar
/// (`false`); anything else is not a bundle. The file is left at its start, for the pass.
fn sniff(file: &File, here: &str) -> Result<bool, ReadError> {
    let io_error = io_error(here);
    let mut magic = [0u8; 512];
    let mut got = 0;
    let mut file = At { file, pos: 0 };
    while got < magic.len() {
        match file.read(&mut magic[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_error(e)),
        }
    }
    if got >= 2 && magic[..2] == GZIP_MAGIC {
        Ok(true)
    } else if got == 512 && &magic[257..262] == b"ustar" {
        Ok(false)
    } else {
        Err(ReadError::new(
            ReadErrorKind::NotABundle,
            here,
            format!("not a bundle: {}", not_an_archive(&magic[..got])),
        ))
    }
}

/// What the one pass over an archive found.
struct Found {
    /// Each entry, with where its data starts in the uncompressed tar stream.
    indexed: Vec<(u64, Indexed)>,
    /// The entries whose path is also another entry's directory (or the reverse), by index in
    /// `indexed`.
    conflicts: HashMap<usize, ReadError>,
    /// Errors of the archive as a whole, after its entries.
    tail: Vec<ReadError>,
    /// The failure that ended the pass inside an entry.
    broken: Option<ReadError>,
    /// The run id each `MANIFEST.json` where a run directory may be names (the last copy's), read
    /// in this pass so that the reader knows the run before yielding a file.
    manifest_runs: HashMap<String, Option<String>>,
    /// The files' data, kept where it can be read again in any order; `None` when it was not
    /// kept.
    data: Option<Spill>,
}

/// How the pass goes on after an entry.
enum Then {
    /// To the next entry.
    Next,
    /// It stops before the archive's end: damage, or a limit.
    Stop,
    /// The tar archive ended.
    End,
}

/// An entry the pass has indexed, before it moves past the entry's data.
struct Judged {
    /// Its index in [`Found::indexed`].
    at: usize,
    /// The name and size of a `MANIFEST.json` to read whole.
    manifest: Option<(String, u64)>,
    /// Whether its data is kept.
    keep: bool,
}

/// The one pass over an archive, under way: every entry indexed, and the data of the regular files
/// kept where they can be read again in any order (a gzip'd archive's in a [`SpillWriter`]; a plain
/// tar is read in place).
struct Pass<'a> {
    /// The archive, as errors name it.
    here: &'a str,
    limits: Limits,
    walker: Walker,
    /// Entries read so far.
    entries: usize,
    /// The paths of the entries, to find paths that are both a file and a directory.
    nodes: Vec<Node>,
    /// Where a gzip'd archive's file data goes.
    spill: Option<SpillWriter>,
    /// A plain tar, to read its files' data from.
    source: Option<File>,
    found: Found,
}

impl<'a> Pass<'a> {
    /// Reads the archive's entries to the end, or to the damage or limit that stops the pass.
    fn run(
        file: &File,
        gzip: bool,
        keep: bool,
        limits: Limits,
        here: &'a str,
    ) -> Result<Found, ReadError> {
        let mut source = if gzip {
            None
        } else {
            Some(file.try_clone().map_err(io_error(here))?)
        };
        let mut spill = gzip.then(SpillWriter::new);
        if !keep {
            if let Some(spill) = &mut spill {
                spill.stop();
            }
            source = None;
        }
        let stream = stream_of(file, gzip).map_err(io_error(here))?;
        let mut pass = Pass {
            here,
            limits,
            walker: Walker::new(stream, limits),
            entries: 0,
            nodes: Vec::new(),
            spill,
            source,
            found: Found {
                indexed: Vec::new(),
                conflicts: HashMap::new(),
                tail: Vec::new(),
                broken: None,
                manifest_runs: HashMap::new(),
                data: None,
            },
        };
        let ended = loop {
            match pass.entry()? {
                Then::Next => {}
                Then::Stop => break false,
                Then::End => break true,
            }
        };
        if ended && gzip {
            pass.trailer();
        }
        Ok(pass.finish())
    }

    /// Reads the next entry's header, indexes the entry, and moves past its data.
    fn entry(&mut self) -> Result<Then, ReadError> {
        let entry = match self.walker.next_entry() {
            Ok(Some(entry)) => entry,
            Ok(None) => return Ok(Then::End),
            Err((kind, message)) => {
                if self.entries == 0 && kind == ReadErrorKind::Tar {
                    return Err(self.not_a_tar(message));
                }
                self.found
                    .tail
                    .push(ReadError::new(kind, self.here, message));
                return Ok(Then::Stop);
            }
        };
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            self.found.tail.push(ReadError::new(
                ReadErrorKind::TooManyEntries,
                self.here,
                format!(
                    "the archive holds more than {} entries (the limit); the rest were not read",
                    self.limits.max_entries
                ),
            ));
            return Ok(Then::Stop);
        }
        let shown = String::from_utf8_lossy(&entry.name).into_owned();
        let location = archive_location(self.here, &shown);
        let usable = match normalize_entry_name(&entry.name) {
            Ok(name) if !name.is_empty() && entry.name_problem.is_none() => Some(name),
            _ => None,
        };
        if let Some((kind, message)) = entry.problem {
            // The header itself is unusable: where the next entry starts is unknown.
            let mut error = ReadError::new(kind, location, message);
            if let Some(name) = usable {
                error = error.about(name);
            }
            self.found.broken = Some(error.clone());
            self.found
                .indexed
                .push((entry.data_pos, Indexed::Error(Box::new(error))));
            return Ok(Then::Stop);
        }
        let judged = self.index(&entry, &location, usable.as_deref(), &shown);
        match self.pass_data(entry.size, judged.manifest, judged.keep) {
            Ok(()) => Ok(Then::Next),
            Err(fail) => {
                self.stopped_in_data(judged.at, location, usable, fail);
                Ok(Then::Stop)
            }
        }
    }

    /// The error of an archive whose first entry does not read as tar: not a bundle.
    fn not_a_tar(&self, message: String) -> ReadError {
        let message = if self.walker.pos == 0 {
            "not a bundle: the gzip data inflates to nothing (no tar archive inside)".to_owned()
        } else {
            format!("not a bundle: the data is not a tar archive ({message})")
        };
        ReadError::new(ReadErrorKind::NotABundle, self.here, message)
    }

    /// Judges an entry from its header ([`classify_entry`]) and records what it is, and its path.
    fn index(
        &mut self,
        entry: &RawEntry,
        location: &str,
        usable: Option<&str>,
        shown: &str,
    ) -> Judged {
        let item = classify_entry(entry, location, shown, self.limits).map(|item| match item {
            // Remember which path a refused entry had, so that it still counts as present.
            Indexed::Error(e) => match normalize_entry_name(&entry.name) {
                Ok(name) if !name.is_empty() => Indexed::Error(Box::new(e.about(name))),
                _ => Indexed::Error(e),
            },
            other => other,
        });
        let mut item = item.unwrap_or(Indexed::Quiet);
        let manifest = match &item {
            Indexed::File { name, size, .. } if may_be_manifest(name) => {
                Some((name.clone(), *size))
            }
            _ => None,
        };
        if let Indexed::File { at, .. } = &mut item {
            *at = match &self.spill {
                Some(spill) => spill.offset(),
                None => entry.data_pos,
            };
        }
        let keep =
            matches!(item, Indexed::File { .. }) && self.spill.as_ref().is_some_and(|s| s.active());
        let at = self.found.indexed.len();
        self.found.indexed.push((entry.data_pos, item));
        if let Some(name) = usable {
            self.nodes
                .push(Node::new(name, is_directory(entry), at, shown));
        }
        Judged { at, manifest, keep }
    }

    /// Moves past the entry's data (`size` bytes, as its header declares) now, so that damage
    /// inside it is found and located here: keeps it when `keep`, and reads a manifest whole. Data
    /// that would pass the total limit is not read at all.
    fn pass_data(
        &mut self,
        size: u64,
        manifest: Option<(String, u64)>,
        keep: bool,
    ) -> Result<(), Fail> {
        let walker = &mut self.walker;
        if walker.pos.saturating_add(walker.skip) > self.limits.max_total_bytes {
            return Err((
                ReadErrorKind::TooLarge,
                format!(
                    "the entry's header declares {size} bytes of data, which would take the \
                     archive past the total limit of {} bytes; reading stopped here",
                    self.limits.max_total_bytes
                ),
            ));
        }
        let spill = match keep {
            true => Some(
                self.spill
                    .as_mut()
                    .expect("OK because `keep` says it is there"),
            ),
            false => None,
        };
        match (manifest, spill) {
            // A manifest is read whole (it is within the per-file limit) so that the run id it
            // names is known at open, and kept like any other file.
            (Some((name, size)), spill) => {
                let bytes = walker.read_data(size)?;
                self.found
                    .manifest_runs
                    .insert(name, manifest_run_id(&bytes));
                if let Some(spill) = spill {
                    spill.write(&bytes);
                }
            }
            (None, Some(spill)) => walker.copy_data(size, &mut |bytes| spill.write(bytes))?,
            (None, None) => {}
        }
        // The padding after the data read, or the data passed over.
        let left = std::mem::take(&mut walker.skip);
        walker.discard(left)
    }

    /// Records the failure that stopped the pass inside entry `at`'s data.
    fn stopped_in_data(
        &mut self,
        at: usize,
        location: String,
        usable: Option<String>,
        (kind, message): Fail,
    ) {
        let error = ReadError::new(kind, location, message);
        self.found.broken = Some(error.clone());
        let item = &mut self.found.indexed[at].1;
        let file = matches!(item, Indexed::File { .. } | Indexed::TooLarge { .. });
        *item = match usable {
            // A file cut by the total limit still tells where the run directory is.
            Some(name) if file && kind == ReadErrorKind::TooLarge => Indexed::TooLarge {
                name,
                error: Box::new(error),
            },
            Some(name) => Indexed::Error(Box::new(error.about(name))),
            None => Indexed::Error(Box::new(error)),
        };
    }

    /// Reads a gzip'd archive past the end of its tar archive: a damaged trailer, or bytes after
    /// the last member that are not a gzip member, are an error of the archive.
    fn trailer(&mut self) {
        if let Err((kind, mut message)) = self.walker.drain() {
            if kind == ReadErrorKind::Gzip {
                message.push_str(", after the end of the tar archive");
            }
            self.found
                .tail
                .push(ReadError::new(kind, self.here, message));
        }
    }

    /// What the pass found, with the paths that conflict and the files' data.
    fn finish(self) -> Found {
        let Pass {
            here,
            walker,
            nodes,
            spill,
            source,
            mut found,
            ..
        } = self;
        drop(walker);
        found.conflicts = path_conflicts(&nodes, here);
        drop(nodes);
        found.data = match spill {
            Some(spill) => spill.finish(),
            None => source.map(Spill::Source),
        };
        found
    }
}

/// The run directory among the regular files the pass found. When none shows, the archive is not a
/// bundle, unless a cap stopped the pass before it showed (the bundle then opens, yields no file,
/// and reports the cap like any other archive past it) or damage did (the damage is the error).
fn run_dir_of(found: &Found, here: &str) -> Result<Option<String>, ReadError> {
    let names: Vec<&str> = found
        .indexed
        .iter()
        .filter_map(|(_, item)| match item {
            Indexed::File { name, .. } | Indexed::TooLarge { name, .. } => Some(name.as_str()),
            Indexed::Error(_) | Indexed::Quiet => None,
        })
        .collect();
    let why = match find_run_dir(&names) {
        Ok(run_dir) => return Ok(Some(run_dir)),
        Err(why) => why,
    };
    let capped = |e: &ReadError| {
        matches!(
            e.kind,
            ReadErrorKind::TooLarge | ReadErrorKind::TooManyEntries
        )
    };
    if found.broken.iter().chain(&found.tail).any(capped) {
        return Ok(None);
    }
    // A damaged archive says more about itself than "not a bundle".
    let damage = found.broken.clone().or_else(|| found.tail.first().cloned());
    Err(damage.unwrap_or_else(|| {
        ReadError::new(
            ReadErrorKind::NotABundle,
            here,
            format!("not a bundle: the archive {why}"),
        )
    }))
}

/// What to yield, in path order: the files of the run directory (the last copy of a duplicate)
/// and every error, their paths relative to the run directory.
fn run_dir_items(
    indexed: Vec<(u64, Indexed)>,
    mut conflicts: HashMap<usize, ReadError>,
    run_dir: Option<&str>,
    here: &str,
) -> Vec<ArchiveItem> {
    let inside =
        |name: &str| -> Option<String> { strip_run_dir(name, run_dir?).map(str::to_owned) };
    let is_last_copy = last_copies(&indexed, &inside);
    let mut items = Vec::with_capacity(indexed.len());
    for (i, (data_pos, item)) in indexed.into_iter().enumerate() {
        if let Some(what) = item.action(is_last_copy[i], &inside, here) {
            items.push(ArchiveItem { data_pos, what });
        }
        if let Some(e) = conflicts.remove(&i) {
            let what = ArchiveAction::Error(Box::new(ReadError {
                path: e.path.as_deref().and_then(inside),
                ..e
            }));
            items.push(ArchiveItem { data_pos, what });
        }
    }
    sort_by_path(&mut items);
    items
}

/// Per entry, whether it is the last copy of a file of the run directory (`inside` says a path
/// relative to it); by index rather than by name, so that no name is copied for it.
fn last_copies(indexed: &[(u64, Indexed)], inside: &dyn Fn(&str) -> Option<String>) -> Vec<bool> {
    let mut last_copy: HashMap<&str, usize> = HashMap::new();
    for (i, (_, item)) in indexed.iter().enumerate() {
        if let Indexed::File { name, .. } = item {
            if inside(name).is_some() {
                last_copy.insert(name.as_str(), i);
            }
        }
    }
    let mut is_last_copy = vec![false; indexed.len()];
    for i in last_copy.into_values() {
        is_last_copy[i] = true;
    }
    is_last_copy
}

impl Indexed {
    /// What to yield for the entry, its path relative to the run directory (`inside`): nothing for
    /// an entry passed over or a file outside the run directory; an error for a copy that a later
    /// one replaces.
    fn action(
        self,
        last_copy: bool,
        inside: &dyn Fn(&str) -> Option<String>,
        here: &str,
    ) -> Option<ArchiveAction> {
        match self {
            Indexed::Quiet => None,
            Indexed::Error(mut e) => {
                e.path = e.path.as_deref().and_then(inside);
                Some(ArchiveAction::Error(e))
            }
            Indexed::TooLarge { mut error, name } => {
                error.path = inside(&name);
                Some(ArchiveAction::Error(error))
            }
            Indexed::File {
                name,
                size,
                raw,
                at,
            } => match inside(&name) {
                None => None,
                Some(rel) if !last_copy => Some(ArchiveAction::Error(Box::new(
                    ReadError::new(
                        ReadErrorKind::Tar,
                        archive_location(here, raw.as_deref().unwrap_or(&name)),
                        "a duplicate entry; a later entry with the same path replaces it",
                    )
                    .about(rel),
                ))),
                Some(rel) => Some(ArchiveAction::File { rel, size, raw, at }),
            },
        }
    }
}

/// How many files the items yield, and their bytes.
fn file_totals(items: &[ArchiveItem]) -> (usize, u64) {
    items
        .iter()
        .fold((0, 0), |(count, bytes), item| match &item.what {
            ArchiveAction::File { size, .. } => (count + 1, bytes + size),
            ArchiveAction::Error(_) => (count, bytes),
        })
}

/// The run's id and its directory's name: the name is the run directory's last component, or for
/// an archive whose top level is the run directory the archive's name without its suffix; the id
/// is the one the run directory's `MANIFEST.json` names, else that name.
fn run_names(
    path: &Path,
    run_dir: Option<String>,
    mut manifest_runs: HashMap<String, Option<String>>,
) -> (String, String) {
    let manifest_run = run_dir.as_deref().and_then(|dir| {
        let name = match dir {
            "" => "MANIFEST.json".to_owned(),
            dir => format!("{dir}/MANIFEST.json"),
        };
        manifest_runs.remove(&name).flatten()
    });
    let dir_name = match run_dir {
        Some(run_dir) if !run_dir.is_empty() => match run_dir.rsplit_once('/') {
            Some((_, name)) => name.to_owned(),
            None => run_dir,
        },
        _ => archive_stem(path),
    };
    let run_id = manifest_run.unwrap_or_else(|| dir_name.clone());
    (run_id, dir_name)
}

/// Whether an entry is a `MANIFEST.json` where a run directory may be (the top, or at most two
/// levels down).
fn may_be_manifest(name: &str) -> bool {
    (name == "MANIFEST.json" || name.ends_with("/MANIFEST.json")) && name.matches('/').count() <= 2
}

/// What a file that is neither a gzip'd nor a plain tar archive is, from its first bytes.
fn not_an_archive(start: &[u8]) -> String {
    let known: [(&[u8], &str); 6] = [
        (b"PK\x03\x04", "a zip archive"),
        (b"PK\x05\x06", "an empty zip archive"),
        (b"BZh", "a bzip2-compressed file"),
        (b"\xfd7zXZ\x00", "an xz-compressed file"),
        (b"\x28\xb5\x2f\xfd", "a zstd-compressed file"),
        (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    ];
    if start.is_empty() {
        return "an empty file".to_owned();
    }
    match known.iter().find(|(magic, _)| start.starts_with(magic)) {
        Some((_, what)) => format!("{what}; bundles are gzip'd or plain tar archives"),
        None => "neither a directory nor a gzip'd or plain tar archive".to_owned(),
    }
}

/// What to do with one archive entry, judged from its header; `None` to pass over it quietly.
fn classify_entry(
    entry: &RawEntry,
    location: &str,
    shown: &str,
    limits: Limits,
) -> Option<Indexed> {
    let error = |kind, message: String| {
        Some(Indexed::Error(Box::new(ReadError::new(
            kind, location, message,
        ))))
    };
    if let Some(problem) = &entry.name_problem {
        return error(ReadErrorKind::UnsafePath, problem.clone());
    }
    let name = match normalize_entry_name(&entry.name) {
        Ok(name) => name,
        Err(why) => return error(ReadErrorKind::UnsafePath, why.to_owned()),
    };
    let target = || {
        entry
            .link
            .as_deref()
            .map(|l| format!(" to `{}`", String::from_utf8_lossy(l)))
            .unwrap_or_default()
    };
    match entry.kind {
        tar::EntryType::Symlink => error(
            ReadErrorKind::Link,
            format!("a symbolic link{}; links are not followed", target()),
        ),
        tar::EntryType::Link => error(
            ReadErrorKind::Link,
            format!("a hard link{}; links are not followed", target()),
        ),
        tar::EntryType::Directory => None,
        tar::EntryType::Regular | tar::EntryType::Continuous => {
            if entry.name.ends_with(b"/") && entry.size == 0 {
                // An old-style directory entry.
                None
            } else if name.is_empty() {
                error(
                    ReadErrorKind::UnsafePath,
                    "the entry name is empty".to_owned(),
                )
            } else if entry.size > limits.max_file_bytes {
                Some(Indexed::TooLarge {
                    name,
                    error: Box::new(ReadError::new(
                        ReadErrorKind::TooLarge,
                        location,
                        format!(
                            "the entry is {} bytes, over the per-file limit of {} bytes; not read",
                            entry.size, limits.max_file_bytes
                        ),
                    )),
                })
            } else {
                let raw = (shown != name).then(|| shown.into());
                Some(Indexed::File {
                    name,
                    size: entry.size,
                    raw,
                    at: 0,
                })
            }
        }
        other => {
            let what = match other {
                tar::EntryType::Char => "a character device".to_owned(),
                tar::EntryType::Block => "a block device".to_owned(),
                tar::EntryType::Fifo => "a fifo".to_owned(),
                tar::EntryType::GNUSparse => "a sparse file".to_owned(),
                other => format!("an entry of unknown type {:?}", char::from(other.as_byte())),
            };
            error(
                ReadErrorKind::Tar,
                format!("{what}, which is not supported; not read"),
            )
        }
    }
}

/// The run id of an archive whose top level is the run directory: its file name without
/// `.tar.gz`, `.tgz`, `.tar` or `.gz`.
fn archive_stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for suffix in [".tar.gz", ".tgz", ".tar", ".gz"] {
        if let Some(stem) = name.strip_suffix(suffix) {
            if !stem.is_empty() {
                return stem.to_owned();
            }
        }
    }
    name
}

/// Puts the items of an archive whose files are not in path order into path order, as a directory
/// yields them (an error stays with the path it is about), so that a bundle reads the same, record
/// for record, from a directory and from any archive of it. Archives written in path order (by the
/// collector and by `write_tar_gz`) are left as they are and read in one pass.
fn sort_by_path(items: &mut [ArchiveItem]) {
    fn key(item: &ArchiveItem) -> &str {
        match &item.what {
            ArchiveAction::File { rel, .. } => rel,
            ArchiveAction::Error(e) => e.path.as_deref().unwrap_or(""),
        }
    }
    let files: Vec<&str> = items
        .iter()
        .filter(|i| matches!(i.what, ArchiveAction::File { .. }))
        .map(key)
        .collect();
    if files.windows(2).all(|w| w[0] <= w[1]) {
        return;
    }
    items.sort_by(|a, b| key(a).cmp(key(b)));
}
