//! Counterexamples: for a breaking finding, a concrete record one side writes and the other
//! refuses or misreads, confirmed by running the readers — the generated reader where the tree is
//! one that is compiled in (a release, or the current schemas), and the tree's schemas otherwise.

use diagwire::validate::Validators;
use diagwire_runtime::shape::escape_pointer_token;
use diagwire_schema::model::{DefKind, IntWidth, Model, Presence, Ty, UnionStyle};
use serde_json::{Value, json};

use crate::catalog;
use crate::finding::{Finding, Subject};
use crate::instance::{Builder, Incomplete, Target};
use crate::tree::Tree;

/// Which side wrote a counterexample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The tree before the change.
    Old,
    /// The tree after the change.
    New,
}

/// What one reader made of a counterexample.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The reader: `schemas of <tree>` or `generated reader <version>`.
    pub reader: String,
    /// Whether it took the record.
    pub accepts: bool,
    /// Its first complaint, or what it read.
    pub detail: String,
}

/// A record that shows a finding's break.
#[derive(Debug, Clone, PartialEq)]
pub struct Counterexample {
    /// The record kind.
    pub kind: String,
    /// The side that writes it (its own readers take it).
    pub written_by: Side,
    /// The record.
    pub record: Value,
    /// What the other side's readers made of it.
    pub verdicts: Vec<Verdict>,
    /// Whether the readers showed the break (a refusal, or for a misread a reading that differs).
    pub confirmed: bool,
    /// How the break shows, in a sentence.
    pub note: String,
}

/// In place of a counterexample: why none was built (no record, no verdicts, not confirmed).
pub fn not_built(why: String) -> Counterexample {
    Counterexample {
        kind: String::new(),
        written_by: Side::New,
        record: Value::Null,
        verdicts: vec![],
        confirmed: false,
        note: why,
    }
}

/// The readers of one tree.
pub struct Readers<'t> {
    tree: &'t Tree,
    validators: Validators,
}

