//! `Arbitrary` support: values that serialize to schema-valid records and read back equal.

use arbitrary::{Arbitrary, Result, Unstructured};
use serde_json::{Map, Number, Value};

use crate::{Extra, Json, UnknownVariant};

/// A finite `f64` (JSON has no NaN or infinity).
pub fn finite_f64(u: &mut Unstructured<'_>) -> Result<f64> {
    let v = f64::arbitrary(u)?;
    Ok(if v.is_finite() { v } else { 0.5 })
}

/// An optional finite `f64`.
pub fn opt_finite_f64(u: &mut Unstructured<'_>) -> Result<Option<f64>> {
    Ok(if bool::arbitrary(u)? {
        Some(finite_f64(u)?)
    } else {
        None
    })
}

/// A string that is not one of `known`, for the `Other` variant of an open enum or union.
pub fn other_string(u: &mut Unstructured<'_>, known: &[&str]) -> Result<String> {
    let s = String::arbitrary(u)?;
    Ok(if known.contains(&s.as_str()) {
        format!("future_{s}")
    } else {
        s
    })
}

fn key(u: &mut Unstructured<'_>) -> Result<String> {
    // Unknown keys carry a prefix no schema uses, so they never collide with known keys.
    let s = String::arbitrary(u)?;
    Ok(format!("zz_{s}"))
}

fn value(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let pick = if depth == 0 {
        u.int_in_range(0..=4)?
    } else {
        u.int_in_range(0..=6)?
    };
    Ok(match pick {
        0 => Value::Null,
        1 => Value::Bool(bool::arbitrary(u)?),
        2 => Value::Number(Number::from(u64::arbitrary(u)?)),
        3 => Value::Number(Number::from(i64::arbitrary(u)?)),
        4 => match Number::from_f64(finite_f64(u)?) {
            Some(n) => Value::Number(n),
            None => Value::Null,
        },
        5 => {
            let n = u.int_in_range(0..=3)?;
            Value::Array((0..n).map(|_| value(u, depth - 1)).collect::<Result<_>>()?)
        }
        _ => {
            let n = u.int_in_range(0..=3)?;
            let mut m = Map::new();
            for _ in 0..n {
                m.insert(String::arbitrary(u)?, value(u, depth - 1)?);
            }
            Value::Object(m)
        }
    })
}

impl<'a> Arbitrary<'a> for Json {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(Json(value(u, 2)?))
    }
}

impl<'a> Arbitrary<'a> for Extra {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let mut out = Extra::default();
        let n = u.int_in_range(0..=2)?;
        for _ in 0..n {
            out.insert(key(u)?, value(u, 1)?);
        }
        Ok(out)
    }
}

/// An optional JSON value that is never `Some(null)`, which reads back as `None`.
pub fn opt_json(u: &mut Unstructured<'_>) -> Result<Option<Json>> {
    Ok(match Json::arbitrary(u)? {
        Json(Value::Null) => None,
        v => Some(v),
    })
}

/// An unknown variant of an open internal union whose known tags are `known`.
pub fn unknown_variant(u: &mut Unstructured<'_>, known: &[&str]) -> Result<UnknownVariant> {
    Ok(UnknownVariant {
        tag: other_string(u, known)?,
        fields: Extra::arbitrary(u)?,
    })
}
