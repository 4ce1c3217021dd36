//! Reading a bundle from a directory or a (gzip'd) tar archive, one file at a time, defensively.
//!
//! [`BundleReader::open`] accepts a directory or an archive (recognized by its magic bytes,
//! whatever its name): a gzip'd tar as the collector serves it, or a plain tar. The run directory is
//! the one holding `MANIFEST.json`: the directory or archive top itself, or a directory at most two
//! levels down (`<run_id>/` in a collector tarball, or inside one wrapping directory); it must be
//! the only one. A bundle without a manifest but with node directories is still opened, so that the
//! manifest check can report what is missing. The run id is the name of the run directory, or for
//! an archive whose top is the run directory, the archive's file name without `.tar.gz`.
//!
//! [`BundleReader::files`] then yields the regular files of the run directory one at a time, so
//! memory holds one file's bytes at most. Directories are yielded sorted by path; archives in archive
//! order, which is sorted for archives written by [`super::write::write_tar_gz`] and by the
//! collector. An archive is read twice: a first pass, when opening, indexes the entries and finds the
//! run directory; a second pass, during iteration, yields the files.
//!
//! Nothing is trusted. Every problem is a [`ReadError`] with a [`ReadErrorKind`] and a location
//! (the bundle path, `<bundle>!<entry name>` for an archive entry, or the file path inside a
//! directory); a bad entry is reported and iteration continues with the next one. In particular:
//!
//! * entry names that are absolute, contain `..`, a backslash, or are not UTF-8 are
//!   [`ReadErrorKind::UnsafePath`];
//! * symbolic and hard links, in archives and in directories, are [`ReadErrorKind::Link`] and are
//!   never followed (in a directory, a regular file with more than one name is a hard link);
//! * an entry larger than [`Limits::max_file_bytes`] is [`ReadErrorKind::TooLarge`] and is never read
//!   into memory; once the uncompressed archive (or, for a directory, the files read) passes
//!   [`Limits::max_total_bytes`], reading stops with [`ReadErrorKind::TooLarge`]; past
//!   [`Limits::max_entries`] entries it stops with [`ReadErrorKind::TooManyEntries`];
//! * corrupt or truncated data is [`ReadErrorKind::Gzip`] or [`ReadErrorKind::Tar`] (the files
//!   before the damage are still yielded);
//! * devices, fifos and sparse files are reported and never opened;
//! * an archive holding the same path twice yields the last copy and reports the earlier ones.
//!
//! Regular files outside the run directory (beside it in a wrapping directory or archive) are
//! ignored; in an archive, problems with entries anywhere are reported. The reader never writes
//! anything.

use std::collections::HashMap;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use super::BundleContents;
use crate::layout::{BundlePath, Role, parse_bundle_path};
use crate::problem::{Location, Problem, ProblemKind};

/// Size and count caps that bound the work and memory spent on one bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest file that is read, in bytes.
    pub max_file_bytes: u64,
    /// The most bytes read in total: the uncompressed size of an archive (headers included), or the
    /// sum of the files read from a directory.
    pub max_total_bytes: u64,
    /// The most entries (files, directories, links, …) looked at.
    pub max_entries: usize,
}

impl Default for Limits {
    /// 64 MiB per file, 4 GiB in total, 200 000 entries.
    fn default() -> Self {
        Limits {
            max_file_bytes: 64 << 20,
            max_total_bytes: 4 << 30,
            max_entries: 200_000,
        }
    }
}

pub use crate::problem::ReadErrorKind;

/// A located problem found while reading a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    /// What went wrong.
    pub kind: ReadErrorKind,
    /// Where: the bundle path, `<bundle>!<entry name>` for an archive entry, or the file path.
    pub location: String,
    /// A sentence for a person.
    pub message: String,
    /// The `/`-separated path inside the run directory of the file the error is about, when it
    /// is one (a file that exists but could not be read).
    pub path: Option<String>,
}

impl ReadError {
    /// An error about `location` that is not a file of the run directory.
    pub fn new(
        kind: ReadErrorKind,
        location: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ReadError {
            kind,
            location: location.into(),
            message: message.into(),
            path: None,
        }
    }

    /// The same error, about the file at `path` inside the run directory.
    pub fn about(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

impl std::error::Error for ReadError {}

impl From<ReadError> for Problem {
    fn from(e: ReadError) -> Problem {
        Problem::new(
            ProblemKind::Read(e.kind),
            Location::file(e.location),
            e.message,
        )
    }
}

/// One file of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleFile {
    /// The `/`-separated path relative to the run directory, e.g. `stage-0/boot.json`.
    pub path: String,
    /// The node label (first path component) for files inside a node directory.
    pub node: Option<String>,
    /// The file's part in the layout.
    pub role: Role,
    /// Where the file really is, for messages: its path on disk, or `<archive>!<entry name>`.
    pub location: String,
    /// The file's content.
    pub bytes: Vec<u8>,
}

impl BundleFile {
    fn new(path: String, location: String, bytes: Vec<u8>) -> Self {
        let BundlePath { node, role } = parse_bundle_path(&path);
        BundleFile {
            path,
            node,
            role,
            location,
            bytes,
        }
    }
}

/// An open bundle: where it is, its run id, and the list of what [`BundleReader::files`] yields.
#[derive(Debug)]
pub struct BundleReader {
    source: PathBuf,
    run_id: String,
    limits: Limits,
    layout: Layout,
    /// Problems with the bundle as a whole, yielded after the files.
    tail: Vec<ReadError>,
    file_count: usize,
    /// The sum of the sizes of the files to be yielded.
    file_bytes: u64,
}

/// The files of a bundle one at a time, with how far reading has come: see
/// [`BundleReader::stream`].
pub struct Stream<'a> {
    files: Files<'a>,
    done: u64,
    total: u64,
}

