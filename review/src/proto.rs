//! The binary side of a comparison: each tree's protobuf descriptor, built from its model and
//! number table exactly as `cargo codegen` renders it, and the two descriptors compared member by
//! member (in their JSON form) under the `PROTO_` rules of the catalog.
//!
//! The JSON rules look at what a record is; these look at how the protobuf form carries it: the
//! number of every struct field, union variant and enum value, the wire type and encoding of every
//! value, and which members sit in a union's `oneof`. A plain addition (a new field, variant or
//! value under a fresh number) is no finding here: protobuf readers keep an unknown number as an
//! unknown field, and the JSON rules already say what the addition does. A side without a number
//! table cannot be encoded, so its comparisons skip these rules and say why.

use std::collections::{BTreeMap, BTreeSet};

use diagwire::proto::{Codec, Descriptor};
use diagwire_codegen::proto::Numbers;
use diagwire_schema::model::Model;
use serde_json::Value;

use crate::catalog::{self, Rule};
use crate::finding::{At, Finding, Kind, Member, Subject};
use crate::tree::{NumberTable, Tree};

/// One side's binary form: the descriptor, its codec, and the table it was numbered from.
pub struct Side {
    /// How reports name the tree.
    pub label: String,
    /// Where the number table was read.
    pub table: String,
    /// The number table.
    pub numbers: Numbers,
    /// The descriptor, built at run time.
    pub descriptor: Descriptor,
    /// The codec of the descriptor.
    pub codec: Codec,
}

impl Side {
    /// The binary form of `tree`, or why it has none.
    pub fn of(tree: &Tree) -> Result<Side, String> {
        let (table, numbers) = match &tree.numbers {
            NumberTable::Found { path, numbers } => (path.clone(), numbers.clone()),
            NumberTable::Missing(why) => {
                return Err(format!(
                    "{} has no protobuf number table ({why})",
                    tree.label
                ));
            }
            NumberTable::Invalid { error, .. } => {
                return Err(format!(
                    "the number table of {} is not valid: {error}",
                    tree.label
                ));
            }
        };
        let version = tree
            .version
            .as_ref()
            .map_or_else(|| "unversioned".to_owned(), ToString::to_string);
        let descriptor =
            diagwire_codegen::proto::descriptor(&tree.model, &numbers, "diagwire", &version)
                .map_err(|e| {
                    // The generator names its own number file; the table here may be another one.
                    let e = format!("{e:#}");
                    let e = e
                        .strip_prefix(diagwire_codegen::proto::NUMBERS_FILE)
                        .and_then(|r| r.strip_prefix(": "))
                        .unwrap_or(&e);
                    format!(
                        "{} cannot be encoded with \u{e000}{table}\u{e001}: {}",
                        tree.label,
                        diagwire_schema::problem::printable(e)
                    )
                })?;
        Ok(Side {
            label: tree.label.clone(),
            table,
            numbers,
            codec: Codec::new(&descriptor),
            descriptor,
        })
    }
}

/// Both sides' binary forms, or why the protobuf rules cannot run.
pub fn sides(old: &Tree, new: &Tree) -> Result<(Side, Side), String> {
    match (Side::of(old), Side::of(new)) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        (Err(a), Err(b)) => Err(format!("{a}; {b}")),
        (Err(e), _) | (_, Err(e)) => Err(e),
    }
}

/// Why the protobuf rules cannot run on these two trees although the sides are there to be
/// compared: a number table that is there but cannot be read, parsed, or number its tree. A
/// comparison fails closed on this (a malformed table must not turn a break into "not compared");
/// `None` when both sides have a usable table or a side has none at all.
pub fn broken(old: &Tree, new: &Tree) -> Option<String> {
    let mut why = Vec::new();
    for tree in [old, new] {
        match &tree.numbers {
            NumberTable::Invalid { .. } => why.push(Side::of(tree).err().unwrap_or_default()),
            NumberTable::Found { .. } => {
                if let Err(e) = Side::of(tree) {
                    why.push(e);
                }
            }
            NumberTable::Missing(_) => {}
        }
    }
    if why.is_empty() {
        None
    } else {
        Some(why.join("; "))
    }
}

