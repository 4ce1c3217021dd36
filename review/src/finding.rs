//! What a review finds: a change classified under a rule of the catalog ([`Finding`]), where it is
//! ([`At`]) and what it touches ([`Subject`]). The JSON comparison ([`crate::diff`]) and the
//! protobuf comparison ([`crate::proto`]) both produce these; the confirmation, the reports and the
//! changelog read them.

use std::fmt;

use crate::catalog::Rule;

/// Where a change is: the definition, the member (field, value or variant) and the JSON pointer
/// inside the definition.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct At {
    /// The schema file stem (of the new tree when the definition exists there).
    pub schema: String,
    /// The definition name; empty for a change to a file's own title or description.
    pub def: String,
    /// The field, enum value or variant tag, if the change is about one.
    pub member: Option<String>,
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.def[..], &self.member) {
            ("", _) => write!(f, "{}", self.schema),
            (d, Some(m)) => write!(f, "{}#{d}.{m}", self.schema),
            (d, None) => write!(f, "{}#{d}", self.schema),
        }
    }
}

/// One classified change.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The rule that classifies it.
    pub rule: &'static Rule,
    /// Where.
    pub at: At,
    /// What changed, in a sentence.
    pub detail: String,
    /// The JSON pointers (definition, pointer inside it) the finding accounts for.
    pub explains: Vec<(String, String)>,
    /// What the change touches, for building a counterexample.
    pub subject: Subject,
}

/// What a finding is about, in terms of the models.
#[derive(Debug, Clone, PartialEq)]
pub enum Subject {
    /// A record kind.
    Record(String),
    /// A whole definition.
    Def(String),
    /// A field of a struct.
    Field {
        /// The struct.
        def: String,
        /// The field.
        field: String,
    },
    /// A value of an enum.
    Value {
        /// The enum.
        def: String,
        /// The value.
        value: String,
    },
    /// A variant of a union, by tag (the new tag when it changed; `old_tag` is the old one).
    Variant {
        /// The union.
        def: String,
        /// The tag.
        tag: String,
        /// The tag before, when it changed.
        old_tag: Option<String>,
    },
    /// A member of the protobuf form (a `PROTO_` rule's finding).
    Protobuf(Member),
    /// Nothing a record can show (documentation).
    None,
}

/// What a member of the binary form is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A field of a struct message, by JSON key (`@<field>` for an absorbed union).
    Field,
    /// A member of a union message's `oneof`, by tag.
    Variant,
    /// A value of an enum.
    Value,
    /// A positional item of a list wrapper or tuple message (`items`, `item0`, …).
    Item,
    /// A whole message.
    Message,
}

/// The place of a protobuf finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The message or enum.
    pub message: String,
    /// What the member is.
    pub kind: Kind,
    /// The key, tag or value (empty for a whole message).
    pub name: String,
    /// For a reused number: the number and the member it named on the old side.
    pub was: Option<(u32, String)>,
    /// Whether that member was only reserved in the old side's table (no old reader of this
    /// comparison knows it).
    pub reserved: bool,
}
