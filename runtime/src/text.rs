//! Text from a record or a schema made safe to show: the one rule every tool escapes by before a
//! name or a value reaches a terminal, a Markdown comment or a TSV row.
//!
//! Hidden are control characters (line breaks included), the Unicode line and paragraph
//! separators, and the marks and overrides that reorder bidirectional text: each is written as
//! `\u{…}`, so a string cannot move a cursor, colour a terminal, start a line or reorder what is
//! shown.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` must not be shown as it is.
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Writes `c` as its escape, `\u{1b}`.
pub fn push_escaped(out: &mut String, c: char) {
    let _ = write!(out, "\\u{{{:x}}}", c as u32);
}

/// `s` with every hidden character ([`is_hidden`]) escaped; borrowed when there is none.
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_hidden) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_hidden(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_characters_are_escaped_and_the_rest_kept() {
        let cases = [
            ("plain", "plain"),
            ("a\u{1b}[8mb", "a\\u{1b}[8mb"),
            ("line\nbreak", "line\\u{a}break"),
            ("sep\u{2028}x", "sep\\u{2028}x"),
            ("rtl\u{202e}x", "rtl\\u{202e}x"),
            ("élan ✓", "élan ✓"),
        ];
        for (input, shown) in cases {
            assert_eq!(printable(input), shown, "{input:?}");
        }
        assert!(matches!(printable("plain"), Cow::Borrowed(_)));
    }
}
