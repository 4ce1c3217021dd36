//! Reading a schema tree from disk the way bundles are read: regular files only, links never
//! followed, every file and every tree under a size cap, and every refusal located by its path.
//!
//! A schema tree may come from whoever opened a pull request, so the generator and the schema review
//! read it through here: a FIFO or a device is refused from `symlink_metadata` before anything
//! opens it, a symbolic link is a located problem (never followed, whether it names `/`, `.` or
//! `/dev/zero`), and a file past its cap is refused instead of read until memory runs out.

use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest schema file read (the contract's largest is under 150 KiB).
pub const FILE_CAP: u64 = 2 << 20;
/// The most bytes read from one folder of schema files.
pub const TREE_CAP: u64 = 16 << 20;
/// The most entries a listed folder may hold.
pub const ENTRY_CAP: usize = 4096;
/// The largest small text file read (`VERSION`).
pub const SMALL_CAP: u64 = 1024;
/// The largest number table, changelog or generated file read.
pub const TEXT_CAP: u64 = 16 << 20;

/// Why a file or folder of a schema tree was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    /// The path, as messages show it.
    pub path: String,
    /// What is wrong with it.
    pub message: String,
    /// Whether the path does not exist at all.
    pub missing: bool,
}

impl ReadError {
    fn new(path: &str, message: impl Into<String>) -> ReadError {
        ReadError {
            path: path.to_owned(),
            message: message.into(),
            missing: false,
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}",
            crate::problem::printable(&self.path),
            crate::problem::printable(&self.message)
        )
    }
}

impl std::error::Error for ReadError {}

/// What a path is, in words, when it is not a regular file or a folder.
fn kind_word(t: fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device";
        }
    }
    if t.is_symlink() {
        "a symbolic link (links are never followed in a schema tree)"
    } else if t.is_dir() {
        "a folder"
    } else {
        "not a regular file"
    }
}

/// The metadata of `path` without following a link, refusing anything but a regular file.
pub fn regular_file(path: &Path, shown: &str) -> Result<fs::Metadata, ReadError> {
    let meta = fs::symlink_metadata(path).map_err(|e| {
        let mut err = ReadError::new(shown, e.to_string());
        err.missing = e.kind() == std::io::ErrorKind::NotFound;
        err
    })?;
    if !meta.file_type().is_file() {
        return Err(ReadError::new(
            shown,
            format!("{}, not a regular file", kind_word(meta.file_type())),
        ));
    }
    Ok(meta)
}

/// The bytes of the regular file `path` (never a link, FIFO, device or socket), at most `cap` of
/// them: a larger file is refused. `shown` is how messages name it.
pub fn read_bytes(path: &Path, shown: &str, cap: u64) -> Result<Vec<u8>, ReadError> {
    let before = regular_file(path, shown)?;
    if before.len() > cap {
        return Err(over(shown, cap));
    }
    let file = fs::File::open(path).map_err(|e| ReadError::new(shown, e.to_string()))?;
    let after = file
        .metadata()
        .map_err(|e| ReadError::new(shown, e.to_string()))?;
    if !after.file_type().is_file() || !same_file(&before, &after) {
        return Err(ReadError::new(shown, "changed while it was opened"));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(before.len()).unwrap_or(0));
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::new(shown, e.to_string()))?;
    if bytes.len() as u64 > cap {
        return Err(over(shown, cap));
    }
    Ok(bytes)
}

fn over(shown: &str, cap: u64) -> ReadError {
    ReadError::new(shown, format!("larger than the cap of {cap} bytes"))
}

#[cfg(unix)]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    a.len() == b.len()
}