impl Stream<'_> {
    /// (bytes of the files yielded so far, bytes of all the files to yield).
    pub fn progress(&self) -> (u64, u64) {
        (self.done.min(self.total), self.total)
    }
}

impl Iterator for Stream<'_> {
    type Item = Result<StreamFile, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.files.next()?;
        Some(item.map(|file| {
            let size = file.bytes.len() as u64;
            self.done += size;
            StreamFile {
                path: file.path,
                node: file.node,
                role: file.role,
                location: file.location,
                size,
                bytes: io::Cursor::new(file.bytes),
            }
        }))
    }
}

/// One file of a [`Stream`]: what [`BundleFile`] says about it, and its content to read.
#[derive(Debug)]
pub struct StreamFile {
    /// The `/`-separated path relative to the run directory.
    pub path: String,
    /// The node label for files inside a node directory.
    pub node: Option<String>,
    /// The file's part in the layout.
    pub role: Role,
    /// Where the file really is: its path on disk, or `<archive>!<entry name>`.
    pub location: String,
    /// Its size in bytes.
    pub size: u64,
    bytes: io::Cursor<Vec<u8>>,
}

impl Read for StreamFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.bytes.read(buf)
    }
}

/// One record file opened for reading, after checking that it is a regular file (a fifo or a
/// device is refused before it is opened, so that nothing blocks) of at most
/// [`Limits::max_file_bytes`]. Reading past the cap fails with [`io::ErrorKind::FileTooLarge`].
#[derive(Debug)]
pub struct RecordFile {
    file: io::Take<BufReader<File>>,
    size: u64,
    cap: u64,
    read: u64,
}

impl RecordFile {
    /// The file's size when it was opened.
    pub fn size(&self) -> u64 {
        self.size
    }
}

impl Read for RecordFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        self.read += n as u64;
        if self.read > self.cap {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!(
                    "the file grew past the per-file limit of {} bytes while it was read",
                    self.cap
                ),
            ));
        }
        Ok(n)
    }
}

/// Opens one record file; see [`RecordFile`].
pub fn open_record_file(path: &Path, limits: Limits) -> Result<RecordFile, ReadError> {
    let here = path.display().to_string();
    let io_error = |e: io::Error| match e.kind() {
        io::ErrorKind::NotFound => ReadError::new(ReadErrorKind::NotFound, &here, "not found"),
        _ => ReadError::new(ReadErrorKind::Io, &here, e.to_string()),
    };
    let meta = fs::metadata(path).map_err(io_error)?;
    if meta.is_dir() {
        return Err(ReadError::new(
            ReadErrorKind::Io,
            &here,
            "a directory, not a record file",
        ));
    }
    if !meta.is_file() {
        return Err(ReadError::new(
            ReadErrorKind::Io,
            &here,
            "not a regular file (a device, fifo or socket); not read",
        ));
    }
    if meta.len() > limits.max_file_bytes {
        return Err(too_large_file(here.clone(), meta.len(), limits));
    }
    let file = File::open(path).map_err(io_error)?;
    let cap = limits.max_file_bytes;
    Ok(RecordFile {
        file: BufReader::with_capacity(64 << 10, file).take(cap.saturating_add(1)),
        size: meta.len(),
        cap,
        read: 0,
    })
}

#[derive(Debug)]
enum Layout {
    Dir(Vec<DirItem>),
    Archive { gzip: bool, items: Vec<ArchiveItem> },
}

#[derive(Debug)]
enum DirItem {
    File {
        rel: String,
        full: PathBuf,
        size: u64,
    },
    Error(ReadError),
}

#[derive(Debug)]
struct ArchiveItem {
    /// Where the entry's data starts in the uncompressed tar stream: identifies the entry.
    data_pos: u64,
    what: ArchiveAction,
}

#[derive(Debug)]
enum ArchiveAction {
    File {
        rel: String,
        size: u64,
        location: String,
    },
    Error(ReadError),
}

impl BundleReader {
    /// Opens a bundle: a directory (the run directory itself, or a directory holding exactly one run
    /// directory with `MANIFEST.json`) or a gzip'd or plain tar archive, recognized by its magic
    /// bytes (see the module documentation for where the run directory may be). Reads the
    /// directory listing, or makes the first pass over the archive.
    pub fn open(path: &Path, limits: Limits) -> Result<BundleReader, ReadError> {
        let here = path.display().to_string();
        let meta = fs::metadata(path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => ReadError::new(ReadErrorKind::NotFound, &here, "not found"),
            _ => ReadError::new(ReadErrorKind::Io, &here, e.to_string()),
        })?;
        if meta.is_dir() {
            open_dir(path, limits)
        } else if meta.is_file() {
            open_archive(path, limits)
        } else {
            Err(ReadError::new(
                ReadErrorKind::NotABundle,
                here,
                "not a directory or a regular file",
            ))
        }
    }

    /// The run id: the name of the run directory.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The path the bundle was opened from.
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// The number of regular files [`BundleReader::files`] is going to yield (for a progress bar).
    pub fn file_count(&self) -> usize {
        self.file_count
    }

    /// The files of the run directory like [`BundleReader::files`], with the progress made:
    /// each file is handed out as a reader, with its size and where it really is.
    pub fn stream(&mut self) -> Stream<'_> {
        let total = self.file_bytes;
        Stream {
            files: Files {
                reader: self,
                next: 0,
                tail_next: 0,
                dir_total: 0,
                walker: None,
                stopped: false,
            },
            done: 0,
            total,
        }
    }

    /// The files of the run directory, one at a time; an entry error is yielded in its place and
    /// iteration continues. Problems with the bundle as a whole come last. Each call starts over.
    pub fn files(&mut self) -> impl Iterator<Item = Result<BundleFile, ReadError>> + '_ {
        Files {
            reader: self,
            next: 0,
            tail_next: 0,
            dir_total: 0,
            walker: None,
            stopped: false,
        }
    }
}

