//! The contract's shape as data: every type, field and variant of a contract version, as the
//! generator read them from the schemas.
//!
//! Tools that walk records generically (which keys a record has that the contract does not know,
//! which fields of the contract a bundle reported and which it left absent) read this table instead
//! of re-reading the JSON Schemas, so they follow the same rules as the generated types.

/// How absence of a field looks on the wire (the profile's `x-presence`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Presence {
    /// Always present.
    Required,
    /// Always written; `null` when absent.
    Nullable,
    /// Left out when absent.
    Omittable,
    /// Always written; a missing key reads as the type's default.
    Default,
    /// Left out when equal to the default; a missing key reads as the default.
    SkipDefault,
}

impl Presence {
    /// The profile's spelling (`required`, `nullable`, `omittable`, `default`, `skip-default`).
    pub const fn name(self) -> &'static str {
        match self {
            Presence::Required => "required",
            Presence::Nullable => "nullable",
            Presence::Omittable => "omittable",
            Presence::Default => "default",
            Presence::SkipDefault => "skip-default",
        }
    }
}

/// One JSON pointer token (RFC 6901): `~` as `~0`, `/` as `~1`.
pub fn escape_pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// A JSON pointer kept as the path to it (each step borrows its parent), so a walk over a record
/// pays for the pointer's text only when it needs it (an unknown key, a value kept aside).
#[derive(Debug, Clone, Copy)]
pub enum PointerPath<'p> {
    /// The record itself (the empty pointer).
    Root,
    /// A key of the object at the parent.
    Key(&'p PointerPath<'p>, &'p str),
    /// An element of the array at the parent.
    Index(&'p PointerPath<'p>, usize),
}

impl PointerPath<'_> {
    /// Appends the pointer's text to `out`.
    pub fn write(&self, out: &mut String) {
        match self {
            PointerPath::Root => {}
            PointerPath::Key(up, k) => {
                up.write(out);
                out.push('/');
                out.push_str(&escape_pointer_token(k));
            }
            PointerPath::Index(up, i) => {
                up.write(out);
                out.push('/');
                out.push_str(&i.to_string());
            }
        }
    }

    /// The pointer's text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }
}

/// An integer width (the profile's integer `format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntWidth {
    /// `uint8`.
    U8,
    /// `uint16`.
    U16,
    /// `uint32`.
    U32,
    /// `uint64`.
    U64,
    /// `int32`.
    I32,
    /// `int64`.
    I64,
}

impl IntWidth {
    /// Every width, narrowest unsigned first.
    pub const ALL: [IntWidth; 6] = [
        IntWidth::U8,
        IntWidth::U16,
        IntWidth::U32,
        IntWidth::U64,
        IntWidth::I32,
        IntWidth::I64,
    ];

    /// The profile's spelling, the schema's integer `format` (`uint8` … `int64`).
    pub const fn name(self) -> &'static str {
        match self {
            IntWidth::U8 => "uint8",
            IntWidth::U16 => "uint16",
            IntWidth::U32 => "uint32",
            IntWidth::U64 => "uint64",
            IntWidth::I32 => "int32",
            IntWidth::I64 => "int64",
        }
    }

    /// The width of a schema's integer `format`, if it is one of the profile's.
    pub fn from_name(name: &str) -> Option<IntWidth> {
        IntWidth::ALL.into_iter().find(|w| w.name() == name)
    }

    /// The Rust type (`u8` … `i64`).
    pub const fn rust(self) -> &'static str {
        match self {
            IntWidth::U8 => "u8",
            IntWidth::U16 => "u16",
            IntWidth::U32 => "u32",
            IntWidth::U64 => "u64",
            IntWidth::I32 => "i32",
            IntWidth::I64 => "i64",
        }
    }

    /// The smallest and largest value (the `minimum` and `maximum` a schema must state).
    pub const fn bounds(self) -> (i128, i128) {
        match self {
            IntWidth::U8 => (0, u8::MAX as i128),
            IntWidth::U16 => (0, u16::MAX as i128),
            IntWidth::U32 => (0, u32::MAX as i128),
            IntWidth::U64 => (0, u64::MAX as i128),
            IntWidth::I32 => (i32::MIN as i128, i32::MAX as i128),
            IntWidth::I64 => (i64::MIN as i128, i64::MAX as i128),
        }
    }
}

