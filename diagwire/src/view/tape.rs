//! A record's JSON text as a flat tape of borrowed tokens, which the tools read in place of a
//! `serde_json::Value`: one pass over the bytes, no allocation per value (the tape's buffer is
//! reused from record to record), strings borrowed from the text.
//!
//! Written here rather than taken from a crate: the walk needs only where each value starts and
//! ends and the text of keys and strings, and the text has been read as JSON already (by the typed
//! decode of the reading path), so a tokenizer of a hundred lines is all it takes; a text it
//! cannot take (nesting deeper than any record the readers take, 4 GiB or more) is refused as a
//! whole and its caller skips it.
//!
//! Objects keep serde_json's map semantics where the walk needs them: [`Tape::get`] finds a key's
//! last value (a repeated key reads as its last value), and [`Tape::keys`] yields each distinct
//! key once, in sorted order, as a `serde_json::Map` iterates.

use std::borrow::Cow;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Bool,
    Number,
    /// A string value (its content's span; `escaped` when it holds a backslash).
    Str,
    /// An object key, followed by its value's tokens.
    Key,
    Array,
    Object,
}

/// One token: its kind, its span (a string's content between the quotes; a container from its
/// opening to its closing bracket, both included), and the index of the token after the value
/// (past a container's last descendant).
#[derive(Debug, Clone, Copy)]
struct Token {
    kind: Kind,
    escaped: bool,
    start: u32,
    end: u32,
    next: u32,
}

/// A JSON text as tokens; a value is named by the index of its first token (the root is 0).
#[derive(Debug)]
pub struct Tape<'t> {
    text: &'t str,
    tokens: Vec<Token>,
}

/// The deepest nesting the tokenizer follows (the readers refuse deeper records).
const MAX_DEPTH: usize = 256;

