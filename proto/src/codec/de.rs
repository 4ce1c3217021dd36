//! The typed decoder: a serde `Deserializer` over a record's protobuf bytes, driven by the layout,
//! that builds the generated Rust value directly, without a `serde_json::Value` in between.
//!
//! Written here for the reason the typed encoder is: the layout holds the numbers and the presence
//! rules. It presents each message as the JSON object [`super::decode`] would build — the zero of
//! a required field left out, `null` for a nullable one, a flattened union's keys beside the
//! struct's own, the keys of its `unknown_json` after its fields — and takes the bytes a writer of
//! the layout writes: known field numbers in order, known variants and enum values, no
//! `absent_keys`. Anything else is a [`Bail`],
//! and [`super::decode_typed`] reads the record through [`super::decode`] instead, so both give the
//! same value (`typed_and_value_decoders_agree` in the tests of `super`, and the protobuf
//! compatibility matrix).

use prost::encoding::{WireType, decode_varint};
use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::{Bail, MAX_DEPTH, decode_budget, hex, unzigzag, wire_of};

/// serde_json's name for its raw-value protocol.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";
use crate::layout::{Field, Layout, Msg, Presence, Scalar, Style, Ty, Variant};

type R<T = ()> = Result<T, Bail>;

/// Decodes `bytes` as the message `msg` of `layout` into a `T`.
pub(super) fn decode<'a, T: de::Deserialize<'a>>(
    layout: &'a Layout,
    msg: &'a Msg,
    bytes: &'a [u8],
) -> R<T> {
    let mut d = Dec {
        layout,
        occ: Vec::with_capacity(64),
        depth: 0,
        budget: decode_budget(bytes.len()),
        unknowns: Vec::new(),
        levels: Vec::with_capacity(16),
    };
    T::deserialize(Val {
        d: &mut d,
        what: What::Msg(msg, bytes),
    })
}

/// One field's value as it came.
#[derive(Clone, Copy)]
enum Payload<'a> {
    Varint(u64),
    Fixed(u64),
    Bytes(&'a [u8]),
}

/// A field occurrence of a scanned message: the field's (or variant's) index and its value.
#[derive(Clone, Copy)]
struct Occ<'a> {
    idx: usize,
    payload: Payload<'a>,
}

struct Dec<'a> {
    layout: &'a Layout,
    /// The occurrences of every message being read, each message's after its parent's.
    occ: Vec<Occ<'a>>,
    depth: usize,
    /// Values left before the record is the general decoder's (which then refuses it).
    budget: usize,
    /// The `unknown_json` objects of the structs being read.
    unknowns: Vec<serde_json::Map<String, serde_json::Value>>,
    /// The levels of the objects being read, each object's after its parent's.
    levels: Vec<Level<'a>>,
}

fn varint(buf: &[u8], pos: &mut usize) -> R<u64> {
    let mut s = buf.get(*pos..).ok_or(Bail)?;
    let before = s.len();
    let v = decode_varint(&mut s).map_err(|_| Bail)?;
    *pos += before - s.len();
    Ok(v)
}

/// The next field of `buf` at `pos`: its number and value.
fn next_field<'a>(buf: &'a [u8], pos: &mut usize) -> R<(u32, Payload<'a>)> {
    let key = varint(buf, pos)?;
    let n = u32::try_from(key >> 3).map_err(|_| Bail)?;
    let payload = match key & 7 {
        0 => Payload::Varint(varint(buf, pos)?),
        1 => {
            let b = buf.get(*pos..*pos + 8).ok_or(Bail)?;
            *pos += 8;
            Payload::Fixed(u64::from_le_bytes(b.try_into().map_err(|_| Bail)?))
        }
        2 => {
            let len = usize::try_from(varint(buf, pos)?).map_err(|_| Bail)?;
            let end = pos.checked_add(len).ok_or(Bail)?;
            let b = buf.get(*pos..end).ok_or(Bail)?;
            *pos = end;
            Payload::Bytes(b)
        }
        _ => return Err(Bail),
    };
    Ok((n, payload))
}

