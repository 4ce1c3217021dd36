//! The protobuf descriptor of one contract version as data: its messages (struct fields, union
//! variants, list wrappers, tuples) and enums with their numbers, and the message of each record
//! kind — what the codec of `diagwire-proto` reads to encode and decode.
//!
//! `cargo codegen` writes one per release and one for the current schemas as statics
//! (`generated/proto/`, feature `proto` of `diagwire-generated`); the schema review builds them at
//! run time for any tree of schemas. Texts and lists are `Cow<'static, _>` so both are the same
//! type: borrowed in a static, owned when built. [`Descriptor::to_json`] and
//! [`Descriptor::from_json`] give the same data as JSON for tools and tests that compare
//! descriptors as data.

use std::borrow::Cow;

use serde_json::{Map, Value, json};

pub use crate::shape::{Presence, UnionStyle};

/// A text of a descriptor: borrowed in a generated static, owned when built at run time.
pub type Text = Cow<'static, str>;

/// A list of a descriptor: borrowed in a generated static, owned when built at run time.
pub type List<T> = Cow<'static, [T]>;

/// A scalar value type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scalar {
    /// `string`.
    Str,
    /// `uint32` holding at most a `u8`.
    U8,
    /// `uint32` holding at most a `u16`.
    U16,
    /// `uint32`.
    U32,
    /// `uint64`.
    U64,
    /// `sint32`.
    I32,
    /// `sint64`.
    I64,
    /// `double`.
    F64,
    /// `bool`.
    Bool,
    /// 32 `bytes`: the node id as an array of 32 integers.
    NodeId,
    /// 32 `bytes`: the node id as 64 lowercase hex digits.
    HexId,
    /// `bytes` holding JSON text.
    Json,
}

impl Scalar {
    /// Every scalar, in the order of their names in [`Scalar::name`].
    pub const ALL: [Scalar; 12] = [
        Scalar::Str,
        Scalar::U8,
        Scalar::U16,
        Scalar::U32,
        Scalar::U64,
        Scalar::I32,
        Scalar::I64,
        Scalar::F64,
        Scalar::Bool,
        Scalar::NodeId,
        Scalar::HexId,
        Scalar::Json,
    ];

    /// The descriptor's name of the scalar (`string`, `u8`, …, `node_id`, `hex_id`, `json`).
    pub const fn name(self) -> &'static str {
        match self {
            Scalar::Str => "string",
            Scalar::U8 => "u8",
            Scalar::U16 => "u16",
            Scalar::U32 => "u32",
            Scalar::U64 => "u64",
            Scalar::I32 => "i32",
            Scalar::I64 => "i64",
            Scalar::F64 => "f64",
            Scalar::Bool => "bool",
            Scalar::NodeId => "node_id",
            Scalar::HexId => "hex_id",
            Scalar::Json => "json",
        }
    }

    /// The scalar of a [`Scalar::name`].
    pub fn from_name(name: &str) -> Option<Scalar> {
        Scalar::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// A value type: a scalar, an enum, a message, or a repeated one of those.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Ty {
    /// A scalar.
    Scalar(Scalar),
    /// An enum, by name.
    Enum(Text),
    /// A message, by name.
    Message(Text),
    /// A repeated scalar, enum or message (a list in a list is a wrapper message).
    List(Item),
}

/// What a list repeats.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Item {
    /// A scalar.
    Scalar(Scalar),
    /// An enum, by name.
    Enum(Text),
    /// A message, by name.
    Message(Text),
}

impl Item {
    /// The item as a value type of its own.
    pub fn ty(&self) -> Ty {
        match self {
            Item::Scalar(s) => Ty::Scalar(*s),
            Item::Enum(e) => Ty::Enum(e.clone()),
            Item::Message(m) => Ty::Message(m.clone()),
        }
    }
}

impl Ty {
    /// A message type named `name`.
    pub const fn message(name: &'static str) -> Ty {
        Ty::Message(Cow::Borrowed(name))
    }

    /// An enum type named `name`.
    pub const fn enumeration(name: &'static str) -> Ty {
        Ty::Enum(Cow::Borrowed(name))
    }

    /// A list of messages named `name`.
    pub const fn messages(name: &'static str) -> Ty {
        Ty::List(Item::Message(Cow::Borrowed(name)))
    }

