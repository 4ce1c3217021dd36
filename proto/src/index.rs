//! The codec layout of one contract version, read from the generated `*.layout.json`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

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

/// FNV-1a: the layout's maps are keyed by short names the codec looks up for every value, where
/// the default hasher's resistance to chosen keys buys nothing (the keys come from the layout).
#[derive(Clone, Copy)]
pub(crate) struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map of the layout.
pub(crate) type Names<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

/// A message or enum of the layout: its name, and its index in the layout's list of them, so the
/// codec finds it without looking the name up (`usize::MAX` when the layout has none of the name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ref {
    pub name: String,
    pub id: usize,
}

impl Ref {
    fn new(name: &str) -> Ref {
        Ref {
            name: name.to_owned(),
            id: usize::MAX,
        }
    }
}

impl std::ops::Deref for Ref {
    type Target = str;

    fn deref(&self) -> &str {
        &self.name
    }
}

/// A value type of the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ty {
    Scalar(Scalar),
    Enum(Ref),
    Msg(Ref),
    List(Box<Ty>),
}

impl Ty {
    /// Points the message and enum references at their entries.
    fn resolve(&mut self, messages: &Names<String, usize>, enums: &Names<String, usize>) {
        match self {
            Ty::Msg(r) => r.id = messages.get(&r.name).copied().unwrap_or(usize::MAX),
            Ty::Enum(r) => r.id = enums.get(&r.name).copied().unwrap_or(usize::MAX),
            Ty::List(inner) => inner.resolve(messages, enums),
            Ty::Scalar(_) => {}
        }
    }
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
        /// The fields are in number order, below `absent_keys` and `unknown_json` (in that
        /// order): a message the direct encoder can write field by field.
        in_order: bool,
    },
    Union {
        style: Style,
        tag: String,
        content: Option<String>,
        variants: Vec<Variant>,
        /// Tag → index in `variants`, when the tags are unique.
        by_tag: Option<Names<String, usize>>,
    },
    Wrapper(Ty),
    Tuple(Vec<Ty>),
}

/// An enum's value → number and number → value maps.
pub(crate) type EnumNumbers = (Names<String, u64>, Names<u64, String>);

/// The layout of one contract version: its messages, enums and record kinds.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The contract version (`1.0.0`, …).
    pub version: String,
    /// Message name → index in `msgs`.
    pub(crate) messages: Names<String, usize>,
    pub(crate) msgs: Vec<Msg>,
    /// Per enum, in the order of their names: value → number, number → value.
    pub(crate) enum_list: Vec<EnumNumbers>,
    pub(crate) records: Names<String, String>,
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
        return Ok(Ty::Enum(Ref::new(e)));
    }
    if let Some(m) = v.get("message").and_then(Value::as_str) {
        return Ok(Ty::Msg(Ref::new(m)));
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
        let mut messages: Names<String, Msg> = Names::default();
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
                Msg::Struct {
                    fields,
                    in_order: false,
                }
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
                let mut by_tag = Names::default();
                for (i, x) in variants.iter().enumerate() {
                    by_tag.insert(x.tag.clone(), i);
                }
                Msg::Union {
                    by_tag: (by_tag.len() == variants.len()).then_some(by_tag),
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
        let mut enums: Names<String, EnumNumbers> = Names::default();
        for (name, e) in v
            .get("enums")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("enums"))?
        {
            let mut by_name = Names::default();
            let mut by_num = Names::default();
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
        let absent_keys = num(&v["absent_keys"])?;
        let unknown_json = num(&v["unknown_json"])?;
        for m in messages.values_mut() {
            if let Msg::Struct {
                fields, in_order, ..
            } = m
            {
                *in_order = absent_keys < unknown_json
                    && fields.windows(2).all(|w| w[0].number < w[1].number)
                    && fields.last().is_none_or(|f| f.number < absent_keys);
            }
        }
        let mut names: Vec<String> = messages.keys().cloned().collect();
        names.sort_unstable();
        let message_ids: Names<String, usize> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        let mut enum_names: Vec<String> = enums.keys().cloned().collect();
        enum_names.sort_unstable();
        let enum_ids: Names<String, usize> = enum_names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        let mut msgs: Vec<Msg> = names
            .iter()
            .map(|n| messages.remove(n).expect("a name of the map"))
            .collect();
        for m in &mut msgs {
            let tys: Vec<&mut Ty> = match m {
                Msg::Struct { fields, .. } => fields.iter_mut().map(|f| &mut f.ty).collect(),
                Msg::Union { variants, .. } => {
                    variants.iter_mut().filter_map(|x| x.ty.as_mut()).collect()
                }
                Msg::Wrapper(t) => vec![t],
                Msg::Tuple(ts) => ts.iter_mut().collect(),
            };
            for t in tys {
                t.resolve(&message_ids, &enum_ids);
            }
        }
        let enum_list: Vec<EnumNumbers> = enum_names
            .iter()
            .map(|n| enums.remove(n).expect("a name of the map"))
            .collect();
        Ok(Layout {
            version: s(&v, "version")?,
            messages: message_ids,
            msgs,
            enum_list,
            records,
            absent_keys,
            unknown_json,
        })
    }

    /// The message named `name`.
    pub(crate) fn message(&self, name: &str) -> Option<&Msg> {
        self.messages.get(name).map(|i| &self.msgs[*i])
    }

    /// Whether the generated codec of `T` writes and reads the records of `kind` of this layout:
    /// the layout is of `T`'s contract version, and the kind's message is `T`'s (for a list
    /// record, the wrapper of a list of `T`'s items).
    pub(crate) fn holds<T: diagwire_runtime::proto::Message>(&self, kind: &str) -> bool {
        if self.version != T::CONTRACT {
            return false;
        }
        let Some(name) = self.records.get(kind) else {
            return false;
        };
        if !T::LIST {
            return name == T::NAME;
        }
        matches!(
            self.message(name),
            Some(Msg::Wrapper(Ty::List(item))) if matches!(&**item, Ty::Msg(r) if r.name == T::NAME)
        )
    }

    /// The message `r` refers to.
    pub(crate) fn msg(&self, r: &Ref) -> Option<&Msg> {
        self.msgs.get(r.id)
    }

    /// The numbers of the enum `r` refers to.
    pub(crate) fn enum_numbers(&self, r: &Ref) -> Option<&EnumNumbers> {
        self.enum_list.get(r.id)
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
