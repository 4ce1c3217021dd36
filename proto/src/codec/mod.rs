//! The codec's API: JSON ↔ protobuf for one record with a [`Codec`] (the descriptor of a contract
//! version, indexed), and a generated type's own codec where it applies, on prost's encoding
//! primitives; the limits and the error every direction shares.
//!
//! [`encode`] tries the direct encoder (`direct.rs`) and falls back to the general one
//! (`encode.rs`), the reference, which names the path of an error; `decode.rs` reads the bytes
//! back. prost's generated types would drop unknown fields on decode, so the codec is written on
//! `prost::encoding` and driven by the descriptor.

use std::fmt;

use prost::encoding::WireType;
use serde_json::Value;

use diagwire_runtime::proto::Message;

use crate::index::{Codec, Scalar, Ty};

mod decode;
mod direct;
mod encode;

use decode::derr;
use encode::{eerr, encode_general};

pub use crate::index::Kind;

/// The JSON key under which a reader keeps what its descriptor cannot name: an object from
/// message name to the hex of that message's fields, exactly as they were on the wire.
pub use diagwire_runtime::proto::UNKNOWN_FIELDS_KEY;

/// Nesting depth past which encoding and decoding refuse.
pub const MAX_DEPTH: usize = 64;

/// The largest record [`decode`] accepts.
pub const MAX_RECORD_BYTES: usize = 64 << 20;

/// The most JSON values (objects, arrays, strings, numbers, booleans, nulls, each counted once)
/// [`decode`] builds from a record of `len` bytes; past it, decoding stops with an error.
pub const fn decode_budget(len: usize) -> usize {
    64 * len + 100_000
}

/// A located codec error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// Where: message and field names from the record down (`EventRecord.@event/DialStarted.peer`)
    /// or, when encoding, the JSON pointer.
    pub path: String,
    /// Byte offset into the protobuf input (decoding), 0 when encoding.
    pub offset: usize,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "at `{}` (byte {}): {}",
            self.path, self.offset, self.message
        )
    }
}

impl std::error::Error for Error {}

/// A value the descriptor cannot hold: kept as JSON (encoding) or as raw fields (decoding).
struct Misfit;

/// The wire type of a value of `t` (a list's items).
fn wire_of(t: &Ty) -> WireType {
    match t {
        Ty::Scalar(Scalar::F64) => WireType::SixtyFourBit,
        Ty::Scalar(
            Scalar::U8
            | Scalar::U16
            | Scalar::U32
            | Scalar::U64
            | Scalar::I32
            | Scalar::I64
            | Scalar::Bool,
        )
        | Ty::Enum(_) => WireType::Varint,
        _ => WireType::LengthDelimited,
    }
}

/// A record the direct encoder leaves to the general one, which takes every record and names the
/// path of an error.
#[derive(Debug)]
struct Bail;

/// The bytes of lowercase hex text.
fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    let d = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    s.as_bytes()
        .chunks(2)
        .map(|p| Some(d(p[0])? << 4 | d(p[1])?))
        .collect()
}

fn is_zero(t: &Ty, v: &Value) -> bool {
    match (t, v) {
        (Ty::List(_), Value::Array(a)) => a.is_empty(),
        (Ty::Scalar(Scalar::Str), Value::String(s)) => s.is_empty(),
        (Ty::Scalar(Scalar::Bool), Value::Bool(b)) => !b,
        (Ty::Scalar(Scalar::F64), Value::Number(n)) => {
            n.is_f64() && n.as_f64().is_some_and(|f| f == 0.0 && f.is_sign_positive())
        }
        (Ty::Scalar(Scalar::U8 | Scalar::U16 | Scalar::U32 | Scalar::U64), Value::Number(n)) => {
            n.as_u64() == Some(0)
        }
        (Ty::Scalar(Scalar::I32 | Scalar::I64), Value::Number(n)) => n.as_u64() == Some(0),
        _ => false,
    }
}

/// Encodes a JSON record of `kind` with `codec`.
pub fn encode(codec: &Codec, kind: impl Kind, record: &Value) -> Result<Vec<u8>, Error> {
    let msg = codec.records.get(kind.name()).ok_or_else(|| {
        eerr(
            "",
            format!("contract {} has no record kind `{kind}`", codec.version),
        )
    })?;
    if let Ok(b) = direct::Direct::encode(codec, msg, record) {
        return Ok(b);
    }
    encode_general(codec, msg, record)
}

/// Encodes a record given as any value whose `Serialize` writes the record's JSON (a generated
/// type of any contract version, a `serde_json::Value`): the bytes [`encode`] writes for
/// `serde_json::to_value(record)`. For a generated type of the descriptor's own version,
/// [`encode_record`] writes the same bytes many times faster.
pub fn encode_typed<T: serde::Serialize + ?Sized>(
    codec: &Codec,
    kind: impl Kind,
    record: &T,
) -> Result<Vec<u8>, Error> {
    let v = serde_json::to_value(record).map_err(|e| eerr("", e.to_string()))?;
    encode(codec, kind, &v)
}

