//! The resolve pass, between lowering and emitting: internal union variants get their tags from
//! their definitions' constants, the catch-all lists of open internal unions are checked, and the
//! facts every consumer of the model needs ([`Facts`]) are computed once.

use std::collections::BTreeMap;

use crate::lower::sorted;
use crate::model::{Def, DefKind, Facts, Model, Payload, Presence, Ty, UnionStyle, variant_name};
use crate::problem::{Problems, SchemaProblem};

/// The resolve pass, between lowering and emitting: fills in the tag and Rust name of internal union
/// variants from their definitions' constants, checks the catch-all lists of open internal unions,
/// and computes the facts every consumer of the model needs ([`Facts`]) once.
pub(crate) fn resolve(model: &mut Model) -> Result<(), Problems> {
    let mut consts: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for d in model.files.iter().flat_map(|f| &f.defs) {
        match &d.kind {
            DefKind::Struct(s) => {
                consts.insert(d.name.clone(), s.consts.clone());
            }
            DefKind::Union(u) => {
                consts.insert(d.name.clone(), u.consts.clone());
            }
            _ => {}
        }
    }
    let mut problems = Problems::new();
    for f in &mut model.files {
        for d in &mut f.defs {
            let DefKind::Union(u) = &mut d.kind else {
                continue;
            };
            if u.style != UnionStyle::Internal {
                continue;
            }
            for v in &mut u.variants {
                if let Payload::Def(n) = &v.payload {
                    if let Some((_, tag)) = consts
                        .get(n)
                        .and_then(|c| c.iter().find(|(k, _)| *k == u.tag))
                    {
                        v.tag = tag.clone();
                        v.rust = variant_name(tag);
                    }
                }
            }
            if let Some(listed) = &u.excluded {
                let known: Vec<String> = u.variants.iter().map(|v| v.tag.clone()).collect();
                if sorted(listed) != sorted(&known) {
                    problems.push(SchemaProblem::new(&f.path, format!("/$defs/{}/oneOf/{}", d.name, known.len()), format!("the catch-all must exclude exactly the known tags; missing {:?}, extra {:?}",
                        known.iter().filter(|k| !listed.contains(k)).collect::<Vec<_>>(),
                        listed.iter().filter(|k| !known.contains(k)).collect::<Vec<_>>())));
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let facts: Vec<Vec<Facts>> = model
        .files
        .iter()
        .map(|f| f.defs.iter().map(|d| facts_of(model, d)).collect())
        .collect();
    for (f, facts) in model.files.iter_mut().zip(facts) {
        for (d, facts) in f.defs.iter_mut().zip(facts) {
            d.facts = facts;
        }
    }
    Ok(())
}

fn facts_of(model: &Model, d: &Def) -> Facts {
    let keeps_extra = match &d.kind {
        DefKind::Struct(s) => !s.flatten.as_ref().is_some_and(|f| {
            matches!(model.def(&f.union).map(|d| &d.kind), Some(DefKind::Union(u)) if u.style == UnionStyle::Internal)
        }),
        _ => false,
    };
    let grows = match &d.kind {
        DefKind::Struct(_) => true,
        DefKind::Enum { open, .. } => *open,
        DefKind::Union(u) => u.open,
        DefKind::NodeId | DefKind::NodeIdHex | DefKind::Array(_) => false,
    };
    Facts {
        keeps_extra,
        defaultable: defaultable(model, &d.name, &mut Vec::new()),
        grows,
        flattened_into: model
            .files
            .iter()
            .flat_map(|f| &f.defs)
            .filter(|o| matches!(&o.kind, DefKind::Struct(s) if s.flatten.as_ref().is_some_and(|fl| fl.union == d.name)))
            .map(|o| o.name.clone())
            .collect(),
    }
}

/// Whether a definition's type has a `Default`: every struct whose fields all have one (options,
/// collections, strings, numbers, ids, and such structs).
fn defaultable(model: &Model, name: &str, seen: &mut Vec<String>) -> bool {
    if seen.iter().any(|s| s == name) {
        return false;
    }
    let Some(def) = model.def(name) else {
        return false;
    };
    match &def.kind {
        DefKind::NodeId | DefKind::NodeIdHex | DefKind::Array(_) => true,
        DefKind::Enum { .. } | DefKind::Union(_) => false,
        DefKind::Struct(s) => {
            if s.flatten.is_some() {
                return false;
            }
            seen.push(name.to_owned());
            let ok = s.props.iter().all(|p| match p.presence {
                Presence::Nullable | Presence::Omittable => true,
                _ => ty_defaultable(model, &p.ty, seen),
            });
            seen.pop();
            ok
        }
    }
}

fn ty_defaultable(model: &Model, t: &Ty, seen: &mut Vec<String>) -> bool {
    match t {
        Ty::Str | Ty::Int(_) | Ty::F64 | Ty::Bool | Ty::Json | Ty::Vec(_) => true,
        Ty::Tuple(ts) => ts.iter().all(|t| ty_defaultable(model, t, seen)),
        Ty::Ref(n) => defaultable(model, n, seen),
    }
}
