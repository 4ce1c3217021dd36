//! Writing a bundle's files out: as a directory tree, or as a deterministic `.tar.gz` (whole with
//! [`write_tar_gz`], or one file at a time with [`TarGzWriter`] for a bundle too large to hold).
//!
//! Every writer refuses a run id that is not a single plain path component, and a file path that
//! is absolute, has a `..`, `.` or empty component, a backslash or a NUL byte, or is both a file
//! and a directory: nothing is ever written outside the run directory, and what is written reads
//! back as the same [`BundleContents`].

use std::collections::BTreeSet;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::{Compression, GzBuilder};

use super::BundleContents;

/// The gzip level of [`write_tar_gz`]; fixed, so that the output does not change.
const GZIP_LEVEL: u32 = 6;

/// Writes the bundle as `parent/<run_id>/…` and returns that directory. Creates `parent` when it is
/// missing; refuses to write into an existing `<run_id>` that is not an empty directory.
pub fn write_dir(bundle: &BundleContents, parent: &Path) -> io::Result<PathBuf> {
    check_bundle(bundle)?;
    fs::create_dir_all(parent)?;
    let run_dir = parent.join(&bundle.run_id);
    match fs::symlink_metadata(&run_dir) {
        Ok(meta) if meta.is_dir() => {
            if fs::read_dir(&run_dir)?.next().is_some() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not empty", run_dir.display()),
                ));
            }
        }
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists and is not a directory", run_dir.display()),
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir(&run_dir)?,
        Err(e) => return Err(e),
    }
    for (path, bytes) in &bundle.files {
        write_new(&run_dir, path, bytes)?;
    }
    Ok(run_dir)
}

/// Writes a new file at `path` (checked, `/`-separated) under `root`, creating its directories.
/// `create_new` never follows a link and never overwrites (`AlreadyExists`).
pub(super) fn write_new(root: &Path, path: &str, bytes: &[u8]) -> io::Result<()> {
    let target = path.split('/').fold(root.to_path_buf(), |p, c| p.join(c));
    if let Some(dir) = target.parent() {
        fs::create_dir_all(dir)?;
    }
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&target)?
        .write_all(bytes)
}

/// Writes the bundle as a gzip'd tar with `<run_id>/` at the top. Deterministic: the same contents
/// give the same bytes. Entries are sorted by path, each directory just before its first entry;
/// directories are `0755`, files `0644`, mtime 0, uid and gid 0, no user or group names (GNU
/// headers, with GNU long-name entries for paths over 100 bytes); the gzip header has no file name
/// and mtime 0, and the compression level is fixed.
pub fn write_tar_gz(bundle: &BundleContents, out: impl Write) -> io::Result<()> {
    check_bundle(bundle)?;
    let mut tar = TarGzWriter::new(&bundle.run_id, out)?;
    for (path, bytes) in &bundle.files {
        tar.append(path, bytes)?;
    }
    tar.finish()?;
    Ok(())
}

/// A bundle's `.tar.gz` written one file at a time, byte for byte what [`write_tar_gz`] writes for
/// the same files: for a bundle too large to hold in memory. Files must come in path order (the
/// order of [`BundleContents::files`]); a path out of order, or one [`write_tar_gz`] would refuse,
/// is an error and nothing more is written.
pub struct TarGzWriter<W: Write> {
    tar: tar::Builder<GzEncoder<W>>,
    run: String,
    /// The directories written so far (relative to the run directory).
    dirs: BTreeSet<String>,
    /// The files written so far: the last one orders the next, and a directory at a file's path
    /// is refused (a file always comes before the paths inside it).
    files: BTreeSet<String>,
}

impl<W: Write> TarGzWriter<W> {
    /// Starts the archive of the run `run_id` (its top-level directory) on `out`.
    pub fn new(run_id: &str, out: W) -> io::Result<Self> {
        check_run_id(run_id)?;
        let gzip = GzBuilder::new()
            .mtime(0)
            .write(out, Compression::new(GZIP_LEVEL));
        let mut tar = tar::Builder::new(gzip);
        append_dir(&mut tar, run_id)?;
        Ok(TarGzWriter {
            tar,
            run: run_id.to_owned(),
            dirs: BTreeSet::new(),
            files: BTreeSet::new(),
        })
    }

