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

/// The Rust source of `d` as the static `DESCRIPTOR`, below `header`. Every list is a named
/// static of its own that the descriptor borrows: a temporary array of values with drop glue
/// (their `Cow`s) cannot be borrowed for `'static` inside a static's initializer before Rust
/// 1.88, and the workspace supports 1.85.
pub(super) fn rust(d: &Descriptor, header: &str) -> String {
    let mut o = String::from(header);
    o.push_str(
        "use ::diagwire_runtime::descriptor::{\n    Descriptor, EnumValue as N, Enum as E, Field as F, Message as M, Record as R, Scalar as S,\n    Shape as H, Ty as T, Variant as V,\n};\nuse ::diagwire_runtime::shape::{Presence as P, UnionStyle as U};\nuse ::std::borrow::Cow::Borrowed as B;\n\n",
    );
    // The lists, each a static: `(name, element type, items)`.
    let mut lists: Vec<(String, &str, Vec<String>)> = Vec::new();
    let records = d
        .records
        .iter()
        .map(|r| format!("R::new({:?}, {:?})", r.kind, r.message))
        .collect();
    lists.push(("RECORDS".into(), "R", records));
    let mut messages = Vec::new();
    for (i, m) in d.messages.iter().enumerate() {
        let shape = match &m.shape {
            DShape::Struct { extra, fields } => {
                let items = fields
                    .iter()
                    .map(|f| {
                        format!(
                            "F::new({:?}, {}, P::{:?}, {}){}",
                            f.key,
                            f.number,
                            f.presence,
                            ty(&f.ty),
                            if f.flatten { ".flatten()" } else { "" }
                        )
                    })
                    .collect();
                let name = format!("FIELDS_{i}");
                let shape = format!("H::Struct {{ extra: {extra}, fields: B(&{name}) }}");
                lists.push((name, "F", items));
                shape
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
                let items = variants
                    .iter()
                    .map(|v| {
                        let t =
                            v.ty.as_ref()
                                .map_or("None".to_owned(), |t| format!("Some({})", ty(t)));
                        format!("V::new({:?}, {}, {t})", v.tag, v.number)
                    })
                    .collect();
                let name = format!("VARIANTS_{i}");
                let shape = format!(
                    "H::Union {{ style: U::{style:?}, tag: B({tag:?}), content: {content}, variants: B(&{name}) }}"
                );
                lists.push((name, "V", items));
                shape
            }
            DShape::Wrapper(t) => format!("H::Wrapper({})", ty(t)),
            DShape::Tuple(items) => {
                let name = format!("ITEMS_{i}");
                let shape = format!("H::Tuple(B(&{name}))");
                lists.push((name, "T", items.iter().map(ty).collect()));
                shape
            }
        };
        messages.push(format!("M {{ name: B({:?}), shape: {shape} }}", m.name));
    }
    lists.push(("MESSAGES".into(), "M", messages));
    let mut enums = Vec::new();
    for (i, e) in d.enums.iter().enumerate() {
        let name = format!("VALUES_{i}");
        enums.push(format!("E {{ name: B({:?}), values: B(&{name}) }}", e.name));
        let values = e
            .values
            .iter()
            .map(|v| format!("N::new({:?}, {})", v.name, v.number))
            .collect();
        lists.push((name, "N", values));
    }
    lists.push(("ENUMS".into(), "E", enums));
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
    o.push_str(
        "    records: B(&RECORDS),\n    messages: B(&MESSAGES),\n    enums: B(&ENUMS),\n};\n",
    );
    for (name, element, items) in &lists {
        let _ = writeln!(o, "\nstatic {name}: [{element}; {}] = [", items.len());
        for item in items {
            let _ = writeln!(o, "    {item},");
        }
        o.push_str("];\n");
    }
    o
}
