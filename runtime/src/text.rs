//! Text from a record or a schema made safe to show: the one rule every tool escapes by before a
//! name or a value reaches a terminal, a Markdown comment or a TSV row.
//!
//! Hidden are control characters (line breaks included), the Unicode line and paragraph
//! separators, and the marks and overrides that reorder bidirectional text: each is written as
//! `\u{…}`, so a string cannot move a cursor, colour a terminal, start a line or reorder what is
//! shown.
//!
//! JSON is escaped by the same rule: serde_json escapes only U+0000–U+001F, so [`Escaping`] wraps
//! its formatter and writes every other hidden character of a string (DEL, the C1 controls such as
//! the single-character CSI U+009B, the separators and the bidirectional marks) as `\uXXXX`, which
//! is still valid JSON and reads back as the same string. [`json_pretty`] is how a tool prints JSON.

use std::borrow::Cow;
use std::fmt::Write;
use std::io;

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};

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

/// A serde_json [`Formatter`] that writes every hidden character ([`is_hidden`]) of a string or
/// a key as a `\uXXXX` escape and leaves everything else to the formatter it wraps
/// (`CompactFormatter`, `PrettyFormatter`).
#[derive(Debug, Clone, Default)]
pub struct Escaping<F>(pub F);

impl<F: Formatter> Formatter for Escaping<F> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut rest = fragment;
        while let Some((at, c)) = rest.char_indices().find(|&(_, c)| is_hidden(c)) {
            self.0.write_string_fragment(writer, &rest[..at])?;
            // Every hidden character is in the Basic Multilingual Plane: one `\uXXXX`.
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                write!(writer, "\\u{unit:04x}")?;
            }
            rest = &rest[at + c.len_utf8()..];
        }
        self.0.write_string_fragment(writer, rest)
    }

    // Everything else as the wrapped formatter writes it.
    fn write_null<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.write_null(w)
    }
    fn write_bool<W: ?Sized + io::Write>(&mut self, w: &mut W, v: bool) -> io::Result<()> {
        self.0.write_bool(w, v)
    }
    fn write_i64<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i64) -> io::Result<()> {
        self.0.write_i64(w, v)
    }
    fn write_u64<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u64) -> io::Result<()> {
        self.0.write_u64(w, v)
    }
    fn write_i128<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i128) -> io::Result<()> {
        self.0.write_i128(w, v)
    }
    fn write_u128<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u128) -> io::Result<()> {
        self.0.write_u128(w, v)
    }
    fn write_f64<W: ?Sized + io::Write>(&mut self, w: &mut W, v: f64) -> io::Result<()> {
        self.0.write_f64(w, v)
    }
    fn write_number_str<W: ?Sized + io::Write>(&mut self, w: &mut W, v: &str) -> io::Result<()> {
        self.0.write_number_str(w, v)
    }
    fn begin_string<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_string(w)
    }
    fn end_string<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_string(w)
    }
    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        e: serde_json::ser::CharEscape,
    ) -> io::Result<()> {
        self.0.write_char_escape(w, e)
    }
    fn write_byte_array<W: ?Sized + io::Write>(&mut self, w: &mut W, v: &[u8]) -> io::Result<()> {
        self.0.write_byte_array(w, v)
    }
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W, f: bool) -> io::Result<()> {
        self.0.begin_array_value(w, f)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W, f: bool) -> io::Result<()> {
        self.0.begin_object_key(w, f)
    }
    fn end_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
    fn write_raw_fragment<W: ?Sized + io::Write>(&mut self, w: &mut W, v: &str) -> io::Result<()> {
        self.0.write_raw_fragment(w, v)
    }
}

/// `value` as pretty JSON (serde_json's layout) with every hidden character escaped
/// ([`Escaping`]): how a tool prints JSON to a terminal or a file. Keys are in the order the value
/// serializes them.
pub fn json_pretty<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::new();
    let mut ser =
        serde_json::Serializer::with_formatter(&mut out, Escaping(PrettyFormatter::new()));
    value.serialize(&mut ser)?;
    Ok(String::from_utf8(out).expect("OK because serde_json writes UTF-8"))
}

/// [`json_pretty`] on one line (serde_json's compact layout).
pub fn json_compact<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(
        &mut out,
        Escaping(serde_json::ser::CompactFormatter),
    );
    value.serialize(&mut ser)?;
    Ok(String::from_utf8(out).expect("OK because serde_json writes UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_escapes_every_hidden_character_and_reads_back_the_same() {
        let hostile = "a\u{9b}31m\u{7f}\u{85}\u{2028}\u{2029}\u{202e}\u{2066}\u{1b}[0m\"\\é✓";
        let value = serde_json::json!({ hostile: [hostile, 1, null] });
        for text in [
            json_pretty(&value).expect("json"),
            json_compact(&value).expect("json"),
        ] {
            assert!(!text.chars().any(|c| is_hidden(c) && c != '\n'), "{text:?}");
            for escape in [
                "\\u009b", "\\u007f", "\\u0085", "\\u2028", "\\u202e", "\\u2066",
            ] {
                assert!(text.contains(escape), "{escape} in {text}");
            }
            assert!(text.contains("é✓"), "{text}");
            let back: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
            assert_eq!(back, value);
        }
        // Without a hidden character, the bytes serde_json writes.
        let plain = serde_json::json!({"a": ["b", 1.5, true], "é": "✓"});
        assert_eq!(
            json_pretty(&plain).expect("json"),
            serde_json::to_string_pretty(&plain).expect("json")
        );
        assert_eq!(
            json_compact(&plain).expect("json"),
            serde_json::to_string(&plain).expect("json")
        );
    }

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
