//! Reading a large JSON file of the simulator's directory without building its whole value: an
//! events file's envelope and then its `records` one at a time, and the length of a top-level array.
//!
//! Written on serde's own streaming deserializer (a `DeserializeSeed` per level) rather than a
//! streaming-JSON crate: serde_json already reads the text, and this keeps its exact errors.
//!
//! An events file is read in two passes over its bytes (which the read cap bounds): the first
//! checks that the whole file is JSON, that it is an object, and which `records` key is the one a
//! full parse keeps (the last), keeping the other envelope keys; the second hands each record of
//! that array to the caller as it is parsed. So a file that is not JSON is refused before any of
//! its records is used, as a full parse would refuse it, and memory holds one record at a time.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::Object;

/// What the first pass over an events file found.
pub(crate) enum Envelope {
    /// A JSON object: its keys other than `records` (the last value of each), and whether its
    /// (last) `records` key holds an array.
    Object {
        keys: Object,
        records: Option<RecordsAt>,
    },
    /// Valid JSON that is not an object: what it is instead, as a short description.
    NotObject(String),
}

/// Which `records` key of the envelope holds the array the records are read from.
pub(crate) struct RecordsAt {
    /// The number of `records` keys before it.
    occurrence: usize,
}

/// The first pass: checks `bytes` is one JSON value, and describes it.
pub(crate) fn envelope(bytes: &[u8]) -> Result<Envelope, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let found = EnvelopePass.deserialize(&mut de)?;
    de.end()?;
    Ok(found)
}

/// The second pass: hands each record of the `records` array `at` names to `each`, with its
/// index. Fails only where the first pass did not (the bytes changed), with the parse error.
pub(crate) fn records(
    bytes: &[u8],
    at: &RecordsAt,
    each: &mut dyn FnMut(usize, Value),
) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    RecordsPass {
        occurrence: at.occurrence,
        each,
    }
    .deserialize(&mut de)?;
    de.end()
}

/// The number of entries of `bytes` when it is one JSON array, without building them.
pub(crate) fn array_len(bytes: &[u8]) -> Option<usize> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let n = CountPass.deserialize(&mut de).ok()?;
    de.end().ok()?;
    n
}

struct EnvelopePass;

impl<'de> DeserializeSeed<'de> for EnvelopePass {
    type Value = Envelope;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Envelope, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EnvelopePass {
    type Value = Envelope;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
        let mut keys = Object::new();
        let mut records = None;
        let mut seen = 0;
        while let Some(key) = map.next_key::<String>()? {
            if key == "records" {
                let is_array = map.next_value_seed(IsArray)?;
                records = is_array.then_some(RecordsAt { occurrence: seen });
                seen += 1;
            } else {
                let value = map.next_value::<Value>()?;
                keys.insert(key, value);
            }
        }
        Ok(Envelope::Object { keys, records })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Envelope, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Envelope::NotObject("an array".to_owned()))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Envelope, E> {
        Ok(Envelope::NotObject(v.to_string()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Envelope, E> {
        Ok(Envelope::NotObject(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Envelope, E> {
        Ok(Envelope::NotObject(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Envelope, E> {
        Ok(Envelope::NotObject(Value::from(v).to_string()))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Envelope, E> {
        Ok(Envelope::NotObject(crate::located::quote(&Value::from(v))))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Envelope, E> {
        Ok(Envelope::NotObject("null".to_owned()))
    }
}

/// Whether a value is an array, skipping it.
struct IsArray;

impl<'de> DeserializeSeed<'de> for IsArray {
    type Value = bool;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for IsArray {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(true)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
}

struct RecordsPass<'f> {
    occurrence: usize,
    each: &'f mut dyn FnMut(usize, Value),
}

impl<'de> DeserializeSeed<'de> for RecordsPass<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RecordsPass<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an events file's envelope object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = 0;
        let each = self.each;
        while let Some(key) = map.next_key::<String>()? {
            if key == "records" && seen == self.occurrence {
                map.next_value_seed(EachRecord { each: &mut *each })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
            if key == "records" {
                seen += 1;
            }
        }
        Ok(())
    }
}

struct EachRecord<'f> {
    each: &'f mut dyn FnMut(usize, Value),
}

impl<'de> DeserializeSeed<'de> for EachRecord<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EachRecord<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the `records` array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        while let Some(record) = seq.next_element::<Value>()? {
            (self.each)(index, record);
            index += 1;
        }
        Ok(())
    }
}

struct CountPass;

impl<'de> DeserializeSeed<'de> for CountPass {
    type Value = Option<usize>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CountPass {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<usize>, A::Error> {
        let mut n = 0;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            n += 1;
        }
        Ok(Some(n))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<usize>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<usize>, E> {
        Ok(None)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Option<usize>, E> {
        Ok(None)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Option<usize>, E> {
        Ok(None)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Option<usize>, E> {
        Ok(None)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Option<usize>, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<usize>, E> {
        Ok(None)
    }
}