impl<'t> Readers<'t> {
    /// Compiles the tree's schemas.
    pub fn new(tree: &'t Tree) -> anyhow::Result<Readers<'t>> {
        let records: Vec<(String, String, String)> = tree
            .model
            .records()
            .into_iter()
            .map(|(k, d)| {
                let stem = tree
                    .model
                    .file_of(&d.name)
                    .map(|f| f.stem.clone())
                    .unwrap_or_default();
                (k.to_owned(), stem, d.name.clone())
            })
            .collect();
        let validators = Validators::from_parts(
            tree.texts.iter().map(|(s, t)| (s.as_str(), t.as_str())),
            records
                .iter()
                .map(|(k, s, d)| (k.as_str(), s.as_str(), d.as_str())),
        )
        .map_err(|e| anyhow::anyhow!("{}: {e}", tree.label))?;
        Ok(Readers { tree, validators })
    }

    /// Every reader's verdict on `record` as a record of `kind`.
    pub fn verdicts(&self, kind: &str, record: &Value) -> Vec<Verdict> {
        let mut out = Vec::new();
        let label = format!("schemas of {}", self.tree.label);
        match self.validators.violations_named(kind, record) {
            None => out.push(Verdict {
                reader: label,
                accepts: false,
                detail: format!("has no record kind \u{e000}{kind}\u{e001}"),
            }),
            Some(v) if v.is_empty() => out.push(Verdict {
                reader: label,
                accepts: true,
                detail: "valid".into(),
            }),
            Some(v) => out.push(Verdict {
                reader: label,
                accepts: false,
                detail: format!(
                    "\u{e000}{}\u{e001}: {}",
                    if v[0].pointer.is_empty() {
                        "/"
                    } else {
                        &v[0].pointer
                    },
                    v[0].message
                ),
            }),
        }
        if let Some(contract) = self.tree.reader() {
            let reader = format!("generated reader {}", contract.version);
            let text = record.to_string();
            out.push(match (contract.reread)(kind, &text) {
                None => Verdict {
                    reader,
                    accepts: false,
                    detail: format!("has no record kind \u{e000}{kind}\u{e001}"),
                },
                Some(Ok(_)) => Verdict {
                    reader,
                    accepts: true,
                    detail: "parses".into(),
                },
                Some(Err(e)) => Verdict {
                    reader,
                    accepts: false,
                    detail: e.to_string(),
                },
            });
        }
        out
    }
}

/// Builds and runs the counterexample of a finding, if its rule breaks a reader on the wire.
pub fn counterexample(f: &Finding, old: &Readers<'_>, new: &Readers<'_>) -> Option<Counterexample> {
    let (om, nm) = (&old.tree.model, &new.tree.model);
    let rule = *f.rule;
    let plan: Plan = match (&f.subject, rule) {
        (
            Subject::Field { def, field },
            catalog::FIELD_ADDED_REQUIRED | catalog::FIELD_OPTIONAL_TO_REQUIRED,
        ) => Plan::field(Side::Old, om, def, field, Edit::Remove, Expect::Rejects),
        (Subject::Field { def, field }, catalog::FIELD_REMOVED_REQUIRED) => {
            let old_field = field.clone();
            Plan::field(
                Side::New,
                nm,
                def,
                &old_field,
                Edit::Remove,
                Expect::Rejects,
            )
        }
        (
            Subject::Field { def, field },
            catalog::FIELD_REQUIRED_TO_OPTIONAL | catalog::FIELD_PRESENCE_UNDEFAULTED,
        ) => {
            let edit = match prop(nm, def, field).map(|p| p.presence) {
                Some(Presence::Omittable) if rule == catalog::FIELD_REQUIRED_TO_OPTIONAL => {
                    Edit::Remove
                }
                _ => Edit::Set(Value::Null),
            };
            Plan::field(Side::New, nm, def, field, edit, Expect::Rejects)
        }
        (Subject::Field { def, field }, catalog::FIELD_PRESENCE_DEFAULTED) => Plan::field(
            Side::Old,
            om,
            def,
            field,
            Edit::Set(Value::Null),
            Expect::Rejects,
        ),
        (Subject::Field { def, field }, catalog::FIELD_RENAMED) => {
            let value = prop(nm, def, field)
                .map(|p| Builder::new(nm).value(&p.ty))
                .unwrap_or(Value::Null);
            let mut plan = Plan::field(
                Side::New,
                nm,
                def,
                field,
                Edit::Set(value),
                Expect::RejectsOrMisreads,
            )?;
            plan.unknown_key = Some((def.clone(), field.clone()));
            Some(plan)
        }
        (Subject::Field { def, field }, catalog::FIELD_TYPE_CHANGED) => {
            let value = prop(nm, def, field)
                .map(|p| Builder::new(nm).value(&p.ty))
                .unwrap_or(Value::Null);
            Plan::field(Side::New, nm, def, field, Edit::Set(value), Expect::Rejects)
        }
        (Subject::Field { def, field }, catalog::INTEGER_WIDENED | catalog::INTEGER_NARROWED) => {
            let (writer, wm, rm) = if rule == catalog::INTEGER_WIDENED {
                (Side::New, nm, om)
            } else {
                (Side::Old, om, nm)
            };
            let (wt, rt) = (int_of(wm, def, field)?, int_of(rm, def, field)?);
            let value = beyond(wt, rt)?;
            let edit = if is_vec(wm, def, field) {
                Edit::Set(json!([value]))
            } else {
                Edit::Set(value)
            };
            Plan::field(writer, wm, def, field, edit, Expect::Rejects)
        }
        (Subject::Field { def, field }, catalog::BOUND_ADDED) => {
            let max = new.tree_max_items(def, field)?;
            let item = match prop(om, def, field).map(|p| &p.ty) {
                Some(Ty::Vec(i)) => Builder::new(om).value(i),
                _ => return None,
            };
            let items = vec![item; usize::try_from(max).ok()? + 1];
            Plan::field(
                Side::Old,
                om,
                def,
                field,
                Edit::Set(Value::Array(items)),
                Expect::Rejects,
            )
        }
        (Subject::Field { def, field }, catalog::PROVENANCE_NARROWED) => {
            let source = prop(om, def, field)
                .and_then(|p| p.provenance.as_ref())
                .and_then(|pv| pv.source.clone());
            let value = prop(om, def, field)
                .map(|p| Builder::new(om).value(&p.ty))
                .unwrap_or(Value::Null);
            let mut plan = Plan::field(
                Side::Old,
                om,
                def,
                field,
                Edit::Set(value),
                Expect::Misreads,
            )?;
            if let Some(src) = source {
                plan.also = Some((src, json!("derived")));
                plan.note = format!(
                    "the old reader calls \u{e000}{field}\u{e001} derived (its source says so); the new reader no longer reads the source and calls it reported"
                );
            } else {
                plan.note = format!(
                    "the old reader names the gap that makes an absent \u{e000}{field}\u{e001} mean \"could not ask\"; the new reader calls it not observed"
                );
            }
            Some(plan)
        }
        (Subject::Field { def, field }, catalog::UNIT_CHANGED | catalog::FIELD_BECAME_DERIVED) => {
            let value = prop(nm, def, field)
                .map(|p| Builder::new(nm).value(&p.ty))
                .unwrap_or(Value::Null);
            let mut plan = Plan::field(
                Side::New,
                nm,
                def,
                field,
                Edit::Set(value),
                Expect::SilentMisread,
            )?;
            plan.note = if rule == catalog::UNIT_CHANGED {
                format!(
                    "both sides take the record; the old reader reads \u{e000}{field}\u{e001} in its old unit"
                )
            } else {
                format!(
                    "both sides take the record; the old reader takes the derived \u{e000}{field}\u{e001} for a reported value"
                )
            };
            Some(plan)
        }
        (Subject::Value { def, value }, catalog::ENUM_VALUE_ADDED_CLOSED) => {
            Plan::type_use(Side::New, nm, def, json!(value), Expect::Rejects)
        }
        (Subject::Value { def, value }, catalog::ENUM_VALUE_REMOVED_CLOSED) => {
            Plan::type_use(Side::Old, om, def, json!(value), Expect::Rejects)
        }
        (Subject::Def(def), catalog::ENUM_CLOSED) => {
            Plan::type_use(Side::Old, om, def, json!("future_value"), Expect::Rejects)
        }
        (Subject::Def(def), catalog::ENUM_OPENED) => {
            Plan::type_use(Side::New, nm, def, json!("future_value"), Expect::Rejects)
        }
        (
            Subject::Variant { def, tag, .. },
            catalog::UNION_VARIANT_ADDED_CLOSED | catalog::UNION_TAG_VALUE_CHANGED,
        ) => Plan::variant(Side::New, nm, def, tag, Expect::RejectsOrMisreads),
        (Subject::Variant { def, tag, .. }, catalog::UNION_VARIANT_REMOVED) => {
            Plan::variant(Side::Old, om, def, tag, Expect::RejectsOrMisreads)
        }
        (Subject::Def(def), catalog::UNION_CLOSED) => {
            Plan::variant(Side::Old, om, def, "future_variant", Expect::Rejects)
        }
        (Subject::Def(def), catalog::UNION_OPENED) => {
            Plan::variant(Side::New, nm, def, "future_variant", Expect::Rejects)
        }
        (Subject::Def(def), catalog::UNION_TAG_KEY_CHANGED | catalog::UNION_STYLE_CHANGED) => {
            // A variant with content shows a changed content key; any variant a changed tag key.
            let tag = match nm.def(def).map(|d| &d.kind) {
                Some(DefKind::Union(u)) => u
                    .variants
                    .iter()
                    .find(|v| !matches!(v.payload, diagwire_schema::model::Payload::Unit))
                    .or(u.variants.first())?
                    .tag
                    .clone(),
                _ => return None,
            };
            Plan::variant(Side::New, nm, def, &tag, Expect::Rejects)
        }
        (Subject::Def(def), catalog::TYPE_KIND_CHANGED | catalog::FLATTEN_CHANGED) => {
            let value = Builder::new(nm).def_value(def, 0);
            Plan::type_use(Side::New, nm, def, value, Expect::Rejects)
                .or_else(|| Plan::whole(Side::New, nm, def, Expect::Rejects))
        }
        (Subject::Record(kind), catalog::RECORD_KIND_REMOVED) => {
            let def = om
                .records()
                .into_iter()
                .find(|(k, _)| *k == kind)?
                .1
                .name
                .clone();
            let b = Builder::new(om);
            Some(
                Plan {
                    writer: Side::Old,
                    kind: kind.clone(),
                    record: b.def_value(&def, 0),
                    pointer: String::new(),
                    also: None,
                    expect: Expect::Rejects,
                    note: String::new(),
                    tag_check: None,
                    unknown_key: None,
                    incomplete: None,
                }
                .checked(&b),
            )
        }
        _ => None,
    }?;
    Some(plan.run(old, new))
}

impl Readers<'_> {
    fn tree_max_items(&self, def: &str, field: &str) -> Option<u64> {
        let (stem, text) = self
            .tree
            .texts
            .iter()
            .find(|(s, _)| self.tree.model.file_of(def).is_some_and(|f| f.stem == *s))?;
        let _ = stem;
        let doc: Value = serde_json::from_str(text).ok()?;
        doc.pointer(&format!(
            "/$defs/{def}/properties/{}/maxItems",
            escape_pointer_token(field)
        ))?
        .as_u64()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Rejects,
    Misreads,
    RejectsOrMisreads,
    SilentMisread,
}

#[derive(Debug, Clone)]
enum Edit {
    Remove,
    Set(Value),
}

/// A counterexample to build: a record, where in it the change sits, and what the reader should do.
struct Plan {
    writer: Side,
    kind: String,
    record: Value,
    /// The object (for field edits) or value position the change is about.
    pointer: String,
    /// A sibling key to set as well (a provenance source).
    also: Option<(String, Value)>,
    expect: Expect,
    note: String,
    /// For a union: its name and the tag, to tell whether a reader knows the variant.
    tag_check: Option<(String, String)>,
    /// A struct and a key, to tell whether a reader keeps the key only as an unknown one.
    unknown_key: Option<(String, String)>,
    /// Why the record could not be built whole (a recursive definition, a record too large).
    incomplete: Option<Incomplete>,
}

fn prop<'m>(m: &'m Model, def: &str, field: &str) -> Option<&'m diagwire_schema::model::Prop> {
    match &m.def(def)?.kind {
        DefKind::Struct(s) => s.props.iter().find(|p| p.name == field),
        _ => None,
    }
}

