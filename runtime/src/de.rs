//! Streaming deserialization for generated structs and unions.
//!
//! Every generated object type has a *builder* that is offered the object's keys one at a time.
//! Structs match their own keys and keep the rest in [`Extra`]; an internal union buffers the keys it
//! sees before its tag as raw JSON text, then replays them into the variant's builder and streams the
//! rest, so the tag can sit anywhere in the object (the collector rewrites records with sorted keys)
//! without parsing anything into `serde_json::Value` first.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::{Extra, UnknownVariant};

/// Incremental reader of one JSON object's keys.
pub trait Builder: Default {
    /// The type the builder produces.
    type Output;
    /// The schema type name, used in error messages.
    const NAME: &'static str;
    /// Whether this builder takes `key`. Structs and internal unions take every key; a flattened
    /// adjacent union takes only its tag and content keys.
    fn claims(&self, key: &str) -> bool;
    /// Reads the value of `key` from `value`.
    fn accept<'de, D: Deserializer<'de>>(&mut self, key: &str, value: D) -> Result<(), D::Error>;
    /// Checks required keys and produces the value.
    fn finish<E: de::Error>(self) -> Result<Self::Output, E>;
}

/// A map visitor driving a [`Builder`]; the `Deserialize` impl of every generated object type.
pub struct BuilderVisitor<B>(PhantomData<B>);

impl<B> BuilderVisitor<B> {
    /// A visitor for one object.
    pub fn new() -> Self {
        Self(PhantomData)
    }
}

impl<B> Default for BuilderVisitor<B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'de, B: Builder> Visitor<'de> for BuilderVisitor<B> {
    type Value = B::Output;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a JSON object (`{}`)", B::NAME)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut builder = B::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            if !builder.claims(&key) {
                return Err(de::Error::custom(format_args!(
                    "unknown field `{key}` in `{}`",
                    B::NAME
                )));
            }
            map.next_value_seed(FieldSeed {
                builder: &mut builder,
                key: &key,
            })?;
        }
        builder.finish()
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

/// Hands one value to a builder.
pub struct FieldSeed<'a, B> {
    /// The builder receiving the value.
    pub builder: &'a mut B,
    /// The key the value belongs to.
    pub key: &'a str,
}

impl<'de, B: Builder> DeserializeSeed<'de> for FieldSeed<'_, B> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.builder.accept(self.key, deserializer)
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

/// Keys an internal union saw before its tag, kept as raw JSON text.
#[derive(Default)]
pub struct Pending(Vec<(String, Box<RawValue>)>);

impl Pending {
    /// Buffers one value.
    pub fn push<'de, D: Deserializer<'de>>(&mut self, key: &str, value: D) -> Result<(), D::Error> {
        if self.0.iter().any(|(k, _)| k == key) {
            return Err(de::Error::custom(format_args!("duplicate field `{key}`")));
        }
        let raw = Box::<RawValue>::deserialize(value)?;
        self.0.push((key.to_owned(), raw));
        Ok(())
    }
}

/// Replays buffered keys into a builder whose variant is now known.
pub fn pending_replay<B: Builder, E: de::Error>(
    pending: Pending,
    builder: &mut B,
) -> Result<(), E> {
    for (key, raw) in pending.0 {
        let mut de = serde_json::Deserializer::from_str(raw.get());
        builder
            .accept(&key, &mut de)
            .map_err(|e| E::custom(format_args!("{e} (in `{key}`)")))?;
    }
    Ok(())
}

/// Reads the tag value of an internal union.
pub fn internal_tag<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Cow<'de, str>, D::Error> {
    str_enum(deserializer)
}

/// Returns true when `key` is the tag or content key of a flattened adjacent union.
pub fn flat_union_key(key: &str, tag: &str, content: &str) -> bool {
    key == tag || key == content
}

/// Builder of [`UnknownVariant`]: keeps every key it is offered.
#[derive(Default)]
pub struct UnknownVariantBuilder {
    tag: String,
    fields: Extra,
}

impl UnknownVariantBuilder {
    /// Starts an unknown variant with its tag value.
    pub fn new(tag: String) -> Self {
        Self {
            tag,
            fields: Extra::default(),
        }
    }
}

impl Builder for UnknownVariantBuilder {
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
