//! [`Codec`]: the protobuf descriptor of one contract version indexed for the codec — messages
//! and enums by position, union variants by tag, enum values both ways — built once from the
//! descriptor (a generated static, or one the schema review built at run time).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use diagwire_generated::v1::RecordKind;
use diagwire_runtime::descriptor::{self, Descriptor, Shape};

pub(crate) use diagwire_runtime::descriptor::{Presence, Scalar, UnionStyle as Style};
use std::fmt;

/// FNV-1a: the index's maps are keyed by short names the codec looks up for every value, where
/// the default hasher's resistance to chosen keys buys nothing (the keys come from the descriptor).
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

/// A map of the index.
pub(crate) type Names<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

/// A message or enum of the descriptor: its name, and its index in the list of them, so the codec
/// finds it without looking the name up (`usize::MAX` when the descriptor has none of the name).
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

/// A value type, with its references resolved.
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

#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub key: String,
    pub number: u32,
    pub presence: Presence,
    pub ty: Ty,
    pub flatten: bool,
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

/// The codec of one contract version: its descriptor, indexed. [`crate::codec`] and
/// [`crate::current`] give those of the generated descriptors; [`Codec::new`] indexes any other.
#[derive(Debug, Clone)]
pub struct Codec {
    /// The contract version (`1.0.0`, …).
    pub version: String,
    /// The descriptor it was built from.
    descriptor: Descriptor,
    /// Message name → index in `msgs`.
    pub(crate) messages: Names<String, usize>,
    pub(crate) msgs: Vec<Msg>,
    /// Per enum, in the order of their names: value → number, number → value.
    pub(crate) enum_list: Vec<EnumNumbers>,
    pub(crate) records: Names<String, String>,
    pub(crate) absent_keys: u32,
    pub(crate) unknown_json: u32,
}

/// A value type of the descriptor, unresolved.
fn ty(t: &descriptor::Ty) -> Ty {
    match t {
        descriptor::Ty::Scalar(s) => Ty::Scalar(*s),
        descriptor::Ty::Enum(e) => Ty::Enum(Ref::new(e)),
        descriptor::Ty::Message(m) => Ty::Msg(Ref::new(m)),
        descriptor::Ty::List(i) => Ty::List(Box::new(ty(&i.ty()))),
    }
}

impl Codec {
    /// Indexes a descriptor.
    pub fn new(d: &Descriptor) -> Codec {
        let mut messages: Names<String, Msg> = Names::default();
        for m in d.messages.iter() {
            let msg = match &m.shape {
                Shape::Struct { fields, .. } => Msg::Struct {
                    fields: fields
                        .iter()
                        .map(|f| Field {
                            key: f.key.to_string(),
                            number: f.number,
                            presence: f.presence,
                            ty: ty(&f.ty),
                            flatten: f.flatten,
                        })
                        .collect(),
                    in_order: false,
                },
                Shape::Union {
                    style,
                    tag,
                    content,
                    variants,
                } => {
                    let variants: Vec<Variant> = variants
                        .iter()
                        .map(|x| Variant {
                            tag: x.tag.to_string(),
                            number: x.number,
                            ty: x.ty.as_ref().map(ty),
                        })
                        .collect();
                    let mut by_tag = Names::default();
                    for (i, x) in variants.iter().enumerate() {
                        by_tag.insert(x.tag.clone(), i);
                    }
                    Msg::Union {
                        by_tag: (by_tag.len() == variants.len()).then_some(by_tag),
                        style: *style,
                        tag: tag.to_string(),
                        content: content.as_ref().map(ToString::to_string),
                        variants,
                    }
                }
                Shape::Wrapper(t) => Msg::Wrapper(ty(t)),
                Shape::Tuple(items) => Msg::Tuple(items.iter().map(ty).collect()),
            };
            messages.insert(m.name.to_string(), msg);
        }
        let mut enums: Names<String, EnumNumbers> = Names::default();
        for e in d.enums.iter() {
            let mut by_name = Names::default();
            let mut by_num = Names::default();
            for v in e.values.iter() {
                by_name.insert(v.name.to_string(), u64::from(v.number));
                by_num.insert(u64::from(v.number), v.name.to_string());
            }
            enums.insert(e.name.to_string(), (by_name, by_num));
        }
        let records = d
            .records
            .iter()
            .map(|r| (r.kind.to_string(), r.message.to_string()))
            .collect();
        let (absent_keys, unknown_json) = (d.absent_keys, d.unknown_json);
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
        Codec {
            version: d.version.to_string(),
            descriptor: d.clone(),
            messages: message_ids,
            msgs,
            enum_list,
            records,
            absent_keys,
            unknown_json,
        }
    }

    /// The descriptor the codec was built from.
    pub fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    /// The message named `name`.
    pub(crate) fn message(&self, name: &str) -> Option<&Msg> {
        self.messages.get(name).map(|i| &self.msgs[*i])
    }

    /// Whether the generated codec of `T` writes and reads the records of `kind` of this contract
    /// version: the codec is of `T`'s contract version, and the kind's message is `T`'s (for a
    /// list record, the wrapper of a list of `T`'s items).
    pub fn holds<T: diagwire_runtime::proto::Message>(&self, kind: impl Kind) -> bool {
        if self.version != T::CONTRACT {
            return false;
        }
        let Some(name) = self.records.get(kind.name()) else {
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
    /// such a record starts with (`None` when this contract version has no such record kind).
    pub fn message_of(&self, kind: impl Kind) -> Option<&str> {
        self.records.get(kind.name()).map(String::as_str)
    }

    /// The record kinds this version has, in the order of [`RecordKind::ALL`].
    pub fn kinds(&self) -> Vec<RecordKind> {
        RecordKind::ALL
            .iter()
            .copied()
            .filter(|k| self.records.contains_key(k.as_str()))
            .collect()
    }
}

/// A record kind as the codec looks it up: the contract's [`RecordKind`] or, for a descriptor
/// built at run time from another tree of schemas (the schema review's), the name of one of that
/// tree's record kinds.
pub trait Kind: Copy + fmt::Display {
    /// The kind's name (`event_batch`, …).
    fn name(&self) -> &str;
}

impl Kind for RecordKind {
    fn name(&self) -> &str {
        self.as_str()
    }
}

impl Kind for &str {
    fn name(&self) -> &str {
        self
    }
}

impl Kind for &String {
    fn name(&self) -> &str {
        self.as_str()
    }
}