/// Opens and reads a whole bundle into memory: its contents, and the problems met on the way.
/// Fails only when the bundle cannot be opened at all.
pub fn read_all(
    path: &Path,
    limits: Limits,
) -> Result<(BundleContents, Vec<ReadError>), ReadError> {
    let mut reader = BundleReader::open(path, limits)?;
    let mut contents = BundleContents::new(reader.run_id());
    let mut errors = Vec::new();
    for item in reader.files() {
        match item {
            Ok(file) => {
                contents.files.insert(file.path, file.bytes);
            }
            Err(e) => errors.push(e),
        }
    }
    Ok((contents, errors))
}

// ---------------------------------------------------------------------------------------------
// Finding the run directory

/// The run directory among a list of regular-file paths (normalized, relative to the top): `""` when
/// the top itself is the run directory, else its path (`run` or `wrapper/run`). `Err` explains why
/// there is none.
fn find_run_dir(files: &[&str]) -> Result<String, String> {
    if files.contains(&"MANIFEST.json") {
        return Ok(String::new());
    }
    // A run directory at the top, or inside one wrapping directory.
    for depth in [0, 1] {
        let mut with_manifest: Vec<&str> = files
            .iter()
            .filter_map(|f| f.strip_suffix("/MANIFEST.json"))
            .filter(|d| d.matches('/').count() == depth)
            .collect();
        with_manifest.sort_unstable();
        with_manifest.dedup();
        match with_manifest.as_slice() {
            [one] => return Ok((*one).to_owned()),
            [] => {}
            several => {
                return Err(format!(
                    "holds several run directories ({}); open one of them",
                    several.join(", ")
                ));
            }
        }
    }
    // No manifest: node directories at the top, or inside a single top-level directory.
    let is_node_file = |p: &str| parse_bundle_path(p).role != Role::Unknown;
    if files.iter().any(|f| is_node_file(f)) {
        return Ok(String::new());
    }
    let mut tops: Vec<&str> = files
        .iter()
        .filter_map(|f| f.split_once('/'))
        .map(|(d, _)| d)
        .collect();
    tops.sort_unstable();
    tops.dedup();
    if let [top] = tops.as_slice() {
        let mut inside = files
            .iter()
            .filter_map(|f| f.strip_prefix(*top)?.strip_prefix('/'));
        if inside.any(is_node_file) {
            return Ok((*top).to_owned());
        }
    }
    if files.is_empty() {
        Err("holds no files".to_owned())
    } else {
        Err("holds no MANIFEST.json and no node directories".to_owned())
    }
}

/// The path of `rel` inside the run directory `run_dir` (`""` for the top), if it is inside.
fn strip_run_dir<'a>(rel: &'a str, run_dir: &str) -> Option<&'a str> {
    if run_dir.is_empty() {
        Some(rel)
    } else {
        rel.strip_prefix(run_dir)?.strip_prefix('/')
    }
}

// ---------------------------------------------------------------------------------------------
// Directories

#[cfg(unix)]
fn link_count(meta: &fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.nlink()
}

#[cfg(not(unix))]
fn link_count(_meta: &fs::Metadata) -> u64 {
    1
}

#[cfg(unix)]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_a: &fs::Metadata, _b: &fs::Metadata) -> bool {
    true
}

