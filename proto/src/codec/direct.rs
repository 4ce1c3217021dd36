//! The direct encoder: the encoding of [`super::encode`] written straight into one buffer, without
//! the general encoder's per-message field lists, copies of the JSON or paths.
//!
//! It takes the common case only: a record without [`UNKNOWN_FIELDS_KEY`] anywhere, whose struct
//! messages have their fields in number order below `absent_keys`. Anything else, and every error,
//! is a [`Bail`], and the general encoder (the reference, which also names the path of an error)
//! encodes the record instead. Where both take a record their bytes are the same
//! (`direct_and_general_encoders_agree` in the tests below).

use prost::encoding::{WireType, encode_key};
use serde_json::{Map, Value};

use diagwire_runtime::proto::{bytes_field, close_len, hex32, open_len};

use super::encode::Enc;
use super::{Bail, MAX_DEPTH, Misfit, UNKNOWN_FIELDS_KEY, is_zero, wire_of};
use crate::index::{Codec, Field, Msg, Names, Presence, Scalar, Style, Ty, Variant};

/// The variant of a union with tag `t`.
fn find_variant<'l>(
    variants: &'l [Variant],
    by_tag: Option<&'l Names<String, usize>>,
    t: &str,
) -> Option<&'l Variant> {
    match by_tag {
        Some(m) => m.get(t).map(|i| &variants[*i]),
        None => variants.iter().find(|x| x.tag == t),
    }
}

fn owned(fields: &[Field], k: &str) -> bool {
    fields.iter().any(|f| !f.flatten && f.key == k)
}

/// The most keys a view hides; a record whose views hide more is the general encoder's.
const MAX_HIDDEN: usize = 16;

/// The most fields of a struct that flattens a union; a larger one is the general encoder's.
const MAX_FLATTENING_FIELDS: usize = 32;

/// A key of an object, by address: a view hides keys it took from the same map.
fn addr(k: &String) -> usize {
    std::ptr::from_ref(k) as usize
}

/// An object, or the part of one that a flattened union or an internal variant's body sees (what
/// the general encoder copies into a new object): the object less the keys an enclosing message
/// owns and the union's tag, or only an adjacent union's tag and content.
#[derive(Clone, Copy)]
struct Obj<'a> {
    map: &'a Map<String, Value>,
    /// The keys of `map` left out, by address.
    hidden: [usize; MAX_HIDDEN],
    n_hidden: usize,
    /// When set, only these keys are visible.
    only: Option<(&'a str, Option<&'a str>)>,
    /// How many keys are visible.
    len: usize,
}

impl<'a> Obj<'a> {
    fn new(map: &'a Map<String, Value>) -> Self {
        Obj {
            map,
            hidden: [0; MAX_HIDDEN],
            n_hidden: 0,
            only: None,
            len: map.len(),
        }
    }

    fn visible(&self, k: &String) -> bool {
        !self.hidden[..self.n_hidden].contains(&addr(k))
            && self
                .only
                .is_none_or(|(t, c)| k == t || c == Some(k.as_str()))
    }

    fn entry(&self, k: &str) -> Option<(&'a String, &'a Value)> {
        let (key, v) = self.map.get_key_value(k)?;
        (self.n_hidden == 0 && self.only.is_none() || self.visible(key)).then_some((key, v))
    }

    fn get(&self, k: &str) -> Option<&'a Value> {
        self.entry(k).map(|(_, v)| v)
    }

    /// This view less the key `k` (one of its visible keys).
    fn hide(mut self, k: &'a String) -> Result<Self, Bail> {
        if self.n_hidden == MAX_HIDDEN {
            return Err(Bail);
        }
        self.hidden[self.n_hidden] = addr(k);
        self.n_hidden += 1;
        self.len -= 1;
        Ok(self)
    }

    fn iter(self) -> impl Iterator<Item = (&'a String, &'a Value)> {
        self.map.iter().filter(move |(k, _)| self.visible(k))
    }

    /// The visible part as an object of its own (for `unknown_json`).
    fn to_value(self) -> Value {
        Value::Object(
            self.iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Map<String, Value>>(),
        )
    }
}

