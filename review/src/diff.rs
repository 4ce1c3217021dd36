//! Classifies every difference between two schema trees under a rule of the catalog.
//!
//! The comparison runs on the resolved models (what a field, enum or union *is*), and then a sweep
//! over the schemas' JSON makes sure nothing changed that no finding explains: each finding names
//! the JSON pointers it accounts for, and any other pointer that differs becomes an `UNCLASSIFIED`
//! finding. So a change is never called compatible just because no rule looked at it.

use std::collections::{BTreeMap, BTreeSet};

use diagwire_schema::model::{
    Def, DefKind, Model, Payload, Presence, Prop, StructDef, Style, Ty, UnionDef,
};
use diagwire_schema::ordered::J;
use serde_json::Value;

use crate::catalog::{self, Rule};
use crate::tree::Tree;

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

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
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
    Protobuf(crate::proto::Member),
    /// Nothing a record can show (documentation).
    None,
}

/// Every difference from `old` to `new`, classified, sorted by place then rule.
pub fn diff(old: &Tree, new: &Tree) -> Vec<Finding> {
    let mut cx = Cx {
        old: &old.model,
        new: &new.model,
        raw_old: def_values(old),
        raw_new: def_values(new),
        out: Vec::new(),
    };
    cx.records();
    cx.files();
    let old_defs: BTreeMap<&str, &Def> = old.model.defs().map(|d| (d.name.as_str(), d)).collect();
    let new_defs: BTreeMap<&str, &Def> = new.model.defs().map(|d| (d.name.as_str(), d)).collect();
    for (name, d) in &new_defs {
        match old_defs.get(name) {
            None => cx.push(
                catalog::TYPE_ADDED,
                name,
                None,
                format!("`{name}` is new"),
                vec![],
                Subject::Def(name.to_string()),
            ),
            Some(o) => cx.def(o, d),
        }
    }
    for name in old_defs.keys() {
        if !new_defs.contains_key(name) {
            cx.push_old(
                catalog::TYPE_REMOVED,
                name,
                None,
                format!("`{name}` is gone"),
                Subject::Def(name.to_string()),
            );
        }
    }
    let mut out = cx.out;
    out.extend(unclassified(old, new, &out));
    out.sort_by(|a, b| (&a.at, a.rule.id).cmp(&(&b.at, b.rule.id)));
    out
}

struct Cx<'a> {
    old: &'a Model,
    new: &'a Model,
    raw_old: BTreeMap<String, Value>,
    raw_new: BTreeMap<String, Value>,
    out: Vec<Finding>,
}

fn stem_of(m: &Model, def: &str) -> String {
    m.file_of(def).map(|f| f.stem.clone()).unwrap_or_default()
}

