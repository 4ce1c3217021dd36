//! One record file opened on its own (not as part of a bundle), with the reader's caution: only a
//! regular file, at most the per-file limit, however much it grows while it is read.
//!
//! The file is opened first and checked on its descriptor, never checked by its path and opened
//! after: a fifo or a link put in its place between a check and the open could otherwise block the
//! open or be followed. On Unix it is opened with `O_NONBLOCK` (opening a fifo returns at once;
//! a regular file reads as usual) and, with [`Links::Refuse`], `O_NOFOLLOW`.

use std::fs::{self, File};
use std::io::{self, BufReader, Read};
use std::path::Path;

use super::{Limits, ReadError, ReadErrorKind, too_large_file};

/// One record file opened for reading, after checking on its descriptor that it is a regular file
/// (a fifo or a device is refused without ever being read, so that nothing blocks) of at most
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

/// Whether a record file's path may name a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// A link is followed (a path a user named on the command line).
    Follow,
    /// A link is refused, [`ReadErrorKind::Link`] (a file found in a directory being read).
    Refuse,
}

/// Opens one record file, following a link; see [`RecordFile`].
pub fn open_record_file(path: &Path, limits: Limits) -> Result<RecordFile, ReadError> {
    open_record_file_with(path, limits, Links::Follow)
}

/// Opens one record file; see [`RecordFile`] and [`Links`].
pub fn open_record_file_with(
    path: &Path,
    limits: Limits,
    links: Links,
) -> Result<RecordFile, ReadError> {
    let here = path.display().to_string();
    let io_error = |e: io::Error| match e.kind() {
        io::ErrorKind::NotFound => ReadError::new(ReadErrorKind::NotFound, &here, "not found"),
        _ if is_link_refused(&e) => ReadError::new(
            ReadErrorKind::Link,
            &here,
            "a symbolic link; links are never followed here",
        ),
        _ => ReadError::new(ReadErrorKind::Io, &here, e.to_string()),
    };
    let file = open_without_blocking(path, links).map_err(io_error)?;
    let meta = file.metadata().map_err(io_error)?;
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
    let cap = limits.max_file_bytes;
    Ok(RecordFile {
        file: BufReader::with_capacity(64 << 10, file).take(cap.saturating_add(1)),
        size: meta.len(),
        cap,
        read: 0,
    })
}

#[cfg(unix)]
fn open_without_blocking(path: &Path, links: Links) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut flags = libc::O_NONBLOCK;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
}

#[cfg(unix)]
fn is_link_refused(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

#[cfg(not(unix))]
fn open_without_blocking(path: &Path, links: Links) -> io::Result<File> {
    if links == Links::Refuse && fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Err(io::Error::other(LINK_REFUSED));
    }
    File::open(path)
}

#[cfg(not(unix))]
const LINK_REFUSED: &str = "a symbolic link";

#[cfg(not(unix))]
fn is_link_refused(e: &io::Error) -> bool {
    e.to_string() == LINK_REFUSED
}
