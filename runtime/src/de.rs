//! Streaming deserialization for generated structs and unions.
//!
//! Every generated object type has a *decoder* that is offered the object's keys one at a time.
//! Structs match their own keys and keep the rest in [`Extra`]; an internal union buffers the keys it
//! sees before its tag as raw JSON text, then replays them into the variant's decoder and streams the
//! rest, so the tag can sit anywhere in the object (the collector rewrites records with sorted keys)
//! without parsing anything into `serde_json::Value` first.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, Visitor};

use crate::{Extra, UnknownVariant};

/// Incremental reader of one JSON object's keys.
pub trait Decoder: Default {
    /// The type the decoder produces.
    type Output;
    /// The schema type name, used in error messages.
    const NAME: &'static str;
    /// Whether this decoder takes `key`. Structs and internal unions take every key; a flattened
    /// adjacent union takes only its tag and content keys.
    fn claims(&self, key: &str) -> bool;
    /// Reads the value of `key` from `value`.
    fn accept<'de, D: Deserializer<'de>>(&mut self, key: &str, value: D) -> Result<(), D::Error>;
    /// Checks required keys and produces the value.
    fn finish<E: de::Error>(self) -> Result<Self::Output, E>;
}

/// A map visitor driving a [`Decoder`]; the `Deserialize` impl of every generated object type.
pub struct DecoderVisitor<B>(PhantomData<B>);

impl<B> DecoderVisitor<B> {
    /// A visitor for one object.
    pub fn new() -> Self {
        Self(PhantomData)
    }
}

impl<B> Default for DecoderVisitor<B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'de, B: Decoder> Visitor<'de> for DecoderVisitor<B> {
    type Value = B::Output;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a JSON object (`{}`)", B::NAME)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut decoder = B::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            if !decoder.claims(&key) {
                return Err(de::Error::custom(format_args!(
                    "unknown field `{key}` in `{}`",
                    B::NAME
                )));
            }
            map.next_value_seed(FieldSeed {
                decoder: &mut decoder,
                key: &key,
            })?;
        }
        decoder.finish()
    }
}

/// Reads an object key, borrowing it from the input when the input allows.
pub struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(CowStrVisitor)
    }
}

struct CowStrVisitor;

impl<'de> Visitor<'de> for CowStrVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// Reads a string value, borrowing it when possible (string enums and union tags).
pub fn str_enum<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Cow<'de, str>, D::Error> {
    deserializer.deserialize_str(CowStrVisitor)
}

/// Hands one value to a decoder.
pub struct FieldSeed<'a, B> {
    /// The decoder receiving the value.
    pub decoder: &'a mut B,
    /// The key the value belongs to.
    pub key: &'a str,
}

impl<'de, B: Decoder> DeserializeSeed<'de> for FieldSeed<'_, B> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.decoder.accept(self.key, deserializer)
    }
}

/// Stores a known field, rejecting a second occurrence of the key.
pub fn field_set<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    slot: &mut Option<T>,
    name: &'static str,
    deserializer: D,
) -> Result<(), D::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(name));
    }
    *slot = Some(T::deserialize(deserializer)?);
    Ok(())
}

/// Unwraps a required field, or reports it missing.
pub fn finish_required<T, E: de::Error>(slot: Option<T>, name: &'static str) -> Result<T, E> {
    slot.ok_or_else(|| de::Error::missing_field(name))
}

/// Keys an internal union saw before its tag, kept as raw JSON text in one buffer.
///
/// Each entry is `(key start, value start, value end)` in `text`; one buffer keeps a record that
/// arrives with sorted keys (the collector's files) to a couple of allocations.
#[derive(Default)]
pub struct Pending {
    text: String,
    entries: Vec<(usize, usize, usize)>,
}

impl Pending {
    /// Buffers one value. A duplicate key is caught when the entries are replayed into the decoder.
    pub fn push<'de, D: Deserializer<'de>>(&mut self, key: &str, value: D) -> Result<(), D::Error> {
        if self.text.capacity() == 0 {
            self.text.reserve(512);
            self.entries.reserve(8);
        }
        let key_start = self.text.len();
        self.text.push_str(key);
        let value_start = self.text.len();
        value.deserialize_newtype_struct(RAW_VALUE_TOKEN, Capture(&mut self.text))?;
        self.entries.push((key_start, value_start, self.text.len()));
        Ok(())
    }
}

/// Appends a value's raw JSON text to a buffer: serde_json hands it over through its raw-value
/// protocol; any other deserializer's value is read and written out as compact JSON.
struct Capture<'a>(&'a mut String);