/// Whether a comparison looked at the binary form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Both sides' descriptors were compared; the tables they were numbered from.
    Compared {
        /// The older side's table.
        old: String,
        /// The newer side's table.
        new: String,
    },
    /// The protobuf rules were skipped, and why.
    Skipped(String),
}

/// A message of a descriptor's JSON form, as far as the comparison needs it.
enum View<'a> {
    Struct(Vec<(&'a str, u32, &'a Value)>),
    Union(Vec<(&'a str, u32, &'a Value)>),
    Wrapper(&'a Value),
    Tuple(Vec<&'a Value>),
}

/// The rows of a struct's fields or a union's variants: (key or tag, number, type).
fn rows<'a>(rows: &'a Value, name: &str) -> Option<Vec<(&'a str, u32, &'a Value)>> {
    rows.as_array()?
        .iter()
        .map(|r| {
            Some((
                r.get(name)?.as_str()?,
                u32::try_from(r.get("number")?.as_u64()?).ok()?,
                r.get("ty")?,
            ))
        })
        .collect()
}

fn view(m: &Value) -> Option<View<'_>> {
    let members = rows;
    if let Some(s) = m.get("struct") {
        return members(s.get("fields")?, "key").map(View::Struct);
    }
    if let Some(u) = m.get("union") {
        return members(u.get("variants")?, "tag").map(View::Union);
    }
    if let Some(w) = m.get("wrapper") {
        return Some(View::Wrapper(w));
    }
    m.get("tuple")?
        .as_array()
        .map(|t| View::Tuple(t.iter().collect()))
}

/// The wire type a value of the descriptor type `t` is written with (lists of numbers packed).
fn wire(t: &Value) -> &'static str {
    match t {
        Value::String(s) => match s.as_str() {
            "f64" => "fixed64",
            "string" | "node_id" | "hex_id" | "json" => "length-delimited",
            _ => "varint",
        },
        Value::Object(o) if o.contains_key("enum") => "varint",
        _ => "length-delimited",
    }
}

fn list_item(t: &Value) -> Option<&Value> {
    t.get("list")
}

/// `t` as the `.proto` names it (with the codec's range where the `.proto` type is wider).
fn describe(t: &Value) -> String {
    match t {
        Value::String(s) => match s.as_str() {
            "u8" => "uint32 (u8)".into(),
            "u16" => "uint32 (u16)".into(),
            "u32" => "uint32".into(),
            "u64" => "uint64".into(),
            "i32" => "sint32".into(),
            "i64" => "sint64".into(),
            "f64" => "double".into(),
            "node_id" => "bytes (node id)".into(),
            "hex_id" => "bytes (hex node id)".into(),
            "json" => "bytes (JSON)".into(),
            other => other.into(),
        },
        Value::Null => "\u{e000}Unit\u{e001}".into(),
        _ => {
            if let Some(e) = t.get("enum").and_then(Value::as_str) {
                format!("enum \u{e000}{e}\u{e001}")
            } else if let Some(m) = t.get("message").and_then(Value::as_str) {
                format!("message \u{e000}{m}\u{e001}")
            } else if let Some(i) = list_item(t) {
                format!("repeated {}", describe(i))
            } else {
                t.to_string()
            }
        }
    }
}

/// How `t` is written, for a reader: its wire type (a list's items' when they are packed).
fn wire_words(t: &Value) -> String {
    match list_item(t) {
        Some(i) if wire(i) != "length-delimited" => format!("packed {}", wire(i)),
        Some(_) => "length-delimited items".into(),
        None => wire(t).into(),
    }
}

/// Signedness and bits of an integer scalar.
fn int_width(t: &Value) -> Option<(bool, u8)> {
    Some(match t.as_str()? {
        "u8" => (false, 8),
        "u16" => (false, 16),
        "u32" => (false, 32),
        "u64" => (false, 64),
        "i32" => (true, 32),
        "i64" => (true, 64),
        _ => return None,
    })
}

