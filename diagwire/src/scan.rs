//! Finding the records of a file in a stream, with bounded memory: the extent of each top-level
//! JSON value (or each element of a top-level array) and where it starts (line, column, byte),
//! without parsing it. The checker then parses each record on its own, so a record that does not
//! parse costs only itself, and what came before a break in the framing is still counted.
//!
//! Written here rather than taken from serde_json's stream deserializer, which parses every value
//! in full to find where it ends (the checker parses each record once more, typed) and stops for
//! good at the first malformed value.

use std::io::{self, Read};

/// How deep arrays and objects may nest in a file, as the generated readers (serde_json) allow.
pub const MAX_DEPTH: usize = 127;

/// Where a value starts in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Position {
    /// The byte offset.
    pub offset: u64,
    /// The line, from 1.
    pub line: u64,
    /// The column, from 1, in bytes.
    pub column: u64,
}

/// Why the framing of a file broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanError {
    /// Reading failed.
    Io(io::ErrorKind, String),
    /// The bytes are not JSON here (what was expected, and where).
    Syntax(&'static str, Position),
    /// Arrays and objects nest deeper than the readers allow ([`MAX_DEPTH`] in a file).
    TooDeep(usize, Position),
    /// One record is larger than the scanner holds.
    TooLarge(usize, Position),
}

impl std::fmt::Display for ScanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScanError::Io(_, e) => write!(f, "cannot read: {e}"),
            ScanError::Syntax(what, p) => {
                write!(f, "not JSON at line {} column {}: {what}", p.line, p.column)
            }
            ScanError::TooDeep(max, p) => write!(
                f,
                "arrays and objects nest deeper than {max} levels in the record at line {} column {} (the readers' limit)",
                p.line, p.column
            ),
            ScanError::TooLarge(max, p) => write!(
                f,
                "a record starting at line {} column {} is larger than {max} bytes",
                p.line, p.column
            ),
        }
    }
}

/// What a decoder offered bytes by [`Scanner::take_with`] makes of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// It took a whole value: the first `n` bytes offered.
    Took(usize),
    /// The value runs past the bytes offered.
    More,
    /// It does not take the value (the value is framed instead).
    Refused,
}

/// A reader of JSON values from a byte stream, holding at most one value (and one read chunk).
pub struct Scanner<R> {
    reader: R,
    buf: Vec<u8>,
    /// The first byte of `buf` not consumed yet.
    start: usize,
    /// The end of the bytes read into `buf`.
    end: usize,
    eof: bool,
    /// The position of `buf[start]`.
    pos: Position,
    max_record: usize,
    /// Whether the stream began with a UTF-8 byte order mark (skipped).
    pub had_bom: bool,
}

const CHUNK: usize = 64 * 1024;

impl<R: Read> Scanner<R> {
    /// A scanner of `reader` that refuses records over `max_record` bytes.
    pub fn new(reader: R, max_record: usize) -> Self {
        Scanner::with_buffer(reader, max_record, Vec::new())
    }

    /// [`Scanner::new`] reading into `buf`, a buffer a scanner gave back ([`Scanner::into_buffer`])
    /// or a new one: a reader of many files zeroes its buffer once, not once per file.
    pub fn with_buffer(reader: R, max_record: usize, buf: Vec<u8>) -> Self {
        Scanner {
            reader,
            buf,
            start: 0,
            end: 0,
            eof: false,
            pos: Position {
                offset: 0,
                line: 1,
                column: 1,
            },
            max_record,
            had_bom: false,
        }
    }

    /// The read buffer, for the next scanner.
    pub fn into_buffer(self) -> Vec<u8> {
        self.buf
    }

