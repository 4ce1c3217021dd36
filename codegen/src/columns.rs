//! Renders the fleet dataset's columnar schema from the model: a data table of Rust constants
//! (`generated/fleet/columns.rs`, which `diagwire-fleet` compiles in and turns into Arrow schemas,
//! so the generator never depends on arrow) and its reference page (`docs/reference/dataset.md`), one row per column.
//!
//! The mapping, in one place: strings, closed and open enums and hex node ids are text; every
//! integer is a signed 64-bit column (no unsigned columns: a `uint64` value above 2^63−1 is written
//! `null` there and kept exactly in the row's `extra_json`); numbers are doubles; a node id array
//! is its 64-character hex text; an object with properties is a struct (its unknown keys go to
//! `extra_json`), an object without properties, a union, a tuple or any JSON is JSON text; an
//! array is a list. A definition met again inside itself is JSON text (no recursive columns).

use std::collections::BTreeMap;
use std::fmt::Write;

use diagwire_schema::Version;
use diagwire_schema::model::{Def, DefKind, Model, Payload, Prop, Ty, UnionStyle};

use crate::docs::Since;

/// The folder of the generated data table (`cargo codegen` owns its `.rs` files).
pub const FLEET_OUT: &str = "generated/fleet";

/// The generated data table, which `fleet/src/columns.rs` includes.
pub const COLUMNS_OUT: &str = "generated/fleet/columns.rs";

/// The generated reference page of the dataset.
pub const DATASET_DOC: &str = "docs/reference/dataset.md";

/// A column type as the generated table spells it.
#[derive(Clone)]
enum Col {
    Utf8,
    Int64,
    Float64,
    Boolean,
    NodeId,
    Json,
    TimestampMs,
    Struct(String),
    List(Box<Col>),
}

impl Col {
    fn rust(&self) -> String {
        match self {
            Col::Utf8 => "Ty::Utf8".into(),
            Col::Int64 => "Ty::Int64".into(),
            Col::Float64 => "Ty::Float64".into(),
            Col::Boolean => "Ty::Boolean".into(),
            Col::NodeId => "Ty::NodeId".into(),
            Col::Json => "Ty::Json".into(),
            Col::TimestampMs => "Ty::TimestampMs".into(),
            Col::Struct(n) => format!("Ty::Struct(&{})", const_name(n)),
            Col::List(i) => format!("Ty::List(&{})", i.rust()),
        }
    }

    fn words(&self) -> String {
        match self {
            Col::Utf8 => "string".into(),
            Col::Int64 => "int64".into(),
            Col::Float64 => "double".into(),
            Col::Boolean => "boolean".into(),
            Col::NodeId => "string (64-hex node id)".into(),
            Col::Json => "string (JSON text)".into(),
            Col::TimestampMs => "timestamp (milliseconds, UTC)".into(),
            Col::Struct(n) => format!("struct [`{n}`](#{})", n.to_lowercase()),
            Col::List(i) => format!("list of {}", i.words()),
        }
    }
}

fn const_name(def: &str) -> String {
    let mut out = String::from("S_");
    for (i, c) in def.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// `DialStarted` → `dial_started`, `node_started` stays.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            out.push('_');
        }
    }
    out
}

/// A struct rendered once: its fields and the field that holds the keys of an absorbed union.
struct StructOut {
    description: String,
    fields: Vec<(String, Col, String)>,
    rest: Option<String>,
}

struct Mapper<'m> {
    model: &'m Model,
    structs: BTreeMap<String, StructOut>,
    stack: Vec<String>,
}