    /// A list of the enum named `name`.
    pub const fn enums(name: &'static str) -> Ty {
        Ty::List(Item::Enum(Cow::Borrowed(name)))
    }

    /// A list of scalars.
    pub const fn scalars(s: Scalar) -> Ty {
        Ty::List(Item::Scalar(s))
    }

    /// The type repeated, when it is not a list already (`None` for a list).
    pub fn list(self) -> Option<Ty> {
        Some(Ty::List(match self {
            Ty::Scalar(s) => Item::Scalar(s),
            Ty::Enum(e) => Item::Enum(e),
            Ty::Message(m) => Item::Message(m),
            Ty::List(_) => return None,
        }))
    }

    /// The type as JSON: a scalar's name, `{"enum": …}`, `{"message": …}`, `{"list": …}`.
    pub fn to_json(&self) -> Value {
        match self {
            Ty::Scalar(s) => json!(s.name()),
            Ty::Enum(e) => json!({ "enum": e }),
            Ty::Message(m) => json!({ "message": m }),
            Ty::List(i) => json!({ "list": i.ty().to_json() }),
        }
    }

    /// The type of its JSON form ([`Ty::to_json`]).
    pub fn from_json(v: &Value) -> Result<Ty, String> {
        if let Some(s) = v.as_str() {
            return Scalar::from_name(s)
                .map(Ty::Scalar)
                .ok_or_else(|| bad(&format!("unknown scalar `{s}`")));
        }
        if let Some(e) = v.get("enum").and_then(Value::as_str) {
            return Ok(Ty::Enum(e.to_owned().into()));
        }
        if let Some(m) = v.get("message").and_then(Value::as_str) {
            return Ok(Ty::Message(m.to_owned().into()));
        }
        if let Some(i) = v.get("list") {
            return Ty::from_json(i)?
                .list()
                .ok_or_else(|| bad("a list in a list"));
        }
        Err(bad(&format!("unknown type {v}")))
    }
}

/// One field of a struct message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The JSON key (`@<field>` for the field holding an absorbed union).
    pub key: Text,
    /// The field number.
    pub number: u32,
    /// How absence of the key looks in JSON.
    pub presence: Presence,
    /// The value type.
    pub ty: Ty,
    /// The field holds a union whose keys the struct absorbs (`x-flatten`).
    pub flatten: bool,
}

impl Field {
    /// A field that is not flattened.
    pub const fn new(key: &'static str, number: u32, presence: Presence, ty: Ty) -> Field {
        Field {
            key: Cow::Borrowed(key),
            number,
            presence,
            ty,
            flatten: false,
        }
    }

    /// The same field, holding an absorbed union.
    pub const fn flatten(mut self) -> Field {
        self.flatten = true;
        self
    }
}

/// One variant of a union message: a member of its `oneof`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// The tag.
    pub tag: Text,
    /// The member's number.
    pub number: u32,
    /// The content's type; `None` for a unit variant.
    pub ty: Option<Ty>,
}

impl Variant {
    /// A variant.
    pub const fn new(tag: &'static str, number: u32, ty: Option<Ty>) -> Variant {
        Variant {
            tag: Cow::Borrowed(tag),
            number,
            ty,
        }
    }
}

/// What a message is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// A struct: one field per property.
    Struct {
        /// The struct keeps unknown keys.
        extra: bool,
        /// Its fields, in number order.
        fields: List<Field>,
    },
    /// A union: one `oneof` member per variant.
    Union {
        /// How the tag is written in JSON.
        style: UnionStyle,
        /// The tag key (empty for an external union).
        tag: Text,
        /// The content key of an adjacent union.
        content: Option<Text>,
        /// Its variants, in number order.
        variants: List<Variant>,
    },
    /// A list as a message (`items = 1`), so it can be absent or nested.
    Wrapper(Ty),
    /// A tuple: positional fields 1, 2, ….
    Tuple(List<Ty>),
}

/// One message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Its name.
    pub name: Text,
    /// What it is.
    pub shape: Shape,
}

/// One enum: its values with their numbers, in number order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enum {
    /// Its name.
    pub name: Text,
    /// Its values.
    pub values: List<EnumValue>,
}

/// One value of an enum: its JSON string and number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumValue {
    /// The JSON string.
    pub name: Text,
    /// Its number.
    pub number: u32,
}

