//! The macros the generated code expands: the serde plumbing of objects, internal unions and string
//! enums, written once here instead of once per type.
//!
//! The generator still writes every type, field, variant and doc comment itself; a macro call only
//! adds the decoder, `MapFields`, `Serialize` and `Deserialize` (and for enums the value table and
//! `Arbitrary`). Presence is spelled with the words `req`, `null`, `omit`, `dflt` and `skip`, the
//! profile's five presences (`schemas/README.md`).

/// `Serialize` through [`crate::MapFields`] and `Deserialize` through a decoder, for an object type.
#[doc(hidden)]
#[macro_export]
macro_rules! __map_serde {
    ($name:ident, $decoder:ident) => {
        impl $crate::private::serde::Serialize for $name {
            fn serialize<S: $crate::private::serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::core::result::Result<S::Ok, S::Error> {
                $crate::private::serialize_map(self, serializer)
            }
        }

        impl<'de> $crate::private::serde::Deserialize<'de> for $name {
            fn deserialize<D: $crate::private::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::core::result::Result<Self, D::Error> {
                deserializer.deserialize_map($crate::DecoderVisitor::<$decoder>::new())
            }
        }
    };
}

/// How a decoded field slot becomes the struct's field, by presence.
#[doc(hidden)]
#[macro_export]
macro_rules! __finish {
    (req, $slot:expr, $key:literal) => {
        $crate::private::finish_required($slot, $key)?
    };
    (null, $slot:expr, $key:literal) => {
        $slot.flatten()
    };
    (omit, $slot:expr, $key:literal) => {
        $slot.flatten()
    };
    (dflt, $slot:expr, $key:literal) => {
        $slot.unwrap_or_default()
    };
    (skip, $slot:expr, $key:literal) => {
        $slot.unwrap_or_default()
    };
}

/// How a field is written, by presence: always, only when present, or only when not the default.
#[doc(hidden)]
#[macro_export]
macro_rules! __write {
    (req, $map:ident, $key:literal, $value:expr) => {
        $map.serialize_entry($key, $value)?
    };
    (null, $map:ident, $key:literal, $value:expr) => {
        $map.serialize_entry($key, $value)?
    };
    (dflt, $map:ident, $key:literal, $value:expr) => {
        $map.serialize_entry($key, $value)?
    };
    (omit, $map:ident, $key:literal, $value:expr) => {
        if let ::core::option::Option::Some(v) = $value {
            $map.serialize_entry($key, v)?
        }
    };
    (skip, $map:ident, $key:literal, $value:expr) => {
        if !$crate::is_default($value) {
            $map.serialize_entry($key, $value)?
        }
    };
}

/// Where a key no field names goes: into a flattened union (all keys for an internal one, its tag
/// and content keys for an adjacent one) and otherwise into the unknown-key map.
#[doc(hidden)]
#[macro_export]
macro_rules! __rest {
    ($this:ident, $key:ident, $value:ident; $flat:ident; $extra:ident) => {
        if $crate::Decoder::claims(&$this.$flat, $key) {
            $crate::Decoder::accept(&mut $this.$flat, $key, $value)
        } else {
            $this.$extra.accept($key, $value)
        }
    };
    ($this:ident, $key:ident, $value:ident; $flat:ident;) => {
        $crate::Decoder::accept(&mut $this.$flat, $key, $value)
    };
    ($this:ident, $key:ident, $value:ident; ; $extra:ident) => {
        $this.$extra.accept($key, $value)
    };
}

