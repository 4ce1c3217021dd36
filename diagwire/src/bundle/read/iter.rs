//! Yielding the files: a directory's files read one at a time within the total cap, an archive's
//! from the data its one pass kept (or, when it could keep none, by another pass matched to its
//! index), and the problems with the bundle as a whole last.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;

/// Without the data of the one pass (no temporary file could be written): the most bytes of files
/// met before their turn that an archive read out of its order keeps in memory; past it, the files
/// are read again by a new pass over the archive.
pub(super) const EARLY_BYTES: u64 = 32 << 20;

use super::dir::{DirItem, read_dir_file};
use super::index::{ArchiveAction, ArchiveItem, Locations};
use super::inflate::{Fail, stream_of};
use super::spill::Spill;
use super::tar_reader::Walker;
use super::{
    BundleFile, BundleReader, Layout, ReadError, ReadErrorKind, Stream, StreamFile, too_large_total,
};

impl Iterator for Stream<'_> {
    type Item = Result<StreamFile, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.files.next()?;
        Some(item.map(|file| {
            let size = file.bytes.len() as u64;
            self.done += size;
            StreamFile {
                path: file.path,
                node: file.node,
                role: file.role,
                encoding: file.encoding,
                location: file.location,
                size,
                bytes: io::Cursor::new(file.bytes),
            }
        }))
    }
}

/// The iteration over a bundle's files: where it is in the layout and the tail, the bytes read from
/// a directory, and the open second pass over an archive that kept no data.
pub(super) struct Files<'a> {
    reader: &'a BundleReader,
    /// The next item of the layout.
    next: usize,
    /// The next item of the tail.
    tail_next: usize,
    /// Bytes read so far from a directory.
    dir_total: u64,
    /// The second pass over an archive that kept no data, and the data position of the last entry it read.
    walker: Option<Walker>,
    walker_at: u64,
    /// For an archive read in path order rather than archive order: the data positions of the
    /// files not yielded yet, and files met early on the way to another, kept for their turn
    /// (at most [`EARLY_BYTES`] in all).
    pending: Option<HashSet<u64>>,
    early: HashMap<u64, Vec<u8>>,
    early_bytes: u64,
    /// Set when reading cannot go on; only the tail is left.
    stopped: bool,
}

impl Iterator for Files<'_> {
    type Item = Result<BundleFile, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if !self.stopped {
            let item = match &self.reader.layout {
                Layout::Dir(items) => self.next_dir(items),
                Layout::Archive {
                    gzip,
                    items,
                    locations,
                    spill,
                    origin,
                } => self.next_archive(*gzip, items, locations, spill.as_ref(), origin),
            };
            if item.is_some() {
                return item;
            }
            self.stopped = true;
            self.walker = None;
        }
        let e = self.reader.tail.get(self.tail_next)?;
        self.tail_next += 1;
        Some(Err(e.clone()))
    }
}

impl<'a> Files<'a> {
    /// The files of `reader` from the start.
    pub(super) fn new(reader: &'a BundleReader) -> Self {
        Files {
            reader,
            next: 0,
            tail_next: 0,
            dir_total: 0,
            walker: None,
            walker_at: 0,
            pending: None,
            early: HashMap::new(),
            early_bytes: 0,
            stopped: false,
        }
    }

    fn next_dir(&mut self, items: &[DirItem]) -> Option<Result<BundleFile, ReadError>> {
        let item = items.get(self.next)?;
        self.next += 1;
        Some(match item {
            DirItem::Error(e) => Err(e.clone()),
            DirItem::File { rel, full, .. } => {
                let limits = self.reader.limits;
                let room = limits.max_total_bytes.saturating_sub(self.dir_total);
                match read_dir_file(full, limits, room) {
                    Ok(bytes) if bytes.len() as u64 > room => {
                        self.stopped = true;
                        self.next = items.len();
                        Err(too_large_total(full.display().to_string(), limits))
                    }
                    Ok(bytes) => {
                        self.dir_total += bytes.len() as u64;
                        let location = full.display().to_string();
                        Ok(BundleFile::new(rel.clone(), location, bytes))
                    }
                    Err(e) => Err(e.about(rel.clone())),
                }
            }
        })
    }

    fn next_archive(
        &mut self,
        gzip: bool,
        items: &[ArchiveItem],
        locations: &Locations,
        spill: Option<&Spill>,
        origin: &File,
    ) -> Option<Result<BundleFile, ReadError>> {
        let item = items.get(self.next)?;
        self.next += 1;
        let (rel, size, at, location) = match &item.what {
            ArchiveAction::Error(e) => return Some(Err(ReadError::clone(e))),
            ArchiveAction::File { rel, size, raw, at } => {
                (rel, *size, *at, locations.of(rel, raw.as_deref()))
            }
        };
        let result = match spill {
            Some(spill) => spill
                .read(at, size)
                .map_err(|e| (ReadErrorKind::Io, e.to_string())),
            None => self.read_archive_file(gzip, origin, items, item.data_pos, size),
        };
        Some(match result {
            Ok(bytes) => Ok(BundleFile::new(rel.clone(), location, bytes)),
            Err((kind, message)) => {
                // The archive changed or broke since it was opened: stop here.
                self.next = items.len();
                self.walker = None;
                Err(ReadError::new(kind, location, message).about(rel.clone()))
            }
        })
    }

