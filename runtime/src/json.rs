//! Opaque JSON values and the map of unknown fields every generated struct keeps.

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};

use serde::Deserialize;
use serde::de::{self, Deserializer};
use serde::{Serialize, Serializer};
use serde_json::Value;

/// Any JSON value, for schema properties declared `x-json` (free-form payloads).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Json(pub Value);

impl Deref for Json {
    type Target = Value;
    fn deref(&self) -> &Value {
        &self.0
    }
}

impl From<Value> for Json {
    fn from(v: Value) -> Self {
        Json(v)
    }
}

/// Keys of an object that the reader's schema version does not know, in key order.
///
/// They are read as JSON values and written back after the known keys, so a record that passes
/// through an older reader loses nothing.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Extra(pub BTreeMap<String, Value>);

impl Extra {
    /// Reads the value of an unknown key, rejecting a duplicate key.
    pub fn accept<'de, D: Deserializer<'de>>(
        &mut self,
        key: &str,
        value: D,
    ) -> Result<(), D::Error> {
        if self.0.contains_key(key) {
            return Err(de::Error::custom(format_args!("duplicate field `{key}`")));
        }
        let v = Value::deserialize(value)?;
        self.0.insert(key.to_owned(), v);
        UNKNOWN_KEYS_READ.with(|n| n.set(n.get().wrapping_add(1)));
        Ok(())
    }

    /// Writes every entry into a map being serialized.
    pub fn serialize_into<M: serde::ser::SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        Ok(())
    }
}

impl Deref for Extra {
    type Target = BTreeMap<String, Value>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Extra {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Serialize for Extra {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Extra {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        BTreeMap::deserialize(deserializer).map(Extra)
    }
}

thread_local! {
    static UNKNOWN_KEYS_READ: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many keys [`Extra`] has kept on this thread so far. A reader that compares it before and
/// after decoding a record knows, at no cost, whether the record held a key its types keep as
/// unknown, and walks the record's JSON for where only then.
pub fn unknown_keys_read() -> u64 {
    UNKNOWN_KEYS_READ.with(|n| n.get())
}
