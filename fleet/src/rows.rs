//! Shapes one record's JSON into one row of its table, appended straight to the table's Arrow
//! builders: each column's value converted to the column's type (node id arrays to hex, unions and
//! free-form values to JSON text), and everything no column holds — unknown keys at any depth, the
//! body of an unknown event type, `uint64` values above 2^63−1 — gathered in the row's
//! `extra_json`, keyed by JSON pointer, so nothing is lost. The builders are written here rather
//! than taken from a JSON decoder because each row would otherwise be built twice (as a JSON object
//! and again as the decoder's tape); the table description (`table.rs`) drives them.

use std::fmt::Write as _;
use std::sync::Arc;

use datafusion::arrow::array::builder::NullBufferBuilder;
use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, ListArray, RecordBatch, StringBuilder,
    StructArray, TimestampMillisecondBuilder,
};
use datafusion::arrow::buffer::{OffsetBuffer, ScalarBuffer};
use datafusion::arrow::datatypes::{DataType, FieldRef, Fields, SchemaRef};
use datafusion::arrow::error::ArrowError;
use serde_json::{Map, Value};

use crate::arrow_schema;
use crate::table::{From, Struct, Table, Ty};

/// What the export knows about a record beyond its JSON.
#[derive(Debug, Default, Clone)]
pub struct Context {
    /// The run id.
    pub run_id: String,
    /// The bundle's file name.
    pub bundle: String,
    /// The node's directory label.
    pub node: Option<String>,
    /// The node's id (hex), when known.
    pub node_id: Option<String>,
    /// The file's sequence number.
    pub file_seq: Option<u64>,
    /// The record's index in its file.
    pub record_index: Option<u64>,
    /// The vast.ai record kind from the file name.
    pub file_kind: Option<String>,
}

/// Where a value sits in its record, rendered as a JSON pointer only when something is kept in
/// `extra_json`.
#[derive(Clone, Copy)]
enum Ptr<'a> {
    Root,
    Key(&'a Ptr<'a>, &'a str),
    Index(&'a Ptr<'a>, usize),
}

impl Ptr<'_> {
    fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out);
        out
    }

    fn render_into(&self, out: &mut String) {
        match self {
            Ptr::Root => {}
            Ptr::Key(parent, key) => {
                parent.render_into(out);
                out.push('/');
                for c in key.chars() {
                    match c {
                        '~' => out.push_str("~0"),
                        '/' => out.push_str("~1"),
                        c => out.push(c),
                    }
                }
            }
            Ptr::Index(parent, i) => {
                parent.render_into(out);
                let _ = write!(out, "/{i}");
            }
        }
    }
}

/// The 64-character hex of a 32-byte node id array.
fn hex(bytes: &[Value]) -> Option<String> {
    if bytes.len() != 32 {
        return None;
    }
    let mut s = String::with_capacity(64);
    for b in bytes {
        let b = u8::try_from(b.as_u64()?).ok()?;
        s.push(char::from_digit(u32::from(b >> 4), 16)?);
        s.push(char::from_digit(u32::from(b & 15), 16)?);
    }
    Some(s)
}

/// One column, or one field of a struct or list, being built.
enum Builder {
    Utf8(StringBuilder),
    Int64(Int64Builder),
    Float64(Float64Builder),
    Boolean(BooleanBuilder),
    Time(TimestampMillisecondBuilder),
    List {
        item_field: FieldRef,
        offsets: Vec<i32>,
        nulls: NullBufferBuilder,
        item: Box<Builder>,
    },
    /// `pending` rows are null and not yet appended to the children: the events table has a
    /// struct per event type, null in every row of another type, so its children are caught up in
    /// bulk when a value comes (or the batch ends) rather than row by row.
    Struct {
        fields: Fields,
        children: Vec<Builder>,
        nulls: NullBufferBuilder,
        pending: usize,
    },
}

impl Builder {
    fn new(ty: &Ty) -> Builder {
        match ty {
            Ty::Utf8 | Ty::NodeId | Ty::Json => Builder::Utf8(StringBuilder::new()),
            Ty::Int64 => Builder::Int64(Int64Builder::new()),
            Ty::Float64 => Builder::Float64(Float64Builder::new()),
            Ty::Boolean => Builder::Boolean(BooleanBuilder::new()),
            Ty::TimestampMs => Builder::Time(
                TimestampMillisecondBuilder::new()
                    .with_data_type(arrow_schema::data_type(&Ty::TimestampMs)),
            ),
            Ty::List(inner) => {
                let DataType::List(item_field) = arrow_schema::data_type(ty) else {
                    unreachable!("OK because a list type is an Arrow list")
                };
                Builder::List {
                    item_field,
                    offsets: vec![0],
                    nulls: NullBufferBuilder::new(0),
                    item: Box::new(Builder::new(inner)),
                }
            }
            Ty::Struct(s) => {
                let DataType::Struct(fields) = arrow_schema::data_type(ty) else {
                    unreachable!("OK because a struct type is an Arrow struct")
                };
                Builder::Struct {
                    fields,
                    children: s.fields.iter().map(|f| Builder::new(&f.ty)).collect(),
                    nulls: NullBufferBuilder::new(0),
                    pending: 0,
                }
            }
        }
    }

