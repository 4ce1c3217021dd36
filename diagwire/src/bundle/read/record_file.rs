//! One record file opened on its own (not as part of a bundle), with the reader's caution: only a
//! regular file, at most the per-file limit, however much it grows while it is read.

use std::fs::{self, File};
use std::io::{self, BufReader, Read};
use std::path::Path;

use super::{Limits, ReadError, ReadErrorKind, too_large_file};

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
