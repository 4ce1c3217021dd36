//! The one pass over an archive: recognizing it by its magic bytes, judging each entry from its
//! header, keeping each regular file's data (`spill.rs`), finding the run directory, keeping the
//! last copy of a duplicate, and the list of files and errors, in path order, that `iter.rs` yields.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek};
use std::path::Path;

use super::conflicts::{Node, path_conflicts};
use super::inflate::stream_of;
use super::run_dir::{find_run_dir, strip_run_dir};
use super::spill::{Spill, SpillWriter};
use super::tar_reader::{RawEntry, Walker, is_directory, normalize_entry_name};
use super::{BundleReader, Layout, Limits, ReadError, ReadErrorKind, manifest_run_id};

/// The first two bytes of every gzip member.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// One entry of the run directory to yield: a file to read or an error.
#[derive(Debug)]
pub(super) struct ArchiveItem {
    /// Where the entry's data starts in the uncompressed tar stream: identifies the entry.
    pub(super) data_pos: u64,
    pub(super) what: ArchiveAction,
}

/// What to yield for an [`ArchiveItem`].
#[derive(Debug)]
pub(super) enum ArchiveAction {
    File {
        rel: String,
        size: u64,
        location: String,
        /// Where its data is in the pass's [`Spill`].
        at: u64,
    },
    Error(ReadError),
}

/// What the pass learned about one entry.
enum Indexed {
    File {
        name: String,
        size: u64,
        location: String,
        at: u64,
    },
    /// A regular file over the per-file limit: an error, but it still tells where the run
    /// directory is.
    TooLarge {
        name: String,
        error: ReadError,
    },
    Error(ReadError),
    /// An entry passed over quietly (a directory).
    Quiet,
}

pub(super) fn open_archive(path: &Path, limits: Limits) -> Result<BundleReader, ReadError> {
    open_archive_keeping(path, limits, true)
}