    fn null(&mut self) {
        self.nulls(1);
    }

    /// Appends `n` nulls.
    fn nulls(&mut self, n: usize) {
        match self {
            Builder::Utf8(b) => b.append_nulls(n),
            Builder::Int64(b) => b.append_nulls(n),
            Builder::Float64(b) => b.append_nulls(n),
            Builder::Boolean(b) => b.append_nulls(n),
            Builder::Time(b) => b.append_nulls(n),
            Builder::List { offsets, nulls, .. } => {
                let last = offsets.last().copied().unwrap_or(0);
                offsets.extend(std::iter::repeat_n(last, n));
                nulls.append_n_nulls(n);
            }
            Builder::Struct { nulls, pending, .. } => {
                *pending += n;
                nulls.append_n_nulls(n);
            }
        }
    }

    fn text(&mut self, s: &str) {
        match self {
            Builder::Utf8(b) => b.append_value(s),
            other => other.null(),
        }
    }

    fn int(&mut self, i: i64) {
        match self {
            Builder::Int64(b) => b.append_value(i),
            Builder::Time(b) => b.append_value(i),
            other => other.null(),
        }
    }

    fn finish(&mut self) -> Result<ArrayRef, ArrowError> {
        Ok(match self {
            Builder::Utf8(b) => Arc::new(b.finish()),
            Builder::Int64(b) => Arc::new(b.finish()),
            Builder::Float64(b) => Arc::new(b.finish()),
            Builder::Boolean(b) => Arc::new(b.finish()),
            Builder::Time(b) => Arc::new(b.finish()),
            Builder::List {
                item_field,
                offsets,
                nulls,
                item,
            } => {
                let offsets =
                    OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(offsets, vec![0])));
                Arc::new(ListArray::try_new(
                    item_field.clone(),
                    offsets,
                    item.finish()?,
                    nulls.finish(),
                )?)
            }
            Builder::Struct {
                fields,
                children,
                nulls,
                pending,
            } => {
                catch_up(children, pending);
                let arrays = children
                    .iter_mut()
                    .map(Builder::finish)
                    .collect::<Result<Vec<_>, _>>()?;
                Arc::new(StructArray::try_new(
                    fields.clone(),
                    arrays,
                    nulls.finish(),
                )?)
            }
        })
    }
}

/// Appends the nulls a struct's children are behind by.
fn catch_up(children: &mut [Builder], pending: &mut usize) {
    if *pending > 0 {
        children.iter_mut().for_each(|c| c.nulls(*pending));
        *pending = 0;
    }
}

/// Appends `v` shaped as `ty`; what cannot be held goes to `extra` under `ptr` (and the value is
/// null).
fn put(b: &mut Builder, ty: &Ty, v: &Value, ptr: &Ptr<'_>, extra: &mut Map<String, Value>) {
    if v.is_null() {
        b.null();
        return;
    }
    let held = match (ty, &mut *b, v) {
        (Ty::Utf8, Builder::Utf8(b), Value::String(s)) => {
            b.append_value(s);
            true
        }
        (Ty::Int64, Builder::Int64(b), Value::Number(n)) => {
            n.as_i64().map(|i| b.append_value(i)).is_some()
        }
        (Ty::TimestampMs, Builder::Time(b), Value::Number(n)) => {
            n.as_i64().map(|i| b.append_value(i)).is_some()
        }
        (Ty::Float64, Builder::Float64(b), Value::Number(n)) => {
            n.as_f64().map(|f| b.append_value(f)).is_some()
        }
        (Ty::Boolean, Builder::Boolean(b), Value::Bool(x)) => {
            b.append_value(*x);
            true
        }
        (Ty::NodeId, Builder::Utf8(b), Value::Array(a)) => {
            hex(a).map(|h| b.append_value(h)).is_some()
        }
        (Ty::NodeId, Builder::Utf8(b), Value::String(s)) => {
            b.append_value(s);
            true
        }
        (Ty::Json, Builder::Utf8(b), _) => {
            let _ = write!(b, "{v}");
            b.append_value("");
            true
        }
        (
            Ty::List(inner),
            Builder::List {
                offsets,
                nulls,
                item,
                ..
            },
            Value::Array(a),
        ) => {
            for (i, x) in a.iter().enumerate() {
                put(item, inner, x, &Ptr::Index(ptr, i), extra);
            }
            let end = offsets.last().copied().unwrap_or(0);
            offsets.push(end + i32::try_from(a.len()).unwrap_or(i32::MAX));
            nulls.append_non_null();
            true
        }
        (
            Ty::Struct(s),
            Builder::Struct {
                children,
                nulls,
                pending,
                ..
            },
            Value::Object(o),
        ) => {
            catch_up(children, pending);
            put_struct(children, s, o, ptr, extra, &[]);
            nulls.append_non_null();
            true
        }
        _ => false,
    };
    if !held {
        extra.insert(ptr.render(), v.clone());
        b.null();
    }
}