impl Mapper<'_> {
    fn ty(&mut self, t: &Ty) -> Col {
        match t {
            Ty::Str => Col::Utf8,
            Ty::Int(_) => Col::Int64,
            Ty::F64 => Col::Float64,
            Ty::Bool => Col::Boolean,
            Ty::Json | Ty::Tuple(_) => Col::Json,
            Ty::Vec(i) => Col::List(Box::new(self.ty(i))),
            Ty::Ref(n) => self.def(n),
        }
    }

    fn def(&mut self, name: &str) -> Col {
        let Some(d) = self.model.def(name) else {
            return Col::Json;
        };
        match &d.kind {
            DefKind::Enum { .. } | DefKind::NodeIdHex => Col::Utf8,
            DefKind::NodeId => Col::NodeId,
            DefKind::Union(_) => Col::Json,
            DefKind::Array(t) => {
                let t = t.clone();
                Col::List(Box::new(self.ty(&t)))
            }
            DefKind::Struct(s) => {
                if s.props.is_empty() && s.flatten.is_none() {
                    // Parquet cannot hold a struct without fields.
                    return Col::Json;
                }
                if self.stack.iter().any(|n| n == name) {
                    return Col::Json;
                }
                if !self.structs.contains_key(name) {
                    self.stack.push(name.to_owned());
                    let out = self.struct_out(d);
                    self.stack.pop();
                    self.structs.insert(name.to_owned(), out);
                }
                Col::Struct(name.to_owned())
            }
        }
    }

    fn struct_out(&mut self, d: &Def) -> StructOut {
        let DefKind::Struct(s) = &d.kind else {
            unreachable!("OK because only structs are rendered as structs")
        };
        let mut fields = Vec::new();
        for p in &s.props {
            let c = self.ty(&p.ty);
            fields.push((p.name.clone(), c, prop_doc(p)));
        }
        let mut rest = None;
        if let Some(fl) = &s.flatten {
            if let Some(DefKind::Union(u)) = self.model.def(&fl.union).map(|d| &d.kind) {
                if u.style != UnionStyle::External {
                    fields.push((
                        u.tag.clone(),
                        Col::Utf8,
                        format!("The tag of the absorbed union `{}`.", fl.union),
                    ));
                }
                match &u.content {
                    Some(content) => fields.push((
                        content.clone(),
                        Col::Json,
                        format!("The content of the absorbed union `{}`.", fl.union),
                    )),
                    None => {
                        fields.push((
                            fl.field.clone(),
                            Col::Json,
                            format!(
                                "Every other key of the absorbed union `{}`, as one JSON object.",
                                fl.union
                            ),
                        ));
                        rest = Some(fl.field.clone());
                    }
                }
            }
        }
        StructOut {
            description: d.description.clone(),
            fields,
            rest,
        }
    }
}

fn prop_doc(p: &Prop) -> String {
    let mut s = p.description.clone();
    if let Some(u) = &p.unit {
        let _ = write!(s, " Unit: `{u}`.");
    }
    if let Some(a) = &p.absent {
        let _ = write!(s, " Null: {a}");
    }
    if matches!(p.ty, Ty::Int(diagwire_schema::model::IntWidth::U64)) {
        s.push_str(" (uint64: a value above 2^63−1 is null here and kept in `extra_json`.)");
    }
    s
}

