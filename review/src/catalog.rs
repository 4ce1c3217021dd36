//! The rule catalog: every kind of schema change the review knows, under a stable id, with the
//! version bump it needs and what it does to each reader.
//!
//! The ids never change meaning; a rule that is withdrawn keeps its id out of use. `docs/review-rules.md`
//! is rendered from this table (`cargo diagwire review --catalog`), and a test fails when it is stale.
//!
//! The rules whose ids start with `PROTO_` classify the protobuf form: their effects are those on
//! readers of the binary records (`diagwire-proto` and readers generated from the `.proto`), found
//! by comparing both sides' protobuf descriptors ([`crate::proto`]). The other rules classify the JSON form.

use std::fmt;

/// The part of a semantic version a change needs to move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Bump {
    /// Nothing a reader or a caller can notice (documentation, order of optional fields).
    Patch,
    /// Additions every reader survives: old readers keep what they do not know, new readers show
    /// what old writers did not write as absent.
    Minor,
    /// A reader rejects or misreads the other side's records, or Rust callers stop compiling.
    Major,
}

impl Bump {
    /// `patch`, `minor` or `major`.
    pub fn as_str(self) -> &'static str {
        match self {
            Bump::Patch => "patch",
            Bump::Minor => "minor",
            Bump::Major => "major",
        }
    }

    /// The bump from `old` to `new`: the highest component that moved forward, or `None` when the
    /// version did not move forward at all.
    pub fn between(old: &semver::Version, new: &semver::Version) -> Option<Bump> {
        if new <= old {
            return None;
        }
        Some(if new.major > old.major {
            Bump::Major
        } else if new.minor > old.minor {
            Bump::Minor
        } else {
            Bump::Patch
        })
    }
}

impl fmt::Display for Bump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a change does to one reader: an old reader given new records, or a new reader given old
/// records (bundles are kept, so new readers meet old records for as long as the bundles exist).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Effect {
    /// The reader reads the records as before.
    Unaffected,
    /// The reader keeps what it does not know (an unknown key, variant or value) and writes it back.
    KeepsUnknown,
    /// The reader shows what the writer did not write as absent.
    SeesAbsent,
    /// Readers still parse the records, but code built on the generated types stops compiling.
    ApiBreak,
    /// The reader parses the record but takes it to mean something else.
    Misreads,
    /// The reader refuses the record.
    Rejects,
}

impl Rule {
    /// Whether the rule classifies the protobuf form (its id starts with `PROTO_`).
    pub fn is_protobuf(&self) -> bool {
        self.id.starts_with("PROTO_")
    }
}

impl Effect {
    /// A short phrase for a report.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Unaffected => "unaffected",
            Effect::KeepsUnknown => "keeps it as unknown",
            Effect::SeesAbsent => "sees it as absent",
            Effect::ApiBreak => "parses; Rust callers break",
            Effect::Misreads => "misreads",
            Effect::Rejects => "rejects",
        }
    }

    /// Whether the effect breaks the reader (it refuses or misreads records).
    pub fn breaks(self) -> bool {
        matches!(self, Effect::Misreads | Effect::Rejects)
    }
}

/// One rule of the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rule {
    /// The stable id, e.g. `FIELD_ADDED_OPTIONAL`.
    pub id: &'static str,
    /// What the change is.
    pub title: &'static str,
    /// The bump it needs.
    pub bump: Bump,
    /// An old reader given records written after the change.
    pub old_reader: Effect,
    /// A new reader given records written before the change.
    pub new_reader: Effect,
    /// Why, in a sentence.
    pub why: &'static str,
}

macro_rules! rules {
    ($( $name:ident = $id:literal, $bump:ident, $old:ident, $new:ident, $title:literal, $why:literal; )*) => {
        $(
            #[doc = concat!("`", $id, "`: ", $title)]
            pub const $name: Rule = Rule {
                id: $id,
                title: $title,
                bump: Bump::$bump,
                old_reader: Effect::$old,
                new_reader: Effect::$new,
                why: $why,
            };
        )*
        /// Every rule, in catalog order.
        pub const ALL: &[Rule] = &[$( $name ),*];
    };
}

