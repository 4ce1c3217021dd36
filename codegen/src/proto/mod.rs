//! The protobuf rendering of the model: a `.proto` file and a codec layout per contract version,
//! with field numbers pinned in [`NUMBERS_FILE`].
//!
//! Every struct becomes a message, every union a message with one `oneof` (and a catch-all member
//! holding the JSON of a value no variant fits), every string enum a proto3 enum (proto3 enums are
//! open; an unknown string is kept as JSON by the enclosing message), node ids `bytes`. Tuples and
//! lists that need presence or nest get small wrapper messages whose numbers are positional.
//!
//! Numbers are assigned once: a name already in the number file keeps its number, a new name gets
//! one above every number the table has ever used, and a name the current schemas no longer have
//! moves to the table's `reserved` list, so its number is never handed out again. The layout
//! (`*.layout.json`) is what `diagwire-proto` reads to encode and decode; it repeats the numbers
//! so the codec never reads the number file.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use diagwire_schema::model::{DefKind, IntFmt, Model, Payload, Presence, Style, Ty};
use diagwire_schema::{Version, release_module};
use serde_json::{Value, json};

use crate::{Output, REGEN_COMMAND};

/// The checked-in number file: every message, union and enum name with its field, variant or
/// value numbers, and the numbers of names that were removed (never reused).
pub const NUMBERS_FILE: &str = "proto/numbers.json";

/// Where the `.proto` files, layouts and the layout index go.
pub const PROTO_OUT: &str = "generated/proto";

/// Field number of `absent_keys` in every struct message: keys the record left out although the
/// canonical form writes them.
pub const ABSENT_KEYS: u32 = 2046;

/// Field number of `unknown_json` in every struct message (a JSON object of the keys the schema
/// does not know, or whose value its type cannot hold) and of the catch-all member of every union.
pub const UNKNOWN_JSON: u32 = 2047;

/// The highest field number protobuf allows.
const MAX_NUMBER: u32 = 536_870_911;

/// A protobuf value type as the codec sees it.
#[derive(Debug, Clone, PartialEq)]
enum PTy {
    /// `string`, `u8` … `i64`, `f64`, `bool`, `node_id`, `hex_id`, `json`.
    Scalar(&'static str),
    Enum(String),
    Msg(String),
    List(Box<PTy>),
}

#[derive(Debug, Clone)]
struct Field {
    key: String,
    presence: Presence,
    ty: PTy,
    doc: String,
    flatten: bool,
    pair: Option<String>,
}

#[derive(Debug, Clone)]
enum Shape {
    Struct {
        fields: Vec<Field>,
        extra: bool,
    },
    Union {
        style: Style,
        tag: String,
        content: Option<String>,
        variants: Vec<(String, Option<PTy>, String)>,
    },
    Wrapper(PTy),
    Tuple(Vec<PTy>),
}

#[derive(Debug, Clone)]
struct Msg {
    name: String,
    doc: String,
    shape: Shape,
}

#[derive(Debug, Clone, Default)]
struct Contract {
    messages: Vec<Msg>,
    enums: Vec<(String, Vec<String>, String)>,
    records: Vec<(String, String)>,
}

/// One numbering table: names with their numbers, and the numbers of removed names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// Current names → numbers.
    pub numbers: BTreeMap<String, u32>,
    /// Removed names → the numbers they had (never reused).
    pub reserved: BTreeMap<String, u32>,
}

impl Table {
    fn used(&self) -> impl Iterator<Item = u32> + '_ {
        self.numbers.values().chain(self.reserved.values()).copied()
    }

    /// The number of `name`, assigning the next free one when it is new.
    pub fn assign(&mut self, name: &str) -> u32 {
        if let Some(n) = self.numbers.get(name) {
            return *n;
        }
        let mut n = self.used().max().unwrap_or(0) + 1;
        while n == ABSENT_KEYS || n == UNKNOWN_JSON || (19_000..=19_999).contains(&n) {
            n += 1;
        }
        self.numbers.insert(name.to_owned(), n);
        n
    }

    /// The number `name` has or had (current names first).
    fn lookup(&self, name: &str) -> Option<u32> {
        self.numbers
            .get(name)
            .or_else(|| self.reserved.get(name))
            .copied()
    }

    /// Moves every name not in `keep` to `reserved`.
    pub fn retire(&mut self, keep: &[String]) {
        let gone: Vec<String> = self
            .numbers
            .keys()
            .filter(|k| !keep.contains(k))
            .cloned()
            .collect();
        for name in gone {
            let n = self.numbers.remove(&name).unwrap_or_default();
            let mut key = name.clone();
            if self.reserved.contains_key(&key) {
                key = format!("{name}#{n}");
            }
            self.reserved.insert(key, n);
        }
    }
}

/// The number file: message tables (struct fields and union variants by name) and enum tables.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Numbers {
    /// Per message or union.
    pub messages: BTreeMap<String, Table>,
    /// Per enum.
    pub enums: BTreeMap<String, Table>,
}

