//! The codec layout of one contract version, read from the generated `*.layout.json`.

use std::collections::HashMap;

use serde_json::Value;

/// A scalar type of the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scalar {
    Str,
    U8,
    U16,
    U32,
    U64,
    I32,
    I64,
    F64,
    Bool,
    NodeId,
    HexId,
    Json,
}

/// A value type of the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ty {
    Scalar(Scalar),
    Enum(String),
    Msg(String),
    List(Box<Ty>),
}

/// A struct field's presence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Presence {
    Required,
    Nullable,
    Omittable,
    Default,
    SkipDefault,
}

#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub key: String,
    pub number: u32,
    pub presence: Presence,
    pub ty: Ty,
    pub flatten: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Internal,
    Adjacent,
    External,
}

#[derive(Debug, Clone)]
pub(crate) struct Variant {
    pub tag: String,
    pub number: u32,
    /// `None` for a unit variant.
    pub ty: Option<Ty>,
}

#[derive(Debug, Clone)]
pub(crate) enum Msg {
    Struct {
        fields: Vec<Field>,
    },
    Union {
        style: Style,
        tag: String,
        content: Option<String>,
        variants: Vec<Variant>,
    },
    Wrapper(Ty),
    Tuple(Vec<Ty>),
}

/// An enum's value → number and number → value maps.
pub(crate) type EnumNumbers = (HashMap<String, u64>, HashMap<u64, String>);

/// The layout of one contract version: its messages, enums and record kinds.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The contract version (`1.0.0`, …).
    pub version: String,
    pub(crate) messages: HashMap<String, Msg>,
    /// Per enum: value → number, number → value.
    pub(crate) enums: HashMap<String, EnumNumbers>,
    pub(crate) records: HashMap<String, String>,
    pub(crate) absent_keys: u32,
    pub(crate) unknown_json: u32,
}

fn bad(what: &str) -> String {
    format!("layout: {what}")
}

fn ty(v: &Value) -> Result<Ty, String> {
    if let Some(s) = v.as_str() {
        return Ok(Ty::Scalar(match s {
            "string" => Scalar::Str,
            "u8" => Scalar::U8,
            "u16" => Scalar::U16,
            "u32" => Scalar::U32,
            "u64" => Scalar::U64,
            "i32" => Scalar::I32,
            "i64" => Scalar::I64,
            "f64" => Scalar::F64,
            "bool" => Scalar::Bool,
            "node_id" => Scalar::NodeId,
            "hex_id" => Scalar::HexId,
            "json" => Scalar::Json,
            other => return Err(bad(&format!("unknown scalar `{other}`"))),
        }));
    }
    if let Some(e) = v.get("enum").and_then(Value::as_str) {
        return Ok(Ty::Enum(e.to_owned()));
    }
    if let Some(m) = v.get("message").and_then(Value::as_str) {
        return Ok(Ty::Msg(m.to_owned()));
    }
    if let Some(i) = v.get("list") {
        return Ok(Ty::List(Box::new(ty(i)?)));
    }
    Err(bad(&format!("unknown type {v}")))
}

fn num(v: &Value) -> Result<u32, String> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| bad("field number"))
}

fn s(v: &Value, k: &str) -> Result<String, String> {
    v.get(k)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| bad(&format!("`{k}` missing")))
}

impl Layout {
    /// Reads a layout from its JSON text.
    pub fn parse(text: &str) -> Result<Layout, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| bad(&e.to_string()))?;
        let mut messages = HashMap::new();
        for (name, m) in v
            .get("messages")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("messages"))?
        {
            let msg = if let Some(st) = m.get("struct") {
                let mut fields = Vec::new();
                for f in st
                    .get("fields")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("fields"))?
                {
                    fields.push(Field {
                        key: s(f, "key")?,
                        number: num(&f["number"])?,
                        presence: match s(f, "presence")?.as_str() {
                            "required" => Presence::Required,
                            "nullable" => Presence::Nullable,
                            "omittable" => Presence::Omittable,
                            "default" => Presence::Default,
                            "skip-default" => Presence::SkipDefault,
                            other => return Err(bad(&format!("presence `{other}`"))),
                        },
                        ty: ty(&f["ty"])?,
                        flatten: f.get("flatten").and_then(Value::as_bool).unwrap_or(false),
                    });
                }
                Msg::Struct { fields }
            } else if let Some(u) = m.get("union") {
                let mut variants = Vec::new();
                for x in u
                    .get("variants")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("variants"))?
                {
                    variants.push(Variant {
                        tag: s(x, "tag")?,
                        number: num(&x["number"])?,
                        ty: if x["ty"].is_null() {
                            None
                        } else {
                            Some(ty(&x["ty"])?)
                        },
                    });
                }
                Msg::Union {
                    style: match s(u, "style")?.as_str() {
                        "internal" => Style::Internal,
                        "adjacent" => Style::Adjacent,
                        "external" => Style::External,
                        other => return Err(bad(&format!("style `{other}`"))),
                    },
                    tag: s(u, "tag")?,
                    content: u.get("content").and_then(Value::as_str).map(str::to_owned),
                    variants,
                }
            } else if let Some(w) = m.get("wrapper") {
                Msg::Wrapper(ty(w)?)
            } else if let Some(t) = m.get("tuple").and_then(Value::as_array) {
                Msg::Tuple(t.iter().map(ty).collect::<Result<_, _>>()?)
            } else {
                return Err(bad(&format!("message `{name}`")));
            };
            messages.insert(name.clone(), msg);
        }
        let mut enums = HashMap::new();
        for (name, e) in v
            .get("enums")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("enums"))?
        {
            let mut by_name = HashMap::new();
            let mut by_num = HashMap::new();
            for (k, n) in e.as_object().ok_or_else(|| bad("enum"))? {
                let n = n.as_u64().ok_or_else(|| bad("enum number"))?;
                by_name.insert(k.clone(), n);
                by_num.insert(n, k.clone());
            }
            enums.insert(name.clone(), (by_name, by_num));
        }
        let records = v
            .get("records")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("records"))?
            .iter()
            .map(|(k, d)| (k.clone(), d.as_str().unwrap_or_default().to_owned()))
            .collect();
        Ok(Layout {
            version: s(&v, "version")?,
            messages,
            enums,
            records,
            absent_keys: num(&v["absent_keys"])?,
            unknown_json: num(&v["unknown_json"])?,
        })
    }

    /// The name of the message a record of `kind` is, which the path of every decoding error of
    /// such a record starts with.
    pub fn message_of(&self, kind: &str) -> Option<&str> {
        self.records.get(kind).map(String::as_str)
    }

    /// The record kinds this version has, sorted.
    pub fn kinds(&self) -> Vec<&str> {
        let mut k: Vec<&str> = self.records.keys().map(String::as_str).collect();
        k.sort_unstable();
        k
    }
}