/// Where a top-level column's value comes from.
enum From {
    Context(&'static str),
    Key(String),
    Variant(String),
    Extra,
}

struct ColumnOut {
    name: String,
    col: Col,
    from: From,
    doc: String,
    since: String,
}

struct TableOut {
    name: &'static str,
    record: String,
    /// Where its rows come from, as the reference says it.
    source: String,
    doc: &'static str,
    columns: Vec<ColumnOut>,
}

fn context(name: &str, col: Col, which: &'static str, doc: &str) -> ColumnOut {
    ColumnOut {
        name: name.into(),
        col,
        from: From::Context(which),
        doc: doc.into(),
        since: "dataset".into(),
    }
}

const RUN_ID: &str = "The run: the manifest's `run_id`, else the one run id the boot records agree on, else the bundle's directory name.";
const NODE: &str =
    "The node's directory label in the bundle (`orchestrator`, `relay`, `stage-0`, …).";
const NODE_ID: &str =
    "The node's id as 64-character lowercase hex, from its boot record (null when it has none).";
const EXTRA: &str = "Everything the columns do not hold, as one JSON object keyed by JSON pointer within the record: keys this contract does not know (at any depth), a whole event of an unknown type, and uint64 values above 2^63−1. Null when there is none.";

fn record_columns(
    m: &mut Mapper<'_>,
    since: &Since<'_>,
    def: &Def,
    skip: &[&str],
    out: &mut Vec<ColumnOut>,
) {
    let DefKind::Struct(s) = &def.kind else {
        return;
    };
    for p in &s.props {
        if skip.contains(&p.name.as_str()) {
            continue;
        }
        let col = m.ty(&p.ty);
        out.push(ColumnOut {
            name: p.name.clone(),
            col,
            from: From::Key(p.name.clone()),
            doc: prop_doc(p),
            since: since.field(&def.name, &p.name),
        });
    }
}

fn tables(model: &Model, since: &Since<'_>) -> (Vec<TableOut>, BTreeMap<String, StructOut>) {
    let mut m = Mapper {
        model,
        structs: BTreeMap::new(),
        stack: Vec::new(),
    };
    let record = |kind: &str| {
        model
            .records()
            .into_iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, d)| d)
    };
    let mut out = Vec::new();
    let specs: [(&str, &str, &str); 6] = [
        (
            "runs",
            "manifest",
            "One row per run: its manifest (the writer, the contract version, the nodes it lists). A run without a manifest has a row with only `run_id`, `bundle` and the partition columns.",
        ),
        (
            "nodes",
            "boot",
            "One row per node of a run: its latest boot record (the node's boot identity).",
        ),
        (
            "events",
            "event",
            "One row per event record: the envelope, the event's `type` tag, and one nullable struct column per known event type (named after the type in snake case) holding that type's fields; the struct of every other type is null. Every file's rows are sorted by `run_id`, `node` and `monotonic_seq` (a null one last), then `file_seq` and `record_index`.",
        ),
        (
            "snapshots",
            "snapshot",
            "One row per snapshot file: the file's sequence number, the envelope, and the body's tiers as nested struct columns.",
        ),
        ("finalize", "finalize", "One row per finalize record."),
        (
            "vastai",
            "vastai",
            "One row per vast.ai monitoring record, with the kind its file name gives.",
        ),
    ];
    for (name, kind, doc) in specs {
        let Some(def) = record(kind) else { continue };
        let mut columns = vec![context("run_id", Col::Utf8, "run_id", RUN_ID)];
        match name {
            "runs" => {
                columns.push(context(
                    "bundle",
                    Col::Utf8,
                    "bundle",
                    "The bundle's file name (a directory or an archive) the run was exported from.",
                ));
                record_columns(&mut m, since, def, &["run_id"], &mut columns);
            }
            "events" => {
                columns.push(context("node", Col::Utf8, "node", NODE));
                columns.push(context(
                    "file_seq",
                    Col::Int64,
                    "file_seq",
                    "The sequence number of the events file the record was read from.",
                ));
                columns.push(context(
                    "record_index",
                    Col::Int64,
                    "record_index",
                    "The record's index in its events file (from 0): with `node` and `file_seq`, the order the bundle holds the events in.",
                ));
                record_columns(&mut m, since, def, &["run_id"], &mut columns);
                columns.push(context(
                    "wall_time",
                    Col::TimestampMs,
                    "wall_time",
                    "`wall_ms` as a millisecond timestamp.",
                ));
                columns.push(ColumnOut {
                    name: "type".into(),
                    col: Col::Utf8,
                    from: From::Key("type".into()),
                    doc: "The event's tag (`DialStarted`, `node_started`, …), as written, known or not.".into(),
                    since: since.def(&def.name),
                });
                let DefKind::Struct(s) = &def.kind else {
                    continue;
                };
                let Some(fl) = &s.flatten else { continue };
                let Some(DefKind::Union(u)) = model.def(&fl.union).map(|d| &d.kind) else {
                    continue;
                };
                for v in &u.variants {
                    let Payload::Def(vd) = &v.payload else {
                        continue;
                    };
                    let col = m.def(vd);
                    let col = match col {
                        Col::Struct(_) => col,
                        // A variant without fields has only its tag.
                        _ => continue,
                    };
                    columns.push(ColumnOut {
                        name: snake(&v.rust),
                        col,
                        from: From::Variant(v.tag.clone()),
                        doc: format!(
                            "The fields of a `{}` event (null for every other type). {}",
                            v.tag, v.description
                        ),
                        since: since.value(&fl.union, &v.tag),
                    });
                }
            }
            "snapshots" => {
                columns.push(context("node", Col::Utf8, "node", NODE));
                columns.push(context("node_id", Col::NodeId, "node_id", NODE_ID));
                columns.push(context(
                    "file_seq",
                    Col::Int64,
                    "file_seq",
                    "The snapshot file's sequence number (`snapshot-NNNNNN.json`).",
                ));
                record_columns(&mut m, since, def, &["run_id"], &mut columns);
            }
            "vastai" => {
                columns.push(context("node", Col::Utf8, "node", NODE));
                columns.push(context(
                    "file_kind",
                    Col::Utf8,
                    "file_kind",
                    "The record kind the file name gives (`instance`, `sample`, `logs`, `lifecycle`, …).",
                ));
                columns.push(context(
                    "file_seq",
                    Col::Int64,
                    "file_seq",
                    "The file's sequence number.",
                ));
                record_columns(&mut m, since, def, &["run_id"], &mut columns);
            }
            _ => {
                columns.push(context("node", Col::Utf8, "node", NODE));
                columns.push(context("node_id", Col::NodeId, "node_id", NODE_ID));
                record_columns(&mut m, since, def, &["run_id"], &mut columns);
            }
        }
        columns.push(context("extra_json", Col::Json, "extra", EXTRA));
        if let Some(c) = columns.last_mut() {
            c.from = From::Extra;
        }
        out.push(TableOut {
            name,
            record: kind.into(),
            source: format!("From `{kind}` records."),
            doc,
            columns,
        });
    }
    out.push(quarantine_table(&mut m));
    (out, m.structs)
}

