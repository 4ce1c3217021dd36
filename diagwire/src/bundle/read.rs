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
//! collector. An archive is read twice: a first pass, when opening, indexes the entries, finds the
//! run directory, the duplicates and the paths that are both a file and a directory; a second
//! pass, during iteration, yields the files. (One pass would not do: the last copy of a duplicate
//! wins, a second run directory makes the archive ambiguous, and [`BundleReader::file_count`] and
//! [`Stream::progress`] are known before the first file; all of that needs the whole index.)
//!
//! Gzip data is inflated on a thread of its own in both passes, which hands the tar reader chunks
//! of 256 KiB through a bounded channel (a few chunks wait at most, so memory stays bounded), so
//! that inflating overlaps with what the consumer does with each file; dropping the reader stops
//! the thread. A gzip file of several members (RFC 1952; `cat a.gz b.gz`, the tar stream split
//! anywhere) is one stream, as `gzip -d` and `tar xzf` read it.
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
//!   into memory; once the uncompressed archive (or, for a directory, the files read) would pass
//!   [`Limits::max_total_bytes`], reading stops with one [`ReadErrorKind::TooLarge`] at the entry or
//!   file that passes it, after the files before it, the same for an archive and a directory (an
//!   entry whose header declares more data than the limit leaves is not read at all); past
//!   [`Limits::max_entries`] entries it stops with [`ReadErrorKind::TooManyEntries`]. A cap never
//!   makes opening fail: an archive whose run directory a cap hides opens with no files to yield;
//! * corrupt or truncated data is [`ReadErrorKind::Gzip`] or [`ReadErrorKind::Tar`] (the files
//!   before the damage are still yielded), and so are bytes after the last gzip member that are
//!   not one; a header whose size field is not a number is a [`ReadErrorKind::Tar`] at that entry,
//!   where reading stops (where the next header starts is unknown);
//! * devices, fifos and sparse files are reported and never opened;
//! * an archive holding the same path twice yields the last copy and reports the earlier ones;
//! * an archive holding one path both as a regular file and as a directory (a directory entry, or
//!   the parent of another entry), which extracting would turn from one into the other, is
//!   [`ReadErrorKind::PathConflict`] at the later of the two entries; the files are still yielded;
//! * a file that is not a bundle is [`ReadErrorKind::NotABundle`] with what it is instead: empty, a
//!   gzip file that inflates to nothing or to something not tar, a zip, bzip2, xz, zstd or 7-Zip
//!   file, or an archive without a run directory.
//!
//! Regular files outside the run directory (beside it in a wrapping directory or archive) are
//! ignored; in an archive, problems with entries anywhere are reported. The reader never writes
//! anything.
//!
//! The tar reader is written here instead of using `tar::Archive` (only the crate's header type is
//! used): `Archive` buffers GNU long names and PAX headers whole however large they are, and
//! gives up on a bad header without saying which entry it belongs to or how far the stream got,
//! which the caps and the located errors need. Inflating is `flate2`'s `MultiGzDecoder`; the
//! thread and its channel are the standard library's.

use std::collections::HashMap;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use super::BundleContents;
use crate::layout::{BundlePath, Encoding, Role, parse_bundle_path};
use crate::problem::{Location, Problem, ProblemKind};

/// Size and count caps that bound the work and memory spent on one bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest file that is read, in bytes.
    pub max_file_bytes: u64,
    /// The most bytes read in total: the uncompressed size of an archive (headers included), or the
    /// sum of the files read from a directory. The files before the one that would pass it are
    /// yielded, then one [`ReadErrorKind::TooLarge`].
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
    /// How the file is encoded, from its extension.
    pub encoding: Encoding,
    /// Where the file really is, for messages: its path on disk, or `<archive>!<entry name>`.
    pub location: String,
    /// The file's content.
    pub bytes: Vec<u8>,
}

