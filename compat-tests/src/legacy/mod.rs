//! Plain serde mirrors of swactor's own record types, serializing exactly as swactor does.
//!
//! Each submodule restates one family of swactor's diagnostics types (field names, Rust types and
//! serde attributes) as ordinary `#[derive(Serialize, Deserialize)]` items, so the JSON they write
//! is the JSON swactor writes, and their readers accept what swactor's readers accept: unknown keys
//! are ignored, an unknown tag of a Rust enum is an error.
//! Where the repository holds several generations, the mirror follows the newest one described in
//! the legacy wire reference.
//!
//! Every type also derives `Arbitrary`, generating values swactor could produce: finite floats,
//! 64-character lowercase hex ids made from 32 random bytes, and string fields that usually hold
//! one of the values swactor writes (with an occasional free-form value where the field is a plain
//! string in swactor).

use arbitrary::{Arbitrary, Result, Unstructured};
use serde_json::{Map, Number, Value};

pub mod collector;
pub mod event;
pub mod finalize;
pub mod identity;
pub mod manifest;
pub mod snapshot;
pub mod vastai;

// Floats: swactor never writes NaN or infinity on purpose (serde_json would write `null`).
pub use diagwire::arb::{finite_f64, opt_finite_f64};

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A node id as swactor renders it in snapshots: 64 lowercase hex characters from 32 bytes.
pub fn hex64(u: &mut Unstructured<'_>) -> Result<String> {
    let bytes = <[u8; 32]>::arbitrary(u)?;
    Ok(hex_of(&bytes))
}

/// The 8-character short id swactor derives from a node id.
pub fn hex8(u: &mut Unstructured<'_>) -> Result<String> {
    let bytes = <[u8; 4]>::arbitrary(u)?;
    Ok(hex_of(&bytes))
}

/// One of `known` most of the time, otherwise any string: a plain `String` field of swactor whose
/// producers write a small set of values.
pub fn mostly(u: &mut Unstructured<'_>, known: &[&str]) -> Result<String> {
    if u.ratio(3u8, 4u8)? {
        Ok((*u.choose(known)?).to_owned())
    } else {
        String::arbitrary(u)
    }
}

/// Like [`mostly`], for an optional field.
pub fn opt_mostly(u: &mut Unstructured<'_>, known: &[&str]) -> Result<Option<String>> {
    Ok(if bool::arbitrary(u)? {
        Some(mostly(u, known)?)
    } else {
        None
    })
}

fn json_number(u: &mut Unstructured<'_>) -> Result<Number> {
    Ok(match u.int_in_range(0..=2u8)? {
        0 => Number::from(u64::arbitrary(u)?),
        1 => Number::from(i64::arbitrary(u)?),
        _ => Number::from_f64(finite_f64(u)?).unwrap_or_else(|| Number::from(0u8)),
    })
}

fn json_value(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let top = if depth == 0 { 3 } else { 5 };
    Ok(match u.int_in_range(0..=top)? {
        0 => Value::Null,
        1 => Value::Bool(bool::arbitrary(u)?),
        2 => Value::Number(json_number(u)?),
        3 => Value::String(String::arbitrary(u)?),
        4 => {
            let n = u.int_in_range(0..=3usize)?;
            Value::Array(
                (0..n)
                    .map(|_| json_value(u, depth - 1))
                    .collect::<Result<_>>()?,
            )
        }
        _ => json_object(u, depth - 1)?,
    })
}

fn json_object(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let n = u.int_in_range(0..=3usize)?;
    let mut m = Map::new();
    for _ in 0..n {
        m.insert(String::arbitrary(u)?, json_value(u, depth)?);
    }
    Ok(Value::Object(m))
}

/// Any JSON value with finite numbers (what a `serde_json::Value` field can hold after a parse).
pub fn any_json(u: &mut Unstructured<'_>) -> Result<Value> {
    json_value(u, 2)
}

/// A JSON object with finite numbers.
pub fn any_json_object(u: &mut Unstructured<'_>) -> Result<Value> {
    json_object(u, 1)
}

/// A wall-clock time in ms since the epoch: mostly around today, sometimes any `u64`.
pub fn ms_epoch(u: &mut Unstructured<'_>) -> Result<u64> {
    if u.ratio(7u8, 8u8)? {
        u.int_in_range(1_700_000_000_000..=1_900_000_000_000u64)
    } else {
        u64::arbitrary(u)
    }
}

/// An optional [`ms_epoch`].
pub fn opt_ms_epoch(u: &mut Unstructured<'_>) -> Result<Option<u64>> {
    Ok(if bool::arbitrary(u)? {
        Some(ms_epoch(u)?)
    } else {
        None
    })
}
