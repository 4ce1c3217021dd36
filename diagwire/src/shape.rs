//! Questions to the contract's shape table ([`crate::Contract::types`]) for tools that handle
//! records generically: which keys a record holds that the contract does not know (through the
//! record's view, [`crate::view`]), which fields of an event type hold node ids, which types a
//! type refers to.
//!
//! The table is generated from the same schemas as the types, so these walks follow the types'
//! rules: an object keeps unknown keys, an absorbed internal union takes every key its struct does
//! not name, an absorbed adjacent union only its tag and content keys.

pub use diagwire_runtime::shape::*;

use diagwire_runtime::Contract;
use serde_json::Value;

/// JSON pointers of the keys of `value`, a record of the kind named `kind`, that no field of the
/// contract names (they are kept as unknown keys by the types). Empty for an unknown kind. The
/// value is read through its text as the record's view ([`crate::view::unknown_keys`], which a
/// caller holding the record's text calls directly).
pub fn unknown_keys(contract: &Contract, kind: &str, value: &Value) -> Vec<String> {
    let text = value.to_string();
    match crate::view::Tape::read(&text, crate::view::Buffer::default()) {
        Ok(tape) => crate::view::unknown_keys(contract, kind, &tape),
        // Deeper than any record a reader takes: no instance of it is read either.
        Err(_) => Vec::new(),
    }
}

/// Escapes one JSON pointer token: another name of [`escape_pointer_token`], which callers of this
/// module used before the runtime had it.
pub use diagwire_runtime::shape::escape_pointer_token as escape_pointer;

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
