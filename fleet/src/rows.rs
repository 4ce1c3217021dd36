//! Shapes one record's JSON into one row of its table: each column's value converted to the
//! column's type (node id arrays to hex, unions and free-form values to JSON text), and everything
//! no column holds — unknown keys at any depth, the body of an unknown event type, `uint64` values
//! above 2^63−1 — gathered in the row's `extra_json`, keyed by JSON pointer, so nothing is lost.

use serde_json::{Map, Value};

use crate::table::{Column, From, Struct, Table, Ty};

/// What the export knows about a record beyond its JSON.
#[derive(Debug, Default, Clone)]
pub struct Context {
    /// The run id.
    pub run_id: String,
    /// The bundle's file name.
    pub bundle: String,
    /// The node's directory label.
    pub node: Option<String>,
    /// The node's id (hex), when known.
    pub node_id: Option<String>,
    /// The file's sequence number.
    pub file_seq: Option<u64>,
    /// The record's index in its file.
    pub record_index: Option<u64>,
    /// The vast.ai record kind from the file name.
    pub file_kind: Option<String>,
}

/// Appends a JSON pointer token (`~` and `/` escaped).
fn push_token(ptr: &str, key: &str) -> String {
    let mut p = String::with_capacity(ptr.len() + key.len() + 1);
    p.push_str(ptr);
    p.push('/');
    for c in key.chars() {
        match c {
            '~' => p.push_str("~0"),
            '/' => p.push_str("~1"),
            c => p.push(c),
        }
    }
    p
}

fn hex(bytes: &[Value]) -> Option<String> {
    if bytes.len() != 32 {
        return None;
    }
    let mut s = String::with_capacity(64);
    for b in bytes {
        let b = u8::try_from(b.as_u64()?).ok()?;
        s.push(char::from_digit(u32::from(b >> 4), 16)?);
        s.push(char::from_digit(u32::from(b & 15), 16)?);
    }
    Some(s)
}

/// The value of `v` shaped as `ty`; what cannot be held goes to `extra` under `ptr`.
pub fn shape(v: &Value, ty: &Ty, ptr: &str, extra: &mut Map<String, Value>) -> Value {
    if v.is_null() {
        return Value::Null;
    }
    let out = match (ty, v) {
        (Ty::Utf8, Value::String(_)) => Some(v.clone()),
        (Ty::Int64 | Ty::TimestampMs, Value::Number(n)) => n.as_i64().map(Value::from),
        (Ty::Float64, Value::Number(_)) => Some(v.clone()),
        (Ty::Boolean, Value::Bool(_)) => Some(v.clone()),
        (Ty::NodeId, Value::Array(a)) => hex(a).map(Value::String),
        (Ty::NodeId, Value::String(_)) => Some(v.clone()),
        (Ty::Json, _) => Some(Value::String(v.to_string())),
        (Ty::List(inner), Value::Array(a)) => Some(Value::Array(
            a.iter()
                .enumerate()
                .map(|(i, x)| shape(x, inner, &format!("{ptr}/{i}"), extra))
                .collect(),
        )),
        (Ty::Struct(s), Value::Object(o)) => {
            Some(Value::Object(shape_struct(o, s, ptr, extra, &[])))
        }
        _ => None,
    };
    out.unwrap_or_else(|| {
        extra.insert(ptr.to_owned(), v.clone());
        Value::Null
    })
}

/// The fields of `s` from `o`; keys in `skip` belong to someone else.
pub fn shape_struct(
    o: &Map<String, Value>,
    s: &Struct,
    ptr: &str,
    extra: &mut Map<String, Value>,
    skip: &[&str],
) -> Map<String, Value> {
    let mut out = Map::new();
    for f in s.fields {
        if Some(f.name) == s.rest {
            continue;
        }
        if let Some(v) = o.get(f.name) {
            let p = push_token(ptr, f.name);
            out.insert(f.name.to_owned(), shape(v, &f.ty, &p, extra));
        }
    }
    let mut rest = Map::new();
    for (k, v) in o {
        if skip.contains(&k.as_str()) || s.fields.iter().any(|f| f.name == k) {
            continue;
        }
        if s.rest.is_some() {
            rest.insert(k.clone(), v.clone());
        } else {
            extra.insert(push_token(ptr, k), v.clone());
        }
    }
    if let Some(r) = s.rest {
        if !rest.is_empty() {
            out.insert(r.to_owned(), Value::String(Value::Object(rest).to_string()));
        }
    }
    out
}

