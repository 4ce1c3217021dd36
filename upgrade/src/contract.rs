//! What the contract says a record holds, from the generated shape table: the keys of a struct or
//! record kind, the keys of an event's envelope, and which event fields hold node ids.

use std::collections::BTreeSet;

use diagwire::shape::{self, TypeKind};
use diagwire::v1::{self, RecordKind};

/// The keys of a struct of the contract, from the generated shape table.
pub(crate) fn field_keys(def: &str) -> BTreeSet<&'static str> {
    match v1::CONTRACT.get(def).map(|t| &t.kind) {
        Some(TypeKind::Struct { fields, .. }) => fields.iter().map(|f| f.key).collect(),
        _ => BTreeSet::new(),
    }
}

/// The keys of a record of `kind` itself, without those of a union it absorbs.
pub(crate) fn record_keys(kind: RecordKind) -> BTreeSet<&'static str> {
    field_keys(kind.info().def)
}

/// The keys an event record holds beside its type's fields: the record's own and the tag of the
/// event union it absorbs (`node_id`, `monotonic_seq`, `wall_ms`, `type`).
pub(crate) fn event_envelope_keys() -> BTreeSet<&'static str> {
    let def = RecordKind::Event.info().def;
    let mut keys = field_keys(def);
    if let Some(TypeKind::Struct {
        flatten: Some(union),
        ..
    }) = v1::CONTRACT.get(def).map(|t| &t.kind)
        && let Some(TypeKind::Union { tag, .. }) = v1::CONTRACT.get(union).map(|t| &t.kind)
    {
        keys.insert(tag);
    }
    keys
}

/// The fields of event type `tag` that hold a byte-array node id, and those that hold a hex one.
pub(crate) fn event_id_fields(tag: &str) -> (Vec<&'static str>, Vec<&'static str>) {
    shape::variant_def(&v1::CONTRACT, "Event", tag)
        .map(|def| shape::node_id_fields(&v1::CONTRACT, def))
        .unwrap_or_default()
}
