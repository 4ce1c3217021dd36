//! Lossless protobuf encoding of the diagwire records.
//!
//! `cargo codegen` renders a `.proto` file and a descriptor per contract version into
//! `generated/proto/` (field numbers pinned in `schemas/proto-numbers.json`, frozen per release in
//! `schemas/releases/<version>/proto-numbers.json`); the descriptors are Rust statics compiled into
//! `diagwire-generated`. This crate converts between a record's JSON (`serde_json::Value`) and its
//! protobuf bytes with prost's encoding primitives, driven by a descriptor, so nothing is lost:
//! unknown JSON keys travel in each message's `unknown_json`, and fields, enum values and union
//! variants a reader's descriptor does not know are kept raw under [`UNKNOWN_FIELDS_KEY`] and
//! written back. `docs/protobuf.md` describes the encoding.

mod codec;
mod index;

pub mod stream;

pub use codec::{
    Encoded, Error, Kind, MAX_DEPTH, MAX_RECORD_BYTES, UNKNOWN_FIELDS_KEY, decode, decode_budget,
    decode_record, decode_typed, encode, encode_record, encode_typed, encoders,
};
/// The record kinds the codec's functions take.
pub use diagwire_generated::v1::RecordKind;
/// The descriptor of a contract version as data: generated statics, or built at run time.
pub use diagwire_runtime::descriptor::{self, Descriptor};
/// The generated codec's trait: every generated message type (and a list of one, a batch)
/// implements it, with the protobuf numbers of its contract version.
pub use diagwire_runtime::proto::Message;
pub use index::Codec;

/// The descriptor of every release, oldest first, then of the current schemas (`"current"`),
/// compiled into `diagwire-generated` beside the types of the same schemas.
pub use diagwire_generated::proto::DESCRIPTORS;

/// The codec of `version` (a release such as `"1.0.0"`, or `"current"`), indexed from its
/// generated descriptor once.
pub fn codec(version: &str) -> Option<&'static Codec> {
    use std::sync::OnceLock;
    static INDEXED: OnceLock<Vec<(&'static str, Codec)>> = OnceLock::new();
    let all = INDEXED.get_or_init(|| {
        DESCRIPTORS
            .iter()
            .map(|(v, d)| (*v, Codec::new(d)))
            .collect()
    });
    all.iter().find(|(v, _)| *v == version).map(|(_, c)| c)
}

/// The codec of the current schemas.
pub fn current() -> &'static Codec {
    codec("current").expect("OK because the generator always emits the current descriptor")
}
