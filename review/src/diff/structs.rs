//! The comparison of two structs: fields added, removed and renamed, the order of the required
//! fields (a constructor's arguments), and the union the struct absorbs. A field both have is
//! compared by [`super::field`].

use std::collections::BTreeMap;

use diagwire_runtime::shape::escape_pointer_token;
use diagwire_schema::model::{Presence, Prop, StructDef};

use super::Cx;
use crate::catalog;
use crate::finding::Subject;

/// A struct's fields by JSON key.
type ByName<'a> = BTreeMap<&'a str, &'a Prop>;

impl Cx<'_> {
    pub(super) fn structs(&mut self, name: &str, a: &StructDef, b: &StructDef) {
        let old: ByName = a.props.iter().map(|p| (p.name.as_str(), p)).collect();
        let new: ByName = b.props.iter().map(|p| (p.name.as_str(), p)).collect();
        self.membership(name, a, b, &old, &new);
        for n in &b.props {
            if let Some(o) = old.get(n.name.as_str()) {
                self.field(name, o, n);
            }
        }
        self.order(name, a, b, &old, &new);
        self.flatten(name, a, b);
    }

    /// Fields added, removed, or renamed (a removed and an added field of the same type and
    /// presence, when only one added field fits).
    fn membership(&mut self, name: &str, a: &StructDef, b: &StructDef, old: &ByName, new: &ByName) {
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
        let mut renames = Vec::new();
        removed.retain(|r| {
            match added
                .iter()
                .position(|n| n.ty == r.ty && n.presence == r.presence)
            {
                Some(i) if same_shape_count(&added, r) == 1 => {
                    renames.push((*r, added.remove(i)));
                    false
                }
                _ => true,
            }
        });
        for (r, n) in renames {
            let (ro, no) = (property(&r.name), property(&n.name));
            self.push(
                &catalog::FIELD_RENAMED,
                name,
                Some(&n.name),
                format!(
                    "\u{e000}{name}.{}\u{e001} is now \u{e000}{}\u{e001}",
                    r.name, n.name
                ),
                vec![&ro, &no, "/required"],
                field_subject(name, &n.name),
            );
        }
        for n in added {
            let (rule, what) = if n.presence == Presence::Required {
                (&catalog::FIELD_ADDED_REQUIRED, "required")
            } else {
                (&catalog::FIELD_ADDED_OPTIONAL, n.presence.name())
            };
            self.push(
                rule,
                name,
                Some(&n.name),
                format!("\u{e000}{name}.{}\u{e001} is new ({what})", n.name),
                vec![&property(&n.name), "/required"],
                field_subject(name, &n.name),
            );
        }
        for r in removed {
            let rule = if r.presence == Presence::Required {
                &catalog::FIELD_REMOVED_REQUIRED
            } else {
                &catalog::FIELD_REMOVED_OPTIONAL
            };
            self.push(
                rule,
                name,
                Some(&r.name),
                format!("\u{e000}{name}.{}\u{e001} is gone", r.name),
                vec![&property(&r.name), "/required"],
                field_subject(name, &r.name),
            );
        }
    }

    /// The order of the required fields both sides require (a constructor's arguments follow it),
    /// else of the fields both sides have.
    fn order(&mut self, name: &str, a: &StructDef, b: &StructDef, old: &ByName, new: &ByName) {
        let required = |props: &[Prop], other: &ByName| -> Vec<String> {
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
        let (ro, rn) = (required(&a.props, new), required(&b.props, old));
        if ro != rn {
            self.push(
                &catalog::REQUIRED_FIELDS_REORDERED,
                name,
                None,
                format!(
                    "the required fields of \u{e000}{name}\u{e001} are now ({}), were ({})",
                    rn.join(", "),
                    ro.join(", ")
                ),
                vec!["/required"],
                Subject::Def(name.into()),
            );
            return;
        }
        let common = |props: &[Prop], other: &ByName| -> Vec<String> {
            props
                .iter()
                .filter(|p| other.contains_key(p.name.as_str()))
                .map(|p| p.name.clone())
                .collect()
        };
        if common(&a.props, new) != common(&b.props, old) {
            self.push(
                &catalog::ORDER_CHANGED,
                name,
                None,
                format!("the fields of \u{e000}{name}\u{e001} are in another order"),
                vec![],
                Subject::None,
            );
        }
    }

    /// The union the struct absorbs, and the Rust field that holds it.
    fn flatten(&mut self, name: &str, a: &StructDef, b: &StructDef) {
        let ua = a.flatten.as_ref().map(|f| &f.union);
        let ub = b.flatten.as_ref().map(|f| &f.union);
        if ua != ub {
            self.push(
                &catalog::FLATTEN_CHANGED,
                name,
                None,
                format!(
                    "the union \u{e000}{name}\u{e001} absorbs is now {}, was {}",
                    ub.map_or("none".to_string(), |u| format!("\u{e000}{u}\u{e001}")),
                    ua.map_or("none".to_string(), |u| format!("\u{e000}{u}\u{e001}"))
                ),
                vec!["/allOf", "/x-flatten"],
                Subject::Def(name.into()),
            );
        } else if let (Some(fa), Some(fb)) = (&a.flatten, &b.flatten)
            && fa.field != fb.field
        {
            self.push(
                    &catalog::FLATTEN_FIELD_RENAMED,
                    name,
                    None,
                    format!(
                        "the Rust field holding \u{e000}{}\u{e001} is now \u{e000}{}\u{e001}, was \u{e000}{}\u{e001}",
                        fb.union, fb.field, fa.field
                    ),
                    vec!["/x-flatten"],
                    Subject::None,
                );
        }
    }
}

/// The pointer of a property inside its struct's definition.
pub(super) fn property(name: &str) -> String {
    format!("/properties/{}", escape_pointer_token(name))
}

/// A field of a struct, as a finding's subject.
pub(super) fn field_subject(def: &str, field: &str) -> Subject {
    Subject::Field {
        def: def.into(),
        field: field.into(),
    }
}

/// How many added fields have the type and presence of the removed field `r`.
fn same_shape_count(added: &[&Prop], r: &Prop) -> usize {
    added
        .iter()
        .filter(|n| n.ty == r.ty && n.presence == r.presence)
        .count()
}