impl Numbers {
    /// Reads and checks the number file's text; `display` names it in messages.
    pub fn parse(text: &str, display: &str) -> Result<Numbers> {
        let v: Value =
            serde_json::from_str(text).with_context(|| format!("{display}: not JSON"))?;
        let mut out = Numbers::default();
        for (section, target) in [("messages", &mut out.messages), ("enums", &mut out.enums)] {
            let Some(obj) = v.get(section).and_then(Value::as_object) else {
                bail!("{display}#/{section}: missing or not an object");
            };
            for (name, t) in obj {
                let mut table = Table::default();
                for (part, map) in [
                    ("numbers", &mut table.numbers),
                    ("reserved", &mut table.reserved),
                ] {
                    let Some(entries) = t.get(part).and_then(Value::as_object) else {
                        bail!("{display}#/{section}/{name}/{part}: missing or not an object");
                    };
                    for (k, n) in entries {
                        let ptr = format!("{display}#/{section}/{name}/{part}/{k}");
                        let n = n
                            .as_u64()
                            .filter(|n| (1..=u64::from(MAX_NUMBER)).contains(n))
                            .with_context(|| format!("{ptr}: not a field number"))?;
                        map.insert(k.clone(), n as u32);
                    }
                }
                check_table(&table, &format!("{display}#/{section}/{name}"))?;
                target.insert(name.clone(), table);
            }
        }
        Ok(out)
    }

    /// The file's text: sorted keys, two-space indentation, a final newline.
    pub fn render(&self) -> String {
        let tables = |m: &BTreeMap<String, Table>| -> Value {
            Value::Object(
                m.iter()
                    .map(|(k, t)| {
                        (
                            k.clone(),
                            json!({"numbers": t.numbers, "reserved": t.reserved}),
                        )
                    })
                    .collect(),
            )
        };
        let v = json!({"enums": tables(&self.enums), "messages": tables(&self.messages)});
        serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
    }
}

/// A table may not give one number to two names, nor use the fixed numbers.
pub fn check_table(t: &Table, at: &str) -> Result<()> {
    let mut seen: BTreeMap<u32, String> = BTreeMap::new();
    for (name, n) in t.numbers.iter().chain(&t.reserved) {
        if *n == ABSENT_KEYS || *n == UNKNOWN_JSON || (19_000..=19_999).contains(n) {
            bail!("{at}/{name}: number {n} is reserved for the codec or by protobuf");
        }
        if let Some(other) = seen.insert(*n, name.clone()) {
            bail!("{at}/{name}: number {n} is also used by `{other}`");
        }
    }
    Ok(())
}

fn pascal(s: &str) -> String {
    diagwire_schema::model::variant_name(s)
}

fn snake(s: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in s.chars() {
        if c.is_ascii_uppercase() {
            if prev_lower {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            prev_lower = false;
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
            prev_lower = true;
        } else {
            if !out.ends_with('_') && !out.is_empty() {
                out.push('_');
            }
            prev_lower = false;
        }
    }
    let out = out.trim_end_matches('_').to_owned();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        format!("f_{out}")
    } else {
        out
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().trim().to_owned()
}

fn int_name(f: IntFmt) -> &'static str {
    f.rust()
}

struct Lower<'a> {
    model: &'a Model,
    out: Contract,
}