impl Cx<'_> {
    fn push(
        &mut self,
        rule: Rule,
        def: &str,
        member: Option<&str>,
        detail: String,
        explains: Vec<&str>,
        subject: Subject,
    ) {
        let rule = catalog::rule(rule.id).expect("OK because every rule is in the catalog");
        let explains = explains
            .iter()
            .map(|p| (def.to_owned(), (*p).to_owned()))
            .collect();
        self.out.push(Finding {
            rule,
            at: At {
                schema: stem_of(self.new, def),
                def: def.to_owned(),
                member: member.map(str::to_owned),
            },
            detail,
            explains,
            subject,
        });
    }

    fn push_old(
        &mut self,
        rule: Rule,
        def: &str,
        member: Option<&str>,
        detail: String,
        subject: Subject,
    ) {
        let rule = catalog::rule(rule.id).expect("OK because every rule is in the catalog");
        self.out.push(Finding {
            rule,
            at: At {
                schema: stem_of(self.old, def),
                def: def.to_owned(),
                member: member.map(str::to_owned),
            },
            detail,
            explains: vec![],
            subject,
        });
    }

    fn records(&mut self) {
        let old: BTreeMap<&str, &str> = self
            .old
            .records()
            .into_iter()
            .map(|(k, d)| (k, d.name.as_str()))
            .collect();
        let new: BTreeMap<&str, &str> = self
            .new
            .records()
            .into_iter()
            .map(|(k, d)| (k, d.name.as_str()))
            .collect();
        for (kind, def) in &new {
            if old.get(kind) != Some(def) {
                if let Some(prev) = old.get(kind) {
                    self.push(
                        catalog::TYPE_KIND_CHANGED,
                        def,
                        None,
                        format!("record kind `{kind}` is now `{def}`, was `{prev}`"),
                        vec!["/x-record"],
                        Subject::Record(kind.to_string()),
                    );
                } else {
                    self.push(
                        catalog::RECORD_KIND_ADDED,
                        def,
                        None,
                        format!("record kind `{kind}` is new"),
                        vec!["/x-record"],
                        Subject::Record(kind.to_string()),
                    );
                }
            }
        }
        for (kind, def) in &old {
            if !new.contains_key(kind) {
                let mut f = Finding {
                    rule: catalog::rule("RECORD_KIND_REMOVED").expect("in the catalog"),
                    at: At {
                        schema: stem_of(self.old, def),
                        def: def.to_string(),
                        member: None,
                    },
                    detail: format!("record kind `{kind}` is gone"),
                    explains: vec![],
                    subject: Subject::Record(kind.to_string()),
                };
                if self.new.def(def).is_some() {
                    f.explains.push((def.to_string(), "/x-record".into()));
                }
                self.out.push(f);
            }
        }
    }

    fn files(&mut self) {
        for f in &self.new.files {
            if let Some(o) = self.old.files.iter().find(|o| o.stem == f.stem) {
                if o.title != f.title || o.description != f.description {
                    self.out.push(Finding {
                        rule: catalog::rule("DESCRIPTION_CHANGED").expect("in the catalog"),
                        at: At {
                            schema: f.stem.clone(),
                            def: String::new(),
                            member: None,
                        },
                        detail: format!("the title or description of `{}` changed", f.stem),
                        explains: vec![],
                        subject: Subject::None,
                    });
                }
            }
        }
    }

    fn def(&mut self, o: &Def, d: &Def) {
        let name = d.name.as_str();
        if stem_of(self.old, name) != stem_of(self.new, name) {
            self.push(
                catalog::TYPE_MOVED,
                name,
                None,
                format!(
                    "`{name}` moved from `{}` to `{}`",
                    stem_of(self.old, name),
                    stem_of(self.new, name)
                ),
                vec![],
                Subject::Def(name.into()),
            );
        }
        if o.description != d.description {
            self.push(
                catalog::DESCRIPTION_CHANGED,
                name,
                None,
                format!("the description of `{name}` changed"),
                vec!["/description", "/title"],
                Subject::None,
            );
        }
        match (&o.kind, &d.kind) {
            (DefKind::Struct(a), DefKind::Struct(b)) => self.structs(name, a, b),
            (
                DefKind::Enum {
                    values: va,
                    open: oa,
                },
                DefKind::Enum {
                    values: vb,
                    open: ob,
                },
            ) => self.enums(name, va, *oa, vb, *ob),
            (DefKind::Union(a), DefKind::Union(b)) => self.unions(name, a, b),
            (DefKind::NodeId, DefKind::NodeId) | (DefKind::NodeIdHex, DefKind::NodeIdHex) => {}
            (DefKind::Array(a), DefKind::Array(b)) => {
                if a != b {
                    self.push(
                        catalog::FIELD_TYPE_CHANGED,
                        name,
                        None,
                        format!(
                            "the items of `{name}` are now {}, were {}",
                            ty_name(b),
                            ty_name(a)
                        ),
                        vec!["/items"],
                        Subject::Def(name.into()),
                    );
                }
            }
            _ => self.push(
                catalog::TYPE_KIND_CHANGED,
                name,
                None,
                format!("`{name}` is now {}, was {}", form(&d.kind), form(&o.kind)),
                vec![""],
                Subject::Def(name.into()),
            ),
        }
    }

    fn structs(&mut self, name: &str, a: &StructDef, b: &StructDef) {
        let old: BTreeMap<&str, &Prop> = a.props.iter().map(|p| (p.name.as_str(), p)).collect();
        let new: BTreeMap<&str, &Prop> = b.props.iter().map(|p| (p.name.as_str(), p)).collect();
        let mut added: Vec<&Prop> = b
            .props
            .iter()
            .filter(|p| !old.contains_key(p.name.as_str()))
            .collect();
        let mut removed: Vec<&Prop> = a
            .props
            .iter()
            .filter(|p| !new.contains_key(p.name.as_str()))
            .collect();
        // A removed and an added field of the same type and presence are one rename.
        let mut renames = Vec::new();
        removed.retain(|r| {
            match added
                .iter()
                .position(|n| n.ty == r.ty && n.presence == r.presence)
            {
                Some(i) if removed_count_of(&added, r) == 1 => {
                    renames.push((*r, added.remove(i)));
                    false
                }
                _ => true,
            }
        });
        for (r, n) in renames {
            let (ro, no) = (
                format!("/properties/{}", esc(&r.name)),
                format!("/properties/{}", esc(&n.name)),
            );
            self.push(
                catalog::FIELD_RENAMED,
                name,
                Some(&n.name),
                format!("`{name}.{}` is now `{}`", r.name, n.name),
                vec![&ro, &no, "/required"],
                Subject::Field {
                    def: name.into(),
                    field: n.name.clone(),
                },
            );
        }
        for n in added {
            let p = format!("/properties/{}", esc(&n.name));
            let (rule, what) = if n.presence == Presence::Required {
                (catalog::FIELD_ADDED_REQUIRED, "required")
            } else {
                (catalog::FIELD_ADDED_OPTIONAL, presence_name(n.presence))
            };
            self.push(
                rule,
                name,
                Some(&n.name),
                format!("`{name}.{}` is new ({what})", n.name),
                vec![&p, "/required"],
                Subject::Field {
                    def: name.into(),
                    field: n.name.clone(),
                },
            );
        }
        for r in removed {
            let rule = if r.presence == Presence::Required {
                catalog::FIELD_REMOVED_REQUIRED
            } else {
                catalog::FIELD_REMOVED_OPTIONAL
            };
            let p = format!("/properties/{}", esc(&r.name));
            self.push(
                rule,
                name,
                Some(&r.name),
                format!("`{name}.{}` is gone", r.name),
                vec![&p, "/required"],
                Subject::Field {
                    def: name.into(),
                    field: r.name.clone(),
                },
            );
        }
        for n in &b.props {
            if let Some(o) = old.get(n.name.as_str()) {
                self.field(name, o, n);
            }
        }
        // Constructor arguments follow the order of the required fields.
        let order = |props: &[Prop], other: &BTreeMap<&str, &Prop>| -> Vec<String> {
            props
                .iter()
                .filter(|p| {
                    p.presence == Presence::Required
                        && other
                            .get(p.name.as_str())
                            .is_some_and(|q| q.presence == Presence::Required)
                })
                .map(|p| p.name.clone())
                .collect()
        };
        let (ro, rn) = (order(&a.props, &new), order(&b.props, &old));
        if ro != rn {
            self.push(
                catalog::REQUIRED_FIELDS_REORDERED,
                name,
                None,
                format!(
                    "the required fields of `{name}` are now ({}), were ({})",
                    rn.join(", "),
                    ro.join(", ")
                ),
                vec!["/required"],
                Subject::Def(name.into()),
            );
        } else {
            let all = |props: &[Prop], other: &BTreeMap<&str, &Prop>| -> Vec<String> {
                props
                    .iter()
                    .filter(|p| other.contains_key(p.name.as_str()))
                    .map(|p| p.name.clone())
                    .collect()
            };
            if all(&a.props, &new) != all(&b.props, &old) {
                self.push(
                    catalog::ORDER_CHANGED,
                    name,
                    None,
                    format!("the fields of `{name}` are in another order"),
                    vec![],
                    Subject::None,
                );
            }
        }
        let ua = a.flatten.as_ref().map(|f| &f.union);
        let ub = b.flatten.as_ref().map(|f| &f.union);
        if ua != ub {
            self.push(
                catalog::FLATTEN_CHANGED,
                name,
                None,
                format!(
                    "the union `{name}` absorbs is now {}, was {}",
                    ub.map_or("none".to_string(), |u| format!("`{u}`")),
                    ua.map_or("none".to_string(), |u| format!("`{u}`"))
                ),
                vec!["/allOf", "/x-flatten"],
                Subject::Def(name.into()),
            );
        } else if let (Some(fa), Some(fb)) = (&a.flatten, &b.flatten) {
            if fa.field != fb.field {
                self.push(
                    catalog::FLATTEN_FIELD_RENAMED,
                    name,
                    None,
                    format!(
                        "the Rust field holding `{}` is now `{}`, was `{}`",
                        fb.union, fb.field, fa.field
                    ),
                    vec!["/x-flatten"],
                    Subject::None,
                );
            }
        }
    }

    fn field(&mut self, def: &str, o: &Prop, n: &Prop) {
        let p = format!("/properties/{}", esc(&n.name));
        let at = |k: &str| format!("{p}/{k}");
        let subject = || Subject::Field {
            def: def.into(),
            field: n.name.clone(),
        };
        let f = &n.name;
        if o.presence != n.presence {
            use Presence::*;
            let rule = match (o.presence, n.presence) {
                (Required, _) => catalog::FIELD_REQUIRED_TO_OPTIONAL,
                (_, Required) => catalog::FIELD_OPTIONAL_TO_REQUIRED,
                (Nullable | Omittable, Nullable | Omittable)
                | (Default | SkipDefault, Default | SkipDefault) => {
                    catalog::FIELD_PRESENCE_SPELLING_CHANGED
                }
                (Nullable | Omittable, _) => catalog::FIELD_PRESENCE_DEFAULTED,
                _ => catalog::FIELD_PRESENCE_UNDEFAULTED,
            };
            self.push(
                rule,
                def,
                Some(f),
                format!(
                    "`{def}.{f}` is now {}, was {}",
                    presence_name(n.presence),
                    presence_name(o.presence)
                ),
                vec![
                    "/required",
                    &at("x-presence"),
                    &at("type"),
                    &at("anyOf"),
                    &at("default"),
                    &at("x-absent"),
                    &at("$ref"),
                ],
                subject(),
            );
        }
        if o.ty != n.ty {
            let rule = match width_change(&o.ty, &n.ty) {
                Some(std::cmp::Ordering::Greater) => catalog::INTEGER_WIDENED,
                Some(std::cmp::Ordering::Less) => catalog::INTEGER_NARROWED,
                _ => catalog::FIELD_TYPE_CHANGED,
            };
            self.push(
                rule,
                def,
                Some(f),
                format!(
                    "`{def}.{f}` is now {}, was {}",
                    ty_name(&n.ty),
                    ty_name(&o.ty)
                ),
                vec![
                    &at("type"),
                    &at("format"),
                    &at("minimum"),
                    &at("maximum"),
                    &at("items"),
                    &at("$ref"),
                    &at("anyOf"),
                    &at("prefixItems"),
                    &at("minItems"),
                    &at("x-json"),
                    &at("default"),
                    &at("x-unit"),
                ],
                subject(),
            );
        }
        // The one bound the profile allows besides the widths: a writer-kept array length.
        let bound = "maxItems";
        let read = |raw: &BTreeMap<String, Value>| {
            raw.get(def)
                .and_then(|v| v.pointer(&format!("{p}/{bound}")))
                .and_then(Value::as_u64)
        };
        let (ob, nb) = (read(&self.raw_old), read(&self.raw_new));
        let tighter = match (ob, nb) {
            (None, Some(_)) => Some(true),
            (Some(_), None) => Some(false),
            (Some(x), Some(y)) if y < x => Some(true),
            (Some(x), Some(y)) if y > x => Some(false),
            _ => None,
        };
        if let Some(tighter) = tighter {
            let rule = if tighter {
                catalog::BOUND_ADDED
            } else {
                catalog::BOUND_LOOSENED
            };
            self.push(
                rule,
                def,
                Some(f),
                format!(
                    "`{def}.{f}` `{bound}` is now {}, was {}",
                    stated(nb),
                    stated(ob)
                ),
                vec![&at(bound)],
                subject(),
            );
        }
        let numeric = |t: &Ty| {
            matches!(t, Ty::Int(_) | Ty::F64)
                || matches!(t, Ty::Vec(i) if matches!(**i, Ty::Int(_) | Ty::F64))
        };
        if o.unit != n.unit && numeric(&o.ty) && numeric(&n.ty) {
            let same = match (&o.unit, &n.unit) {
                (Some(a), Some(b)) => diagwire_schema::units::same_quantity(a, b),
                _ => false,
            };
            self.push(
                if same {
                    catalog::UNIT_RESPELLED
                } else {
                    catalog::UNIT_CHANGED
                },
                def,
                Some(f),
                format!(
                    "`{def}.{f}` is now in {}, was in {}",
                    n.unit.as_deref().unwrap_or("no unit"),
                    o.unit.as_deref().unwrap_or("no unit")
                ),
                vec![&at("x-unit")],
                subject(),
            );
        }
        let (os, og) = o
            .provenance
            .as_ref()
            .map_or((None, None), |pv| (pv.source.clone(), pv.gap.clone()));
        let (ns, ng) = n
            .provenance
            .as_ref()
            .map_or((None, None), |pv| (pv.source.clone(), pv.gap.clone()));
        let lost = (os.is_some() && os != ns) || (og.is_some() && og != ng);
        let gained = (ns.is_some() && ns != os) || (ng.is_some() && ng != og);
        let moved = discriminator_change(("source field", &os, &ns), ("gap", &og, &ng));
        if lost {
            self.push(
                catalog::PROVENANCE_NARROWED,
                def,
                Some(f),
                format!("`{def}.{f}` lost its absence discriminator: {moved}"),
                vec![&at("x-provenance")],
                subject(),
            );
        } else if gained {
            self.push(
                catalog::PROVENANCE_WIDENED,
                def,
                Some(f),
                format!("`{def}.{f}` gained an absence discriminator: {moved}"),
                vec![&at("x-provenance")],
                subject(),
            );
        }
        match (&o.derived, &n.derived) {
            (None, Some(how)) => {
                let rule = if ns.is_some() {
                    catalog::FIELD_BECAME_DERIVED_DISCRIMINATED
                } else {
                    catalog::FIELD_BECAME_DERIVED
                };
                self.push(
                    rule,
                    def,
                    Some(f),
                    format!("`{def}.{f}` is now derived: {how}"),
                    vec![&at("x-derived")],
                    subject(),
                );
            }
            (Some(_), None) => self.push(
                catalog::FIELD_BECAME_REPORTED,
                def,
                Some(f),
                format!("`{def}.{f}` is now reported, no longer derived"),
                vec![&at("x-derived")],
                subject(),
            ),
            (Some(a), Some(b)) if a != b => self.push(
                catalog::DESCRIPTION_CHANGED,
                def,
                Some(f),
                format!("how `{def}.{f}` is derived is described differently"),
                vec![&at("x-derived")],
                Subject::None,
            ),
            _ => {}
        }
        let both_optional = o.presence != Presence::Required && n.presence != Presence::Required;
        if o.description != n.description || (both_optional && o.absent != n.absent) {
            self.push(
                catalog::DESCRIPTION_CHANGED,
                def,
                Some(f),
                format!("the description of `{def}.{f}` changed"),
                vec![&at("description"), &at("x-absent"), &at("examples")],
                Subject::None,
            );
        }
    }

    fn enums(&mut self, name: &str, va: &[String], oa: bool, vb: &[String], ob: bool) {
        let sa: BTreeSet<&String> = va.iter().collect();
        let sb: BTreeSet<&String> = vb.iter().collect();
        for v in vb.iter().filter(|v| !sa.contains(v)) {
            let rule = if ob {
                catalog::ENUM_VALUE_ADDED_OPEN
            } else {
                catalog::ENUM_VALUE_ADDED_CLOSED
            };
            self.push(
                rule,
                name,
                Some(v),
                format!("`{name}` has the new value `{v}`"),
                vec!["/enum", "/x-open-enum"],
                Subject::Value {
                    def: name.into(),
                    value: v.clone(),
                },
            );
        }
        for v in va.iter().filter(|v| !sb.contains(v)) {
            let rule = if ob {
                catalog::ENUM_VALUE_REMOVED_OPEN
            } else {
                catalog::ENUM_VALUE_REMOVED_CLOSED
            };
            self.push(
                rule,
                name,
                Some(v),
                format!("`{name}` lost the value `{v}`"),
                vec!["/enum", "/x-open-enum"],
                Subject::Value {
                    def: name.into(),
                    value: v.clone(),
                },
            );
        }
        if oa != ob {
            let rule = if ob {
                catalog::ENUM_OPENED
            } else {
                catalog::ENUM_CLOSED
            };
            self.push(
                rule,
                name,
                None,
                format!("`{name}` is now {}", if ob { "open" } else { "closed" }),
                vec!["/enum", "/x-open-enum"],
                Subject::Def(name.into()),
            );
        }
        let common_a: Vec<&String> = va.iter().filter(|v| sb.contains(v)).collect();
        let common_b: Vec<&String> = vb.iter().filter(|v| sa.contains(v)).collect();
        if common_a != common_b {
            self.push(
                catalog::ORDER_CHANGED,
                name,
                None,
                format!("the values of `{name}` are in another order"),
                vec!["/enum", "/x-open-enum"],
                Subject::None,
            );
        }
    }

    fn unions(&mut self, name: &str, a: &UnionDef, b: &UnionDef) {
        let all = vec!["/x-union", "/oneOf"];
        if a.style != b.style || a.content != b.content {
            self.push(
                catalog::UNION_STYLE_CHANGED,
                name,
                None,
                format!("`{name}` is now {}, was {}", union_style(b), union_style(a)),
                all.clone(),
                Subject::Def(name.into()),
            );
            return;
        }
        if a.tag != b.tag {
            let mut f_explains: Vec<(String, String)> = all
                .iter()
                .map(|p| (name.to_owned(), (*p).to_owned()))
                .collect();
            // The variants declare the tag as a constant under the tag key.
            for v in a.variants.iter().chain(&b.variants) {
                if let Payload::Def(d) = &v.payload {
                    for key in [&a.tag, &b.tag] {
                        f_explains.push((d.clone(), format!("/properties/{}", esc(key))));
                    }
                    f_explains.push((d.clone(), "/required".into()));
                }
            }
            self.out.push(Finding {
                rule: catalog::rule("UNION_TAG_KEY_CHANGED").expect("in the catalog"),
                at: At {
                    schema: stem_of(self.new, name),
                    def: name.into(),
                    member: None,
                },
                detail: format!(
                    "the tag of `{name}` is now under `{}`, was `{}`",
                    b.tag, a.tag
                ),
                explains: f_explains,
                subject: Subject::Def(name.into()),
            });
        }
        if a.open != b.open {
            let rule = if b.open {
                catalog::UNION_OPENED
            } else {
                catalog::UNION_CLOSED
            };
            self.push(
                rule,
                name,
                None,
                format!("`{name}` is now {}", if b.open { "open" } else { "closed" }),
                all.clone(),
                Subject::Def(name.into()),
            );
        }
        // Internal variants are matched by the struct they carry, so a renamed tag is one change.
        let key = |v: &diagwire_schema::model::Variant| match (&v.payload, a.style) {
            (Payload::Def(d), Style::Internal) => d.clone(),
            _ => v.tag.clone(),
        };
        let old: BTreeMap<String, &diagwire_schema::model::Variant> =
            a.variants.iter().map(|v| (key(v), v)).collect();
        let new: BTreeMap<String, &diagwire_schema::model::Variant> =
            b.variants.iter().map(|v| (key(v), v)).collect();
        for (k, v) in &new {
            match old.get(k) {
                None => {
                    let rule = if b.open {
                        catalog::UNION_VARIANT_ADDED_OPEN
                    } else {
                        catalog::UNION_VARIANT_ADDED_CLOSED
                    };
                    self.push(
                        rule,
                        name,
                        Some(&v.tag),
                        format!("`{name}` has the new variant `{}`", v.tag),
                        all.clone(),
                        Subject::Variant {
                            def: name.into(),
                            tag: v.tag.clone(),
                            old_tag: None,
                        },
                    );
                }
                Some(o) => {
                    if o.tag != v.tag {
                        let mut explains = all.clone();
                        let tag_const = format!("/properties/{}/const", esc(&b.tag));
                        if let Payload::Def(d) = &v.payload {
                            self.out.push(Finding {
                                rule: catalog::rule("UNION_TAG_VALUE_CHANGED")
                                    .expect("in the catalog"),
                                at: At {
                                    schema: stem_of(self.new, name),
                                    def: name.into(),
                                    member: Some(v.tag.clone()),
                                },
                                detail: format!(
                                    "the `{name}` variant `{}` is now tagged `{}`",
                                    o.tag, v.tag
                                ),
                                explains: vec![
                                    (name.into(), "/x-union".into()),
                                    (name.into(), "/oneOf".into()),
                                    (d.clone(), tag_const),
                                ],
                                subject: Subject::Variant {
                                    def: name.into(),
                                    tag: v.tag.clone(),
                                    old_tag: Some(o.tag.clone()),
                                },
                            });
                            continue;
                        }
                        explains.push("/oneOf");
                        self.push(
                            catalog::UNION_TAG_VALUE_CHANGED,
                            name,
                            Some(&v.tag),
                            format!("the `{name}` variant `{}` is now tagged `{}`", o.tag, v.tag),
                            explains,
                            Subject::Variant {
                                def: name.into(),
                                tag: v.tag.clone(),
                                old_tag: Some(o.tag.clone()),
                            },
                        );
                    } else if let (Payload::Ty(ta), Payload::Ty(tb)) = (&o.payload, &v.payload) {
                        if ta != tb {
                            self.push(
                                catalog::FIELD_TYPE_CHANGED,
                                name,
                                Some(&v.tag),
                                format!(
                                    "the `{name}` variant `{}` now carries {}, carried {}",
                                    v.tag,
                                    ty_name(tb),
                                    ty_name(ta)
                                ),
                                all.clone(),
                                Subject::Variant {
                                    def: name.into(),
                                    tag: v.tag.clone(),
                                    old_tag: None,
                                },
                            );
                        }
                    } else if std::mem::discriminant(&o.payload)
                        != std::mem::discriminant(&v.payload)
                    {
                        self.push(
                            catalog::FIELD_TYPE_CHANGED,
                            name,
                            Some(&v.tag),
                            format!("the `{name}` variant `{}` changed what it carries", v.tag),
                            all.clone(),
                            Subject::Variant {
                                def: name.into(),
                                tag: v.tag.clone(),
                                old_tag: None,
                            },
                        );
                    }
                }
            }
        }
        for (k, v) in &old {
            if !new.contains_key(k) {
                self.push(
                    catalog::UNION_VARIANT_REMOVED,
                    name,
                    Some(&v.tag),
                    format!("`{name}` lost the variant `{}`", v.tag),
                    all.clone(),
                    Subject::Variant {
                        def: name.into(),
                        tag: v.tag.clone(),
                        old_tag: None,
                    },
                );
            }
        }
        let order = |vs: &[diagwire_schema::model::Variant],
                     other: &BTreeMap<String, &diagwire_schema::model::Variant>|
         -> Vec<String> {
            vs.iter()
                .map(key)
                .filter(|k| other.contains_key(k))
                .collect()
        };
        if order(&a.variants, &new) != order(&b.variants, &old) {
            self.push(
                catalog::ORDER_CHANGED,
                name,
                None,
                format!("the variants of `{name}` are in another order"),
                all,
                Subject::None,
            );
        }
    }
}