    fn read_archive_file(
        &mut self,
        gzip: bool,
        origin: &File,
        items: &[ArchiveItem],
        data_pos: u64,
        size: u64,
    ) -> Result<Vec<u8>, Fail> {
        let pending = self.pending.get_or_insert_with(|| {
            items
                .iter()
                .filter(|i| matches!(i.what, ArchiveAction::File { .. }))
                .map(|i| i.data_pos)
                .collect()
        });
        pending.remove(&data_pos);
        if let Some(bytes) = self.early.remove(&data_pos) {
            self.early_bytes -= bytes.len() as u64;
            return Ok(bytes);
        }
        if self.walker.is_some() && self.walker_at >= data_pos {
            // The entry is behind this pass (the archive is read in path order, not its own).
            self.walker = None;
        }
        if self.walker.is_none() {
            let stream = stream_of(origin, gzip).map_err(|e| (ReadErrorKind::Io, e.to_string()))?;
            self.walker = Some(Walker::new(stream, self.reader.limits));
            self.walker_at = 0;
        }
        let walker = self.walker.as_mut().expect("OK because it was just set");
        loop {
            let changed = || {
                (
                    ReadErrorKind::Io,
                    "the archive changed while it was being read".to_owned(),
                )
            };
            let entry = walker.next_entry()?.ok_or_else(changed)?;
            self.walker_at = entry.data_pos;
            if entry.data_pos == data_pos {
                if entry.size != size {
                    return Err(changed());
                }
                return walker.read_data(size);
            }
            if entry.data_pos > data_pos {
                return Err(changed());
            }
            let wanted = self
                .pending
                .as_ref()
                .is_some_and(|p| p.contains(&entry.data_pos));
            if wanted && self.early_bytes + entry.size <= EARLY_BYTES {
                let bytes = walker.read_data(entry.size)?;
                self.early_bytes += bytes.len() as u64;
                self.early.insert(entry.data_pos, bytes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::super::index::open_archive_keeping;
    use super::super::{BundleReader, Limits};

    /// A gzip'd or plain tar of `run-1/<name>` entries in the order given, each `size` bytes of
    /// its name's first letter.
    fn archive(names: &[&str], size: usize, gzip: bool) -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        for name in names {
            let data = vec![name.as_bytes()[0]; size];
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_entry_type(tar::EntryType::Regular);
            tar.append_data(&mut header, format!("run-1/{name}"), &data[..])
                .expect("append");
        }
        let tar = tar.into_inner().expect("tar");
        if !gzip {
            return tar;
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&tar).expect("gzip");
        gz.finish().expect("gzip")
    }

    const SORTED: [&str; 5] = [
        "MANIFEST.json",
        "a/events/events-000001.json",
        "a/events/events-000002.json",
        "b/boot.json",
        "c/boot.json",
    ];

    /// Opens the archive of `SORTED` in reverse order with `open`, and checks it yields `SORTED`
    /// in path order, each file whole.
    fn check_reverse(size: usize, gzip: bool, open: fn(&std::path::Path) -> BundleReader) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("run-1.tar.gz");
        let reversed: Vec<&str> = SORTED.iter().rev().copied().collect();
        std::fs::write(&path, archive(&reversed, size, gzip)).expect("write");
        let mut reader = open(&path);
        let got: Vec<(String, usize, u8)> = reader
            .files()
            .map(|f| f.expect("file"))
            .map(|f| (f.path, f.bytes.len(), f.bytes[0]))
            .collect();
        let want: Vec<(String, usize, u8)> = SORTED
            .iter()
            .map(|n| (n.to_string(), size, n.as_bytes()[0]))
            .collect();
        assert_eq!(got, want, "{size} bytes each, gzip {gzip}");
    }

    fn without_keeping(path: &std::path::Path) -> BundleReader {
        open_archive_keeping(path, Limits::default(), false).expect("opens")
    }

    fn by_default(path: &std::path::Path) -> BundleReader {
        BundleReader::open(path, Limits::default()).expect("opens")
    }

    #[test]
    fn without_a_place_to_keep_the_files_those_met_early_are_kept_in_memory() {
        check_reverse(100, true, without_keeping);
    }

    #[test]
    fn without_a_place_to_keep_the_files_those_beyond_the_memory_budget_are_read_by_another_pass() {
        // Five files of 12 MiB in reverse order: only two fit the 32 MiB kept in memory.
        check_reverse(12 << 20, true, without_keeping);
    }

    #[test]
    fn a_plain_tar_is_read_in_place_in_path_order() {
        check_reverse(3 << 20, false, by_default);
    }
}