fn is_plain_file(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

fn open_dir(path: &Path, limits: Limits) -> Result<BundleReader, ReadError> {
    let here = path.display().to_string();
    // The run directory is the top itself or one child holding MANIFEST.json; else look for node
    // directories in the whole listing.
    let mut walk_root = None;
    if is_plain_file(&path.join("MANIFEST.json")) {
        walk_root = Some(path.to_path_buf());
    } else {
        let listing = fs::read_dir(path)
            .map_err(|e| ReadError::new(ReadErrorKind::Io, &here, e.to_string()))?;
        let mut candidates = Vec::new();
        for entry in listing.flatten() {
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && is_plain_file(&entry.path().join("MANIFEST.json")) {
                if let Some(name) = entry.file_name().to_str() {
                    candidates.push(name.to_owned());
                }
            }
        }
        candidates.sort();
        match candidates.as_slice() {
            [one] => walk_root = Some(path.join(one)),
            [] => {}
            several => {
                return Err(ReadError::new(
                    ReadErrorKind::NotABundle,
                    here,
                    format!(
                        "not a bundle: the directory holds several run directories ({}); open \
                         one of them",
                        several.join(", ")
                    ),
                ));
            }
        }
    }
    let (run_dir, mut items, tail) = match walk_root {
        Some(dir) => {
            let (items, tail) = walk(&dir, limits);
            (dir, items, tail)
        }
        None => {
            let (items, tail) = walk(path, limits);
            let files: Vec<&str> = items
                .iter()
                .filter_map(|(rel, item)| {
                    matches!(item, DirItem::File { .. }).then_some(rel.as_str())
                })
                .collect();
            let found = find_run_dir(&files);
            let run = match found {
                Ok(run) => run,
                Err(why) => {
                    let nothing = items.is_empty() && tail.is_empty();
                    let message = if nothing {
                        "not a bundle: an empty directory".to_owned()
                    } else {
                        format!("not a bundle: the directory {why}")
                    };
                    return Err(ReadError::new(ReadErrorKind::NotABundle, here, message));
                }
            };
            let items = items
                .into_iter()
                .filter_map(|(rel, item)| match item {
                    DirItem::File { full, size, .. } => {
                        let inside = strip_run_dir(&rel, &run)?.to_owned();
                        let file = DirItem::File {
                            rel: inside.clone(),
                            full,
                            size,
                        };
                        Some((inside, file))
                    }
                    DirItem::Error(mut e) => {
                        e.path = e
                            .path
                            .as_deref()
                            .and_then(|p| strip_run_dir(p, &run))
                            .map(str::to_owned);
                        Some((rel, DirItem::Error(e)))
                    }
                })
                .collect();
            let dir = if run.is_empty() {
                path.to_path_buf()
            } else {
                path.join(&run)
            };
            (dir, items, tail)
        }
    };
    items.sort_by(|a, b| a.0.cmp(&b.0));
    let items: Vec<DirItem> = items.into_iter().map(|(_, item)| item).collect();
    let run_id = fs::canonicalize(&run_dir)
        .ok()
        .as_deref()
        .and_then(Path::file_name)
        .or_else(|| run_dir.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| run_dir.display().to_string());
    let file_count = items
        .iter()
        .filter(|i| matches!(i, DirItem::File { .. }))
        .count();
    let file_bytes = items
        .iter()
        .map(|i| match i {
            DirItem::File { size, .. } => *size,
            DirItem::Error(_) => 0,
        })
        .sum();
    Ok(BundleReader {
        source: path.to_path_buf(),
        run_id,
        limits,
        layout: Layout::Dir(items),
        tail,
        file_count,
        file_bytes,
    })
}

/// Lists everything under `root` without following links: files and problems keyed by their path
/// relative to `root`, and problems with the directory as a whole.
fn walk(root: &Path, limits: Limits) -> (Vec<(String, DirItem)>, Vec<ReadError>) {
    let mut items = Vec::new();
    let mut tail = Vec::new();
    let mut seen = 0usize;
    let mut stack = vec![(root.to_path_buf(), String::new())];
    'walk: while let Some((dir, prefix)) = stack.pop() {
        let listing = match fs::read_dir(&dir) {
            Ok(listing) => listing,
            Err(e) => {
                let at = dir.display().to_string();
                items.push((
                    prefix,
                    DirItem::Error(ReadError::new(ReadErrorKind::Io, at, e.to_string())),
                ));
                continue;
            }
        };
        let mut entries: Vec<_> = Vec::new();
        for entry in listing {
            match entry {
                Ok(entry) => entries.push(entry),
                Err(e) => {
                    let at = dir.display().to_string();
                    items.push((
                        prefix.clone(),
                        DirItem::Error(ReadError::new(ReadErrorKind::Io, at, e.to_string())),
                    ));
                }
            }
        }
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            seen += 1;
            if seen > limits.max_entries {
                tail.push(ReadError::new(
                    ReadErrorKind::TooManyEntries,
                    root.display().to_string(),
                    format!(
                        "holds more than {} entries (the limit); the rest were not read",
                        limits.max_entries
                    ),
                ));
                break 'walk;
            }
            let full = entry.path();
            let at = full.display().to_string();
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                let rel = format!("{prefix}{}", name.to_string_lossy());
                let e = ReadError::new(
                    ReadErrorKind::UnsafePath,
                    at,
                    "the file name is not valid UTF-8",
                );
                items.push((rel, DirItem::Error(e)));
                continue;
            };
            let rel = format!("{prefix}{name}");
            if name.contains('\\') {
                let e = ReadError::new(
                    ReadErrorKind::UnsafePath,
                    at,
                    "the file name contains a backslash",
                );
                items.push((rel.clone(), DirItem::Error(e.about(rel))));
                continue;
            }
            let meta = match fs::symlink_metadata(&full) {
                Ok(meta) => meta,
                Err(e) => {
                    let e = ReadError::new(ReadErrorKind::Io, at, e.to_string()).about(&rel);
                    items.push((rel, DirItem::Error(e)));
                    continue;
                }
            };
            let kind = meta.file_type();
            if kind.is_symlink() {
                let target = fs::read_link(&full)
                    .map(|t| format!(" to `{}`", t.display()))
                    .unwrap_or_default();
                let message = format!("a symbolic link{target}; links are not followed");
                let e = ReadError::new(ReadErrorKind::Link, at, message).about(&rel);
                items.push((rel, DirItem::Error(e)));
            } else if kind.is_dir() {
                stack.push((full, format!("{rel}/")));
            } else if !kind.is_file() {
                let message =
                    "not a regular file or directory (a device, fifo or socket); not read";
                let e = ReadError::new(ReadErrorKind::Io, at, message).about(&rel);
                items.push((rel, DirItem::Error(e)));
            } else if link_count(&meta) > 1 {
                let message = format!(
                    "a hard link (the file has {} names); links are not followed",
                    link_count(&meta)
                );
                let e = ReadError::new(ReadErrorKind::Link, at, message).about(&rel);
                items.push((rel, DirItem::Error(e)));
            } else {
                let size = meta.len();
                items.push((rel.clone(), DirItem::File { rel, full, size }));
            }
        }
    }
    (items, tail)
}

/// Reads one file of a directory bundle, at most `max` bytes, checking again that it is a plain
/// file (it may have been replaced since the listing).
fn read_dir_file(full: &Path, limits: Limits, max: u64) -> Result<Vec<u8>, ReadError> {
    let at = || full.display().to_string();
    let io_error = |e: io::Error| ReadError::new(ReadErrorKind::Io, at(), e.to_string());
    let before = fs::symlink_metadata(full).map_err(io_error)?;
    if before.file_type().is_symlink() {
        return Err(ReadError::new(
            ReadErrorKind::Link,
            at(),
            "became a symbolic link while the bundle was read; links are not followed",
        ));
    }
    if !before.is_file() {
        return Err(ReadError::new(
            ReadErrorKind::Io,
            at(),
            "no longer a regular file",
        ));
    }
    if before.len() > limits.max_file_bytes {
        return Err(too_large_file(at(), before.len(), limits));
    }
    let file = File::open(full).map_err(io_error)?;
    let after = file.metadata().map_err(io_error)?;
    if !after.is_file() || !same_file(&before, &after) || link_count(&after) > 1 {
        return Err(ReadError::new(
            ReadErrorKind::Link,
            at(),
            "was replaced while the bundle was read; not followed",
        ));
    }
    let cap = max.min(limits.max_file_bytes);
    let mut bytes = Vec::with_capacity(usize::try_from(after.len().min(cap)).unwrap_or(0));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > limits.max_file_bytes {
        return Err(too_large_file(at(), bytes.len() as u64, limits));
    }
    Ok(bytes)
}