/// The text of the regular file `path` like [`read_bytes`]; text that is not UTF-8 is refused
/// with the offset of its first bad byte.
pub fn read_text(path: &Path, shown: &str, cap: u64) -> Result<String, ReadError> {
    let bytes = read_bytes(path, shown, cap)?;
    String::from_utf8(bytes).map_err(|e| {
        ReadError::new(
            shown,
            format!(
                "not UTF-8 (byte {} is not part of a UTF-8 character)",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// One entry of a listed folder: its name, path and what it is (links not followed).
pub struct Entry {
    /// The file name.
    pub name: String,
    /// The full path.
    pub path: PathBuf,
    /// What it is, from `symlink_metadata`.
    pub file_type: fs::FileType,
}

/// The entries of the folder `dir` (itself never a link), sorted by name, at most
/// [`ENTRY_CAP`] of them; a name that is not UTF-8 is refused.
pub fn list(dir: &Path, shown: &str) -> Result<Vec<Entry>, ReadError> {
    let meta = fs::symlink_metadata(dir).map_err(|e| {
        let mut err = ReadError::new(shown, e.to_string());
        err.missing = e.kind() == std::io::ErrorKind::NotFound;
        err
    })?;
    if !meta.file_type().is_dir() {
        return Err(ReadError::new(
            shown,
            format!("{}, not a folder", kind_word(meta.file_type())),
        ));
    }
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| ReadError::new(shown, e.to_string()))? {
        let entry = entry.map_err(|e| ReadError::new(shown, e.to_string()))?;
        if out.len() >= ENTRY_CAP {
            return Err(ReadError::new(
                shown,
                format!("holds more than {ENTRY_CAP} entries"),
            ));
        }
        let Ok(name) = entry.file_name().into_string() else {
            return Err(ReadError::new(
                &format!("{shown}/{}", entry.file_name().to_string_lossy()),
                "the file name is not UTF-8",
            ));
        };
        let file_type = entry
            .file_type()
            .map_err(|e| ReadError::new(&format!("{shown}/{name}"), e.to_string()))?;
        out.push(Entry {
            path: entry.path(),
            name,
            file_type,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The `*.schema.json` files of the folder `dir` as `(file name, text)`, sorted by name: each a
/// regular file under [`FILE_CAP`], all together under [`TREE_CAP`]. `shown` is how messages name
/// the folder.
pub fn schema_files(dir: &Path, shown: &str) -> Result<Vec<(String, String)>, ReadError> {
    let mut out = Vec::new();
    let mut total = 0u64;
    for e in list(dir, shown)? {
        if !e.name.ends_with(".schema.json") {
            continue;
        }
        let at = format!("{shown}/{}", e.name);
        let text = read_text(&e.path, &at, FILE_CAP)?;
        total += text.len() as u64;
        if total > TREE_CAP {
            return Err(ReadError::new(
                shown,
                format!("its schema files hold more than the cap of {TREE_CAP} bytes"),
            ));
        }
        out.push((e.name, text));
    }
    Ok(out)
}

/// The regular files under `dir` whose name ends in `.ext`, recursively, without following a
/// link: a link anywhere in the folder is a located error, so two links to `.` or one to `/` never
/// make the walk loop or leave the folder. `shown` is how messages name `dir`; the paths returned
/// are under `dir`. A missing folder has no files.
pub fn files_under(dir: &Path, shown: &str, ext: &str) -> Result<Vec<PathBuf>, ReadError> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), shown.to_owned(), 0usize)];
    let mut seen = 0usize;
    while let Some((d, s, depth)) = stack.pop() {
        let entries = match list(&d, &s) {
            Ok(e) => e,
            Err(e) if e.missing && depth == 0 => return Ok(out),
            Err(e) => return Err(e),
        };
        for e in entries {
            seen += 1;
            let at = format!("{s}/{}", e.name);
            if seen > ENTRY_CAP * 4 {
                return Err(ReadError::new(
                    shown,
                    format!("holds more than {} entries", ENTRY_CAP * 4),
                ));
            }
            if e.file_type.is_dir() {
                if depth >= 16 {
                    return Err(ReadError::new(&at, "nested more than 16 folders deep"));
                }
                stack.push((e.path, at, depth + 1));
            } else if e.file_type.is_file() {
                if e.name.rsplit_once('.').is_some_and(|(_, x)| x == ext) {
                    out.push(e.path);
                }
            } else {
                return Err(ReadError::new(
                    &at,
                    format!("{}, not a regular file", kind_word(e.file_type)),
                ));
            }
        }
    }
    out.sort();
    Ok(out)
}