/// A value to encode: a JSON value, or an object view.
#[derive(Clone, Copy)]
enum Src<'a> {
    Val(&'a Value),
    Obj(Obj<'a>),
}

impl<'a> Src<'a> {
    fn object(self) -> Option<Obj<'a>> {
        match self {
            Src::Val(Value::Object(map)) => Some(Obj::new(map)),
            Src::Val(_) => None,
            Src::Obj(o) => Some(o),
        }
    }

    fn value(self) -> Option<&'a Value> {
        match self {
            Src::Val(v) => Some(v),
            Src::Obj(_) => None,
        }
    }
}

/// Writes `key`, then what `body` writes, preceded by its length.
fn delimited<R>(n: u32, out: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    let at = open_len(n, out);
    let r = body(out);
    close_len(at, out);
    r
}

pub(super) struct Direct<'a> {
    codec: &'a Codec,
    depth: usize,
}

type Fit = Result<Result<(), Misfit>, Bail>;

impl<'a> Direct<'a> {
    pub(super) fn encode(codec: &'a Codec, msg: &str, v: &Value) -> Result<Vec<u8>, Bail> {
        let mut d = Direct { codec, depth: 0 };
        let mut out = Vec::with_capacity(256);
        let msg = codec.message(msg).ok_or(Bail)?;
        match d.message(msg, Src::Val(v), &mut out)? {
            Ok(()) => Ok(out),
            Err(Misfit) => Err(Bail),
        }
    }

    fn scalar(&self, t: &Ty, v: &Value, out: &mut Vec<u8>) -> Result<(), Misfit> {
        Enc {
            codec: self.codec,
            depth: 0,
        }
        .scalar(t, v, out)
    }

    /// Encodes `src` as field `n` of type `t` (every element of a list); on a misfit `out` is as it
    /// was.
    fn field(&mut self, n: u32, t: &Ty, src: Src<'_>, out: &mut Vec<u8>) -> Fit {
        let start = out.len();
        let r = self.field_inner(n, t, src, out)?;
        if r.is_err() {
            out.truncate(start);
        }
        Ok(r)
    }

    fn field_inner(&mut self, n: u32, t: &Ty, src: Src<'_>, out: &mut Vec<u8>) -> Fit {
        if let Ty::Msg(m) = t {
            let msg = self.codec.msg(m).ok_or(Bail)?;
            return delimited(n, out, |out| self.message(msg, src, out));
        }
        let Some(v) = src.value() else {
            // An object view is no list, string, node id or scalar; JSON text of one is left to
            // the general encoder.
            return match t {
                Ty::Scalar(Scalar::Json) => Err(Bail),
                _ => Ok(Err(Misfit)),
            };
        };
        match t {
            Ty::List(inner) => {
                let Some(a) = v.as_array() else {
                    return Ok(Err(Misfit));
                };
                if wire_of(inner) != WireType::LengthDelimited {
                    return Ok(delimited(n, out, |out| {
                        a.iter().try_for_each(|x| self.scalar(inner, x, out))
                    }));
                }
                for x in a {
                    if self.field_inner(n, inner, Src::Val(x), out)?.is_err() {
                        return Ok(Err(Misfit));
                    }
                }
                Ok(Ok(()))
            }
            Ty::Scalar(Scalar::Str) => match v.as_str() {
                Some(s) => {
                    bytes_field(n, s.as_bytes(), out);
                    Ok(Ok(()))
                }
                None => Ok(Err(Misfit)),
            },
            Ty::Scalar(Scalar::NodeId) => {
                let Some(a) = v.as_array().filter(|a| a.len() == 32) else {
                    return Ok(Err(Misfit));
                };
                let mut b = [0u8; 32];
                for (slot, x) in b.iter_mut().zip(a) {
                    match x.as_u64() {
                        Some(n) if n <= 255 => *slot = n as u8,
                        _ => return Ok(Err(Misfit)),
                    }
                }
                bytes_field(n, &b, out);
                Ok(Ok(()))
            }
            Ty::Scalar(Scalar::HexId) => match v.as_str().and_then(hex32) {
                Some(b) => {
                    bytes_field(n, &b, out);
                    Ok(Ok(()))
                }
                None => Ok(Err(Misfit)),
            },
            Ty::Scalar(Scalar::Json) => {
                delimited(n, out, |out| serde_json::to_writer(out, v)).map_err(|_| Bail)?;
                Ok(Ok(()))
            }
            t => {
                let start = out.len();
                encode_key(n, wire_of(t), out);
                if self.scalar(t, v, out).is_err() {
                    out.truncate(start);
                    return Ok(Err(Misfit));
                }
                Ok(Ok(()))
            }
        }
    }