fn wire(p: Payload<'_>) -> WireType {
    match p {
        Payload::Varint(_) => WireType::Varint,
        Payload::Fixed(_) => WireType::SixtyFourBit,
        Payload::Bytes(_) => WireType::LengthDelimited,
    }
}

/// The wire type a field of type `t` comes in (a list of scalars: packed).
fn field_wire(t: &Ty) -> WireType {
    match t {
        Ty::List(_) => WireType::LengthDelimited,
        t => wire_of(t),
    }
}

impl<'a> Dec<'a> {
    fn spend(&mut self, n: usize) -> R {
        self.budget = self.budget.checked_sub(n).ok_or(Bail)?;
        Ok(())
    }

    /// Scans a struct's bytes into occurrences, in field order; returns their range and the
    /// index of its `unknown_json` object in [`Dec::unknowns`].
    fn scan_struct(
        &mut self,
        fields: &'a [Field],
        buf: &'a [u8],
    ) -> R<(usize, usize, Option<usize>)> {
        let lo = self.occ.len();
        let (mut pos, mut last) = (0, 0);
        let mut unknown = None;
        while pos < buf.len() {
            let (n, payload) = next_field(buf, &mut pos)?;
            // Fields come in number order: the next one is at or after the last.
            if let Some(j) = fields[last..].iter().position(|f| f.number == n) {
                let idx = last + j;
                if wire(payload) != field_wire(&fields[idx].ty) {
                    return Err(Bail);
                }
                last = idx;
                self.occ.push(Occ { idx, payload });
                continue;
            }
            if n == self.layout.unknown_json
                && let (Payload::Bytes(j), None) = (payload, unknown)
                && pos == buf.len()
            {
                self.spend(j.len())?;
                self.unknowns
                    .push(serde_json::from_slice(j).map_err(|_| Bail)?);
                unknown = Some(self.unknowns.len() - 1);
                continue;
            }
            // A number out of order, or one the layout does not name.
            return Err(Bail);
        }
        Ok((lo, self.occ.len(), unknown))
    }

    /// Scans a list wrapper's bytes: its field 1, every occurrence length-delimited (packed
    /// scalars, or one string or message each).
    fn scan_wrapper(&mut self, buf: &'a [u8]) -> R<(usize, usize)> {
        let lo = self.occ.len();
        let mut pos = 0;
        while pos < buf.len() {
            let (n, payload) = next_field(buf, &mut pos)?;
            if n != 1 || wire(payload) != WireType::LengthDelimited {
                return Err(Bail);
            }
            self.occ.push(Occ { idx: 0, payload });
        }
        Ok((lo, self.occ.len()))
    }

    /// A union's one variant and its value.
    fn scan_union(
        &mut self,
        variants: &'a [Variant],
        buf: &'a [u8],
    ) -> R<(&'a Variant, Payload<'a>)> {
        let mut pos = 0;
        let (n, payload) = next_field(buf, &mut pos)?;
        if pos != buf.len() {
            return Err(Bail);
        }
        let var = variants.iter().find(|v| v.number == n).ok_or(Bail)?;
        match (&var.ty, payload) {
            (None, Payload::Bytes([])) => {}
            (Some(t), p) if wire(p) == field_wire(t) => {}
            _ => return Err(Bail),
        }
        Ok((var, payload))
    }

