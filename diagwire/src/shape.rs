//! Walking JSON records with the contract's shape table ([`crate::Contract::types`]), for tools that
//! handle records generically: which keys a record holds that the contract does not know, which
//! fields of an event type hold node ids.
//!
//! The table is generated from the same schemas as the types, so these walks follow the types'
//! rules: an object keeps unknown keys, an absorbed internal union takes every key its struct does
//! not name, an absorbed adjacent union only its tag and content keys.

pub use diagwire_runtime::shape::*;

use diagwire_runtime::Contract;
use serde_json::Value;

/// JSON pointers of the keys of `value`, a record of the kind named `kind`, that no field of the
/// contract names (they are kept as unknown keys by the types). Empty for an unknown kind.
pub fn unknown_keys(contract: &Contract, kind: &str, value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(info) = contract.record(kind) {
        if let Some(t) = contract.get(info.def) {
            walk_type(contract, t, value, "", &mut out);
        }
    }
    out
}

/// Escapes one JSON pointer token: another name of [`escape_pointer_token`], which callers of this
/// module used before the runtime had it.
pub use diagwire_runtime::shape::escape_pointer_token as escape_pointer;

fn walk_value(
    contract: &Contract,
    shape: &ValueShape,
    value: &Value,
    ptr: &str,
    out: &mut Vec<String>,
) {
    match (shape, value) {
        (ValueShape::Ref(name), _) => {
            if let Some(t) = contract.get(name) {
                walk_type(contract, t, value, ptr, out);
            }
        }
        (ValueShape::Vec(item), Value::Array(items)) => {
            for (i, v) in items.iter().enumerate() {
                walk_value(contract, item, v, &format!("{ptr}/{i}"), out);
            }
        }
        (ValueShape::Tuple(items), Value::Array(values)) => {
            for (i, (s, v)) in items.iter().zip(values).enumerate() {
                walk_value(contract, s, v, &format!("{ptr}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn walk_type(
    contract: &Contract,
    t: &'static TypeShape,
    value: &Value,
    ptr: &str,
    out: &mut Vec<String>,
) {
    match &t.kind {
        TypeKind::Struct {
            fields,
            flatten,
            consts,
            ..
        } => {
            let Value::Object(obj) = value else {
                return;
            };
            let mut rest = serde_json::Map::new();
            for (k, v) in obj {
                match fields.iter().find(|f| f.key == k) {
                    Some(f) => walk_value(
                        contract,
                        &f.value,
                        v,
                        &format!("{ptr}/{}", escape_pointer_token(k)),
                        out,
                    ),
                    None if consts.iter().any(|(c, _)| c == k) => {}
                    None => {
                        rest.insert(k.clone(), v.clone());
                    }
                }
            }
            let union = flatten.and_then(|u| contract.get(u));
            match union.map(|u| (u, &u.kind)) {
                Some((
                    u,
                    TypeKind::Union {
                        style,
                        tag,
                        content,
                        ..
                    },
                )) => {
                    let mut claimed = serde_json::Map::new();
                    for (k, v) in rest {
                        let takes = *style == UnionStyle::Internal
                            || k == *tag
                            || content.is_some_and(|c| c == k);
                        if takes {
                            claimed.insert(k, v);
                        } else {
                            out.push(format!("{ptr}/{}", escape_pointer_token(&k)));
                        }
                    }
                    walk_type(contract, u, &Value::Object(claimed), ptr, out);
                }
                _ => out.extend(
                    rest.keys()
                        .map(|k| format!("{ptr}/{}", escape_pointer_token(k))),
                ),
            }
        }
        TypeKind::Union {
            style,
            tag,
            content,
            variants,
            ..
        } => walk_union(contract, *style, tag, *content, variants, value, ptr, out),
        TypeKind::Array(item) => walk_value(contract, &ValueShape::Vec(item), value, ptr, out),
        TypeKind::Enum { .. } | TypeKind::NodeId | TypeKind::NodeIdHex => {}
    }
}

#[allow(clippy::too_many_arguments)]
fn walk_union(
    contract: &Contract,
    style: UnionStyle,
    tag: &str,
    content: Option<&str>,
    variants: &[VariantShape],
    value: &Value,
    ptr: &str,
    out: &mut Vec<String>,
) {
    let Some(tag_value) = value.get(tag).and_then(Value::as_str) else {
        return;
    };
    // An unknown tag is the caller's to report: the whole object is kept as an unknown variant.
    let Some(variant) = variants.iter().find(|v| v.tag == tag_value) else {
        return;
    };
    match (style, &variant.payload) {
        (UnionStyle::Internal, PayloadShape::Def(name)) => {
            if let Some(t) = contract.get(name) {
                walk_type(contract, t, value, ptr, out);
            }
        }
        (UnionStyle::Adjacent, PayloadShape::Value(shape)) => {
            if let Some(c) = content {
                if let Some(v) = value.get(c) {
                    walk_value(
                        contract,
                        shape,
                        v,
                        &format!("{ptr}/{}", escape_pointer_token(c)),
                        out,
                    );
                }
            }
        }
        _ => {}
    }
}

/// The fields of a struct that hold node ids: those written as 32 integers ([`TypeKind::NodeId`])
/// and those written as hex ([`TypeKind::NodeIdHex`]), directly or as an optional value.
pub fn node_id_fields(contract: &Contract, def: &str) -> (Vec<&'static str>, Vec<&'static str>) {
    let mut bytes = Vec::new();
    let mut hex = Vec::new();
    if let Some(TypeShape {
        kind: TypeKind::Struct { fields, .. },
        ..
    }) = contract.get(def)
    {
        for f in fields.iter() {
            if let ValueShape::Ref(name) = f.value {
                match contract.get(name).map(|t| &t.kind) {
                    Some(TypeKind::NodeId) => bytes.push(f.key),
                    Some(TypeKind::NodeIdHex) => hex.push(f.key),
                    _ => {}
                }
            }
        }
    }
    (bytes, hex)
}

/// The struct definition of the variant of an internal union whose tag is `tag`.
pub fn variant_def(contract: &Contract, union: &str, tag: &str) -> Option<&'static str> {
    match &contract.get(union)?.kind {
        TypeKind::Union { variants, .. } => variants.iter().find_map(|v| match v.payload {
            PayloadShape::Def(name) if v.tag == tag => Some(name),
            _ => None,
        }),
        _ => None,
    }
}