fn int_of(m: &Model, def: &str, field: &str) -> Option<IntWidth> {
    match &prop(m, def, field)?.ty {
        Ty::Int(f) => Some(*f),
        Ty::Vec(i) => match **i {
            Ty::Int(f) => Some(f),
            _ => None,
        },
        _ => None,
    }
}

fn is_vec(m: &Model, def: &str, field: &str) -> bool {
    matches!(prop(m, def, field).map(|p| &p.ty), Some(Ty::Vec(_)))
}

/// An integer the writer's width holds and the reader's does not.
fn beyond(writer: IntWidth, reader: IntWidth) -> Option<Value> {
    let ((wlo, whi), (rlo, rhi)) = (writer.bounds(), reader.bounds());
    let n = if whi > rhi {
        rhi + 1
    } else if wlo < rlo {
        rlo - 1
    } else {
        return None;
    };
    if let Ok(u) = u64::try_from(n) {
        Some(json!(u))
    } else {
        i64::try_from(n).ok().map(|i| json!(i))
    }
}

impl Plan {
    /// A record of the writer's tree whose route reaches `def`, with `field` edited there.
    fn field(
        writer: Side,
        m: &Model,
        def: &str,
        field: &str,
        edit: Edit,
        expect: Expect,
    ) -> Option<Plan> {
        let b = Builder::new(m);
        let (kind, root, hops) = b.route(&Target::Def(def.to_owned()))?;
        let (mut record, pointer) = b.along(&root, &hops);
        let obj = record.pointer_mut(&pointer)?.as_object_mut()?;
        match edit {
            Edit::Remove => {
                obj.remove(field);
            }
            Edit::Set(v) => {
                obj.insert(field.to_owned(), v);
            }
        }
        Some(Plan {
            writer,
            kind,
            record,
            pointer,
            also: None,
            expect,
            note: String::new(),
            tag_check: None,
            unknown_key: None,
            incomplete: None,
        })
        .map(|p| p.checked(&b))
    }

