//! Reading a bundle from a directory or a (gzip'd) tar archive, one file at a time, defensively.
//!
//! [`BundleReader::open`] accepts a directory or an archive (recognized by its magic bytes,
//! whatever its name): a gzip'd tar as the collector serves it, or a plain tar. The run directory is
//! the one holding `MANIFEST.json`: the directory or archive top itself, or a directory at most two
//! levels down (`<run_id>/` in a collector tarball, or inside one wrapping directory); it must be
//! the only one. A bundle without a manifest but with node directories is still opened, so that the
//! manifest check can report what is missing. The run id is the bundle's identity, its manifest's
//! `run_id` (when the manifest reads as JSON and its `run_id` is one plain path component, as a
//! run directory's name is), so a renamed directory or archive reads as the run it holds; only
//! without such a manifest is it the name of the run directory, or for an archive whose top is the
//! run directory, the archive's file name without `.tar.gz` ([`BundleReader::dir_name`] is that
//! name either way).
//!
//! [`BundleReader::files`] then yields the regular files of the run directory one at a time, so
//! memory holds one file's bytes at most. Files are yielded sorted by path, from a directory and from
//! an archive alike, whatever order the archive holds them in (name order as the collector and
//! [`super::output::write_tar_gz`] write it, the order of `tar czf` of a directory, any other), so a
//! bundle reads the same, record for record and report for report, whatever holds it.
//!
//! An archive is read once, in its own order, when it is opened: the one pass indexes the entries
//! (what each is, the duplicates, the paths that are both a file and a directory, where the run
//! directory is) and keeps the data of the regular files until their turn, so that nothing is
//! inflated twice and no file is sought behind the pass. A gzip'd archive's file data is kept in
//! memory while it is at most 4 MiB and in an unnamed temporary file past that (on disk, at most
//! what [`Limits::max_total_bytes`] lets the archive expand to; the system deletes it when the
//! reader is dropped); a plain tar's is read where it is in the archive. The archive is opened
//! once (or handed over open: [`BundleReader::open_archive_file`], for a caller that opened it
//! without following links) and read at positions of the reader's own, never at the open file's
//! shared offset; a pass that reads it again reads the same open file, never its path again. Iterating again reads it
//! from there. When no temporary file can be written (no writable temporary directory, a full
//! disk), the files are read by another pass over the archive instead, those met before their turn
//! kept in memory up to 32 MiB and the rest read by a pass each. Why the whole pass comes before
//! the first file: the last copy of a duplicate wins, a second run directory anywhere makes the
//! archive ambiguous, a manifest at the end of the archive still decides where the run directory
//! is, and [`BundleReader::file_count`] and [`Stream::progress`] are known before the first file;
//! every consumer (validation, summary, the behavioural checks, coverage, parity, conversion,
//! export, upgrade) then reads each file once, in path order, and needs no change for an archive
//! out of order. Memory holds the index (a few hundred bytes an entry) and one file, whatever the
//! order of the members (a manifest that comes last included).
//!
//! Gzip data is inflated on a thread of its own, which hands the tar reader chunks of 256 KiB
//! through a bounded channel (a few chunks wait at most, so memory stays bounded), so that inflating
//! overlaps with indexing and keeping the data; dropping the reader stops the thread. A gzip file
//! of several members (RFC 1952; `cat a.gz b.gz`, the tar stream split anywhere) is one stream, as
//! `gzip -d` and `tar xzf` read it.
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
//! * an archive holding the same path twice yields the last copy (the last in the archive's order)
//!   and reports the earlier ones, each at the place of its path;
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
//! The reader is divided by job: `dir.rs` lists and reads a directory bundle, `run_dir.rs` finds the
//! run directory in a listing, `inflate.rs` inflates gzip data on its own thread, `tar_reader.rs` reads
//! tar headers and data, `index.rs` makes the one pass over an archive (what each entry is,
//! duplicates, where the run directory is, the files' data kept), `spill.rs` keeps that data,
//! `conflicts.rs` finds paths that are both a file and a directory, `iter.rs` yields the files (from
//! what the pass kept, or by another pass without it), and `record_file.rs` opens a single record
//! file with the same caution.

mod conflicts;
mod dir;
mod index;
mod inflate;
mod iter;
mod record_file;
mod run_dir;
mod spill;
mod tar_reader;

