//! Where the one pass over an archive leaves the data of its files, so that they can be yielded in
//! path order without inflating the archive again: the uncompressed data of a gzip'd archive's
//! files, in memory up to [`MEMORY_BYTES`] and past that in an unnamed temporary file (`tempfile`,
//! deleted by the system when closed, even after a crash); for a plain tar, the archive itself, read
//! at the offsets of its entries.
//!
//! The temporary file holds at most what [`super::Limits::max_total_bytes`] lets the archive expand
//! to, on disk, not in memory (its space reserved [`RESERVE_BYTES`] at a time, so up to that much
//! more is set aside while it is open). When it cannot be made or written (no writable temporary
//! directory, a full disk), the pass goes on without it and the files are read by another pass over
//! the archive.

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};

use super::inflate::At;

/// The most file data kept in memory before it goes to a temporary file.
pub(super) const MEMORY_BYTES: usize = 4 << 20;

/// The data of an archive's files, by offset.
pub(super) enum Spill {
    /// A gzip'd archive's file data, small enough to stay in memory.
    Memory(Vec<u8>),
    /// A gzip'd archive's file data, in a temporary file.
    Temp(Unnamed),
    /// A plain tar: its entries' data read where it is in the archive.
    Source(File),
}

impl fmt::Debug for Spill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Spill::Memory(bytes) => write!(f, "Spill::Memory({} bytes)", bytes.len()),
            Spill::Temp(_) => f.write_str("Spill::Temp"),
            Spill::Source(_) => f.write_str("Spill::Source"),
        }
    }
}

impl Spill {
    /// The `size` bytes at `at`. A short read means the archive (a plain tar, read in place)
    /// changed since the pass: an error.
    pub(super) fn read(&self, at: u64, size: u64) -> io::Result<Vec<u8>> {
        let len = usize::try_from(size).map_err(|_| io::Error::other("too large"))?;
        let short = || {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the archive changed while it was being read",
            )
        };
        match self {
            Spill::Memory(bytes) => {
                let start = usize::try_from(at).map_err(|_| short())?;
                bytes
                    .get(start..start.saturating_add(len))
                    .map(<[u8]>::to_vec)
                    .ok_or_else(short)
            }
            Spill::Temp(Unnamed(Some(file))) | Spill::Source(file) => {
                // At positions of its own: an archive's file may be one its caller shares.
                let mut bytes = Vec::with_capacity(len);
                At { file, pos: at }.take(size).read_to_end(&mut bytes)?;
                if bytes.len() < len {
                    return Err(short());
                }
                Ok(bytes)
            }
            Spill::Temp(Unnamed(None)) => Err(short()),
        }
    }
}

/// Reserves the temporary file's disk space up to `end` at least, [`RESERVE_BYTES`] at a time
/// from `reserved` (where it is reserved so far), without changing the file's size. Writing into
/// reserved space cost the system about 40 % less than letting each page find its block as it is
/// written (100 MB on ext4: 11–14 ms against 18–27 ms, on the thread that makes the archive's one
/// pass). Where the system cannot reserve (another system, a file system without `fallocate`, a full
/// disk) the file grows as it is written, as before; a full disk then fails the write.
fn reserve(file: &File, reserved: &mut u64, end: u64) {
    while *reserved < end {
        #[cfg(target_os = "linux")]
        let _ = rustix::fs::fallocate(
            file,
            rustix::fs::FallocateFlags::KEEP_SIZE,
            *reserved,
            RESERVE_BYTES,
        );
        #[cfg(not(target_os = "linux"))]
        let _ = file;
        *reserved += RESERVE_BYTES;
    }
}

/// The unnamed temporary file, closed on a thread of its own: closing the last handle of an
/// unnamed file makes the system free its pages and blocks, about 12 ms for 100 MB on ext4 (most
/// of a `summary`'s time after its last record), which the command then spends writing its report
/// instead. Without a thread it is closed here.
pub(super) struct Unnamed(Option<File>);

impl Drop for Unnamed {
    fn drop(&mut self) {
        if let Some(file) = self.0.take() {
            // A thread that cannot start drops the closure, and the file with it, here.
            let _ = std::thread::Builder::new()
                .name("diagwire-spill-close".into())
                .spawn(move || drop(file));
        }
    }
}