impl Lower<'_> {
    fn add(&mut self, name: String, doc: String, shape: Shape) -> PTy {
        if !self.out.messages.iter().any(|m| m.name == name) {
            self.out.messages.push(Msg {
                name: name.clone(),
                doc,
                shape,
            });
        }
        PTy::Msg(name)
    }

    /// A type that can stand alone in a field: a list is wrapped when `wrap_lists`.
    fn ty(&mut self, t: &Ty, owner: &str, field: &str) -> PTy {
        match t {
            Ty::Str => PTy::Scalar("string"),
            Ty::Int(f) => PTy::Scalar(int_name(*f)),
            Ty::F64 => PTy::Scalar("f64"),
            Ty::Bool => PTy::Scalar("bool"),
            Ty::Json => PTy::Scalar("json"),
            Ty::Ref(n) => match self.model.def(n).map(|d| &d.kind) {
                Some(DefKind::Struct(_)) | Some(DefKind::Union(_)) => PTy::Msg(n.clone()),
                Some(DefKind::Enum { .. }) => PTy::Enum(n.clone()),
                Some(DefKind::NodeId) => PTy::Scalar("node_id"),
                Some(DefKind::NodeIdHex) => PTy::Scalar("hex_id"),
                Some(DefKind::Array(inner)) => {
                    let inner = inner.clone();
                    self.list(&inner, n, "item")
                }
                None => PTy::Scalar("json"),
            },
            Ty::Vec(inner) => self.list(inner, owner, field),
            Ty::Tuple(items) => {
                let name = format!("{owner}{}Tuple", pascal(field));
                let items = items
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        let t = self.ty(t, &name, &format!("item{i}"));
                        self.unlisted(t, &name, &format!("item{i}"))
                    })
                    .collect();
                self.add(
                    name,
                    format!("A tuple of `{owner}.{field}`: positional fields 1, 2, …"),
                    Shape::Tuple(items),
                )
            }
        }
    }

    fn list(&mut self, inner: &Ty, owner: &str, field: &str) -> PTy {
        let i = self.ty(inner, owner, field);
        let i = self.unlisted(i, owner, &format!("{field}_item"));
        PTy::List(Box::new(i))
    }

    /// Wraps a list in a message (for a list in a list, a oneof or a field with presence).
    fn unlisted(&mut self, t: PTy, owner: &str, field: &str) -> PTy {
        match t {
            PTy::List(_) => {
                let name = format!("{owner}{}List", pascal(field));
                self.add(
                    name,
                    format!(
                        "A list of `{owner}.{field}` as a message, so it can be absent or nested."
                    ),
                    Shape::Wrapper(t),
                )
            }
            t => t,
        }
    }

    fn def(&mut self, d: &diagwire_schema::model::Def) {
        let doc = first_line(&d.description);
        match &d.kind {
            DefKind::Struct(s) => {
                let mut fields = Vec::new();
                for p in &s.props {
                    let t = self.ty(&p.ty, &d.name, &p.name);
                    let t = match p.presence {
                        Presence::Nullable | Presence::Omittable => {
                            self.unlisted(t, &d.name, &p.name)
                        }
                        _ => t,
                    };
                    let pair = p.provenance.as_ref().map(|pr| {
                        let mut s = String::from("provenance pair:");
                        if let Some(src) = &pr.source {
                            let _ = write!(s, " source `{src}`");
                        }
                        if let Some(g) = &pr.gap {
                            let _ = write!(s, " gap `{g}`");
                        }
                        s
                    });
                    fields.push(Field {
                        key: p.name.clone(),
                        presence: p.presence,
                        ty: t,
                        doc: first_line(&p.description),
                        flatten: false,
                        pair,
                    });
                }
                if let Some(fl) = &s.flatten {
                    fields.push(Field {
                        key: format!("@{}", fl.field),
                        presence: Presence::Required,
                        ty: PTy::Msg(fl.union.clone()),
                        doc: format!("The keys of the absorbed union `{}`.", fl.union),
                        flatten: true,
                        pair: None,
                    });
                }
                self.out.messages.push(Msg {
                    name: d.name.clone(),
                    doc,
                    shape: Shape::Struct {
                        fields,
                        extra: d.facts.keeps_extra,
                    },
                });
            }
            DefKind::Enum { values, .. } => {
                self.out.enums.push((d.name.clone(), values.clone(), doc));
            }
            DefKind::Union(u) => {
                let mut variants = Vec::new();
                for v in &u.variants {
                    let t = match &v.payload {
                        Payload::Unit => None,
                        Payload::Def(n) => Some(PTy::Msg(n.clone())),
                        Payload::Ty(t) => {
                            let t = self.ty(t, &d.name, &v.rust);
                            Some(self.unlisted(t, &d.name, &v.rust))
                        }
                    };
                    variants.push((v.tag.clone(), t, first_line(&v.description)));
                }
                self.out.messages.push(Msg {
                    name: d.name.clone(),
                    doc,
                    shape: Shape::Union {
                        style: u.style,
                        tag: u.tag.clone(),
                        content: u.content.clone(),
                        variants,
                    },
                });
            }
            DefKind::NodeId | DefKind::NodeIdHex => {}
            DefKind::Array(t) => {
                let item = self.ty(t, &d.name, "item");
                let item = self.unlisted(item, &d.name, "item");
                self.out.messages.push(Msg {
                    name: d.name.clone(),
                    doc,
                    shape: Shape::Wrapper(PTy::List(Box::new(item))),
                });
            }
        }
    }
}

fn lower(model: &Model) -> Contract {
    let mut l = Lower {
        model,
        out: Contract::default(),
    };
    for d in model.defs() {
        l.def(d);
    }
    l.out.records = model
        .records()
        .into_iter()
        .map(|(k, d)| (k.to_owned(), d.name.clone()))
        .collect();
    l.out.messages.sort_by(|a, b| a.name.cmp(&b.name));
    l.out.enums.sort_by(|a, b| a.0.cmp(&b.0));
    l.out
}

/// The names a pinned table of this message holds: struct keys or union tags.
fn table_names(m: &Msg) -> Option<Vec<String>> {
    match &m.shape {
        Shape::Struct { fields, .. } => Some(fields.iter().map(|f| f.key.clone()).collect()),
        Shape::Union { variants, .. } => Some(variants.iter().map(|v| v.0.clone()).collect()),
        _ => None,
    }
}

/// Assigns numbers for every name of `c` not yet in `n`.
fn assign(n: &mut Numbers, c: &Contract) {
    for m in &c.messages {
        if let Some(names) = table_names(m) {
            let t = n.messages.entry(m.name.clone()).or_default();
            for name in names {
                t.assign(&name);
            }
        }
    }
    for (e, values, _) in &c.enums {
        let t = n.enums.entry(e.clone()).or_default();
        for v in values {
            t.assign(v);
        }
    }
}