/// The serde plumbing of a generated struct: its decoder, `MapFields`, `Serialize`, `Deserialize`.
///
/// ```text
/// object!(DialStarted, DialStartedDecoder, "DialStarted" {
///     peer: NodeId = "peer" req,
///     timeout_ms: u64 = "timeout_ms" req,
/// } flat {} extra { extra });
/// ```
///
/// `flat { field: Decoder }` names a union whose keys sit at the struct's level; `extra { extra }`
/// keeps unknown keys (every struct but one that absorbs an internal union, which keeps them).
#[doc(hidden)]
#[macro_export]
macro_rules! object {
    (
        $name:ident, $decoder:ident, $type_name:literal {
            $( $field:ident : $ty:ty = $key:literal $presence:ident ),* $(,)?
        }
        flat { $( $flat:ident : $flat_decoder:ident )? }
        extra { $( $extra:ident )? }
    ) => {
        #[doc(hidden)]
        #[derive(Default)]
        pub struct $decoder {
            $( $field: ::core::option::Option<$ty>, )*
            $( $flat: $flat_decoder, )?
            $( $extra: $crate::Extra, )?
        }

        impl $crate::Decoder for $decoder {
            type Output = $name;
            const NAME: &'static str = $type_name;
            fn claims(&self, _key: &str) -> bool {
                true
            }
            fn accept<'de, D: $crate::private::serde::Deserializer<'de>>(
                &mut self,
                key: &str,
                value: D,
            ) -> ::core::result::Result<(), D::Error> {
                match key {
                    $( $key => $crate::private::field_set(&mut self.$field, $key, value), )*
                    _ => $crate::__rest!(self, key, value; $( $flat )?; $( $extra )?),
                }
            }
            fn finish<E: $crate::private::serde::de::Error>(
                self,
            ) -> ::core::result::Result<$name, E> {
                ::core::result::Result::Ok($name {
                    $( $field: $crate::__finish!($presence, self.$field, $key), )*
                    $( $flat: $crate::Decoder::finish(self.$flat)?, )?
                    $( $extra: self.$extra, )?
                })
            }
        }

        impl $crate::MapFields for $name {
            fn serialize_fields<M: $crate::private::serde::ser::SerializeMap>(
                &self,
                map: &mut M,
            ) -> ::core::result::Result<(), M::Error> {
                $( $crate::__write!($presence, map, $key, &self.$field); )*
                $( $crate::MapFields::serialize_fields(&self.$flat, map)?; )?
                $( self.$extra.serialize_into(map)?; )?
                ::core::result::Result::Ok(())
            }
        }

        $crate::__map_serde!($name, $decoder);
    };
}

/// An unknown tag of an internal union: the catch-all's decoder, or an error for a closed union.
#[doc(hidden)]
#[macro_export]
macro_rules! __unknown_tag {
    ($decoder:ident, $tag:ident, $tags:expr; $other:ident) => {
        $decoder::$other($crate::private::UnknownVariantDecoder::new($tag.to_owned()))
    };
    ($decoder:ident, $tag:ident, $tags:expr;) => {
        return ::core::result::Result::Err($crate::private::serde::de::Error::unknown_variant(
            $tag, $tags,
        ))
    };
}

/// The serde plumbing of an internal union (`"type": "DialStarted"` beside the variant's keys): its
/// tag table, decoder, `MapFields`, `Serialize` and `Deserialize`. `other { Other }` makes it open:
/// an unknown tag keeps the whole object as an [`crate::UnknownVariant`].
#[doc(hidden)]
#[macro_export]
macro_rules! internal_union {
    (
        $name:ident, $decoder:ident, $type_name:literal, tag $tag:literal {
            $( $variant:ident ( $variant_decoder:ident ) = $value:literal ),* $(,)?
        }
        other { $( $other:ident )? }
    ) => {
        impl $name {
            /// The tag key.
            pub const TAG: &'static str = $tag;
            /// The tag values this version of the contract knows.
            pub const TAGS: &'static [&'static str] = &[$( $value ),*];

            /// The tag value of this variant as written on the wire.
            pub fn tag(&self) -> &str {
                match self {
                    $( $name::$variant(_) => $value, )*
                    $( $name::$other(v) => &v.tag, )?
                }
            }
        }

        #[doc(hidden)]
        pub enum $decoder {
            Pending($crate::Pending),
            $( $variant($variant_decoder), )*
            $( $other($crate::private::UnknownVariantDecoder), )?
        }

        impl ::core::default::Default for $decoder {
            fn default() -> Self {
                Self::Pending($crate::Pending::default())
            }
        }

        impl $crate::Decoder for $decoder {
            type Output = $name;
            const NAME: &'static str = $type_name;
            fn claims(&self, _key: &str) -> bool {
                true
            }
            fn accept<'de, D: $crate::private::serde::Deserializer<'de>>(
                &mut self,
                key: &str,
                value: D,
            ) -> ::core::result::Result<(), D::Error> {
                match self {
                    Self::Pending(pending) => {
                        if key != $tag {
                            return pending.push(key, value);
                        }
                        let tag = $crate::private::internal_tag(value)?;
                        let mut next = match &*tag {
                            $( $value => Self::$variant(::core::default::Default::default()), )*
                            other => $crate::__unknown_tag!($decoder, other, $name::TAGS; $( $other )?),
                        };
                        $crate::private::pending_replay(::core::mem::take(pending), &mut next)?;
                        *self = next;
                        ::core::result::Result::Ok(())
                    }
                    _ if key == $tag => ::core::result::Result::Err(
                        $crate::private::serde::de::Error::duplicate_field($tag),
                    ),
                    $( Self::$variant(d) => $crate::Decoder::accept(d, key, value), )*
                    $( Self::$other(d) => $crate::Decoder::accept(d, key, value), )?
                }
            }
            fn finish<E: $crate::private::serde::de::Error>(
                self,
            ) -> ::core::result::Result<$name, E> {
                ::core::result::Result::Ok(match self {
                    Self::Pending(_) => return ::core::result::Result::Err(E::missing_field($tag)),
                    $( Self::$variant(d) => $name::$variant($crate::Decoder::finish(d)?), )*
                    $( Self::$other(d) => $name::$other($crate::Decoder::finish(d)?), )?
                })
            }
        }

        impl $crate::MapFields for $name {
            fn serialize_fields<M: $crate::private::serde::ser::SerializeMap>(
                &self,
                map: &mut M,
            ) -> ::core::result::Result<(), M::Error> {
                match self {
                    $( $name::$variant(v) => {
                        map.serialize_entry($tag, $value)?;
                        $crate::MapFields::serialize_fields(v, map)?;
                    } )*
                    $( $name::$other(v) => {
                        map.serialize_entry($tag, &v.tag)?;
                        v.fields.serialize_into(map)?;
                    } )?
                }
                ::core::result::Result::Ok(())
            }
        }

        $crate::__map_serde!($name, $decoder);
    };
}

