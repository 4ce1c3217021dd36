//! The comparison of one field both sides of a struct have: its presence, type, bound, unit,
//! absence discriminator, derivation and documentation, each a rule family of its own.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use diagwire_schema::model::{Presence, Prop, Ty};
use serde_json::Value;

use super::Cx;
use super::structs::{field_subject, property};
use super::words::{discriminator_change, stated, ty_name};
use crate::catalog::{self, Rule};
use crate::finding::Subject;

/// One field on both sides, and where its keywords sit.
struct Pair<'p> {
    /// The struct.
    def: &'p str,
    /// The old side's field.
    o: &'p Prop,
    /// The new side's field.
    n: &'p Prop,
    /// The field's pointer inside the struct's definition.
    pointer: String,
}

impl Pair<'_> {
    /// The pointer of the field's keyword `k`.
    fn at(&self, k: &str) -> String {
        format!("{}/{k}", self.pointer)
    }

    /// `Def.field`, as details name it.
    fn name(&self) -> String {
        format!("{}.{}", self.def, self.n.name)
    }
}

impl Cx<'_> {
    pub(super) fn field(&mut self, def: &str, o: &Prop, n: &Prop) {
        let pair = Pair {
            def,
            o,
            n,
            pointer: property(&n.name),
        };
        self.presence(&pair);
        self.field_type(&pair);
        self.bound(&pair);
        self.unit(&pair);
        self.provenance(&pair);
        self.derivation(&pair);
        self.documentation(&pair);
    }

    /// A finding about the field `pair`, explaining its keywords `keys` (and `extra` pointers).
    fn push_field(
        &mut self,
        pair: &Pair<'_>,
        rule: &'static Rule,
        detail: String,
        keys: &[&str],
        extra: &[&str],
        subject: Subject,
    ) {
        let pointers: Vec<String> = keys.iter().map(|k| pair.at(k)).collect();
        let explains: Vec<&str> = extra
            .iter()
            .copied()
            .chain(pointers.iter().map(String::as_str))
            .collect();
        self.push(
            rule,
            pair.def,
            Some(&pair.n.name),
            detail,
            explains,
            subject,
        );
    }

    /// Required, optional (written as null or left out) or defaulted.
    fn presence(&mut self, pair: &Pair<'_>) {
        let (o, n) = (pair.o.presence, pair.n.presence);
        if o == n {
            return;
        }
        use Presence::*;
        let rule = match (o, n) {
            (Required, _) => &catalog::FIELD_REQUIRED_TO_OPTIONAL,
            (_, Required) => &catalog::FIELD_OPTIONAL_TO_REQUIRED,
            (Nullable | Omittable, Nullable | Omittable)
            | (Default | SkipDefault, Default | SkipDefault) => {
                &catalog::FIELD_PRESENCE_SPELLING_CHANGED
            }
            (Nullable | Omittable, _) => &catalog::FIELD_PRESENCE_DEFAULTED,
            _ => &catalog::FIELD_PRESENCE_UNDEFAULTED,
        };
        self.push_field(
            pair,
            rule,
            format!(
                "\u{e000}{}\u{e001} is now {}, was {}",
                pair.name(),
                n.name(),
                o.name()
            ),
            &["x-presence", "type", "anyOf", "default", "x-absent", "$ref"],
            &["/required"],
            field_subject(pair.def, &pair.n.name),
        );
    }

    /// The value's type, an integer's width included.
    fn field_type(&mut self, pair: &Pair<'_>) {
        let (o, n) = (&pair.o.ty, &pair.n.ty);
        if o == n {
            return;
        }
        let rule = match width_change(o, n) {
            Some(Ordering::Greater) => &catalog::INTEGER_WIDENED,
            Some(Ordering::Less) => &catalog::INTEGER_NARROWED,
            _ => &catalog::FIELD_TYPE_CHANGED,
        };
        self.push_field(
            pair,
            rule,
            format!(
                "\u{e000}{}\u{e001} is now {}, was {}",
                pair.name(),
                ty_name(n),
                ty_name(o)
            ),
            &[
                "type",
                "format",
                "minimum",
                "maximum",
                "items",
                "$ref",
                "anyOf",
                "prefixItems",
                "minItems",
                "x-json",
                "default",
                "x-unit",
            ],
            &[],
            field_subject(pair.def, &pair.n.name),
        );
    }

    /// The one bound the profile allows besides the widths: a writer-kept array length.
    fn bound(&mut self, pair: &Pair<'_>) {
        let bound = "maxItems";
        let read = |raw: &BTreeMap<String, Value>| {
            raw.get(pair.def)
                .and_then(|v| v.pointer(&pair.at(bound)))
                .and_then(Value::as_u64)
        };
        let (ob, nb) = (read(&self.raw_old), read(&self.raw_new));
        let tighter = match (ob, nb) {
            (None, Some(_)) => true,
            (Some(_), None) => false,
            (Some(x), Some(y)) if y != x => y < x,
            _ => return,
        };
        let rule = if tighter {
            &catalog::BOUND_ADDED
        } else {
            &catalog::BOUND_LOOSENED
        };
        self.push_field(
            pair,
            rule,
            format!(
                "\u{e000}{}\u{e001} \u{e000}{bound}\u{e001} is now {}, was {}",
                pair.name(),
                stated(nb),
                stated(ob)
            ),
            &[bound],
            &[],
            field_subject(pair.def, &pair.n.name),
        );
    }

    /// The unit of a number (or of an array's numbers).
    fn unit(&mut self, pair: &Pair<'_>) {
        let (o, n) = (pair.o, pair.n);
        let numeric = |t: &Ty| {
            matches!(t, Ty::Int(_) | Ty::F64)
                || matches!(t, Ty::Vec(i) if matches!(**i, Ty::Int(_) | Ty::F64))
        };
        if o.unit == n.unit || !numeric(&o.ty) || !numeric(&n.ty) {
            return;
        }
        let same = match (&o.unit, &n.unit) {
            (Some(a), Some(b)) => diagwire_schema::units::same_quantity(a, b),
            _ => false,
        };
        let rule = if same {
            &catalog::UNIT_RESPELLED
        } else {
            &catalog::UNIT_CHANGED
        };
        self.push_field(
            pair,
            rule,
            format!(
                "\u{e000}{}\u{e001} is now in {}, was in {}",
                pair.name(),
                n.unit.as_deref().unwrap_or("no unit"),
                o.unit.as_deref().unwrap_or("no unit")
            ),
            &["x-unit"],
            &[],
            field_subject(pair.def, &pair.n.name),
        );
    }

    /// The absence discriminator: a source field and a gap name, either gained or lost.
    fn provenance(&mut self, pair: &Pair<'_>) {
        let (os, og) = discriminator(pair.o);
        let (ns, ng) = discriminator(pair.n);
        let lost = (os.is_some() && os != ns) || (og.is_some() && og != ng);
        let gained = (ns.is_some() && ns != os) || (ng.is_some() && ng != og);
        let moved = discriminator_change(("source field", &os, &ns), ("gap", &og, &ng));
        let name = pair.name();
        let (rule, detail) = if lost {
            (
                &catalog::PROVENANCE_NARROWED,
                format!("\u{e000}{name}\u{e001} lost its absence discriminator: {moved}"),
            )
        } else if gained {
            (
                &catalog::PROVENANCE_WIDENED,
                format!("\u{e000}{name}\u{e001} gained an absence discriminator: {moved}"),
            )
        } else {
            return;
        };
        self.push_field(
            pair,
            rule,
            detail,
            &["x-provenance"],
            &[],
            field_subject(pair.def, &pair.n.name),
        );
    }

    /// Derived instead of reported, or back, or derived another way.
    fn derivation(&mut self, pair: &Pair<'_>) {
        let name = pair.name();
        let (rule, detail, subject) = match (&pair.o.derived, &pair.n.derived) {
            (None, Some(how)) => {
                let discriminated = pair
                    .n
                    .provenance
                    .as_ref()
                    .is_some_and(|p| p.source.is_some());
                let rule = if discriminated {
                    &catalog::FIELD_BECAME_DERIVED_DISCRIMINATED
                } else {
                    &catalog::FIELD_BECAME_DERIVED
                };
                (
                    rule,
                    format!("\u{e000}{name}\u{e001} is now derived: {how}"),
                    field_subject(pair.def, &pair.n.name),
                )
            }
            (Some(_), None) => (
                &catalog::FIELD_BECAME_REPORTED,
                format!("\u{e000}{name}\u{e001} is now reported, no longer derived"),
                field_subject(pair.def, &pair.n.name),
            ),
            (Some(a), Some(b)) if a != b => (
                &catalog::DESCRIPTION_CHANGED,
                format!("how \u{e000}{name}\u{e001} is derived is described differently"),
                Subject::None,
            ),
            _ => return,
        };
        self.push_field(pair, rule, detail, &["x-derived"], &[], subject);
    }

    /// The description, and what absence means when the field is optional on both sides.
    fn documentation(&mut self, pair: &Pair<'_>) {
        let (o, n) = (pair.o, pair.n);
        let both_optional = o.presence != Presence::Required && n.presence != Presence::Required;
        if o.description != n.description || (both_optional && o.absent != n.absent) {
            self.push_field(
                pair,
                &catalog::DESCRIPTION_CHANGED,
                format!("the description of \u{e000}{}\u{e001} changed", pair.name()),
                &["description", "x-absent", "examples"],
                &[],
                Subject::None,
            );
        }
    }
}

/// A field's absence discriminator: its source field and its gap name.
fn discriminator(p: &Prop) -> (Option<String>, Option<String>) {
    p.provenance
        .as_ref()
        .map_or((None, None), |pv| (pv.source.clone(), pv.gap.clone()))
}

/// Compares two integer types (also inside arrays): `Greater` when the new range holds the old
/// one, `Less` when the old holds the new, `None` when they are not both integers or overlap only.
fn width_change(old: &Ty, new: &Ty) -> Option<Ordering> {
    match (old, new) {
        (Ty::Int(a), Ty::Int(b)) => {
            let ((alo, ahi), (blo, bhi)) = (a.bounds(), b.bounds());
            if blo <= alo && bhi >= ahi {
                Some(Ordering::Greater)
            } else if alo <= blo && ahi >= bhi {
                Some(Ordering::Less)
            } else {
                None
            }
        }
        (Ty::Vec(a), Ty::Vec(b)) => width_change(a, b),
        _ => None,
    }
}