/// Reserves every name the current contract `c` no longer has.
fn retire(n: &mut Numbers, c: &Contract) {
    for (name, t) in n.messages.iter_mut() {
        let keep = c
            .messages
            .iter()
            .find(|m| m.name == *name)
            .and_then(table_names)
            .unwrap_or_default();
        t.retire(&keep);
    }
    for (name, t) in n.enums.iter_mut() {
        let keep = c
            .enums
            .iter()
            .find(|e| e.0 == *name)
            .map(|e| e.1.clone())
            .unwrap_or_default();
        t.retire(&keep);
    }
}

/// The pinned numbers after seeing `models` (oldest first, the current schemas last): new names
/// numbered, names gone from the last model reserved.
pub fn update_numbers(pinned: &Numbers, models: &[&Model]) -> Numbers {
    let mut n = pinned.clone();
    let contracts: Vec<Contract> = models.iter().map(|m| lower(m)).collect();
    for c in &contracts {
        assign(&mut n, c);
    }
    if let Some(last) = contracts.last() {
        retire(&mut n, last);
    }
    n
}

fn ty_json(t: &PTy) -> Value {
    match t {
        PTy::Scalar(s) => json!(s),
        PTy::Enum(e) => json!({ "enum": e }),
        PTy::Msg(m) => json!({ "message": m }),
        PTy::List(i) => json!({ "list": ty_json(i) }),
    }
}

fn proto_ty(t: &PTy) -> String {
    match t {
        PTy::Scalar(s) => match *s {
            "string" => "string",
            "u8" | "u16" | "u32" => "uint32",
            "u64" => "uint64",
            "i32" => "sint32",
            "i64" => "sint64",
            "f64" => "double",
            "bool" => "bool",
            _ => "bytes",
        }
        .to_owned(),
        PTy::Enum(e) | PTy::Msg(e) => e.clone(),
        PTy::List(i) => format!("repeated {}", proto_ty(i)),
    }
}

fn presence_name(p: Presence) -> &'static str {
    match p {
        Presence::Required => "required",
        Presence::Nullable => "nullable",
        Presence::Omittable => "omittable",
        Presence::Default => "default",
        Presence::SkipDefault => "skip-default",
    }
}

fn style_name(s: Style) -> &'static str {
    match s {
        Style::Internal => "internal",
        Style::Adjacent => "adjacent",
        Style::External => "external",
    }
}

fn number_of(n: &Numbers, msg: &str, name: &str) -> Result<u32> {
    n.messages
        .get(msg)
        .and_then(|t| t.lookup(name))
        .with_context(|| format!("{NUMBERS_FILE}: no number for `{msg}.{name}`"))
}

fn reserved_lines(out: &mut String, t: Option<&Table>, indent: &str) {
    let Some(t) = t else { return };
    if t.reserved.is_empty() {
        return;
    }
    let nums: Vec<String> = t.reserved.values().map(u32::to_string).collect();
    let names: Vec<String> = t
        .reserved
        .keys()
        .map(|k| format!("\"{}\"", snake(k.split('#').next().unwrap_or(k))))
        .collect();
    let _ = writeln!(out, "{indent}reserved {};", nums.join(", "));
    let _ = writeln!(out, "{indent}reserved {};", names.join(", "));
}

