//! The file operations of a dataset's writers and readers, none of which follows a symbolic link
//! under the dataset's folder: every folder below the root is checked with `symlink_metadata`
//! (a link is refused with its path), files are opened with `O_NOFOLLOW` and created with
//! `O_CREAT | O_EXCL` (which never follows a link either), and a leftover is removed with
//! `unlink` (which removes a link, never its target). The root itself is the caller's to choose.
//!
//! It also holds the kill points of the crash tests ([`step`]): before each write, rename and
//! unlink that changes a dataset, `DIAGWIRE_FLEET_KILL_AT=N` makes the N-th such step send the
//! process `SIGKILL`, so a test can stop a writer at every step in turn. Without the variable a
//! step only counts.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::Error;

/// The environment variable naming the step at which a writer aborts (crash tests only).
pub const KILL_AT: &str = "DIAGWIRE_FLEET_KILL_AT";

static STEPS: AtomicU64 = AtomicU64::new(0);

/// Counts a step that changes the dataset (`what` at `path`); kills the process (`SIGKILL`: no
/// destructor, no buffered write runs) when it is the step [`KILL_AT`] names.
pub fn step(what: &str, path: &Path) {
    let n = STEPS.fetch_add(1, Ordering::SeqCst) + 1;
    if std::env::var(KILL_AT).is_ok_and(|v| v.trim() == n.to_string()) {
        eprintln!(
            "{KILL_AT}: stopped before step {n}: {what} {}",
            diagwire::problem::printable(&path.display().to_string())
        );
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
        std::process::abort();
    }
}

fn io(path: &Path, e: &std::io::Error) -> Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        return linked(path);
    }
    Error::at(path, e.to_string())
}

fn linked(path: &Path) -> Error {
    Error::at(
        path,
        "is a symbolic link: the dataset's folders and files are never reached through one",
    )
}

/// The options every file is opened with: no link followed at the last component.
fn options() -> OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = OpenOptions::new();
    o.custom_flags(libc::O_NOFOLLOW);
    o
}

/// Checks that no component of `rel` under `root` is a symbolic link (those that do not exist
/// yet are fine) and that every component but the last is a folder.
pub fn check(root: &Path, rel: &Path) -> Result<(), Error> {
    let mut at = root.to_path_buf();
    let parts: Vec<Component<'_>> = rel.components().collect();
    for (i, c) in parts.iter().enumerate() {
        let Component::Normal(name) = c else {
            return Err(Error::at(
                &root.join(rel),
                "not a path inside the dataset (only plain names)",
            ));
        };
        at.push(name);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Err(linked(&at)),
            Ok(m) if i + 1 < parts.len() && !m.is_dir() => {
                return Err(Error::at(&at, "is not a folder"));
            }
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io(&at, &e)),
        }
    }
    Ok(())
}

/// Creates the folders of `rel` under `root` one at a time, refusing a link anywhere.
pub fn ensure_dir(root: &Path, rel: &Path) -> Result<PathBuf, Error> {
    let mut at = root.to_path_buf();
    for c in rel.components() {
        let Component::Normal(name) = c else {
            return Err(Error::at(&root.join(rel), "not a path inside the dataset"));
        };
        at.push(name);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Err(linked(&at)),
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(Error::at(&at, "is not a folder")),
            Err(e) if e.kind() == ErrorKind::NotFound => match fs::create_dir(&at) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::AlreadyExists => check(root, rel)?,
                Err(e) => return Err(io(&at, &e)),
            },
            Err(e) => return Err(io(&at, &e)),
        }
    }
    Ok(at)
}

/// Opens `path` to read, refusing a link.
pub fn open(path: &Path) -> Result<File, Error> {
    options().read(true).open(path).map_err(|e| io(path, &e))
}

/// Creates `path`, which must not exist (a link there counts as existing and is never followed).
pub fn create_new(path: &Path) -> Result<File, Error> {
    options()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| io(path, &e))
}

/// Opens (creating it when missing) `path` to read and write, refusing a link.
pub fn open_or_create(path: &Path) -> Result<File, Error> {
    options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| io(path, &e))
}

/// Reads the text of `path`, refusing a link; `None` when there is no such file.
pub fn read_to_string(path: &Path) -> Result<Option<String>, Error> {
    let mut file = match options().read(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(path, &e)),
    };
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(|e| io(path, &e))?;
    Ok(Some(text))
}

/// Removes the file (or link) `path` when it is there: a step of its own then (a path that is not
/// there changes nothing, so it is no step: a kill there would leave what the step before left).
pub fn remove(path: &Path) -> Result<(), Error> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(path, &e)),
        Ok(_) => {}
    }
    step("unlink", path);
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(path, &e)),
    }
}

/// Renames `from` to `to`: a step of its own.
pub fn rename(from: &Path, to: &Path) -> Result<(), Error> {
    step("rename", to);
    fs::rename(from, to).map_err(|e| io(to, &e))
}

/// Writes `path`'s folder entries to disk (after a rename into it).
pub fn sync_dir(dir: &Path) -> Result<(), Error> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io(dir, &e))
}

/// Writes `bytes` to `path` (in `dir`): a new temporary file beside it (a leftover of that name,
/// a link included, is removed first, never followed), written to disk, renamed over `path`, and
/// the folder written to disk; a kill at any instant leaves the old file or the new one.
pub fn write_atomic(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    remove(&tmp)?;
    step("write", &tmp);
    let mut file = create_new(&tmp)?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| io(&tmp, &e))?;
    drop(file);
    rename(&tmp, path)?;
    sync_dir(dir)
}

/// Whether `path` looks like a whole Parquet file: it opens (no link), and it begins and ends
/// with the magic `PAR1` around a footer that fits in it. What a query checks of each file
/// before reading it, cheaply; a file that passes may still fail to read.
pub fn parquet_readable(path: &Path) -> Result<(), Error> {
    let mut file = open(path)?;
    let len = file.metadata().map_err(|e| io(path, &e))?.len();
    let bad = |what: &str| Error::at(path, format!("not a readable Parquet file: {what}"));
    if len < 12 {
        return Err(bad("too short"));
    }
    let mut head = [0u8; 4];
    file.read_exact(&mut head).map_err(|e| io(path, &e))?;
    let mut tail = [0u8; 8];
    file.seek(SeekFrom::End(-8))
        .and_then(|_| file.read_exact(&mut tail))
        .map_err(|e| io(path, &e))?;
    let footer = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if &head != b"PAR1" || &tail[4..] != b"PAR1" {
        return Err(bad("no PAR1 magic"));
    }
    if footer + 12 > len {
        return Err(bad("its footer is longer than the file"));
    }
    Ok(())
}
