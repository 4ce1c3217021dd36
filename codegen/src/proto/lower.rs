//! The model lowered to protobuf: every struct, union, list wrapper and tuple message and every
//! enum of a contract version, with the documentation the `.proto` file carries, before numbering.

use std::fmt::Write as _;

use diagwire_runtime::descriptor::{Scalar, Ty as PTy, UnionStyle};
use diagwire_runtime::shape::Presence;
use diagwire_schema::model::{DefKind, IntWidth, Model, Payload, Ty};

/// A field of a struct message.
#[derive(Debug, Clone)]
pub(super) struct Field {
    pub(super) key: String,
    pub(super) presence: Presence,
    pub(super) ty: PTy,
    pub(super) doc: String,
    pub(super) flatten: bool,
    pub(super) pair: Option<String>,
}

/// What a message is.
#[derive(Debug, Clone)]
pub(super) enum Shape {
    Struct {
        fields: Vec<Field>,
        extra: bool,
    },
    Union {
        style: UnionStyle,
        tag: String,
        content: Option<String>,
        variants: Vec<(String, Option<PTy>, String)>,
    },
    Wrapper(PTy),
    Tuple(Vec<PTy>),
}

/// One message with its documentation.
#[derive(Debug, Clone)]
pub(super) struct Msg {
    pub(super) name: String,
    pub(super) doc: String,
    pub(super) shape: Shape,
}

/// A contract version lowered: messages, enums (name, values, doc) and record kinds (kind, message).
#[derive(Debug, Clone, Default)]
pub(super) struct Contract {
    pub(super) messages: Vec<Msg>,
    pub(super) enums: Vec<(String, Vec<String>, String)>,
    pub(super) records: Vec<(String, String)>,
}

pub(super) fn pascal(s: &str) -> String {
    diagwire_schema::model::variant_name(s)
}

/// A protobuf identifier in snake case for a JSON key, tag or type name (`DialStarted` →
/// `dial_started`, `4xx` → `f_4xx`): the field, member and enum value names of the `.proto` files.
pub fn snake(s: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in s.chars() {
        if c.is_ascii_uppercase() {
            if prev_lower {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            prev_lower = false;
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
            prev_lower = true;
        } else {
            if !out.ends_with('_') && !out.is_empty() {
                out.push('_');
            }
            prev_lower = false;
        }
    }
    let out = out.trim_end_matches('_').to_owned();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        format!("f_{out}")
    } else {
        out
    }
}

pub(super) fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().trim().to_owned()
}

fn int_scalar(f: IntWidth) -> Scalar {
    Scalar::from_name(f.rust())
        .expect("OK because every integer format is a scalar of the descriptor")
}

struct Lower<'a> {
    model: &'a Model,
    out: Contract,
}