/// Collects a gzip'd archive's file data during the pass. A failure to write ends the collecting:
/// [`SpillWriter::finish`] then has nothing.
pub(super) struct SpillWriter {
    store: Option<Store>,
    len: u64,
    /// How far the temporary file's blocks are reserved.
    reserved: u64,
}

/// How much of the temporary file's disk space is reserved at once.
const RESERVE_BYTES: u64 = 32 << 20;

enum Store {
    Memory(Vec<u8>),
    Temp(BufWriter<File>),
}

impl SpillWriter {
    pub(super) fn new() -> Self {
        SpillWriter {
            store: Some(Store::Memory(Vec::new())),
            len: 0,
            reserved: 0,
        }
    }

    /// Stops collecting, as a failure to write does.
    pub(super) fn stop(&mut self) {
        self.store = None;
    }

    /// Whether data is still being collected.
    pub(super) fn active(&self) -> bool {
        self.store.is_some()
    }

    /// The offset the next bytes written get.
    pub(super) fn offset(&self) -> u64 {
        self.len
    }

    /// Appends `bytes`; on a failure, stops collecting.
    pub(super) fn write(&mut self, bytes: &[u8]) {
        let Some(store) = &mut self.store else {
            return;
        };
        let ok = match store {
            Store::Memory(kept) if kept.len() + bytes.len() <= MEMORY_BYTES => {
                kept.extend_from_slice(bytes);
                true
            }
            Store::Memory(kept) => {
                let reserved = &mut self.reserved;
                let end = (kept.len() + bytes.len()) as u64;
                let moved = tempfile::tempfile().and_then(|file| {
                    reserve(&file, reserved, end);
                    let mut out = BufWriter::with_capacity(256 << 10, file);
                    out.write_all(kept)?;
                    out.write_all(bytes)?;
                    Ok(out)
                });
                match moved {
                    Ok(out) => {
                        *store = Store::Temp(out);
                        true
                    }
                    Err(_) => false,
                }
            }
            Store::Temp(out) => {
                reserve(
                    out.get_ref(),
                    &mut self.reserved,
                    self.len + bytes.len() as u64,
                );
                out.write_all(bytes).is_ok()
            }
        };
        if ok {
            self.len += bytes.len() as u64;
        } else {
            self.store = None;
        }
    }

    /// The data collected, or `None` when collecting failed.
    pub(super) fn finish(self) -> Option<Spill> {
        match self.store? {
            Store::Memory(kept) => Some(Spill::Memory(kept)),
            Store::Temp(out) => out
                .into_inner()
                .ok()
                .map(|file| Spill::Temp(Unnamed(Some(file)))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_past_the_memory_budget_goes_to_a_temporary_file_and_reads_back() {
        let mut spill = SpillWriter::new();
        let small: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
        let large: Vec<u8> = (0..MEMORY_BYTES as u32 + 10)
            .map(|i| (i % 241) as u8)
            .collect();
        let at_small = spill.offset();
        spill.write(&small);
        let at_large = spill.offset();
        spill.write(&large);
        let spill = spill.finish().expect("the data is kept");
        assert!(matches!(spill, Spill::Temp(_)), "{spill:?}");
        assert_eq!(spill.read(at_small, small.len() as u64).unwrap(), small);
        assert_eq!(spill.read(at_large, large.len() as u64).unwrap(), large);
        assert_eq!(
            spill
                .read(at_large, large.len() as u64 + 1)
                .unwrap_err()
                .kind(),
            io::ErrorKind::UnexpectedEof
        );
    }

    #[test]
    fn data_within_the_memory_budget_stays_in_memory() {
        let mut spill = SpillWriter::new();
        spill.write(b"abc");
        spill.write(b"defg");
        let spill = spill.finish().expect("the data is kept");
        assert!(matches!(spill, Spill::Memory(_)), "{spill:?}");
        assert_eq!(spill.read(3, 4).unwrap(), b"defg");
        assert!(spill.read(5, 4).is_err());
    }
}