/// The table of the bodies the collector quarantined at ingest: not a record kind of the
/// contract but the collector's `.why.json` (`diagwire::quarantine::Why`), so its columns are
/// written here, each one the dataset adds.
fn quarantine_table(m: &mut Mapper<'_>) -> TableOut {
    m.structs.insert(
        "WhyProblem".into(),
        StructOut {
            description: "One problem of a quarantined body, as its `.why.json` lists it.".into(),
            fields: vec![
                (
                    "pointer".into(),
                    Col::Utf8,
                    "JSON pointer into the posted body (empty for the whole body, `/3` for an events batch's fourth record).".into(),
                ),
                ("message".into(), Col::Utf8, "What is wrong there.".into()),
            ],
            rest: None,
        },
    );
    let key = |name: &str, col: Col, doc: &str| ColumnOut {
        name: name.into(),
        col,
        from: From::Key(name.into()),
        doc: doc.into(),
        since: "dataset".into(),
    };
    let mut extra = context(
        "extra_json",
        Col::Json,
        "extra",
        "Every key of the `.why.json` the columns do not hold, keyed by JSON pointer. Null when there is none.",
    );
    extra.from = From::Extra;
    TableOut {
        name: "quarantine",
        record: "quarantine".into(),
        source: "From the bundle's `@quarantine/<node>/` folder: each body the collector kept aside and the `.why.json` beside it.".into(),
        doc: "One row per body the collector quarantined at ingest (and per reason without its body), as `diagwire validate` reports each: \"quarantined at ingest\".",
        columns: vec![
            context("run_id", Col::Utf8, "run_id", RUN_ID),
            context(
                "node",
                Col::Utf8,
                "node",
                "The node the body was posted for: its folder under `@quarantine/` (the `x-node-id` the collector was sent).",
            ),
            context(
                "file",
                Col::Utf8,
                "file",
                "The body's file name (`NNNNNN-<kind>.<json|pb|bin>`); for a reason without its body, the reason's.",
            ),
            context(
                "bytes",
                Col::Int64,
                "bytes",
                "The body's size in bytes (null for a reason without its body).",
            ),
            key(
                "route",
                Col::Utf8,
                "The kind of post: the route's kind the body was posted to (`boot`, `events`, `snapshot`, …, or an unknown kind's name). When there is no `.why.json` that reads, the kind its file name gives.",
            ),
            key("content_type", Col::Utf8, "The request's content type, when it had one."),
            key(
                "problems",
                Col::List(Box::new(Col::Struct("WhyProblem".into()))),
                "Where and why the body is not a record of its kind, as the `.why.json` lists them.",
            ),
            key(
                "problem",
                Col::Utf8,
                "Why, when no pointer says where (`unknown record kind`).",
            ),
            key(
                "problems_omitted",
                Col::Int64,
                "How many more problems there are than `problems` lists, when the collector left some out.",
            ),
            context(
                "reasons",
                Col::Utf8,
                "reasons",
                "The reason in words, as `diagwire validate` reports it after \"quarantined at ingest: \" (each problem's pointer and message; or that no `.why.json` says why, or that it does not read).",
            ),
            extra,
        ],
    }
}

fn lit(s: &str) -> String {
    format!("{s:?}")
}