/// Renders one contract: the `.proto` text and the layout JSON.
fn render(c: &Contract, n: &Numbers, package: &str, version: &str) -> Result<(String, String)> {
    let mut p = String::new();
    let _ = writeln!(
        p,
        "// This file is generated by `{REGEN_COMMAND}` from the schemas of contract version {version}. Do not edit it by hand.\n"
    );
    let _ = writeln!(p, "syntax = \"proto3\";\n\npackage {package};\n");
    let _ = writeln!(
        p,
        "// Every struct message has `absent_keys` ({ABSENT_KEYS}: keys the record left out although the\n// canonical form writes them) and `unknown_json` ({UNKNOWN_JSON}: a JSON object of the keys the schema\n// does not know, or whose value its type cannot hold). Every union's oneof has `unknown_json`\n// ({UNKNOWN_JSON}): the JSON of a value no known variant fits. Node ids are 32 `bytes`.\n"
    );
    let _ = writeln!(p, "// A variant without content.\nmessage Unit {{}}\n");
    let mut messages = serde_json::Map::new();
    for m in &c.messages {
        let _ = writeln!(p, "// {}\nmessage {} {{", m.doc, m.name);
        let layout = match &m.shape {
            Shape::Struct { fields, extra } => {
                let mut rows = Vec::new();
                let mut sorted: Vec<(u32, &Field)> = Vec::new();
                for f in fields {
                    sorted.push((number_of(n, &m.name, &f.key)?, f));
                }
                sorted.sort_by_key(|(num, _)| *num);
                for (num, f) in &sorted {
                    let label = match (f.presence, &f.ty) {
                        (
                            Presence::Nullable | Presence::Omittable,
                            PTy::Scalar(_) | PTy::Enum(_),
                        ) => "optional ",
                        _ => "",
                    };
                    let name = if f.flatten {
                        snake(&f.key[1..])
                    } else {
                        snake(&f.key)
                    };
                    let _ = writeln!(p, "  // {} [{}]", f.doc, presence_name(f.presence));
                    if let Some(pair) = &f.pair {
                        let _ = writeln!(p, "  // {pair}");
                    }
                    let _ = writeln!(
                        p,
                        "  {label}{} {name} = {num}{};",
                        proto_ty(&f.ty),
                        if f.key != name && !f.flatten {
                            format!(" [json_name = \"{}\"]", f.key)
                        } else {
                            String::new()
                        }
                    );
                    let mut row = json!({
                        "key": f.key,
                        "number": num,
                        "presence": presence_name(f.presence),
                        "ty": ty_json(&f.ty),
                    });
                    if f.flatten {
                        row["flatten"] = json!(true);
                    }
                    rows.push(row);
                }
                reserved_lines(&mut p, n.messages.get(&m.name), "  ");
                let _ = writeln!(p, "  repeated string absent_keys = {ABSENT_KEYS};");
                let _ = writeln!(p, "  bytes unknown_json = {UNKNOWN_JSON};");
                json!({ "struct": { "extra": extra, "fields": rows } })
            }
            Shape::Union {
                style,
                tag,
                content,
                variants,
            } => {
                let mut rows = Vec::new();
                let mut sorted = Vec::new();
                for v in variants {
                    sorted.push((number_of(n, &m.name, &v.0)?, v));
                }
                sorted.sort_by_key(|(num, _)| *num);
                reserved_lines(&mut p, n.messages.get(&m.name), "  ");
                let _ = writeln!(p, "  oneof variant {{");
                let mut used = Vec::new();
                for (num, (tag_value, t, doc)) in &sorted {
                    let mut name = snake(tag_value);
                    if used.contains(&name) {
                        name = format!("{name}_{num}");
                    }
                    used.push(name.clone());
                    let ty = t.as_ref().map_or("Unit".to_owned(), proto_ty);
                    let _ = writeln!(p, "    // `{tag_value}`: {doc}");
                    let _ = writeln!(p, "    {ty} {name} = {num};");
                    rows.push(json!({
                        "tag": tag_value,
                        "number": num,
                        "ty": t.as_ref().map_or(Value::Null, ty_json),
                    }));
                }
                let _ = writeln!(p, "    bytes unknown_json = {UNKNOWN_JSON};");
                let _ = writeln!(p, "  }}");
                json!({ "union": {
                    "style": style_name(*style),
                    "tag": tag,
                    "content": content,
                    "variants": rows,
                }})
            }
            Shape::Wrapper(t) => {
                let _ = writeln!(p, "  {} items = 1;", proto_ty(t));
                json!({ "wrapper": ty_json(t) })
            }
            Shape::Tuple(items) => {
                for (i, t) in items.iter().enumerate() {
                    let _ = writeln!(p, "  {} item{i} = {};", proto_ty(t), i + 1);
                }
                json!({ "tuple": items.iter().map(ty_json).collect::<Vec<_>>() })
            }
        };
        let _ = writeln!(p, "}}\n");
        messages.insert(m.name.clone(), layout);
    }
    let mut enums = serde_json::Map::new();
    for (e, values, doc) in &c.enums {
        let prefix = snake(e).to_uppercase();
        let _ = writeln!(p, "// {doc}\nenum {e} {{");
        let _ = writeln!(p, "  {prefix}_UNSPECIFIED = 0;");
        let t = n
            .enums
            .get(e)
            .with_context(|| format!("{NUMBERS_FILE}: no table for enum `{e}`"))?;
        let mut rows = serde_json::Map::new();
        let mut sorted = Vec::new();
        for v in values {
            let num = t
                .lookup(v)
                .with_context(|| format!("{NUMBERS_FILE}: no number for `{e}.{v}`"))?;
            sorted.push((num, v));
        }
        sorted.sort();
        let mut used = Vec::new();
        for (num, v) in sorted {
            let mut name = format!("{prefix}_{}", snake(v).to_uppercase());
            if used.contains(&name) {
                name = format!("{name}_{num}");
            }
            used.push(name.clone());
            let _ = writeln!(p, "  // `{v}`\n  {name} = {num};");
            rows.insert(v.clone(), json!(num));
        }
        if !t.reserved.is_empty() {
            let nums: Vec<String> = t.reserved.values().map(u32::to_string).collect();
            let _ = writeln!(p, "  reserved {};", nums.join(", "));
        }
        let _ = writeln!(p, "}}\n");
        enums.insert(e.clone(), Value::Object(rows));
    }
    let records: serde_json::Map<String, Value> = c
        .records
        .iter()
        .map(|(k, d)| (k.clone(), json!(d)))
        .collect();
    let layout = json!({
        "version": version,
        "package": package,
        "absent_keys": ABSENT_KEYS,
        "unknown_json": UNKNOWN_JSON,
        "records": records,
        "messages": messages,
        "enums": enums,
    });
    let p = p.trim_end().to_owned() + "\n";
    Ok((p, serde_json::to_string_pretty(&layout)? + "\n"))
}

