//! Shapes one record's JSON into one row of its table, appended straight to the table's Arrow
//! builders as the text is parsed: each column's value converted to the column's type (node id
//! arrays to hex, unions and free-form values to JSON text), and everything no column holds —
//! unknown keys at any depth, the body of an unknown event type, `uint64` values above 2^63−1 —
//! gathered in the row's `extra_json`, keyed by JSON pointer, so nothing is lost. The builders and
//! the parse are written here (a serde seed driven by the table description, `table.rs`) rather
//! than taken from a JSON decoder because the record would otherwise be built twice, as a JSON
//! value and again as the decoder's input; only what goes to `extra_json` or a JSON text column is
//! built as a value.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::sync::Arc;

use datafusion::arrow::array::builder::NullBufferBuilder;
use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, ListArray, RecordBatch, StringBuilder,
    StructArray, TimestampMillisecondBuilder,
};
use datafusion::arrow::buffer::{OffsetBuffer, ScalarBuffer};
use datafusion::arrow::datatypes::{DataType, FieldRef, Fields, SchemaRef};
use datafusion::arrow::error::ArrowError;
use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use diagwire_runtime::shape::PointerPath as Ptr;

use crate::arrow_schema;
use crate::table::{From, Struct, Table, Ty};

/// What the export knows about a record beyond its JSON. The texts are shared (`Arc<str>`): every
/// record of a file carries the same run, bundle and node, so a record's context costs no
/// allocation.
#[derive(Debug, Default, Clone)]
pub struct Context {
    /// The run id.
    pub run_id: Arc<str>,
    /// The bundle's file name.
    pub bundle: Arc<str>,
    /// The node's directory label.
    pub node: Option<Arc<str>>,
    /// The node's id (hex), when known.
    pub node_id: Option<Arc<str>>,
    /// The file's sequence number.
    pub file_seq: Option<u64>,
    /// The record's index in its file.
    pub record_index: Option<u64>,
    /// The vast.ai record kind from the file name.
    pub file_kind: Option<Arc<str>>,
    /// An event's `type`, when the walk has read it (otherwise the text is scanned for it).
    pub event_type: Option<Arc<str>>,
    /// A quarantined body's file name.
    pub file: Option<Arc<str>>,
    /// A quarantined body's size in bytes.
    pub bytes: Option<u64>,
    /// A quarantined body's reason in words.
    pub reasons: Option<Arc<str>>,
}

/// The 64-character hex of a 32-byte node id.
fn hex(bytes: &[u8; 32]) -> [u8; 64] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 64];
    for (i, b) in bytes.iter().enumerate() {
        out[2 * i] = DIGITS[usize::from(b >> 4)];
        out[2 * i + 1] = DIGITS[usize::from(b & 15)];
    }
    out
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

/// An object key as the parser hands it: borrowed from the text unless it had escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// One value to append to `b` as `ty`; what the column cannot hold goes to `extra` under `ptr`
/// (and the value is null).
struct Cell<'a> {
    b: &'a mut Builder,
    ty: &'a Ty,
    ptr: Ptr<'a>,
    extra: &'a mut Map<String, Value>,
}

