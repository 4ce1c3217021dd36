//! Walking JSON values with the contract's shape table: every struct instance a value holds, with
//! its type and JSON pointer, and the snapshot blocks that carry their own `api_gaps` list.
//!
//! The walk follows the generated types' rules (as `diagwire::shape` does): an internal union's
//! variant shares its object with the struct that absorbs it, an adjacent union's payload sits under
//! its content key, an external union is a string or a one-key object.

use diagwire::shape::{
    FieldShape, PayloadShape, TypeKind, TypeShape, UnionStyle, ValueShape, VariantShape,
};
use diagwire::v1::CONTRACT;
use diagwire_runtime::shape::escape_pointer_token;
use serde_json::{Map, Value};

/// The name of the field that lists a block's gaps.
pub const GAP_LIST: &str = "api_gaps";

/// One struct instance found in a value.
#[derive(Debug)]
pub struct Instance<'v, 'p> {
    /// The struct's type name.
    pub type_name: &'static str,
    /// Its fields.
    pub fields: &'static [FieldShape],
    /// The JSON object (shared with the absorbing struct for a union variant).
    pub obj: &'v Map<String, Value>,
    /// JSON pointer of the object, relative to the walked value.
    pub ptr: &'p str,
    /// The gap list that applies: the `api_gaps` of the nearest enclosing struct that has one.
    pub gaps: Option<&'v [Value]>,
    /// Tag constants of the struct (as a union variant).
    consts: &'static [(&'static str, &'static str)],
    /// Keys of the object that enclosing structs (which absorb this one) name.
    outer: &'p [&'static str],
    /// Whether an internal union absorbed by this struct is walked on the same object (its variant
    /// then accounts for the keys this struct does not name).
    absorbs: bool,
    /// The tag and content keys of an adjacent union this struct absorbs.
    adjacent: Option<(&'static str, Option<&'static str>)>,
}

impl Instance<'_, '_> {
    /// Whether the gap list names `gap`.
    pub fn declares(&self, gap: &str) -> bool {
        self.gaps
            .is_some_and(|g| g.iter().any(|v| v.as_str() == Some(gap)))
    }

    /// The keys of the object that no field of the contract names, as the types keep them in
    /// `extra` (reported on the innermost struct of an absorbing chain only).
    pub fn unknown_keys(&self) -> impl Iterator<Item = &str> {
        let absorbs = self.absorbs;
        self.obj.keys().map(String::as_str).filter(move |k| {
            !absorbs
                && !self.fields.iter().any(|f| f.key == *k)
                && !self.consts.iter().any(|(c, _)| c == k)
                && !self.outer.contains(k)
                && !self.adjacent.is_some_and(|(t, c)| t == *k || c == Some(*k))
        })
    }
}

type Visit<'a, 'v> = &'a mut dyn FnMut(&Instance<'v, '_>);

/// Calls `visit` for every struct instance of `value`, a value of the named type.
pub fn instances<'v>(type_name: &str, value: &'v Value, visit: Visit<'_, 'v>) {
    if let Some(t) = CONTRACT.get(type_name) {
        walk_type(t, value, &mut String::new(), None, &mut Vec::new(), visit);
    }
}

/// Calls `visit` for every struct instance of `value`, a value of the given shape.
pub fn instances_of_shape<'v>(shape: &ValueShape, value: &'v Value, visit: Visit<'_, 'v>) {
    walk_value(shape, value, &mut String::new(), None, visit);
}

fn push_token(ptr: &mut String, token: &str) -> usize {
    let len = ptr.len();
    ptr.push('/');
    if token.contains(['~', '/']) {
        ptr.push_str(&escape_pointer_token(token));
    } else {
        ptr.push_str(token);
    }
    len
}

fn push_index(ptr: &mut String, i: usize) -> usize {
    use std::fmt::Write;
    let len = ptr.len();
    let _ = write!(ptr, "/{i}");
    len
}

fn walk_value<'v>(
    shape: &ValueShape,
    value: &'v Value,
    ptr: &mut String,
    gaps: Option<&'v [Value]>,
    visit: Visit<'_, 'v>,
) {
    match (shape, value) {
        (ValueShape::Ref(name), _) => {
            if let Some(t) = CONTRACT.get(name) {
                walk_type(t, value, ptr, gaps, &mut Vec::new(), visit);
            }
        }
        (ValueShape::Vec(item), Value::Array(items)) => {
            for (i, v) in items.iter().enumerate() {
                let len = push_index(ptr, i);
                walk_value(item, v, ptr, gaps, visit);
                ptr.truncate(len);
            }
        }
        (ValueShape::Tuple(shapes), Value::Array(items)) => {
            for (i, (s, v)) in shapes.iter().zip(items).enumerate() {
                let len = push_index(ptr, i);
                walk_value(s, v, ptr, gaps, visit);
                ptr.truncate(len);
            }
        }
        _ => {}
    }
}

