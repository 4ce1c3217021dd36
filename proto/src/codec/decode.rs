//! The decoder: protobuf → JSON with a descriptor, never panicking on untrusted bytes — bounded
//! in size, depth and the JSON it builds — keeping fields, enum values and variants the descriptor
//! cannot name raw under [`super::UNKNOWN_FIELDS_KEY`], with the message and field path and byte
//! offset of an error.

use std::fmt;

use prost::encoding::{WireType, decode_varint};
use serde_json::{Map, Number, Value};

use diagwire_runtime::proto::{hex, unzigzag};

use super::{Error, MAX_DEPTH, UNKNOWN_FIELDS_KEY, decode_budget, wire_of};
use crate::index::{Codec, Field, Msg, Presence, Scalar, Style, Ty};

/// Splits raw protobuf bytes into `(field number, whole field bytes)`.
pub(super) fn split_fields(bytes: &[u8]) -> Option<Vec<(u32, Vec<u8>)>> {
    let mut r = Reader { buf: bytes, pos: 0 };
    let mut out = Vec::new();
    while r.pos < bytes.len() {
        let start = r.pos;
        let (n, w) = r.key().ok()?;
        r.skip(w).ok()?;
        out.push((n, bytes[start..r.pos].to_vec()));
    }
    Some(out)
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, String> {
        let mut s = &self.buf[self.pos..];
        let before = s.len();
        let v = decode_varint(&mut s).map_err(|e| e.to_string())?;
        self.pos += before - s.len();
        Ok(v)
    }

    fn key(&mut self) -> Result<(u32, WireType), String> {
        let k = self.varint()?;
        let w = WireType::try_from(k & 7).map_err(|_| format!("invalid wire type {}", k & 7))?;
        let n = u32::try_from(k >> 3).map_err(|_| "field number too large".to_owned())?;
        if n == 0 {
            return Err("field number 0".to_owned());
        }
        Ok((n, w))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.buf.len() - self.pos < n {
            return Err(format!(
                "{n} bytes announced, {} left",
                self.buf.len() - self.pos
            ));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn skip(&mut self, w: WireType) -> Result<(), String> {
        match w {
            WireType::Varint => self.varint().map(|_| ()),
            WireType::SixtyFourBit => self.take(8).map(|_| ()),
            WireType::ThirtyTwoBit => self.take(4).map(|_| ()),
            WireType::LengthDelimited => {
                let n = self.varint()?;
                let n = usize::try_from(n).map_err(|_| "length too large".to_owned())?;
                self.take(n).map(|_| ())
            }
            WireType::StartGroup | WireType::EndGroup => Err("groups are not supported".to_owned()),
        }
    }
}

/// One occurrence of a field: wire type, value bytes (the payload of a length-delimited one, the
/// encoded varint or fixed bytes otherwise), whole field bytes, offset.
struct Occ<'a> {
    wire: WireType,
    value: &'a [u8],
    whole: &'a [u8],
    offset: usize,
}

struct Dec<'a> {
    codec: &'a Codec,
    depth: usize,
    budget: usize,
    base: usize,
}

/// A decode outcome below an error: a value, or "the descriptor cannot name this" (kept raw).
enum Out {
    Val(Value),
    Unnamed,
}

/// Where the decoder is: message and field names from the record down, rendered only for an error
/// (`EventRecord.@event/Event.DialStarted/DialStarted.peer`).
#[derive(Clone, Copy)]
struct At<'a> {
    up: Option<&'a At<'a>>,
    seg: Seg<'a>,
}