impl Cell<'_> {
    fn refuse<E>(self, v: Value) -> Result<(), E> {
        self.extra.insert(self.ptr.render(), v);
        self.b.null();
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Cell<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if let (Ty::Json, Builder::Utf8(b)) = (self.ty, &mut *self.b) {
            let v = Value::deserialize(d)?;
            if v.is_null() {
                b.append_null();
            } else {
                let _ = write!(b, "{v}");
                b.append_value("");
            }
            return Ok(());
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Cell<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.b.null();
        Ok(())
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.b.null();
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.deserialize(d)
    }

    fn visit_bool<E: de::Error>(self, x: bool) -> Result<(), E> {
        match (self.ty, &mut *self.b) {
            (Ty::Boolean, Builder::Boolean(b)) => {
                b.append_value(x);
                Ok(())
            }
            _ => self.refuse(Value::Bool(x)),
        }
    }

    fn visit_i64<E: de::Error>(self, i: i64) -> Result<(), E> {
        match (self.ty, &mut *self.b) {
            (Ty::Int64, Builder::Int64(b)) => b.append_value(i),
            (Ty::TimestampMs, Builder::Time(b)) => b.append_value(i),
            (Ty::Float64, Builder::Float64(b)) => b.append_value(i as f64),
            _ => return self.refuse(Value::from(i)),
        }
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, u: u64) -> Result<(), E> {
        match (self.ty, &mut *self.b, i64::try_from(u)) {
            (Ty::Int64, Builder::Int64(b), Ok(i)) => b.append_value(i),
            (Ty::TimestampMs, Builder::Time(b), Ok(i)) => b.append_value(i),
            (Ty::Float64, Builder::Float64(b), _) => b.append_value(u as f64),
            _ => return self.refuse(Value::from(u)),
        }
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, x: f64) -> Result<(), E> {
        match (self.ty, &mut *self.b) {
            (Ty::Float64, Builder::Float64(b)) => {
                b.append_value(x);
                Ok(())
            }
            _ => self.refuse(Value::from(x)),
        }
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<(), E> {
        match (self.ty, &mut *self.b) {
            (Ty::Utf8 | Ty::NodeId, Builder::Utf8(b)) => {
                b.append_value(s);
                Ok(())
            }
            _ => self.refuse(Value::String(s.to_owned())),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Cell { b, ty, ptr, extra } = self;
        if let (
            Ty::List(inner),
            Builder::List {
                offsets,
                nulls,
                item,
                ..
            },
        ) = (ty, &mut *b)
        {
            let mut n = 0usize;
            loop {
                let cell = Cell {
                    b: item,
                    ty: inner,
                    ptr: Ptr::Index(&ptr, n),
                    extra,
                };
                if seq.next_element_seed(cell)?.is_none() {
                    break;
                }
                n += 1;
            }
            let end = offsets.last().copied().unwrap_or(0);
            offsets.push(end + i32::try_from(n).unwrap_or(i32::MAX));
            nulls.append_non_null();
            return Ok(());
        }
        if let (Ty::NodeId, Builder::Utf8(sb)) = (ty, &mut *b) {
            // A node id is 32 numbers 0–255, turned into hex as they are read; anything else is
            // kept as it was read.
            let mut bytes = [0u8; 32];
            let mut n = 0;
            let mut other: Option<Vec<Value>> = None;
            while let Some(v) = seq.next_element::<Value>()? {
                match (&mut other, v.as_u64().and_then(|x| u8::try_from(x).ok())) {
                    (None, Some(x)) if n < bytes.len() => {
                        bytes[n] = x;
                        n += 1;
                    }
                    (None, _) => {
                        let mut read: Vec<Value> =
                            bytes[..n].iter().map(|x| Value::from(*x)).collect();
                        read.push(v);
                        other = Some(read);
                    }
                    (Some(read), _) => read.push(v),
                }
            }
            let items = match other {
                None if n == bytes.len() => {
                    let h = hex(&bytes);
                    sb.append_value(
                        std::str::from_utf8(&h).expect("OK because hex digits are ASCII"),
                    );
                    return Ok(());
                }
                None => bytes[..n].iter().map(|x| Value::from(*x)).collect(),
                Some(read) => read,
            };
            return Cell { b, ty, ptr, extra }.refuse(Value::Array(items));
        }
        let mut items: Vec<Value> = Vec::new();
        while let Some(v) = seq.next_element()? {
            items.push(v);
        }
        Cell { b, ty, ptr, extra }.refuse(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Cell { b, ty, ptr, extra } = self;
        match (ty, b) {
            (
                Ty::Struct(s),
                Builder::Struct {
                    children,
                    nulls,
                    pending,
                    ..
                },
            ) => {
                catch_up(children, pending);
                let mut fields = Filling::new(s, children);
                while let Some(Key(k)) = map.next_key::<Key<'de>>()? {
                    match fields.cell(&k, &ptr, extra) {
                        Some(cell) => map.next_value_seed(cell)?,
                        None => {
                            let v: Value = map.next_value()?;
                            fields.leftover(&k, v, &ptr, extra);
                        }
                    }
                }
                fields.end();
                nulls.append_non_null();
                Ok(())
            }
            (_, b) => {
                let v = Value::deserialize(MapAccessDeserializer::new(map))?;
                Cell { b, ty, ptr, extra }.refuse(v)
            }
        }
    }
}

/// The fields of one struct value being filled: which were seen, and the keys no field holds
/// (kept as the struct's `rest` JSON when it has one, else in `extra`).
struct Filling<'s> {
    s: &'static Struct,
    children: &'s mut [Builder],
    seen: Vec<bool>,
    rest: Map<String, Value>,
}

impl<'s> Filling<'s> {
    fn new(s: &'static Struct, children: &'s mut [Builder]) -> Filling<'s> {
        Filling {
            s,
            seen: vec![false; children.len()],
            children,
            rest: Map::new(),
        }
    }

    /// The field that takes `key`: one of that name (not the `rest` field) not filled yet.
    fn field(&self, key: &str) -> Option<usize> {
        self.s
            .fields
            .iter()
            .position(|f| f.name == key && Some(f.name) != self.s.rest)
            .filter(|i| !self.seen[*i])
    }

    /// Whether a field takes `key`.
    fn takes(&self, key: &str) -> bool {
        self.field(key).is_some()
    }

    /// The cell of the field that takes `key`, now marked filled.
    fn cell<'c>(
        &'c mut self,
        key: &'c str,
        ptr: &'c Ptr<'c>,
        extra: &'c mut Map<String, Value>,
    ) -> Option<Cell<'c>> {
        let i = self.field(key)?;
        self.seen[i] = true;
        Some(Cell {
            b: &mut self.children[i],
            ty: &self.s.fields[i].ty,
            ptr: Ptr::Key(ptr, key),
            extra,
        })
    }

    fn leftover(&mut self, key: &str, v: Value, ptr: &Ptr<'_>, extra: &mut Map<String, Value>) {
        if self.s.rest.is_some() {
            self.rest.insert(key.to_owned(), v);
        } else {
            extra.insert(Ptr::Key(ptr, key).render(), v);
        }
    }

    /// Nulls for the fields not seen, and the `rest` field.
    fn end(mut self) {
        for (i, f) in self.s.fields.iter().enumerate() {
            if Some(f.name) == self.s.rest {
                if self.rest.is_empty() {
                    self.children[i].null();
                } else {
                    let text = Value::Object(std::mem::take(&mut self.rest)).to_string();
                    self.children[i].text(&text);
                }
            } else if !self.seen[i] {
                self.children[i].null();
            }
        }
    }
}