impl EnumValue {
    /// A value.
    pub const fn new(name: &'static str, number: u32) -> EnumValue {
        EnumValue {
            name: Cow::Borrowed(name),
            number,
        }
    }
}

/// A record kind and the name of its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The record kind (`event_batch`, …).
    pub kind: Text,
    /// Its message.
    pub message: Text,
}

impl Record {
    /// A record kind.
    pub const fn new(kind: &'static str, message: &'static str) -> Record {
        Record {
            kind: Cow::Borrowed(kind),
            message: Cow::Borrowed(message),
        }
    }
}

/// The descriptor of one contract version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Descriptor {
    /// The contract version (`1.0.0`, …).
    pub version: Text,
    /// The protobuf package of its `.proto` file.
    pub package: Text,
    /// The number of every struct message's `absent_keys` field.
    pub absent_keys: u32,
    /// The number of every struct message's `unknown_json` field and every union's catch-all.
    pub unknown_json: u32,
    /// Every record kind, sorted.
    pub records: List<Record>,
    /// Every message, sorted by name.
    pub messages: List<Message>,
    /// Every enum, sorted by name.
    pub enums: List<Enum>,
}

fn bad(what: &str) -> String {
    format!("descriptor: {what}")
}

fn num(v: &Value) -> Result<u32, String> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| bad("field number"))
}

fn text(v: &Value, k: &str) -> Result<Text, String> {
    v.get(k)
        .and_then(Value::as_str)
        .map(|s| Cow::Owned(s.to_owned()))
        .ok_or_else(|| bad(&format!("`{k}` missing")))
}

fn style_name(s: UnionStyle) -> &'static str {
    match s {
        UnionStyle::Internal => "internal",
        UnionStyle::Adjacent => "adjacent",
        UnionStyle::External => "external",
    }
}

impl Descriptor {
    /// The message named `name`.
    pub fn message(&self, name: &str) -> Option<&Message> {
        self.messages.iter().find(|m| m.name == name)
    }

    /// The descriptor as JSON: `version`, `package`, `absent_keys`, `unknown_json`, `records`
    /// (kind → message), `messages` (name → `{"struct": {"extra", "fields"}}`, `{"union": {"style",
    /// "tag", "content", "variants"}}`, `{"wrapper": ty}` or `{"tuple": [ty, …]}`) and `enums` (name
    /// → value → number).
    pub fn to_json(&self) -> Value {
        let mut messages = Map::new();
        for m in self.messages.iter() {
            let v = match &m.shape {
                Shape::Struct { extra, fields } => {
                    let rows: Vec<Value> = fields
                        .iter()
                        .map(|f| {
                            let mut row = json!({
                                "key": f.key,
                                "number": f.number,
                                "presence": f.presence.name(),
                                "ty": f.ty.to_json(),
                            });
                            if f.flatten {
                                row["flatten"] = json!(true);
                            }
                            row
                        })
                        .collect();
                    json!({ "struct": { "extra": extra, "fields": rows } })
                }
                Shape::Union {
                    style,
                    tag,
                    content,
                    variants,
                } => {
                    let rows: Vec<Value> = variants
                        .iter()
                        .map(|x| {
                            json!({
                                "tag": x.tag,
                                "number": x.number,
                                "ty": x.ty.as_ref().map_or(Value::Null, Ty::to_json),
                            })
                        })
                        .collect();
                    json!({ "union": {
                        "style": style_name(*style),
                        "tag": tag,
                        "content": content,
                        "variants": rows,
                    }})
                }
                Shape::Wrapper(t) => json!({ "wrapper": t.to_json() }),
                Shape::Tuple(items) => {
                    json!({ "tuple": items.iter().map(Ty::to_json).collect::<Vec<_>>() })
                }
            };
            messages.insert(m.name.to_string(), v);
        }
        let enums: Map<String, Value> = self
            .enums
            .iter()
            .map(|e| {
                let values: Map<String, Value> = e
                    .values
                    .iter()
                    .map(|v| (v.name.to_string(), json!(v.number)))
                    .collect();
                (e.name.to_string(), Value::Object(values))
            })
            .collect();
        let records: Map<String, Value> = self
            .records
            .iter()
            .map(|r| (r.kind.to_string(), json!(r.message)))
            .collect();
        json!({
            "version": self.version,
            "package": self.package,
            "absent_keys": self.absent_keys,
            "unknown_json": self.unknown_json,
            "records": records,
            "messages": messages,
            "enums": enums,
        })
    }