    /// The level a message's keys are read from.
    fn level(&mut self, m: &'a Msg, buf: &'a [u8]) -> R<Level<'a>> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Bail);
        }
        Ok(match m {
            Msg::Struct {
                fields,
                in_order: true,
                ..
            } => {
                let (lo, hi, unknown) = self.scan_struct(fields, buf)?;
                Level::Struct {
                    fields,
                    next: 0,
                    at: lo,
                    hi,
                    unknown,
                }
            }
            Msg::Union {
                style: style @ (Style::Internal | Style::Adjacent),
                tag,
                content,
                variants,
                ..
            } => {
                let (var, payload) = self.scan_union(variants, buf)?;
                Level::Union {
                    style: *style,
                    tag,
                    content: content.as_deref(),
                    var,
                    payload,
                    stage: 0,
                }
            }
            _ => return Err(Bail),
        })
    }

    /// What a field with occurrences `lo..hi` of type `t` holds.
    fn what(&self, t: &'a Ty, lo: usize, hi: usize) -> R<What<'a>> {
        if let Ty::List(inner) = &t {
            return Ok(What::List(inner, lo, hi));
        }
        let last = self.occ.get(hi.wrapping_sub(1)).ok_or(Bail)?;
        what_of(self.layout, t, last.payload)
    }
}

/// The value of one occurrence of type `t`.
fn what_of<'a>(layout: &'a Layout, t: &'a Ty, p: Payload<'a>) -> R<What<'a>> {
    Ok(match (t, p) {
        (Ty::Msg(r), Payload::Bytes(b)) => What::Msg(layout.msg(r).ok_or(Bail)?, b),
        (Ty::List(_), _) => return Err(Bail),
        (t, p) => What::Scalar(t, p),
    })
}

