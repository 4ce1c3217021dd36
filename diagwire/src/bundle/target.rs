//! Where the commands that write bundles write: the checks on an output path, and writing through a
//! temporary name in the output's own directory that is renamed into place only on success.
//!
//! [`check_output`] refuses an output that is a symbolic link, that is the input itself, or that
//! lies inside the input directory, so a writer never follows a link to overwrite what it points
//! to and never replaces or grows what it is reading. [`PendingFile`] and [`PendingDir`] are
//! created under a fresh temporary name (`create_new`, so nothing existing is ever opened) beside
//! their target; [`PendingFile::commit`] and [`PendingDir::commit`] move them into place without
//! replacing anything but an empty directory, and dropping one that was not committed removes it,
//! so a failed write leaves nothing behind.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::output::{check_path, check_run_id, refuse, write_new};

/// How many temporary names are tried before giving up.
const NAME_TRIES: u64 = 100;

/// Refuses `out` as the output of a command reading `input`: when `out` is a symbolic link, is
/// `input` itself (the same path once links are resolved, or the same file), or lies inside the
/// directory `input`. `out` need not exist.
pub fn check_output(input: &Path, out: &Path) -> io::Result<()> {
    if let Ok(meta) = fs::symlink_metadata(out) {
        if meta.file_type().is_symlink() {
            return Err(refuse(format!(
                "{} is a symbolic link; refusing to write through it",
                out.display()
            )));
        }
        if same_file(input, out) {
            return Err(refuse(format!(
                "{} is the input; refusing to overwrite it",
                out.display()
            )));
        }
    }
    let (Ok(input_real), Some(out_real)) = (fs::canonicalize(input), resolve(out)) else {
        return Ok(());
    };
    if out_real == input_real {
        return Err(refuse(format!(
            "{} is the input; refusing to overwrite it",
            out.display()
        )));
    }
    if input_real.is_dir() && out_real.starts_with(&input_real) {
        return Err(refuse(format!(
            "{} is inside the input {}; refusing to write into what is being read",
            out.display(),
            input.display()
        )));
    }
    Ok(())
}

/// Whether two paths name the same file (same device and inode).
#[cfg(unix)]
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Whether two paths name the same file (the same path once links are resolved).
#[cfg(not(unix))]
fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `path` with its longest existing ancestor resolved (links followed) and the rest appended as
/// it is; `None` when the rest has a `..` (which cannot be resolved without the directory).
fn resolve(path: &Path) -> Option<PathBuf> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(path)
    };
    let mut rest = Vec::new();
    let mut base = absolute.as_path();
    loop {
        if let Ok(real) = fs::canonicalize(base) {
            let mut out = real;
            for part in rest.iter().rev() {
                match part {
                    Component::Normal(p) => out.push(p),
                    Component::CurDir => {}
                    _ => return None,
                }
            }
            return Some(out);
        }
        let name = base.components().next_back()?;
        rest.push(name);
        base = base.parent()?;
    }
}

/// The temporary name a writer gives the file `name` while it writes it, beside it:
/// `.<name>.partial-<pid>-<n>`, fresh in this process. Hidden (no run id, node label or bundle
/// file name a writer produces starts with `.` and holds `.partial`), so a reader skips it and a
/// writer's start-up cleanup recognizes it by [`is_temporary_name`]. The one convention of the
/// library's writers, staging and the collector.
pub fn temporary_file_name(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let unique = NEXT.fetch_add(1, Ordering::Relaxed);
    format!(".{name}.partial-{}-{unique}", std::process::id())
}

/// Whether `name` is a file a writer had not finished: a [`temporary_file_name`], or
/// `.<name>.partial` as earlier versions named it.
pub fn is_temporary_name(name: &str) -> bool {
    name.starts_with('.') && (name.ends_with(".partial") || name.contains(".partial-"))
}

/// A fresh [`temporary_file_name`] beside `target`.
fn temporary_name(target: &Path) -> io::Result<PathBuf> {
    let name = target
        .file_name()
        .ok_or_else(|| refuse(format!("{} names no file", target.display())))?;
    Ok(target.with_file_name(temporary_file_name(&name.to_string_lossy())))
}

/// A file being written under a temporary name beside its target: renamed into place by
/// [`PendingFile::commit`], removed when dropped uncommitted.
#[derive(Debug)]
pub struct PendingFile {
    file: Option<File>,
    tmp: PathBuf,
    target: PathBuf,
}