fn context(c: &Context, which: &str) -> Value {
    match which {
        "run_id" => Value::String(c.run_id.clone()),
        "bundle" => Value::String(c.bundle.clone()),
        "node" => c.node.clone().map_or(Value::Null, Value::String),
        "node_id" => c.node_id.clone().map_or(Value::Null, Value::String),
        "file_seq" => c.file_seq.map_or(Value::Null, Value::from),
        "record_index" => c.record_index.map_or(Value::Null, Value::from),
        "file_kind" => c.file_kind.clone().map_or(Value::Null, Value::String),
        _ => Value::Null,
    }
}

/// One row of `table` for the record `v` (an object).
pub fn row(table: &Table, v: &Map<String, Value>, ctx: &Context) -> Map<String, Value> {
    let mut out = Map::new();
    let mut extra = Map::new();
    let keys: Vec<&str> = table
        .columns
        .iter()
        .filter_map(|c| match c.from {
            From::Key(k) => Some(k),
            _ => None,
        })
        .collect();
    let tag = v.get("type").and_then(Value::as_str);
    let mut variant_claimed = table.record != "event";
    for c in table.columns {
        let Column { name, ty, from, .. } = c;
        let value = match from {
            From::Context("wall_time") => v
                .get("wall_ms")
                .and_then(Value::as_i64)
                .map_or(Value::Null, Value::from),
            From::Context(w) => context(ctx, w),
            From::Key(k) => v.get(*k).map_or(Value::Null, |x| {
                shape(x, ty, &push_token("", k), &mut extra)
            }),
            From::Variant(t) => {
                if tag != Some(*t) {
                    continue;
                }
                variant_claimed = true;
                let Ty::Struct(s) = ty else { continue };
                Value::Object(shape_struct(v, s, "", &mut extra, &keys))
            }
            From::Extra => continue,
        };
        out.insert((*name).to_owned(), value);
    }
    // Keys no column claims: an unknown top-level key, or every key of an unknown event type.
    if table.record != "event" || !variant_claimed {
        for (k, x) in v {
            // A record's own run id is the row's `run_id`; one that says otherwise is kept.
            if k == "run_id" && x.as_str() == Some(ctx.run_id.as_str()) {
                continue;
            }
            if !keys.contains(&k.as_str()) {
                extra.insert(push_token("", k), x.clone());
            }
        }
    }
    if !extra.is_empty() {
        out.insert(
            "extra_json".into(),
            Value::String(Value::Object(extra).to_string()),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::TABLES;

    fn table(name: &str) -> &'static Table {
        TABLES.iter().find(|t| t.name == name).unwrap()
    }

    #[test]
    fn a_u64_above_i64_max_is_null_and_kept_in_extra() {
        let v: Value = serde_json::from_str(
            r#"{"node_id":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1],"monotonic_seq":18446744073709551615,"wall_ms":5,"type":"DialStarted","peer":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"attempt":1,"timeout_ms":9,"novel":true}"#,
        )
        .unwrap();
        let r = row(table("events"), v.as_object().unwrap(), &Context::default());
        assert_eq!(r["monotonic_seq"], Value::Null);
        assert_eq!(r["dial_started"]["attempt"], 1);
        assert_eq!(r["dial_started"]["peer"], "01".repeat(32));
        let extra: Value = serde_json::from_str(r["extra_json"].as_str().unwrap()).unwrap();
        assert_eq!(
            extra["/monotonic_seq"],
            serde_json::json!(18446744073709551615u64)
        );
        assert_eq!(extra["/novel"], true);
    }

    #[test]
    fn an_unknown_event_type_is_kept_whole_in_extra() {
        let v: Value = serde_json::from_str(
            r#"{"node_id":"ab","monotonic_seq":1,"wall_ms":5,"type":"Brand","x":{"y":1}}"#,
        )
        .unwrap();
        let r = row(table("events"), v.as_object().unwrap(), &Context::default());
        assert_eq!(r["type"], "Brand");
        let extra: Value = serde_json::from_str(r["extra_json"].as_str().unwrap()).unwrap();
        assert_eq!(extra, serde_json::json!({"/x": {"y": 1}}));
    }
}