fn too_large_file(location: String, size: u64, limits: Limits) -> ReadError {
    ReadError::new(
        ReadErrorKind::TooLarge,
        location,
        format!(
            "{size} bytes or more, over the per-file limit of {} bytes; not read",
            limits.max_file_bytes
        ),
    )
}

fn too_large_total(location: String, limits: Limits) -> ReadError {
    ReadError::new(
        ReadErrorKind::TooLarge,
        location,
        format!(
            "the bundle is larger than the total limit of {} bytes; reading stopped here",
            limits.max_total_bytes
        ),
    )
}

// ---------------------------------------------------------------------------------------------
// Archives

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const BLOCK: u64 = 512;
/// The longest entry name accepted (Linux `PATH_MAX`).
const MAX_NAME_BYTES: usize = 4096;
/// The largest PAX extended header accepted.
const MAX_PAX_BYTES: u64 = 64 * 1024;

/// An error message tagged with the layer it came from, carried inside an `io::Error`.
#[derive(Debug)]
struct Tagged {
    kind: ReadErrorKind,
    message: String,
}

impl fmt::Display for Tagged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Tagged {}

/// Tags the errors of the reader it wraps (errors tagged further down keep their tag).
struct TagReader<R> {
    inner: R,
    kind: ReadErrorKind,
}

impl<R: Read> Read for TagReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            if e.get_ref().is_some_and(|i| i.is::<Tagged>()) {
                e
            } else {
                io::Error::other(Tagged {
                    kind: self.kind,
                    message: e.to_string(),
                })
            }
        })
    }
}

/// A failure while walking an archive: its kind and message (located by the caller).
type Fail = (ReadErrorKind, String);

fn classify(e: io::Error) -> Fail {
    match e.get_ref().and_then(|i| i.downcast_ref::<Tagged>()) {
        Some(Tagged {
            kind: ReadErrorKind::Gzip,
            message,
        }) => (
            ReadErrorKind::Gzip,
            format!("corrupt or truncated gzip data ({message})"),
        ),
        Some(t) => (t.kind, t.message.clone()),
        None => (ReadErrorKind::Tar, e.to_string()),
    }
}

/// Opens the uncompressed tar stream of an archive.
fn open_stream(path: &Path, gzip: bool) -> io::Result<Box<dyn Read>> {
    let file = TagReader {
        inner: File::open(path)?,
        kind: ReadErrorKind::Io,
    };
    let buffered = BufReader::with_capacity(64 * 1024, file);
    Ok(if gzip {
        Box::new(TagReader {
            inner: flate2::bufread::GzDecoder::new(buffered),
            kind: ReadErrorKind::Gzip,
        })
    } else {
        Box::new(buffered)
    })
}

/// One logical archive entry: extension headers (GNU long names, PAX) already applied.
struct RawEntry {
    name: Vec<u8>,
    /// Why the name cannot be used, when an extension header was unusable.
    name_problem: Option<String>,
    link: Option<Vec<u8>>,
    kind: tar::EntryType,
    size: u64,
    data_pos: u64,
}

/// A minimal tar reader over an uncompressed stream that never buffers more than it was asked
/// for, bounds extension headers, and keeps count of the bytes read.
struct Walker {
    r: Box<dyn Read>,
    /// Bytes of the stream read so far.
    pos: u64,
    /// Bytes of the current entry (data and padding) not read yet.
    skip: u64,
    max_total: u64,
}

impl Walker {
    fn new(r: Box<dyn Read>, limits: Limits) -> Self {
        Walker {
            r,
            pos: 0,
            skip: 0,
            max_total: limits.max_total_bytes,
        }
    }

    fn check_total(&self, n: u64) -> Result<(), Fail> {
        if self.pos.saturating_add(n) > self.max_total {
            Err((
                ReadErrorKind::TooLarge,
                format!(
                    "the archive expands to more than {} bytes (the total limit); reading stopped here",
                    self.max_total
                ),
            ))
        } else {
            Ok(())
        }
    }