    /// Appends the file at `path` (relative to the run directory), after the directories leading
    /// to it that are not written yet.
    pub fn append(&mut self, path: &str, bytes: &[u8]) -> io::Result<()> {
        self.append_from(path, bytes.len() as u64, bytes)
    }

    /// [`TarGzWriter::append`] for a file of `size` bytes read from `data` as it is archived, so
    /// the file is never held whole; `data` must hold exactly `size` bytes.
    pub fn append_from(&mut self, path: &str, size: u64, data: impl io::Read) -> io::Result<()> {
        check_path(path)?;
        if let Some(last) = self.files.last() {
            if path <= last.as_str() {
                return Err(refuse(format!(
                    "the file path `{path}` comes after `{last}`; files are written in path order"
                )));
            }
        }
        let run = &self.run;
        let mut dir_end = 0;
        while let Some(slash) = path[dir_end..].find('/') {
            dir_end += slash;
            let dir = &path[..dir_end];
            if !self.dirs.contains(dir) {
                if self.files.contains(dir) {
                    return Err(refuse(format!(
                        "`{dir}` is a file and also the directory of `{path}`"
                    )));
                }
                self.dirs.insert(dir.to_owned());
                append_dir(&mut self.tar, &format!("{run}/{dir}"))?;
            }
            dir_end += 1;
        }
        let mut header = fixed_header(tar::EntryType::Regular, 0o644, size);
        let mut data = data.take(size);
        self.tar
            .append_data(&mut header, format!("{run}/{path}"), &mut data)?;
        if data.limit() > 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("`{path}` ended before its {size} bytes"),
            ));
        }
        self.files.insert(path.to_owned());
        Ok(())
    }

    /// Writes the end of the archive and the gzip trailer, and returns the output.
    pub fn finish(self) -> io::Result<W> {
        self.tar.into_inner()?.finish()
    }
}

fn append_dir<W: Write>(tar: &mut tar::Builder<W>, path: &str) -> io::Result<()> {
    let mut header = fixed_header(tar::EntryType::Directory, 0o755, 0);
    tar.append_data(&mut header, format!("{path}/"), io::empty())
}

fn fixed_header(kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_size(size);
    header.set_mtime(0);
    header.set_uid(0);
    header.set_gid(0);
    header
}

pub(super) fn refuse(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// Why a path component cannot be written, if it cannot.
fn bad_component(component: &str) -> Option<&'static str> {
    match component {
        "" => Some("an empty component"),
        "." => Some("a `.` component"),
        ".." => Some("a `..` component"),
        c if c.contains('\\') => Some("a backslash"),
        c if c.contains('\0') => Some("a NUL byte"),
        _ => None,
    }
}

/// Refuses a run id or file paths that could escape the run directory or would not read back.
fn check_bundle(bundle: &BundleContents) -> io::Result<()> {
    check_run_id(&bundle.run_id)?;
    for path in bundle.files.keys() {
        check_path(path)?;
        let below = format!("{path}/");
        if let Some((inner, _)) = bundle.files.range(below.clone()..).next() {
            if inner.starts_with(&below) {
                return Err(refuse(format!(
                    "`{path}` is a file and also the directory of `{inner}`"
                )));
            }
        }
    }
    Ok(())
}

/// Refuses a run id that is not one plain path component.
pub(super) fn check_run_id(run: &str) -> io::Result<()> {
    if run.contains('/') {
        return Err(refuse(format!(
            "the run id `{run}` is not a single path component"
        )));
    }
    if let Some(why) = bad_component(run) {
        return Err(refuse(format!("the run id `{run}` has {why}")));
    }
    Ok(())
}

/// Refuses a file path that is absolute or has a component that cannot be written.
pub(super) fn check_path(path: &str) -> io::Result<()> {
    if path.starts_with('/') {
        return Err(refuse(format!("the file path `{path}` is absolute")));
    }
    if let Some(why) = path.split('/').find_map(bad_component) {
        return Err(refuse(format!("the file path `{path}` has {why}")));
    }
    Ok(())
}
