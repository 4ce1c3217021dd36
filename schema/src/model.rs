//! The model's types: one contract version's schema files as definitions, fields, enums and
//! unions, as the lowering ([`crate::lower`]) builds them and the resolve pass
//! ([`crate::resolve`]) completes them.
//!
//! A field's presence, an integer's width and a union's tagging are the runtime's own types
//! ([`Presence`], [`IntWidth`], [`UnionStyle`]), so the model and the generated shape table say
//! them in one vocabulary.

pub use diagwire_runtime::shape::{IntWidth, Presence, UnionStyle};

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::ordered::J;

/// Where each definition name is first defined: (file, definition) indexes.
type Places = HashMap<String, (usize, usize)>;

/// All schema files of one contract version.
#[derive(Debug, Clone)]
pub struct Model {
    /// The files, sorted by stem.
    pub files: Vec<FileModel>,
    /// Where each name is first defined (file, definition), built on first use so a lookup
    /// costs the same in a tree of ten definitions or of ten thousand.
    index: OnceLock<(Places, usize)>,
}

impl Model {
    /// The model of these files.
    pub fn new(files: Vec<FileModel>) -> Model {
        Model {
            files,
            index: OnceLock::new(),
        }
    }

    /// Every definition, file by file in document order.
    pub fn defs(&self) -> impl Iterator<Item = &Def> {
        self.files.iter().flat_map(|f| &f.defs)
    }

    /// Where `name` is first defined: its file's index and its own.
    fn place(&self, name: &str) -> Option<(usize, usize)> {
        let count = || self.files.iter().map(|f| f.defs.len()).sum::<usize>();
        let (index, indexed) = self.index.get_or_init(|| {
            let mut index = HashMap::new();
            for (fi, f) in self.files.iter().enumerate() {
                for (di, d) in f.defs.iter().enumerate() {
                    index.entry(d.name.clone()).or_insert((fi, di));
                }
            }
            (index, count())
        });
        let at = |(fi, di): (usize, usize)| {
            self.files
                .get(fi)
                .and_then(|f| f.defs.get(di))
                .is_some_and(|d| d.name == name)
        };
        match index.get(name).copied() {
            Some(p) if at(p) => Some(p),
            None if *indexed == count() => None,
            // The files are public: after a change to them the index may be stale, so the
            // lookup falls back to a scan.
            _ => self.files.iter().enumerate().find_map(|(fi, f)| {
                f.defs
                    .iter()
                    .position(|d| d.name == name)
                    .map(|di| (fi, di))
            }),
        }
    }

    /// The definition of that name.
    pub fn def(&self, name: &str) -> Option<&Def> {
        let (fi, di) = self.place(name)?;
        self.files.get(fi)?.defs.get(di)
    }

    /// The file that defines `name`.
    pub fn file_of(&self, name: &str) -> Option<&FileModel> {
        self.files.get(self.place(name)?.0)
    }

    /// The record kinds and the definitions that declare them, sorted by kind.
    pub fn records(&self) -> Vec<(&str, &Def)> {
        let mut out: Vec<(&str, &Def)> = self
            .defs()
            .filter_map(|d| d.record.as_deref().map(|k| (k, d)))
            .collect();
        out.sort_by(|a, b| a.0.cmp(b.0));
        out
    }
}

/// One schema file.
#[derive(Debug, Clone)]
pub struct FileModel {
    /// The path the file was read under, for messages.
    pub path: String,
    /// File name without `.schema.json`; also the generated module name.
    pub stem: String,
    /// The file's `title`.
    pub title: String,
    /// The file's `description`.
    pub description: String,
    /// The `$defs`, in document order.
    pub defs: Vec<Def>,
}

/// One named type.
#[derive(Debug, Clone)]
pub struct Def {
    /// The `$defs` key: the Rust type name.
    pub name: String,
    /// The definition's `description`.
    pub description: String,
    /// The record kind, when the definition is a whole record.
    pub record: Option<String>,
    /// What the definition is.
    pub kind: DefKind,
    /// What the resolve pass worked out about it.
    pub facts: Facts,
}

/// Facts about a definition that the resolve pass computes once, for every consumer of the model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// A struct that keeps unknown keys in its own `extra` map (every struct but one that absorbs an
    /// internal union, which keeps them for it).
    pub keeps_extra: bool,
    /// The Rust type implements `Default`: every field has a default (options, collections,
    /// strings, numbers, ids, and such structs).
    pub defaultable: bool,
    /// A later minor version may grow the type (structs gain optional fields, open enums values,
    /// open unions variants), so the Rust type is `#[non_exhaustive]`.
    pub grows: bool,
    /// The structs that absorb this union (`x-flatten`).
    pub flattened_into: Vec<String>,
}

