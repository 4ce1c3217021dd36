//! Reading the simulator's directory: its entries (links reported, never followed) and its files
//! within a size cap, as bytes or JSON, and the simulator's own names of boot and finalize files.

use std::fs;
use std::io::{self, Read};
use std::path::Path;

use serde_json::Value;

use diagwire::ProblemKind;
use diagwire::layout::FileKind;
use diagwire::problem::ReadErrorKind;

/// Largest file the upgrade reads; a bigger one is listed and skipped.
pub(crate) const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Largest `MANIFEST.json` or `boot.json` that recognition reads.
pub(crate) const MAX_PROBE_BYTES: u64 = 1024 * 1024;
/// Deepest directory level listed inside a folder outside the layout.
pub(crate) const MAX_LIST_DEPTH: usize = 16;

pub(crate) fn is_regular_file(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

/// The bytes of a file, or `None` when it is larger than `limit`.
pub(crate) fn read_limited(path: &Path, limit: u64) -> io::Result<Option<Vec<u8>>> {
    let file = fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

/// A file's JSON, or the kind of problem and why it could not be read.
pub(crate) fn read_json(path: &Path, limit: u64) -> Result<Value, (ProblemKind, String)> {
    match read_limited(path, limit) {
        Err(e) => Err((
            ProblemKind::Read(ReadErrorKind::Io),
            format!("unreadable ({e})"),
        )),
        Ok(None) => Err((
            ProblemKind::Read(ReadErrorKind::TooLarge),
            format!("larger than {limit} bytes"),
        )),
        Ok(Some(bytes)) => serde_json::from_slice(&bytes)
            .map_err(|e| (ProblemKind::Encoding, format!("not JSON ({e})"))),
    }
}

/// A boot or finalize file of a node in the simulator's own naming: `boot.json` / `finalize.json`
/// is number 0, `boot-<n>.json` / `finalize-<n>.json` number `n`, written with any number of digits
/// (`boot-001.json`). This reads only the simulator's input; the bundle's names are the layout's,
/// which the writer produces.
pub(crate) fn sim_record_file(name: &str) -> Option<(FileKind, u64)> {
    let stem = name.strip_suffix(".json")?;
    let (base, n) = match stem.split_once('-') {
        None => (stem, 0),
        Some((base, digits)) => {
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (base, digits.parse().ok()?)
        }
    };
    match base {
        "boot" => Some((FileKind::Boot, n)),
        "finalize" => Some((FileKind::Finalize, n)),
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    File,
    Dir,
    Symlink,
    Other,
}

pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) utf8: bool,
    pub(crate) kind: EntryKind,
}

/// The entries of a directory, sorted by name; symbolic links are reported as such, not followed.
pub(crate) fn entries(dir: &Path) -> io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let kind = match entry.file_type() {
            Ok(t) if t.is_symlink() => EntryKind::Symlink,
            Ok(t) if t.is_dir() => EntryKind::Dir,
            Ok(t) if t.is_file() => EntryKind::File,
            _ => EntryKind::Other,
        };
        let raw = entry.file_name();
        let (name, utf8) = match raw.to_str() {
            Some(s) => (s.to_owned(), true),
            None => (raw.to_string_lossy().into_owned(), false),
        };
        out.push(Entry { name, utf8, kind });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}
