//! Record files in the binary form: a `.pb` file read as the JSON it encodes, so that every reader
//! of JSON records (validation, the record walk, summaries and checks) reads it too.
//!
//! A binary file holds one protobuf message of its record kind (an events file one `EventBatch`),
//! and is decoded with the descriptor of the current schemas: field numbers never change meaning, so
//! that descriptor reads what every older writer wrote, and a newer writer's fields it does not know
//! are kept under `"$protobuf_unknown"` as the codec describes (`docs/protobuf.md`). Without the
//! feature `proto` a binary file is a located problem, never a silent skip.

use std::borrow::Cow;

use crate::layout::Encoding;
use crate::v1::RecordKind;

/// The largest binary record file decoded, in bytes. Decoding may expand a record many times (a
/// node id's 32 bytes become 32 JSON numbers; the codec budgets 64 bytes of memory per input
/// byte), so binary files are held to a sixteenth of the 64 MiB a JSON file may have.
pub const MAX_BINARY_FILE_BYTES: usize = 4 << 20;

/// The JSON text of a record file of `kind`: the bytes themselves for a JSON file, the decoded
/// record for a binary one. The error is a sentence naming where in the message decoding failed.
pub fn json_text(
    encoding: Encoding,
    kind: RecordKind,
    bytes: &[u8],
) -> Result<Cow<'_, [u8]>, String> {
    match encoding {
        Encoding::Json => Ok(Cow::Borrowed(bytes)),
        Encoding::Protobuf => decode(kind, bytes).map(Cow::Owned),
    }
}

#[cfg(feature = "proto")]
fn decode(kind: RecordKind, bytes: &[u8]) -> Result<Vec<u8>, String> {
    if bytes.len() > MAX_BINARY_FILE_BYTES {
        return Err(format!(
            "larger than the {MAX_BINARY_FILE_BYTES} bytes a binary record file may have"
        ));
    }
    let value = diagwire_proto::decode(diagwire_proto::current(), kind, bytes)
        .map_err(|e| format!("not the protobuf of a {kind} record: {e}"))?;
    Ok(serde_json::to_vec(&value).expect("OK because a decoded JSON value always serializes"))
}

#[cfg(not(feature = "proto"))]
fn decode(kind: RecordKind, _bytes: &[u8]) -> Result<Vec<u8>, String> {
    Err(format!(
        "a binary {kind} record file; this build of diagwire reads binary files only with the feature `proto`"
    ))
}

/// `value` as pretty-printed JSON with a final newline, the way JSON record files are written.
#[cfg_attr(not(any(feature = "bundle", feature = "proto")), allow(dead_code))]
pub(crate) fn pretty_json(value: &impl serde::Serialize) -> Vec<u8> {
    let mut bytes =
        serde_json::to_vec_pretty(value).expect("OK because contract types always serialize");
    bytes.push(b'\n');
    bytes
}

/// The bytes of a record file of `kind` in `encoding`, from the record's JSON value or its
/// generated type (anything that serializes to the record's JSON): JSON as bundle files are written
/// (pretty, with a final newline), or the protobuf message.
#[cfg(feature = "proto")]
pub fn encode_value<T: serde::Serialize + ?Sized>(
    encoding: Encoding,
    kind: RecordKind,
    value: &T,
) -> Result<Vec<u8>, String> {
    match encoding {
        Encoding::Json => Ok(pretty_json(&value)),
        Encoding::Protobuf => diagwire_proto::encode_typed(diagwire_proto::current(), kind, value)
            .map_err(|e| format!("cannot encode the {kind} record as protobuf: {e}")),
    }
}
