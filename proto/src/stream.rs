//! A length-delimited record stream: each record is its protobuf bytes preceded by their length as
//! a varint (protobuf's usual delimited framing), so a batch of events or snapshots is one body.

use prost::encoding::{decode_varint, encode_varint};
use serde_json::Value;

use crate::codec::{Error, Kind, MAX_RECORD_BYTES, decode, encode};
use crate::index::Codec;

/// Encodes `records` of `kind` as one stream.
pub fn encode_stream<'a>(
    codec: &Codec,
    kind: impl Kind,
    records: impl IntoIterator<Item = &'a Value>,
) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    for (i, r) in records.into_iter().enumerate() {
        let b = encode(codec, kind, r).map_err(|e| Error {
            path: format!("record {i}: {}", e.path),
            ..e
        })?;
        encode_varint(b.len() as u64, &mut out);
        out.extend_from_slice(&b);
    }
    Ok(out)
}

/// The records of a stream, one at a time; an error names the record index and its offset.
pub fn decode_stream<'a>(
    codec: &'a Codec,
    kind: impl Kind + 'a,
    bytes: &'a [u8],
) -> impl Iterator<Item = Result<Value, Error>> + 'a {
    let mut pos = 0usize;
    let mut index = 0usize;
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed || pos >= bytes.len() {
            return None;
        }
        let at = pos;
        let i = index;
        index += 1;
        let fail = |message: String| Error {
            path: format!("record {i}"),
            offset: at,
            message,
        };
        let mut s = &bytes[pos..];
        let before = s.len();
        let len = match decode_varint(&mut s) {
            Ok(l) => l,
            Err(e) => {
                failed = true;
                return Some(Err(fail(e.to_string())));
            }
        };
        let start = pos + (before - s.len());
        let len = match usize::try_from(len) {
            Ok(l) if l <= MAX_RECORD_BYTES && l <= bytes.len() - start => l,
            _ => {
                failed = true;
                return Some(Err(fail(format!(
                    "length {len} runs past the stream or the {MAX_RECORD_BYTES}-byte cap"
                ))));
            }
        };
        pos = start + len;
        Some(decode(codec, kind, &bytes[start..pos]).map_err(|e| Error {
            path: format!("record {i}: {}", e.path),
            offset: start + e.offset,
            message: e.message,
        }))
    })
}
