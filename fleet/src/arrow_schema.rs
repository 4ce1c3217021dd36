//! Turns the generated column table into Arrow schemas: one field per column, every field
//! nullable (a column a writer predates reads as null), no union and no unsigned type, times as
//! integer milliseconds or millisecond timestamps (never nanoseconds), and structs never empty.

use datafusion::arrow::datatypes::{DataType, Field, Fields, Schema, TimeUnit};

use crate::table::{Table, Ty};

/// The Arrow type of a column or field type.
pub fn data_type(ty: &Ty) -> DataType {
    match ty {
        Ty::Utf8 | Ty::NodeId | Ty::Json => DataType::Utf8,
        Ty::Int64 => DataType::Int64,
        Ty::Float64 => DataType::Float64,
        Ty::Boolean => DataType::Boolean,
        Ty::TimestampMs => DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
        Ty::List(inner) => DataType::List(std::sync::Arc::new(Field::new(
            "item",
            data_type(inner),
            true,
        ))),
        Ty::Struct(s) => DataType::Struct(Fields::from(
            s.fields
                .iter()
                .map(|f| Field::new(f.name, data_type(&f.ty), true))
                .collect::<Vec<_>>(),
        )),
    }
}

/// The Arrow schema of a table (without the partition columns, which are in folder names).
pub fn schema(table: &Table) -> Schema {
    Schema::new(
        table
            .columns
            .iter()
            .map(|c| Field::new(c.name, data_type(&c.ty), true))
            .collect::<Vec<_>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::TABLES;

    fn walk(t: &DataType, path: &str) {
        match t {
            DataType::Union(..) => panic!("{path}: a union"),
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
                panic!("{path}: unsigned")
            }
            DataType::Timestamp(u, _) => assert_eq!(*u, TimeUnit::Millisecond, "{path}"),
            DataType::Struct(f) => {
                assert!(!f.is_empty(), "{path}: an empty struct");
                f.iter()
                    .for_each(|f| walk(f.data_type(), &format!("{path}.{}", f.name())));
            }
            DataType::List(f) => walk(f.data_type(), &format!("{path}[]")),
            _ => {}
        }
    }

    #[test]
    fn no_table_has_a_union_an_unsigned_column_an_empty_struct_or_a_non_ms_time() {
        for t in TABLES {
            let s = schema(t);
            assert_eq!(s.field(0).name(), "run_id", "{}", t.name);
            assert!(s.fields().iter().any(|f| f.name() == "extra_json"));
            let mut names: Vec<&String> = s.fields().iter().map(|f| f.name()).collect();
            names.sort();
            names.dedup();
            assert_eq!(
                names.len(),
                s.fields().len(),
                "{}: a column name twice",
                t.name
            );
            for f in s.fields() {
                walk(f.data_type(), &format!("{}.{}", t.name, f.name()));
            }
        }
    }
}
