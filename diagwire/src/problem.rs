//! One located problem type for everything that reads records: validation, bundle reading,
//! assembly from staging and the simulator upgrade.

use std::fmt;

/// What kind of problem it is, for code that counts or filters problems without reading prose.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProblemKind {
    /// A file or archive entry could not be read, or was refused unread.
    Read(ReadErrorKind),
    /// The bytes are not UTF-8 or not JSON.
    Encoding,
    /// The file's JSON does not have the shape its kind needs (an array where one record belongs, …).
    Shape,
    /// The record breaks its schema.
    Schema,
    /// The record does not parse as its type.
    Parse,
    /// An object holds the same key twice.
    DuplicateKey,
    /// The schema and the typed parse disagree about a record: a defect of the contract itself.
    ContractBug,
    /// The manifest disagrees with the files, boot records or directories of the bundle.
    Manifest,
    /// A file or directory that is not part of the layout, or a name that had to be changed.
    Layout,
    /// Something that has no place in the contract (what the simulator upgrade could not map).
    Unmapped,
}

impl ProblemKind {
    /// A short stable name for machine output (`schema`, `read.too_large`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::Read(k) => k.as_str(),
            ProblemKind::Encoding => "encoding",
            ProblemKind::Shape => "shape",
            ProblemKind::Schema => "schema",
            ProblemKind::Parse => "parse",
            ProblemKind::DuplicateKey => "duplicate_key",
            ProblemKind::ContractBug => "contract_bug",
            ProblemKind::Manifest => "manifest",
            ProblemKind::Layout => "layout",
            ProblemKind::Unmapped => "unmapped",
        }
    }
}

/// Why a file, an archive entry or a whole bundle could not be read.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReadErrorKind {
    /// The path does not exist.
    NotFound,
    /// The path is not a bundle: not a directory or archive, empty, or without a run directory.
    NotABundle,
    /// The gzip data is corrupt or truncated.
    Gzip,
    /// The tar data is corrupt or truncated, or an entry has an unsupported type.
    Tar,
    /// An entry name is absolute, contains `..` or a backslash, is not UTF-8, or is too long.
    UnsafePath,
    /// A symbolic or hard link, which is never followed.
    Link,
    /// A file over the per-file cap, or the bundle over the total cap.
    TooLarge,
    /// More entries than the entry cap.
    TooManyEntries,
    /// An archive holds one path both as a file and as a directory (a directory entry or the
    /// parent of another entry), so extracting it would turn one into the other.
    PathConflict,
    /// The file system failed, or a path is not a regular file.
    Io,
}

impl ReadErrorKind {
    /// A short stable name for machine output.
    pub fn as_str(self) -> &'static str {
        match self {
            ReadErrorKind::NotFound => "read.not_found",
            ReadErrorKind::NotABundle => "read.not_a_bundle",
            ReadErrorKind::Gzip => "read.gzip",
            ReadErrorKind::Tar => "read.tar",
            ReadErrorKind::UnsafePath => "read.unsafe_path",
            ReadErrorKind::Link => "read.link",
            ReadErrorKind::TooLarge => "read.too_large",
            ReadErrorKind::TooManyEntries => "read.too_many_entries",
            ReadErrorKind::PathConflict => "read.path_conflict",
            ReadErrorKind::Io => "read.io",
        }
    }
}

/// Where a problem is: a file (its real path, or `archive.tar.gz!<inner path>`), and inside it a
/// record index, a JSON pointer into that record and a line and column in the file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub struct Location {
    /// The file as a person would find it.
    pub file: String,
    /// The record's index in the file (0 for a file holding one record); `None` for the file as a
    /// whole.
    pub record: Option<usize>,
    /// JSON pointer into the record (empty for the record itself).
    pub pointer: String,
    /// Where in the file's text, when it is known: the problem itself, or the start of the record.
    pub position: Option<TextPosition>,
}

/// A line and column in a file's text, both from 1; the column counts bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TextPosition {
    /// The line, from 1.
    pub line: u64,
    /// The column, from 1, in bytes.
    pub column: u64,
}

impl Location {
    /// The file as a whole.
    pub fn file(file: impl Into<String>) -> Self {
        Location {
            file: file.into(),
            ..Location::default()
        }
    }

    /// A record of the file, or the file as a whole when `record` is `None`, at a JSON pointer.
    pub fn at(file: impl Into<String>, record: Option<usize>, pointer: impl Into<String>) -> Self {
        Location {
            file: file.into(),
            record,
            pointer: pointer.into(),
            position: None,
        }
    }

    /// The same location at a line and column of the file.
    pub fn with_position(mut self, line: u64, column: u64) -> Self {
        self.position = Some(TextPosition { line, column });
        self
    }

    /// A record of the file, at a JSON pointer.
    pub fn record(file: impl Into<String>, record: usize, pointer: impl Into<String>) -> Self {
        Location::at(file, Some(record), pointer)
    }
}

/// `<file>:<record> <pointer> (line L, column C)`, leaving out what is not known. The text is as
/// found: see [`printable`] before showing it on a terminal.
impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(i) = self.record {
            write!(f, ":{i}")?;
        }
        if !self.pointer.is_empty() {
            write!(f, " {}", self.pointer)?;
        }
        if let Some(p) = self.position {
            write!(f, " (line {}, column {})", p.line, p.column)?;
        }
        Ok(())
    }
}

/// Text from a bundle made safe to print on a terminal: control characters (a newline, `ESC`, …),
/// the line separators and the Unicode controls that reorder or hide text become `\u{…}` escapes,
/// so a file name or a value cannot forge output lines or terminal sequences. Borrowed when there
/// is nothing to escape. The one rule of every tool ([`diagwire_runtime::text`]).
pub use diagwire_runtime::text::printable;

/// JSON made safe to print by the same rule: `value` as pretty JSON with every hidden character
/// of a string written as `\uXXXX` (serde_json escapes only the C0 controls), still valid JSON and
/// the same value once read ([`diagwire_runtime::text::Escaping`]). How every JSON a tool prints is
/// written.
pub use diagwire_runtime::text::{json_compact, json_pretty};

/// One located problem.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Problem {
    /// What kind of problem.
    pub kind: ProblemKind,
    /// Where.
    pub location: Location,
    /// A sentence for a person.
    pub message: String,
}

impl Problem {
    /// A problem at a location.
    pub fn new(kind: ProblemKind, location: Location, message: impl Into<String>) -> Self {
        Problem {
            kind,
            location,
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

impl std::error::Error for Problem {}