    /// A record of the writer's tree holding `value` where a value of type `def` sits.
    fn type_use(writer: Side, m: &Model, def: &str, value: Value, expect: Expect) -> Option<Plan> {
        let b = Builder::new(m);
        let (kind, root, hops) = b.route(&Target::TypeUse(def.to_owned()))?;
        let (mut record, pointer) = b.along(&root, &hops);
        *record.pointer_mut(&pointer)? = value;
        Some(Plan {
            writer,
            kind,
            record,
            pointer,
            also: None,
            expect,
            note: String::new(),
            tag_check: None,
            unknown_key: None,
            incomplete: None,
        })
        .map(|p| p.checked(&b))
    }

    /// The smallest record of the kind `def` is the definition of.
    fn whole(writer: Side, m: &Model, def: &str, expect: Expect) -> Option<Plan> {
        let kind = m
            .records()
            .into_iter()
            .find(|(_, d)| d.name == def)?
            .0
            .to_owned();
        let b = Builder::new(m);
        Some(Plan {
            writer,
            kind,
            record: b.def_value(def, 0),
            pointer: String::new(),
            also: None,
            expect,
            note: String::new(),
            tag_check: None,
            unknown_key: None,
            incomplete: None,
        })
        .map(|p| p.checked(&b))
    }