impl Lower<'_> {
    fn add(&mut self, name: String, doc: String, shape: Shape) -> PTy {
        if !self.out.messages.iter().any(|m| m.name == name) {
            self.out.messages.push(Msg {
                name: name.clone(),
                doc,
                shape,
            });
        }
        PTy::Message(name.into())
    }

    /// A type that can stand alone in a field: a list is wrapped when `wrap_lists`.
    fn ty(&mut self, t: &Ty, owner: &str, field: &str) -> PTy {
        match t {
            Ty::Str => PTy::Scalar(Scalar::Str),
            Ty::Int(f) => PTy::Scalar(int_scalar(*f)),
            Ty::F64 => PTy::Scalar(Scalar::F64),
            Ty::Bool => PTy::Scalar(Scalar::Bool),
            Ty::Json => PTy::Scalar(Scalar::Json),
            Ty::Ref(n) => match self.model.def(n).map(|d| &d.kind) {
                Some(DefKind::Struct(_)) | Some(DefKind::Union(_)) => {
                    PTy::Message(n.clone().into())
                }
                Some(DefKind::Enum { .. }) => PTy::Enum(n.clone().into()),
                Some(DefKind::NodeId) => PTy::Scalar(Scalar::NodeId),
                Some(DefKind::NodeIdHex) => PTy::Scalar(Scalar::HexId),
                Some(DefKind::Array(inner)) => {
                    let inner = inner.clone();
                    self.list(&inner, n, "item")
                }
                None => PTy::Scalar(Scalar::Json),
            },
            Ty::Vec(inner) => self.list(inner, owner, field),
            Ty::Tuple(items) => {
                let name = format!("{owner}{}Tuple", pascal(field));
                let items = items
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        let t = self.ty(t, &name, &format!("item{i}"));
                        self.unlisted(t, &name, &format!("item{i}"))
                    })
                    .collect();
                self.add(
                    name,
                    format!("A tuple of `{owner}.{field}`: positional fields 1, 2, …"),
                    Shape::Tuple(items),
                )
            }
        }
    }

    fn list(&mut self, inner: &Ty, owner: &str, field: &str) -> PTy {
        let i = self.ty(inner, owner, field);
        let i = self.unlisted(i, owner, &format!("{field}_item"));
        i.list().expect("OK because `unlisted` wrapped a list")
    }

    /// Wraps a list in a message (for a list in a list, a oneof or a field with presence).
    fn unlisted(&mut self, t: PTy, owner: &str, field: &str) -> PTy {
        match t {
            PTy::List(_) => {
                let name = format!("{owner}{}List", pascal(field));
                self.add(
                    name,
                    format!(
                        "A list of `{owner}.{field}` as a message, so it can be absent or nested."
                    ),
                    Shape::Wrapper(t),
                )
            }
            t => t,
        }
    }

    fn def(&mut self, d: &diagwire_schema::model::Def) {
        let doc = first_line(&d.description);
        match &d.kind {
            DefKind::Struct(s) => {
                let mut fields = Vec::new();
                for p in &s.props {
                    let t = self.ty(&p.ty, &d.name, &p.name);
                    let t = match p.presence {
                        Presence::Nullable | Presence::Omittable => {
                            self.unlisted(t, &d.name, &p.name)
                        }
                        _ => t,
                    };
                    let pair = p.provenance.as_ref().map(|pr| {
                        let mut s = String::from("provenance pair:");
                        if let Some(src) = &pr.source {
                            let _ = write!(s, " source `{src}`");
                        }
                        if let Some(g) = &pr.gap {
                            let _ = write!(s, " gap `{g}`");
                        }
                        s
                    });
                    fields.push(Field {
                        key: p.name.clone(),
                        presence: p.presence,
                        ty: t,
                        doc: first_line(&p.description),
                        flatten: false,
                        pair,
                    });
                }
                if let Some(fl) = &s.flatten {
                    fields.push(Field {
                        key: format!("@{}", fl.field),
                        presence: Presence::Required,
                        ty: PTy::Message(fl.union.clone().into()),
                        doc: format!("The keys of the absorbed union `{}`.", fl.union),
                        flatten: true,
                        pair: None,
                    });
                }
                self.out.messages.push(Msg {
                    name: d.name.clone(),
                    doc,
                    shape: Shape::Struct {
                        fields,
                        extra: d.facts.keeps_extra,
                    },
                });
            }
            DefKind::Enum { values, .. } => {
                self.out.enums.push((d.name.clone(), values.clone(), doc));
            }
            DefKind::Union(u) => {
                let mut variants = Vec::new();
                for v in &u.variants {
                    let t = match &v.payload {
                        Payload::Unit => None,
                        Payload::Def(n) => Some(PTy::Message(n.clone().into())),
                        Payload::Ty(t) => {
                            let t = self.ty(t, &d.name, &v.rust);
                            Some(self.unlisted(t, &d.name, &v.rust))
                        }
                    };
                    variants.push((v.tag.clone(), t, first_line(&v.description)));
                }
                self.out.messages.push(Msg {
                    name: d.name.clone(),
                    doc,
                    shape: Shape::Union {
                        style: u.style,
                        tag: u.tag.clone(),
                        content: u.content.clone(),
                        variants,
                    },
                });
            }
            DefKind::NodeId | DefKind::NodeIdHex => {}
            DefKind::Array(t) => {
                let item = self.ty(t, &d.name, "item");
                let item = self.unlisted(item, &d.name, "item");
                self.out.messages.push(Msg {
                    name: d.name.clone(),
                    doc,
                    shape: Shape::Wrapper(
                        item.list().expect("OK because `unlisted` wrapped a list"),
                    ),
                });
            }
        }
    }
}

/// The messages, enums and record kinds of `model`, sorted by name.
pub(super) fn lower(model: &Model) -> Contract {
    let mut l = Lower {
        model,
        out: Contract::default(),
    };
    for d in model.defs() {
        l.def(d);
    }
    l.out.records = model
        .records()
        .into_iter()
        .map(|(k, d)| (k.to_owned(), d.name.clone()))
        .collect();
    l.out.messages.sort_by(|a, b| a.name.cmp(&b.name));
    l.out.enums.sort_by(|a, b| a.0.cmp(&b.0));
    l.out
}
