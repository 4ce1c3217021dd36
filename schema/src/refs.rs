//! Every `$ref` of every schema file resolves where a JSON Schema validator resolves it: `#/$defs/X`
//! to a definition of the same file, `urn:diagwire:<stem>#/$defs/X` to a definition of the file
//! `<stem>`. The lowering reads only the definition's name, so without this a reference to a file
//! that does not exist, or to a definition that lives in another file, passed the lint and failed
//! later without a file or a pointer (when the review compiled the schemas into validators).

use std::collections::{HashMap, HashSet};

use diagwire_runtime::shape::escape_pointer_token;

use crate::SchemaFile;
use crate::ordered::J;
use crate::problem::{Problems, SchemaProblem};

/// Keys whose values are data, not schemas: a `$ref` inside them is no reference.
const DATA_KEYS: &[&str] = &["default", "const", "enum", "examples", "x-open-enum"];

/// The references that do not resolve, each located at its `$ref`.
pub fn problems(files: &[SchemaFile]) -> Result<(), Problems> {
    let defs: HashMap<&str, HashSet<&str>> = files
        .iter()
        .map(|(_, stem, doc)| {
            let names = doc
                .get("$defs")
                .and_then(J::as_obj)
                .unwrap_or_default()
                .iter()
                .map(|(k, _)| k.as_str())
                .collect();
            (stem.as_str(), names)
        })
        .collect();
    let mut out = Vec::new();
    for (path, stem, doc) in files {
        let mut stack: Vec<(&J, String)> = vec![(doc, String::new())];
        while let Some((here, ptr)) = stack.pop() {
            match here {
                J::Obj(entries) => {
                    for (k, v) in entries {
                        let at = format!("{ptr}/{}", escape_pointer_token(k));
                        if k == "$ref" {
                            if let Some(r) = v.as_str() {
                                if let Some(message) = unresolved(&defs, stem, r) {
                                    out.push(SchemaProblem::new(path, at, message));
                                }
                            }
                        } else if !DATA_KEYS.contains(&k.as_str()) {
                            stack.push((v, at));
                        }
                    }
                }
                J::Arr(items) => {
                    for (i, v) in items.iter().enumerate() {
                        stack.push((v, format!("{ptr}/{i}")));
                    }
                }
                _ => {}
            }
        }
    }
    if out.is_empty() {
        Ok(())
    } else {
        out.sort();
        Err(out)
    }
}

/// Why `r`, written in the file `stem`, does not resolve (`None` when it does, or when it is not a
/// profile reference at all, which the lowering reports).
fn unresolved(defs: &HashMap<&str, HashSet<&str>>, stem: &str, r: &str) -> Option<String> {
    let (file, name) = if let Some(name) = r.strip_prefix("#/$defs/") {
        (stem, name)
    } else if let Some(rest) = r.strip_prefix("urn:diagwire:") {
        rest.split_once("#/$defs/")?
    } else {
        return None;
    };
    let Some(names) = defs.get(file) else {
        return Some(format!(
            "`{r}` names the schema file `{file}`, which is not in this tree"
        ));
    };
    if names.contains(name) {
        return None;
    }
    let elsewhere = defs
        .iter()
        .filter(|(_, n)| n.contains(name))
        .map(|(s, _)| *s)
        .min();
    Some(match elsewhere {
        Some(other) => format!(
            "`{r}` does not resolve: `{name}` is defined in `{other}`, so the reference is `urn:diagwire:{other}#/$defs/{name}`"
        ),
        // An unknown name: the reference check of the whole model says so.
        None => return None,
    })
}
