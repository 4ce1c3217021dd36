//! The general encoder: JSON → protobuf for every record a descriptor's message can hold, keeping
//! what it cannot hold in `unknown_json` and raw fields under [`super::UNKNOWN_FIELDS_KEY`] at
//! their numbers, with the JSON pointer of an error. The direct encoder must write its bytes.

use prost::encoding::{WireType, encode_key, encode_varint};
use serde_json::{Map, Number, Value};

use diagwire_runtime::proto::zigzag;

use super::decode::split_fields;
use super::{Error, MAX_DEPTH, Misfit, UNKNOWN_FIELDS_KEY, is_zero, unhex, wire_of};
use crate::index::{Codec, Field, Msg, Presence, Scalar, Style, Ty};

pub(super) struct Enc<'a> {
    pub(super) codec: &'a Codec,
    pub(super) depth: usize,
}

pub(super) fn eerr(path: &str, message: impl Into<String>) -> Error {
    Error {
        path: path.to_owned(),
        offset: 0,
        message: message.into(),
    }
}

impl Enc<'_> {
    /// The varint / fixed value of a scalar or enum, without its key.
    pub(super) fn scalar(&self, t: &Ty, v: &Value, out: &mut Vec<u8>) -> Result<(), Misfit> {
        let uint = |max: u64| {
            v.as_number()
                .filter(|n| n.is_u64())
                .and_then(Number::as_u64)
                .filter(|n| *n <= max)
                .ok_or(Misfit)
        };
        let int = |min: i64, max: i64| {
            v.as_number()
                .filter(|n| !n.is_f64())
                .and_then(Number::as_i64)
                .filter(|n| (min..=max).contains(n))
                .ok_or(Misfit)
        };
        match t {
            Ty::Scalar(Scalar::U8) => encode_varint(uint(u8::MAX.into())?, out),
            Ty::Scalar(Scalar::U16) => encode_varint(uint(u16::MAX.into())?, out),
            Ty::Scalar(Scalar::U32) => encode_varint(uint(u32::MAX.into())?, out),
            Ty::Scalar(Scalar::U64) => encode_varint(uint(u64::MAX)?, out),
            Ty::Scalar(Scalar::I32) => {
                encode_varint(zigzag(int(i32::MIN.into(), i32::MAX.into())?), out)
            }
            Ty::Scalar(Scalar::I64) => encode_varint(zigzag(int(i64::MIN, i64::MAX)?), out),
            Ty::Scalar(Scalar::Bool) => encode_varint(u64::from(v.as_bool().ok_or(Misfit)?), out),
            Ty::Scalar(Scalar::F64) => {
                let n = v.as_number().filter(|n| n.is_f64()).ok_or(Misfit)?;
                out.extend_from_slice(&n.as_f64().ok_or(Misfit)?.to_bits().to_le_bytes());
            }
            Ty::Enum(e) => {
                let (by_name, _) = self.codec.enum_numbers(e).ok_or(Misfit)?;
                encode_varint(*by_name.get(v.as_str().ok_or(Misfit)?).ok_or(Misfit)?, out);
            }
            _ => return Err(Misfit),
        }
        Ok(())
    }

    /// The payload of a length-delimited value (string, bytes, message).
    fn len_payload(
        &mut self,
        t: &Ty,
        v: &Value,
        path: &str,
    ) -> Result<Result<Vec<u8>, Misfit>, Error> {
        Ok(Ok(match t {
            Ty::Scalar(Scalar::Str) => match v.as_str() {
                Some(s) => s.as_bytes().to_vec(),
                None => return Ok(Err(Misfit)),
            },
            Ty::Scalar(Scalar::NodeId) => {
                let Some(a) = v.as_array().filter(|a| a.len() == 32) else {
                    return Ok(Err(Misfit));
                };
                let mut b = Vec::with_capacity(32);
                for x in a {
                    match x
                        .as_number()
                        .filter(|n| n.is_u64())
                        .and_then(Number::as_u64)
                    {
                        Some(n) if n <= 255 => b.push(n as u8),
                        _ => return Ok(Err(Misfit)),
                    }
                }
                b
            }
            Ty::Scalar(Scalar::HexId) => match v.as_str().filter(|s| s.len() == 64).and_then(unhex)
            {
                Some(b) => b,
                None => return Ok(Err(Misfit)),
            },
            Ty::Scalar(Scalar::Json) => {
                serde_json::to_vec(v).map_err(|e| eerr(path, e.to_string()))?
            }
            Ty::Msg(m) => return self.message(m, v, path),
            _ => return Ok(Err(Misfit)),
        }))
    }

    /// Encodes `v` as field `n` of type `t` (every element of a list), appending to `out`.
    fn field(
        &mut self,
        n: u32,
        t: &Ty,
        v: &Value,
        path: &str,
        out: &mut Vec<u8>,
    ) -> Result<Result<(), Misfit>, Error> {
        match t {
            Ty::List(inner) => {
                let Some(a) = v.as_array() else {
                    return Ok(Err(Misfit));
                };
                if wire_of(inner) != WireType::LengthDelimited {
                    let mut packed = Vec::new();
                    for x in a {
                        if self.scalar(inner, x, &mut packed).is_err() {
                            return Ok(Err(Misfit));
                        }
                    }
                    encode_key(n, WireType::LengthDelimited, out);
                    encode_varint(packed.len() as u64, out);
                    out.extend_from_slice(&packed);
                } else {
                    for (i, x) in a.iter().enumerate() {
                        if self
                            .field(n, inner, x, &format!("{path}/{i}"), out)?
                            .is_err()
                        {
                            return Ok(Err(Misfit));
                        }
                    }
                }
            }
            t if wire_of(t) != WireType::LengthDelimited => {
                let mut b = Vec::new();
                if self.scalar(t, v, &mut b).is_err() {
                    return Ok(Err(Misfit));
                }
                encode_key(n, wire_of(t), out);
                out.extend_from_slice(&b);
            }
            t => {
                let b = match self.len_payload(t, v, path)? {
                    Ok(b) => b,
                    Err(m) => return Ok(Err(m)),
                };
                encode_key(n, WireType::LengthDelimited, out);
                encode_varint(b.len() as u64, out);
                out.extend_from_slice(&b);
            }
        }
        Ok(Ok(()))
    }

    fn message(
        &mut self,
        name: &str,
        v: &Value,
        path: &str,
    ) -> Result<Result<Vec<u8>, Misfit>, Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(eerr(
                path,
                format!("nested deeper than {MAX_DEPTH} messages"),
            ));
        }
        let msg = self
            .codec
            .message(name)
            .ok_or_else(|| eerr(path, format!("codec has no message `{name}`")))?;
        let r = match msg {
            Msg::Struct { fields, .. } => match v.as_object() {
                Some(o) => self.structure(name, fields, o, path).map(Ok),
                None => Ok(Err(Misfit)),
            },
            Msg::Union {
                style,
                tag,
                content,
                variants,
                ..
            } => self.union(name, *style, tag, content.as_deref(), variants, v, path),
            Msg::Wrapper(t) => {
                let mut out = Vec::new();
                self.field(1, t, v, path, &mut out).map(|r| r.map(|()| out))
            }
            Msg::Tuple(ts) => match v.as_array().filter(|a| a.len() == ts.len()) {
                Some(a) => {
                    let mut out = Vec::new();
                    let mut ok = Ok(());
                    for (i, (t, x)) in ts.iter().zip(a).enumerate() {
                        if is_zero(t, x) {
                            continue;
                        }
                        if self
                            .field(i as u32 + 1, t, x, &format!("{path}/{i}"), &mut out)?
                            .is_err()
                        {
                            ok = Err(Misfit);
                        }
                    }
                    Ok(ok.map(|()| out))
                }
                None => Ok(Err(Misfit)),
            },
        };
        self.depth -= 1;
        r
    }

    /// Takes this message's raw unknown fields out of `$protobuf_unknown`.
    fn take_raw(
        &self,
        name: &str,
        raw: &mut Map<String, Value>,
        path: &str,
    ) -> Result<Vec<(u32, Vec<u8>)>, Error> {
        match raw.remove(name) {
            None => Ok(Vec::new()),
            Some(Value::String(h)) => unhex(&h).and_then(|b| split_fields(&b)).ok_or_else(|| {
                eerr(
                    path,
                    format!("`{UNKNOWN_FIELDS_KEY}.{name}` is not the hex of protobuf fields"),
                )
            }),
            Some(_) => Err(eerr(
                path,
                format!("`{UNKNOWN_FIELDS_KEY}.{name}` is not a string"),
            )),
        }
    }

    fn raw_map(o: &Map<String, Value>, path: &str) -> Result<Map<String, Value>, Error> {
        match o.get(UNKNOWN_FIELDS_KEY) {
            None => Ok(Map::new()),
            Some(Value::Object(m)) => Ok(m.clone()),
            Some(_) => Err(eerr(
                path,
                format!("`{UNKNOWN_FIELDS_KEY}` is not an object"),
            )),
        }
    }

    /// A message's bytes: its known fields in the order of their numbers, merged with the raw
    /// fields it carried in the order they came, so the raw fields decode back to the same hex
    /// (a decoder keeps them in the order it met them) and a record whose raw fields are in number
    /// order, as a writer puts them, comes out in number order throughout.
    fn finish(raw: Vec<(u32, Vec<u8>)>, known: &mut [(u32, Vec<u8>)]) -> Vec<u8> {
        known.sort_by_key(|(n, _)| *n);
        let len = raw.iter().chain(known.iter()).map(|(_, b)| b.len()).sum();
        let mut out = Vec::with_capacity(len);
        let mut raw = raw.into_iter().peekable();
        for (n, b) in known.iter() {
            while let Some((_, r)) = raw.next_if(|(m, _)| m < n) {
                out.extend_from_slice(&r);
            }
            out.extend_from_slice(b);
        }
        for (_, r) in raw {
            out.extend_from_slice(&r);
        }
        out
    }

    fn structure(
        &mut self,
        name: &str,
        fields: &[Field],
        o: &Map<String, Value>,
        path: &str,
    ) -> Result<Vec<u8>, Error> {
        let mut raw = Self::raw_map(o, path)?;
        let raw_chunks = self.take_raw(name, &mut raw, path)?;
        let raw_numbers: Vec<u32> = raw_chunks.iter().map(|(n, _)| *n).collect();
        let mut chunks = Vec::new();
        let mut unknown = Map::new();
        let mut absent = Vec::new();
        let own = |k: &str| fields.iter().any(|f| !f.flatten && f.key == k);
        let mut flattened = false;
        for f in fields {
            let fp = format!("{path}/{}", f.key);
            if raw_numbers.contains(&f.number) {
                // The reader kept this field's bytes raw (it could not name their value), so a key
                // of the field here came from `unknown_json`, and goes back there; the raw bytes
                // stand for the field.
                if f.flatten {
                    flattened = true;
                    for (k, x) in o {
                        if !own(k) && k != UNKNOWN_FIELDS_KEY {
                            unknown.insert(k.clone(), x.clone());
                        }
                    }
                } else if let Some(x) = o.get(&f.key) {
                    unknown.insert(f.key.clone(), x.clone());
                }
                continue;
            }
            if f.flatten {
                flattened = true;
                let Ty::Msg(u) = &f.ty else {
                    return Err(eerr(path, "a flattened field is a union message"));
                };
                let adjacent = match self.codec.msg(u) {
                    Some(Msg::Union {
                        style: Style::Adjacent,
                        tag,
                        content,
                        ..
                    }) => Some((tag.clone(), content.clone())),
                    _ => None,
                };
                let mut rest = Map::new();
                for (k, x) in o {
                    if own(k) || k == UNKNOWN_FIELDS_KEY {
                        continue;
                    }
                    let to_union = match &adjacent {
                        Some((t, c)) => k == t || c.as_deref() == Some(k.as_str()),
                        None => true,
                    };
                    if to_union {
                        rest.insert(k.clone(), x.clone());
                    } else {
                        unknown.insert(k.clone(), x.clone());
                    }
                }
                if !raw.is_empty() {
                    rest.insert(
                        UNKNOWN_FIELDS_KEY.to_owned(),
                        Value::Object(std::mem::take(&mut raw)),
                    );
                }
                let mut b = Vec::new();
                if self
                    .field(f.number, &f.ty, &Value::Object(rest), path, &mut b)?
                    .is_err()
                {
                    return Err(eerr(path, "the flattened union does not fit"));
                }
                chunks.push((f.number, b));
                continue;
            }
            match o.get(&f.key) {
                None => {
                    let written = matches!(
                        f.presence,
                        Presence::Required | Presence::Default | Presence::Nullable
                    );
                    if written {
                        absent.push(f.key.clone());
                    }
                }
                Some(Value::Null) if f.presence == Presence::Nullable => {}
                Some(x) => {
                    let zero = is_zero(&f.ty, x);
                    match f.presence {
                        Presence::Required | Presence::Default if zero => continue,
                        Presence::SkipDefault if zero => {
                            unknown.insert(f.key.clone(), x.clone());
                            continue;
                        }
                        _ => {}
                    }
                    let mut b = Vec::new();
                    match self.field(f.number, &f.ty, x, &fp, &mut b)? {
                        Ok(()) => chunks.push((f.number, b)),
                        Err(Misfit) => {
                            unknown.insert(f.key.clone(), x.clone());
                        }
                    }
                }
            }
        }
        if !flattened {
            for (k, x) in o {
                if !own(k) && k != UNKNOWN_FIELDS_KEY {
                    unknown.insert(k.clone(), x.clone());
                }
            }
        }
        if let Some(k) = raw.keys().next() {
            return Err(eerr(
                path,
                format!("`{UNKNOWN_FIELDS_KEY}.{k}` names no message here"),
            ));
        }
        for k in absent {
            let mut b = Vec::new();
            encode_key(self.codec.absent_keys, WireType::LengthDelimited, &mut b);
            encode_varint(k.len() as u64, &mut b);
            b.extend_from_slice(k.as_bytes());
            chunks.push((self.codec.absent_keys, b));
        }
        if !unknown.is_empty() {
            let j = serde_json::to_vec(&Value::Object(unknown))
                .map_err(|e| eerr(path, e.to_string()))?;
            let mut b = Vec::new();
            encode_key(self.codec.unknown_json, WireType::LengthDelimited, &mut b);
            encode_varint(j.len() as u64, &mut b);
            b.extend_from_slice(&j);
            chunks.push((self.codec.unknown_json, b));
        }
        Ok(Self::finish(raw_chunks, &mut chunks))
    }

    #[allow(clippy::too_many_arguments)]
    fn union(
        &mut self,
        name: &str,
        style: Style,
        tag: &str,
        content: Option<&str>,
        variants: &[crate::index::Variant],
        v: &Value,
        path: &str,
    ) -> Result<Result<Vec<u8>, Misfit>, Error> {
        let mut chunks = Vec::new();
        let mut raw_chunks = Vec::new();
        let mut value = v.clone();
        if let Value::Object(o) = &mut value {
            let mut raw = Self::raw_map(o, path)?;
            raw_chunks = self.take_raw(name, &mut raw, path)?;
            o.remove(UNKNOWN_FIELDS_KEY);
            if !raw.is_empty() {
                o.insert(UNKNOWN_FIELDS_KEY.to_owned(), Value::Object(raw));
            }
        } else if style != Style::External {
            return Ok(Err(Misfit));
        }
        let mut known: Option<Vec<u8>> = None;
        match (style, &value) {
            (Style::Internal, Value::Object(o)) => {
                if let Some(var) = o
                    .get(tag)
                    .and_then(Value::as_str)
                    .and_then(|t| variants.iter().find(|x| x.tag == t))
                {
                    let mut body = o.clone();
                    body.remove(tag);
                    if let Some(t) = &var.ty {
                        let mut b = Vec::new();
                        if self
                            .field(var.number, t, &Value::Object(body), path, &mut b)?
                            .is_ok()
                        {
                            known = Some(b);
                        }
                    }
                }
            }
            (Style::Adjacent, Value::Object(o)) => {
                if let Some(var) = o
                    .get(tag)
                    .and_then(Value::as_str)
                    .and_then(|t| variants.iter().find(|x| x.tag == t))
                {
                    let others = o
                        .keys()
                        .filter(|k| *k != tag && Some(k.as_str()) != content)
                        .count();
                    let c = content.and_then(|c| o.get(c));
                    if others == 0 {
                        let mut b = Vec::new();
                        match (&var.ty, c) {
                            (None, None) => {
                                encode_key(var.number, WireType::LengthDelimited, &mut b);
                                encode_varint(0, &mut b);
                                known = Some(b);
                            }
                            (Some(t), Some(c))
                                if self.field(var.number, t, c, path, &mut b)?.is_ok() =>
                            {
                                known = Some(b);
                            }
                            _ => {}
                        }
                    }
                }
            }
            (Style::External, Value::String(s)) => {
                if let Some(var) = variants.iter().find(|x| x.tag == *s && x.ty.is_none()) {
                    let mut b = Vec::new();
                    encode_key(var.number, WireType::LengthDelimited, &mut b);
                    encode_varint(0, &mut b);
                    known = Some(b);
                }
            }
            (Style::External, Value::Object(o)) if o.len() == 1 => {
                let (k, c) = o
                    .iter()
                    .next()
                    .map(|(k, c)| (k.clone(), c.clone()))
                    .unwrap_or_default();
                if let Some(var) = variants.iter().find(|x| x.tag == k) {
                    if let Some(t) = &var.ty {
                        let mut b = Vec::new();
                        if self.field(var.number, t, &c, path, &mut b)?.is_ok() {
                            known = Some(b);
                        }
                    }
                }
            }
            _ => {}
        }
        match known {
            Some(b) => chunks.push((0, b)),
            None => {
                let empty = value.as_object().is_some_and(Map::is_empty);
                if !empty {
                    let j = serde_json::to_vec(&value).map_err(|e| eerr(path, e.to_string()))?;
                    let mut b = Vec::new();
                    encode_key(self.codec.unknown_json, WireType::LengthDelimited, &mut b);
                    encode_varint(j.len() as u64, &mut b);
                    b.extend_from_slice(&j);
                    chunks.push((self.codec.unknown_json, b));
                }
            }
        }
        // A known variant sorts by its own number.
        for c in &mut chunks {
            if c.0 == 0 {
                c.0 = split_fields(&c.1)
                    .and_then(|f| f.first().map(|x| x.0))
                    .unwrap_or(0);
            }
        }
        Ok(Ok(Self::finish(raw_chunks, &mut chunks)))
    }
}

/// The general encoder: every record, with located errors; the reference of the direct one.
pub(super) fn encode_general(codec: &Codec, msg: &str, record: &Value) -> Result<Vec<u8>, Error> {
    let mut e = Enc { codec, depth: 0 };
    match e.message(msg, record, "")? {
        Ok(b) => Ok(b),
        Err(Misfit) => Err(eerr(
            "",
            format!("the record is not a `{msg}` the descriptor can hold"),
        )),
    }
}