    /// Fills `buf` as far as the stream goes; returns how much was read.
    fn fill(&mut self, buf: &mut [u8]) -> Result<usize, Fail> {
        self.check_total(buf.len() as u64)?;
        let mut done = 0;
        while done < buf.len() {
            match self.r.read(&mut buf[done..]) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(classify(e)),
            }
        }
        self.pos += done as u64;
        Ok(done)
    }

    fn discard(&mut self, n: u64) -> Result<(), Fail> {
        if n == 0 {
            return Ok(());
        }
        self.check_total(n)?;
        let got = io::copy(&mut (&mut self.r).take(n), &mut io::sink()).map_err(classify)?;
        self.pos += got;
        if got < n {
            return Err(truncated());
        }
        Ok(())
    }

    fn read_vec(&mut self, n: u64) -> Result<Vec<u8>, Fail> {
        self.check_total(n)?;
        let len = usize::try_from(n).map_err(|_| truncated())?;
        let mut bytes = vec![0u8; len];
        if self.fill(&mut bytes)? < len {
            return Err(truncated());
        }
        Ok(bytes)
    }

    /// The next logical entry, `None` at the end-of-archive marker. Skips what is left of the
    /// previous entry.
    fn next_entry(&mut self) -> Result<Option<RawEntry>, Fail> {
        let left = std::mem::take(&mut self.skip);
        self.discard(left)?;
        let mut long_name: Option<Vec<u8>> = None;
        let mut long_link: Option<Vec<u8>> = None;
        let mut pax: Option<Vec<u8>> = None;
        let mut name_problem = None;
        let mut pending = false;
        loop {
            let header_pos = self.pos;
            let mut header = tar::Header::new_old();
            let got = self.fill(header.as_mut_bytes())?;
            if got == 0 {
                return Err((
                    ReadErrorKind::Tar,
                    if pending {
                        "the archive ends after an extension header, without its entry (truncated)"
                            .to_owned()
                    } else {
                        "the archive ends without the end-of-archive marker (truncated)".to_owned()
                    },
                ));
            }
            if got < BLOCK as usize {
                return Err((
                    ReadErrorKind::Tar,
                    "the archive ends inside a header (truncated)".to_owned(),
                ));
            }
            let bytes = header.as_bytes();
            if bytes.iter().all(|&b| b == 0) {
                if pending {
                    return Err((
                        ReadErrorKind::Tar,
                        "an extension header is not followed by its entry".to_owned(),
                    ));
                }
                return Ok(None);
            }
            let sum: u32 = bytes[..148]
                .iter()
                .chain(&bytes[156..])
                .map(|&b| u32::from(b))
                .sum::<u32>()
                + 8 * u32::from(b' ');
            if header.cksum().ok() != Some(sum) {
                return Err((
                    ReadErrorKind::Tar,
                    format!("the header at byte {header_pos} is corrupt (checksum mismatch)"),
                ));
            }
            let mut size = header.entry_size().map_err(|e| {
                (
                    ReadErrorKind::Tar,
                    format!("the header at byte {header_pos} is corrupt ({e})"),
                )
            })?;
            let kind = header.entry_type();
            let padded = |size: u64| -> Result<u64, Fail> {
                size.checked_add(BLOCK - 1)
                    .map(|s| s & !(BLOCK - 1))
                    .ok_or((
                        ReadErrorKind::Tar,
                        format!("the header at byte {header_pos} declares an impossible size"),
                    ))
            };
            let extension = match kind {
                tar::EntryType::GNULongName => Some((&mut long_name, MAX_NAME_BYTES as u64 + 1)),
                tar::EntryType::GNULongLink => Some((&mut long_link, MAX_NAME_BYTES as u64 + 1)),
                tar::EntryType::XHeader => Some((&mut pax, MAX_PAX_BYTES)),
                _ => None,
            };
            if let Some((slot, max)) = extension {
                pending = true;
                let total = padded(size)?;
                if slot.is_some() {
                    name_problem =
                        Some("two extension headers of the same kind for one entry".to_owned());
                    self.discard(total)?;
                } else if size > max {
                    let what = match kind {
                        tar::EntryType::XHeader => "a PAX extended header",
                        tar::EntryType::GNULongLink => "a GNU long link name",
                        _ => "a GNU long name",
                    };
                    name_problem = Some(format!(
                        "{what} of {size} bytes, over the limit of {max} bytes"
                    ));
                    self.discard(total)?;
                } else {
                    let mut data = self.read_vec(size)?;
                    self.discard(total - size)?;
                    if kind != tar::EntryType::XHeader {
                        while data.last() == Some(&0) {
                            data.pop();
                        }
                    }
                    *slot = Some(data);
                }
                continue;
            }
            if kind == tar::EntryType::XGlobalHeader {
                let total = padded(size)?;
                self.discard(total)?;
                continue;
            }
            let mut name = long_name.unwrap_or_else(|| header.path_bytes().into_owned());
            let mut link = long_link.or_else(|| header.link_name_bytes().map(|l| l.into_owned()));
            if let Some(pax) = &pax {
                for ext in tar::PaxExtensions::new(pax) {
                    let Ok(ext) = ext else {
                        name_problem = Some("a malformed PAX extended header".to_owned());
                        break;
                    };
                    match ext.key_bytes() {
                        b"path" => name = ext.value_bytes().to_vec(),
                        b"linkpath" => link = Some(ext.value_bytes().to_vec()),
                        b"size" => match ext.value().ok().and_then(|v| v.parse::<u64>().ok()) {
                            Some(s) => size = s,
                            None => {
                                return Err((
                                    ReadErrorKind::Tar,
                                    format!(
                                        "the PAX header before byte {header_pos} has an invalid size"
                                    ),
                                ));
                            }
                        },
                        _ => {}
                    }
                }
            }
            if name.len() > MAX_NAME_BYTES {
                name_problem = Some(format!(
                    "the entry name is longer than {MAX_NAME_BYTES} bytes"
                ));
                name.truncate(MAX_NAME_BYTES);
            }
            self.skip = padded(size)?;
            return Ok(Some(RawEntry {
                name,
                name_problem,
                link,
                kind,
                size,
                data_pos: self.pos,
            }));
        }
    }

    /// The data of the entry just returned by [`Walker::next_entry`].
    fn read_data(&mut self, size: u64) -> Result<Vec<u8>, Fail> {
        let data = self.read_vec(size)?;
        self.skip -= size;
        Ok(data)
    }

    /// Reads what follows the end-of-archive marker, so that the gzip trailer is checked.
    fn drain(&mut self) -> Result<(), Fail> {
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            let room = self.max_total.saturating_sub(self.pos);
            let want = (buf.len() as u64).min(room.saturating_add(1)) as usize;
            if want == 0 {
                return Ok(());
            }
            match self.r.read(&mut buf[..want]) {
                Ok(0) => return Ok(()),
                Ok(n) => {
                    self.pos += n as u64;
                    self.check_total(0)?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(classify(e)),
            }
        }
    }
}

fn truncated() -> Fail {
    (
        ReadErrorKind::Tar,
        "the archive ends inside an entry (truncated)".to_owned(),
    )
}