/// [`open_archive`]; `keep` false for a pass that does not keep the files' data (what happens when
/// no temporary file can be written), so that they are read by another pass.
pub(super) fn open_archive_keeping(
    path: &Path,
    limits: Limits,
    keep: bool,
) -> Result<BundleReader, ReadError> {
    let here = path.display().to_string();
    let io_error = |e: io::Error| ReadError::new(ReadErrorKind::Io, &here, e.to_string());
    let mut magic = [0u8; 512];
    let mut got = 0;
    // Opened once: the pass reads from the start again through the same handle.
    let mut file = File::open(path).map_err(io_error)?;
    while got < magic.len() {
        match file.read(&mut magic[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_error(e)),
        }
    }
    file.seek(io::SeekFrom::Start(0)).map_err(io_error)?;
    let gzip = if got >= 2 && magic[..2] == GZIP_MAGIC {
        true
    } else if got == 512 && &magic[257..262] == b"ustar" {
        false
    } else {
        return Err(ReadError::new(
            ReadErrorKind::NotABundle,
            here,
            format!("not a bundle: {}", not_an_archive(&magic[..got])),
        ));
    };

    // The one pass: index every entry, and keep the data of the regular files where they can be
    // read again in any order (a plain tar is read in place).
    let mut source = if gzip {
        None
    } else {
        Some(file.try_clone().map_err(io_error)?)
    };
    let mut spill = gzip.then(SpillWriter::new);
    if !keep {
        if let Some(spill) = &mut spill {
            spill.stop();
        }
        source = None;
    }
    let stream = stream_of(file, gzip).map_err(io_error)?;
    let mut walker = Walker::new(stream, limits);
    let mut indexed: Vec<(u64, Indexed)> = Vec::new();
    // The paths of the entries, to find paths that are both a file and a directory.
    let mut nodes: Vec<Node> = Vec::new();
    let mut tail: Vec<ReadError> = Vec::new();
    let mut entries = 0usize;
    let mut ended = false;
    // The failure that ended the pass inside an entry.
    let mut broken: Option<ReadError> = None;
    // The run id each `MANIFEST.json` where a run directory may be names (the last copy's), read
    // in this pass so that the reader knows the run before yielding a file.
    let mut manifest_runs: HashMap<String, Option<String>> = HashMap::new();
    loop {
        let entry = match walker.next_entry() {
            Ok(Some(entry)) => entry,
            Ok(None) => {
                ended = true;
                break;
            }
            Err((kind, message)) => {
                if entries == 0 && kind == ReadErrorKind::Tar {
                    let message = if walker.pos == 0 {
                        "not a bundle: the gzip data inflates to nothing (no tar archive inside)"
                            .to_owned()
                    } else {
                        format!("not a bundle: the data is not a tar archive ({message})")
                    };
                    return Err(ReadError::new(ReadErrorKind::NotABundle, here, message));
                }
                tail.push(ReadError::new(kind, &here, message));
                break;
            }
        };
        entries += 1;
        if entries > limits.max_entries {
            tail.push(ReadError::new(
                ReadErrorKind::TooManyEntries,
                &here,
                format!(
                    "the archive holds more than {} entries (the limit); the rest were not read",
                    limits.max_entries
                ),
            ));
            break;
        }
        let shown = String::from_utf8_lossy(&entry.name).into_owned();
        let location = format!("{here}!{shown}");
        let usable = match normalize_entry_name(&entry.name) {
            Ok(name) if !name.is_empty() && entry.name_problem.is_none() => Some(name),
            _ => None,
        };
        if let Some((kind, message)) = entry.problem {
            // The header itself is unusable: where the next entry starts is unknown.
            let mut error = ReadError::new(kind, location, message);
            if let Some(name) = usable {
                error = error.about(name);
            }
            broken = Some(error.clone());
            indexed.push((entry.data_pos, Indexed::Error(error)));
            break;
        }
        let item = classify_entry(&entry, &location, limits).map(|item| match item {
            // Remember which path a refused entry had, so that it still counts as present.
            Indexed::Error(e) => match normalize_entry_name(&entry.name) {
                Ok(name) if !name.is_empty() => Indexed::Error(e.about(name)),
                _ => Indexed::Error(e),
            },
            other => other,
        });
        let mut item = item.unwrap_or(Indexed::Quiet);
        let manifest = match &item {
            Indexed::File { name, size, .. } if may_be_manifest(name) => {
                Some((name.clone(), *size))
            }
            _ => None,
        };
        if let Indexed::File { at, .. } = &mut item {
            *at = match &spill {
                Some(spill) => spill.offset(),
                None => entry.data_pos,
            };
        }
        let keeping =
            matches!(item, Indexed::File { .. }) && spill.as_ref().is_some_and(|s| s.active());
        let at = indexed.len();
        indexed.push((entry.data_pos, item));
        if let Some(name) = &usable {
            let dir = is_directory(&entry);
            nodes.push(Node::new(name, dir, at, &shown));
        }
        // Move past the data now, so that damage inside it is found and located here. Data that
        // would pass the total limit is not read at all.
        let left = std::mem::take(&mut walker.skip);
        let moved = if walker.pos.saturating_add(left) > limits.max_total_bytes {
            Err((
                ReadErrorKind::TooLarge,
                format!(
                    "the entry's header declares {} bytes of data, which would take the archive \
                     past the total limit of {} bytes; reading stopped here",
                    entry.size, limits.max_total_bytes
                ),
            ))
        } else if keeping {
            let spill = spill
                .as_mut()
                .expect("OK because `keeping` says it is there");
            walker.skip = left;
            match manifest {
                // A manifest is read whole (it is within the per-file limit) so that the run id it
                // names is known at open, and kept like any other file.
                Some((name, size)) => walker.read_data(size).map(|bytes| {
                    manifest_runs.insert(name, manifest_run_id(&bytes));
                    spill.write(&bytes);
                }),
                None => walker.copy_data(entry.size, &mut |bytes| spill.write(bytes)),
            }
            .and_then(|()| {
                let padding = std::mem::take(&mut walker.skip);
                walker.discard(padding)
            })
        } else if let Some((name, size)) = manifest {
            walker.skip = left;
            walker.read_data(size).and_then(|bytes| {
                manifest_runs.insert(name, manifest_run_id(&bytes));
                let padding = std::mem::take(&mut walker.skip);
                walker.discard(padding)
            })
        } else {
            walker.discard(left)
        };
        if let Err((kind, message)) = moved {
            let error = ReadError::new(kind, location, message);
            broken = Some(error.clone());
            let file = matches!(
                indexed[at].1,
                Indexed::File { .. } | Indexed::TooLarge { .. }
            );
            indexed[at].1 = match usable {
                // A file cut by the total limit still tells where the run directory is.
                Some(name) if file && kind == ReadErrorKind::TooLarge => {
                    Indexed::TooLarge { name, error }
                }
                Some(name) => Indexed::Error(error.about(name)),
                None => Indexed::Error(error),
            };
            break;
        }
    }
    if ended && gzip {
        if let Err((kind, mut message)) = walker.drain() {
            if kind == ReadErrorKind::Gzip {
                // A damaged trailer, or bytes after the last member that are not a gzip member.
                message.push_str(", after the end of the tar archive");
            }
            tail.push(ReadError::new(kind, &here, message));
        }
    }
    drop(walker);
    let mut conflicts = path_conflicts(&nodes, &here);
    drop(nodes);

    // Find the run directory among the regular files.
    let names: Vec<&str> = indexed
        .iter()
        .filter_map(|(_, item)| match item {
            Indexed::File { name, .. } | Indexed::TooLarge { name, .. } => Some(name.as_str()),
            Indexed::Error(_) | Indexed::Quiet => None,
        })
        .collect();
    let run_dir = match find_run_dir(&names) {
        Ok(run_dir) => Some(run_dir),
        Err(why) => {
            let capped = |e: &ReadError| {
                matches!(
                    e.kind,
                    ReadErrorKind::TooLarge | ReadErrorKind::TooManyEntries
                )
            };
            if broken.iter().chain(&tail).any(capped) {
                // A cap stopped the pass before the run directory showed: the bundle opens,
                // yields no file, and reports the cap like any other archive past it.
                None
            } else {
                // A damaged archive says more about itself than "not a bundle".
                let damage = broken.or_else(|| tail.first().cloned());
                return Err(damage.unwrap_or_else(|| {
                    ReadError::new(
                        ReadErrorKind::NotABundle,
                        &here,
                        format!("not a bundle: the archive {why}"),
                    )
                }));
            }
        }
    };
    let inside = |name: &str| -> Option<String> {
        strip_run_dir(name, run_dir.as_deref()?).map(str::to_owned)
    };

    // Keep the files of the run directory (the last copy of a duplicate) and every error.
    let mut last_copy: HashMap<&str, usize> = HashMap::new();
    for (i, (_, item)) in indexed.iter().enumerate() {
        if let Indexed::File { name, .. } = item {
            if inside(name).is_some() {
                last_copy.insert(name.as_str(), i);
            }
        }
    }
    // By index rather than by name, so that no name is copied for it.
    let mut is_last_copy = vec![false; indexed.len()];
    for i in last_copy.into_values() {
        is_last_copy[i] = true;
    }
    let mut items = Vec::with_capacity(indexed.len());
    for (i, (data_pos, item)) in indexed.into_iter().enumerate() {
        let what = match item {
            Indexed::Quiet => None,
            Indexed::Error(e) => Some(ArchiveAction::Error(ReadError {
                path: e.path.as_deref().and_then(inside),
                ..e
            })),
            Indexed::TooLarge { error, name } => Some(ArchiveAction::Error(ReadError {
                path: inside(&name),
                ..error
            })),
            Indexed::File {
                name,
                size,
                location,
                at,
            } => match inside(&name) {
                None => None,
                Some(rel) if !is_last_copy[i] => Some(ArchiveAction::Error(
                    ReadError::new(
                        ReadErrorKind::Tar,
                        location,
                        "a duplicate entry; a later entry with the same path replaces it",
                    )
                    .about(rel),
                )),
                Some(rel) => Some(ArchiveAction::File {
                    rel,
                    size,
                    location,
                    at,
                }),
            },
        };
        if let Some(what) = what {
            items.push(ArchiveItem { data_pos, what });
        }
        if let Some(e) = conflicts.remove(&i) {
            let what = ArchiveAction::Error(ReadError {
                path: e.path.as_deref().and_then(inside),
                ..e
            });
            items.push(ArchiveItem { data_pos, what });
        }
    }
    sort_by_path(&mut items);
    let file_count = items
        .iter()
        .filter(|i| matches!(i.what, ArchiveAction::File { .. }))
        .count();
    let file_bytes = items
        .iter()
        .map(|i| match &i.what {
            ArchiveAction::File { size, .. } => *size,
            ArchiveAction::Error(_) => 0,
        })
        .sum();
    let manifest_run = run_dir.as_deref().and_then(|dir| {
        let name = match dir {
            "" => "MANIFEST.json".to_owned(),
            dir => format!("{dir}/MANIFEST.json"),
        };
        manifest_runs.remove(&name).flatten()
    });
    let dir_name = match run_dir {
        Some(run_dir) if !run_dir.is_empty() => match run_dir.rsplit_once('/') {
            Some((_, name)) => name.to_owned(),
            None => run_dir,
        },
        _ => archive_stem(path),
    };
    let run_id = manifest_run.unwrap_or_else(|| dir_name.clone());
    Ok(BundleReader {
        source: path.to_path_buf(),
        run_id,
        dir_name,
        limits,
        layout: Layout::Archive {
            gzip,
            items,
            spill: match spill {
                Some(spill) => spill.finish(),
                None => source.take().map(Spill::Source),
            },
        },
        tail,
        file_count,
        file_bytes,
    })
}