#[derive(Clone, Copy)]
enum Seg<'a> {
    Root,
    Msg(&'a str),
    Key(&'a str),
}

impl<'a> At<'a> {
    const ROOT: At<'static> = At {
        up: None,
        seg: Seg::Root,
    };

    fn msg(up: &'a At<'a>, name: &'a str) -> At<'a> {
        At {
            up: Some(up),
            seg: Seg::Msg(name),
        }
    }

    fn key(up: &'a At<'a>, key: &'a str) -> At<'a> {
        At {
            up: Some(up),
            seg: Seg::Key(key),
        }
    }
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(up) = self.up {
            up.fmt(f)?;
        }
        match self.seg {
            Seg::Root => Ok(()),
            Seg::Msg(n) if self.up.is_none_or(|u| matches!(u.seg, Seg::Root)) => f.write_str(n),
            Seg::Msg(n) => write!(f, "/{n}"),
            Seg::Key(k) => write!(f, ".{k}"),
        }
    }
}

pub(super) fn derr(path: impl fmt::Display, offset: usize, message: impl Into<String>) -> Error {
    Error {
        path: path.to_string(),
        offset,
        message: message.into(),
    }
}

fn fields_of<'b>(buf: &'b [u8], base: usize, path: &At<'_>) -> Result<Vec<(u32, Occ<'b>)>, Error> {
    let mut r = Reader { buf, pos: 0 };
    let mut out = Vec::new();
    while r.pos < buf.len() {
        let start = r.pos;
        let (n, w) = r.key().map_err(|m| derr(path, base + start, m))?;
        let vstart = r.pos;
        let value = if w == WireType::LengthDelimited {
            let len = r.varint().map_err(|m| derr(path, base + start, m))?;
            let len =
                usize::try_from(len).map_err(|_| derr(path, base + start, "length too large"))?;
            r.take(len).map_err(|m| derr(path, base + start, m))?
        } else {
            r.skip(w).map_err(|m| derr(path, base + start, m))?;
            &buf[vstart..r.pos]
        };
        out.push((
            n,
            Occ {
                wire: w,
                value,
                whole: &buf[start..r.pos],
                offset: base + start,
            },
        ));
    }
    Ok(out)
}

/// The occurrences of field `n` among fields sorted by number.
fn occurrences<'s, 'b>(fields: &'s [(u32, Occ<'b>)], n: u32) -> &'s [(u32, Occ<'b>)] {
    let lo = fields.partition_point(|(m, _)| *m < n);
    let len = fields[lo..].partition_point(|(m, _)| *m == n);
    &fields[lo..lo + len]
}

impl<'a> Dec<'a> {
    fn spend(&mut self, n: usize, path: &At<'_>, offset: usize) -> Result<(), Error> {
        if self.budget < n {
            return Err(derr(
                path,
                offset,
                "the decoded record would exceed its memory budget",
            ));
        }
        self.budget -= n;
        Ok(())
    }

    fn zero(&mut self, t: &Ty, path: &At<'_>, offset: usize) -> Result<Out, Error> {
        self.spend(1, path, offset)?;
        Ok(Out::Val(match t {
            Ty::List(_) => Value::Array(Vec::new()),
            Ty::Scalar(Scalar::Str) => Value::String(String::new()),
            Ty::Scalar(Scalar::Bool) => Value::Bool(false),
            Ty::Scalar(Scalar::F64) => Value::from(0.0),
            Ty::Scalar(Scalar::Json) => Value::Null,
            Ty::Scalar(Scalar::NodeId | Scalar::HexId) | Ty::Enum(_) => {
                return Err(derr(path, offset, "required field missing"));
            }
            Ty::Scalar(_) => Value::from(0u64),
            Ty::Msg(m) => return self.message((m, m.id), &[], path, offset),
        }))
    }