/// Normalizes an archive entry name to a `/`-separated relative path without `.` or empty
/// components, or says why the name is unsafe.
fn normalize_entry_name(raw: &[u8]) -> Result<String, &'static str> {
    let name = std::str::from_utf8(raw).map_err(|_| "the entry name is not valid UTF-8")?;
    if name.starts_with('/') {
        return Err("the entry name is an absolute path");
    }
    if name.contains('\\') {
        return Err("the entry name contains a backslash");
    }
    if name.contains('\0') {
        return Err("the entry name contains a NUL byte");
    }
    let mut parts = Vec::new();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("the entry name contains a `..` component"),
            part => parts.push(part),
        }
    }
    if let Some(first) = parts.first() {
        let b = first.as_bytes();
        if b.len() == 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
            return Err("the entry name starts with a drive letter");
        }
    }
    Ok(parts.join("/"))
}

/// What the first pass learned about one entry.
enum Indexed {
    File {
        name: String,
        size: u64,
        location: String,
    },
    /// A regular file over the per-file limit: an error, but it still tells where the run
    /// directory is.
    TooLarge {
        name: String,
        error: ReadError,
    },
    Error(ReadError),
}

fn open_archive(path: &Path, limits: Limits) -> Result<BundleReader, ReadError> {
    let here = path.display().to_string();
    let io_error = |e: io::Error| ReadError::new(ReadErrorKind::Io, &here, e.to_string());
    let mut magic = [0u8; 512];
    let mut got = 0;
    {
        let mut file = File::open(path).map_err(io_error)?;
        while got < magic.len() {
            match file.read(&mut magic[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error(e)),
            }
        }
    }
    let gzip = if got >= 2 && magic[..2] == GZIP_MAGIC {
        true
    } else if got == 512 && &magic[257..262] == b"ustar" {
        false
    } else {
        let what = if got == 0 {
            "an empty file"
        } else {
            "neither a directory nor a gzip'd or plain tar archive"
        };
        return Err(ReadError::new(
            ReadErrorKind::NotABundle,
            here,
            format!("not a bundle: {what}"),
        ));
    };

    // First pass: index every entry.
    let stream = open_stream(path, gzip).map_err(io_error)?;
    let mut walker = Walker::new(stream, limits);
    let mut indexed: Vec<(u64, Indexed)> = Vec::new();
    let mut tail: Vec<ReadError> = Vec::new();
    let mut entries = 0usize;
    let mut ended = false;
    // The failure that ended the first pass inside an entry.
    let mut broken: Option<ReadError> = None;
    loop {
        let entry = match walker.next_entry() {
            Ok(Some(entry)) => entry,
            Ok(None) => {
                ended = true;
                break;
            }
            Err((kind, message)) => {
                if entries == 0 && kind == ReadErrorKind::Tar {
                    let message = if walker.pos == 0 {
                        "not a bundle: the archive is empty".to_owned()
                    } else {
                        format!("not a bundle: the data is not a tar archive ({message})")
                    };
                    return Err(ReadError::new(ReadErrorKind::NotABundle, here, message));
                }
                tail.push(ReadError::new(kind, &here, message));
                break;
            }
        };
        entries += 1;
        if entries > limits.max_entries {
            tail.push(ReadError::new(
                ReadErrorKind::TooManyEntries,
                &here,
                format!(
                    "the archive holds more than {} entries (the limit); the rest were not read",
                    limits.max_entries
                ),
            ));
            break;
        }
        let shown = String::from_utf8_lossy(&entry.name).into_owned();
        let location = format!("{here}!{shown}");
        let item = classify_entry(&entry, &location, limits).map(|item| match item {
            // Remember which path a refused entry had, so that it still counts as present.
            Indexed::Error(e) => match normalize_entry_name(&entry.name) {
                Ok(name) if !name.is_empty() => Indexed::Error(e.about(name)),
                _ => Indexed::Error(e),
            },
            other => other,
        });
        if let Some(item) = item {
            indexed.push((entry.data_pos, item));
        }
        // Move past the data now, so that damage inside it is found and located here.
        let left = std::mem::take(&mut walker.skip);
        if let Err((kind, message)) = walker.discard(left) {
            if matches!(indexed.last(), Some((pos, _)) if *pos == entry.data_pos) {
                indexed.pop();
            }
            let error = ReadError::new(kind, location, message);
            broken = Some(error.clone());
            indexed.push((entry.data_pos, Indexed::Error(error)));
            break;
        }
    }
    if ended && gzip {
        if let Err((kind, message)) = walker.drain() {
            tail.push(ReadError::new(kind, &here, message));
        }
    }
    drop(walker);

    // Find the run directory among the regular files.
    let names: Vec<&str> = indexed
        .iter()
        .filter_map(|(_, item)| match item {
            Indexed::File { name, .. } | Indexed::TooLarge { name, .. } => Some(name.as_str()),
            Indexed::Error(_) => None,
        })
        .collect();
    let run_dir = match find_run_dir(&names) {
        Ok(run_dir) => run_dir,
        Err(why) => {
            // A damaged archive says more about itself than "not a bundle".
            let damage = broken.or_else(|| tail.first().cloned());
            return Err(damage.unwrap_or_else(|| {
                ReadError::new(
                    ReadErrorKind::NotABundle,
                    &here,
                    format!("not a bundle: the archive {why}"),
                )
            }));
        }
    };

    // Keep the files of the run directory (the last copy of a duplicate) and every error.
    let mut last_copy: HashMap<&str, usize> = HashMap::new();
    for (i, (_, item)) in indexed.iter().enumerate() {
        if let Indexed::File { name, .. } = item {
            if strip_run_dir(name, &run_dir).is_some() {
                last_copy.insert(name.as_str(), i);
            }
        }
    }
    let last_copy: HashMap<String, usize> = last_copy
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    let mut items = Vec::new();
    for (i, (data_pos, item)) in indexed.into_iter().enumerate() {
        let what = match item {
            Indexed::Error(e) => {
                let inside = e.path.as_deref().and_then(|p| strip_run_dir(p, &run_dir));
                ArchiveAction::Error(ReadError {
                    path: inside.map(str::to_owned),
                    ..e
                })
            }
            Indexed::TooLarge { error, name } => {
                let inside = strip_run_dir(&name, &run_dir).map(str::to_owned);
                ArchiveAction::Error(ReadError {
                    path: inside,
                    ..error
                })
            }
            Indexed::File {
                name,
                size,
                location,
            } => {
                let Some(rel) = strip_run_dir(&name, &run_dir) else {
                    continue;
                };
                if last_copy.get(&name) != Some(&i) {
                    ArchiveAction::Error(
                        ReadError::new(
                            ReadErrorKind::Tar,
                            location,
                            "a duplicate entry; a later entry with the same path replaces it",
                        )
                        .about(rel),
                    )
                } else {
                    ArchiveAction::File {
                        rel: rel.to_owned(),
                        size,
                        location,
                    }
                }
            }
        };
        items.push(ArchiveItem { data_pos, what });
    }
    let file_count = items
        .iter()
        .filter(|i| matches!(i.what, ArchiveAction::File { .. }))
        .count();
    let file_bytes = items
        .iter()
        .map(|i| match &i.what {
            ArchiveAction::File { size, .. } => *size,
            ArchiveAction::Error(_) => 0,
        })
        .sum();
    let run_id = match run_dir.rsplit_once('/') {
        _ if run_dir.is_empty() => archive_stem(path),
        Some((_, name)) => name.to_owned(),
        None => run_dir,
    };
    Ok(BundleReader {
        source: path.to_path_buf(),
        run_id,
        limits,
        layout: Layout::Archive { gzip, items },
        tail,
        file_count,
        file_bytes,
    })
}