    /// A record of the writer's tree holding the variant `tag` of the union `def` (or, for a tag
    /// the union does not know, an object of only that tag).
    fn variant(writer: Side, m: &Model, def: &str, tag: &str, expect: Expect) -> Option<Plan> {
        let b = Builder::new(m);
        let DefKind::Union(u) = &m.def(def)?.kind else {
            return None;
        };
        let tag_key = u.tag.clone();
        let (kind, root, hops) = b.route(&Target::TypeUse(def.to_owned()))?;
        let (mut record, pointer) = b.along(&root, &hops);
        let variant = b.variant_value(def, tag, 0);
        let absorbed = hops.is_empty() || m.def(&root).is_some_and(|d| matches!(&d.kind, DefKind::Struct(s) if s.flatten.as_ref().is_some_and(|f| f.union == def)) && pointer.is_empty());
        let slot = record.pointer_mut(&pointer)?;
        if absorbed {
            // The union's keys sit at this object's level: swap the variant's keys in.
            if let (Value::Object(obj), Value::Object(first)) = (&mut *slot, b.def_value(def, 0)) {
                for k in first.keys() {
                    obj.remove(k);
                }
                if let Value::Object(v) = variant {
                    obj.extend(v);
                } else {
                    obj.insert(tag_key.clone(), json!(tag));
                }
            }
        } else {
            *slot = variant;
        }
        Some(Plan {
            writer,
            kind,
            record,
            pointer,
            also: None,
            expect,
            note: String::new(),
            tag_check: Some((def.to_owned(), tag.to_owned())),
            unknown_key: None,
            incomplete: None,
        })
        .map(|p| p.checked(&b))
    }