    fn message(&mut self, msg: &'a Msg, src: Src<'_>, out: &mut Vec<u8>) -> Fit {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Bail);
        }
        let r = match msg {
            Msg::Struct {
                fields, in_order, ..
            } => match src.object() {
                Some(_) if !in_order => Err(Bail),
                Some(o) => self.structure(fields, o, out).map(Ok),
                None => Ok(Err(Misfit)),
            },
            Msg::Union {
                style,
                tag,
                content,
                variants,
                by_tag,
            } => self.union(
                *style,
                tag,
                content.as_deref(),
                (variants, by_tag.as_ref()),
                src,
                out,
            ),
            Msg::Wrapper(t) => self.field(1, t, src, out),
            Msg::Tuple(ts) => match src.value().and_then(Value::as_array) {
                Some(a) if a.len() == ts.len() => {
                    let mut r = Ok(Ok(()));
                    for (i, (t, x)) in ts.iter().zip(a).enumerate() {
                        if is_zero(t, x) {
                            continue;
                        }
                        if self.field(i as u32 + 1, t, Src::Val(x), out)?.is_err() {
                            r = Ok(Err(Misfit));
                        }
                    }
                    r
                }
                _ => Ok(Err(Misfit)),
            },
        };
        self.depth -= 1;
        r
    }

    fn structure(&mut self, fields: &[Field], o: Obj<'_>, out: &mut Vec<u8>) -> Result<(), Bail> {
        if o.map.contains_key(UNKNOWN_FIELDS_KEY) {
            return Err(Bail);
        }
        let mut unknown: Option<Map<String, Value>> = None;
        let mut put = |k: &String, x: &Value| {
            unknown
                .get_or_insert_with(Map::new)
                .insert(k.clone(), x.clone());
        };
        let mut absent: Vec<&str> = Vec::new();
        let mut flattened = false;
        // Keys of this message's own fields that the object has.
        let mut found = 0;
        // A struct that flattens a union looks its own keys up first: the union sees the rest.
        let mut looked: [Option<(&String, &Value)>; MAX_FLATTENING_FIELDS] =
            [None; MAX_FLATTENING_FIELDS];
        let mut rest = None;
        if fields.iter().any(|f| f.flatten) {
            if fields.len() > MAX_FLATTENING_FIELDS {
                return Err(Bail);
            }
            let mut view = o;
            for (f, slot) in fields.iter().zip(looked.iter_mut()) {
                if !f.flatten {
                    *slot = o.entry(&f.key);
                    if let Some((k, _)) = *slot {
                        view = view.hide(k)?;
                    }
                }
            }
            rest = Some(view);
        }
        for (i, f) in fields.iter().enumerate() {
            if f.flatten {
                flattened = true;
                let Ty::Msg(u) = &f.ty else {
                    return Err(Bail);
                };
                let Some(mut view) = rest else {
                    return Err(Bail);
                };
                if let Some(Msg::Union {
                    style: Style::Adjacent,
                    tag,
                    content,
                    ..
                }) = self.codec.msg(u)
                {
                    let (t, c) = (tag.as_str(), content.as_deref());
                    let mut len = 0;
                    for (k, x) in view.iter() {
                        if k == t || c == Some(k.as_str()) {
                            len += 1;
                        } else {
                            put(k, x);
                        }
                    }
                    view.only = Some((t, c));
                    view.len = len;
                }
                if self.field(f.number, &f.ty, Src::Obj(view), out)?.is_err() {
                    return Err(Bail);
                }
                continue;
            }
            let got = if rest.is_some() {
                looked[i].map(|(_, v)| v)
            } else {
                o.get(&f.key)
            };
            found += usize::from(got.is_some());
            match got {
                None => {
                    if matches!(
                        f.presence,
                        Presence::Required | Presence::Default | Presence::Nullable
                    ) {
                        absent.push(&f.key);
                    }
                }
                Some(Value::Null) if f.presence == Presence::Nullable => {}
                Some(x) => {
                    let zero = is_zero(&f.ty, x);
                    match f.presence {
                        Presence::Required | Presence::Default if zero => continue,
                        Presence::SkipDefault if zero => {
                            put(&f.key, x);
                            continue;
                        }
                        _ => {}
                    }
                    if self.field(f.number, &f.ty, Src::Val(x), out)?.is_err() {
                        put(&f.key, x);
                    }
                }
            }
        }
        // Keys no field has: only when the object has more keys than its fields found.
        if !flattened && found < o.len {
            for (k, x) in o.iter() {
                if !owned(fields, k) {
                    put(k, x);
                }
            }
        }
        for k in absent {
            bytes_field(self.codec.absent_keys, k.as_bytes(), out);
        }
        if let Some(u) = unknown {
            let j = serde_json::to_vec(&Value::Object(u)).map_err(|_| Bail)?;
            bytes_field(self.codec.unknown_json, &j, out);
        }
        Ok(())
    }

    fn union(
        &mut self,
        style: Style,
        tag: &str,
        content: Option<&str>,
        (variants, by_tag): (&[Variant], Option<&Names<String, usize>>),
        src: Src<'_>,
        out: &mut Vec<u8>,
    ) -> Fit {
        let obj = src.object();
        if let Some(o) = obj {
            if o.map.contains_key(UNKNOWN_FIELDS_KEY) {
                return Err(Bail);
            }
        } else if style != Style::External {
            return Ok(Err(Misfit));
        }
        let find = |t: &str| find_variant(variants, by_tag, t);
        let known = match (style, obj) {
            (Style::Internal, Some(o)) => match o.entry(tag) {
                Some((key, t)) => match t.as_str().and_then(find) {
                    Some(Variant {
                        number,
                        ty: Some(t),
                        ..
                    }) => {
                        let body = o.hide(key)?;
                        self.field(*number, t, Src::Obj(body), out)?.is_ok()
                    }
                    _ => false,
                },
                None => false,
            },
            (Style::Adjacent, Some(o)) => match o.get(tag).and_then(Value::as_str).and_then(find) {
                Some(var) => {
                    let c = content.and_then(|c| o.get(c));
                    let others = o.len > 1 + usize::from(c.is_some() && content != Some(tag));
                    match (others, &var.ty, c) {
                        (false, None, None) => {
                            bytes_field(var.number, &[], out);
                            true
                        }
                        (false, Some(t), Some(c)) => {
                            self.field(var.number, t, Src::Val(c), out)?.is_ok()
                        }
                        _ => false,
                    }
                }
                None => false,
            },
            (Style::External, None) => match src.value().and_then(Value::as_str) {
                Some(s) => match by_tag.map_or_else(
                    || variants.iter().find(|x| x.tag == s && x.ty.is_none()),
                    |_| find(s).filter(|x| x.ty.is_none()),
                ) {
                    Some(var) => {
                        bytes_field(var.number, &[], out);
                        true
                    }
                    None => false,
                },
                None => false,
            },
            (Style::External, Some(o)) if o.len == 1 => match o.iter().next() {
                Some((k, c)) => match find(k) {
                    Some(Variant {
                        number,
                        ty: Some(t),
                        ..
                    }) => self.field(*number, t, Src::Val(c), out)?.is_ok(),
                    _ => false,
                },
                _ => false,
            },
            _ => false,
        };
        if !known {
            let j = match (src, obj) {
                (_, Some(o)) if o.len == 0 => None,
                (Src::Val(v), _) => Some(serde_json::to_vec(v)),
                (Src::Obj(o), _) => Some(serde_json::to_vec(&o.to_value())),
            };
            if let Some(j) = j {
                bytes_field(self.codec.unknown_json, &j.map_err(|_| Bail)?, out);
            }
        }
        Ok(Ok(()))
    }
}
