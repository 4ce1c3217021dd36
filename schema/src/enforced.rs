//! The current profile's rule on bounds: a schema states only bounds the typed parse enforces.
//!
//! The JSON Schema validator and the generated types must give every record the same verdict, so
//! a length or format keyword that the types do not check (a `Vec` reads at any length, `NodeIdHex`
//! reads any string) would make the schema refuse records the types accept. The bounds the types
//! do enforce stay: the integer widths, a tuple's length (`minItems` equal to its `prefixItems`)
//! and the 32 integers of the `node-id-bytes` alias.
//!
//! Frozen releases, and the other trees a review reads for comparison, were written before this
//! rule and keep their bounds, so [`crate::load`] accepts them; [`crate::load_current`] applies it
//! to the schemas being edited.

use diagwire_runtime::shape::escape_pointer_token;

use crate::definitions;
use crate::ordered::J;
use crate::problem::{Problems, SchemaProblem};

/// Every keyword of `files` that states a bound the typed parse does not enforce. The files have
/// passed [`crate::load`], so they are inside the rest of the profile.
pub(crate) fn problems(files: &[(String, String, J)]) -> Problems {
    let mut out = Problems::new();
    for (path, name, def) in definitions(files) {
        let ptr = format!("/$defs/{}", escape_pointer_token(name));
        let mut at = |p: &str, msg: String| out.push(SchemaProblem::new(path, p, msg));
        definition(&ptr, def, &mut at);
    }
    out
}

fn definition(ptr: &str, def: &J, at: &mut impl FnMut(&str, String)) {
    match def.get("x-id").and_then(J::as_str) {
        Some("node-id-bytes") => {
            let count = |k: &str| def.get(k).and_then(J::as_i128);
            if count("minItems") != Some(32) || count("maxItems") != Some(32) {
                at(
                    ptr,
                    "a `node-id-bytes` alias needs `minItems: 32` and `maxItems: 32`: the typed parse reads exactly 32 integers".into(),
                );
            }
            return;
        }
        Some(_) => {
            if def.get("pattern").is_some() {
                at(
                    &format!("{ptr}/pattern"),
                    "`pattern` is not enforced by the typed parse (a `hex64` id reads any string), so the schema would refuse records the types accept: say the expected form in `description`".into(),
                );
            }
            return;
        }
        None => {}
    }
    if let Some(props) = def.get("properties").and_then(J::as_obj) {
        for (key, prop) in props {
            value(
                &format!("{ptr}/properties/{}", escape_pointer_token(key)),
                prop,
                at,
            );
        }
    }
    if let Some(branches) = def.get("oneOf").and_then(J::as_arr) {
        for (i, branch) in branches.iter().enumerate() {
            if let Some(props) = branch.get("properties").and_then(J::as_obj) {
                for (key, prop) in props {
                    value(
                        &format!("{ptr}/oneOf/{i}/properties/{}", escape_pointer_token(key)),
                        prop,
                        at,
                    );
                }
            }
        }
    }
    if def.get("x-union").is_none() && is_array(def) {
        value(ptr, def, at);
    }
}

fn is_array(s: &J) -> bool {
    match s.get("type") {
        Some(J::Str(t)) => t == "array",
        Some(J::Arr(ts)) => ts.iter().any(|t| t.as_str() == Some("array")),
        _ => false,
    }
}

/// Checks a property, item or array alias schema and the schemas of its elements.
fn value(ptr: &str, s: &J, at: &mut impl FnMut(&str, String)) {
    if !is_array(s) {
        return;
    }
    if let Some(prefix) = s.get("prefixItems").and_then(J::as_arr) {
        if s.get("maxItems").is_some() {
            at(
                &format!("{ptr}/maxItems"),
                "`maxItems` is not allowed on a tuple: `prefixItems` with `items: false` fixes its length, which the typed parse enforces".into(),
            );
        }
        for (i, item) in prefix.iter().enumerate() {
            value(&format!("{ptr}/prefixItems/{i}"), item, at);
        }
        return;
    }
    for keyword in ["minItems", "maxItems"] {
        if s.get(keyword).is_some() {
            at(
                &format!("{ptr}/{keyword}"),
                format!(
                    "`{keyword}` is not enforced by the typed parse (an array of any length reads), so the schema would refuse records the types accept: state the writer's bound in `description`"
                ),
            );
        }
    }
    if let Some(items) = s.get("items").filter(|i| matches!(i, J::Obj(_))) {
        value(&format!("{ptr}/items"), items, at);
    }
}