use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::BundleContents;
use crate::layout::{BundlePath, Encoding, Role, parse_bundle_path};
use crate::problem::{Location, Problem, ProblemKind};
use dir::{DirItem, open_dir};
use index::{ArchiveItem, open_archive};
use iter::Files;

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
    dir_name: String,
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

impl StreamFile {
    /// The file's bytes (the reader holds each file whole, within its caps).
    pub(crate) fn contents(&self) -> &[u8] {
        self.bytes.get_ref()
    }
}

impl Read for StreamFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.bytes.read(buf)
    }
}

pub use record_file::{Links, RecordFile, open_record_file, open_record_file_with};

/// What the first look found, for the iteration to go through.
#[derive(Debug)]
enum Layout {
    Dir(Vec<DirItem>),
    Archive {
        gzip: bool,
        items: Vec<ArchiveItem>,
        /// Where its files are shown.
        locations: index::Locations,
        /// The data of the files, kept by the pass; `None` when it could not be kept, and the
        /// files are read by another pass over the archive.
        spill: Option<spill::Spill>,
        /// The archive, open: another pass reads it again from here, never by its path.
        origin: fs::File,
    },
}

impl BundleReader {
    /// Opens a bundle: a directory (the run directory itself, or a directory holding exactly one run
    /// directory with `MANIFEST.json`) or a gzip'd or plain tar archive, recognized by its magic
    /// bytes (see the module documentation for where the run directory may be). Reads the
    /// directory listing, or makes the one pass over the archive.
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

    /// Opens an archive its caller has open as `file` (for one that opened it without following
    /// links, relative to a directory it holds), shown and named as `path` as [`BundleReader::open`]
    /// would show and name it. The reader reads `file` at positions of its own, so `file`'s
    /// offset is left where it was and another handle of it can be read or served meanwhile.
    pub fn open_archive_file(
        file: fs::File,
        path: &Path,
        limits: Limits,
    ) -> Result<BundleReader, ReadError> {
        let here = path.display().to_string();
        let meta = file
            .metadata()
            .map_err(|e| ReadError::new(ReadErrorKind::Io, &here, e.to_string()))?;
        if !meta.is_file() {
            return Err(ReadError::new(
                ReadErrorKind::NotABundle,
                here,
                "not a regular file",
            ));
        }
        index::open_archive_file(file, path, limits)
    }

    /// The run id: the manifest's `run_id` when the manifest reads and names one that is a plain
    /// path component, else [`BundleReader::dir_name`].
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The name of the run directory (for an archive whose top is the run directory, the
    /// archive's file name without `.tar.gz`), which a person may have renamed.
    pub fn dir_name(&self) -> &str {
        &self.dir_name
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
            files: Files::new(self),
            done: 0,
            total,
        }
    }

    /// The files of the run directory, one at a time; an entry error is yielded in its place and
    /// iteration continues. Problems with the bundle as a whole come last. Each call starts over.
    pub fn files(&mut self) -> impl Iterator<Item = Result<BundleFile, ReadError>> + '_ {
        Files::new(self)
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

/// The run id a manifest's bytes name: its `run_id`, when the bytes are a JSON object whose
/// `run_id` is a string that is one plain path component (what a writer would accept as the name
/// of the run directory). Nothing else of the manifest is kept.
pub(super) fn manifest_run_id(bytes: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct RunId {
        run_id: String,
    }
    let RunId { run_id } = serde_json::from_slice(bytes).ok()?;
    super::output::check_run_id(&run_id).ok()?;
    Some(run_id)
}

/// Where an archive's entry is shown: `<archive>!<entry name>`, the name as the archive spells it.
pub(super) fn archive_location(archive: &str, entry: &str) -> String {
    format!("{archive}!{entry}")
}

pub(super) fn too_large_file(location: String, size: u64, limits: Limits) -> ReadError {
    ReadError::new(
        ReadErrorKind::TooLarge,
        location,
        format!(
            "{size} bytes or more, over the per-file limit of {} bytes; not read",
            limits.max_file_bytes
        ),
    )
}

pub(super) fn too_large_total(location: String, limits: Limits) -> ReadError {
    ReadError::new(
        ReadErrorKind::TooLarge,
        location,
        format!(
            "the bundle is larger than the total limit of {} bytes; reading stopped here",
            limits.max_total_bytes
        ),
    )
}
