//! Hand-written support types for the code that `cargo codegen` writes into `diagwire-generated`.
//!
//! The generated record types refer to this crate by path for everything that is not specific to
//! one schema: the two node-id encodings, opaque JSON values, the map of unknown fields every struct
//! keeps, value provenance, and the streaming deserializer machinery that lets tagged unions keep
//! unknown variants without buffering whole records.
//! It depends on serde and serde_json only (plus `arbitrary` behind the feature of that name).

mod de;
mod id;
mod json;
mod provenance;

#[cfg(feature = "arbitrary")]
pub mod arb;

pub use de::{Builder, BuilderVisitor, FieldSeed, KeySeed, Pending};
pub use id::{NodeId, NodeIdHex, ParseNodeIdError};
pub use json::{Extra, Json};
pub use provenance::{Provenance, Unavailable};

/// Writes a value's keys into a map being serialized: how structs, flattened unions and internal
/// unions compose into one JSON object.
pub trait MapFields {
    /// Writes every key of `self` into `map`.
    fn serialize_fields<M: serde::ser::SerializeMap>(&self, map: &mut M) -> Result<(), M::Error>;
}

/// Where a record kind is defined: its schema file and definition, and its Rust type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordInfo {
    /// The record kind (`boot`, `event`, `snapshot`, …), the schema's `x-record`.
    pub kind: &'static str,
    /// The schema file stem (`event` for `schemas/event.schema.json`).
    pub schema: &'static str,
    /// The `$defs` entry, which is also the Rust type name.
    pub def: &'static str,
}

/// True when `value` equals its type's default (how `skip-default` properties decide to omit a key).
pub fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// An unknown variant of an open internal union: the tag value and every other key of the object.
///
/// Written back unchanged, so a record that passes through an older reader keeps its variant.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UnknownVariant {
    /// The value of the union's tag key, not one of the variants the reader knows.
    pub tag: String,
    /// Every other key of the object except the tag (and except the keys of an enclosing struct).
    pub fields: Extra,
}

/// Helpers the generated code calls; not part of the public API.
#[doc(hidden)]
pub mod private {
    pub use crate::de::{
        UnknownVariantBuilder, field_set, finish_required, flat_union_key, internal_tag,
        pending_replay, str_enum,
    };
    pub use serde;
    pub use serde_json;
}
