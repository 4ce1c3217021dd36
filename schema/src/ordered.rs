//! An order-preserving JSON tree, so generated fields follow the schema's property order.

use std::collections::HashSet;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value whose objects keep their key order.
#[derive(Debug, Clone, PartialEq)]
pub enum J {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// Any number.
    Num(serde_json::Number),
    /// A string.
    Str(String),
    /// An array.
    Arr(Vec<J>),
    /// An object, in document order.
    Obj(Vec<(String, J)>),
}

impl J {
    /// The value of `key` when `self` is an object that has it.
    pub fn get(&self, key: &str) -> Option<&J> {
        match self {
            J::Obj(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string, when `self` is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            J::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The entries, when `self` is an object.
    pub fn as_obj(&self) -> Option<&[(String, J)]> {
        match self {
            J::Obj(entries) => Some(entries),
            _ => None,
        }
    }

    /// The items, when `self` is an array.
    pub fn as_arr(&self) -> Option<&[J]> {
        match self {
            J::Arr(items) => Some(items),
            _ => None,
        }
    }

    /// The same value as a `serde_json::Value` (object key order is then the map's).
    pub fn to_value(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            J::Null => Value::Null,
            J::Bool(b) => Value::Bool(*b),
            J::Num(n) => Value::Number(n.clone()),
            J::Str(s) => Value::String(s.clone()),
            J::Arr(items) => Value::Array(items.iter().map(J::to_value).collect()),
            J::Obj(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
        }
    }

    /// The integer, when `self` is one.
    pub fn as_i128(&self) -> Option<i128> {
        match self {
            J::Num(n) => n
                .as_u64()
                .map(i128::from)
                .or_else(|| n.as_i64().map(i128::from)),
            _ => None,
        }
    }
}

impl J {
    /// A value from a `serde_json::Value` (its objects in that map's order).
    pub fn from_value(v: &serde_json::Value) -> J {
        use serde_json::Value;
        match v {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Number(n) => J::Num(n.clone()),
            Value::String(s) => J::Str(s.clone()),
            Value::Array(items) => J::Arr(items.iter().map(J::from_value).collect()),
            Value::Object(map) => J::Obj(
                map.iter()
                    .map(|(k, v)| (k.clone(), J::from_value(v)))
                    .collect(),
            ),
        }
    }

    /// The value of `key`, to change it, when `self` is an object that has it.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut J> {
        match self {
            J::Obj(entries) => entries.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value at a `/`-separated path of object keys and array indexes.
    pub fn at_mut(&mut self, path: &str) -> Option<&mut J> {
        let mut here = self;
        for part in path.split('/').filter(|p| !p.is_empty()) {
            here = match here {
                J::Arr(items) => items.get_mut(part.parse::<usize>().ok()?)?,
                obj => obj.get_mut(part)?,
            };
        }
        Some(here)
    }

    /// Sets `key` of an object: in place when it exists, appended otherwise.
    pub fn insert(&mut self, key: &str, value: J) {
        if let J::Obj(entries) = self {
            match entries.iter_mut().find(|(k, _)| k == key) {
                Some((_, v)) => *v = value,
                None => entries.push((key.to_owned(), value)),
            }
        }
    }

    /// Removes `key` of an object, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<J> {
        match self {
            J::Obj(entries) => {
                let i = entries.iter().position(|(k, _)| k == key)?;
                Some(entries.remove(i).1)
            }
            _ => None,
        }
    }

    /// The items, to change them, when `self` is an array.
    pub fn as_arr_mut(&mut self) -> Option<&mut Vec<J>> {
        match self {
            J::Arr(items) => Some(items),
            _ => None,
        }
    }
}

impl serde::Serialize for J {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self {
            J::Null => serializer.serialize_unit(),
            J::Bool(b) => serializer.serialize_bool(*b),
            J::Num(n) => n.serialize(serializer),
            J::Str(s) => serializer.serialize_str(s),
            J::Arr(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for i in items {
                    seq.serialize_element(i)?;
                }
                seq.end()
            }
            J::Obj(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for J {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<J, D::Error> {
        deserializer.deserialize_any(JVisitor)
    }
}

struct JVisitor;

impl<'de> Visitor<'de> for JVisitor {
    type Value = J;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_unit<E>(self) -> Result<J, E> {
        Ok(J::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<J, E> {
        Ok(J::Bool(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<J, E> {
        Ok(J::Num(v.into()))
    }
    fn visit_i64<E>(self, v: i64) -> Result<J, E> {
        Ok(J::Num(v.into()))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<J, E> {
        serde_json::Number::from_f64(v)
            .map(J::Num)
            .ok_or_else(|| E::custom("non-finite number"))
    }
    fn visit_str<E>(self, v: &str) -> Result<J, E> {
        Ok(J::Str(v.to_owned()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<J, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(J::Arr(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<J, A::Error> {
        // Duplicates are found with a set of the keys seen so far: linear in the object's size.
        let mut entries: Vec<(String, J)> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        while let Some((k, v)) = map.next_entry::<String, J>()? {
            if !seen.insert(k.clone()) {
                return Err(serde::de::Error::custom(format_args!(
                    "duplicate key `{}`",
                    crate::problem::printable(&k)
                )));
            }
            entries.push((k, v));
        }
        Ok(J::Obj(entries))
    }
}