    fn scalar(
        &mut self,
        t: &Ty,
        r: &mut Reader<'_>,
        path: &At<'_>,
        offset: usize,
    ) -> Result<Out, Error> {
        let e = |m: String| derr(path, offset, m);
        self.spend(1, path, offset)?;
        let uint = |r: &mut Reader<'_>, max: u64| -> Result<Value, Error> {
            let v = r.varint().map_err(e)?;
            if v > max {
                return Err(derr(path, offset, format!("{v} is out of range")));
            }
            Ok(Value::from(v))
        };
        Ok(Out::Val(match t {
            Ty::Scalar(Scalar::U8) => uint(r, u8::MAX.into())?,
            Ty::Scalar(Scalar::U16) => uint(r, u16::MAX.into())?,
            Ty::Scalar(Scalar::U32) => uint(r, u32::MAX.into())?,
            Ty::Scalar(Scalar::U64) => uint(r, u64::MAX)?,
            Ty::Scalar(Scalar::I32) => {
                let v = unzigzag(r.varint().map_err(e)?);
                if i32::try_from(v).is_err() {
                    return Err(derr(path, offset, format!("{v} is out of range")));
                }
                Value::from(v)
            }
            Ty::Scalar(Scalar::I64) => Value::from(unzigzag(r.varint().map_err(e)?)),
            Ty::Scalar(Scalar::Bool) => match r.varint().map_err(e)? {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                v => return Err(derr(path, offset, format!("bool {v}"))),
            },
            Ty::Scalar(Scalar::F64) => {
                let b = r.take(8).map_err(e)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                let f = f64::from_bits(u64::from_le_bytes(a));
                Value::Number(
                    Number::from_f64(f).ok_or_else(|| derr(path, offset, "not a finite number"))?,
                )
            }
            Ty::Enum(name) => {
                let v = r.varint().map_err(e)?;
                match self
                    .codec
                    .enum_numbers(name)
                    .and_then(|(_, by_num)| by_num.get(&v))
                {
                    Some(s) => Value::String(s.clone()),
                    None => return Ok(Out::Unnamed),
                }
            }
            _ => return Err(derr(path, offset, "not a scalar")),
        }))
    }

    /// Decodes every occurrence of one field as a value of `t`.
    fn value(&mut self, t: &Ty, occs: &[(u32, Occ<'_>)], path: &At<'_>) -> Result<Out, Error> {
        let last = occs.last().map_or(0, |(_, o)| o.offset);
        if let Ty::List(inner) = t {
            let mut items = Vec::with_capacity(occs.len());
            self.spend(1, path, last)?;
            for entry in occs {
                let o = &entry.1;
                if wire_of(inner) != WireType::LengthDelimited
                    && o.wire == WireType::LengthDelimited
                {
                    let mut r = Reader {
                        buf: o.value,
                        pos: 0,
                    };
                    while r.pos < o.value.len() {
                        match self.scalar(inner, &mut r, path, o.offset)? {
                            Out::Val(v) => items.push(v),
                            Out::Unnamed => return Ok(Out::Unnamed),
                        }
                    }
                } else {
                    match self.value(inner, std::slice::from_ref(entry), path)? {
                        Out::Val(v) => items.push(v),
                        Out::Unnamed => return Ok(Out::Unnamed),
                    }
                }
            }
            return Ok(Out::Val(Value::Array(items)));
        }
        let Some((_, o)) = occs.last() else {
            return Err(derr(path, 0, "no value"));
        };
        if o.wire != wire_of(t) {
            return Ok(Out::Unnamed);
        }
        if o.wire != WireType::LengthDelimited {
            let mut r = Reader {
                buf: o.value,
                pos: 0,
            };
            return self.scalar(t, &mut r, path, o.offset);
        }
        let b = o.value;
        let at = o.offset;
        self.spend(1 + b.len() / 8, path, at)?;
        Ok(Out::Val(match t {
            Ty::Scalar(Scalar::Str) => Value::String(
                std::str::from_utf8(b)
                    .map_err(|_| derr(path, at, "string is not UTF-8"))?
                    .to_owned(),
            ),
            Ty::Scalar(Scalar::NodeId) => {
                if b.len() != 32 {
                    return Err(derr(
                        path,
                        at,
                        format!("a node id is 32 bytes, not {}", b.len()),
                    ));
                }
                self.spend(32, path, at)?;
                Value::Array(b.iter().map(|x| Value::from(*x)).collect())
            }
            Ty::Scalar(Scalar::HexId) => {
                if b.len() != 32 {
                    return Err(derr(
                        path,
                        at,
                        format!("a node id is 32 bytes, not {}", b.len()),
                    ));
                }
                Value::String(hex(b))
            }
            Ty::Scalar(Scalar::Json) => {
                self.spend(b.len(), path, at)?;
                serde_json::from_slice(b)
                    .map_err(|x| derr(path, at, format!("embedded JSON: {x}")))?
            }
            Ty::Msg(m) => {
                let start = at + (o.whole.len() - b.len());
                return self.message((m, m.id), b, path, start);
            }
            _ => return Err(derr(path, at, "not a length-delimited type")),
        }))
    }

    fn message(
        &mut self,
        (name, id): (&str, usize),
        buf: &[u8],
        path: &At<'_>,
        base: usize,
    ) -> Result<Out, Error> {
        self.depth += 1;
        let here = At::msg(path, name);
        let path = &here;
        if self.depth > MAX_DEPTH {
            return Err(derr(
                path,
                base,
                format!("nested deeper than {MAX_DEPTH} messages"),
            ));
        }
        self.spend(1, path, base)?;
        let msg = self
            .codec
            .msgs
            .get(id)
            .ok_or_else(|| derr(path, base, format!("codec has no message `{name}`")))?;
        let saved = self.base;
        self.base = base;
        let mut fields = fields_of(buf, base, path)?;
        if !matches!(msg, Msg::Union { .. }) {
            // Each field's occurrences side by side, still in the order they came.
            fields.sort_by_key(|(n, _)| *n);
        }
        let r = match msg {
            Msg::Struct { fields: fs, .. } => self.structure(name, fs, &fields, path, base),
            Msg::Union {
                style,
                tag,
                content,
                variants,
                ..
            } => self.union(
                name,
                *style,
                tag,
                content.as_deref(),
                variants,
                &fields,
                path,
                base,
            ),
            Msg::Wrapper(t) => {
                if fields.iter().any(|(n, _)| *n != 1) {
                    Err(derr(path, base, "a list wrapper holds only field 1"))
                } else if fields.is_empty() {
                    self.zero(t, path, base)
                } else {
                    self.value(t, &fields, path)
                }
            }
            Msg::Tuple(ts) => {
                let mut items = Vec::new();
                let mut unnamed = false;
                for (i, t) in ts.iter().enumerate() {
                    let occ = occurrences(&fields, i as u32 + 1);
                    let v = if occ.is_empty() {
                        self.zero(t, path, base)?
                    } else {
                        self.value(t, occ, path)?
                    };
                    match v {
                        Out::Val(v) => items.push(v),
                        Out::Unnamed => unnamed = true,
                    }
                }
                if fields
                    .iter()
                    .any(|(n, _)| *n == 0 || *n as usize > ts.len())
                    || unnamed
                {
                    Ok(Out::Unnamed)
                } else {
                    Ok(Out::Val(Value::Array(items)))
                }
            }
        };
        self.base = saved;
        self.depth -= 1;
        r
    }

    fn structure(
        &mut self,
        name: &str,
        fs: &[Field],
        fields: &[(u32, Occ<'_>)],
        path: &At<'_>,
        base: usize,
    ) -> Result<Out, Error> {
        let mut obj = Map::new();
        let mut raw: Vec<&Occ<'_>> = Vec::new();
        let mut absent: Vec<String> = Vec::new();
        let mut unknown: Option<Map<String, Value>> = None;
        let mut nested_raw = Map::new();
        for (n, o) in fields {
            if *n == self.codec.absent_keys && o.wire == WireType::LengthDelimited {
                let k = std::str::from_utf8(o.value)
                    .map_err(|_| derr(path, o.offset, "absent key is not UTF-8"))?;
                if fs.iter().any(|f| f.key == k) {
                    absent.push(k.to_owned());
                } else {
                    // A key only a newer descriptor writes: kept as it came.
                    raw.push(o);
                }
            } else if *n == self.codec.unknown_json && o.wire == WireType::LengthDelimited {
                self.spend(o.value.len(), path, o.offset)?;
                match serde_json::from_slice(o.value) {
                    Ok(Value::Object(m)) => unknown.get_or_insert_with(Map::new).extend(m),
                    _ => return Err(derr(path, o.offset, "unknown_json is not a JSON object")),
                }
            } else if !fs.iter().any(|f| f.number == *n) {
                raw.push(o);
            }
        }
        for f in fs {
            let occ = occurrences(fields, f.number);
            let fp = At::key(path, &f.key);
            if f.flatten {
                let v = if occ.is_empty() {
                    let Ty::Msg(m) = &f.ty else {
                        return Err(derr(fp, base, "bad flatten"));
                    };
                    self.message((m, m.id), &[], &fp, base)?
                } else {
                    self.value(&f.ty, occ, &fp)?
                };
                match v {
                    Out::Val(Value::Object(m)) => {
                        for (k, x) in m {
                            if k == UNKNOWN_FIELDS_KEY {
                                if let Value::Object(r) = x {
                                    nested_raw.extend(r);
                                }
                            } else {
                                obj.insert(k, x);
                            }
                        }
                    }
                    Out::Val(_) => {
                        return Err(derr(fp, base, "a flattened union decoded to a non-object"));
                    }
                    Out::Unnamed => raw.extend(occ.iter().map(|(_, o)| o)),
                }
                continue;
            }
            if occ.is_empty() {
                let in_json = unknown.as_ref().is_some_and(|u| u.contains_key(&f.key));
                if in_json || absent.contains(&f.key) {
                    continue;
                }
                match f.presence {
                    Presence::Required | Presence::Default => {
                        if let Out::Val(v) = self.zero(&f.ty, &fp, base)? {
                            obj.insert(f.key.clone(), v);
                        }
                    }
                    Presence::Nullable => {
                        self.spend(1, &fp, base)?;
                        obj.insert(f.key.clone(), Value::Null);
                    }
                    Presence::Omittable | Presence::SkipDefault => {}
                }
                continue;
            }
            match self.value(&f.ty, occ, &fp)? {
                Out::Val(v) => {
                    obj.insert(f.key.clone(), v);
                }
                Out::Unnamed => raw.extend(occ.iter().map(|(_, o)| o)),
            }
        }
        if let Some(u) = unknown {
            for (k, x) in u {
                obj.insert(k, x);
            }
        }
        if !raw.is_empty() {
            self.spend(2, path, base)?;
            raw.sort_by_key(|o| o.offset);
            let bytes: Vec<u8> = raw.iter().flat_map(|o| o.whole.iter().copied()).collect();
            nested_raw.insert(name.to_owned(), Value::String(hex(&bytes)));
        }
        if !nested_raw.is_empty() {
            obj.insert(UNKNOWN_FIELDS_KEY.to_owned(), Value::Object(nested_raw));
        }
        Ok(Out::Val(Value::Object(obj)))
    }

    #[allow(clippy::too_many_arguments)]
    fn union(
        &mut self,
        name: &str,
        style: Style,
        tag: &str,
        content: Option<&str>,
        variants: &[crate::index::Variant],
        fields: &[(u32, Occ<'_>)],
        path: &At<'_>,
        base: usize,
    ) -> Result<Out, Error> {
        let mut value: Option<Value> = None;
        let mut raw: Vec<&Occ<'_>> = Vec::new();
        let mut seen = false;
        for entry in fields {
            let (n, o) = (&entry.0, &entry.1);
            if *n == self.codec.unknown_json && o.wire == WireType::LengthDelimited {
                self.spend(o.value.len(), path, o.offset)?;
                let j: Value = serde_json::from_slice(o.value)
                    .map_err(|x| derr(path, o.offset, format!("unknown_json: {x}")))?;
                value = Some(match (value.take(), j) {
                    (Some(Value::Object(mut a)), Value::Object(b)) => {
                        a.extend(b);
                        Value::Object(a)
                    }
                    (_, j) => j,
                });
                continue;
            }
            let Some(var) = variants.iter().find(|x| x.number == *n) else {
                raw.push(o);
                continue;
            };
            if seen {
                return Err(derr(path, o.offset, "a union holds one variant"));
            }
            seen = true;
            let fp = At::key(path, &var.tag);
            let payload = match &var.ty {
                None => {
                    if o.wire != WireType::LengthDelimited || !o.value.is_empty() {
                        raw.push(o);
                        continue;
                    }
                    None
                }
                Some(t) => match self.value(t, std::slice::from_ref(entry), &fp)? {
                    Out::Val(v) => Some(v),
                    Out::Unnamed => {
                        raw.push(o);
                        continue;
                    }
                },
            };
            // The tag, or the object holding an external variant's payload.
            self.spend(1, &fp, o.offset)?;
            let v = match (style, payload) {
                (Style::Internal, Some(Value::Object(mut m))) => {
                    m.insert(tag.to_owned(), Value::String(var.tag.clone()));
                    Value::Object(m)
                }
                (Style::Internal, _) => {
                    return Err(derr(fp, o.offset, "an internal variant is an object"));
                }
                (Style::Adjacent, p) => {
                    let mut m = Map::new();
                    m.insert(tag.to_owned(), Value::String(var.tag.clone()));
                    if let (Some(c), Some(p)) = (content, p) {
                        m.insert(c.to_owned(), p);
                    }
                    Value::Object(m)
                }
                (Style::External, None) => Value::String(var.tag.clone()),
                (Style::External, Some(p)) => {
                    let mut m = Map::new();
                    m.insert(var.tag.clone(), p);
                    Value::Object(m)
                }
            };
            value = Some(match (value.take(), v) {
                (Some(Value::Object(mut a)), Value::Object(b)) => {
                    a.extend(b);
                    Value::Object(a)
                }
                (_, v) => v,
            });
        }
        if !raw.is_empty() {
            self.spend(2, path, base)?;
            let bytes: Vec<u8> = raw.iter().flat_map(|o| o.whole.iter().copied()).collect();
            let mut m = match value.take() {
                Some(Value::Object(m)) => m,
                None => Map::new(),
                Some(other) => {
                    return Err(derr(
                        path,
                        base,
                        format!("a union value {other} beside unknown fields"),
                    ));
                }
            };
            let mut r = Map::new();
            r.insert(name.to_owned(), Value::String(hex(&bytes)));
            m.insert(UNKNOWN_FIELDS_KEY.to_owned(), Value::Object(r));
            value = Some(Value::Object(m));
        }
        Ok(Out::Val(value.unwrap_or_else(|| Value::Object(Map::new()))))
    }
}

/// Decodes a record whose message is `msg` from `bytes` (at most [`super::MAX_RECORD_BYTES`]).
pub(super) fn record(codec: &Codec, msg: &str, bytes: &[u8]) -> Result<Value, Error> {
    let mut d = Dec {
        codec,
        depth: 0,
        budget: decode_budget(bytes.len()),
        base: 0,
    };
    let id = codec.messages.get(msg).copied().unwrap_or(usize::MAX);
    match d.message((msg, id), bytes, &At::ROOT, 0)? {
        Out::Val(v) => Ok(v),
        Out::Unnamed => Err(derr(
            msg,
            0,
            "the record holds values this descriptor cannot name",
        )),
    }
}
