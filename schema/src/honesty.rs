//! The current profile's rules on absence discriminators: a reader must be able to tell "could not
//! ask" from zero or "unknown" through every value/source pair.
//!
//! Three classes of mistake made that impossible in contract 1.1.0, and these rules keep them out
//! of the schemas being edited:
//!
//! * a gap name (`x-provenance.gap`) that no gap list can hold: the accessor asks a list that can
//!   never name it, so "could not ask" is never answered. A gap is declared when it is a value of
//!   the item type of a property named `api_gaps` somewhere in the contract.
//! * a property named `*_source` that is not the shared `ValueSource`, or one that no value's
//!   `x-provenance` names: readers cannot tell which value it speaks for, or read a private
//!   vocabulary.
//! * a value with a discriminator that is always present (required or defaulted) and has no source
//!   that can say `unavailable`: its accessor can never answer "could not ask", so a writer that
//!   could not ask writes a silent zero.
//!
//! Frozen releases were written before these rules, so [`crate::load`] accepts them and
//! [`crate::load_current`] applies them.

use diagwire_runtime::shape::escape_pointer_token;

use crate::definitions;
use crate::ordered::J;
use crate::problem::{Problems, SchemaProblem};

/// `*_source` properties that are not provenance sources: 1.0.0 fields whose name predates the
/// convention and which say where a value came from in the protocol's own words, not how the
/// writer obtained it. Renaming them would break every reader.
const NOT_PROVENANCE: &[(&str, &str)] = &[("NodeMapUpdate", "from_source")];

/// The `ValueSource` value that says the writer could not ask.
const UNAVAILABLE: &str = "unavailable";

/// Every absence-discriminator problem of `files`, which have passed [`crate::load`].
pub(crate) fn problems(files: &[(String, String, J)]) -> Problems {
    let declared = declared_gaps(files);
    let sources = value_source_values(files);
    let mut out = Problems::new();
    for (path, name, def) in definitions(files) {
        let Some(props) = def.get("properties").and_then(J::as_obj) else {
            continue;
        };
        let required: Vec<&str> = def
            .get("required")
            .and_then(J::as_arr)
            .unwrap_or_default()
            .iter()
            .filter_map(J::as_str)
            .collect();
        let ptr = format!("/$defs/{}/properties", escape_pointer_token(name));
        let mut at = |p: String, msg: String| out.push(SchemaProblem::new(path, p, msg));
        for (key, prop) in props {
            let here = format!("{ptr}/{}", escape_pointer_token(key));
            let Some(pv) = prop.get("x-provenance") else {
                continue;
            };
            if let Some(gap) = pv.get("gap").and_then(J::as_str) {
                if !declared.iter().any(|g| g == gap) {
                    at(
                        format!("{here}/x-provenance/gap"),
                        format!(
                            "gap `{gap}` is not declared: it is not a value of the item type of any `api_gaps` list, so no record can say the value could not be asked for"
                        ),
                    );
                }
            }
            let always_present = required.contains(&key.as_str())
                || matches!(
                    prop.get("x-presence").and_then(J::as_str),
                    Some("default" | "skip-default")
                );
            let source = pv.get("source").and_then(J::as_str);
            let can_say = source.is_some() && sources.iter().any(|v| v == UNAVAILABLE);
            if always_present && !can_say {
                at(
                    format!("{here}/x-provenance"),
                    format!(
                        "`{key}` is always present, so without a source that can say `{UNAVAILABLE}` its accessor never answers \"could not ask\": make it optional, or name a `ValueSource` source (with the value `{UNAVAILABLE}`)"
                    ),
                );
            }
        }
        for (key, prop) in props {
            if !key.ends_with("_source") || NOT_PROVENANCE.contains(&(name, key)) {
                continue;
            }
            let here = format!("{ptr}/{}", escape_pointer_token(key));
            if !is_value_source(prop) {
                at(
                    here,
                    format!(
                        "`{key}` is named as a provenance source but is not the shared `ValueSource`: use `ValueSource` (optional), or give the property another name"
                    ),
                );
            } else if !props.iter().any(|(_, p)| {
                p.get("x-provenance")
                    .and_then(|pv| pv.get("source"))
                    .and_then(J::as_str)
                    == Some(key)
            }) {
                at(
                    here,
                    format!(
                        "`{key}` is a `ValueSource` that no property's `x-provenance.source` names, so no accessor reads it: link the value it describes"
                    ),
                );
            }
        }
    }
    out
}

fn ref_name(s: &J) -> Option<&str> {
    s.get("$ref")
        .and_then(J::as_str)
        .and_then(|r| r.rsplit('/').next())
}

/// A `ValueSource` reference, or the nullable form of one.
fn is_value_source(prop: &J) -> bool {
    if ref_name(prop) == Some("ValueSource") {
        return true;
    }
    prop.get("anyOf")
        .and_then(J::as_arr)
        .is_some_and(|b| b.iter().any(|s| ref_name(s) == Some("ValueSource")))
}

/// The values of every open or closed enum that is the item type of an `api_gaps` property.
fn declared_gaps(files: &[(String, String, J)]) -> Vec<String> {
    let mut gap_types = Vec::new();
    for (_, _, def) in definitions(files) {
        for (key, prop) in def
            .get("properties")
            .and_then(J::as_obj)
            .unwrap_or_default()
        {
            if key == "api_gaps" {
                if let Some(t) = prop.get("items").and_then(ref_name) {
                    gap_types.push(t);
                }
            }
        }
    }
    definitions(files)
        .filter(|(_, name, _)| gap_types.contains(name))
        .flat_map(|(_, _, def)| enum_values(def))
        .collect()
}

fn enum_values(def: &J) -> Vec<String> {
    def.get("x-open-enum")
        .or_else(|| def.get("enum"))
        .and_then(J::as_arr)
        .unwrap_or_default()
        .iter()
        .filter_map(J::as_str)
        .map(str::to_owned)
        .collect()
}

/// The values of the contract's `ValueSource`.
fn value_source_values(files: &[(String, String, J)]) -> Vec<String> {
    definitions(files)
        .filter(|(_, name, _)| *name == "ValueSource")
        .flat_map(|(_, _, def)| enum_values(def))
        .collect()
}