    /// The plan, marked incomplete when its builder could not build the record whole.
    fn checked(mut self, b: &Builder<'_>) -> Plan {
        self.incomplete = b.incomplete();
        self
    }

    /// In place of a counterexample: why none was built.
    fn unbuilt(self, why: &Incomplete) -> Counterexample {
        Counterexample {
            kind: self.kind,
            written_by: self.writer,
            ..not_built(why.to_string())
        }
    }

    fn run(mut self, old: &Readers<'_>, new: &Readers<'_>) -> Counterexample {
        if let Some(why) = self.incomplete.clone() {
            return self.unbuilt(&why);
        }
        if let Some((key, value)) = self.also.take()
            && let Some(obj) = self
                .record
                .pointer_mut(&self.pointer)
                .and_then(Value::as_object_mut)
        {
            obj.insert(key, value);
        }
        let (writer, reader) = match self.writer {
            Side::Old => (old, new),
            Side::New => (new, old),
        };
        let own = writer.verdicts(&self.kind, &self.record);
        let verdicts = reader.verdicts(&self.kind, &self.record);
        let own_ok = own.iter().all(|v| v.accepts);
        let refused = verdicts.iter().any(|v| !v.accepts);
        let unknown_variant = self
            .tag_check
            .as_ref()
            .is_some_and(|(union, tag)| !knows_tag(&reader.tree.model, union, tag))
            || self
                .unknown_key
                .as_ref()
                .is_some_and(|(def, key)| prop(&reader.tree.model, def, key).is_none());
        let (confirmed, note) = match self.expect {
            Expect::Rejects => (
                own_ok && refused,
                "the other side's readers refuse it".to_owned(),
            ),
            Expect::RejectsOrMisreads if refused => {
                (own_ok, "the other side's readers refuse it".to_owned())
            }
            Expect::RejectsOrMisreads => (
                own_ok && unknown_variant,
                "the other side's readers take it, but only as an unknown key or variant"
                    .to_owned(),
            ),
            Expect::Misreads | Expect::SilentMisread => {
                (own_ok && !refused, std::mem::take(&mut self.note))
            }
        };
        let note = if self.note.is_empty() {
            note
        } else {
            self.note.clone()
        };
        Counterexample {
            kind: self.kind,
            written_by: self.writer,
            record: self.record,
            verdicts,
            confirmed,
            note,
        }
    }
}

/// Whether the union of that name knows the tag.
fn knows_tag(m: &Model, union: &str, tag: &str) -> bool {
    matches!(m.def(union).map(|d| &d.kind), Some(DefKind::Union(u)) if u.variants.iter().any(|v| v.tag == tag))
}

// ---------------------------------------------------------------------------------------------
// Protobuf counterexamples: a record one side writes, encoded with its descriptor and decoded with the
// other side's, by the codec itself.

/// What a protobuf counterexample looks for in the reader's decoding.
enum Check {
    /// The value at this pointer reads as written.
    Same(String),
    /// A reused field number: the reader's key `old` in the object at `pointer` reads otherwise
    /// than when the writer leaves its key `new` out.
    Reused {
        pointer: String,
        old: String,
        new: String,
    },
    /// A reused variant number: the union value at `pointer` reads as the reader's variant `tag`.
    Tag {
        pointer: String,
        union: String,
        tag: String,
    },
    /// A reused enum value number: the value at the pointer reads as the reader's `value`.
    Is(String, Value),
}

