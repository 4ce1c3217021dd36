//! The contract's shape table as the behavioural rules and coverage ask it: the snapshot blocks
//! that carry their own `api_gaps` list, and which types a type refers to or can hold. The walk of
//! a record's struct instances is the library's record view (`diagwire::view`).

use diagwire::shape::{TypeKind, ValueShape, type_refs};
use diagwire::v1::CONTRACT;

pub use diagwire::view::GAP_LIST;

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