/// Appends the fields of `s` from `o` to `children` (one builder per field); keys in `skip` belong
/// to someone else.
fn put_struct(
    children: &mut [Builder],
    s: &Struct,
    o: &Map<String, Value>,
    ptr: &Ptr<'_>,
    extra: &mut Map<String, Value>,
    skip: &[&str],
) {
    let mut rest_at = None;
    for (i, f) in s.fields.iter().enumerate() {
        if Some(f.name) == s.rest {
            rest_at = Some(i);
            continue;
        }
        match o.get(f.name) {
            Some(v) => put(&mut children[i], &f.ty, v, &Ptr::Key(ptr, f.name), extra),
            None => children[i].null(),
        }
    }
    let mut rest = Map::new();
    for (k, v) in o {
        if skip.contains(&k.as_str()) || s.fields.iter().any(|f| f.name == k) {
            continue;
        }
        if s.rest.is_some() {
            rest.insert(k.clone(), v.clone());
        } else {
            extra.insert(Ptr::Key(ptr, k).render(), v.clone());
        }
    }
    if let Some(i) = rest_at {
        if rest.is_empty() {
            children[i].null();
        } else {
            children[i].text(&Value::Object(rest).to_string());
        }
    }
}

/// The rows of one table being built, a batch at a time.
pub struct Rows {
    table: &'static Table,
    schema: SchemaRef,
    columns: Vec<Builder>,
    /// The keys of the record's top level that columns of their own hold.
    keys: Vec<&'static str>,
    len: usize,
}

impl Rows {
    /// Empty builders for `table`'s columns.
    pub fn new(table: &'static Table) -> Rows {
        Rows {
            table,
            schema: Arc::new(arrow_schema::schema(table)),
            columns: table.columns.iter().map(|c| Builder::new(&c.ty)).collect(),
            keys: table
                .columns
                .iter()
                .filter_map(|c| match c.from {
                    From::Key(k) => Some(k),
                    _ => None,
                })
                .collect(),
            len: 0,
        }
    }

    /// The table's Arrow schema.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Rows appended since the last batch.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no row was appended since the last batch.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends the row of the record `v` (an object).
    pub fn push(&mut self, v: &Map<String, Value>, ctx: &Context) {
        let mut extra = Map::new();
        let tag = v.get("type").and_then(Value::as_str);
        let mut variant_claimed = self.table.record != "event";
        let mut extra_at = None;
        for (c, b) in self.table.columns.iter().zip(self.columns.iter_mut()) {
            match c.from {
                From::Context("wall_time") => match v.get("wall_ms").and_then(Value::as_i64) {
                    Some(ms) => b.int(ms),
                    None => b.null(),
                },
                From::Context(w) => context(ctx, w, b),
                From::Key(k) => match v.get(k) {
                    Some(x) => put(b, &c.ty, x, &Ptr::Key(&Ptr::Root, k), &mut extra),
                    None => b.null(),
                },
                From::Variant(t) => match (&c.ty, &mut *b) {
                    (
                        Ty::Struct(s),
                        Builder::Struct {
                            children,
                            nulls,
                            pending,
                            ..
                        },
                    ) if tag == Some(t) => {
                        variant_claimed = true;
                        catch_up(children, pending);
                        put_struct(children, s, v, &Ptr::Root, &mut extra, &self.keys);
                        nulls.append_non_null();
                    }
                    _ => b.null(),
                },
                From::Extra => extra_at = Some(b),
            }
        }
        // Keys no column claims: an unknown top-level key, or every key of an unknown event type.
        if self.table.record != "event" || !variant_claimed {
            for (k, x) in v {
                // A record's own run id is the row's `run_id`; one that says otherwise is kept.
                if k == "run_id" && x.as_str() == Some(ctx.run_id.as_str()) {
                    continue;
                }
                if !self.keys.contains(&k.as_str()) {
                    extra.insert(Ptr::Key(&Ptr::Root, k).render(), x.clone());
                }
            }
        }
        if let Some(b) = extra_at {
            if extra.is_empty() {
                b.null();
            } else {
                b.text(&Value::Object(extra).to_string());
            }
        }
        self.len += 1;
    }

