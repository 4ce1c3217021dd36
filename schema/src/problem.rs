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

/// `s` with every control character and every bidirectional-text override written as `\u{…}`, so
/// text from a schema cannot move a terminal's cursor, colour it or reorder what it shows (the
/// rule of `diagwire::problem::printable`, which this crate cannot depend on).
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    fn unsafe_char(c: char) -> bool {
        c.is_control()
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    }
    if !s.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

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
