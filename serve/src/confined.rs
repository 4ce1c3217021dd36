//! Files under the collector's root, opened without following links: each folder below the
//! root is opened from its parent's descriptor with `O_NOFOLLOW | O_DIRECTORY` (`openat`), and
//! each file is created in its folder's descriptor with `O_NOFOLLOW | O_EXCL`, so a link a local
//! user plants under `staging/` or `quarantine/` is refused with a located error instead of
//! being written through (and nothing is acknowledged). Reading is confined the same way: a
//! folder's entries are listed from its descriptor with their types as they are (a link is
//! [`Kind::Link`], never what it points to), files are opened `O_NOFOLLOW` and checked to be
//! regular, and names are removed or renamed relative to their folder, so assembly and recovery
//! at start-up never read, write or remove anything a planted link points to. The standard
//! library has no `openat`; `rustix` gives these calls without `unsafe`.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use diagwire::bundle::target::temporary_file_name;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
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

/// How deep [`Dir::remove_tree`] goes.
pub const REMOVE_DEPTH: usize = 16;

/// What a name in a folder is, as it is (a link is never followed to say).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A folder.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link.
    Link,
    /// Anything else (a socket, a device, a fifo).
    Other,
}

impl Kind {
    fn of(t: FileType) -> Kind {
        match t {
            FileType::Directory => Kind::Dir,
            FileType::RegularFile => Kind::File,
            FileType::Symlink => Kind::Link,
            _ => Kind::Other,
        }
    }
}

/// A name's size and modification time, as the name itself has them (a link's own).
#[derive(Debug, Clone, Copy)]
pub struct Meta {
    /// What it is.
    pub kind: Kind,
    /// Its size in bytes.
    pub len: u64,
    /// Its modification time.
    pub modified: SystemTime,
}

impl Meta {
    fn of(st: &rustix::fs::Stat) -> Meta {
        let modified = u64::try_from(st.st_mtime).ok().map_or(UNIX_EPOCH, |s| {
            UNIX_EPOCH + Duration::new(s, st.st_mtime_nsec.clamp(0, 999_999_999) as u32)
        });
        Meta {
            kind: Kind::of(FileType::from_raw_mode(st.st_mode)),
            len: st.st_size.max(0) as u64,
            modified,
        }
    }

    /// The modification time in ms since the epoch.
    pub fn modified_ms(&self) -> u64 {
        self.modified
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }
}

/// The error of a link (or something else) where a regular file was expected.
fn not_a_file(path: &Path) -> io::Error {
    io::Error::other(format!(
        "{} is a link or not a regular file; the collector never reads through one",
        path.display()
    ))
}

impl Root {
    /// The root itself as a folder (a second descriptor of it).
    pub fn as_dir(&self) -> io::Result<Dir> {
        Ok(Dir {
            fd: rustix::io::dup(&self.fd).map_err(io::Error::from)?,
            path: self.path.clone(),
        })
    }

    /// The folder `path` under the root when it exists (`None` when it does not), each of its
    /// folders opened without following a link.
    pub fn dir_if_any(&self, path: &Path) -> io::Result<Option<Dir>> {
        match self.dir(path, false) {
            Ok(d) => Ok(Some(d)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
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

    /// A second descriptor of the same folder.
    pub fn try_clone(&self) -> io::Result<Dir> {
        Ok(Dir {
            fd: rustix::io::dup(&self.fd).map_err(io::Error::from)?,
            path: self.path.clone(),
        })
    }

    /// Opens the regular file at `rel` (`a/b/c`, `/`-separated) below the folder, each folder on
    /// the way opened without following a link.
    pub fn open_under(&self, rel: &str) -> io::Result<(File, Meta)> {
        let mut parts: Vec<&str> = rel.split('/').collect();
        let name = parts.pop().unwrap_or_default();
        let mut at: Option<Dir> = None;
        for part in parts {
            let next = at.as_ref().unwrap_or(self).open_dir(part)?;
            at = Some(next);
        }
        at.as_ref().unwrap_or(self).open_file(name)
    }

    /// The folder `name` in it, opened without following a link.
    pub fn open_dir(&self, name: &str) -> io::Result<Dir> {
        let path = self.path.join(name);
        let fd = rustix::fs::openat(&self.fd, name, DIR_FLAGS, Mode::empty())
            .map_err(|e| refused(&path, e))?;
        Ok(Dir { fd, path })
    }

    /// Makes the new folder `name` (never one that exists, not even as a link) and opens it.
    pub fn create_dir(&self, name: &str) -> io::Result<Dir> {
        rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o755))
            .map_err(|e| refused(&self.path.join(name), e))?;
        self.open_dir(name)
    }

    /// Every name in the folder with what it is (a link as a link), sorted; names that are not
    /// UTF-8 are left out.
    pub fn entries(&self) -> io::Result<Vec<(String, Kind)>> {
        let mut out = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.fd).map_err(io::Error::from)? {
            let entry = entry.map_err(io::Error::from)?;
            let Ok(name) = entry.file_name().to_str() else {
                continue;
            };
            if name == "." || name == ".." {
                continue;
            }
            let kind = match entry.file_type() {
                FileType::Unknown => self.meta(name)?.kind,
                t => Kind::of(t),
            };
            out.push((name.to_owned(), kind));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// What the name `name` is, its size and time, without following a link.
    pub fn meta(&self, name: &str) -> io::Result<Meta> {
        rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)
            .map(|st| Meta::of(&st))
            .map_err(io::Error::from)
    }

    /// Opens the regular file `name` to read it, never through a link: a link, a folder or
    /// anything else is refused with an error naming it.
    pub fn open_file(&self, name: &str) -> io::Result<(File, Meta)> {
        let path = self.path.join(name);
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::LOOP) => return Err(not_a_file(&path)),
            Err(e) => return Err(io::Error::from(e)),
        };
        let meta = Meta::of(&rustix::fs::fstat(&fd).map_err(io::Error::from)?);
        if meta.kind != Kind::File {
            return Err(not_a_file(&path));
        }
        Ok((File::from(fd), meta))
    }

    /// Renames `from` to `to` in the folder (replacing `to` when it exists).
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        rustix::fs::renameat(&self.fd, from, &self.fd, to)
            .map_err(|e| refused(&self.path.join(to), e))
    }

    /// Removes the name `name` and, when it is a folder, everything in it (at most
    /// [`REMOVE_DEPTH`] folders deep: the collector's work in progress is two); a link is
    /// removed itself, never what it points to.
    pub fn remove_tree(&self, name: &str) -> io::Result<()> {
        self.remove_tree_within(name, REMOVE_DEPTH)
    }

    fn remove_tree_within(&self, name: &str, depth: usize) -> io::Result<()> {
        if self.meta(name)?.kind != Kind::Dir {
            return self.remove(name);
        }
        if depth == 0 {
            return Err(io::Error::other(format!(
                "{} is more than {REMOVE_DEPTH} folders deep; not removed",
                self.path.join(name).display()
            )));
        }
        let dir = self.open_dir(name)?;
        for (entry, _) in dir.entries()? {
            dir.remove_tree_within(&entry, depth - 1)?;
        }
        rustix::fs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR).map_err(io::Error::from)
    }

    /// Flushes the folder (its names) to disk.
    pub fn sync(&self) -> io::Result<()> {
        rustix::fs::fsync(&self.fd).map_err(io::Error::from)
    }

    /// Writes the new file `name` durably, never replacing one: under a temporary name, flushed,
    /// linked into place, the temporary name removed and the folder flushed.
    pub fn write_new(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let tmp = temporary_file_name(name);
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