    /// The rows appended since the last batch, as a batch; the builders start again empty.
    pub fn batch(&mut self) -> Result<RecordBatch, ArrowError> {
        let columns = self
            .columns
            .iter_mut()
            .map(Builder::finish)
            .collect::<Result<Vec<_>, _>>()?;
        self.len = 0;
        RecordBatch::try_new(self.schema.clone(), columns)
    }
}

/// Appends what the export knows as the column `which`.
fn context(c: &Context, which: &str, b: &mut Builder) {
    let text = match which {
        "run_id" => Some(c.run_id.as_str()),
        "bundle" => Some(c.bundle.as_str()),
        "node" => c.node.as_deref(),
        "node_id" => c.node_id.as_deref(),
        "file_kind" => c.file_kind.as_deref(),
        _ => None,
    };
    let int = match which {
        "file_seq" => c.file_seq,
        "record_index" => c.record_index,
        _ => None,
    };
    match (text, int.and_then(|i| i64::try_from(i).ok())) {
        (Some(t), _) => b.text(t),
        (None, Some(i)) => b.int(i),
        (None, None) => b.null(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::TABLES;
    use datafusion::arrow::json::ArrayWriter;

    /// The one row `v` makes in `table`, as JSON (null columns left out).
    fn row(table: &str, v: &str) -> Value {
        let t = TABLES.iter().find(|t| t.name == table).unwrap();
        let v: Value = serde_json::from_str(v).unwrap();
        let mut rows = Rows::new(t);
        rows.push(v.as_object().unwrap(), &Context::default());
        let batch = rows.batch().unwrap();
        let mut w = ArrayWriter::new(Vec::new());
        w.write_batches(&[&batch]).unwrap();
        w.finish().unwrap();
        let out: Vec<Value> = serde_json::from_slice(&w.into_inner()).unwrap();
        out.into_iter().next().unwrap()
    }

    #[test]
    fn a_u64_above_i64_max_is_null_and_kept_in_extra() {
        let r = row(
            "events",
            r#"{"node_id":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1],"monotonic_seq":18446744073709551615,"wall_ms":5,"type":"DialStarted","peer":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"attempt":1,"timeout_ms":9,"novel":true}"#,
        );
        assert_eq!(r["monotonic_seq"], Value::Null);
        assert_eq!(r["dial_started"]["attempt"], 1);
        assert_eq!(r["dial_started"]["peer"], "01".repeat(32));
        let extra: Value = serde_json::from_str(r["extra_json"].as_str().unwrap()).unwrap();
        assert_eq!(
            extra["/monotonic_seq"],
            serde_json::json!(18446744073709551615u64)
        );
        assert_eq!(extra["/novel"], true);
    }

    #[test]
    fn an_unknown_event_type_is_kept_whole_in_extra() {
        let r = row(
            "events",
            r#"{"node_id":"ab","monotonic_seq":1,"wall_ms":5,"type":"Brand","x":{"y":1}}"#,
        );
        assert_eq!(r["type"], "Brand");
        let extra: Value = serde_json::from_str(r["extra_json"].as_str().unwrap()).unwrap();
        assert_eq!(extra, serde_json::json!({"/x": {"y": 1}}));
    }

    #[test]
    fn a_value_of_the_wrong_type_deep_in_a_list_is_null_and_kept_under_its_pointer() {
        let r = row(
            "snapshots",
            r#"{"wall_ms":5,"body":{"subprocess":{"subprocesses":[{"label":"w","pid":"x/y"}]},"a~b":1}}"#,
        );
        assert_eq!(r["body"]["subprocess"]["subprocesses"][0]["label"], "w");
        assert_eq!(
            r["body"]["subprocess"]["subprocesses"][0].get("pid"),
            None,
            "{r}"
        );
        let extra: Value = serde_json::from_str(r["extra_json"].as_str().unwrap()).unwrap();
        assert_eq!(
            extra,
            serde_json::json!({"/body/subprocess/subprocesses/0/pid": "x/y", "/body/a~0b": 1})
        );
    }
}