/// A value to give a visitor.
#[derive(Clone, Copy)]
enum What<'a> {
    /// A message, from its bytes.
    Msg(&'a Msg, &'a [u8]),
    /// A scalar, string, node id or enum value.
    Scalar(&'a Ty, Payload<'a>),
    /// A list of `inner`, from the occurrences `lo..hi`.
    List(&'a Ty, usize, usize),
    /// The zero of a required field left out.
    Zero(&'a Ty),
    Null,
    Str(&'a str),
}

/// Where the keys of an object come from.
#[derive(Clone, Copy)]
enum Level<'a> {
    Struct {
        fields: &'a [Field],
        /// The next field to give.
        next: usize,
        /// The next occurrence, and the end of this struct's.
        at: usize,
        hi: usize,
        /// Its `unknown_json` object, in [`Dec::unknowns`]: its keys come after the fields.
        unknown: Option<usize>,
    },
    Union {
        style: Style,
        tag: &'a str,
        content: Option<&'a str>,
        var: &'a Variant,
        payload: Payload<'a>,
        /// 0: the tag comes next; 1: the body or content; 2: done.
        stage: u8,
    },
}

/// The type of a node id's elements.
static BYTE: Ty = Ty::Scalar(Scalar::U8);

/// The deepest chain of flattened unions an object takes.
const MAX_LEVELS: usize = 8;

/// An object: its levels (on [`Dec::levels`] from `base`, innermost last), and the value of the
/// key just given.
struct Obj<'s, 'a> {
    d: &'s mut Dec<'a>,
    base: usize,
    value: Option<What<'a>>,
    occ_base: usize,
    /// The keys of an `unknown_json` object still to give, and the value of the one given.
    pending: Option<Box<serde_json::map::IntoIter>>,
    json_value: Option<serde_json::Value>,
}

/// A key of an object: the layout's, or one of an `unknown_json` object.
enum Key<'a> {
    Layout(&'a str),
    Json(String),
}

impl<'s, 'a> Obj<'s, 'a> {
    fn new(d: &'s mut Dec<'a>, first: Level<'a>, occ_base: usize) -> Self {
        let base = d.levels.len();
        d.levels.push(first);
        Obj {
            d,
            base,
            value: None,
            occ_base,
            pending: None,
            json_value: None,
        }
    }

    fn push(&mut self, l: Level<'a>) -> R {
        if self.d.levels.len() - self.base >= MAX_LEVELS {
            return Err(Bail);
        }
        self.d.levels.push(l);
        Ok(())
    }

    fn pop(&mut self) {
        self.d.levels.pop();
        self.d.depth -= 1;
    }

    /// The next key and its value.
    fn advance(&mut self) -> R<Option<Key<'a>>> {
        loop {
            if let Some(it) = &mut self.pending {
                if let Some((k, v)) = it.next() {
                    self.json_value = Some(v);
                    return Ok(Some(Key::Json(k)));
                }
                self.pending = None;
            }
            if self.d.levels.len() == self.base {
                return Ok(None);
            }
            let top = self.d.levels.len() - 1;
            match self.d.levels[top] {
                Level::Struct {
                    fields,
                    next,
                    at,
                    hi,
                    unknown,
                } => {
                    let Some(f) = fields.get(next) else {
                        if at != hi {
                            return Err(Bail);
                        }
                        self.pop();
                        if let Some(u) = unknown {
                            let m = std::mem::take(self.d.unknowns.get_mut(u).ok_or(Bail)?);
                            self.pending = Some(Box::new(m.into_iter()));
                        }
                        continue;
                    };
                    let lo = at;
                    let mut end = at;
                    while end < hi && self.d.occ[end].idx == next {
                        end += 1;
                    }
                    self.d.levels[top] = Level::Struct {
                        fields,
                        next: next + 1,
                        at: end,
                        hi,
                        unknown,
                    };
                    if f.flatten {
                        let (Ty::Msg(u), true) = (&f.ty, end == lo + 1) else {
                            return Err(Bail);
                        };
                        let Payload::Bytes(b) = self.d.occ[lo].payload else {
                            return Err(Bail);
                        };
                        let m = self.d.layout.msg(u).ok_or(Bail)?;
                        let l = self.d.level(m, b)?;
                        self.push(l)?;
                        continue;
                    }
                    let in_json = unknown.is_some_and(|u| self.d.unknowns[u].contains_key(&f.key));
                    let what = if lo == end {
                        if in_json {
                            continue;
                        }
                        match f.presence {
                            Presence::Required | Presence::Default => What::Zero(&f.ty),
                            Presence::Nullable => What::Null,
                            Presence::Omittable | Presence::SkipDefault => continue,
                        }
                    } else {
                        self.d.what(&f.ty, lo, end)?
                    };
                    if in_json {
                        // The key comes again from `unknown_json`, which wins.
                        return Err(Bail);
                    }
                    self.value = Some(what);
                    return Ok(Some(Key::Layout(&f.key)));
                }
                Level::Union {
                    style,
                    tag,
                    content,
                    var,
                    payload,
                    stage,
                } => {
                    if let Level::Union { stage: s, .. } = &mut self.d.levels[top] {
                        *s += 1;
                    }
                    match stage {
                        0 => {
                            self.value = Some(What::Str(&var.tag));
                            return Ok(Some(Key::Layout(tag)));
                        }
                        1 => match (style, &var.ty, content) {
                            (Style::Internal, Some(Ty::Msg(b)), _) => {
                                let Payload::Bytes(bytes) = payload else {
                                    return Err(Bail);
                                };
                                let m = self.d.layout.msg(b).ok_or(Bail)?;
                                let l = self.d.level(m, bytes)?;
                                self.push(l)?;
                            }
                            (Style::Adjacent, Some(t), Some(c)) => {
                                self.value = Some(what_of(self.d.layout, t, payload)?);
                                return Ok(Some(Key::Layout(c)));
                            }
                            (Style::Adjacent, None, _) => {}
                            _ => return Err(Bail),
                        },
                        _ => self.pop(),
                    }
                }
            }
        }
    }
}

impl Drop for Obj<'_, '_> {
    fn drop(&mut self) {
        self.d.occ.truncate(self.occ_base);
        self.d.levels.truncate(self.base);
    }
}