rules! {
    RECORD_KIND_ADDED = "RECORD_KIND_ADDED", Minor, KeepsUnknown, Unaffected,
        "a record kind added",
        "old readers do not know the kind and leave its files alone; old records never hold it";
    RECORD_KIND_REMOVED = "RECORD_KIND_REMOVED", Major, Unaffected, Rejects,
        "a record kind removed",
        "new readers cannot read the kind's records in bundles written before";
    TYPE_ADDED = "TYPE_ADDED", Minor, Unaffected, Unaffected,
        "a type added",
        "a definition no released record used; what uses it is a finding of its own";
    TYPE_REMOVED = "TYPE_REMOVED", Major, Unaffected, ApiBreak,
        "a type removed",
        "Rust code naming the type stops compiling; what used it is a finding of its own";
    TYPE_KIND_CHANGED = "TYPE_KIND_CHANGED", Major, Rejects, Rejects,
        "a type changed form (struct, enum, union, id, array)",
        "the JSON of the type changes shape, so each side refuses the other's records";
    TYPE_MOVED = "TYPE_MOVED", Patch, Unaffected, Unaffected,
        "a type moved to another schema file",
        "the wire and the re-exported Rust name stay the same";
    FIELD_ADDED_OPTIONAL = "FIELD_ADDED_OPTIONAL", Minor, KeepsUnknown, SeesAbsent,
        "an optional field added",
        "old readers keep the key as an unknown and write it back; new readers show it absent in old records";
    FIELD_ADDED_REQUIRED = "FIELD_ADDED_REQUIRED", Major, KeepsUnknown, Rejects,
        "a required field added",
        "records written before lack the key, and new readers refuse them";
    FIELD_REMOVED_OPTIONAL = "FIELD_REMOVED_OPTIONAL", Major, SeesAbsent, ApiBreak,
        "an optional field removed",
        "both sides still parse, but Rust code using the field stops compiling and new readers keep old values only as unknown keys";
    FIELD_REMOVED_REQUIRED = "FIELD_REMOVED_REQUIRED", Major, Rejects, KeepsUnknown,
        "a required field removed",
        "new writers leave the key out, and old readers refuse their records";
    FIELD_RENAMED = "FIELD_RENAMED", Major, Rejects, Misreads,
        "a field renamed (one removed and one of the same type and presence added)",
        "old readers miss the old key; new readers miss the new key in old records and keep the old one as unknown";
    FIELD_REQUIRED_TO_OPTIONAL = "FIELD_REQUIRED_TO_OPTIONAL", Major, Rejects, ApiBreak,
        "a required field made optional",
        "new writers may leave the key out or write null, which old readers refuse";
    FIELD_OPTIONAL_TO_REQUIRED = "FIELD_OPTIONAL_TO_REQUIRED", Major, Unaffected, Rejects,
        "an optional field made required",
        "records written before may lack the key, and new readers refuse them";
    FIELD_PRESENCE_SPELLING_CHANGED = "FIELD_PRESENCE_SPELLING_CHANGED", Minor, Unaffected, Unaffected,
        "how an absent value is written changed between null and a left-out key (or between always and only-when-set defaults)",
        "every reader takes both spellings; writers change their canonical form";
    FIELD_PRESENCE_DEFAULTED = "FIELD_PRESENCE_DEFAULTED", Major, ApiBreak, Rejects,
        "an optional field became a defaulted one",
        "old records write null for an absent value, which a defaulted field refuses; the Rust type loses its Option";
    FIELD_PRESENCE_UNDEFAULTED = "FIELD_PRESENCE_UNDEFAULTED", Major, Rejects, ApiBreak,
        "a defaulted field became optional",
        "new writers may write null, which old readers refuse for a defaulted field; the Rust type gains an Option";
    FIELD_TYPE_CHANGED = "FIELD_TYPE_CHANGED", Major, Rejects, Rejects,
        "a field's type changed",
        "each side refuses values of the other's type";
    INTEGER_WIDENED = "INTEGER_WIDENED", Major, Rejects, Unaffected,
        "an integer field widened (its new range holds the old one)",
        "new writers may write values beyond the old width, which old readers refuse";
    INTEGER_NARROWED = "INTEGER_NARROWED", Major, Unaffected, Rejects,
        "an integer field narrowed",
        "records written before may hold values beyond the new width, which new readers refuse";
    BOUND_ADDED = "BOUND_ADDED", Major, Unaffected, Rejects,
        "a bound added or tightened (maxItems, minItems, pattern)",
        "records written before may be outside the new bound";
    BOUND_LOOSENED = "BOUND_LOOSENED", Minor, Unaffected, Unaffected,
        "a bound loosened or removed",
        "the typed readers never enforced it (a bound the writer keeps, such as a ring's length), so no reader refuses a longer value; schema validators of old releases do";
    ENUM_VALUE_ADDED_OPEN = "ENUM_VALUE_ADDED_OPEN", Minor, KeepsUnknown, Unaffected,
        "a value added to an open enum",
        "old readers keep the value as `Other` and write it back";
    ENUM_VALUE_ADDED_CLOSED = "ENUM_VALUE_ADDED_CLOSED", Major, Rejects, Unaffected,
        "a value added to a closed enum",
        "old readers refuse the new value";
    ENUM_VALUE_REMOVED_OPEN = "ENUM_VALUE_REMOVED_OPEN", Major, Unaffected, ApiBreak,
        "a value removed from an open enum",
        "new readers keep the value as `Other`, but Rust code matching its variant stops compiling";
    ENUM_VALUE_REMOVED_CLOSED = "ENUM_VALUE_REMOVED_CLOSED", Major, Unaffected, Rejects,
        "a value removed from a closed enum",
        "records written before may hold the value, which new readers refuse";
    ENUM_OPENED = "ENUM_OPENED", Major, Rejects, ApiBreak,
        "a closed enum made open",
        "new writers may write values old readers refuse; the Rust enum gains `Other`";
    ENUM_CLOSED = "ENUM_CLOSED", Major, Unaffected, Rejects,
        "an open enum made closed",
        "records written before may hold values outside the list, which new readers refuse";
    UNION_VARIANT_ADDED_OPEN = "UNION_VARIANT_ADDED_OPEN", Minor, KeepsUnknown, Unaffected,
        "a variant added to an open union",
        "old readers keep the whole object as `Other` and write it back";
    UNION_VARIANT_ADDED_CLOSED = "UNION_VARIANT_ADDED_CLOSED", Major, Rejects, Unaffected,
        "a variant added to a closed union",
        "old readers refuse the new tag";
    UNION_VARIANT_REMOVED = "UNION_VARIANT_REMOVED", Major, Unaffected, Misreads,
        "a variant removed from a union",
        "records written before may hold it: an open union's new readers see an unknown variant, a closed one's refuse it";
    UNION_OPENED = "UNION_OPENED", Major, Rejects, ApiBreak,
        "a closed union made open",
        "new writers may write tags old readers refuse; the Rust enum gains `Other`";
    UNION_CLOSED = "UNION_CLOSED", Major, Unaffected, Rejects,
        "an open union made closed",
        "records written before may hold unknown tags, which new readers refuse";
    UNION_TAG_KEY_CHANGED = "UNION_TAG_KEY_CHANGED", Major, Rejects, Rejects,
        "the key a union's tag sits under changed",
        "each side looks for the tag under a key the other does not write";
    UNION_TAG_VALUE_CHANGED = "UNION_TAG_VALUE_CHANGED", Major, Misreads, Misreads,
        "a variant's tag value changed (an event type renamed)",
        "each side reads the other's records of that variant as an unknown variant";
    UNION_STYLE_CHANGED = "UNION_STYLE_CHANGED", Major, Rejects, Rejects,
        "a union's tagging style or content key changed",
        "the JSON of every variant changes shape";
    FLATTEN_CHANGED = "FLATTEN_CHANGED", Major, Rejects, Rejects,
        "the union a struct absorbs changed",
        "the keys at the struct's level change meaning";
    FLATTEN_FIELD_RENAMED = "FLATTEN_FIELD_RENAMED", Major, Unaffected, ApiBreak,
        "the Rust field that holds an absorbed union renamed",
        "the wire is the same, but Rust code naming the field stops compiling";
    PROVENANCE_WIDENED = "PROVENANCE_WIDENED", Minor, Unaffected, SeesAbsent,
        "an absence discriminator added to a field (a source field or a gap name)",
        "readers can now tell how a value was obtained or why it is missing; old records answer \"not observed\"";
    PROVENANCE_NARROWED = "PROVENANCE_NARROWED", Major, Unaffected, Misreads,
        "an absence discriminator removed from a field",
        "a new reader calls an old record's derived or could-not-ask value reported or not observed";
    FIELD_BECAME_DERIVED = "FIELD_BECAME_DERIVED", Major, Misreads, Unaffected,
        "a field is now derived instead of reported (same wire), with no source field to tell",
        "old readers take the derived value for a reported one";
    FIELD_BECAME_DERIVED_DISCRIMINATED = "FIELD_BECAME_DERIVED_DISCRIMINATED", Minor, Unaffected, Unaffected,
        "a field is now derived instead of reported, and its source field says so in each record",
        "every reader that consults the source field can tell; the change must be in the changelog";
    FIELD_BECAME_REPORTED = "FIELD_BECAME_REPORTED", Minor, Unaffected, Unaffected,
        "a field is now reported instead of derived (same wire)",
        "values become more trustworthy; no reader misreads them";
    UNIT_CHANGED = "UNIT_CHANGED", Major, Misreads, Misreads,
        "a number's unit changed (same wire)",
        "each side reads the other's numbers in the wrong unit";
    UNIT_RESPELLED = "UNIT_RESPELLED", Patch, Unaffected, Unaffected,
        "a number's unit spelled as the same quantity (a retired spelling replaced, or a general unit made specific, such as `id` to `pid`)",
        "the number means what it meant; only the documentation of its unit changes (the unit list is `schema/src/units.rs`)";
    REQUIRED_FIELDS_REORDERED = "REQUIRED_FIELDS_REORDERED", Major, Unaffected, ApiBreak,
        "required fields reordered",
        "the order of a constructor's arguments follows the schema, so calls stop compiling or swap values";
    ORDER_CHANGED = "ORDER_CHANGED", Patch, Unaffected, Unaffected,
        "optional fields, enum values or variants reordered",
        "order is not on the wire";
    DESCRIPTION_CHANGED = "DESCRIPTION_CHANGED", Patch, Unaffected, Unaffected,
        "a description, title, example or absence note changed",
        "documentation only";
    PROTO_NUMBER_CHANGED = "PROTO_NUMBER_CHANGED", Major, Misreads, Misreads,
        "the protobuf number of a struct field, union variant or enum value changed",
        "each side finds the value under a number it does not know, keeps it as an unknown field and reads the member as absent or zero";
    PROTO_NUMBER_REUSED = "PROTO_NUMBER_REUSED", Major, Misreads, Misreads,
        "a protobuf number that named one field, variant or value names another (a number the old table reserved included)",
        "readers of the other side decode the value as the member the number named for them, and a reserved number still names its removed member in kept records and older readers";
    PROTO_WIRE_TYPE_CHANGED = "PROTO_WIRE_TYPE_CHANGED", Major, Misreads, Misreads,
        "a value's protobuf wire type changed (varint, fixed64, length-delimited: an integer made a string, a double made an integer)",
        "a reader meets the number with a wire type its descriptor does not declare and keeps it as an unknown field, so it reads the member as absent or zero (prost-generated readers refuse the record)";
    PROTO_ENCODING_CHANGED = "PROTO_ENCODING_CHANGED", Major, Misreads, Misreads,
        "a value keeps its wire type but is encoded another way (uint and zigzag sint, an enum and an integer or another enum, a string, bytes or a message and another)",
        "the bytes still parse on both sides, so each reads the other's values as different ones and nothing fails: a zigzag 1 is an unsigned 2";
    PROTO_INTEGER_WIDENED = "PROTO_INTEGER_WIDENED", Major, Rejects, Unaffected,
        "an integer keeps its wire type and encoding but widens (uint32 to uint64, u8 to u16, sint32 to sint64)",
        "old readers read every value of the old width as before, but new writers may write wider ones, which diagwire-proto refuses as out of range and generated readers truncate";
    PROTO_INTEGER_NARROWED = "PROTO_INTEGER_NARROWED", Major, Unaffected, Rejects,
        "an integer keeps its wire type and encoding but narrows",
        "records written before may hold values beyond the new width, which diagwire-proto refuses as out of range and generated readers truncate";
    PROTO_ONEOF_MEMBER_REMOVED = "PROTO_ONEOF_MEMBER_REMOVED", Major, Unaffected, Misreads,
        "a member left a union's oneof (a variant removed or retagged, or moved to another union)",
        "records written before may set it: a new reader keeps the member as an unknown field and finds no variant of the oneof set";
    PROTO_ONEOF_CHANGED = "PROTO_ONEOF_CHANGED", Major, Misreads, Misreads,
        "a message's fields moved into or out of a oneof (it changed between struct and union)",
        "a oneof holds one member, so a union reader given a struct's fields keeps one of them or refuses the record, and a struct reader given one member reads every other field as absent or zero";
    UNCLASSIFIED = "UNCLASSIFIED", Major, Rejects, Rejects,
        "a change no rule classifies",
        "nothing is called compatible without a rule: classify it, or add a rule with its fixture";
}

/// The rule of an id read as text (a fixture folder's name, a report being read back). Code names
/// a rule by its constant (`catalog::FIELD_RENAMED`), so a misspelt id does not compile.
pub fn rule(id: &str) -> Option<&'static Rule> {
    ALL.iter().find(|r| r.id == id)
}