fn removed_count_of(added: &[&Prop], r: &Prop) -> usize {
    added
        .iter()
        .filter(|n| n.ty == r.ty && n.presence == r.presence)
        .count()
}

/// Compares two integer types (also inside arrays): `Greater` when the new range holds the old
/// one, `Less` when the old holds the new, `None` when they are not both integers or overlap only.
fn width_change(old: &Ty, new: &Ty) -> Option<std::cmp::Ordering> {
    match (old, new) {
        (Ty::Int(a), Ty::Int(b)) => {
            let ((alo, ahi), (blo, bhi)) = (a.bounds(), b.bounds());
            if blo <= alo && bhi >= ahi {
                Some(std::cmp::Ordering::Greater)
            } else if alo <= blo && ahi >= bhi {
                Some(std::cmp::Ordering::Less)
            } else {
                None
            }
        }
        (Ty::Vec(a), Ty::Vec(b)) => width_change(a, b),
        _ => None,
    }
}

fn presence_name(p: Presence) -> &'static str {
    match p {
        Presence::Required => "required",
        Presence::Nullable => "nullable",
        Presence::Omittable => "omittable",
        Presence::Default => "default",
        Presence::SkipDefault => "skip-default",
    }
}

fn form(k: &DefKind) -> &'static str {
    match k {
        DefKind::Struct(_) => "a struct",
        DefKind::Enum { open: true, .. } => "an open enum",
        DefKind::Enum { .. } => "a closed enum",
        DefKind::Union(_) => "a union",
        DefKind::NodeId => "a byte-array node id",
        DefKind::NodeIdHex => "a hex node id",
        DefKind::Array(_) => "an array record",
    }
}