impl<'t> Tape<'t> {
    /// Reads `text` into a tape that uses `buffer`'s allocation; gives the buffer back when the
    /// text is not one JSON value as the tokenizer reads it (or is 4 GiB or more).
    ///
    /// An array of numbers, booleans and nulls only is one token, whose elements are not kept
    /// (no struct instance is inside it): [`Tape::read_whole`] keeps them.
    pub fn read(text: &'t str, buffer: Buffer) -> Result<Tape<'t>, Buffer> {
        Tape::read_as(text, buffer, false)
    }

    /// As [`Tape::read`], keeping the elements of every array, so that [`Tape::pointer`] reaches
    /// every value a `serde_json::Value`'s pointer reaches.
    pub fn read_whole(text: &'t str, buffer: Buffer) -> Result<Tape<'t>, Buffer> {
        Tape::read_as(text, buffer, true)
    }

    fn read_as(text: &'t str, buffer: Buffer, whole: bool) -> Result<Tape<'t>, Buffer> {
        let mut tape = Tape {
            text,
            tokens: buffer.0,
        };
        tape.tokens.clear();
        if u32::try_from(text.len()).is_ok() && tape.tokenize(whole) {
            Ok(tape)
        } else {
            Err(Buffer(tape.tokens))
        }
    }

    /// Gives the token buffer back, for the next record.
    pub fn into_buffer(self) -> Buffer {
        Buffer(self.tokens)
    }

    fn tokenize(&mut self, whole: bool) -> bool {
        let b = self.text.as_bytes();
        let mut r = Reading {
            i: skip_ws(b, 0),
            open: Vec::new(),
            want_key: false,
            whole,
        };
        loop {
            let Some(&c) = b.get(r.i) else {
                return false;
            };
            let at = self.tokens.len();
            if let Some((_, false, plain)) = r.open.last_mut() {
                *plain &= matches!(c, b't' | b'f' | b'n' | b'-' | b'0'..=b'9');
            }
            match c {
                b'{' | b'[' => {
                    if r.want_key || r.open.len() >= MAX_DEPTH {
                        return false;
                    }
                    let object = c == b'{';
                    self.push(if object { Kind::Object } else { Kind::Array }, r.i, r.i);
                    let numbers = match object {
                        false if !r.whole => numbers_end(b, r.i + 1),
                        false => None,
                        true => None,
                    };
                    if let Some(end) = numbers {
                        // An array of numbers only (a node id) is one token: no struct instance
                        // is inside it.
                        self.tokens[at].end = end as u32;
                        r.i = skip_ws(b, end + 1);
                    } else {
                        r.open.push((at, object, true));
                        r.i = skip_ws(b, r.i + 1);
                        r.want_key = object;
                        if b.get(r.i) != Some(if object { &b'}' } else { &b']' }) {
                            continue;
                        }
                        // An empty container: closed below.
                    }
                }
                b'"' => {
                    let Some((end, escaped)) = string_end(b, r.i + 1) else {
                        return false;
                    };
                    let kind = if r.want_key { Kind::Key } else { Kind::Str };
                    self.push(kind, r.i + 1, end);
                    self.tokens[at].escaped = escaped;
                    r.i = skip_ws(b, end + 1);
                    if r.want_key {
                        if b.get(r.i) != Some(&b':') {
                            return false;
                        }
                        r.want_key = false;
                        r.i = skip_ws(b, r.i + 1);
                        continue;
                    }
                }
                b't' | b'f' | b'n' => {
                    let (word, kind): (&[u8], Kind) = match c {
                        b't' => (b"true", Kind::Bool),
                        b'f' => (b"false", Kind::Bool),
                        _ => (b"null", Kind::Null),
                    };
                    if r.want_key || !b[r.i..].starts_with(word) {
                        return false;
                    }
                    self.push(kind, r.i, r.i + word.len());
                    r.i = skip_ws(b, r.i + word.len());
                }
                b'-' | b'0'..=b'9' => {
                    if r.want_key {
                        return false;
                    }
                    let mut j = r.i + 1;
                    while matches!(
                        b.get(j),
                        Some(b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                    ) {
                        j += 1;
                    }
                    self.push(Kind::Number, r.i, j);
                    r.i = skip_ws(b, j);
                }
                _ => return false,
            }
            if let Some(done) = self.close(b, &mut r) {
                return done;
            }
        }
    }

    /// After a value (or at an empty container's closing bracket): closes what ends here. `Some`
    /// when the text is read (whether it was one JSON value), `None` when a value follows.
    fn close(&mut self, b: &[u8], r: &mut Reading) -> Option<bool> {
        loop {
            let Some(&(top, object, plain)) = r.open.last() else {
                // The root value ended: nothing may follow it.
                return Some(skip_ws(b, r.i) == b.len());
            };
            match b.get(r.i) {
                Some(b',') => {
                    r.i = skip_ws(b, r.i + 1);
                    r.want_key = object;
                    return None;
                }
                Some(b'}') if object => {}
                Some(b']') if !object => {}
                _ => return Some(false),
            }
            if !object && plain && !r.whole {
                // No struct instance is inside an array of numbers, booleans and nulls: its
                // elements are dropped.
                self.tokens.truncate(top + 1);
            }
            let next = self.tokens.len() as u32;
            self.tokens[top].next = next;
            self.tokens[top].end = r.i as u32;
            r.open.pop();
            r.i = skip_ws(b, r.i + 1);
        }
    }

    fn push(&mut self, kind: Kind, start: usize, end: usize) {
        let next = self.tokens.len() as u32 + 1;
        self.tokens.push(Token {
            kind,
            escaped: false,
            start: start as u32,
            end: end as u32,
            next,
        });
    }

    fn token(&self, v: usize) -> Option<&Token> {
        self.tokens.get(v)
    }

    /// Whether the value at `v` is an object.
    pub fn is_object(&self, v: usize) -> bool {
        self.token(v).is_some_and(|t| t.kind == Kind::Object)
    }

    /// Whether the value at `v` is an array.
    pub fn is_array(&self, v: usize) -> bool {
        self.token(v).is_some_and(|t| t.kind == Kind::Array)
    }

    /// Whether the value at `v` is `null`.
    pub fn is_null(&self, v: usize) -> bool {
        self.token(v).is_some_and(|t| t.kind == Kind::Null)
    }

    /// The string at `v` (unescaped), if it is one.
    pub fn as_str(&self, v: usize) -> Option<Cow<'t, str>> {
        let t = self.token(v).filter(|t| t.kind == Kind::Str)?;
        Some(self.text_of(t))
    }

    fn text_of(&self, t: &Token) -> Cow<'t, str> {
        let text: &'t str = self.text;
        let (s, e) = (t.start as usize, t.end as usize);
        match t.escaped {
            false => Cow::Borrowed(text.get(s..e).unwrap_or_default()),
            // The quotes around the content are part of the text; serde_json unescapes.
            true => text
                .get(s.saturating_sub(1)..e + 1)
                .and_then(|q| serde_json::from_str::<String>(q).ok())
                .map_or(Cow::Borrowed(""), Cow::Owned),
        }
    }

    /// The JSON text of the value at `v`, as written.
    pub fn json(&self, v: usize) -> Option<&'t str> {
        let t = self.token(v)?;
        let (s, e) = (t.start as usize, t.end as usize);
        let text: &'t str = self.text;
        match t.kind {
            Kind::Str | Kind::Key => text.get(s.checked_sub(1)?..e + 1),
            Kind::Array | Kind::Object => text.get(s..e + 1),
            Kind::Null | Kind::Bool | Kind::Number => text.get(s..e),
        }
    }

    /// The JSON text of the value at `v` as `serde_json::Value::to_string` writes it: as written
    /// where that is the same text (a plain string, a non-negative integer, `true`, `false`,
    /// `null`), else read and written again.
    pub fn canonical(&self, v: usize) -> Option<String> {
        let t = self.token(v)?;
        let json = self.json(v)?;
        let same = match t.kind {
            Kind::Str => !t.escaped,
            Kind::Null | Kind::Bool => true,
            Kind::Number => json.len() < 20 && json.bytes().all(|c| c.is_ascii_digit()),
            Kind::Key | Kind::Array | Kind::Object => false,
        };
        match same {
            true => Some(json.to_owned()),
            false => serde_json::from_str::<serde_json::Value>(json)
                .ok()
                .map(|x| x.to_string()),
        }
    }

    /// The elements of the array at `v` (nothing if it is not an array).
    pub fn elements(&self, v: usize) -> Elements<'_, 't> {
        match self.token(v) {
            Some(t) if t.kind == Kind::Array => Elements {
                tape: self,
                at: v + 1,
                end: t.next as usize,
            },
            _ => Elements {
                tape: self,
                at: 0,
                end: 0,
            },
        }
    }

    /// The (key, value) pairs of the object at `v`, in text order, repeats included (nothing if
    /// it is not an object).
    pub fn pairs(&self, v: usize) -> impl Iterator<Item = (Key<'_, 't>, usize)> {
        let end = match self.token(v) {
            Some(t) if t.kind == Kind::Object => t.next as usize,
            _ => 0,
        };
        let mut at = v + 1;
        std::iter::from_fn(move || {
            if at >= end {
                return None;
            }
            let key = self.token(at)?;
            let value = at + 1;
            at = self.token(value)?.next as usize;
            Some((Key { tape: self, key }, value))
        })
    }

    /// The value of `key` in the object at `v` (its last one, as serde_json keeps it).
    pub fn get(&self, v: usize, key: &str) -> Option<usize> {
        let mut found = None;
        for (k, value) in self.pairs(v) {
            if k.is(key) {
                found = Some(value);
            }
        }
        found
    }

    /// The distinct keys of the object at `v`, sorted (a `serde_json::Map`'s order).
    pub fn keys(&self, v: usize) -> Vec<Cow<'t, str>> {
        let mut keys: Vec<Cow<'t, str>> = self.pairs(v).map(|(k, _)| k.text()).collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// The value at the JSON pointer `ptr` (RFC 6901) from the value at `v`, as
    /// `serde_json::Value::pointer` finds it: an object's key (its last value), an array's index
    /// (decimal, no sign, no leading zero). Inside an array of plain values only with a tape read
    /// whole ([`Tape::read_whole`]).
    pub fn pointer(&self, v: usize, ptr: &str) -> Option<usize> {
        if ptr.is_empty() {
            return self.token(v).map(|_| v);
        }
        let mut at = v;
        for token in ptr.strip_prefix('/')?.split('/') {
            let token = match token.contains('~') {
                true => Cow::Owned(token.replace("~1", "/").replace("~0", "~")),
                false => Cow::Borrowed(token),
            };
            at = match self.token(at)?.kind {
                Kind::Object => self.get(at, &token)?,
                Kind::Array => {
                    if token.starts_with('+') || (token.starts_with('0') && token.len() > 1) {
                        return None;
                    }
                    let index: usize = token.parse().ok()?;
                    self.elements(at).nth(index)?
                }
                _ => return None,
            };
        }
        Some(at)
    }

    /// The number at `v` as an `f64`, if it is one (`serde_json::Value::as_f64`).
    pub fn as_f64(&self, v: usize) -> Option<f64> {
        let t = self.token(v).filter(|t| t.kind == Kind::Number)?;
        self.text
            .get(t.start as usize..t.end as usize)?
            .parse()
            .ok()
    }

    /// The number at `v` as a `u64`, if it is a non-negative integer that fits
    /// (`serde_json::Value::as_u64`).
    pub fn as_u64(&self, v: usize) -> Option<u64> {
        let t = self.token(v).filter(|t| t.kind == Kind::Number)?;
        let text = self.text.get(t.start as usize..t.end as usize)?;
        match text.bytes().all(|c| c.is_ascii_digit()) {
            true => text.parse().ok(),
            false => None,
        }
    }

    /// The first key of the object at `v` in a `serde_json::Map`'s order (the smallest) and its
    /// value.
    pub fn first_entry(&self, v: usize) -> Option<(Cow<'t, str>, usize)> {
        let key = self.keys(v).into_iter().next()?;
        let value = self.get(v, &key)?;
        Some((key, value))
    }
}

/// An object's key in a tape.
#[derive(Clone, Copy)]
pub struct Key<'a, 't> {
    tape: &'a Tape<'t>,
    key: &'a Token,
}

impl<'t> Key<'_, 't> {
    /// Whether the key is `name`.
    pub fn is(&self, name: &str) -> bool {
        let (s, e) = (self.key.start as usize, self.key.end as usize);
        match self.key.escaped {
            false => e.saturating_sub(s) == name.len() && self.tape.text.get(s..e) == Some(name),
            true => self.tape.text_of(self.key) == name,
        }
    }

