//! A schema problem: a profile rule a schema breaks, located by its file and the JSON pointer of
//! the offending schema, and the error that lists every problem of a load.

use std::fmt;

/// One place where a schema breaks the profile.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SchemaProblem {
    /// The schema file, as it was read (`schemas/event.schema.json`).
    pub file: String,
    /// The JSON pointer of the offending schema inside the file (empty for the whole file).
    pub pointer: String,
    /// What is wrong, in a sentence.
    pub message: String,
}

impl SchemaProblem {
    /// The problem `message` at `pointer` of `file`.
    pub fn new(
        file: impl Into<String>,
        pointer: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        SchemaProblem {
            file: file.into(),
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

/// `file#pointer: message`, with control characters escaped (names in a schema may hold them).
impl fmt::Display for SchemaProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}#{}: {}",
            printable(&self.file),
            printable(&self.pointer),
            printable(&self.message)
        )
    }
}

/// `s` with every control character, line separator and bidirectional-text override written as
/// `\u{…}`, so text from a schema cannot move a terminal's cursor, colour it or reorder what it
/// shows: the one rule of every tool ([`diagwire_runtime::text`]).
pub use diagwire_runtime::text::printable;

/// The problems a pass found.
pub type Problems = Vec<SchemaProblem>;

/// The error of a load: every problem of the schemas, in the order the passes found them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutsideProfile {
    /// The problems (never empty).
    pub problems: Problems,
}

/// The most problems a message lists; the rest are counted (they are all in `problems`).
pub const SHOWN: usize = 100;

/// A header line, then one problem per line (at most [`SHOWN`] of them).
impl fmt::Display for OutsideProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the schemas are outside the profile (schemas/README.md):")?;
        for p in self.problems.iter().take(SHOWN) {
            write!(f, "\n  {p}")?;
        }
        if self.problems.len() > SHOWN {
            write!(f, "\n  … and {} more", self.problems.len() - SHOWN)?;
        }
        Ok(())
    }
}

impl std::error::Error for OutsideProfile {}