    /// Reads more bytes; false at the end of the stream. The buffer is zeroed only where it
    /// grows: bytes kept are moved to its front, and reads go into the room after them.
    fn fill(&mut self) -> Result<bool, ScanError> {
        if self.eof {
            return Ok(false);
        }
        if self.start > 0 && self.start >= self.end / 2 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < CHUNK {
            self.buf.resize(self.end + CHUNK, 0);
        }
        loop {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ScanError::Io(e.kind(), e.to_string())),
            }
        }
    }

    /// Moves past `n` bytes, keeping the position.
    fn advance(&mut self, n: usize) {
        let bytes = &self.buf[self.start..self.start + n];
        let newlines = count_newlines(bytes);
        self.pos.offset += n as u64;
        if newlines == 0 {
            self.pos.column += n as u64;
        } else {
            self.pos.line += newlines as u64;
            let last = bytes.iter().rposition(|b| *b == b'\n').unwrap_or(0);
            self.pos.column = (n - last) as u64;
        }
        self.start += n;
    }

    /// The next byte that is not whitespace, not consumed; `None` at the end.
    pub fn peek(&mut self) -> Result<Option<u8>, ScanError> {
        loop {
            if self.pos.offset == 0 && !self.had_bom {
                while self.end - self.start < 3 && self.fill()? {}
                if self.buf[self.start..self.end].starts_with(&[0xef, 0xbb, 0xbf]) {
                    self.had_bom = true;
                    self.start += 3;
                    self.pos.offset = 3;
                }
            }
            while self.start < self.end {
                let b = self.buf[self.start];
                match b {
                    b'\n' => {
                        self.pos.line += 1;
                        self.pos.column = 1;
                    }
                    b' ' | b'\t' | b'\r' => self.pos.column += 1,
                    b => return Ok(Some(b)),
                }
                self.pos.offset += 1;
                self.start += 1;
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// The position of the next byte.
    pub fn position(&self) -> Position {
        self.pos
    }

    /// Consumes one byte that [`Scanner::peek`] returned.
    pub fn bump(&mut self) {
        self.advance(1);
    }

    /// Offers the bytes from the next value on to `take`, with whether they run to the end of
    /// the stream, reading more while it asks for more and what it is offered stays within the
    /// record cap. The position the value started at when `take` took it (its bytes are
    /// consumed); `None` when it refused, or at the end of the stream (nothing is consumed, and
    /// [`Scanner::value`] frames the value). A decoder that finds where a record ends reads it
    /// this way, with no framing pass of its own.
    pub fn take_with(
        &mut self,
        mut take: impl FnMut(&[u8], bool) -> Take,
    ) -> Result<Option<Position>, ScanError> {
        if self.peek()?.is_none() {
            return Ok(None);
        }
        loop {
            let offered = &self.buf[self.start..self.end];
            match take(offered, self.eof) {
                Take::Took(n) if n <= self.max_record && n <= offered.len() => {
                    let at = self.pos;
                    self.advance(n);
                    return Ok(Some(at));
                }
                Take::More if !self.eof && offered.len() <= self.max_record => {
                    self.fill()?;
                }
                _ => return Ok(None),
            }
        }
    }

    /// The extent of the JSON value at the current position: its bytes and where it starts. The
    /// bytes stay valid until the next call. `max_depth` is how deep the value itself may nest
    /// ([`MAX_DEPTH`] for a value at the top of a file, one less for an element of a top array).
    pub fn value(&mut self, max_depth: usize) -> Result<(&[u8], Position), ScanError> {
        if self.peek()?.is_none() {
            return Err(ScanError::Syntax("a value", self.pos));
        }
        let at = self.pos;
        let mut i = self.start;
        let mut depth = 0usize;
        loop {
            if i >= self.end {
                let consumed = i - self.start;
                if consumed > self.max_record {
                    return Err(ScanError::TooLarge(self.max_record, at));
                }
                // `fill` may move the bytes kept to the front of the buffer.
                let more = self.fill()?;
                i = self.start + consumed;
                if !more {
                    // A scalar may end at the end of the stream.
                    if depth == 0 && consumed > 0 {
                        break;
                    }
                    return Err(ScanError::Syntax(
                        "the rest of a value (the file ends inside it)",
                        at,
                    ));
                }
                continue;
            }
            if depth > 0 {
                // Inside an array or object only quotes and brackets matter.
                i += find_structural(&self.buf[i..self.end]);
                if i >= self.end {
                    continue;
                }
            }
            match self.buf[i] {
                b'"' => match find_string_end(&self.buf[i + 1..self.end]) {
                    Some(n) => {
                        i += n + 2;
                        if depth == 0 {
                            break;
                        }
                    }
                    None => {
                        let consumed = i - self.start;
                        if consumed > self.max_record {
                            return Err(ScanError::TooLarge(self.max_record, at));
                        }
                        if !self.fill()? {
                            return Err(ScanError::Syntax(
                                "the end of a string (the file ends inside it)",
                                at,
                            ));
                        }
                        i = self.start + consumed;
                    }
                },
                b'{' | b'[' => {
                    depth += 1;
                    if depth > max_depth {
                        return Err(ScanError::TooDeep(max_depth, at));
                    }
                    i += 1;
                }
                b'}' | b']' => {
                    if depth == 0 {
                        if i > self.start {
                            // The end of a scalar.
                            break;
                        }
                        return Err(ScanError::Syntax("a value, not a closing bracket", at));
                    }
                    depth -= 1;
                    i += 1;
                    if depth == 0 {
                        break;
                    }
                }
                b',' | b' ' | b'\t' | b'\r' | b'\n' | b':' if depth == 0 => break,
                _ => i += 1,
            }
        }
        let n = i - self.start;
        if n > self.max_record {
            return Err(ScanError::TooLarge(self.max_record, at));
        }
        let from = self.start;
        self.advance(n);
        Ok((&self.buf[from..from + n], at))
    }
}

/// The index of the closing quote of a string whose contents start `bytes`, if it is there.
fn find_string_end(bytes: &[u8]) -> Option<usize> {
    let mut i = 0;
    loop {
        i += find_quote_or_backslash(&bytes[i..]);
        match bytes.get(i) {
            None => return None,
            Some(b'"') => return Some(i),
            // A backslash escapes the next byte.
            Some(_) => {
                if i + 1 >= bytes.len() {
                    return None;
                }
                i += 2;
            }
        }
    }
}

// The searches below look at eight bytes at a time (a word): `zero_bytes` flags the bytes of a
// word that are zero. It can also flag a byte above a zero byte, never below one, so the lowest
// flagged byte of a word, or of several such masks or'ed together, is always a true match.

const ONES: u64 = u64::from_le_bytes([0x01; 8]);
const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);

fn word(chunk: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(chunk);
    u64::from_le_bytes(w)
}

fn splat(b: u8) -> u64 {
    ONES * u64::from(b)
}

fn zero_bytes(v: u64) -> u64 {
    v.wrapping_sub(ONES) & !v & HIGHS
}

/// The index of the first byte matching `flags` (eight bytes at a time) or `is` (the tail), else
/// the length.
fn find(bytes: &[u8], flags: impl Fn(u64) -> u64, is: impl Fn(u8) -> bool) -> usize {
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        let m = flags(word(chunk));
        if m != 0 {
            return at + (m.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + chunks
        .remainder()
        .iter()
        .position(|b| is(*b))
        .unwrap_or(chunks.remainder().len())
}

/// The index of the first `"`, `{`, `}`, `[` or `]` in `bytes`, else its length.
fn find_structural(bytes: &[u8]) -> usize {
    find(
        bytes,
        |w| {
            // `[` and `]` differ from `{` and `}` only in bit 5.
            let folded = w | splat(0x20);
            zero_bytes(folded ^ splat(b'{'))
                | zero_bytes(folded ^ splat(b'}'))
                | zero_bytes(w ^ splat(b'"'))
        },
        |b| matches!(b, b'"' | b'{' | b'}' | b'[' | b']'),
    )
}

/// The index of the first `"` or `\` in `bytes`, else its length.
fn find_quote_or_backslash(bytes: &[u8]) -> usize {
    find(
        bytes,
        |w| zero_bytes(w ^ splat(b'"')) | zero_bytes(w ^ splat(b'\\')),
        |b| b == b'"' || b == b'\\',
    )
}

/// The number of newlines in `bytes`.
fn count_newlines(bytes: &[u8]) -> usize {
    let low = !HIGHS;
    let mut chunks = bytes.chunks_exact(8);
    let mut n = 0;
    for chunk in &mut chunks {
        let v = word(chunk) ^ splat(b'\n');
        // The high bit of each byte of `t` is set exactly when that byte of `v` is not zero.
        let t = ((v & low).wrapping_add(low)) | v;
        n += (!t & HIGHS).count_ones() as usize;
    }
    n + chunks.remainder().iter().filter(|b| **b == b'\n').count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str, max: usize) -> Result<Vec<(String, u64, u64)>, ScanError> {
        let mut s = Scanner::new(text.as_bytes(), max);
        let mut out = Vec::new();
        while s.peek()?.is_some() {
            let (v, p) = s.value(MAX_DEPTH)?;
            out.push((String::from_utf8_lossy(v).into_owned(), p.line, p.column));
        }
        Ok(out)
    }

    #[test]
    fn values_and_their_positions_in_a_stream_of_lines() {
        let got = values("{\"a\": \"x}\\\"y\"}\n  [1, [2]]\n7 \"s\"", 1 << 20).expect("scans");
        assert_eq!(
            got,
            vec![
                (r#"{"a": "x}\"y"}"#.into(), 1, 1),
                ("[1, [2]]".into(), 2, 3),
                ("7".into(), 3, 1),
                ("\"s\"".into(), 3, 3),
            ]
        );
    }

    #[test]
    fn a_scalar_ends_at_a_closing_bracket_or_a_comma() {
        let mut s = Scanner::new(&b"[12,3]"[..], 100);
        assert_eq!(s.peek().expect("peek"), Some(b'['));
        s.bump();
        assert_eq!(s.value(MAX_DEPTH).expect("value").0, b"12");
        assert_eq!(s.peek().expect("peek"), Some(b','));
        s.bump();
        assert_eq!(s.value(MAX_DEPTH).expect("value").0, b"3");
        assert_eq!(s.peek().expect("peek"), Some(b']'));
    }

    #[test]
    fn a_value_split_across_reads_is_whole() {
        let big = format!("[{}]", "\"abcdefgh\",".repeat(20_000) + "1");
        let got = values(&big, 1 << 20).expect("scans");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0.len(), big.len());
    }

    #[test]
    fn a_value_read_a_few_bytes_at_a_time_is_whole() {
        // A reader that gives three bytes a read leaves room after what was read: the search for
        // a bracket must stop where the bytes read end.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = 3.min(self.0.len()).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let text = b"{\"a\": 123456789, \"b\": [1]} 7";
        let mut s = Scanner::new(Trickle(text), 1000);
        assert_eq!(s.value(MAX_DEPTH).expect("value").0, &text[..26]);
        assert_eq!(s.value(MAX_DEPTH).expect("value").0, b"7");
    }

    #[test]
    fn nesting_beyond_the_readers_limit_is_named() {
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(matches!(
            values(&deep, 1 << 20),
            Err(ScanError::TooDeep(..))
        ));
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(values(&ok, 1 << 20).is_ok());
    }

    #[test]
    fn a_record_over_the_cap_is_refused_without_reading_it_all() {
        let text = format!("[\"{}\"]", "x".repeat(1_000));
        assert!(matches!(
            values(&text, 100),
            Err(ScanError::TooLarge(100, _))
        ));
    }

    #[test]
    fn a_stream_ending_inside_a_value_says_so() {
        assert!(matches!(
            values("{\"a\": [1, 2", 1 << 20),
            Err(ScanError::Syntax(_, _))
        ));
        assert!(matches!(
            values("\"abc", 1 << 20),
            Err(ScanError::Syntax(_, _))
        ));
    }

    #[test]
    fn a_scalar_at_the_end_of_the_stream_after_consumed_bytes_is_whole() {
        // The buffer moves its kept bytes to the front when the end of the stream is found.
        for text in ["[1,2", "[1, 22", "[\"ab\",3"] {
            let mut s = Scanner::new(text.as_bytes(), 100);
            assert_eq!(s.peek().expect("peek"), Some(b'['));
            s.bump();
            let mut got = Vec::new();
            while let Some(b) = s.peek().expect("peek") {
                if b == b',' {
                    s.bump();
                    continue;
                }
                got.push(
                    String::from_utf8_lossy(s.value(MAX_DEPTH).expect("value").0).into_owned(),
                );
            }
            let want: Vec<&str> = text[1..].split(',').map(str::trim).collect();
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn a_taker_is_offered_more_until_it_takes_and_a_refusal_consumes_nothing() {
        // A value longer than one read, then a scalar after a newline.
        let value = format!("[\"{}\"]", "x".repeat(3 * CHUNK));
        let text = format!("  {value}\n7");
        let mut s = Scanner::new(text.as_bytes(), 1 << 20);
        let mut offers = 0;
        let at = s
            .take_with(|bytes, _| {
                offers += 1;
                match bytes.len() < value.len() {
                    true => Take::More,
                    false => Take::Took(value.len()),
                }
            })
            .expect("reads");
        assert!(offers > 1, "the value spans reads");
        assert_eq!(at.map(|p| (p.offset, p.column)), Some((2, 3)));
        assert_eq!(s.take_with(|_, _| Take::Refused).expect("reads"), None);
        let (seven, p) = s.value(MAX_DEPTH).expect("value");
        assert_eq!((seven, p.line, p.column), (&b"7"[..], 2, 1));
        // Past the cap a taker that asks for more is refused, and the value is framed.
        let mut s = Scanner::new(text.as_bytes(), 100);
        assert_eq!(s.take_with(|_, _| Take::More).expect("reads"), None);
        assert!(matches!(
            s.value(MAX_DEPTH),
            Err(ScanError::TooLarge(100, _))
        ));
    }

    #[test]
    fn a_byte_order_mark_is_skipped_and_remembered() {
        let mut s = Scanner::new(&b"\xef\xbb\xbf{}"[..], 100);
        assert_eq!(s.peek().expect("peek"), Some(b'{'));
        assert!(s.had_bom);
        assert_eq!(s.value(MAX_DEPTH).expect("value").0, b"{}");
    }
}
