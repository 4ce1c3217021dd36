//! The cross-check: the profile's rules that need every file of a version at once (references
//! resolve, type names and record kinds are unique, internal variants declare their tag, flattened
//! unions fit the struct that absorbs them).

use std::collections::BTreeMap;

use crate::model::{Def, DefKind, Model, Payload, Ty, UnionStyle};
use crate::ordered::J;
use crate::problem::{Problems, SchemaProblem};

/// Checks that need every file: references resolve, names are unique, internal union variants
/// declare their tag, catch-alls list exactly the known tags, flattened unions fit.
pub(crate) fn cross_check(files: &[(String, String, J)], model: &Model, problems: &mut Problems) {
    let mut defs: BTreeMap<&str, (&str, &Def)> = BTreeMap::new();
    for (f, (path, _, _)) in model.files.iter().zip(files) {
        for d in &f.defs {
            if let Some((other, _)) = defs.insert(&d.name, (path, d)) {
                problems.push(SchemaProblem::new(
                    path.as_str(),
                    format!("/$defs/{}", d.name),
                    format!(
                        "the name `{}` is also defined in {other}; type names are one namespace",
                        d.name
                    ),
                ));
            }
        }
    }
    let mut records = BTreeMap::new();
    for (f, (path, _, _)) in model.files.iter().zip(files) {
        for d in &f.defs {
            let ptr = format!("/$defs/{}", d.name);
            let mut problem = |pointer: String, message: String| {
                problems.push(SchemaProblem::new(path.as_str(), pointer, message));
            };
            if let Some(r) = &d.record {
                if let Some(prev) = records.insert(r.clone(), d.name.clone()) {
                    problem(
                        ptr.clone(),
                        format!("record kind `{r}` is also declared by `{prev}`"),
                    );
                }
            }
            let mut located: Vec<(String, String)> = Vec::new();
            let mut refs = Vec::new();
            match &d.kind {
                DefKind::Struct(s) => {
                    for p in &s.props {
                        let mut here = Vec::new();
                        collect_refs(&p.ty, &mut here);
                        located.extend(here.into_iter().map(|r| (r, p.pointer.clone())));
                    }
                    if let Some(fl) = &s.flatten {
                        match defs.get(fl.union.as_str()).map(|(_, d)| &d.kind) {
                            Some(DefKind::Union(u)) if u.style != UnionStyle::External => {
                                if u.style == UnionStyle::Adjacent && u.closed_object {
                                    problem(format!("{ptr}/allOf"), "a flattened adjacent union must be open (no `additionalProperties: false`), because this struct's keys sit beside it".into());
                                }
                                if u.style == UnionStyle::Adjacent
                                    && u.variants
                                        .iter()
                                        .any(|v| matches!(v.payload, Payload::Unit))
                                {
                                    problem(
                                        format!("{ptr}/allOf"),
                                        "a flattened adjacent union cannot have unit variants"
                                            .into(),
                                    );
                                }
                            }
                            _ => problem(
                                format!("{ptr}/allOf"),
                                format!("`{}` is not an internal or adjacent union", fl.union),
                            ),
                        }
                    }
                }
                DefKind::Union(u) => {
                    for v in &u.variants {
                        match &v.payload {
                            Payload::Def(n) => refs.push(n.clone()),
                            Payload::Ty(t) => collect_refs(t, &mut refs),
                            Payload::Unit => {}
                        }
                        if u.style == UnionStyle::Internal {
                            if let Payload::Def(n) = &v.payload {
                                let consts = match defs.get(n.as_str()).map(|(_, d)| &d.kind) {
                                    Some(DefKind::Struct(s)) => Some(&s.consts),
                                    Some(DefKind::Union(inner))
                                        if inner.style == UnionStyle::Internal =>
                                    {
                                        Some(&inner.consts)
                                    }
                                    _ => None,
                                };
                                match consts {
                                    Some(c) if c.iter().any(|(k, _)| *k == u.tag) => {}
                                    Some(_) => problem(
                                        format!("{ptr}/oneOf"),
                                        format!(
                                            "variant `{n}` must declare `properties.{}.const` and list it in `required`",
                                            u.tag
                                        ),
                                    ),
                                    None => problem(
                                        format!("{ptr}/oneOf"),
                                        format!(
                                            "variant `{n}` must be a struct or an internal union"
                                        ),
                                    ),
                                }
                            }
                        }
                    }
                    if u.style == UnionStyle::Adjacent
                        && !u.closed_object
                        && !used_flattened(model, &d.name)
                    {
                        problem(ptr.clone(), "an adjacent union used as a property type must be a closed object (`additionalProperties: false` on every branch)".into());
                    }
                }
                DefKind::Array(t) => collect_refs(t, &mut refs),
                _ => {}
            }
            located.extend(refs.into_iter().map(|r| (r, ptr.clone())));
            for (r, at) in located {
                if !defs.contains_key(r.as_str()) {
                    problem(at, format!("reference to unknown definition `{r}`"));
                }
            }
        }
    }
}

fn used_flattened(model: &Model, name: &str) -> bool {
    model.files.iter().flat_map(|f| &f.defs).any(|d| {
        matches!(&d.kind, DefKind::Struct(s) if s.flatten.as_ref().is_some_and(|f| f.union == name))
    })
}

fn collect_refs(t: &Ty, out: &mut Vec<String>) {
    match t {
        Ty::Ref(n) => out.push(n.clone()),
        Ty::Vec(i) => collect_refs(i, out),
        Ty::Tuple(ts) => ts.iter().for_each(|t| collect_refs(t, out)),
        _ => {}
    }
}