/// Builds and runs the counterexample of a protobuf finding (`PROTO_` rules), with the codec on
/// both sides' descriptors. `om` and `nm` are the models of the trees the sides were rendered from.
pub fn protobuf(
    f: &Finding,
    old: &crate::proto::Side,
    new: &crate::proto::Side,
    om: &Model,
    nm: &Model,
) -> Option<Counterexample> {
    use crate::finding::Kind;
    let Subject::Protobuf(m) = &f.subject else {
        return None;
    };
    // A number only the old table reserved names nothing any reader of this comparison knows.
    if m.reserved {
        return None;
    }
    let rule = *f.rule;
    let writer = if f.rule.old_reader.breaks() {
        Side::New
    } else {
        Side::Old
    };
    let (wm, rm, ws, rs) = match writer {
        Side::New => (nm, om, new, old),
        Side::Old => (om, nm, old, new),
    };
    let reused = m.was.as_ref().map(|(_, name)| name.clone());
    let (plan, check) = match m.kind {
        Kind::Field => {
            if m.name.starts_with('@') {
                return None;
            }
            let p = prop(wm, &m.message, &m.name)?;
            let value = if matches!(
                rule,
                catalog::PROTO_INTEGER_WIDENED | catalog::PROTO_INTEGER_NARROWED
            ) {
                let v = beyond(
                    int_of(wm, &m.message, &m.name)?,
                    int_of(rm, &m.message, &m.name)?,
                )?;
                if is_vec(wm, &m.message, &m.name) {
                    json!([v])
                } else {
                    v
                }
            } else {
                telling(wm, &p.ty)
            };
            let plan = Plan::field(
                writer,
                wm,
                &m.message,
                &m.name,
                Edit::Set(value),
                Expect::Misreads,
            )?;
            let check = match reused {
                Some(was) => Check::Reused {
                    pointer: plan.pointer.clone(),
                    old: was,
                    new: m.name.clone(),
                },
                None => Check::Same(format!(
                    "{}/{}",
                    plan.pointer,
                    escape_pointer_token(&m.name)
                )),
            };
            (plan, check)
        }
        Kind::Variant => {
            let plan = Plan::variant(writer, wm, &m.message, &m.name, Expect::Misreads)?;
            let check = match reused {
                Some(tag) => Check::Tag {
                    pointer: plan.pointer.clone(),
                    union: m.message.clone(),
                    tag,
                },
                None => Check::Same(plan.pointer.clone()),
            };
            (plan, check)
        }
        Kind::Value => {
            let plan = Plan::type_use(writer, wm, &m.message, json!(m.name), Expect::Misreads)?;
            let check = match reused {
                Some(was) => Check::Is(plan.pointer.clone(), json!(was)),
                None => Check::Same(plan.pointer.clone()),
            };
            (plan, check)
        }
        Kind::Message => {
            let value = Builder::new(wm).def_value(&m.message, 0);
            let plan = Plan::type_use(writer, wm, &m.message, value, Expect::Misreads)
                .or_else(|| Plan::whole(writer, wm, &m.message, Expect::Misreads))?;
            let check = Check::Same(plan.pointer.clone());
            (plan, check)
        }
        // Wrapper and tuple messages sit inside a field's value; the field's own finding, if any,
        // carries the counterexample.
        Kind::Item => return None,
    };
    Some(run_protobuf(plan, check, ws, rs, rm))
}

/// A value of `ty` whose protobuf form is written (protobuf leaves zeros out) and tells types apart.
fn telling(m: &Model, ty: &Ty) -> Value {
    match ty {
        Ty::Int(_) => json!(1),
        Ty::Str => json!("x"),
        Ty::F64 => json!(0.5),
        Ty::Bool => json!(true),
        Ty::Json => json!({ "x": 1 }),
        Ty::Vec(i) => json!([telling(m, i)]),
        Ty::Tuple(ts) => Value::Array(ts.iter().map(|t| telling(m, t)).collect()),
        Ty::Ref(_) => Builder::new(m).value(ty),
    }
}

/// `v` without the raw unknown fields the codec keeps (what a reader shows of the record).
fn known(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(k, _)| k != diagwire::proto::UNKNOWN_FIELDS_KEY)
                .map(|(k, v)| (k, known(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(known).collect()),
        v => v,
    }
}

fn shown(v: Option<&Value>) -> String {
    v.map_or_else(|| "absent".to_owned(), Value::to_string)
}

fn place(pointer: &str) -> String {
    if pointer.is_empty() {
        "the record".to_owned()
    } else {
        format!("\u{e000}{pointer}\u{e001}")
    }
}