/// An unknown value of a string enum: kept when the enum is open, an error when it is closed.
#[doc(hidden)]
#[macro_export]
macro_rules! __unknown_value {
    ($name:ident, $value:ident; $other:ident) => {
        $name::$other($value.into_owned())
    };
    ($name:ident, $value:ident;) => {
        return ::core::result::Result::Err($crate::private::serde::de::Error::unknown_variant(
            &*$value,
            $name::VALUES,
        ))
    };
}

/// What `from_wire` makes of a value the enum does not know: kept by an open enum, `None` from a
/// closed one.
#[doc(hidden)]
#[macro_export]
macro_rules! __unknown_wire_value {
    ($name:ident, $value:ident; $other:ident) => {
        $name::$other($value.into())
    };
    ($name:ident, $value:ident;) => {
        return ::core::option::Option::None
    };
}

/// An arbitrary value past the known ones: a new unknown value for an open enum.
#[doc(hidden)]
#[macro_export]
macro_rules! __arbitrary_other {
    ($name:ident, $u:ident; $other:ident) => {
        ::core::result::Result::Ok($name::$other($crate::arb::other_string($u, $name::VALUES)?))
    };
    ($name:ident, $u:ident;) => {
        ::core::unreachable!("OK because the index is below the number of values")
    };
}

/// The table and serde impls of a string enum: `VALUES`, `as_str`, `AsRef<str>`, `Display`,
/// `Serialize`, `Deserialize` and (with the calling crate's `arbitrary` feature) `Arbitrary`.
/// `other { Other }` makes it open: an unknown value is kept as `Other(String)`.
#[doc(hidden)]
#[macro_export]
macro_rules! str_enum {
    (
        $name:ident {
            $( $variant:ident = $value:literal ),* $(,)?
        }
        other { $( $other:ident )? }
    ) => {
        impl $name {
            /// The values this version of the contract knows.
            pub const VALUES: &'static [&'static str] = &[$( $value ),*];

            /// The value as written on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $value, )*
                    $( $name::$other(s) => s, )?
                }
            }

            /// The value a wire string names, as a reader reads it: a known value, any other
            /// string kept as it is by an open enum; `None` when a closed enum does not know it.
            pub fn from_wire(s: &str) -> ::core::option::Option<Self> {
                ::core::option::Option::Some(match s {
                    $( $value => $name::$variant, )*
                    _ => $crate::__unknown_wire_value!($name, s; $( $other )?),
                })
            }
        }

        impl ::core::convert::AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl $crate::private::serde::Serialize for $name {
            fn serialize<S: $crate::private::serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::core::result::Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> $crate::private::serde::Deserialize<'de> for $name {
            fn deserialize<D: $crate::private::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::core::result::Result<Self, D::Error> {
                let value = $crate::private::str_enum(deserializer)?;
                ::core::result::Result::Ok(match &*value {
                    $( $value => $name::$variant, )*
                    _ => $crate::__unknown_value!($name, value; $( $other )?),
                })
            }
        }

        #[cfg(feature = "arbitrary")]
        impl<'a> ::arbitrary::Arbitrary<'a> for $name {
            fn arbitrary(u: &mut ::arbitrary::Unstructured<'a>) -> ::arbitrary::Result<Self> {
                const KNOWN: &[$name] = &[$( $name::$variant ),*];
                let open = 0 $( + { let _ = stringify!($other); 1 } )?;
                let index = u.choose_index(KNOWN.len() + open)?;
                match KNOWN.get(index) {
                    ::core::option::Option::Some(v) => ::core::result::Result::Ok(v.clone()),
                    ::core::option::Option::None => $crate::__arbitrary_other!($name, u; $( $other )?),
                }
            }
        }
    };
}