    /// The key, unescaped.
    pub fn text(&self) -> Cow<'t, str> {
        self.tape.text_of(self.key)
    }
}

/// A tape's token buffer, kept by a caller between records so their tapes share one allocation.
#[derive(Debug, Default, Clone)]
pub struct Buffer(Vec<Token>);

/// The elements of an array, as indices.
pub struct Elements<'a, 't> {
    tape: &'a Tape<'t>,
    at: usize,
    end: usize,
}

impl Iterator for Elements<'_, '_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.at >= self.end {
            return None;
        }
        let v = self.at;
        self.at = self.tape.token(v)?.next as usize;
        Some(v)
    }
}

/// Where the tokenizer is: the next byte, the open containers (their token's index, whether each
/// is an object, and for an array whether every element so far is a number, a boolean or null),
/// and whether the next string is an object's key.
struct Reading {
    i: usize,
    open: Vec<(usize, bool, bool)>,
    want_key: bool,
    /// Whether every array's elements are kept ([`Tape::read_whole`]).
    whole: bool,
}

/// Where an array whose elements start at `i` ends (its `]`), when it holds numbers only (at least
/// one): the bytes up to it are digits, signs, points, exponents, commas and whitespace.
fn numbers_end(b: &[u8], i: usize) -> Option<usize> {
    let rest = b.get(i..)?;
    let n = rest.iter().position(|&c| !IN_NUMBERS[usize::from(c)])?;
    let digits = rest[..n].iter().any(u8::is_ascii_digit);
    (rest[n] == b']' && digits).then_some(i + n)
}

