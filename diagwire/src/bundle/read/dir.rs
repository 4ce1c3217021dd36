//! A directory bundle: finding its run directory, listing it without following links, and reading
//! each file again as it is yielded, refusing a file that was replaced by a link or a device since
//! the listing.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::run_dir::{find_run_dir, strip_run_dir};
use super::{
    BundleReader, Layout, Limits, ReadError, ReadErrorKind, manifest_run_id, too_large_file,
};

/// One entry of a directory's listing: a file to read, or why it is not read.
#[derive(Debug)]
pub(super) enum DirItem {
    File {
        rel: String,
        full: PathBuf,
        size: u64,
    },
    Error(ReadError),
}

#[cfg(unix)]
fn link_count(meta: &fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.nlink()
}

#[cfg(not(unix))]
fn link_count(_meta: &fs::Metadata) -> u64 {
    1
}

#[cfg(unix)]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_a: &fs::Metadata, _b: &fs::Metadata) -> bool {
    true
}

fn is_plain_file(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

pub(super) fn open_dir(path: &Path, limits: Limits) -> Result<BundleReader, ReadError> {
    let here = path.display().to_string();
    // The run directory is the top itself or one child holding MANIFEST.json; else look for node
    // directories in the whole listing.
    let mut walk_root = None;
    if is_plain_file(&path.join("MANIFEST.json")) {
        walk_root = Some(path.to_path_buf());
    } else {
        let listing = fs::read_dir(path)
            .map_err(|e| ReadError::new(ReadErrorKind::Io, &here, e.to_string()))?;
        let mut candidates = Vec::new();
        for entry in listing.flatten() {
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && is_plain_file(&entry.path().join("MANIFEST.json")) {
                if let Some(name) = entry.file_name().to_str() {
                    candidates.push(name.to_owned());
                }
            }
        }
        candidates.sort();
        match candidates.as_slice() {
            [one] => walk_root = Some(path.join(one)),
            [] => {}
            several => {
                return Err(ReadError::new(
                    ReadErrorKind::NotABundle,
                    here,
                    format!(
                        "not a bundle: the directory holds several run directories ({}); open \
                         one of them",
                        several.join(", ")
                    ),
                ));
            }
        }
    }
    let (run_dir, mut items, tail) = match walk_root {
        Some(dir) => {
            let (items, tail) = walk(&dir, limits);
            (dir, items, tail)
        }
        None => {
            let (items, tail) = walk(path, limits);
            let files: Vec<&str> = items
                .iter()
                .filter_map(|(rel, item)| {
                    matches!(item, DirItem::File { .. }).then_some(rel.as_str())
                })
                .collect();
            let found = find_run_dir(&files);
            let run = match found {
                Ok(run) => run,
                Err(why) => {
                    let nothing = items.is_empty() && tail.is_empty();
                    let message = if nothing {
                        "not a bundle: an empty directory".to_owned()
                    } else {
                        format!("not a bundle: the directory {why}")
                    };
                    return Err(ReadError::new(ReadErrorKind::NotABundle, here, message));
                }
            };
            let items = items
                .into_iter()
                .filter_map(|(rel, item)| match item {
                    DirItem::File { full, size, .. } => {
                        let inside = strip_run_dir(&rel, &run)?.to_owned();
                        let file = DirItem::File {
                            rel: inside.clone(),
                            full,
                            size,
                        };
                        Some((inside, file))
                    }
                    DirItem::Error(mut e) => {
                        e.path = e
                            .path
                            .as_deref()
                            .and_then(|p| strip_run_dir(p, &run))
                            .map(str::to_owned);
                        Some((rel, DirItem::Error(e)))
                    }
                })
                .collect();
            let dir = if run.is_empty() {
                path.to_path_buf()
            } else {
                path.join(&run)
            };
            (dir, items, tail)
        }
    };
    items.sort_by(|a, b| a.0.cmp(&b.0));
    let items: Vec<DirItem> = items.into_iter().map(|(_, item)| item).collect();
    let dir_name = fs::canonicalize(&run_dir)
        .ok()
        .as_deref()
        .and_then(Path::file_name)
        .or_else(|| run_dir.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| run_dir.display().to_string());
    // The manifest, read as the iteration reads it, names the run.
    let run_id = items
        .iter()
        .find_map(|item| match item {
            DirItem::File { rel, full, .. } if rel == "MANIFEST.json" => Some(full),
            _ => None,
        })
        .and_then(|full| read_dir_file(full, limits, limits.max_file_bytes).ok())
        .and_then(|bytes| manifest_run_id(&bytes))
        .unwrap_or_else(|| dir_name.clone());
    let file_count = items
        .iter()
        .filter(|i| matches!(i, DirItem::File { .. }))
        .count();
    let file_bytes = items
        .iter()
        .map(|i| match i {
            DirItem::File { size, .. } => *size,
            DirItem::Error(_) => 0,
        })
        .sum();
    Ok(BundleReader {
        source: path.to_path_buf(),
        run_id,
        dir_name,
        limits,
        layout: Layout::Dir(items),
        tail,
        file_count,
        file_bytes,
    })
}

/// Lists everything under `root` without following links: files and problems keyed by their path
/// relative to `root`, and problems with the directory as a whole.
fn walk(root: &Path, limits: Limits) -> (Vec<(String, DirItem)>, Vec<ReadError>) {
    let mut items = Vec::new();
    let mut tail = Vec::new();
    let mut seen = 0usize;
    let mut stack = vec![(root.to_path_buf(), String::new())];
    'walk: while let Some((dir, prefix)) = stack.pop() {
        let listing = match fs::read_dir(&dir) {
            Ok(listing) => listing,
            Err(e) => {
                let at = dir.display().to_string();
                items.push((
                    prefix,
                    DirItem::Error(ReadError::new(ReadErrorKind::Io, at, e.to_string())),
                ));
                continue;
            }
        };
        let mut entries: Vec<_> = Vec::new();
        for entry in listing {
            match entry {
                Ok(entry) => entries.push(entry),
                Err(e) => {
                    let at = dir.display().to_string();
                    items.push((
                        prefix.clone(),
                        DirItem::Error(ReadError::new(ReadErrorKind::Io, at, e.to_string())),
                    ));
                }
            }
        }
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            seen += 1;
            if seen > limits.max_entries {
                tail.push(ReadError::new(
                    ReadErrorKind::TooManyEntries,
                    root.display().to_string(),
                    format!(
                        "holds more than {} entries (the limit); the rest were not read",
                        limits.max_entries
                    ),
                ));
                break 'walk;
            }
            let full = entry.path();
            let at = full.display().to_string();
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                let rel = format!("{prefix}{}", name.to_string_lossy());
                let e = ReadError::new(
                    ReadErrorKind::UnsafePath,
                    at,
                    "the file name is not valid UTF-8",
                );
                items.push((rel, DirItem::Error(e)));
                continue;
            };
            let rel = format!("{prefix}{name}");
            if name.contains('\\') {
                let e = ReadError::new(
                    ReadErrorKind::UnsafePath,
                    at,
                    "the file name contains a backslash",
                );
                items.push((rel.clone(), DirItem::Error(e.about(rel))));
                continue;
            }
            let meta = match fs::symlink_metadata(&full) {
                Ok(meta) => meta,
                Err(e) => {
                    let e = ReadError::new(ReadErrorKind::Io, at, e.to_string()).about(&rel);
                    items.push((rel, DirItem::Error(e)));
                    continue;
                }
            };
            let kind = meta.file_type();
            if kind.is_symlink() {
                let target = fs::read_link(&full)
                    .map(|t| format!(" to `{}`", t.display()))
                    .unwrap_or_default();
                let message = format!("a symbolic link{target}; links are not followed");
                let e = ReadError::new(ReadErrorKind::Link, at, message).about(&rel);
                items.push((rel, DirItem::Error(e)));
            } else if kind.is_dir() {
                stack.push((full, format!("{rel}/")));
            } else if !kind.is_file() {
                let message =
                    "not a regular file or directory (a device, fifo or socket); not read";
                let e = ReadError::new(ReadErrorKind::Io, at, message).about(&rel);
                items.push((rel, DirItem::Error(e)));
            } else if link_count(&meta) > 1 {
                let message = format!(
                    "a hard link (the file has {} names); links are not followed",
                    link_count(&meta)
                );
                let e = ReadError::new(ReadErrorKind::Link, at, message).about(&rel);
                items.push((rel, DirItem::Error(e)));
            } else {
                let size = meta.len();
                items.push((rel.clone(), DirItem::File { rel, full, size }));
            }
        }
    }
    (items, tail)
}