impl<'de> Visitor<'de> for Capture<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        if map.next_key::<de::IgnoredAny>()?.is_none() {
            return Err(de::Error::custom("empty raw value"));
        }
        let raw = map.next_value_seed(KeySeed)?;
        self.0.push_str(&raw);
        Ok(())
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        self.0.push_str(&v.to_string());
        Ok(())
    }
}

/// Replays buffered keys into a decoder whose variant is now known.
pub fn pending_replay<B: Decoder, E: de::Error>(
    pending: Pending,
    decoder: &mut B,
) -> Result<(), E> {
    let text = &pending.text;
    for &(k, v, end) in &pending.entries {
        let key = &text[k..v];
        decoder
            .accept(key, RawText(&text[v..end]))
            .map_err(|e| E::custom(format_args!("{} (in `{key}`)", without_position(&e))))?;
    }
    Ok(())
}

/// serde_json's name for its raw-value protocol: a deserializer asked for a newtype struct of this
/// name hands the visitor the value's raw JSON text.
pub const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// serde_json's message without its `at line L column C` suffix, for errors inside a fragment whose
/// position means nothing to the reader of the whole record.
pub fn without_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rsplit_once(" at line ") {
        Some((msg, _)) => msg.to_owned(),
        None => s,
    }
}

/// A deserializer over one buffered raw JSON value. It answers the raw-value protocol with the text
/// itself (so a node id is not scanned twice) and parses anything else with serde_json.
struct RawText<'a>(&'a str);

type StrDeserializer<'a> = serde_json::Deserializer<serde_json::de::StrRead<'a>>;

fn parse_raw<'a, T>(
    raw: &'a str,
    f: impl FnOnce(&mut StrDeserializer<'a>) -> Result<T, serde_json::Error>,
) -> Result<T, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(raw);
    let v = f(&mut de)?;
    de.end()?;
    Ok(v)
}

macro_rules! forward_raw {
    ($($method:ident),*) => {$(
        fn $method<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            parse_raw(self.0, |de| de.$method(visitor))
        }
    )*};
}

impl<'a> Deserializer<'a> for RawText<'a> {
    type Error = serde_json::Error;

    forward_raw!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
        deserialize_ignored_any
    );

    fn deserialize_unit_struct<V: Visitor<'a>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        parse_raw(self.0, |de| de.deserialize_unit_struct(name, visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        if name == RAW_VALUE_TOKEN {
            return visitor.visit_map(RawEntry(Some(self.0)));
        }
        parse_raw(self.0, |de| de.deserialize_newtype_struct(name, visitor))
    }

    fn deserialize_tuple<V: Visitor<'a>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        parse_raw(self.0, |de| de.deserialize_tuple(len, visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'a>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        parse_raw(self.0, |de| de.deserialize_tuple_struct(name, len, visitor))
    }

    fn deserialize_struct<V: Visitor<'a>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        parse_raw(self.0, |de| de.deserialize_struct(name, fields, visitor))
    }

    fn deserialize_enum<V: Visitor<'a>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        parse_raw(self.0, |de| de.deserialize_enum(name, variants, visitor))
    }
}

/// The single entry of serde_json's raw-value protocol: the token, then the raw text.
struct RawEntry<'a>(Option<&'a str>);

impl<'a> MapAccess<'a> for RawEntry<'a> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'a>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        if self.0.is_none() {
            return Ok(None);
        }
        seed.deserialize(de::value::BorrowedStrDeserializer::new(RAW_VALUE_TOKEN))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'a>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        let raw = self.0.take().unwrap_or("null");
        seed.deserialize(de::value::BorrowedStrDeserializer::new(raw))
    }
}

/// Reads the tag value of an internal union.
pub fn internal_tag<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Cow<'de, str>, D::Error> {
    str_enum(deserializer)
}

/// Decoder of [`UnknownVariant`]: keeps every key it is offered.
#[derive(Default)]
pub struct UnknownVariantDecoder {
    tag: String,
    fields: Extra,
}

impl UnknownVariantDecoder {
    /// Starts an unknown variant with its tag value.
    pub fn new(tag: String) -> Self {
        Self {
            tag,
            fields: Extra::default(),
        }
    }
}

impl Decoder for UnknownVariantDecoder {
    type Output = UnknownVariant;
    const NAME: &'static str = "unknown variant";

    fn claims(&self, _key: &str) -> bool {
        true
    }

    fn accept<'de, D: Deserializer<'de>>(&mut self, key: &str, value: D) -> Result<(), D::Error> {
        self.fields.accept(key, value)
    }

    fn finish<E: de::Error>(self) -> Result<UnknownVariant, E> {
        Ok(UnknownVariant {
            tag: self.tag,
            fields: self.fields,
        })
    }
}