    /// The descriptor of its JSON form ([`Descriptor::to_json`]); messages, enums and records
    /// sorted by name, variants and enum values by number.
    pub fn from_json(v: &Value) -> Result<Descriptor, String> {
        let object = |k: &str| {
            v.get(k)
                .and_then(Value::as_object)
                .ok_or_else(|| bad(&format!("`{k}` missing")))
        };
        let mut messages = Vec::new();
        for (name, m) in object("messages")? {
            let shape = if let Some(st) = m.get("struct") {
                let mut fields = Vec::new();
                for f in st
                    .get("fields")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("fields"))?
                {
                    let presence = text(f, "presence")?;
                    fields.push(Field {
                        key: text(f, "key")?,
                        number: num(&f["number"])?,
                        presence: [
                            Presence::Required,
                            Presence::Nullable,
                            Presence::Omittable,
                            Presence::Default,
                            Presence::SkipDefault,
                        ]
                        .into_iter()
                        .find(|p| p.name() == presence)
                        .ok_or_else(|| bad(&format!("presence `{presence}`")))?,
                        ty: Ty::from_json(&f["ty"])?,
                        flatten: f.get("flatten").and_then(Value::as_bool).unwrap_or(false),
                    });
                }
                Shape::Struct {
                    extra: st.get("extra").and_then(Value::as_bool).unwrap_or(false),
                    fields: fields.into(),
                }
            } else if let Some(u) = m.get("union") {
                let mut variants = Vec::new();
                for x in u
                    .get("variants")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("variants"))?
                {
                    variants.push(Variant {
                        tag: text(x, "tag")?,
                        number: num(&x["number"])?,
                        ty: if x["ty"].is_null() {
                            None
                        } else {
                            Some(Ty::from_json(&x["ty"])?)
                        },
                    });
                }
                let style = text(u, "style")?;
                Shape::Union {
                    style: [
                        UnionStyle::Internal,
                        UnionStyle::Adjacent,
                        UnionStyle::External,
                    ]
                    .into_iter()
                    .find(|s| style_name(*s) == style)
                    .ok_or_else(|| bad(&format!("style `{style}`")))?,
                    tag: text(u, "tag")?,
                    content: u
                        .get("content")
                        .and_then(Value::as_str)
                        .map(|c| Cow::Owned(c.to_owned())),
                    variants: variants.into(),
                }
            } else if let Some(w) = m.get("wrapper") {
                Shape::Wrapper(Ty::from_json(w)?)
            } else if let Some(t) = m.get("tuple").and_then(Value::as_array) {
                Shape::Tuple(
                    t.iter()
                        .map(Ty::from_json)
                        .collect::<Result<Vec<_>, _>>()?
                        .into(),
                )
            } else {
                return Err(bad(&format!("message `{name}`")));
            };
            messages.push(Message {
                name: name.clone().into(),
                shape,
            });
        }
        messages.sort_by(|a, b| a.name.cmp(&b.name));
        let mut enums = Vec::new();
        for (name, e) in object("enums")? {
            let mut values = Vec::new();
            for (k, n) in e.as_object().ok_or_else(|| bad("enum"))? {
                values.push(EnumValue {
                    name: k.clone().into(),
                    number: num(n)?,
                });
            }
            values.sort_by_key(|v| v.number);
            enums.push(Enum {
                name: name.clone().into(),
                values: values.into(),
            });
        }
        enums.sort_by(|a, b| a.name.cmp(&b.name));
        let mut records: Vec<Record> = object("records")?
            .iter()
            .map(|(k, m)| Record {
                kind: k.clone().into(),
                message: m.as_str().unwrap_or_default().to_owned().into(),
            })
            .collect();
        records.sort_by(|a, b| a.kind.cmp(&b.kind));
        Ok(Descriptor {
            version: text(v, "version")?,
            package: text(v, "package").unwrap_or_default(),
            absent_keys: num(&v["absent_keys"])?,
            unknown_json: num(&v["unknown_json"])?,
            records: records.into(),
            messages: messages.into(),
            enums: enums.into(),
        })
    }
}