impl<'de> MapAccess<'de> for Obj<'_, 'de> {
    type Error = Bail;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> R<Option<K::Value>> {
        let Some(key) = self.advance()? else {
            return Ok(None);
        };
        self.d.spend(1)?;
        match key {
            Key::Layout(k) => seed.deserialize(Val {
                d: self.d,
                what: What::Str(k),
            }),
            Key::Json(k) => seed.deserialize(de::value::StringDeserializer::<Bail>::new(k)),
        }
        .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> R<V::Value> {
        if let Some(v) = self.json_value.take() {
            return seed.deserialize(v).map_err(|_| Bail);
        }
        let what = self.value.take().ok_or(Bail)?;
        seed.deserialize(Val { d: self.d, what })
    }
}

/// The one entry of an external union's object: its tag, then its payload.
struct External<'s, 'a> {
    d: &'s mut Dec<'a>,
    tag: Option<&'a str>,
    value: Option<What<'a>>,
}

impl<'de> MapAccess<'de> for External<'_, 'de> {
    type Error = Bail;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> R<Option<K::Value>> {
        let Some(tag) = self.tag.take() else {
            return Ok(None);
        };
        seed.deserialize(Val {
            d: self.d,
            what: What::Str(tag),
        })
        .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> R<V::Value> {
        let what = self.value.take().ok_or(Bail)?;
        seed.deserialize(Val { d: self.d, what })
    }
}

/// The elements of a list, a wrapper's list, a tuple or a node id.
enum Items<'a> {
    /// Occurrences `at..hi` of a list of `inner`; packed scalars from `packed` first.
    List {
        inner: &'a Ty,
        at: usize,
        hi: usize,
        packed: &'a [u8],
        pos: usize,
    },
    /// Positional fields of a tuple, from their occurrences.
    Tuple {
        tys: &'a [Ty],
        next: usize,
        at: usize,
        hi: usize,
    },
    Bytes(&'a [u8], usize),
}

struct Seq<'s, 'a> {
    d: &'s mut Dec<'a>,
    items: Items<'a>,
    occ_base: usize,
}

impl Drop for Seq<'_, '_> {
    fn drop(&mut self) {
        self.d.occ.truncate(self.occ_base);
    }
}

impl<'a> Seq<'_, 'a> {
    fn next(&mut self) -> R<Option<What<'a>>> {
        let layout = self.d.layout;
        let occ = &self.d.occ;
        Ok(match &mut self.items {
            Items::Bytes(b, i) => match b.get(*i) {
                Some(x) => {
                    *i += 1;
                    Some(What::Scalar(&BYTE, Payload::Varint(u64::from(*x))))
                }
                None => None,
            },
            Items::List {
                inner,
                at,
                hi,
                packed,
                pos,
            } => {
                let inner: &'a Ty = inner;
                if *pos < packed.len() {
                    let p = match wire_of(inner) {
                        WireType::SixtyFourBit => {
                            let b = packed.get(*pos..*pos + 8).ok_or(Bail)?;
                            *pos += 8;
                            Payload::Fixed(u64::from_le_bytes(b.try_into().map_err(|_| Bail)?))
                        }
                        _ => Payload::Varint(varint(packed, pos)?),
                    };
                    return Ok(Some(What::Scalar(inner, p)));
                }
                if *at == *hi {
                    return Ok(None);
                }
                let o = occ[*at];
                *at += 1;
                if wire_of(inner) == WireType::LengthDelimited {
                    Some(what_of(layout, inner, o.payload)?)
                } else {
                    let Payload::Bytes(b) = o.payload else {
                        return Err(Bail);
                    };
                    *packed = b;
                    *pos = 0;
                    return self.next();
                }
            }
            Items::Tuple { tys, next, at, hi } => {
                let tys: &'a [Ty] = tys;
                let Some(t) = tys.get(*next) else {
                    return Ok(None);
                };
                let i = *next;
                *next += 1;
                let lo = *at;
                while *at < *hi && occ[*at].idx == i {
                    *at += 1;
                }
                if lo == *at {
                    Some(What::Zero(t))
                } else {
                    Some(what_of(layout, t, occ[*at - 1].payload)?)
                }
            }
        })
    }
}

impl<'de> SeqAccess<'de> for Seq<'_, 'de> {
    type Error = Bail;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> R<Option<T::Value>> {
        let Some(what) = self.next()? else {
            return Ok(None);
        };
        self.d.spend(1)?;
        seed.deserialize(Val { d: self.d, what }).map(Some)
    }
}