/// The rows of one table being built, a batch at a time.
pub struct Rows {
    table: &'static Table,
    schema: SchemaRef,
    columns: Vec<Builder>,
    len: usize,
    /// The column of each event type's struct, by tag.
    variants: ByName,
    /// The column of each top-level key, by key.
    keys: ByName,
}

impl Rows {
    /// Empty builders for `table`'s columns.
    pub fn new(table: &'static Table) -> Rows {
        Rows {
            table,
            schema: Arc::new(arrow_schema::schema(table)),
            columns: table.columns.iter().map(|c| Builder::new(&c.ty)).collect(),
            len: 0,
            variants: columns_by(table, |from| match from {
                From::Variant(t) => Some(t),
                _ => None,
            }),
            keys: columns_by(table, |from| match from {
                From::Key(k) => Some(k),
                _ => None,
            }),
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

    /// Appends the row of the record whose JSON text is `text`. A text that is not an object
    /// makes no row (`false`); the walk hands over only records it decoded, so a parse error part
    /// way through cannot happen, and if it did the builders would be out of step: it is returned
    /// and the table must not be written.
    pub fn push(&mut self, text: &str, ctx: &Context) -> Result<bool, serde_json::Error> {
        if !text.trim_start().starts_with('{') {
            return Ok(false);
        }
        let tag = match (self.table.record, &ctx.event_type) {
            ("event", Some(t)) => Some(Cow::Borrowed(&**t)),
            ("event", None) => serde_json::from_str::<Tagged<'_>>(text)
                .ok()
                .and_then(|t| t.tag),
            _ => None,
        };
        let variant = tag.and_then(|t| self.variants.get(t.as_ref()).copied());
        let mut extra = Map::new();
        let mut de = serde_json::Deserializer::from_str(text);
        let top = Top {
            rows: &mut *self,
            ctx,
            variant,
            extra: &mut extra,
        };
        let (seen, wall) = de.deserialize_map(top)?;
        de.end()?;
        for (i, (c, b)) in self
            .table
            .columns
            .iter()
            .zip(self.columns.iter_mut())
            .enumerate()
        {
            match c.from {
                _ if seen[i] => {}
                From::Context("wall_time") => match wall {
                    Some(ms) => b.int(ms),
                    None => b.null(),
                },
                From::Context(w) => context(ctx, w, b),
                From::Key(_) | From::Variant(_) => b.null(),
                From::Extra if extra.is_empty() => b.null(),
                From::Extra => b.text(&Value::Object(std::mem::take(&mut extra)).to_string()),
            }
        }
        self.len += 1;
        Ok(true)
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

/// Columns by name, looked up for every key of every record: hashed with `ahash` (the hasher
/// arrow's own maps use), several times cheaper than the default hasher on short keys.
type ByName = HashMap<&'static str, usize, ahash::RandomState>;

/// The first of `table`'s columns each name `name_of` gives, by that name.
fn columns_by(table: &'static Table, name_of: impl Fn(From) -> Option<&'static str>) -> ByName {
    let mut out = ByName::default();
    for (i, c) in table.columns.iter().enumerate() {
        if let Some(name) = name_of(c.from) {
            out.entry(name).or_insert(i);
        }
    }
    out
}

/// The `type` of an event record, read without building the record.
#[derive(Deserialize)]
struct Tagged<'a> {
    #[serde(rename = "type", borrow, default)]
    tag: Option<Cow<'a, str>>,
}

/// The top level of a record: its keys go to their columns, to the fields of the event type's
/// struct, or (unclaimed) to `extra`. Returns which columns it filled and the record's `wall_ms`.
struct Top<'a> {
    rows: &'a mut Rows,
    ctx: &'a Context,
    /// The column of the event's type, when the table has one.
    variant: Option<usize>,
    extra: &'a mut Map<String, Value>,
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = (Vec<bool>, Option<i64>);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a record object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let Top {
            rows,
            ctx,
            variant,
            extra,
        } = self;
        let table = rows.table;
        let mut seen = vec![false; table.columns.len()];
        let mut wall = None;
        // The event type's struct, taken out of its column while its fields are filled.
        let mut claimed =
            variant.and_then(|i| match (&table.columns[i].ty, &mut rows.columns[i]) {
                (Ty::Struct(s), Builder::Struct { .. }) => {
                    // A placeholder that allocates nothing.
                    let b = std::mem::replace(
                        &mut rows.columns[i],
                        Builder::Int64(Int64Builder::with_capacity(0)),
                    );
                    Some((i, *s, b))
                }
                _ => None,
            });
        let mut fields = claimed.as_mut().map(|(_, s, b)| match b {
            Builder::Struct {
                children, pending, ..
            } => {
                catch_up(children, pending);
                Filling::new(s, children)
            }
            _ => unreachable!("OK because only a struct builder is claimed"),
        });
        let root = Ptr::Root;
        while let Some(Key(k)) = map.next_key::<Key<'de>>()? {
            let column = rows.keys.get(k.as_ref()).copied().filter(|i| !seen[*i]);
            let field = fields.as_ref().is_some_and(|f| f.takes(&k));
            match (column, field) {
                (Some(i), false) if k != "wall_ms" => {
                    seen[i] = true;
                    map.next_value_seed(Cell {
                        b: &mut rows.columns[i],
                        ty: &table.columns[i].ty,
                        ptr: Ptr::Key(&root, &k),
                        extra,
                    })?;
                }
                (None, true) => {
                    let cell = fields.as_mut().and_then(|f| f.cell(&k, &root, extra));
                    if let Some(cell) = cell {
                        map.next_value_seed(cell)?;
                    }
                }
                _ => {
                    // A key two places take (or `wall_ms`, which the `wall_time` column reads
                    // too), or one no place takes.
                    let v: Value = map.next_value()?;
                    if k == "wall_ms" {
                        wall = v.as_i64();
                    }
                    if let Some(i) = column {
                        seen[i] = true;
                        let cell = Cell {
                            b: &mut rows.columns[i],
                            ty: &table.columns[i].ty,
                            ptr: Ptr::Key(&root, &k),
                            extra,
                        };
                        cell.deserialize(&v).map_err(de::Error::custom)?;
                    }
                    if field {
                        if let Some(cell) = fields.as_mut().and_then(|f| f.cell(&k, &root, extra)) {
                            cell.deserialize(&v).map_err(de::Error::custom)?;
                        }
                    } else if column.is_none() {
                        match fields.as_mut() {
                            Some(f) => f.leftover(&k, v, &root, extra),
                            // A record's own run id is the row's `run_id`; one that says
                            // otherwise is kept.
                            None if k == "run_id" && v.as_str() == Some(&*ctx.run_id) => {}
                            None => {
                                extra.insert(Ptr::Key(&root, &k).render(), v);
                            }
                        }
                    }
                }
            }
        }
        if let Some(f) = fields {
            f.end();
        }
        if let Some((i, _, mut b)) = claimed {
            if let Builder::Struct { nulls, .. } = &mut b {
                nulls.append_non_null();
            }
            rows.columns[i] = b;
            seen[i] = true;
        }
        Ok((seen, wall))
    }
}