/// What to do with one archive entry, judged from its header; `None` to pass over it quietly.
fn classify_entry(entry: &RawEntry, location: &str, limits: Limits) -> Option<Indexed> {
    let error =
        |kind, message: String| Some(Indexed::Error(ReadError::new(kind, location, message)));
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
                    error: ReadError::new(
                        ReadErrorKind::TooLarge,
                        location,
                        format!(
                            "the entry is {} bytes, over the per-file limit of {} bytes; not read",
                            entry.size, limits.max_file_bytes
                        ),
                    ),
                })
            } else {
                Some(Indexed::File {
                    name,
                    size: entry.size,
                    location: location.to_owned(),
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

// ---------------------------------------------------------------------------------------------
// Iteration

struct Files<'a> {
    reader: &'a BundleReader,
    /// The next item of the layout.
    next: usize,
    /// The next item of the tail.
    tail_next: usize,
    /// Bytes read so far from a directory.
    dir_total: u64,
    /// The second pass over an archive.
    walker: Option<Walker>,
    /// Set when reading cannot go on; only the tail is left.
    stopped: bool,
}

impl Iterator for Files<'_> {
    type Item = Result<BundleFile, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if !self.stopped {
            let item = match &self.reader.layout {
                Layout::Dir(items) => self.next_dir(items),
                Layout::Archive { gzip, items } => self.next_archive(*gzip, items),
            };
            if item.is_some() {
                return item;
            }
            self.stopped = true;
            self.walker = None;
        }
        let e = self.reader.tail.get(self.tail_next)?;
        self.tail_next += 1;
        Some(Err(e.clone()))
    }
}

impl Files<'_> {
    fn next_dir(&mut self, items: &[DirItem]) -> Option<Result<BundleFile, ReadError>> {
        let item = items.get(self.next)?;
        self.next += 1;
        Some(match item {
            DirItem::Error(e) => Err(e.clone()),
            DirItem::File { rel, full, .. } => {
                let limits = self.reader.limits;
                let room = limits.max_total_bytes.saturating_sub(self.dir_total);
                match read_dir_file(full, limits, room) {
                    Ok(bytes) if bytes.len() as u64 > room => {
                        self.stopped = true;
                        self.next = items.len();
                        Err(too_large_total(full.display().to_string(), limits))
                    }
                    Ok(bytes) => {
                        self.dir_total += bytes.len() as u64;
                        let location = full.display().to_string();
                        Ok(BundleFile::new(rel.clone(), location, bytes))
                    }
                    Err(e) => Err(e.about(rel.clone())),
                }
            }
        })
    }

    fn next_archive(
        &mut self,
        gzip: bool,
        items: &[ArchiveItem],
    ) -> Option<Result<BundleFile, ReadError>> {
        let item = items.get(self.next)?;
        self.next += 1;
        let (rel, size, location) = match &item.what {
            ArchiveAction::Error(e) => return Some(Err(e.clone())),
            ArchiveAction::File {
                rel,
                size,
                location,
            } => (rel, *size, location),
        };
        let result = self.read_archive_file(gzip, item.data_pos, size);
        Some(match result {
            Ok(bytes) => Ok(BundleFile::new(rel.clone(), location.clone(), bytes)),
            Err((kind, message)) => {
                // The archive changed or broke since the first pass: stop here.
                self.next = items.len();
                self.walker = None;
                Err(ReadError::new(kind, location.clone(), message).about(rel.clone()))
            }
        })
    }

    fn read_archive_file(&mut self, gzip: bool, data_pos: u64, size: u64) -> Result<Vec<u8>, Fail> {
        if self.walker.is_none() {
            let stream = open_stream(self.reader.source(), gzip)
                .map_err(|e| (ReadErrorKind::Io, e.to_string()))?;
            self.walker = Some(Walker::new(stream, self.reader.limits));
        }
        let walker = self.walker.as_mut().expect("OK because it was just set");
        loop {
            let changed = || {
                (
                    ReadErrorKind::Io,
                    "the archive changed while it was being read".to_owned(),
                )
            };
            let entry = walker.next_entry()?.ok_or_else(changed)?;
            if entry.data_pos == data_pos {
                if entry.size != size {
                    return Err(changed());
                }
                return walker.read_data(size);
            }
            if entry.data_pos > data_pos {
                return Err(changed());
            }
        }
    }
}