/// The codec layout (the text of a `*.layout.json`) of `model` numbered by `numbers`, exactly as
/// [`outputs`] renders it for a release or the current schemas. Fails when `numbers` has no number
/// for a field, variant or value of the model. The schema review compares two sides' layouts.
pub fn layout(model: &Model, numbers: &Numbers, package: &str, version: &str) -> Result<String> {
    render(&lower(model), numbers, package, version).map(|(_, layout)| layout)
}

/// Reads the pinned number file (empty when it does not exist yet).
pub fn read_numbers(root: &Path) -> Result<Numbers> {
    let path = root.join(NUMBERS_FILE);
    match fs::read_to_string(&path) {
        Ok(text) => Numbers::parse(&text, NUMBERS_FILE),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Numbers::default()),
        Err(e) => Err(e).with_context(|| format!("reading {NUMBERS_FILE}")),
    }
}

/// Where each release's numbers are frozen: `proto/releases/<version>.json`, written once by
/// `cargo codegen release` and never regenerated.
pub const FROZEN_DIR: &str = "proto/releases";

/// The numbers `model` uses, taken from `numbers`: what a release freezes.
pub fn freeze(numbers: &Numbers, model: &Model) -> Result<Numbers> {
    let c = lower(model);
    let mut out = Numbers::default();
    for m in &c.messages {
        if let Some(names) = table_names(m) {
            let t = out.messages.entry(m.name.clone()).or_default();
            for name in names {
                t.numbers
                    .insert(name.clone(), number_of(numbers, &m.name, &name)?);
            }
        }
    }
    for (e, values, _) in &c.enums {
        let t = out.enums.entry(e.clone()).or_default();
        for v in values {
            let n = numbers
                .enums
                .get(e)
                .and_then(|t| t.lookup(v))
                .with_context(|| format!("{NUMBERS_FILE}: no number for `{e}.{v}`"))?;
            t.numbers.insert(v.clone(), n);
        }
    }
    Ok(out)
}

/// The frozen numbers of release `v`, as `cargo codegen release` wrote them.
pub fn read_frozen(root: &Path, v: &Version) -> Result<Numbers> {
    let rel = format!("{FROZEN_DIR}/{v}.json");
    let text = fs::read_to_string(root.join(&rel)).with_context(|| {
        format!("reading {rel}: every release freezes its protobuf numbers (`{REGEN_COMMAND} release` writes them)")
    })?;
    Numbers::parse(&text, &rel)
}

