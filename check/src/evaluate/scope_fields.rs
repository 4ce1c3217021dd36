//! `scope_fields`: an event that names a scope (a stage, a dial, a session…) carries the identity
//! fields that scope and the scopes it lies within need.

use std::collections::{BTreeSet, HashMap};

use super::Fields;

use super::{Evaluator, EventIn, Input, Reads, Stream, Tally, tags_with, with_pointer};
use crate::rulebook::{Scope, ScopeFields};
use crate::verdict::Witness;

/// The evaluator of `scope_fields`.
#[derive(Debug)]
pub(crate) struct ScopeFieldsEval {
    p: ScopeFields,
    /// Per scope (in the parameters' order), the fields it needs: its own, then those of the
    /// scopes it lies within, nearest first.
    needs: Vec<Vec<String>>,
}

impl ScopeFieldsEval {
    /// The evaluator of these parameters.
    pub fn new(p: &ScopeFields) -> Self {
        let by_name: HashMap<&str, &Scope> =
            p.scopes.iter().map(|s| (s.scope.as_str(), s)).collect();
        let needs = p
            .scopes
            .iter()
            .map(|sc| {
                let mut need: Vec<String> = sc.requires.clone();
                let mut stack: Vec<&str> = sc.within.iter().map(String::as_str).collect();
                let mut seen = BTreeSet::new();
                while let Some(w) = stack.pop() {
                    if !seen.insert(w) {
                        continue;
                    }
                    if let Some(outer) = by_name.get(w) {
                        need.push(outer.key.clone());
                        need.extend(outer.requires.iter().cloned());
                        stack.extend(outer.within.iter().map(String::as_str));
                    }
                }
                need
            })
            .collect();
        ScopeFieldsEval {
            p: p.clone(),
            needs,
        }
    }

    fn event(&self, e: &EventIn<'_>, v: &Fields<'_>, out: &mut Tally<'_>) {
        let s = &self.p;
        let has = |f: &str| v.has(f);
        if !s.scopes.iter().any(|sc| v.contains(&sc.key)) {
            return;
        }
        out.checked += 1;
        let mut missing: Vec<(String, String)> = Vec::new();
        for (sc, need) in s.scopes.iter().zip(&self.needs) {
            if !has(&sc.key) {
                continue;
            }
            for f in need {
                if !has(f) && !missing.iter().any(|(m, _)| m == f) {
                    missing.push((f.to_owned(), sc.scope.clone()));
                }
            }
        }
        if missing.is_empty() {
            return;
        }
        let tag = v.str_of("type");
        let tag = tag.as_deref().unwrap_or("?");
        let list = missing
            .iter()
            .map(|(f, sc)| format!("`{f}` (for its {sc} scope)"))
            .collect::<Vec<_>>()
            .join(", ");
        out.find(
            with_pointer(e.loc, &format!("/{}", missing[0].0)),
            vec![Witness {
                location: e.loc.clone(),
                value: v.value(),
            }],
            format!("`{tag}` names a scope but lacks {list}"),
        );
    }
}

impl Evaluator for ScopeFieldsEval {
    fn reads(&self) -> Reads {
        let keys: Vec<&str> = self.p.scopes.iter().map(|s| s.key.as_str()).collect();
        Reads {
            event_values: tags_with(|f| keys.contains(&f.key)),
            blocks: false,
            block_types: Vec::new(),
        }
    }

    fn take(&mut self, input: &Input<'_>, _: &Stream, out: &mut Tally<'_>) {
        if let Input::Event(e) = input
            && let Some(v) = e.value
        {
            self.event(e, v, out);
        }
    }
}
