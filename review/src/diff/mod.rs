//! Classifies every difference between two schema trees under a rule of the catalog.
//!
//! The comparison runs on the resolved models (what a field, enum or union *is*), and then a sweep
//! over the schemas' JSON makes sure nothing changed that no finding explains: each finding names
//! the JSON pointers it accounts for, and any other pointer that differs becomes an `UNCLASSIFIED`
//! finding. So a change is never called compatible just because no rule looked at it.
//!
//! This module walks the two models and holds the findings; each kind of definition is compared in
//! a module of its own (`structs`, `field`, `enums`, `unions`), `sweep` is the JSON sweep and
//! `words` says types and forms as a report does.

mod enums;
mod field;
mod structs;
mod sweep;
mod unions;
mod words;

use std::collections::BTreeMap;

use diagwire_schema::model::{Def, DefKind, Model};
use serde_json::Value;

use crate::catalog::{self, Rule};
use crate::finding::{At, Finding, Subject};
use crate::tree::Tree;

pub use words::ty_name;

/// Every difference from `old` to `new`, classified, sorted by place then rule.
pub fn diff(old: &Tree, new: &Tree) -> Vec<Finding> {
    let mut cx = Cx {
        old: &old.model,
        new: &new.model,
        raw_old: sweep::def_values(old),
        raw_new: sweep::def_values(new),
        out: Vec::new(),
    };
    cx.records();
    cx.files();
    let old_defs: BTreeMap<&str, &Def> = old.model.defs().map(|d| (d.name.as_str(), d)).collect();
    let new_defs: BTreeMap<&str, &Def> = new.model.defs().map(|d| (d.name.as_str(), d)).collect();
    for (name, d) in &new_defs {
        match old_defs.get(name) {
            None => cx.push(
                &catalog::TYPE_ADDED,
                name,
                None,
                format!("\u{e000}{name}\u{e001} is new"),
                vec![],
                Subject::Def(name.to_string()),
            ),
            Some(o) => cx.def(o, d),
        }
    }
    for name in old_defs.keys() {
        if !new_defs.contains_key(name) {
            cx.push_old(
                &catalog::TYPE_REMOVED,
                name,
                None,
                format!("\u{e000}{name}\u{e001} is gone"),
                Subject::Def(name.to_string()),
            );
        }
    }
    let mut out = cx.out;
    out.extend(sweep::unclassified(old, new, &out));
    out.sort_by(|a, b| (&a.at, a.rule.id).cmp(&(&b.at, b.rule.id)));
    out
}

/// The two models being compared, their definitions as JSON, and the findings so far.
struct Cx<'a> {
    old: &'a Model,
    new: &'a Model,
    raw_old: BTreeMap<String, Value>,
    raw_new: BTreeMap<String, Value>,
    out: Vec<Finding>,
}

/// The schema file stem that defines `def` in `m` (empty when it does not).
fn stem_of(m: &Model, def: &str) -> String {
    m.file_of(def).map(|f| f.stem.clone()).unwrap_or_default()
}

/// The place of a change to `def` (and `member`) as `m` files it.
fn at(m: &Model, def: &str, member: Option<&str>) -> At {
    At {
        schema: stem_of(m, def),
        def: def.to_owned(),
        member: member.map(str::to_owned),
    }
}