/// Checks the number table against every frozen release (oldest first): a name a release numbered
/// keeps that number (as a current or a reserved name), and no number of a message or enum ever
/// names two different things across the releases and the table.
pub fn check_frozen(numbers: &Numbers, frozen: &[(Version, Numbers)]) -> Result<()> {
    let mut problems = Vec::new();
    // (section, message or enum, number) -> (name, where)
    let mut owners: BTreeMap<(&str, &str, u32), (String, String)> = BTreeMap::new();
    for (v, f) in frozen {
        for (section, tables, pinned) in [
            ("messages", &f.messages, &numbers.messages),
            ("enums", &f.enums, &numbers.enums),
        ] {
            for (owner, t) in tables {
                for (name, n) in &t.numbers {
                    let kept = pinned.get(owner).is_some_and(|p| {
                        p.numbers.get(name) == Some(n)
                            || p.reserved.get(name) == Some(n)
                            || p.reserved.get(&format!("{name}#{n}")) == Some(n)
                    });
                    if !kept {
                        let now = pinned
                            .get(owner)
                            .and_then(|p| p.numbers.get(name))
                            .map_or("no number".to_owned(), |x| format!("number {x}"));
                        problems.push(format!("{NUMBERS_FILE}#/{section}/{owner}: release {v} numbered `{name}` {n}, the table gives it {now}; a released number never changes"));
                    }
                    let at = format!("release {v}");
                    match owners.get(&(section, owner.as_str(), *n)) {
                        Some((other, w)) if other != name => problems.push(format!(
                            "{NUMBERS_FILE}#/{section}/{owner}: number {n} is `{name}` in {at} but `{other}` in {w}; a number is never reused"
                        )),
                        Some(_) => {}
                        None => {
                            owners.insert((section, owner.as_str(), *n), (name.clone(), at));
                        }
                    }
                }
            }
        }
    }
    for (section, tables) in [("messages", &numbers.messages), ("enums", &numbers.enums)] {
        for (owner, t) in tables {
            for (name, n) in &t.numbers {
                if let Some((other, w)) = owners.get(&(section, owner.as_str(), *n)) {
                    if other != name {
                        problems.push(format!("{NUMBERS_FILE}#/{section}/{owner}: number {n} is `{name}` in the table but `{other}` in {w}; a number is never reused"));
                    }
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        bail!("{}", problems.join("\n"))
    }
}

/// The numbers of the current schemas (the pinned table after seeing every release and the
/// current model, which must agree with every release's frozen numbers: [`check_frozen`]) and each
/// release's frozen numbers.
pub fn numbers(
    root: &Path,
    releases: &[(Version, Model)],
    current: &Model,
) -> Result<(Numbers, Vec<(Version, Numbers)>)> {
    let pinned = read_numbers(root)?;
    let mut models: Vec<&Model> = releases.iter().map(|(_, m)| m).collect();
    models.push(current);
    let numbers = update_numbers(&pinned, &models);
    for (name, t) in numbers.messages.iter().chain(&numbers.enums) {
        check_table(t, &format!("{NUMBERS_FILE}#/{name}"))?;
    }
    let frozen: Vec<(Version, Numbers)> = releases
        .iter()
        .map(|(v, _)| Ok((v.clone(), read_frozen(root, v)?)))
        .collect::<Result<_>>()?;
    check_frozen(&numbers, &frozen)?;
    Ok((numbers, frozen))
}

/// Every proto output: the number file, a `.proto` and a layout per release and for the current
/// schemas, and `layouts.rs`, the index `diagwire-generated` compiles in (feature `proto`) for
/// `diagwire-proto`. A release is rendered with its frozen numbers.
pub fn outputs(
    releases: &[(Version, Model)],
    current: &Model,
    version: &Version,
    (numbers, frozen): &(Numbers, Vec<(Version, Numbers)>),
) -> Result<Vec<Output>> {
    let mut out = vec![(PathBuf::from(NUMBERS_FILE), numbers.render())];
    let mut index = Vec::new();
    let mut emit =
        |model: &Model, n: &Numbers, label: &str, v: &Version, module: &str, package: &str| {
            let (proto, layout) = render(&lower(model), n, package, &v.to_string())?;
            out.push((PathBuf::from(format!("{PROTO_OUT}/{module}.proto")), proto));
            out.push((
                PathBuf::from(format!("{PROTO_OUT}/{module}.layout.json")),
                layout,
            ));
            index.push(format!(
                "    (\"{label}\", include_str!(\"{module}.layout.json\")),"
            ));
            anyhow::Ok(())
        };
    for ((v, m), (_, f)) in releases.iter().zip(frozen) {
        let module = release_module(v);
        emit(
            m,
            f,
            &v.to_string(),
            v,
            &format!("diagwire/releases/{module}"),
            &format!("diagwire.releases.{module}"),
        )?;
    }
    emit(
        current,
        numbers,
        "current",
        version,
        "diagwire/v1",
        "diagwire.v1",
    )?;
    let rs = format!(
        "// This file is generated by `{REGEN_COMMAND}` from every folder in `schemas/releases/` and `schemas/` (version {version}). Do not edit it by hand.\n\n/// The codec layout of every release, oldest first, then of the current schemas (`\"current\"`).\npub const LAYOUTS: &[(&str, &str)] = &[\n{}\n];\n",
        index.join("\n")
    );
    out.push((PathBuf::from(format!("{PROTO_OUT}/layouts.rs")), rs));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(numbers: &[(&str, u32)], reserved: &[(&str, u32)]) -> Table {
        Table {
            numbers: numbers.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            reserved: reserved.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
        }
    }

    #[test]
    fn numbering_keeps_pinned_numbers_reserves_removed_names_and_never_reuses() {
        // (case, pinned, names of the new model, expected)
        let cases: &[(&str, Table, &[&str], Table)] = &[
            (
                "new names are numbered in order",
                table(&[], &[]),
                &["a", "b"],
                table(&[("a", 1), ("b", 2)], &[]),
            ),
            (
                "pinned numbers stay when the order changes",
                table(&[("a", 1), ("b", 2)], &[]),
                &["b", "a"],
                table(&[("a", 1), ("b", 2)], &[]),
            ),
            (
                "a removed name is reserved",
                table(&[("a", 1), ("b", 2)], &[]),
                &["a"],
                table(&[("a", 1)], &[("b", 2)]),
            ),
            (
                "a new name skips reserved numbers",
                table(&[("a", 1)], &[("b", 2)]),
                &["a", "c"],
                table(&[("a", 1), ("c", 3)], &[("b", 2)]),
            ),
            (
                "a name that comes back gets a fresh number",
                table(&[("a", 1)], &[("b", 2)]),
                &["a", "b"],
                table(&[("a", 1), ("b", 3)], &[("b", 2)]),
            ),
            (
                "the codec's fixed numbers are skipped",
                table(&[("a", 2045)], &[]),
                &["a", "b"],
                table(&[("a", 2045), ("b", 2048)], &[]),
            ),
        ];
        for (case, pinned, names, expected) in cases {
            let mut t = pinned.clone();
            for n in *names {
                t.assign(n);
            }
            let keep: Vec<String> = names.iter().map(|s| s.to_string()).collect();
            t.retire(&keep);
            assert_eq!(&t, expected, "{case}");
            check_table(&t, case).unwrap_or_else(|e| panic!("{case}: {e:#}"));
        }
    }

    #[test]
    fn a_number_file_that_gives_one_number_twice_is_refused_with_its_location() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "duplicate",
                r#"{"enums":{},"messages":{"M":{"numbers":{"a":1,"b":1},"reserved":{}}}}"#,
                "n.json#/messages/M/b: number 1 is also used by `a`",
            ),
            (
                "reserved duplicate",
                r#"{"enums":{},"messages":{"M":{"numbers":{"a":1},"reserved":{"z":1}}}}"#,
                "n.json#/messages/M/z: number 1 is also used by `a`",
            ),
            (
                "fixed number",
                r#"{"enums":{"E":{"numbers":{"a":2047},"reserved":{}}},"messages":{}}"#,
                "n.json#/enums/E/a: number 2047 is reserved for the codec or by protobuf",
            ),
            (
                "zero",
                r#"{"enums":{},"messages":{"M":{"numbers":{"a":0},"reserved":{}}}}"#,
                "n.json#/messages/M/numbers/a: not a field number",
            ),
            (
                "missing section",
                r#"{"messages":{}}"#,
                "n.json#/enums: missing or not an object",
            ),
        ];
        for (case, text, message) in cases {
            let e = Numbers::parse(text, "n.json").expect_err(case);
            assert_eq!(format!("{e:#}"), *message, "{case}");
        }
    }

    fn nums(messages: &[(&str, &[(&str, u32)])]) -> Numbers {
        Numbers {
            messages: messages
                .iter()
                .map(|(m, t)| (m.to_string(), table(t, &[])))
                .collect(),
            enums: BTreeMap::new(),
        }
    }

    #[test]
    fn a_table_that_changes_or_reuses_a_released_number_is_refused() {
        let v = |s: &str| -> Version { s.parse().expect("version") };
        let r100 = nums(&[("M", &[("a", 1), ("b", 2)])]);
        let r110 = nums(&[("M", &[("a", 1), ("b", 2), ("c", 3)])]);
        let good = Numbers {
            messages: [("M".to_owned(), table(&[("a", 1), ("c", 3)], &[("b", 2)]))].into(),
            enums: BTreeMap::new(),
        };
        check_frozen(
            &good,
            &[(v("1.0.0"), r100.clone()), (v("1.1.0"), r110.clone())],
        )
        .expect("a removed name stays reserved");
        // (case, table, frozen releases, message)
        type Case = (&'static str, Numbers, Vec<(Version, Numbers)>, &'static str);
        let cases: Vec<Case> = vec![
            (
                "number changed",
                nums(&[("M", &[("a", 4), ("b", 2)])]),
                vec![(v("1.0.0"), r100.clone())],
                "proto/numbers.json#/messages/M: release 1.0.0 numbered `a` 1, the table gives it number 4; a released number never changes",
            ),
            (
                "removed name dropped instead of reserved",
                nums(&[("M", &[("a", 1)])]),
                vec![(v("1.0.0"), r100.clone())],
                "proto/numbers.json#/messages/M: release 1.0.0 numbered `b` 2, the table gives it no number; a released number never changes",
            ),
            (
                "number reused across releases",
                nums(&[("M", &[("a", 1), ("b", 2), ("c", 3)])]),
                vec![
                    (v("1.0.0"), r100.clone()),
                    (v("1.1.0"), nums(&[("M", &[("a", 1), ("b", 2), ("c", 2)])])),
                ],
                "proto/numbers.json#/messages/M: release 1.1.0 numbered `c` 2, the table gives it number 3; a released number never changes\nproto/numbers.json#/messages/M: number 2 is `c` in release 1.1.0 but `b` in release 1.0.0; a number is never reused",
            ),
            (
                "table reuses a released number for a new name",
                nums(&[("M", &[("a", 1), ("d", 2)])]),
                vec![(v("1.0.0"), r100.clone())],
                "proto/numbers.json#/messages/M: release 1.0.0 numbered `b` 2, the table gives it no number; a released number never changes\nproto/numbers.json#/messages/M: number 2 is `d` in the table but `b` in release 1.0.0; a number is never reused",
            ),
        ];
        for (case, table, frozen, message) in cases {
            let e = check_frozen(&table, &frozen).expect_err(case);
            assert_eq!(format!("{e:#}"), message, "{case}");
        }
    }

    #[test]
    fn the_checked_in_table_agrees_with_every_frozen_release() {
        let root = crate::workspace_root();
        let numbers = read_numbers(&root).expect("number file");
        let releases = crate::released_versions(&root).expect("releases");
        assert!(!releases.is_empty());
        let frozen: Vec<(Version, Numbers)> = releases
            .iter()
            .map(|v| (v.clone(), read_frozen(&root, v).expect("frozen numbers")))
            .collect();
        check_frozen(&numbers, &frozen).expect("numbers agree with the releases");
        for (v, f) in &frozen {
            let files =
                crate::read_schemas(&root, &format!("schemas/releases/{v}")).expect("schemas");
            let model = diagwire_schema::load(&files).expect("model");
            assert_eq!(&freeze(&numbers, &model).expect("freeze"), f, "release {v}");
        }
    }

    #[test]
    fn proto_names_are_snake_case_identifiers() {
        let cases = [
            ("DialStarted", "dial_started"),
            ("conn_type", "conn_type"),
            ("RemoteInfo.conn_type", "remote_info_conn_type"),
            ("v4", "v4"),
            ("4xx", "f_4xx"),
            ("some-thing", "some_thing"),
        ];
        for (input, expected) in cases {
            assert_eq!(snake(input), expected, "{input}");
        }
    }
}