/// Whether a union value (or the object that absorbs it) is the variant `tag` of `union`.
fn names_tag(m: &Model, union: &str, v: Option<&Value>, tag: &str) -> bool {
    let (Some(DefKind::Union(u)), Some(v)) = (m.def(union).map(|d| &d.kind), v) else {
        return false;
    };
    match u.style {
        UnionStyle::External => v.as_str() == Some(tag) || v.get(tag).is_some(),
        _ => v.get(&u.tag).and_then(Value::as_str) == Some(tag),
    }
}

fn run_protobuf(
    plan: Plan,
    check: Check,
    ws: &crate::proto::Side,
    rs: &crate::proto::Side,
    rm: &Model,
) -> Counterexample {
    use diagwire::proto::{decode, encode};
    if let Some(why) = plan.incomplete.clone() {
        return plan.unbuilt(&why);
    }
    let reader = format!("protobuf descriptor of {}", rs.label);
    let note = format!(
        "encoded with the protobuf descriptor of {} and decoded with that of {}",
        ws.label, rs.label
    );
    let kind = plan.kind.clone();
    let bytes = match encode(&ws.codec, &kind, &plan.record) {
        Ok(b) => b,
        Err(e) => {
            return Counterexample {
                kind,
                written_by: plan.writer,
                record: plan.record,
                verdicts: vec![],
                confirmed: false,
                note: format!("the writer's descriptor cannot encode it: {e}"),
            };
        }
    };
    // The writer must read its own record back as written, or the record shows nothing.
    let own_ok = decode(&ws.codec, &kind, &bytes).is_ok_and(|v| known(v) == plan.record);
    let (verdict, broke) = match decode(&rs.codec, &kind, &bytes) {
        Err(e) => (
            Verdict {
                reader,
                accepts: false,
                detail: e.to_string(),
            },
            true,
        ),
        Ok(read) => {
            let read = known(read);
            let (broke, detail) = match &check {
                Check::Same(p) => {
                    let (got, want) = (read.pointer(p), plan.record.pointer(p));
                    (
                        got != want,
                        format!(
                            "reads {} as {}; the writer wrote {}",
                            place(p),
                            shown(got),
                            shown(want)
                        ),
                    )
                }
                Check::Reused { pointer, old, new } => {
                    let mut without = plan.record.clone();
                    if let Some(obj) = without.pointer_mut(pointer).and_then(Value::as_object_mut) {
                        obj.remove(new);
                    }
                    let control = encode(&ws.codec, &kind, &without)
                        .ok()
                        .and_then(|b| decode(&rs.codec, &kind, &b).ok())
                        .map(known);
                    let key = format!("{pointer}/{}", escape_pointer_token(old));
                    let got = read.pointer(&key);
                    let base = control.as_ref().and_then(|c| c.pointer(&key));
                    (
                        control.is_some() && got != base,
                        format!(
                            "reads the writer's \u{e000}{new}\u{e001} as its own \u{e000}{old}\u{e001}: {} (without \u{e000}{new}\u{e001}: {})",
                            shown(got),
                            shown(base)
                        ),
                    )
                }
                Check::Tag {
                    pointer,
                    union,
                    tag,
                } => {
                    let got = read.pointer(pointer);
                    (
                        names_tag(rm, union, got, tag),
                        format!(
                            "reads {} as its variant \u{e000}{tag}\u{e001}: {}",
                            place(pointer),
                            shown(got)
                        ),
                    )
                }
                Check::Is(p, want) => {
                    let got = read.pointer(p);
                    (
                        got == Some(want),
                        format!("reads {} as {}", place(p), shown(got)),
                    )
                }
            };
            (
                Verdict {
                    reader,
                    accepts: true,
                    detail,
                },
                broke,
            )
        }
    };
    Counterexample {
        kind,
        written_by: plan.writer,
        record: plan.record,
        verdicts: vec![verdict],
        confirmed: own_ok && broke,
        note,
    }
}
