//! The comparison of two unions: tagging style, tag key, open or closed, variants added, removed,
//! retagged or carrying another type, and their order.

use std::collections::BTreeMap;

use diagwire_runtime::shape::escape_pointer_token;
use diagwire_schema::model::{Payload, UnionDef, UnionStyle, Variant};

use super::words::{ty_name, union_style};
use super::{Cx, at};
use crate::catalog;
use crate::finding::{Finding, Subject};

/// The pointers a union finding explains: its tagging and its branches.
const UNION: [&str; 2] = ["/x-union", "/oneOf"];

/// A union's variants by what identifies them across versions.
type ByKey<'a> = BTreeMap<String, &'a Variant>;

impl Cx<'_> {
    pub(super) fn unions(&mut self, name: &str, a: &UnionDef, b: &UnionDef) {
        if a.style != b.style || a.content != b.content {
            self.push(
                &catalog::UNION_STYLE_CHANGED,
                name,
                None,
                format!(
                    "\u{e000}{name}\u{e001} is now {}, was {}",
                    union_style(b),
                    union_style(a)
                ),
                UNION.to_vec(),
                Subject::Def(name.into()),
            );
            return;
        }
        if a.tag != b.tag {
            self.tag_key(name, a, b);
        }
        if a.open != b.open {
            let rule = if b.open {
                &catalog::UNION_OPENED
            } else {
                &catalog::UNION_CLOSED
            };
            self.push(
                rule,
                name,
                None,
                format!(
                    "\u{e000}{name}\u{e001} is now {}",
                    if b.open { "open" } else { "closed" }
                ),
                UNION.to_vec(),
                Subject::Def(name.into()),
            );
        }
        // Internal variants are matched by the struct they carry, so a renamed tag is one change.
        let key = |v: &Variant| match (&v.payload, a.style) {
            (Payload::Def(d), UnionStyle::Internal) => d.clone(),
            _ => v.tag.clone(),
        };
        let old: ByKey = a.variants.iter().map(|v| (key(v), v)).collect();
        let new: ByKey = b.variants.iter().map(|v| (key(v), v)).collect();
        for (k, v) in &new {
            match old.get(k) {
                None => self.variant_added(name, b, v),
                Some(o) => self.variant(name, b, o, v),
            }
        }
        for (k, v) in &old {
            if !new.contains_key(k) {
                self.push(
                    &catalog::UNION_VARIANT_REMOVED,
                    name,
                    Some(&v.tag),
                    format!(
                        "\u{e000}{name}\u{e001} lost the variant \u{e000}{}\u{e001}",
                        v.tag
                    ),
                    UNION.to_vec(),
                    variant_subject(name, &v.tag, None),
                );
            }
        }
        let order = |vs: &[Variant], other: &ByKey| -> Vec<String> {
            vs.iter()
                .map(key)
                .filter(|k| other.contains_key(k))
                .collect()
        };
        if order(&a.variants, &new) != order(&b.variants, &old) {
            self.push(
                &catalog::ORDER_CHANGED,
                name,
                None,
                format!("the variants of \u{e000}{name}\u{e001} are in another order"),
                UNION.to_vec(),
                Subject::None,
            );
        }
    }

    /// The tag moved to another key: the variants' tag constants move with it.
    fn tag_key(&mut self, name: &str, a: &UnionDef, b: &UnionDef) {
        let mut explains: Vec<(String, String)> = UNION
            .iter()
            .map(|p| (name.to_owned(), (*p).to_owned()))
            .collect();
        // The variants declare the tag as a constant under the tag key.
        for v in a.variants.iter().chain(&b.variants) {
            if let Payload::Def(d) = &v.payload {
                for key in [&a.tag, &b.tag] {
                    explains.push((
                        d.clone(),
                        format!("/properties/{}", escape_pointer_token(key)),
                    ));
                }
                explains.push((d.clone(), "/required".into()));
            }
        }
        self.out.push(Finding {
            rule: &catalog::UNION_TAG_KEY_CHANGED,
            at: at(self.new, name, None),
            detail: format!(
                "the tag of \u{e000}{name}\u{e001} is now under \u{e000}{}\u{e001}, was \u{e000}{}\u{e001}",
                b.tag, a.tag
            ),
            explains,
            subject: Subject::Def(name.into()),
        });
    }

    /// A variant only the new union has.
    fn variant_added(&mut self, name: &str, b: &UnionDef, v: &Variant) {
        let rule = if b.open {
            &catalog::UNION_VARIANT_ADDED_OPEN
        } else {
            &catalog::UNION_VARIANT_ADDED_CLOSED
        };
        self.push(
            rule,
            name,
            Some(&v.tag),
            format!(
                "\u{e000}{name}\u{e001} has the new variant \u{e000}{}\u{e001}",
                v.tag
            ),
            UNION.to_vec(),
            variant_subject(name, &v.tag, None),
        );
    }

    /// A variant both unions have: its tag value, then what it carries.
    fn variant(&mut self, name: &str, b: &UnionDef, o: &Variant, v: &Variant) {
        if o.tag != v.tag {
            self.retagged(name, b, o, v);
            return;
        }
        let detail = match (&o.payload, &v.payload) {
            (Payload::Ty(ta), Payload::Ty(tb)) if ta != tb => format!(
                "the \u{e000}{name}\u{e001} variant \u{e000}{}\u{e001} now carries {}, carried {}",
                v.tag,
                ty_name(tb),
                ty_name(ta)
            ),
            (Payload::Ty(_), Payload::Ty(_)) => return,
            (po, pn) if std::mem::discriminant(po) != std::mem::discriminant(pn) => {
                format!(
                    "the \u{e000}{name}\u{e001} variant \u{e000}{}\u{e001} changed what it carries",
                    v.tag
                )
            }
            _ => return,
        };
        self.push(
            &catalog::FIELD_TYPE_CHANGED,
            name,
            Some(&v.tag),
            detail,
            UNION.to_vec(),
            variant_subject(name, &v.tag, None),
        );
    }

    /// A variant whose tag value changed (an internal variant's constant lives in its struct).
    fn retagged(&mut self, name: &str, b: &UnionDef, o: &Variant, v: &Variant) {
        let detail = format!(
            "the \u{e000}{name}\u{e001} variant \u{e000}{}\u{e001} is now tagged \u{e000}{}\u{e001}",
            o.tag, v.tag
        );
        let subject = variant_subject(name, &v.tag, Some(&o.tag));
        if let Payload::Def(d) = &v.payload {
            let tag_const = format!("/properties/{}/const", escape_pointer_token(&b.tag));
            self.out.push(Finding {
                rule: &catalog::UNION_TAG_VALUE_CHANGED,
                at: at(self.new, name, Some(&v.tag)),
                detail,
                explains: vec![
                    (name.into(), "/x-union".into()),
                    (name.into(), "/oneOf".into()),
                    (d.clone(), tag_const),
                ],
                subject,
            });
            return;
        }
        let mut explains = UNION.to_vec();
        explains.push("/oneOf");
        self.push(
            &catalog::UNION_TAG_VALUE_CHANGED,
            name,
            Some(&v.tag),
            detail,
            explains,
            subject,
        );
    }
}

/// A variant of a union, as a finding's subject.
fn variant_subject(def: &str, tag: &str, old_tag: Option<&str>) -> Subject {
    Subject::Variant {
        def: def.into(),
        tag: tag.into(),
        old_tag: old_tag.map(str::to_owned),
    }
}