/// Appends what the export knows as the column `which`.
fn context(c: &Context, which: &str, b: &mut Builder) {
    let text = match which {
        "run_id" => Some(&*c.run_id),
        "bundle" => Some(&*c.bundle),
        "node" => c.node.as_deref(),
        "node_id" => c.node_id.as_deref(),
        "file_kind" => c.file_kind.as_deref(),
        "file" => c.file.as_deref(),
        "reasons" => c.reasons.as_deref(),
        _ => None,
    };
    let int = match which {
        "file_seq" => c.file_seq,
        "record_index" => c.record_index,
        "bytes" => c.bytes,
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
        let mut rows = Rows::new(t);
        assert!(rows.push(v, &Context::default()).unwrap());
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
    fn a_peer_id_that_is_not_32_bytes_is_null_and_kept_as_read() {
        let bytes = |n: usize| (0..n).map(|i| (i * 8).to_string()).collect::<Vec<_>>();
        let cases = [
            ("31 numbers", bytes(31).join(",")),
            ("33 numbers", bytes(33).join(",")),
            (
                "a number above 255",
                [bytes(31), vec!["256".into()]].concat().join(","),
            ),
            (
                "a string among the numbers",
                [vec!["\"x\"".into()], bytes(31)].concat().join(","),
            ),
            (
                "a fraction",
                [bytes(5), vec!["1.5".into()], bytes(26)].concat().join(","),
            ),
        ];
        for (case, items) in cases {
            let text = format!(
                r#"{{"node_id":"ab","monotonic_seq":1,"wall_ms":5,"type":"DialStarted","peer":[{items}],"attempt":1,"timeout_ms":9}}"#
            );
            let r = row("events", &text);
            assert_eq!(r["dial_started"].get("peer"), None, "{case}: {r}");
            let extra: Value = serde_json::from_str(r["extra_json"].as_str().unwrap()).unwrap();
            let read: Value = serde_json::from_str(&format!("[{items}]")).unwrap();
            assert_eq!(extra["/peer"], read, "{case}");
        }
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
