//! How the upgrade locates and quotes what it lists: a place in the simulator's directory, a
//! value cut short, the validator's first reasons. Shared by every file of the upgrade.

use serde_json::Value;

use diagwire::Location;
use diagwire::validate::Violation;
use diagwire_runtime::shape::escape_pointer_token;

/// Longest excerpt of a value quoted in a problem's message, in characters.
pub(crate) const MAX_QUOTE: usize = 300;

/// A value as JSON text, cut to [`MAX_QUOTE`] characters.
pub(crate) fn quote(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(MAX_QUOTE) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// The first violations, as `<pointer>: <message>`.
pub(crate) fn describe(violations: &[Violation]) -> String {
    let mut parts: Vec<String> = violations
        .iter()
        .take(3)
        .map(|v| {
            let at = if v.pointer.is_empty() {
                "/"
            } else {
                v.pointer.as_str()
            };
            format!("{at}: {}", v.message)
        })
        .collect();
    if violations.len() > 3 {
        parts.push(format!("… {} more", violations.len() - 3));
    }
    parts.join("; ")
}

/// A location in the simulator's directory (see the module documentation).
pub(crate) fn at(file: &str, record: Option<usize>, pointer: impl Into<String>) -> Location {
    Location::at(file, record, pointer)
}

/// `/<key>`.
pub(crate) fn key_pointer(key: &str) -> String {
    format!("/{}", escape_pointer_token(key))
}