/// The data table ([`COLUMNS_OUT`]) and the reference page, as `(path, text)`.
pub fn outputs(
    model: &Model,
    releases: &[(Version, Model)],
    version: &Version,
) -> Vec<(String, String)> {
    let since = Since { releases };
    let (tables, structs) = tables(model, &since);
    let mut rs = String::new();
    let _ = writeln!(
        rs,
        "{}// The dataset's columns, generated from the contract {version}: every table, its columns\n\
         // and every struct a column reaches. `fleet/src/columns.rs` includes this file.\n\n\
         use crate::table::{{Column, Field, From, Struct, Table, Ty}};\n\n\
         /// The contract version the table was generated from.\n\
         pub const CONTRACT_VERSION: &str = {};\n",
        crate::header("every file in `schemas/`"),
        lit(&version.to_string())
    );
    for (name, s) in &structs {
        let _ = writeln!(
            rs,
            "pub const {}: Struct = Struct {{\n    name: {},\n    rest: {},\n    fields: &[",
            const_name(name),
            lit(name),
            s.rest
                .as_ref()
                .map_or("None".to_owned(), |r| format!("Some({})", lit(r)))
        );
        for (f, c, _) in &s.fields {
            let _ = writeln!(
                rs,
                "        Field {{ name: {}, ty: {} }},",
                lit(f),
                c.rust()
            );
        }
        let _ = writeln!(rs, "    ],\n}};\n");
    }
    let _ = writeln!(
        rs,
        "/// Every table of the dataset.\npub const TABLES: &[Table] = &["
    );
    for t in &tables {
        let _ = writeln!(
            rs,
            "    Table {{\n        name: {},\n        record: {},\n        columns: &[",
            lit(t.name),
            lit(&t.record)
        );
        for c in &t.columns {
            let from = match &c.from {
                From::Context(w) => format!("From::Context({})", lit(w)),
                From::Key(k) => format!("From::Key({})", lit(k)),
                From::Variant(v) => format!("From::Variant({})", lit(v)),
                From::Extra => "From::Extra".to_owned(),
            };
            let _ = writeln!(
                rs,
                "            Column {{ name: {}, ty: {}, from: {from}, since: {} }},",
                lit(&c.name),
                c.col.rust(),
                lit(&c.since)
            );
        }
        let _ = writeln!(rs, "        ],\n    }},");
    }
    let _ = writeln!(rs, "];");

    let mut md = String::new();
    let _ = writeln!(
        md,
        "<!-- This file is generated by `cargo codegen` from `schemas/`. Do not edit it by hand. -->\n\n\
         # The fleet dataset's columns\n\n\
         Contract {version}. `diagwire export` writes these tables as Parquet (see `docs/fleet.md`); \
         the columns are derived from the schemas, the same for every file, and registered by \
         `diagwire query` rather than inferred. Every column is nullable: a column added in a later \
         release reads as null for a run whose writer predates it (\"Since\" is the first release \
         that has it; \"dataset\" marks a column the export adds). Every `*_source` field sits beside \
         its value.\n\n\
         Types: `string`, `int64` (every integer of the contract: there are no unsigned columns, and a \
         `uint64` value above 2^63−1 is null in its column and kept exactly in `extra_json`), `double`, \
         `boolean`, a node id as its 64-character hex text, JSON text (unions, tuples, objects without \
         properties, free-form values and a definition met again inside itself), `struct` and `list`. \
         Times are integers in milliseconds (`*_ms`, as in the contract); `events.wall_time` is also a \
         millisecond timestamp. Partition columns (`contract_major`, `date`) are in the directory names.\n"
    );
    for t in &tables {
        let _ = writeln!(md, "## `{}`\n\n{}\n", t.name, t.doc);
        let _ = writeln!(
            md,
            "{} \n\n| column | type | since | meaning |\n|---|---|---|---|",
            t.source
        );
        for c in &t.columns {
            let _ = writeln!(
                md,
                "| `{}` | {} | {} | {} |",
                c.name,
                c.col.words(),
                c.since,
                cell(&c.doc)
            );
        }
        md.push('\n');
    }
    let _ = writeln!(md, "## Structs\n");
    for (name, s) in &structs {
        let _ = writeln!(
            md,
            "### `{name}`\n\n{}\n\n| field | type | meaning |\n|---|---|---|",
            cell(&s.description)
        );
        for (f, c, d) in &s.fields {
            let _ = writeln!(md, "| `{f}` | {} | {} |", c.words(), cell(d));
        }
        md.push('\n');
    }
    vec![(COLUMNS_OUT.to_owned(), rs), (DATASET_DOC.to_owned(), md)]
}

fn cell(s: &str) -> String {
    s.replace('\n', " ").replace('|', "\\|")
}