fn walk_type<'v>(
    t: &'static TypeShape,
    value: &'v Value,
    ptr: &mut String,
    gaps: Option<&'v [Value]>,
    outer: &mut Vec<&'static str>,
    visit: Visit<'_, 'v>,
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
            let gaps = if fields.iter().any(|f| f.key == GAP_LIST) {
                obj.get(GAP_LIST)
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .or(Some(&[]))
            } else {
                gaps
            };
            let union = flatten.and_then(|u| CONTRACT.get(u));
            let (absorbs, adjacent) = match union.map(|u| &u.kind) {
                Some(TypeKind::Union {
                    style: UnionStyle::Internal,
                    ..
                }) => (true, None),
                Some(TypeKind::Union {
                    style: UnionStyle::Adjacent,
                    tag,
                    content,
                    ..
                }) => (false, Some((*tag, *content))),
                _ => (false, None),
            };
            visit(&Instance {
                type_name: t.name,
                fields,
                obj,
                ptr,
                gaps,
                consts,
                outer,
                absorbs,
                adjacent,
            });
            for f in fields.iter() {
                if let Some(v) = obj.get(f.key) {
                    let len = push_token(ptr, f.key);
                    walk_value(&f.value, v, ptr, gaps, visit);
                    ptr.truncate(len);
                }
            }
            if let Some(u) = union {
                let before = outer.len();
                outer.extend(fields.iter().map(|f| f.key));
                outer.extend(consts.iter().map(|(c, _)| *c));
                walk_type(u, value, ptr, gaps, outer, visit);
                outer.truncate(before);
            }
        }
        TypeKind::Union {
            style,
            tag,
            content,
            variants,
            ..
        } => match style {
            UnionStyle::Internal => {
                let Some(v) = union_variant(tag, variants, value) else {
                    return;
                };
                if let PayloadShape::Def(name) = v.payload
                    && let Some(t) = CONTRACT.get(name)
                {
                    walk_type(t, value, ptr, gaps, outer, visit);
                }
            }
            UnionStyle::Adjacent => {
                let (Some(v), Some(c)) = (union_variant(tag, variants, value), content) else {
                    return;
                };
                if let (PayloadShape::Value(shape), Some(inner)) = (&v.payload, value.get(*c)) {
                    let len = push_token(ptr, c);
                    walk_value(shape, inner, ptr, gaps, visit);
                    ptr.truncate(len);
                }
            }
            UnionStyle::External => {
                let Value::Object(obj) = value else {
                    return;
                };
                let Some((k, inner)) = obj.iter().next() else {
                    return;
                };
                if let Some(VariantShape {
                    payload: PayloadShape::Value(shape),
                    ..
                }) = variants.iter().find(|v| v.tag == k)
                {
                    let len = push_token(ptr, k);
                    walk_value(shape, inner, ptr, gaps, visit);
                    ptr.truncate(len);
                }
            }
        },
        TypeKind::Array(item) => walk_value(&ValueShape::Vec(item), value, ptr, gaps, visit),
        TypeKind::Enum { .. } | TypeKind::NodeId | TypeKind::NodeIdHex => {}
    }
}

/// The known variant an internal or adjacent union value has, by its tag.
pub fn union_variant<'s>(
    tag: &str,
    variants: &'s [VariantShape],
    value: &Value,
) -> Option<&'s VariantShape> {
    let t = value.get(tag)?.as_str()?;
    variants.iter().find(|v| v.tag == t)
}

/// A snapshot body block that carries its own gap list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GapBlock {
    /// The key of the block in the snapshot body (`iroh`).
    pub key: &'static str,
    /// Its type (`IrohState`).
    pub type_name: &'static str,
}

/// Every `SnapshotBody` block whose type has an `api_gaps` list, from the shape table.
pub fn gap_blocks() -> Vec<GapBlock> {
    let mut out = Vec::new();
    if let Some(TypeKind::Struct { fields, .. }) = CONTRACT.get("SnapshotBody").map(|t| t.kind) {
        for f in fields {
            if let ValueShape::Ref(name) = f.value
                && let Some(TypeKind::Struct { fields: inner, .. }) =
                    CONTRACT.get(name).map(|t| t.kind)
                && inner.iter().any(|g| g.key == GAP_LIST)
            {
                out.push(GapBlock {
                    key: f.key,
                    type_name: name,
                });
            }
        }
    }
    out
}

/// Whether a value of type `from` can hold a value of type `to` (or is it).
pub fn reaches(from: &str, to: &str) -> bool {
    let mut seen = std::collections::BTreeSet::new();
    reaches_inner(from, to, &mut seen)
}

fn reaches_inner(from: &str, to: &str, seen: &mut std::collections::BTreeSet<String>) -> bool {
    if from == to {
        return true;
    }
    if !seen.insert(from.to_owned()) {
        return false;
    }
    let Some(t) = CONTRACT.get(from) else {
        return false;
    };
    let mut refs = Vec::new();
    type_refs(t, &mut refs);
    refs.into_iter().any(|r| reaches_inner(r, to, seen))
}

/// The type names a type refers to: its fields' and flattened union's, its variants' payloads',
/// its items'.
pub fn type_refs(t: &TypeShape, refs: &mut Vec<&'static str>) {
    match &t.kind {
        TypeKind::Struct {
            fields, flatten, ..
        } => {
            for f in fields.iter() {
                shape_refs(&f.value, refs);
            }
            refs.extend(flatten.iter().copied());
        }
        TypeKind::Union { variants, .. } => {
            for v in variants.iter() {
                match &v.payload {
                    PayloadShape::Def(d) => refs.push(d),
                    PayloadShape::Value(s) => shape_refs(s, refs),
                    PayloadShape::Unit => {}
                }
            }
        }
        TypeKind::Array(item) => shape_refs(item, refs),
        _ => {}
    }
}

/// The type names a value shape refers to.
pub fn shape_refs(shape: &ValueShape, out: &mut Vec<&'static str>) {
    match shape {
        ValueShape::Ref(n) => out.push(n),
        ValueShape::Vec(item) => shape_refs(item, out),
        ValueShape::Tuple(items) => {
            for i in items.iter() {
                shape_refs(i, out);
            }
        }
        _ => {}
    }
}