impl BundleFile {
    fn new(path: String, location: String, bytes: Vec<u8>) -> Self {
        let BundlePath {
            node,
            role,
            encoding,
        } = parse_bundle_path(&path);
        BundleFile {
            path,
            node,
            role,
            encoding,
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
                encoding: file.encoding,
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
    /// How the file is encoded, from its extension.
    pub encoding: Encoding,
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
#[derive(Debug, Clone)]
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

/// Opens the uncompressed tar stream of an archive. Gzip data is inflated on a thread of its own
/// (see [`Inflater`]); the members of a multi-member gzip file are read, in order, as one stream.
fn open_stream(path: &Path, gzip: bool) -> io::Result<Box<dyn Read>> {
    let file = TagReader {
        inner: File::open(path)?,
        kind: ReadErrorKind::Io,
    };
    let buffered = BufReader::with_capacity(64 * 1024, file);
    Ok(if gzip {
        let inflate = TagReader {
            inner: flate2::bufread::MultiGzDecoder::new(buffered),
            kind: ReadErrorKind::Gzip,
        };
        Box::new(Inflater::spawn(inflate)?)
    } else {
        Box::new(buffered)
    })
}

/// The bytes the inflating thread hands over at a time.
const CHUNK_BYTES: usize = 256 * 1024;
/// The chunks that may wait between the inflating thread and the reader: with the one being filled
/// and the one being read, at most `CHUNK_SLOTS + 2` chunks exist at once.
const CHUNK_SLOTS: usize = 4;

/// A reader whose bytes come from another reader running on a thread of its own, so that
/// inflating overlaps with what the consumer does with the bytes. The thread sends chunks of
/// [`CHUNK_BYTES`] through a bounded channel (it blocks while [`CHUNK_SLOTS`] chunks wait), and the
/// reader hands emptied chunks back to be filled again, so memory stays bounded. An error ends the
/// stream: it is forwarded with its tag and message, and every later read returns it again.
/// Dropping the reader closes the channel, so the thread's next send fails and it ends; the drop
/// waits for that (at most one chunk's work).
struct Inflater {
    chunks: Option<mpsc::Receiver<io::Result<Vec<u8>>>>,
    spare: mpsc::SyncSender<Vec<u8>>,
    thread: Option<std::thread::JoinHandle<()>>,
    current: Vec<u8>,
    at: usize,
    /// The error that ended the stream, to return again.
    failed: Option<(io::ErrorKind, Option<Tagged>, String)>,
}

impl Inflater {
    fn spawn(mut inner: impl Read + Send + 'static) -> io::Result<Inflater> {
        let (chunk_tx, chunks) = mpsc::sync_channel::<io::Result<Vec<u8>>>(CHUNK_SLOTS);
        let (spare, spare_rx) = mpsc::sync_channel::<Vec<u8>>(CHUNK_SLOTS + 2);
        let work = move || {
            loop {
                let mut chunk = spare_rx.try_recv().unwrap_or_default();
                chunk.resize(CHUNK_BYTES, 0);
                let mut filled = 0;
                let mut failure = None;
                while filled < CHUNK_BYTES {
                    match inner.read(&mut chunk[filled..]) {
                        Ok(0) => break,
                        Ok(n) => filled += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            failure = Some(e);
                            break;
                        }
                    }
                }
                let end = failure.is_some() || filled < CHUNK_BYTES;
                chunk.truncate(filled);
                // A failed send means the reader is gone: stop.
                if filled > 0 && chunk_tx.send(Ok(chunk)).is_err() {
                    return;
                }
                if let Some(e) = failure {
                    let _ = chunk_tx.send(Err(e));
                }
                if end {
                    return;
                }
            }
        };
        let thread = std::thread::Builder::new()
            .name("diagwire-inflate".to_owned())
            .spawn(work)?;
        Ok(Inflater {
            chunks: Some(chunks),
            spare,
            thread: Some(thread),
            current: Vec::new(),
            at: 0,
            failed: None,
        })
    }

    fn again(&self) -> Option<io::Error> {
        let (kind, tagged, message) = self.failed.as_ref()?;
        Some(match tagged {
            Some(t) => io::Error::other(t.clone()),
            None => io::Error::new(*kind, message.clone()),
        })
    }

    /// Waits for the next chunk; `false` at the end of the stream.
    fn next_chunk(&mut self) -> io::Result<bool> {
        if let Some(e) = self.again() {
            return Err(e);
        }
        let Some(chunks) = &self.chunks else {
            return Ok(false);
        };
        match chunks.recv() {
            Ok(Ok(chunk)) => {
                let done = std::mem::replace(&mut self.current, chunk);
                // The thread may be gone or have enough spares: then the chunk is just freed.
                let _ = self.spare.try_send(done);
                self.at = 0;
                Ok(true)
            }
            Ok(Err(e)) => {
                let tagged = e
                    .get_ref()
                    .and_then(|i| i.downcast_ref::<Tagged>())
                    .cloned();
                self.failed = Some((e.kind(), tagged, e.to_string()));
                Err(e)
            }
            Err(mpsc::RecvError) => {
                self.chunks = None;
                let panicked = self.thread.take().is_some_and(|t| t.join().is_err());
                if panicked {
                    self.failed = Some((
                        io::ErrorKind::Other,
                        Some(Tagged {
                            kind: ReadErrorKind::Gzip,
                            message: "the inflating thread failed".to_owned(),
                        }),
                        String::new(),
                    ));
                    return Err(self.again().expect("OK because it was just set"));
                }
                Ok(false)
            }
        }
    }
}

impl Read for Inflater {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.current.len() {
            if buf.is_empty() || !self.next_chunk()? {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl Drop for Inflater {
    fn drop(&mut self) {
        // Closing the channel makes the thread's next send fail.
        self.chunks = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
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
    /// Why the header cannot be used (its size is not a number): nothing after it can be read.
    problem: Option<Fail>,
}

/// The value of a tar header's size field: octal digits (between optional spaces, ended by a
/// space or NUL), or GNU base-256 (a first byte of `0x80`, then a big-endian number); `None` when
/// it is neither. A base-256 size beyond `u64` comes out as `u64::MAX`.
fn parse_size(field: &[u8]) -> Option<u64> {
    if field.first() == Some(&0x80) {
        return Some(field[1..].iter().fold(0u64, |n, &b| {
            n.checked_mul(256)
                .and_then(|n| n.checked_add(u64::from(b)))
                .unwrap_or(u64::MAX)
        }));
    }
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    let text = std::str::from_utf8(&field[..end]).ok()?.trim_matches(' ');
    if text.is_empty() || !text.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return None;
    }
    u64::from_str_radix(text, 8).ok()
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
            let size_field = parse_size(&header.as_old().size);
            let kind = header.entry_type();
            let padded = |size: u64| size.checked_add(BLOCK - 1).map(|s| s & !(BLOCK - 1));
            let extension = match kind {
                tar::EntryType::GNULongName => Some((&mut long_name, MAX_NAME_BYTES as u64 + 1)),
                tar::EntryType::GNULongLink => Some((&mut long_link, MAX_NAME_BYTES as u64 + 1)),
                tar::EntryType::XHeader => Some((&mut pax, MAX_PAX_BYTES)),
                _ => None,
            };
            let extension_size = || {
                let what = match kind {
                    tar::EntryType::XHeader => "PAX extended header",
                    tar::EntryType::XGlobalHeader => "PAX global header",
                    tar::EntryType::GNULongLink => "GNU long link name header",
                    _ => "GNU long name header",
                };
                let size = size_field.ok_or_else(|| {
                    (
                        ReadErrorKind::Tar,
                        format!(
                            "the size field of the {what} at byte {header_pos} is not a number; \
                             the header is corrupt"
                        ),
                    )
                })?;
                let total = padded(size).ok_or_else(|| {
                    (
                        ReadErrorKind::Tar,
                        format!(
                            "the {what} at byte {header_pos} declares {size} bytes, more than \
                             any archive holds; the header is corrupt"
                        ),
                    )
                })?;
                Ok::<_, Fail>((size, total))
            };
            if let Some((slot, max)) = extension {
                pending = true;
                let (size, total) = extension_size()?;
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
                let (_, total) = extension_size()?;
                self.discard(total)?;
                continue;
            }
            let mut problem = None;
            let mut size = size_field.unwrap_or_else(|| {
                problem = Some(
                    "the entry header's size field is not a number; the header is \
                                corrupt, so the rest of the archive cannot be read"
                        .to_owned(),
                );
                0
            });
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
                                problem = problem.or_else(|| {
                                    Some(
                                        "the size in the entry's PAX extended header is not a \
                                         number; the header is corrupt, so the rest of the \
                                         archive cannot be read"
                                            .to_owned(),
                                    )
                                });
                                size = 0;
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
            if problem.is_none() {
                match padded(size) {
                    Some(total) => self.skip = total,
                    None => {
                        problem = Some(format!(
                            "the entry header declares {size} bytes of data, more than any \
                             archive holds; the header is corrupt, so the rest of the archive \
                             cannot be read"
                        ));
                    }
                }
            }
            if problem.is_some() {
                size = 0;
            }
            return Ok(Some(RawEntry {
                name,
                name_problem,
                link,
                kind,
                size,
                data_pos: self.pos,
                problem: problem.map(|message| (ReadErrorKind::Tar, message)),
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
    /// An entry passed over quietly (a directory).
    Quiet,
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
        return Err(ReadError::new(
            ReadErrorKind::NotABundle,
            here,
            format!("not a bundle: {}", not_an_archive(&magic[..got])),
        ));
    };

    // First pass: index every entry.
    let stream = open_stream(path, gzip).map_err(io_error)?;
    let mut walker = Walker::new(stream, limits);
    let mut indexed: Vec<(u64, Indexed)> = Vec::new();
    // The paths of the entries, to find paths that are both a file and a directory.
    let mut nodes: Vec<Node> = Vec::new();
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
                        "not a bundle: the gzip data inflates to nothing (no tar archive inside)"
                            .to_owned()
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
            broken = Some(error.clone());
            indexed.push((entry.data_pos, Indexed::Error(error)));
            break;
        }
        let item = classify_entry(&entry, &location, limits).map(|item| match item {
            // Remember which path a refused entry had, so that it still counts as present.
            Indexed::Error(e) => match normalize_entry_name(&entry.name) {
                Ok(name) if !name.is_empty() => Indexed::Error(e.about(name)),
                _ => Indexed::Error(e),
            },
            other => other,
        });
        let at = indexed.len();
        indexed.push((entry.data_pos, item.unwrap_or(Indexed::Quiet)));
        if let Some(name) = &usable {
            let dir = is_directory(&entry);
            nodes.push(Node::new(name, dir, at, &shown));
        }
        // Move past the data now, so that damage inside it is found and located here. Data that
        // would pass the total limit is not read at all.
        let left = std::mem::take(&mut walker.skip);
        let moved = if walker.pos.saturating_add(left) > limits.max_total_bytes {
            Err((
                ReadErrorKind::TooLarge,
                format!(
                    "the entry's header declares {} bytes of data, which would take the archive \
                     past the total limit of {} bytes; reading stopped here",
                    entry.size, limits.max_total_bytes
                ),
            ))
        } else {
            walker.discard(left)
        };
        if let Err((kind, message)) = moved {
            let error = ReadError::new(kind, location, message);
            broken = Some(error.clone());
            let file = matches!(
                indexed[at].1,
                Indexed::File { .. } | Indexed::TooLarge { .. }
            );
            indexed[at].1 = match usable {
                // A file cut by the total limit still tells where the run directory is.
                Some(name) if file && kind == ReadErrorKind::TooLarge => {
                    Indexed::TooLarge { name, error }
                }
                Some(name) => Indexed::Error(error.about(name)),
                None => Indexed::Error(error),
            };
            break;
        }
    }
    if ended && gzip {
        if let Err((kind, mut message)) = walker.drain() {
            if kind == ReadErrorKind::Gzip {
                // A damaged trailer, or bytes after the last member that are not a gzip member.
                message.push_str(", after the end of the tar archive");
            }
            tail.push(ReadError::new(kind, &here, message));
        }
    }
    drop(walker);
    let mut conflicts = path_conflicts(&nodes, &here);
    drop(nodes);

    // Find the run directory among the regular files.
    let names: Vec<&str> = indexed
        .iter()
        .filter_map(|(_, item)| match item {
            Indexed::File { name, .. } | Indexed::TooLarge { name, .. } => Some(name.as_str()),
            Indexed::Error(_) | Indexed::Quiet => None,
        })
        .collect();
    let run_dir = match find_run_dir(&names) {
        Ok(run_dir) => Some(run_dir),
        Err(why) => {
            let capped = |e: &ReadError| {
                matches!(
                    e.kind,
                    ReadErrorKind::TooLarge | ReadErrorKind::TooManyEntries
                )
            };
            if broken.iter().chain(&tail).any(capped) {
                // A cap stopped the first pass before the run directory showed: the bundle opens,
                // yields no file, and reports the cap like any other archive past it.
                None
            } else {
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
        }
    };
    let inside = |name: &str| -> Option<String> {
        strip_run_dir(name, run_dir.as_deref()?).map(str::to_owned)
    };

    // Keep the files of the run directory (the last copy of a duplicate) and every error.
    let mut last_copy: HashMap<&str, usize> = HashMap::new();
    for (i, (_, item)) in indexed.iter().enumerate() {
        if let Indexed::File { name, .. } = item {
            if inside(name).is_some() {
                last_copy.insert(name.as_str(), i);
            }
        }
    }
    // By index rather than by name, so that no name is copied for it.
    let mut is_last_copy = vec![false; indexed.len()];
    for i in last_copy.into_values() {
        is_last_copy[i] = true;
    }
    let mut items = Vec::with_capacity(indexed.len());
    for (i, (data_pos, item)) in indexed.into_iter().enumerate() {
        let what = match item {
            Indexed::Quiet => None,
            Indexed::Error(e) => Some(ArchiveAction::Error(ReadError {
                path: e.path.as_deref().and_then(inside),
                ..e
            })),
            Indexed::TooLarge { error, name } => Some(ArchiveAction::Error(ReadError {
                path: inside(&name),
                ..error
            })),
            Indexed::File {
                name,
                size,
                location,
            } => match inside(&name) {
                None => None,
                Some(rel) if !is_last_copy[i] => Some(ArchiveAction::Error(
                    ReadError::new(
                        ReadErrorKind::Tar,
                        location,
                        "a duplicate entry; a later entry with the same path replaces it",
                    )
                    .about(rel),
                )),
                Some(rel) => Some(ArchiveAction::File {
                    rel,
                    size,
                    location,
                }),
            },
        };
        if let Some(what) = what {
            items.push(ArchiveItem { data_pos, what });
        }
        if let Some(e) = conflicts.remove(&i) {
            let what = ArchiveAction::Error(ReadError {
                path: e.path.as_deref().and_then(inside),
                ..e
            });
            items.push(ArchiveItem { data_pos, what });
        }
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
    let run_id = match run_dir {
        Some(run_dir) if !run_dir.is_empty() => match run_dir.rsplit_once('/') {
            Some((_, name)) => name.to_owned(),
            None => run_dir,
        },
        _ => archive_stem(path),
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

/// Whether an archive entry makes a directory when extracted.
fn is_directory(entry: &RawEntry) -> bool {
    match entry.kind {
        tar::EntryType::Directory => true,
        // An old-style directory entry.
        tar::EntryType::Regular | tar::EntryType::Continuous => {
            entry.name.ends_with(b"/") && entry.size == 0
        }
        _ => false,
    }
}

/// The path of one archive entry, for [`path_conflicts`].
struct Node {
    /// The normalized name with each `/` turned into a NUL byte (which no name holds), so that
    /// sorting the keys puts every path right before the paths inside it. The name and the
    /// location are rebuilt from it for the few entries that conflict: an archive may hold
    /// hundreds of thousands of entries, and this list lives until the first pass ends.
    key: Box<[u8]>,
    dir: bool,
    /// The entry's index among the indexed entries, which is also its place in the archive.
    at: usize,
    /// The name as the archive spells it, when that differs from the normalized name.
    spelled: Option<Box<str>>,
}

impl Node {
    fn new(name: &str, dir: bool, at: usize, spelled: &str) -> Node {
        let key = name
            .bytes()
            .map(|b| if b == b'/' { 0 } else { b })
            .collect();
        Node {
            key,
            dir,
            at,
            spelled: (spelled != name).then(|| spelled.into()),
        }
    }

    /// The normalized name.
    fn name(&self) -> String {
        let bytes = self
            .key
            .iter()
            .map(|&b| if b == 0 { b'/' } else { b })
            .collect();
        // OK because the key came from a `&str` with only `/` bytes replaced.
        String::from_utf8(bytes).unwrap_or_default()
    }

    /// Where the entry is: `archive!name` as the archive spells the name.
    fn location(&self, archive: &str) -> String {
        match &self.spelled {
            Some(spelled) => format!("{archive}!{spelled}"),
            None => format!("{archive}!{}", self.name()),
        }
    }
}

/// The entries whose path another entry earlier in the archive makes the other kind of thing: a
/// file at a path that is a directory (an entry of its own, or the parent of another entry), or a
/// directory entry or an entry inside a path that is a file. Keyed by the later entry's index,
/// one error each. Extracting such an archive turns one into the other (or fails), so what a
/// person extracts is not what the reader reads. Sorting the paths puts each path right before
/// the paths inside it, so one walk with a stack of the enclosing files finds every conflict in
/// `O(n log n)`, whatever the depth of the names.
fn path_conflicts(nodes: &[Node], archive: &str) -> HashMap<usize, ReadError> {
    struct Frame {
        /// The node of this file.
        node: usize,
        /// The earliest file on the stack with a shorter path (an enclosing file).
        enclosing: Option<usize>,
        /// The earliest file on the stack up to and including this one.
        earliest: usize,
        /// The earliest entry inside this file's path or a directory entry at it.
        inside: Option<usize>,
    }
    let min = |a: Option<usize>, b: Option<usize>| match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let within = |outer: &[u8], path: &[u8]| {
        path.len() >= outer.len()
            && path.starts_with(outer)
            && (path.len() == outer.len() || path[outer.len()] == 0)
    };
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&nodes[a], &nodes[b]);
        (&a.key, a.dir, a.at).cmp(&(&b.key, b.dir, b.at))
    });
    let mut found: HashMap<usize, ReadError> = HashMap::new();
    let mut report = |node: &Node, message: String| {
        found.entry(node.at).or_insert_with(|| {
            ReadError::new(ReadErrorKind::PathConflict, node.location(archive), message)
                .about(node.name())
        });
    };
    let mut stack: Vec<Frame> = Vec::new();
    let close = |stack: &mut Vec<Frame>, report: &mut dyn FnMut(&Node, String)| {
        let frame = stack.pop().expect("OK because the stack is not empty");
        let file = &nodes[frame.node];
        if let Some(first) = frame.inside.filter(|&i| i < frame.node) {
            let earlier = &nodes[first];
            let message = if earlier.dir && earlier.key == file.key {
                format!(
                    "`{}` is a directory earlier in the archive; extracting this file would turn \
                     that directory into a file",
                    earlier.name()
                )
            } else {
                format!(
                    "`{}` earlier in the archive makes this path a directory; extracting this \
                     file would turn that directory into a file",
                    earlier.name()
                )
            };
            report(file, message);
        }
        if let Some(parent) = stack.last_mut() {
            parent.inside = min(parent.inside, frame.inside);
            if nodes[parent.node].key != file.key {
                parent.inside = min(parent.inside, Some(frame.node));
            }
        }
    };
    for i in order {
        let node = &nodes[i];
        while stack
            .last()
            .is_some_and(|top| !within(&nodes[top.node].key, &node.key))
        {
            close(&mut stack, &mut report);
        }
        let same = stack
            .last()
            .is_some_and(|top| nodes[top.node].key == node.key);
        let earlier_file = match stack.last() {
            None => None,
            Some(top) if same && !node.dir => top.enclosing,
            Some(top) => Some(top.earliest),
        };
        if let Some(file) = earlier_file.filter(|&f| f < i) {
            report(
                node,
                format!(
                    "`{}` is a file earlier in the archive; extracting this entry would turn that \
                     file into a directory",
                    nodes[file].name()
                ),
            );
        }
        if node.dir {
            if let Some(top) = stack.last_mut() {
                top.inside = min(top.inside, Some(i));
            }
        } else {
            let (enclosing, earliest) = match stack.last() {
                None => (None, i),
                Some(top) if same => (top.enclosing, top.earliest.min(i)),
                Some(top) => (Some(top.earliest), top.earliest.min(i)),
            };
            stack.push(Frame {
                node: i,
                enclosing,
                earliest,
                inside: None,
            });
        }
    }
    while !stack.is_empty() {
        close(&mut stack, &mut report);
    }
    found
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Yields `good` bytes, then fails with a tagged error.
    struct FailsAfter {
        good: usize,
    }

    impl Read for FailsAfter {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.good == 0 {
                return Err(io::Error::other(Tagged {
                    kind: ReadErrorKind::Gzip,
                    message: "bad block".to_owned(),
                }));
            }
            let n = buf.len().min(self.good);
            buf[..n].fill(7);
            self.good -= n;
            Ok(n)
        }
    }

    #[test]
    fn inflater_hands_over_every_byte_in_order() {
        let data: Vec<u8> = (0..3 * CHUNK_BYTES + 123)
            .map(|i| (i % 251) as u8)
            .collect();
        let mut got = Vec::new();
        Inflater::spawn(io::Cursor::new(data.clone()))
            .unwrap()
            .read_to_end(&mut got)
            .unwrap();
        assert_eq!(got, data);
    }

    #[test]
    fn inflater_forwards_an_error_after_the_bytes_before_it_and_repeats_it() {
        let mut r = Inflater::spawn(FailsAfter {
            good: CHUNK_BYTES + 10,
        })
        .unwrap();
        let mut got = Vec::new();
        let e = r.read_to_end(&mut got).unwrap_err();
        assert_eq!(got.len(), CHUNK_BYTES + 10);
        assert_eq!(
            classify(e),
            (
                ReadErrorKind::Gzip,
                "corrupt or truncated gzip data (bad block)".to_owned()
            )
        );
        let again = r.read(&mut [0; 16]).unwrap_err();
        assert_eq!(
            classify(again).1,
            "corrupt or truncated gzip data (bad block)"
        );
    }

    /// The source never ends, so only a failed send stops the thread: dropping the reader returns
    /// only once the thread has ended.
    #[test]
    fn dropping_the_inflater_stops_its_thread() {
        let mut r = Inflater::spawn(io::repeat(1)).unwrap();
        let mut buf = [0; 1000];
        r.read_exact(&mut buf).unwrap();
        let thread = r.thread.take().unwrap();
        drop(r);
        thread.join().unwrap();
    }
}