/// Whether an entry is a `MANIFEST.json` where a run directory may be (the top, or at most two
/// levels down).
fn may_be_manifest(name: &str) -> bool {
    (name == "MANIFEST.json" || name.ends_with("/MANIFEST.json")) && name.matches('/').count() <= 2
}

/// What a file that is neither a gzip'd nor a plain tar archive is, from its first bytes.
fn not_an_archive(start: &[u8]) -> String {
    let known: [(&[u8], &str); 6] = [
        (b"PK\x03\x04", "a zip archive"),
        (b"PK\x05\x06", "an empty zip archive"),
        (b"BZh", "a bzip2-compressed file"),
        (b"\xfd7zXZ\x00", "an xz-compressed file"),
        (b"\x28\xb5\x2f\xfd", "a zstd-compressed file"),
        (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    ];
    if start.is_empty() {
        return "an empty file".to_owned();
    }
    match known.iter().find(|(magic, _)| start.starts_with(magic)) {
        Some((_, what)) => format!("{what}; bundles are gzip'd or plain tar archives"),
        None => "neither a directory nor a gzip'd or plain tar archive".to_owned(),
    }
}

/// What to do with one archive entry, judged from its header; `None` to pass over it quietly.
fn classify_entry(entry: &RawEntry, location: &str, limits: Limits) -> Option<Indexed> {
    let error =
        |kind, message: String| Some(Indexed::Error(ReadError::new(kind, location, message)));
    if let Some(problem) = &entry.name_problem {
        return error(ReadErrorKind::UnsafePath, problem.clone());
    }
    let name = match normalize_entry_name(&entry.name) {
        Ok(name) => name,
        Err(why) => return error(ReadErrorKind::UnsafePath, why.to_owned()),
    };
    let target = || {
        entry
            .link
            .as_deref()
            .map(|l| format!(" to `{}`", String::from_utf8_lossy(l)))
            .unwrap_or_default()
    };
    match entry.kind {
        tar::EntryType::Symlink => error(
            ReadErrorKind::Link,
            format!("a symbolic link{}; links are not followed", target()),
        ),
        tar::EntryType::Link => error(
            ReadErrorKind::Link,
            format!("a hard link{}; links are not followed", target()),
        ),
        tar::EntryType::Directory => None,
        tar::EntryType::Regular | tar::EntryType::Continuous => {
            if entry.name.ends_with(b"/") && entry.size == 0 {
                // An old-style directory entry.
                None
            } else if name.is_empty() {
                error(
                    ReadErrorKind::UnsafePath,
                    "the entry name is empty".to_owned(),
                )
            } else if entry.size > limits.max_file_bytes {
                Some(Indexed::TooLarge {
                    name,
                    error: ReadError::new(
                        ReadErrorKind::TooLarge,
                        location,
                        format!(
                            "the entry is {} bytes, over the per-file limit of {} bytes; not read",
                            entry.size, limits.max_file_bytes
                        ),
                    ),
                })
            } else {
                Some(Indexed::File {
                    name,
                    size: entry.size,
                    location: location.to_owned(),
                    at: 0,
                })
            }
        }
        other => {
            let what = match other {
                tar::EntryType::Char => "a character device".to_owned(),
                tar::EntryType::Block => "a block device".to_owned(),
                tar::EntryType::Fifo => "a fifo".to_owned(),
                tar::EntryType::GNUSparse => "a sparse file".to_owned(),
                other => format!("an entry of unknown type {:?}", char::from(other.as_byte())),
            };
            error(
                ReadErrorKind::Tar,
                format!("{what}, which is not supported; not read"),
            )
        }
    }
}

/// The run id of an archive whose top level is the run directory: its file name without
/// `.tar.gz`, `.tgz`, `.tar` or `.gz`.
fn archive_stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for suffix in [".tar.gz", ".tgz", ".tar", ".gz"] {
        if let Some(stem) = name.strip_suffix(suffix) {
            if !stem.is_empty() {
                return stem.to_owned();
            }
        }
    }
    name
}

/// Puts the items of an archive whose files are not in path order into path order, as a directory
/// yields them (an error stays with the path it is about), so that a bundle reads the same, record
/// for record, from a directory and from any archive of it. Archives written in path order (by the
/// collector and by `write_tar_gz`) are left as they are and read in one pass.
fn sort_by_path(items: &mut [ArchiveItem]) {
    fn key(item: &ArchiveItem) -> &str {
        match &item.what {
            ArchiveAction::File { rel, .. } => rel,
            ArchiveAction::Error(e) => e.path.as_deref().unwrap_or(""),
        }
    }
    let files: Vec<&str> = items
        .iter()
        .filter(|i| matches!(i.what, ArchiveAction::File { .. }))
        .map(key)
        .collect();
    if files.windows(2).all(|w| w[0] <= w[1]) {
        return;
    }
    items.sort_by(|a, b| key(a).cmp(key(b)));
}