/// A type as a reader would name it.
pub fn ty_name(t: &Ty) -> String {
    match t {
        Ty::Str => "a string".into(),
        Ty::Int(f) => format!("a {}", f.schema()),
        Ty::F64 => "a double".into(),
        Ty::Bool => "a boolean".into(),
        Ty::Json => "any JSON".into(),
        Ty::Ref(n) => format!("`{n}`"),
        Ty::Vec(i) => format!("an array of {}", ty_name(i)),
        Ty::Tuple(ts) => format!(
            "a tuple ({})",
            ts.iter().map(ty_name).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Escapes one JSON pointer token.
pub fn esc(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

// ---------------------------------------------------------------------------------------------
// The sweep: every JSON difference must be explained by a finding.

/// The definitions of a tree as JSON values, by name, with references normalized to the name they
/// point at (a definition moving between files changes its references' text, not their meaning)
/// and `required` as a sorted set.
fn def_values(tree: &Tree) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for (stem, text) in &tree.texts {
        let Ok(doc) = serde_json::from_str::<J>(text) else {
            continue;
        };
        let _ = stem;
        if let Some(defs) = doc.get("$defs").and_then(J::as_obj) {
            for (name, def) in defs {
                let mut v = def.to_value();
                normalize(&mut v);
                out.insert(name.clone(), v);
            }
        }
    }
    out
}

fn normalize(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref") {
                if let Some((_, name)) = r.rsplit_once("#/$defs/") {
                    *r = name.to_owned();
                }
            }
            if let Some(Value::Array(req)) = map.get_mut("required") {
                req.sort_by_key(|x| x.to_string());
            }
            for (_, x) in map.iter_mut() {
                normalize(x);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        _ => {}
    }
}

/// Pointers where `a` and `b` differ. Objects are compared key by key; arrays as a whole.
fn differences(a: Option<&Value>, b: Option<&Value>, ptr: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                differences(x.get(k), y.get(k), &format!("{ptr}/{}", esc(k)), out);
            }
        }
        (x, y) if x == y => {}
        _ => out.push(ptr.to_owned()),
    }
}