/// The six definition forms of the profile.
#[derive(Debug, Clone)]
pub enum DefKind {
    /// An open object.
    Struct(StructDef),
    /// A string enum.
    Enum {
        /// The known values, in order.
        values: Vec<String>,
        /// Whether unknown values are kept (`x-open-enum`) or rejected (`enum`).
        open: bool,
    },
    /// A tagged union.
    Union(UnionDef),
    /// swactor's `NodeId` (32-integer array).
    NodeId,
    /// A hex node id string.
    NodeIdHex,
    /// A record that is a JSON array.
    Array(Ty),
}

/// An open object.
#[derive(Debug, Clone)]
pub struct StructDef {
    /// The properties except the union tag constants, in document order.
    pub props: Vec<Prop>,
    /// Tag constants the object declares (`"type": {"const": "DialStarted"}`).
    pub consts: Vec<(String, String)>,
    /// A union whose keys sit at this object's level.
    pub flatten: Option<Flatten>,
}

/// A union absorbed by a struct (`x-flatten`).
#[derive(Debug, Clone)]
pub struct Flatten {
    /// The Rust field that holds the union.
    pub field: String,
    /// The union's definition name.
    pub union: String,
}

/// One property of a struct.
#[derive(Debug, Clone)]
pub struct Prop {
    /// The JSON key.
    pub name: String,
    /// JSON pointer of the property schema, for messages.
    pub pointer: String,
    /// The value type (without the `Option` that presence adds).
    pub ty: Ty,
    /// How absence looks on the wire.
    pub presence: Presence,
    /// What the property means.
    pub description: String,
    /// Unit of an integer or number.
    pub unit: Option<String>,
    /// What absence means.
    pub absent: Option<String>,
    /// The absence discriminator, if any.
    pub provenance: Option<ProvenanceSpec>,
    /// How the value is derived, when the writer computes it rather than observing it
    /// (`x-derived`).
    pub derived: Option<String>,
    /// The property's default value (for `default` and `skip-default`).
    pub default: Option<J>,
}

/// How a value was obtained is recorded by a sibling field and/or an api gap.
#[derive(Debug, Clone)]
pub struct ProvenanceSpec {
    /// The sibling property holding a `ValueSource`.
    pub source: Option<String>,
    /// The `api_gaps` entry that declares the value unavailable.
    pub gap: Option<String>,
}

/// A value type.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    /// `String`.
    Str,
    /// An integer of the given width.
    Int(IntWidth),
    /// A finite `f64`.
    F64,
    /// `bool`.
    Bool,
    /// A named definition.
    Ref(String),
    /// `Vec<T>`.
    Vec(Box<Ty>),
    /// A fixed-length array.
    Tuple(Vec<Ty>),
    /// Any JSON.
    Json,
}

/// A tagged union.
#[derive(Debug, Clone)]
pub struct UnionDef {
    /// Internal, adjacent or external tagging.
    pub style: UnionStyle,
    /// The tag key (internal, adjacent).
    pub tag: String,
    /// The content key (adjacent).
    pub content: Option<String>,
    /// Whether unknown tags parse into `Other`.
    pub open: bool,
    /// Whether the object rejects keys other than tag and content (adjacent unions used directly).
    pub closed_object: bool,
    /// The known variants.
    pub variants: Vec<Variant>,
    /// Tag constants an internal union nested in another declares (`"t": "lifecycle"`).
    pub consts: Vec<(String, String)>,
    /// Whether the catch-all of an open adjacent union requires the content key.
    pub other_content_required: bool,
    /// The tags the catch-all branch of an open union excludes (its `not.enum`), as written.
    pub excluded: Option<Vec<String>>,
}

/// One union variant.
#[derive(Debug, Clone)]
pub struct Variant {
    /// The tag value on the wire.
    pub tag: String,
    /// The Rust variant name.
    pub rust: String,
    /// What the variant carries.
    pub payload: Payload,
    /// The variant's description.
    pub description: String,
}

/// A variant's payload.
#[derive(Debug, Clone)]
pub enum Payload {
    /// Nothing.
    Unit,
    /// An internal variant: a struct or nested union definition.
    Def(String),
    /// Adjacent content or external data.
    Ty(Ty),
}

/// The Rust variant name for a wire value: `ping_req` → `PingReq`, `RemoteInfo.conn_type` →
/// `RemoteInfoConnType`, `v4` → `V4`.
pub fn variant_name(value: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in value.chars() {
        if c.is_ascii_alphanumeric() {
            if upper {
                out.push(c.to_ascii_uppercase());
            } else {
                out.push(c);
            }
            upper = false;
        } else {
            upper = true;
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'V');
    }
    out
}