/// The deserializer of one value.
struct Val<'s, 'a> {
    d: &'s mut Dec<'a>,
    what: What<'a>,
}

impl<'a> Val<'_, 'a> {
    fn scalar<V: Visitor<'a>>(self, t: &'a Ty, p: Payload<'a>, v: V) -> R<V::Value> {
        let uint = |max: u64| match p {
            Payload::Varint(x) if x <= max => Ok(x),
            _ => Err(Bail),
        };
        match t {
            Ty::Scalar(Scalar::U8) => v.visit_u64(uint(u8::MAX.into())?),
            Ty::Scalar(Scalar::U16) => v.visit_u64(uint(u16::MAX.into())?),
            Ty::Scalar(Scalar::U32) => v.visit_u64(uint(u32::MAX.into())?),
            Ty::Scalar(Scalar::U64) => v.visit_u64(uint(u64::MAX)?),
            Ty::Scalar(s @ (Scalar::I32 | Scalar::I64)) => {
                let x = unzigzag(uint(u64::MAX)?);
                if *s == Scalar::I32 && i32::try_from(x).is_err() {
                    return Err(Bail);
                }
                match u64::try_from(x) {
                    Ok(u) => v.visit_u64(u),
                    Err(_) => v.visit_i64(x),
                }
            }
            Ty::Scalar(Scalar::Bool) => v.visit_bool(uint(1)? == 1),
            Ty::Scalar(Scalar::F64) => match p {
                Payload::Fixed(b) => {
                    let f = f64::from_bits(b);
                    // A number JSON cannot hold is the general decoder's to refuse.
                    if !f.is_finite() {
                        return Err(Bail);
                    }
                    v.visit_f64(f)
                }
                _ => Err(Bail),
            },
            Ty::Enum(e) => {
                let n = uint(u64::MAX)?;
                let values = self.d.layout.enum_values.get(e.id).ok_or(Bail)?;
                let name = match values.binary_search_by_key(&n, |(_, x)| *x) {
                    Ok(i) => &values[i].0,
                    Err(_) => return Err(Bail),
                };
                v.visit_borrowed_str(name)
            }
            _ => {
                let Payload::Bytes(b) = p else {
                    return Err(Bail);
                };
                self.d.spend(b.len() / 8)?;
                match t {
                    Ty::Scalar(Scalar::Str) => {
                        v.visit_borrowed_str(std::str::from_utf8(b).map_err(|_| Bail)?)
                    }
                    Ty::Scalar(Scalar::NodeId) if b.len() == 32 => v.visit_seq(Seq {
                        occ_base: self.d.occ.len(),
                        d: self.d,
                        items: Items::Bytes(b, 0),
                    }),
                    Ty::Scalar(Scalar::HexId) if b.len() == 32 => v.visit_string(hex(b)),
                    Ty::Scalar(Scalar::Json) => {
                        let mut j = serde_json::Deserializer::from_slice(b);
                        let out = (&mut j).deserialize_any(v).map_err(|_| Bail)?;
                        j.end().map_err(|_| Bail)?;
                        Ok(out)
                    }
                    _ => Err(Bail),
                }
            }
        }
    }

    fn message<V: Visitor<'a>>(self, m: &'a Msg, b: &'a [u8], v: V) -> R<V::Value> {
        let base = self.d.occ.len();
        match m {
            Msg::Union {
                style: Style::External,
                variants,
                ..
            } => {
                let (var, payload) = self.d.scan_union(variants, b)?;
                match &var.ty {
                    None => v.visit_borrowed_str(&var.tag),
                    Some(t) => {
                        let what = what_of(self.d.layout, t, payload)?;
                        v.visit_map(External {
                            d: self.d,
                            tag: Some(&var.tag),
                            value: Some(what),
                        })
                    }
                }
            }
            Msg::Wrapper(Ty::List(inner)) => {
                let (lo, hi) = self.d.scan_wrapper(b)?;
                v.visit_seq(Seq {
                    d: self.d,
                    items: Items::List {
                        inner,
                        at: lo,
                        hi,
                        packed: &[],
                        pos: 0,
                    },
                    occ_base: base,
                })
            }
            Msg::Tuple(tys) => {
                let mut pos = 0;
                while pos < b.len() {
                    let (n, payload) = next_field(b, &mut pos)?;
                    let idx = usize::try_from(n).map_err(|_| Bail)?.wrapping_sub(1);
                    let t = tys.get(idx).ok_or(Bail)?;
                    let last = self.d.occ[base..].last().map_or(0, |o| o.idx);
                    if idx < last || wire(payload) != field_wire(t) || matches!(t, Ty::List(_)) {
                        return Err(Bail);
                    }
                    self.d.occ.push(Occ { idx, payload });
                }
                let hi = self.d.occ.len();
                v.visit_seq(Seq {
                    d: self.d,
                    items: Items::Tuple {
                        tys,
                        next: 0,
                        at: base,
                        hi,
                    },
                    occ_base: base,
                })
            }
            m => {
                let first = self.d.level(m, b)?;
                v.visit_map(Obj::new(self.d, first, base))
            }
        }
    }
}