fn unclassified(old: &Tree, new: &Tree, found: &[Finding]) -> Vec<Finding> {
    let (a, b) = (def_values(old), def_values(new));
    let mut out = Vec::new();
    for (name, nv) in &b {
        let Some(ov) = a.get(name) else { continue };
        // A definition that changed form is explained as a whole.
        if found
            .iter()
            .any(|f| f.at.def == *name && f.rule.id == "TYPE_KIND_CHANGED")
        {
            continue;
        }
        let mut diffs = Vec::new();
        differences(Some(ov), Some(nv), "", &mut diffs);
        for d in diffs {
            let explained = found.iter().any(|f| {
                f.explains
                    .iter()
                    .any(|(def, p)| def == name && (d == *p || d.starts_with(&format!("{p}/"))))
            });
            if explained {
                continue;
            }
            // The profile's documentation keys never change what a reader does.
            let last = d.rsplit('/').next().unwrap_or_default();
            if matches!(last, "description" | "title" | "examples" | "x-absent") {
                out.push(Finding {
                    rule: catalog::rule("DESCRIPTION_CHANGED").expect("in the catalog"),
                    at: At {
                        schema: stem_of(&new.model, name),
                        def: name.clone(),
                        member: None,
                    },
                    detail: format!("the documentation of `{name}` changed at `{d}`"),
                    explains: vec![(name.clone(), d)],
                    subject: Subject::None,
                });
                continue;
            }
            {
                out.push(Finding {
                    rule: catalog::rule("UNCLASSIFIED").expect("in the catalog"),
                    at: At {
                        schema: stem_of(&new.model, name),
                        def: name.clone(),
                        member: None,
                    },
                    detail: format!("`{name}` changed at `{d}` and no rule classifies it"),
                    explains: vec![(name.clone(), d)],
                    subject: Subject::None,
                });
            }
        }
    }
    out
}

/// A bound as a reviewer reads it: its value, or "absent".
fn stated<T: std::fmt::Display>(bound: Option<T>) -> String {
    bound.map_or_else(|| "absent".to_string(), |b| b.to_string())
}

/// What changed of a field's absence discriminator, as a reader would say it: "source field none →
/// `stats_source`", each part that changed.
fn discriminator_change(
    source: (&str, &Option<String>, &Option<String>),
    gap: (&str, &Option<String>, &Option<String>),
) -> String {
    let shown = |v: &Option<String>| v.as_ref().map_or("none".to_owned(), |s| format!("`{s}`"));
    [source, gap]
        .iter()
        .filter(|(_, o, n)| o != n)
        .map(|(what, o, n)| format!("{what} {} → {}", shown(o), shown(n)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A union's style as the report says it: "an adjacent union (content key `fields`)".
fn union_style(u: &UnionDef) -> String {
    let style = format!("{:?}", u.style).to_lowercase();
    let article = if style.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    match &u.content {
        Some(c) => format!("{article} {style} union (content key `{c}`)"),
        None => format!("{article} {style} union"),
    }
}