/// The rule a change of a value's descriptor type (in its JSON form) falls under, if it changes
/// the binary form.
pub fn type_rule(old: &Value, new: &Value) -> Option<&'static Rule> {
    if old == new {
        return None;
    }
    if let (Some(a), Some(b)) = (list_item(old), list_item(new)) {
        return type_rule(a, b);
    }
    if wire(old) != wire(new) {
        return Some(&catalog::PROTO_WIRE_TYPE_CHANGED);
    }
    match (int_width(old), int_width(new)) {
        (Some((sa, wa)), Some((sb, wb))) if sa == sb && wb > wa => {
            Some(&catalog::PROTO_INTEGER_WIDENED)
        }
        (Some((sa, wa)), Some((sb, wb))) if sa == sb && wb < wa => {
            Some(&catalog::PROTO_INTEGER_NARROWED)
        }
        _ => Some(&catalog::PROTO_ENCODING_CHANGED),
    }
}

struct Cx<'a> {
    models: [&'a Model; 2],
    out: Vec<Finding>,
}

impl Cx<'_> {
    /// The schema file a message belongs to: its definition's, or for a wrapper or tuple message
    /// the definition its name starts with.
    fn stem(&self, message: &str) -> String {
        for m in self.models {
            if let Some(f) = m.file_of(message) {
                return f.stem.clone();
            }
        }
        for m in self.models {
            if let Some(d) = m
                .defs()
                .filter(|d| message.starts_with(d.name.as_str()))
                .max_by_key(|d| d.name.len())
                && let Some(f) = m.file_of(&d.name)
            {
                return f.stem.clone();
            }
        }
        String::new()
    }

    fn push(&mut self, rule: &'static Rule, member: Member, detail: String) {
        self.out.push(Finding {
            rule,
            at: At {
                schema: self.stem(&member.message),
                def: member.message.clone(),
                member: (!member.name.is_empty()).then(|| member.name.clone()),
            },
            detail,
            explains: vec![],
            subject: Subject::Protobuf(member),
        });
    }

    /// Numbers and types of the members two versions of a message (or enum) share, and numbers
    /// that name another member than before. `reserved` is the old table's reserved numbers.
    fn members(
        &mut self,
        message: &str,
        kind: Kind,
        old: &[(&str, u32, &Value)],
        new: &[(&str, u32, &Value)],
        reserved: &BTreeMap<u32, String>,
    ) {
        let by_name: BTreeMap<&str, (u32, &Value)> =
            old.iter().map(|(n, num, t)| (*n, (*num, *t))).collect();
        let by_number: BTreeMap<u32, &str> = old.iter().map(|(n, num, _)| (*num, *n)).collect();
        let what = |name: &str| match kind {
            Kind::Variant => {
                format!("the \u{e000}{message}\u{e001} variant \u{e000}{name}\u{e001}")
            }
            _ => format!("\u{e000}{message}.{name}\u{e001}"),
        };
        for (name, number, ty) in new {
            let member = |was: Option<(u32, String)>, reserved: bool| Member {
                message: message.to_owned(),
                kind,
                name: (*name).to_owned(),
                was,
                reserved,
            };
            if let Some((old_number, old_ty)) = by_name.get(name) {
                if old_number != number {
                    self.push(
                        &catalog::PROTO_NUMBER_CHANGED,
                        member(None, false),
                        format!("{} is number {number}, was {old_number}", what(name)),
                    );
                }
                if let Some(rule) = type_rule(old_ty, ty) {
                    let detail = if *rule == catalog::PROTO_WIRE_TYPE_CHANGED {
                        format!(
                            "{} is now {} ({}), was {} ({})",
                            what(name),
                            describe(ty),
                            wire_words(ty),
                            describe(old_ty),
                            wire_words(old_ty)
                        )
                    } else {
                        format!(
                            "{} is now {}, was {} (both {})",
                            what(name),
                            describe(ty),
                            describe(old_ty),
                            wire_words(ty)
                        )
                    };
                    self.push(rule, member(None, false), detail);
                }
            }
            match (by_number.get(number), reserved.get(number)) {
                (Some(prev), _) if prev != name => self.push(
                    &catalog::PROTO_NUMBER_REUSED,
                    member(Some((*number, (*prev).to_owned())), false),
                    format!("number {number} of \u{e000}{message}\u{e001} now names \u{e000}{name}\u{e001}; it named \u{e000}{prev}\u{e001}"),
                ),
                (None, Some(prev)) if prev != name => self.push(
                    &catalog::PROTO_NUMBER_REUSED,
                    member(Some((*number, prev.clone())), true),
                    format!(
                        "number {number} of \u{e000}{message}\u{e001} now names \u{e000}{name}\u{e001}; the old table reserved it for \u{e000}{prev}\u{e001}"
                    ),
                ),
                _ => {}
            }
        }
    }
}