impl PendingFile {
    /// Starts writing `target`. Refuses a `target` that already exists (a file, a directory or a
    /// link); creates the temporary file with `create_new` in `target`'s directory, which must
    /// exist.
    pub fn create(target: &Path) -> io::Result<PendingFile> {
        refuse_existing(target)?;
        let target = target.to_path_buf();
        for _ in 0..NAME_TRIES {
            let tmp = temporary_name(&target)?;
            match OpenOptions::new().write(true).create_new(true).open(&tmp) {
                Ok(file) => {
                    return Ok(PendingFile {
                        file: Some(file),
                        tmp,
                        target,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("no free temporary name beside {}", target.display()),
        ))
    }

    /// The open temporary file.
    pub fn file(&mut self) -> &mut File {
        self.file
            .as_mut()
            .expect("OK because the file is open until commit")
    }

    /// Flushes the file to disk, moves it to its target, which must still not exist, and flushes
    /// the target's directory: once this returns, the file survives a crash whole.
    pub fn commit(mut self) -> io::Result<PathBuf> {
        let file = self
            .file
            .take()
            .expect("OK because the file is open until commit");
        file.sync_all()?;
        drop(file);
        // A hard link never replaces an existing file; a file system without them gets a rename
        // after one more look.
        match fs::hard_link(&self.tmp, &self.target) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(exists(&self.target));
            }
            Err(_) => {
                refuse_existing(&self.target)?;
                fs::rename(&self.tmp, &self.target)?;
            }
        }
        let _ = fs::remove_file(&self.tmp);
        if let Some(dir) = self.target.parent() {
            sync_dir(dir)?;
        }
        Ok(self.target.clone())
    }
}

/// Flushes a directory's entries to disk (a file created, linked or renamed in it survives a
/// crash only once its directory is flushed). A no-op where directories cannot be opened as files.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Creates `dir` and its missing parents, flushing each parent that gained an entry, so the new
/// directories survive a crash.
pub fn create_dir_durable(dir: &Path) -> io::Result<()> {
    if fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dir_durable(parent)?;
    }
    match fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    match dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => sync_dir(parent),
        None => Ok(()),
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        self.file = None;
        let _ = fs::remove_file(&self.tmp);
    }
}

fn exists(target: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("{} exists; not overwritten", target.display()),
    )
}

fn refuse_existing(target: &Path) -> io::Result<()> {
    match fs::symlink_metadata(target) {
        Ok(_) => Err(exists(target)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// A run directory being written under a temporary name in its parent: renamed to
/// `parent/<run_id>` by [`PendingDir::commit`], removed with everything in it when dropped
/// uncommitted. Its files are written with `create_new`, never through a link, never twice.
#[derive(Debug)]
pub struct PendingDir {
    tmp: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl PendingDir {
    /// Starts writing the run directory `parent/<run_id>`. Creates `parent` when it is missing;
    /// refuses a run id that is not one plain path component, and an existing `<run_id>` that is
    /// not an empty directory.
    pub fn create(parent: &Path, run_id: &str) -> io::Result<PendingDir> {
        check_run_id(run_id)?;
        fs::create_dir_all(parent)?;
        let target = parent.join(run_id);
        refuse_unusable_dir(&target)?;
        for _ in 0..NAME_TRIES {
            let tmp = temporary_name(&target)?;
            match fs::create_dir(&tmp) {
                Ok(()) => {
                    return Ok(PendingDir {
                        tmp,
                        target,
                        committed: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("no free temporary name beside {}", target.display()),
        ))
    }

    /// A scratch directory beside `beside` (named after it), for files that are not committed as
    /// a run directory but read back and removed, with everything in it, when it is dropped.
    pub fn scratch(beside: &Path) -> io::Result<PendingDir> {
        let beside = beside.to_path_buf();
        for _ in 0..NAME_TRIES {
            let tmp = temporary_name(&beside)?;
            match fs::create_dir(&tmp) {
                Ok(()) => {
                    return Ok(PendingDir {
                        tmp,
                        target: beside,
                        committed: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("no free temporary name beside {}", beside.display()),
        ))
    }

    /// Where the files are written until the commit.
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// The run directory the commit makes.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Writes the file at `path` (relative to the run directory). Refuses a path that could
    /// leave the directory or would not read back, and a file already written (`AlreadyExists`).
    pub fn write(&self, path: &str, bytes: &[u8]) -> io::Result<()> {
        check_path(path)?;
        write_new(&self.tmp, path, bytes)
    }

    /// Moves the directory to `parent/<run_id>`, which must not exist or be an empty directory.
    pub fn commit(mut self) -> io::Result<PathBuf> {
        refuse_unusable_dir(&self.target)?;
        fs::rename(&self.tmp, &self.target)?;
        self.committed = true;
        Ok(self.target.clone())
    }
}

impl Drop for PendingDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.tmp);
        }
    }
}

/// Refuses a run directory that exists and is not an empty directory (a link is refused).
fn refuse_unusable_dir(target: &Path) -> io::Result<()> {
    match fs::symlink_metadata(target) {
        Ok(meta) if meta.is_dir() => {
            if fs::read_dir(target)?.next().is_some() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not empty", target.display()),
                ));
            }
            Ok(())
        }
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} exists and is not a directory", target.display()),
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// The files under `dir`, as `/`-separated paths relative to it, sorted as strings (the order a
/// bundle's `.tar.gz` lists them). Links and anything but files and directories are refused.
pub fn files_under(dir: &Path) -> io::Result<Vec<String>> {
    let mut out = Vec::new();
    let mut todo = vec![(dir.to_path_buf(), String::new())];
    while let Some((here, prefix)) = todo.pop() {
        for entry in fs::read_dir(&here)? {
            let entry = entry?;
            let name = entry
                .file_name()
                .into_string()
                .map_err(|n| refuse(format!("{} is not UTF-8", Path::new(&n).display())))?;
            let rel = format!("{prefix}{name}");
            let kind = entry.file_type()?;
            if kind.is_dir() {
                todo.push((entry.path(), format!("{rel}/")));
            } else if kind.is_file() {
                out.push(rel);
            } else {
                return Err(refuse(format!(
                    "{} is not a file or a directory",
                    entry.path().display()
                )));
            }
        }
    }
    out.sort();
    Ok(out)
}
