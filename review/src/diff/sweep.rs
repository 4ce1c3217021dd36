//! The sweep: every JSON difference between the two trees' definitions must be explained by a
//! finding; a documentation key that changed is a `DESCRIPTION_CHANGED` finding, anything else
//! no finding explains is `UNCLASSIFIED`.

use std::collections::{BTreeMap, BTreeSet};

use diagwire_runtime::shape::escape_pointer_token;
use diagwire_schema::ordered::J;
use serde_json::Value;

use super::at;
use crate::catalog;
use crate::finding::{Finding, Subject};
use crate::tree::Tree;

/// The definitions of a tree as JSON values, by name, with references normalized to the name they
/// point at (a definition moving between files changes its references' text, not their meaning)
/// and `required` as a sorted set.
pub(super) fn def_values(tree: &Tree) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for (_, text) in &tree.texts {
        let Ok(doc) = serde_json::from_str::<J>(text) else {
            continue;
        };
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

/// References as the name they point at, `required` sorted, all the way down.
fn normalize(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref")
                && let Some((_, name)) = r.rsplit_once("#/$defs/")
            {
                *r = name.to_owned();
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
                let here = format!("{ptr}/{}", escape_pointer_token(k));
                differences(x.get(k), y.get(k), &here, out);
            }
        }
        (x, y) if x == y => {}
        _ => out.push(ptr.to_owned()),
    }
}

/// The findings for every difference of a definition both trees have that `found` does not
/// explain.
pub(super) fn unclassified(old: &Tree, new: &Tree, found: &[Finding]) -> Vec<Finding> {
    let (a, b) = (def_values(old), def_values(new));
    let mut out = Vec::new();
    for (name, nv) in &b {
        let Some(ov) = a.get(name) else { continue };
        // A definition that changed form is explained as a whole.
        if found
            .iter()
            .any(|f| f.at.def == *name && *f.rule == catalog::TYPE_KIND_CHANGED)
        {
            continue;
        }
        let mut diffs = Vec::new();
        differences(Some(ov), Some(nv), "", &mut diffs);
        for d in diffs {
            if explained(found, name, &d) {
                continue;
            }
            // The profile's documentation keys never change what a reader does.
            let last = d.rsplit('/').next().unwrap_or_default();
            let (rule, detail) = if matches!(
                last,
                "description" | "title" | "examples" | "x-absent"
            ) {
                (
                    &catalog::DESCRIPTION_CHANGED,
                    format!(
                        "the documentation of \u{e000}{name}\u{e001} changed at \u{e000}{d}\u{e001}"
                    ),
                )
            } else {
                (
                    &catalog::UNCLASSIFIED,
                    format!(
                        "\u{e000}{name}\u{e001} changed at \u{e000}{d}\u{e001} and no rule classifies it"
                    ),
                )
            };
            out.push(Finding {
                rule,
                at: at(&new.model, name, None),
                detail,
                explains: vec![(name.clone(), d)],
                subject: Subject::None,
            });
        }
    }
    out
}

/// Whether a finding explains the pointer `d` of definition `def` (or a pointer above it).
fn explained(found: &[Finding], def: &str, d: &str) -> bool {
    found.iter().any(|f| {
        f.explains
            .iter()
            .any(|(name, p)| name == def && (d == p || d.starts_with(&format!("{p}/"))))
    })
}