impl Cx<'_> {
    /// A finding about `def` of the new tree, explaining the pointers `explains` inside it.
    fn push(
        &mut self,
        rule: &'static Rule,
        def: &str,
        member: Option<&str>,
        detail: String,
        explains: Vec<&str>,
        subject: Subject,
    ) {
        let explains = explains
            .iter()
            .map(|p| (def.to_owned(), (*p).to_owned()))
            .collect();
        self.out.push(Finding {
            rule,
            at: at(self.new, def, member),
            detail,
            explains,
            subject,
        });
    }

    /// A finding about `def` of the old tree (one the new tree no longer has).
    fn push_old(
        &mut self,
        rule: &'static Rule,
        def: &str,
        member: Option<&str>,
        detail: String,
        subject: Subject,
    ) {
        self.out.push(Finding {
            rule,
            at: at(self.old, def, member),
            detail,
            explains: vec![],
            subject,
        });
    }

    /// Record kinds added, removed, or declared by another definition.
    fn records(&mut self) {
        let kinds = |m: &Model| -> BTreeMap<String, String> {
            m.records()
                .into_iter()
                .map(|(k, d)| (k.to_owned(), d.name.clone()))
                .collect()
        };
        let (old, new) = (kinds(self.old), kinds(self.new));
        for (kind, def) in &new {
            match old.get(kind) {
                Some(prev) if prev == def => {}
                Some(prev) => self.push(
                    &catalog::TYPE_KIND_CHANGED,
                    def,
                    None,
                    format!("record kind \u{e000}{kind}\u{e001} is now \u{e000}{def}\u{e001}, was \u{e000}{prev}\u{e001}"),
                    vec!["/x-record"],
                    Subject::Record(kind.clone()),
                ),
                None => self.push(
                    &catalog::RECORD_KIND_ADDED,
                    def,
                    None,
                    format!("record kind \u{e000}{kind}\u{e001} is new"),
                    vec!["/x-record"],
                    Subject::Record(kind.clone()),
                ),
            }
        }
        for (kind, def) in &old {
            if !new.contains_key(kind) {
                let mut f = Finding {
                    rule: &catalog::RECORD_KIND_REMOVED,
                    at: at(self.old, def, None),
                    detail: format!("record kind \u{e000}{kind}\u{e001} is gone"),
                    explains: vec![],
                    subject: Subject::Record(kind.clone()),
                };
                if self.new.def(def).is_some() {
                    f.explains.push((def.clone(), "/x-record".into()));
                }
                self.out.push(f);
            }
        }
    }

    /// A schema file's own title or description.
    fn files(&mut self) {
        for f in &self.new.files {
            if let Some(o) = self.old.files.iter().find(|o| o.stem == f.stem)
                && (o.title != f.title || o.description != f.description)
            {
                self.out.push(Finding {
                    rule: &catalog::DESCRIPTION_CHANGED,
                    at: At {
                        schema: f.stem.clone(),
                        def: String::new(),
                        member: None,
                    },
                    detail: format!(
                        "the title or description of \u{e000}{}\u{e001} changed",
                        f.stem
                    ),
                    explains: vec![],
                    subject: Subject::None,
                });
            }
        }
    }

    /// A definition both trees have: where it lives, its description, then its form.
    fn def(&mut self, o: &Def, d: &Def) {
        let name = d.name.as_str();
        let (was, is) = (stem_of(self.old, name), stem_of(self.new, name));
        if was != is {
            self.push(
                &catalog::TYPE_MOVED,
                name,
                None,
                format!("\u{e000}{name}\u{e001} moved from \u{e000}{was}\u{e001} to \u{e000}{is}\u{e001}"),
                vec![],
                Subject::Def(name.into()),
            );
        }
        if o.description != d.description {
            self.push(
                &catalog::DESCRIPTION_CHANGED,
                name,
                None,
                format!("the description of \u{e000}{name}\u{e001} changed"),
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
            ) => self.enums(name, (va.as_slice(), *oa), (vb.as_slice(), *ob)),
            (DefKind::Union(a), DefKind::Union(b)) => self.unions(name, a, b),
            (DefKind::NodeId, DefKind::NodeId) | (DefKind::NodeIdHex, DefKind::NodeIdHex) => {}
            (DefKind::Array(a), DefKind::Array(b)) => {
                if a != b {
                    self.push(
                        &catalog::FIELD_TYPE_CHANGED,
                        name,
                        None,
                        format!(
                            "the items of \u{e000}{name}\u{e001} are now {}, were {}",
                            ty_name(b),
                            ty_name(a)
                        ),
                        vec!["/items"],
                        Subject::Def(name.into()),
                    );
                }
            }
            _ => self.push(
                &catalog::TYPE_KIND_CHANGED,
                name,
                None,
                format!(
                    "\u{e000}{name}\u{e001} is now {}, was {}",
                    words::form(&d.kind),
                    words::form(&o.kind)
                ),
                vec![""],
                Subject::Def(name.into()),
            ),
        }
    }
}