impl<'de> Deserializer<'de> for Val<'_, 'de> {
    type Error = Bail;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> R<V::Value> {
        match self.what {
            What::Str(s) => v.visit_borrowed_str(s),
            What::Null => v.visit_unit(),
            What::Scalar(t, p) => self.scalar(t, p, v),
            What::Msg(m, b) => self.message(m, b, v),
            What::List(inner, lo, hi) => v.visit_seq(Seq {
                occ_base: self.d.occ.len(),
                d: self.d,
                items: Items::List {
                    inner,
                    at: lo,
                    hi,
                    packed: &[],
                    pos: 0,
                },
            }),
            What::Zero(t) => match t {
                Ty::List(_) => v.visit_seq(Seq {
                    occ_base: self.d.occ.len(),
                    d: self.d,
                    items: Items::Bytes(&[], 0),
                }),
                Ty::Scalar(Scalar::Str) => v.visit_borrowed_str(""),
                Ty::Scalar(Scalar::Bool) => v.visit_bool(false),
                Ty::Scalar(Scalar::F64) => v.visit_f64(0.0),
                Ty::Scalar(Scalar::Json) => v.visit_unit(),
                Ty::Scalar(Scalar::NodeId | Scalar::HexId) | Ty::Enum(_) => Err(Bail),
                Ty::Scalar(_) => v.visit_u64(0),
                Ty::Msg(r) => {
                    let m = self.d.layout.msg(r).ok_or(Bail)?;
                    self.message(m, &[], v)
                }
            },
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> R<V::Value> {
        match self.what {
            What::Null | What::Zero(Ty::Scalar(Scalar::Json)) => v.visit_none(),
            What::Scalar(Ty::Scalar(Scalar::Json), Payload::Bytes(b)) => {
                let mut j = serde_json::Deserializer::from_slice(b);
                let out = (&mut j).deserialize_option(v).map_err(|_| Bail)?;
                j.end().map_err(|_| Bail)?;
                Ok(out)
            }
            _ => v.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, v: V) -> R<V::Value> {
        // serde_json's raw-value protocol (a decoder keeping a value's JSON text for later) is
        // answered with the value's JSON, as the `Value` decoder answers it; a node id, which asks
        // the same way, reads its bytes.
        if name == RAW_VALUE_TOKEN
            && !matches!(self.what, What::Scalar(Ty::Scalar(Scalar::NodeId), _))
        {
            let json = serde_json::Value::deserialize(self)?;
            return json.deserialize_newtype_struct(name, v).map_err(|_| Bail);
        }
        v.visit_newtype_struct(self)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, v: V) -> R<V::Value> {
        match self.what {
            What::Scalar(Ty::Scalar(Scalar::NodeId), Payload::Bytes(b)) if b.len() == 32 => {
                v.visit_borrowed_bytes(b)
            }
            _ => self.deserialize_any(v),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        byte_buf unit unit_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}