fn borrowed(rows: &[(String, u32, Value)]) -> Vec<(&str, u32, &Value)> {
    rows.iter().map(|(k, n, t)| (k.as_str(), *n, t)).collect()
}

/// Reserved numbers of a table, by number (a name kept twice is stored as `name#number`).
fn reserved_of(t: Option<&diagwire_codegen::proto::Table>) -> BTreeMap<u32, String> {
    t.map(|t| {
        t.reserved
            .iter()
            .map(|(k, n)| (*n, k.split('#').next().unwrap_or(k).to_owned()))
            .collect()
    })
    .unwrap_or_default()
}

fn objects(v: &Value, key: &str) -> BTreeMap<String, Value> {
    v.get(key)
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// Every difference of the binary form from `old` to `new` (the models name the schema files).
pub fn diff(old: &Side, new: &Side, old_model: &Model, new_model: &Model) -> Vec<Finding> {
    let mut cx = Cx {
        models: [new_model, old_model],
        out: Vec::new(),
    };
    let (old_json, new_json) = (old.descriptor.to_json(), new.descriptor.to_json());
    let (om, nm) = (
        objects(&old_json, "messages"),
        objects(&new_json, "messages"),
    );
    let unions = |ms: &BTreeMap<String, Value>| -> BTreeMap<String, BTreeSet<String>> {
        ms.iter()
            .filter_map(|(name, m)| match view(m)? {
                View::Union(v) => Some((
                    name.clone(),
                    v.iter().map(|(t, _, _)| (*t).to_owned()).collect(),
                )),
                _ => None,
            })
            .collect()
    };
    let (old_unions, new_unions) = (unions(&om), unions(&nm));
    for (name, o) in &om {
        let Some(n) = nm.get(name) else { continue };
        let reserved = reserved_of(old.numbers.messages.get(name));
        match (view(o), view(n)) {
            (Some(View::Struct(a)), Some(View::Struct(b))) => {
                cx.members(name, Kind::Field, &a, &b, &reserved);
            }
            (Some(View::Union(a)), Some(View::Union(b))) => {
                cx.members(name, Kind::Variant, &a, &b, &reserved);
                for (tag, number, _) in &a {
                    if b.iter().any(|(t, _, _)| t == tag) {
                        continue;
                    }
                    let moved = new_unions
                        .iter()
                        .find(|(u, tags)| {
                            *u != name
                                && tags.contains(*tag)
                                && !old_unions.get(*u).is_some_and(|t| t.contains(*tag))
                        })
                        .map(|(u, _)| format!("; it is now a member of \u{e000}{u}\u{e001}"))
                        .unwrap_or_default();
                    cx.push(
                        &catalog::PROTO_ONEOF_MEMBER_REMOVED,
                        Member {
                            message: name.clone(),
                            kind: Kind::Variant,
                            name: (*tag).to_owned(),
                            was: None,
                            reserved: false,
                        },
                        format!("\u{e000}{name}\u{e001} lost the oneof member \u{e000}{tag}\u{e001} (number {number}){moved}"),
                    );
                }
            }
            (Some(View::Struct(_)), Some(View::Union(_)))
            | (Some(View::Union(_)), Some(View::Struct(_))) => {
                let detail = if matches!(view(n), Some(View::Union(_))) {
                    format!(
                        "\u{e000}{name}\u{e001} is now a union message: its fields became members of a oneof"
                    )
                } else {
                    format!(
                        "\u{e000}{name}\u{e001} is now a struct message: the members of its oneof became fields"
                    )
                };
                cx.push(
                    &catalog::PROTO_ONEOF_CHANGED,
                    Member {
                        message: name.clone(),
                        kind: Kind::Message,
                        name: String::new(),
                        was: None,
                        reserved: false,
                    },
                    detail,
                );
            }
            (Some(View::Wrapper(a)), Some(View::Wrapper(b))) => {
                cx.members(
                    name,
                    Kind::Item,
                    &[("items", 1, a)],
                    &[("items", 1, b)],
                    &reserved,
                );
            }
            (Some(View::Tuple(a)), Some(View::Tuple(b))) => {
                // Positions are fixed, so only the items both tuples have compare.
                let names: Vec<String> = (0..a.len().min(b.len()))
                    .map(|i| format!("item{i}"))
                    .collect();
                let rows = |ts: &[&'_ Value]| -> Vec<(String, u32, Value)> {
                    names
                        .iter()
                        .zip(ts)
                        .zip(1u32..)
                        .map(|((k, t), n)| (k.clone(), n, (*t).clone()))
                        .collect()
                };
                let (ra, rb) = (rows(&a), rows(&b));
                cx.members(name, Kind::Item, &borrowed(&ra), &borrowed(&rb), &reserved);
            }
            // A message that changed form otherwise is a type change the JSON rules classify.
            _ => {}
        }
    }
    let (oe, ne) = (objects(&old_json, "enums"), objects(&new_json, "enums"));
    for (name, o) in &oe {
        let Some(n) = ne.get(name) else { continue };
        // Enum values have numbers and no type of their own.
        let values = |e: &Value| -> Vec<(String, u32, Value)> {
            e.as_object()
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, n)| {
                            Some((k.clone(), u32::try_from(n.as_u64()?).ok()?, Value::Null))
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let (va, vb) = (values(o), values(n));
        let reserved = reserved_of(old.numbers.enums.get(name));
        cx.members(name, Kind::Value, &borrowed(&va), &borrowed(&vb), &reserved);
    }
    cx.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::Tree;
    use diagwire_codegen::proto::update_numbers;
    use serde_json::json;

    fn fixture(path: &str) -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/rules")
            .join(path);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    fn tree(label: &str, text: &str, numbers: Numbers) -> Tree {
        let mut t = Tree::from_texts(label, None, vec![("sample".into(), text.into())])
            .expect("fixture schemas");
        t.numbers = NumberTable::Found {
            path: format!("{label}.json"),
            numbers,
        };
        t
    }

    fn found(c: &crate::Comparison) -> Vec<(String, String, Option<bool>)> {
        c.findings
            .iter()
            .filter(|f| f.finding.rule.is_protobuf())
            .map(|f| {
                (
                    format!("{} {}", f.finding.rule.id, f.finding.at),
                    f.finding.detail.clone(),
                    f.counterexample.as_ref().map(|x| x.confirmed),
                )
            })
            .collect()
    }

    #[test]
    fn a_number_the_old_table_reserved_given_to_another_name_is_a_reuse() {
        // Old: `size` was renamed `bytes` and got a fresh number; `size`'s number is reserved.
        let old_text = fixture("PROTO_NUMBER_REUSED/new/sample.schema.json");
        let base = fixture("PROTO_NUMBER_REUSED/old/sample.schema.json");
        let base = Tree::from_texts("base", None, vec![("sample".into(), base)]).expect("base");
        let old = tree("old", &old_text, Numbers::default());
        let old_numbers = update_numbers(
            &update_numbers(&Numbers::default(), &[&base.model]),
            &[&base.model, &old.model],
        );
        let size = old_numbers.messages["Sample"].reserved["size"];
        // New: `bytes` renamed `octets`, numbered by hand with `size`'s old number.
        let new_text = old_text.replace("\"bytes\": {", "\"octets\": {");
        let mut new_numbers = old_numbers.clone();
        let t = new_numbers.messages.get_mut("Sample").expect("Sample");
        let bytes = t.numbers.remove("bytes").expect("bytes");
        t.reserved.remove("size");
        t.reserved.insert("bytes".into(), bytes);
        t.numbers.insert("octets".into(), size);
        let c = crate::compare(
            &tree("old", &old_text, old_numbers),
            &tree("new", &new_text, new_numbers),
        )
        .expect("compare");
        assert_eq!(
            found(&c),
            vec![(
                "PROTO_NUMBER_REUSED sample#Sample.octets".to_owned(),
                format!(
                    "number {size} of \u{e000}Sample\u{e001} now names \u{e000}octets\u{e001}; the old table reserved it for \u{e000}size\u{e001}"
                ),
                None,
            )]
        );
    }

    #[test]
    fn swapped_enum_value_numbers_are_changed_and_reused_and_misread() {
        let text = fixture("PROTO_NUMBER_CHANGED/old/sample.schema.json");
        let numbers = Numbers::parse(
            &fixture("PROTO_NUMBER_CHANGED/old/proto-numbers.json"),
            "old",
        )
        .expect("numbers");
        let mut swapped = numbers.clone();
        let color = &mut swapped.enums.get_mut("Color").expect("Color").numbers;
        let (red, green) = (color["red"], color["green"]);
        color.insert("red".into(), green);
        color.insert("green".into(), red);
        let c = crate::compare(&tree("old", &text, numbers), &tree("new", &text, swapped))
            .expect("compare");
        let got: Vec<(String, Option<bool>)> =
            found(&c).into_iter().map(|(f, _, x)| (f, x)).collect();
        assert_eq!(
            got,
            vec![
                (
                    "PROTO_NUMBER_CHANGED sample#Color.green".to_owned(),
                    Some(true)
                ),
                (
                    "PROTO_NUMBER_REUSED sample#Color.green".to_owned(),
                    Some(true)
                ),
                (
                    "PROTO_NUMBER_CHANGED sample#Color.red".to_owned(),
                    Some(true)
                ),
                (
                    "PROTO_NUMBER_REUSED sample#Color.red".to_owned(),
                    Some(true)
                ),
            ]
        );
        let x = c
            .findings
            .iter()
            .find(|f| {
                *f.finding.rule == catalog::PROTO_NUMBER_REUSED
                    && f.finding.at.member.as_deref() == Some("red")
            })
            .and_then(|f| f.counterexample.as_ref())
            .expect("a counterexample");
        assert_eq!(
            x.verdicts[0].detail,
            "reads \u{e000}/color\u{e001} as \"green\""
        );
    }

    /// A side made of a descriptor alone (the models only name schema files).
    fn side(messages: Value) -> Side {
        let json = json!({
            "version": "0.0.0", "package": "t", "absent_keys": 2046, "unknown_json": 2047,
            "records": {}, "messages": messages, "enums": {},
        });
        let descriptor = Descriptor::from_json(&json).expect("descriptor");
        Side {
            label: "t".into(),
            table: "t.json".into(),
            numbers: Numbers::default(),
            codec: Codec::new(&descriptor),
            descriptor,
        }
    }

    #[test]
    fn descriptors_compare_oneof_moves_form_changes_and_positional_items() {
        let union = |variants: Value| json!({"union": {"style": "external", "tag": "", "content": null, "variants": variants}});
        let structure = |fields: Value| json!({"struct": {"extra": false, "fields": fields}});
        let old = side(json!({
            "A": union(json!([{"tag": "x", "number": 1, "ty": null}, {"tag": "y", "number": 2, "ty": "u32"}])),
            "B": union(json!([{"tag": "z", "number": 1, "ty": null}])),
            "C": structure(json!([{"key": "p", "number": 1, "presence": "required", "ty": "u32"}])),
            "CListItemList": {"wrapper": {"list": "u32"}},
            "DPairTuple": {"tuple": ["u32", "string"]},
        }));
        let new = side(json!({
            "A": union(json!([{"tag": "x", "number": 1, "ty": null}])),
            "B": union(json!([{"tag": "z", "number": 1, "ty": null}, {"tag": "y", "number": 2, "ty": "u32"}])),
            "C": union(json!([{"tag": "p", "number": 1, "ty": "u32"}])),
            "CListItemList": {"wrapper": {"list": "i32"}},
            "DPairTuple": {"tuple": ["u64", "string", "bool"]},
        }));
        let model = Tree::from_texts(
            "m",
            None,
            vec![(
                "sample".into(),
                fixture("PROTO_NUMBER_CHANGED/old/sample.schema.json"),
            )],
        )
        .expect("model")
        .model;
        let got: Vec<(String, String)> = diff(&old, &new, &model, &model)
            .into_iter()
            .map(|f| (format!("{} {}", f.rule.id, f.at), f.detail))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "PROTO_ONEOF_MEMBER_REMOVED #A.y".to_owned(),
                    "\u{e000}A\u{e001} lost the oneof member \u{e000}y\u{e001} (number 2); it is now a member of \u{e000}B\u{e001}".to_owned()
                ),
                (
                    "PROTO_ONEOF_CHANGED #C".to_owned(),
                    "\u{e000}C\u{e001} is now a union message: its fields became members of a oneof".to_owned()
                ),
                (
                    "PROTO_ENCODING_CHANGED #CListItemList.items".to_owned(),
                    "\u{e000}CListItemList.items\u{e001} is now repeated sint32, was repeated uint32 (both packed varint)".to_owned()
                ),
                (
                    "PROTO_INTEGER_WIDENED #DPairTuple.item0".to_owned(),
                    "\u{e000}DPairTuple.item0\u{e001} is now uint64, was uint32 (both varint)".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn type_changes_are_classified_by_wire_type_then_encoding_then_width() {
        // (old, new, rule)
        let cases: &[(Value, Value, Option<&str>)] = &[
            (json!("u32"), json!("u32"), None),
            (
                json!("u32"),
                json!("string"),
                Some("PROTO_WIRE_TYPE_CHANGED"),
            ),
            (json!("f64"), json!("u64"), Some("PROTO_WIRE_TYPE_CHANGED")),
            (
                json!({"enum": "E"}),
                json!("string"),
                Some("PROTO_WIRE_TYPE_CHANGED"),
            ),
            (
                json!("u32"),
                json!({"list": "u32"}),
                Some("PROTO_WIRE_TYPE_CHANGED"),
            ),
            (
                json!({"list": "u32"}),
                json!({"list": "f64"}),
                Some("PROTO_WIRE_TYPE_CHANGED"),
            ),
            (json!("u32"), json!("i32"), Some("PROTO_ENCODING_CHANGED")),
            (json!("i64"), json!("u64"), Some("PROTO_ENCODING_CHANGED")),
            (json!("bool"), json!("u8"), Some("PROTO_ENCODING_CHANGED")),
            (
                json!({"enum": "A"}),
                json!({"enum": "B"}),
                Some("PROTO_ENCODING_CHANGED"),
            ),
            (
                json!("string"),
                json!("node_id"),
                Some("PROTO_ENCODING_CHANGED"),
            ),
            (
                json!("string"),
                json!({"message": "M"}),
                Some("PROTO_ENCODING_CHANGED"),
            ),
            (
                json!(null),
                json!({"message": "M"}),
                Some("PROTO_ENCODING_CHANGED"),
            ),
            (json!("u8"), json!("u16"), Some("PROTO_INTEGER_WIDENED")),
            (json!("u32"), json!("u64"), Some("PROTO_INTEGER_WIDENED")),
            (json!("i32"), json!("i64"), Some("PROTO_INTEGER_WIDENED")),
            (
                json!({"list": "u32"}),
                json!({"list": "u64"}),
                Some("PROTO_INTEGER_WIDENED"),
            ),
            (json!("u64"), json!("u32"), Some("PROTO_INTEGER_NARROWED")),
        ];
        for (old, new, rule) in cases {
            assert_eq!(type_rule(old, new).map(|r| r.id), *rule, "{old} -> {new}");
        }
    }
}