/// The bytes between the brackets of an array of numbers only: digits, signs, points, exponents,
/// commas and whitespace. A table, because a node id is such an array of 32 numbers and the
/// tokenizer meets one in most records: tested as a `match`, each byte took a jump through a table
/// of its own (a third of the tokenizer's time in `check --coverage`).
const IN_NUMBERS: [bool; 256] = {
    let mut table = [false; 256];
    let allowed = b"0123456789,\n\r\t -+.eE";
    let mut k = 0;
    while k < allowed.len() {
        table[allowed[k] as usize] = true;
        k += 1;
    }
    table
};

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
        i += 1;
    }
    i
}

/// Where the string whose content starts at `i` ends (its closing quote), and whether it holds a
/// backslash.
fn string_end(b: &[u8], mut i: usize) -> Option<(usize, bool)> {
    let mut escaped = false;
    loop {
        let rest = b.get(i..)?;
        let n = rest.iter().position(|&c| c == b'"' || c == b'\\')?;
        i += n;
        if b[i] == b'"' {
            return Some((i, escaped));
        }
        escaped = true;
        i += 2;
    }
}

#[cfg(test)]
mod tests {
    use super::{Buffer, Tape};

    fn tape(text: &str) -> Tape<'_> {
        Tape::read(text, Buffer::default()).expect("the tape reads it")
    }

    #[test]
    fn objects_read_as_serde_json_maps_read_them() {
        let t = tape(r#" {"b": 1, "a": null, "b": "two", "\u0063": [true, {"d": "e\"f"}]} "#);
        assert!(t.is_object(0));
        assert_eq!(t.keys(0), ["a", "b", "c"]);
        let b = t.get(0, "b").unwrap();
        assert_eq!(
            t.as_str(b).as_deref(),
            Some("two"),
            "the last value of a repeated key"
        );
        assert!(t.is_null(t.get(0, "a").unwrap()));
        let c = t.get(0, "c").unwrap();
        let items: Vec<usize> = t.elements(c).collect();
        assert_eq!(items.len(), 2);
        let d = t.get(items[1], "d").unwrap();
        assert_eq!(t.as_str(d).as_deref(), Some("e\"f"));
        assert_eq!(
            t.first_entry(0).map(|(k, _)| k.into_owned()).as_deref(),
            Some("a")
        );
        assert_eq!(t.get(0, "z"), None);
    }

    #[test]
    fn values_give_their_text_and_the_text_serde_json_writes() {
        let t = tape(
            r#"{"a": [1, 2], "b": {"c": "d\u0065"}, "e": 1.50, "f": "g", "h": 12, "i": [{}, true]}"#,
        );
        let at = |k: &str| t.get(0, k).unwrap();
        assert_eq!(t.json(at("a")), Some("[1, 2]"));
        assert_eq!(t.json(at("b")), Some(r#"{"c": "d\u0065"}"#));
        assert_eq!(t.json(at("i")), Some("[{}, true]"));
        assert_eq!(t.json(at("f")), Some(r#""g""#));
        assert_eq!(t.json(at("h")), Some("12"));
        for k in ["a", "b", "e", "f", "h", "i"] {
            let whole: serde_json::Value = serde_json::from_str(t.text).unwrap();
            assert_eq!(t.canonical(at(k)), Some(whole[k].to_string()), "{k}");
        }
    }

    #[test]
    fn an_array_of_plain_values_is_one_token() {
        let t = tape("[[1,2,3,null,true],[\"x\"],{}]");
        let items: Vec<usize> = t.elements(0).collect();
        assert_eq!(items.len(), 3);
        assert_eq!(t.elements(items[0]).count(), 0, "numbers are not walked");
        assert_eq!(t.elements(items[1]).count(), 1, "strings are");
        assert!(t.is_object(items[2]) && t.keys(items[2]).is_empty());
    }

    #[test]
    fn an_array_of_numbers_in_any_spelling_is_one_token_and_a_string_among_them_is_not() {
        let numbers = "[ -1,\t2.5e+3 ,\r\n0E-2,7 ]";
        let text = format!("[{numbers},[1,\"2\"],[]]");
        let t = tape(&text);
        let items: Vec<usize> = t.elements(0).collect();
        assert_eq!(t.json(items[0]), Some(numbers));
        assert_eq!(t.elements(items[0]).count(), 0, "one token");
        assert_eq!(t.elements(items[1]).count(), 2, "a string is walked");
        assert_eq!(t.elements(items[2]).count(), 0);
    }

    #[test]
    fn a_pointer_reaches_what_serde_json_reaches() {
        let text = r#"{"a": [1, 2.5, {"b/c": "d", "e~f": [true, null]}], "a": [0, -3, 1e2, {"g": 18446744073709551615}], "": {"": 7}, "h": 12345678901234567890123, "z": -0}"#;
        let whole: serde_json::Value = serde_json::from_str(text).unwrap();
        let t = Tape::read_whole(text, Buffer::default()).unwrap();
        for ptr in [
            "", "/a", "/a/0", "/a/1", "/a/2", "/a/3", "/a/3/g", "/a/4", "/a/01", "/a/+1", "/a/-1",
            "/", "//", "/h", "/z", "/x", "a", "/a/3/g/0", "/a/0/x",
        ] {
            let expected = whole.pointer(ptr);
            let got = t.pointer(0, ptr);
            assert_eq!(got.is_some(), expected.is_some(), "{ptr:?}");
            if let (Some(v), Some(e)) = (got, expected) {
                assert_eq!(
                    t.canonical(v).as_deref(),
                    Some(e.to_string().as_str()),
                    "{ptr:?}"
                );
                assert_eq!(t.as_f64(v), e.as_f64(), "{ptr:?}");
                assert_eq!(t.as_u64(v), e.as_u64(), "{ptr:?}");
            }
        }
        let text = r#"{"a": [1, 2.5, {"b/c": "d", "e~f": [true, null]}]}"#;
        let whole: serde_json::Value = serde_json::from_str(text).unwrap();
        let t = Tape::read_whole(text, Buffer::default()).unwrap();
        for ptr in ["/a/2/b~1c", "/a/2/e~0f/1", "/a/2/e~0f/0", "/a/2/e~0f/2"] {
            let got = t.pointer(0, ptr).and_then(|v| t.canonical(v));
            assert_eq!(got, whole.pointer(ptr).map(|e| e.to_string()), "{ptr:?}");
        }
        let collapsed = Tape::read(text, Buffer::default()).unwrap();
        assert_eq!(
            collapsed.pointer(0, "/a/2/e~0f/0"),
            None,
            "a plain array's elements are not kept"
        );
    }

    #[test]
    fn what_is_not_one_json_value_is_refused_whole() {
        for bad in [
            "",
            "{",
            "}",
            "[1,]x",
            "{\"a\" 1}",
            "{1: 2}",
            "[1] [2]",
            "\"open",
            "tru",
            "{\"a\":}",
            "[\"a\\",
            "nul",
            "{[1]}",
        ] {
            assert!(Tape::read(bad, Buffer::default()).is_err(), "{bad:?}");
        }
        let deep = "[".repeat(300) + &"]".repeat(300);
        assert!(Tape::read(&deep, Buffer::default()).is_err());
    }
}