/// Reads one file of a directory bundle, at most `max` bytes, checking again that it is a plain
/// file (it may have been replaced since the listing).
pub(super) fn read_dir_file(full: &Path, limits: Limits, max: u64) -> Result<Vec<u8>, ReadError> {
    let at = || full.display().to_string();
    let io_error = |e: io::Error| ReadError::new(ReadErrorKind::Io, at(), e.to_string());
    let before = fs::symlink_metadata(full).map_err(io_error)?;
    if before.file_type().is_symlink() {
        return Err(ReadError::new(
            ReadErrorKind::Link,
            at(),
            "became a symbolic link while the bundle was read; links are not followed",
        ));
    }
    if !before.is_file() {
        return Err(ReadError::new(
            ReadErrorKind::Io,
            at(),
            "no longer a regular file",
        ));
    }
    if before.len() > limits.max_file_bytes {
        return Err(too_large_file(at(), before.len(), limits));
    }
    let file = File::open(full).map_err(io_error)?;
    let after = file.metadata().map_err(io_error)?;
    if !after.is_file() || !same_file(&before, &after) || link_count(&after) > 1 {
        return Err(ReadError::new(
            ReadErrorKind::Link,
            at(),
            "was replaced while the bundle was read; not followed",
        ));
    }
    let cap = max.min(limits.max_file_bytes);
    let mut bytes = Vec::with_capacity(usize::try_from(after.len().min(cap)).unwrap_or(0));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > limits.max_file_bytes {
        return Err(too_large_file(at(), bytes.len() as u64, limits));
    }
    Ok(bytes)
}
