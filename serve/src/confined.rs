//! Files under the collector's root, opened without following links: each folder below the
//! root is opened from its parent's descriptor with `O_NOFOLLOW | O_DIRECTORY` (`openat`), and
//! each file is created in its folder's descriptor with `O_NOFOLLOW | O_EXCL`, so a link a local
//! user plants under `staging/` or `quarantine/` is refused with a located error instead of
//! being written through (and nothing is acknowledged). The standard library has no `openat`;
//! `rustix` gives these calls without `unsafe`.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

/// The collector's root folder, held open.
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
    path: PathBuf,
}

/// A folder under the root, opened without following a link on the way.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// The error of a folder or file that is a link (or not a folder) where the collector writes.
fn refused(path: &Path, e: Errno) -> io::Error {
    if e == Errno::LOOP || e == Errno::NOTDIR || e == Errno::MLINK {
        io::Error::other(format!(
            "{} is a link or not a folder; the collector never writes through one",
            path.display()
        ))
    } else {
        io::Error::from(e)
    }
}

impl Root {
    /// Opens the root folder (itself reached as configured).
    pub fn open(path: &Path) -> io::Result<Root> {
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(io::Error::from)?;
        Ok(Root {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The folder `path` (under the root), each of its folders opened without following a link
    /// and, when `create`, made when missing (durably: each new folder is flushed into its
    /// parent).
    pub fn dir(&self, path: &Path, create: bool) -> io::Result<Dir> {
        let rel = path
            .strip_prefix(&self.path)
            .map_err(|_| io::Error::other(format!("{} is not under the root", path.display())))?;
        let mut at = self.path.clone();
        let mut fd = rustix::io::dup(&self.fd).map_err(io::Error::from)?;
        for part in rel.components() {
            let Component::Normal(name) = part else {
                return Err(io::Error::other(format!(
                    "{} is not a plain path under the root",
                    path.display()
                )));
            };
            at.push(name);
            let next = match rustix::fs::openat(&fd, name, DIR_FLAGS, Mode::empty()) {
                Err(Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&fd, name, Mode::from_raw_mode(0o755)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(refused(&at, e)),
                    }
                    rustix::fs::fsync(&fd).map_err(io::Error::from)?;
                    rustix::fs::openat(&fd, name, DIR_FLAGS, Mode::empty())
                        .map_err(|e| refused(&at, e))?
                }
                other => other.map_err(|e| refused(&at, e))?,
            };
            fd = next;
        }
        Ok(Dir { fd, path: at })
    }
}

impl Dir {
    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates the file `name`, which must not exist (not even as a link).
    pub fn create_new(&self, name: &str) -> io::Result<File> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(0o644))
            .map(File::from)
            .map_err(|e| refused(&self.path.join(name), e))
    }

    /// Links the file `from` to the new name `to` (never replacing one).
    pub fn link(&self, from: &str, to: &str) -> io::Result<()> {
        rustix::fs::linkat(&self.fd, from, &self.fd, to, AtFlags::empty())
            .map_err(|e| refused(&self.path.join(to), e))
    }

    /// Removes the name `name`.
    pub fn remove(&self, name: &str) -> io::Result<()> {
        rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()).map_err(io::Error::from)
    }

    /// Flushes the folder (its names) to disk.
    pub fn sync(&self) -> io::Result<()> {
        rustix::fs::fsync(&self.fd).map_err(io::Error::from)
    }

    /// Writes the new file `name` durably, never replacing one: under a temporary name, flushed,
    /// linked into place, the temporary name removed and the folder flushed.
    pub fn write_new(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let tmp = temporary_name(name);
        let mut file = self.create_new(&tmp)?;
        let written = file
            .write_all(bytes)
            .and_then(|()| file.sync_all())
            .and_then(|()| self.link(&tmp, name));
        let _ = self.remove(&tmp);
        written?;
        self.sync()
    }
}

/// A hidden temporary name beside `name`, unique in this process (`.<name>.partial-<pid>-<n>`;
/// staged and quarantined names never start with `.`, and the collector removes such names
/// when it starts).
pub fn temporary_name(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        ".{name}.partial-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}
