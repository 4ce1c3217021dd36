//! Hand-written support types for the code that `cargo codegen` writes into `diagwire-generated`.
//!
//! The generated record types refer to this crate by path for everything that is not specific to
//! one schema: the two node-id encodings, opaque JSON values, the map of unknown fields every struct
//! keeps, value provenance, and the streaming deserializer machinery that lets tagged unions keep
//! unknown variants without buffering whole records.
//! It depends on serde and serde_json only (plus `arbitrary` and, for the primitives of the
//! generated protobuf codec, prost, behind the features of those names).

mod de;
mod id;
mod json;
mod macros;
mod provenance;
pub mod rng;
pub mod shape;
pub mod text;

#[cfg(feature = "proto")]
pub mod descriptor;
#[cfg(feature = "proto")]
pub mod proto;

#[cfg(feature = "arbitrary")]
pub mod arb;

pub use de::{Decoder, DecoderVisitor, FieldSeed, KeySeed, Pending};
pub use id::{NodeId, NodeIdHex, ParseNodeIdError, short_hex};
pub use json::{Extra, Json, unknown_keys_read};
pub use provenance::{Provenance, REPORTED_SOURCES, UNAVAILABLE_SOURCE, Unavailable};
pub use rng::SplitMix64;

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

/// One contract version as data: what a tool needs to read, check or walk its records without
/// naming its Rust types. Every generated contract module (`v1`, each release) has one, `CONTRACT`.
#[derive(Debug, Clone, Copy)]
pub struct Contract {
    /// The contract version, a semantic version such as `1.1.0`.
    pub version: &'static str,
    /// Every record kind, sorted by kind.
    pub records: &'static [RecordInfo],
    /// The text of every schema file, by stem.
    pub schema_texts: &'static [(&'static str, &'static str)],
    /// Every type, sorted by name.
    pub types: &'static [shape::TypeShape],
    /// Reads a record of the named kind with this version's types and writes it back as a JSON
    /// value; `None` when this version has no such kind.
    pub reread: fn(&str, &str) -> Option<Result<serde_json::Value, serde_json::Error>>,
}

impl Contract {
    /// The type of that name.
    pub fn get(&self, name: &str) -> Option<&'static shape::TypeShape> {
        self.types
            .binary_search_by(|t| t.name.cmp(name))
            .ok()
            .map(|i| &self.types[i])
    }

    /// The record kind of that name.
    pub fn record(&self, kind: &str) -> Option<&'static RecordInfo> {
        self.records.iter().find(|r| r.kind == kind)
    }
}

/// A record kind name that the contract does not define.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRecordKind(pub String);

impl std::fmt::Display for UnknownRecordKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown record kind `{}`", self.0)
    }
}

impl std::error::Error for UnknownRecordKind {}

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
        UnknownVariantDecoder, field_set, finish_required, internal_tag, pending_replay, str_enum,
    };
    pub use serde;
    pub use serde_json;

    /// Serializes an object type as one JSON map of its [`crate::MapFields`].
    pub fn serialize_map<T: crate::MapFields + ?Sized, S: serde::Serializer>(
        value: &T,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        value.serialize_fields(&mut map)?;
        map.end()
    }
}
