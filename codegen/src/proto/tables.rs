//! The descriptor of a lowered, numbered contract version: built as data
//! (`diagwire_runtime::descriptor::Descriptor`, what the schema review compares and the codec
//! reads) and written as the Rust static `generated/proto/` compiles into `diagwire-generated`.

use std::borrow::Cow;
use std::fmt::Write as _;

use anyhow::{Context, Result};
use diagwire_runtime::descriptor::{
    Descriptor, Enum, EnumValue, Field, Item, Message, Record, Shape as DShape, Ty, Variant,
};

use super::lower::{Contract, Shape};
use super::numbers::{NUMBERS_FILE, Numbers, number_of};
use super::{ABSENT_KEYS, UNKNOWN_JSON};

/// The descriptor of `c` numbered by `n`: messages and enums sorted by name, fields, variants and
/// enum values by number, record kinds by kind.
pub(super) fn descriptor(
    c: &Contract,
    n: &Numbers,
    package: &str,
    version: &str,
) -> Result<Descriptor> {
    let mut messages = Vec::new();
    for m in &c.messages {
        let shape = match &m.shape {
            Shape::Struct { fields, extra } => {
                let mut rows = Vec::new();
                for f in fields {
                    rows.push(Field {
                        key: f.key.clone().into(),
                        number: number_of(n, &m.name, &f.key)?,
                        presence: f.presence,
                        ty: f.ty.clone(),
                        flatten: f.flatten,
                    });
                }
                rows.sort_by_key(|f| f.number);
                DShape::Struct {
                    extra: *extra,
                    fields: rows.into(),
                }
            }
            Shape::Union {
                style,
                tag,
                content,
                variants,
            } => {
                let mut rows = Vec::new();
                for (tag_value, t, _) in variants {
                    rows.push(Variant {
                        tag: tag_value.clone().into(),
                        number: number_of(n, &m.name, tag_value)?,
                        ty: t.clone(),
                    });
                }
                rows.sort_by_key(|v| v.number);
                DShape::Union {
                    style: *style,
                    tag: tag.clone().into(),
                    content: content.clone().map(Cow::Owned),
                    variants: rows.into(),
                }
            }
            Shape::Wrapper(t) => DShape::Wrapper(t.clone()),
            Shape::Tuple(items) => DShape::Tuple(items.clone().into()),
        };
        messages.push(Message {
            name: m.name.clone().into(),
            shape,
        });
    }
    let mut enums = Vec::new();
    for (e, values, _) in &c.enums {
        let t = n
            .enums
            .get(e)
            .with_context(|| format!("{NUMBERS_FILE}: no table for enum `{e}`"))?;
        let mut rows = Vec::new();
        for v in values {
            let number = t
                .lookup(v)
                .with_context(|| format!("{NUMBERS_FILE}: no number for `{e}.{v}`"))?;
            rows.push(EnumValue {
                name: v.clone().into(),
                number,
            });
        }
        rows.sort_by_key(|v| v.number);
        enums.push(Enum {
            name: e.clone().into(),
            values: rows.into(),
        });
    }
    let mut records: Vec<Record> = c
        .records
        .iter()
        .map(|(k, m)| Record {
            kind: k.clone().into(),
            message: m.clone().into(),
        })
        .collect();
    records.sort_by(|a, b| a.kind.cmp(&b.kind));
    Ok(Descriptor {
        version: version.to_owned().into(),
        package: package.to_owned().into(),
        absent_keys: ABSENT_KEYS,
        unknown_json: UNKNOWN_JSON,
        records: records.into(),
        messages: messages.into(),
        enums: enums.into(),
    })
}

/// A value type as a constant expression.
fn ty(t: &Ty) -> String {
    match t {
        Ty::Scalar(s) => format!("T::Scalar(S::{s:?})"),
        Ty::Enum(e) => format!("T::enumeration({e:?})"),
        Ty::Message(m) => format!("T::message({m:?})"),
        Ty::List(Item::Scalar(s)) => format!("T::scalars(S::{s:?})"),
        Ty::List(Item::Enum(e)) => format!("T::enums({e:?})"),
        Ty::List(Item::Message(m)) => format!("T::messages({m:?})"),
    }
}

/// The Rust source of `d` as the static `DESCRIPTOR`, below `header`.
pub(super) fn rust(d: &Descriptor, header: &str) -> String {
    let mut o = String::from(header);
    o.push_str(
        "use ::diagwire_runtime::descriptor::{\n    Descriptor, EnumValue as N, Enum as E, Field as F, Message as M, Record as R, Scalar as S,\n    Shape as H, Ty as T, Variant as V,\n};\nuse ::diagwire_runtime::shape::{Presence as P, UnionStyle as U};\nuse ::std::borrow::Cow::Borrowed as B;\n\n",
    );
    let _ = writeln!(
        o,
        "/// The protobuf descriptor of contract version {}.",
        d.version
    );
    o.push_str("pub static DESCRIPTOR: Descriptor = Descriptor {\n");
    let _ = writeln!(o, "    version: B({:?}),", d.version);
    let _ = writeln!(o, "    package: B({:?}),", d.package);
    let _ = writeln!(o, "    absent_keys: {},", d.absent_keys);
    let _ = writeln!(o, "    unknown_json: {},", d.unknown_json);
    o.push_str("    records: B(&[\n");
    for r in d.records.iter() {
        let _ = writeln!(o, "        R::new({:?}, {:?}),", r.kind, r.message);
    }
    o.push_str("    ]),\n    messages: B(&[\n");
    for m in d.messages.iter() {
        let _ = write!(o, "        M {{ name: B({:?}), shape: ", m.name);
        match &m.shape {
            DShape::Struct { extra, fields } => {
                let _ = writeln!(o, "H::Struct {{ extra: {extra}, fields: B(&[");
                for f in fields.iter() {
                    let _ = writeln!(
                        o,
                        "            F::new({:?}, {}, P::{:?}, {}){},",
                        f.key,
                        f.number,
                        f.presence,
                        ty(&f.ty),
                        if f.flatten { ".flatten()" } else { "" }
                    );
                }
                o.push_str("        ]) } },\n");
            }
            DShape::Union {
                style,
                tag,
                content,
                variants,
            } => {
                let content = content
                    .as_ref()
                    .map_or("None".to_owned(), |c| format!("Some(B({c:?}))"));
                let _ = writeln!(
                    o,
                    "H::Union {{ style: U::{style:?}, tag: B({tag:?}), content: {content}, variants: B(&["
                );
                for v in variants.iter() {
                    let t =
                        v.ty.as_ref()
                            .map_or("None".to_owned(), |t| format!("Some({})", ty(t)));
                    let _ = writeln!(o, "            V::new({:?}, {}, {t}),", v.tag, v.number);
                }
                o.push_str("        ]) } },\n");
            }
            DShape::Wrapper(t) => {
                let _ = writeln!(o, "H::Wrapper({}) }},", ty(t));
            }
            DShape::Tuple(items) => {
                let items: Vec<String> = items.iter().map(ty).collect();
                let _ = writeln!(o, "H::Tuple(B(&[{}])) }},", items.join(", "));
            }
        }
    }
    o.push_str("    ]),\n    enums: B(&[\n");
    for e in d.enums.iter() {
        let values: Vec<String> = e
            .values
            .iter()
            .map(|v| format!("N::new({:?}, {})", v.name, v.number))
            .collect();
        let _ = writeln!(
            o,
            "        E {{ name: B({:?}), values: B(&[{}]) }},",
            e.name,
            values.join(", ")
        );
    }
    o.push_str("    ]),\n};\n");
    o
}