/// Encodes a record given as its generated Rust type with the type's generated codec: the bytes
/// [`encode`] writes for the record's JSON, written field by field by the code `cargo codegen`
/// wrote for the type, which is the fastest way to protobuf. A record the generated codec leaves
/// to the descriptor codec (one holding an unknown variant, raw fields under
/// [`UNKNOWN_FIELDS_KEY`], a list item its type cannot hold), a `codec` of another version than
/// the type's, or a `kind` whose message is not the type's goes through [`encode_typed`], which
/// takes every record.
///
/// ```
/// use diagwire_generated::v1::{DialStarted, EventBatch, EventRecord, NodeId, RecordKind};
/// use diagwire_proto::{current, decode_record, encode, encode_record};
///
/// let event = DialStarted::new(NodeId([9; 32]), 1, 500);
/// let batch: EventBatch = vec![EventRecord::new(NodeId([7; 32]), 1, 1_700_000_000_000, event)];
/// let body = encode_record(current(), RecordKind::EventBatch, &batch)?;
/// let json = serde_json::to_value(&batch).unwrap();
/// assert_eq!(body, encode(current(), RecordKind::EventBatch, &json)?);
/// assert_eq!(decode_record::<EventBatch>(current(), RecordKind::EventBatch, &body)?, batch);
/// # Ok::<(), diagwire_proto::Error>(())
/// ```
pub fn encode_record<T: Message + serde::Serialize>(
    codec: &Codec,
    kind: impl Kind,
    record: &T,
) -> Result<Vec<u8>, Error> {
    if codec.holds::<T>(kind) {
        if let Ok(out) = diagwire_runtime::proto::encode(record) {
            return Ok(out);
        }
    }
    encode_typed(codec, kind, record)
}

/// Decodes a protobuf record of `kind` into its generated Rust type with the type's generated
/// codec: the value `T` reads from what [`decode`] returns, read straight from the bytes by the
/// code `cargo codegen` wrote for the type when they hold nothing the type's version does not name;
/// otherwise (or for a `codec` of another version than the type's) through [`decode_typed`]. The
/// values it builds are held to `diagwire_runtime::proto::budget(bytes.len())` bytes of nested
/// messages, so memory stays proportional to the input.
pub fn decode_record<T: Message + serde::de::DeserializeOwned>(
    codec: &Codec,
    kind: impl Kind,
    bytes: &[u8],
) -> Result<T, Error> {
    if bytes.len() <= MAX_RECORD_BYTES && codec.holds::<T>(kind) {
        if let Ok(v) = diagwire_runtime::proto::bounded(bytes.len(), || T::read_body(bytes)) {
            return Ok(v);
        }
    }
    decode_typed(codec, kind, bytes)
}

/// Decodes a protobuf record of `kind` with `codec` into any type that deserializes from the
/// record's JSON: the value `T` reads from what [`decode`] returns. For a generated type of the
/// codec's own version, [`decode_record`] reads the same value many times faster.
pub fn decode_typed<T: serde::de::DeserializeOwned>(
    codec: &Codec,
    kind: impl Kind,
    bytes: &[u8],
) -> Result<T, Error> {
    let v = decode(codec, kind, bytes)?;
    let msg = codec.records.get(kind.name()).map_or("", String::as_str);
    T::deserialize(v).map_err(|e| derr(msg, 0, format!("not a `{kind}` record: {e}")))
}

/// Decodes a protobuf record of `kind` with `codec` into JSON. Fields the descriptor does not know are
/// kept under [`UNKNOWN_FIELDS_KEY`], so [`encode`] with the same descriptor writes them back.
pub fn decode(codec: &Codec, kind: impl Kind, bytes: &[u8]) -> Result<Value, Error> {
    if bytes.len() > MAX_RECORD_BYTES {
        return Err(derr(
            "",
            0,
            format!("a record is at most {MAX_RECORD_BYTES} bytes"),
        ));
    }
    let msg = codec.records.get(kind.name()).ok_or_else(|| {
        derr(
            "",
            0,
            format!("contract {} has no record kind `{kind}`", codec.version),
        )
    })?;
    decode::record(codec, msg, bytes)
}

/// What both encoders wrote for one record (see [`encoders`]).
#[doc(hidden)]
#[derive(Debug)]
pub struct Encoded {
    /// The direct encoder's bytes; `None` where it leaves the record to the general encoder.
    pub direct: Option<Vec<u8>>,
    /// The general encoder's result.
    pub general: Result<Vec<u8>, Error>,
}

/// Both encoders on one record, for the test that holds the direct encoder to the general one
/// (`compat-tests/tests/suite/proto_codecs.rs`); `None` when this contract version has no record kind
/// `kind`.
#[doc(hidden)]
pub fn encoders(codec: &Codec, kind: impl Kind, record: &Value) -> Option<Encoded> {
    let msg = codec.records.get(kind.name())?;
    Some(Encoded {
        direct: direct::Direct::encode(codec, msg, record).ok(),
        general: encode_general(codec, msg, record),
    })
}
