//! Lossless protobuf encoding of the diagwire records.
//!
//! `cargo codegen` renders a `.proto` file and a codec layout per contract version into
//! `generated/proto/` (field numbers pinned in `proto/numbers.json`, frozen per release in
//! `proto/releases/`). This crate converts between a record's JSON (`serde_json::Value`) and its
//! protobuf bytes with prost's encoding primitives, driven by a layout, so nothing is lost:
//! unknown JSON keys travel in each message's `unknown_json`, and fields, enum values and union
//! variants a reader's layout does not know are kept raw under [`UNKNOWN_FIELDS_KEY`] and written
//! back. `docs/protobuf.md` describes the encoding.

mod codec;
mod layout;

pub mod stream;

pub use codec::{
    Error, MAX_DEPTH, MAX_RECORD_BYTES, UNKNOWN_FIELDS_KEY, decode, decode_budget, decode_record,
    decode_typed, encode, encode_record, encode_typed,
};
/// The generated codec's trait: every generated message type (and a list of one, a batch)
/// implements it, with the protobuf numbers of its contract version.
pub use diagwire_runtime::proto::Message;
pub use layout::Layout;

/// The layout text of every release, oldest first, then of the current schemas (`"current"`),
/// compiled into `diagwire-generated` beside the types of the same schemas.
pub use diagwire_generated::proto::LAYOUTS;

/// The layout of `version` (a release such as `"1.0.0"`, or `"current"`).
pub fn layout(version: &str) -> Option<&'static Layout> {
    use std::sync::OnceLock;
    static PARSED: OnceLock<Vec<(&'static str, Layout)>> = OnceLock::new();
    let all = PARSED.get_or_init(|| {
        LAYOUTS
            .iter()
            .map(|(v, text)| {
                let l = Layout::parse(text).unwrap_or_else(|e| panic!("generated layout {v}: {e}"));
                (*v, l)
            })
            .collect()
    });
    all.iter().find(|(v, _)| *v == version).map(|(_, l)| l)
}

/// The layout of the current schemas.
pub fn current() -> &'static Layout {
    layout("current").expect("OK because the generator always emits the current layout")
}