/// The type of a field's value (without the `Option` that presence adds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueShape {
    /// A string.
    Str,
    /// An integer.
    Int(IntWidth),
    /// A finite number.
    F64,
    /// A boolean.
    Bool,
    /// Any JSON.
    Json,
    /// A named type of the contract.
    Ref(&'static str),
    /// An array.
    Vec(&'static ValueShape),
    /// A fixed-length array.
    Tuple(&'static [ValueShape]),
}

/// One field of a struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldShape {
    /// The JSON key.
    pub key: &'static str,
    /// The value's type.
    pub value: ValueShape,
    /// How absence looks.
    pub presence: Presence,
    /// The unit of a number (`ms`, `bytes`, `count`, …).
    pub unit: Option<&'static str>,
    /// The sibling field that says how the value was obtained (`ValueSource`).
    pub source: Option<&'static str>,
    /// The gap name under which an absent value means "could not ask".
    pub gap: Option<&'static str>,
}

impl FieldShape {
    /// A field with no unit and no absence discriminator.
    pub const fn new(key: &'static str, value: ValueShape, presence: Presence) -> Self {
        FieldShape {
            key,
            value,
            presence,
            unit: None,
            source: None,
            gap: None,
        }
    }

    /// The same field with a unit.
    pub const fn unit(mut self, unit: &'static str) -> Self {
        self.unit = Some(unit);
        self
    }

    /// The same field with a provenance source field.
    pub const fn source(mut self, source: &'static str) -> Self {
        self.source = Some(source);
        self
    }

    /// The same field with a gap name.
    pub const fn gap(mut self, gap: &'static str) -> Self {
        self.gap = Some(gap);
        self
    }
}

/// How a union is tagged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnionStyle {
    /// The tag key sits among the variant's own keys.
    Internal,
    /// A tag key and a content key.
    Adjacent,
    /// serde's external tagging: a string, or a one-key object.
    External,
}

/// What a union variant carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PayloadShape {
    /// Nothing.
    Unit,
    /// The keys of a named struct or nested union (internal unions).
    Def(&'static str),
    /// A value (adjacent content, external data).
    Value(ValueShape),
}

/// One known variant of a union.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VariantShape {
    /// The tag value on the wire.
    pub tag: &'static str,
    /// What it carries.
    pub payload: PayloadShape,
}

/// A definition of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TypeKind {
    /// An open object.
    Struct {
        /// Its fields, in schema order.
        fields: &'static [FieldShape],
        /// A union whose keys sit at this object's level.
        flatten: Option<&'static str>,
        /// Tag constants the object declares as a union variant (`type: DialStarted`).
        consts: &'static [(&'static str, &'static str)],
        /// Whether it keeps unknown keys itself (an object that absorbs an internal union leaves
        /// them to the union).
        keeps_extra: bool,
    },
    /// A string enum.
    Enum {
        /// The known values.
        values: &'static [&'static str],
        /// Whether unknown values are kept.
        open: bool,
    },
    /// A tagged union.
    Union {
        /// Its tagging.
        style: UnionStyle,
        /// The tag key (empty for external unions).
        tag: &'static str,
        /// The content key of an adjacent union.
        content: Option<&'static str>,
        /// Whether unknown tags are kept.
        open: bool,
        /// The known variants.
        variants: &'static [VariantShape],
    },
    /// A node id written as 32 integers.
    NodeId,
    /// A node id written as 64 hex characters.
    NodeIdHex,
    /// A record that is a JSON array.
    Array(ValueShape),
}

/// A named type of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TypeShape {
    /// The definition name, which is also the Rust type name.
    pub name: &'static str,
    /// The schema file stem it is defined in.
    pub schema: &'static str,
    /// What it is.
    pub kind: TypeKind,
}
