//! Writing a bundle as a directory tree or as a deterministic `.tar.gz`.
//!
//! Both writers refuse a bundle whose run id is not a single plain path component, or with a file
//! path that is absolute, has a `..`, `.` or empty component, a backslash or a NUL byte, or is both
//! a file and a directory: nothing is ever written outside the run directory, and what is written
//! reads back as the same [`BundleContents`].

use std::collections::BTreeSet;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

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
        let target = path.split('/').fold(run_dir.clone(), |p, c| p.join(c));
        if let Some(dir) = target.parent() {
            fs::create_dir_all(dir)?;
        }
        // `create_new` never follows a link and never overwrites.
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&target)?;
        file.write_all(bytes)?;
    }
    Ok(run_dir)
}

/// Writes the bundle as a gzip'd tar with `<run_id>/` at the top. Deterministic: the same contents
/// give the same bytes. Entries are sorted by path, each directory just before its first entry;
/// directories are `0755`, files `0644`, mtime 0, uid and gid 0, no user or group names (GNU
/// headers, with GNU long-name entries for paths over 100 bytes); the gzip header has no file name
/// and mtime 0, and the compression level is fixed.
pub fn write_tar_gz(bundle: &BundleContents, out: impl Write) -> io::Result<()> {
    check_bundle(bundle)?;
    let gzip = GzBuilder::new()
        .mtime(0)
        .write(out, Compression::new(GZIP_LEVEL));
    let mut tar = tar::Builder::new(gzip);
    let run = &bundle.run_id;
    append_dir(&mut tar, run)?;
    let mut dirs = BTreeSet::new();
    for (path, bytes) in &bundle.files {
        let mut dir_end = 0;
        while let Some(slash) = path[dir_end..].find('/') {
            dir_end += slash;
            let dir = &path[..dir_end];
            if dirs.insert(dir.to_owned()) {
                append_dir(&mut tar, &format!("{run}/{dir}"))?;
            }
            dir_end += 1;
        }
        let mut header = fixed_header(tar::EntryType::Regular, 0o644, bytes.len() as u64);
        tar.append_data(&mut header, format!("{run}/{path}"), bytes.as_slice())?;
    }
    tar.into_inner()?.finish()?;
    Ok(())
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

fn refuse(message: String) -> io::Error {
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
    let run = &bundle.run_id;
    if run.contains('/') {
        return Err(refuse(format!(
            "the run id `{run}` is not a single path component"
        )));
    }
    if let Some(why) = bad_component(run) {
        return Err(refuse(format!("the run id `{run}` has {why}")));
    }
    for path in bundle.files.keys() {
        if path.starts_with('/') {
            return Err(refuse(format!("the file path `{path}` is absolute")));
        }
        if let Some(why) = path.split('/').find_map(bad_component) {
            return Err(refuse(format!("the file path `{path}` has {why}")));
        }
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
