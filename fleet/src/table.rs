//! The types of the generated column table (`columns.rs`): what `cargo codegen` derives from the
//! schemas for each table of the dataset, as plain data the crate turns into Arrow schemas.

/// One table of the dataset.
#[derive(Debug)]
pub struct Table {
    /// The table's name (its folder in the dataset).
    pub name: &'static str,
    /// The record kind its rows come from.
    pub record: &'static str,
    /// Its columns, in order.
    pub columns: &'static [Column],
}

/// One top-level column.
#[derive(Debug)]
pub struct Column {
    /// The column's name.
    pub name: &'static str,
    /// Its type.
    pub ty: Ty,
    /// Where its value comes from.
    pub from: From,
    /// The first release that has it, or `dataset` for a column the export adds.
    pub since: &'static str,
}

/// Where a column's value comes from.
#[derive(Debug, Clone, Copy)]
pub enum From {
    /// What the export knows about the record: `run_id`, `bundle`, `node`, `node_id`,
    /// `file_seq`, `file_kind`, `wall_time`.
    Context(&'static str),
    /// A top-level key of the record.
    Key(&'static str),
    /// The fields of an event of this tag, which sit at the record's top level.
    Variant(&'static str),
    /// Everything the other columns do not hold.
    Extra,
}

/// A column or field type.
#[derive(Debug, Clone, Copy)]
pub enum Ty {
    /// Text.
    Utf8,
    /// Every integer (there are no unsigned columns).
    Int64,
    /// A double.
    Float64,
    /// A boolean.
    Boolean,
    /// A node id array, as 64-character hex text.
    NodeId,
    /// Any JSON value, as its text.
    Json,
    /// A millisecond timestamp (UTC).
    TimestampMs,
    /// An object with these fields.
    Struct(&'static Struct),
    /// An array.
    List(&'static Ty),
}

/// An object's fields.
#[derive(Debug)]
pub struct Struct {
    /// The definition it comes from.
    pub name: &'static str,
    /// The field that holds, as JSON, every key of an absorbed union but its tag.
    pub rest: Option<&'static str>,
    /// The fields, in schema order.
    pub fields: &'static [Field],
}

/// One field of a struct.
#[derive(Debug)]
pub struct Field {
    /// The JSON key.
    pub name: &'static str,
    /// Its type.
    pub ty: Ty,
}
