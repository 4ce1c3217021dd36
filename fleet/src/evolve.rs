//! Reading files written under older columns with today's: a struct column is matched field by
//! field, by name and at any depth (inside lists too), a field the file lacks reads as null and a
//! field the table lacks is dropped. DataFusion's own adapter casts a struct only when both sides
//! have the same fields, so a file written before a minor release added a field to an event's
//! struct could not be read at all; this adapter is the smallest change that reads it, plugged in
//! through the dataset's Parquet format (`format`), whose scans carry it.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, ListArray, RecordBatch, RecordBatchOptions, StructArray,
    new_null_array,
};
use datafusion::arrow::compute::{can_cast_types, cast};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::{ColumnStatistics, Result, plan_err};
use datafusion::datasource::schema_adapter::{SchemaAdapter, SchemaAdapterFactory, SchemaMapper};

/// The adapter factory: columns matched by name, structs field by field.
#[derive(Debug)]
pub struct ByName;

impl SchemaAdapterFactory for ByName {
    fn create(&self, projected: SchemaRef, _table: SchemaRef) -> Box<dyn SchemaAdapter> {
        Box::new(Adapter { projected })
    }
}

struct Adapter {
    projected: SchemaRef,
}

impl SchemaAdapter for Adapter {
    fn map_column_index(&self, index: usize, file: &Schema) -> Option<usize> {
        Some(file.fields().find(self.projected.field(index).name())?.0)
    }

    fn map_schema(&self, file: &Schema) -> Result<(Arc<dyn SchemaMapper>, Vec<usize>)> {
        let mut projection = Vec::new();
        let mut mappings = vec![None; self.projected.fields().len()];
        for (at, field) in file.fields().iter().enumerate() {
            let Some((to, table_field)) = self.projected.fields().find(field.name()) else {
                continue;
            };
            if !adaptable(field.data_type(), table_field.data_type()) {
                return plan_err!(
                    "column {} is {} in a file and {} in the table",
                    field.name(),
                    field.data_type(),
                    table_field.data_type()
                );
            }
            mappings[to] = Some(projection.len());
            projection.push(at);
        }
        let mapper = Mapper {
            projected: Arc::clone(&self.projected),
            mappings,
        };
        Ok((Arc::new(mapper), projection))
    }
}

#[derive(Debug)]
struct Mapper {
    projected: SchemaRef,
    /// For each table column, its index among the columns read from the file.
    mappings: Vec<Option<usize>>,
}

impl SchemaMapper for Mapper {
    fn map_batch(&self, batch: RecordBatch) -> Result<RecordBatch> {
        let rows = batch.num_rows();
        let columns = self
            .projected
            .fields()
            .iter()
            .zip(&self.mappings)
            .map(|(field, from)| match from {
                Some(i) => adapt(batch.column(*i), field.data_type()),
                None => Ok(new_null_array(field.data_type(), rows)),
            })
            .collect::<Result<Vec<_>>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&self.projected),
            columns,
            &options,
        )?)
    }

    fn map_column_statistics(&self, file: &[ColumnStatistics]) -> Result<Vec<ColumnStatistics>> {
        Ok(self
            .mappings
            .iter()
            .map(|from| match from.and_then(|i| file.get(i)) {
                Some(s) => s.clone(),
                None => ColumnStatistics::new_unknown(),
            })
            .collect())
    }
}

/// Whether a file's column of type `from` reads as `to`.
fn adaptable(from: &DataType, to: &DataType) -> bool {
    match (from, to) {
        (DataType::Struct(f), DataType::Struct(t)) => f.iter().all(|field| {
            t.find(field.name())
                .is_none_or(|(_, target)| adaptable(field.data_type(), target.data_type()))
        }),
        (DataType::List(f), DataType::List(t)) => adaptable(f.data_type(), t.data_type()),
        (f, t) => f == t || can_cast_types(f, t),
    }
}

/// `array` as type `to`: structs field by field by name (missing fields null), lists element by
/// element, anything else cast.
fn adapt(array: &ArrayRef, to: &DataType) -> Result<ArrayRef> {
    if array.data_type() == to {
        return Ok(Arc::clone(array));
    }
    match (array.data_type(), to) {
        (DataType::Struct(_), DataType::Struct(fields)) => {
            let s = array.as_struct();
            let columns = fields
                .iter()
                .map(|f| match s.column_by_name(f.name()) {
                    Some(c) => adapt(c, f.data_type()),
                    None => Ok(new_null_array(f.data_type(), s.len())),
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Arc::new(StructArray::try_new(
                fields.clone(),
                columns,
                s.nulls().cloned(),
            )?))
        }
        (DataType::List(_), DataType::List(field)) => {
            let l = array.as_list::<i32>();
            let values = adapt(l.values(), field.data_type())?;
            Ok(Arc::new(ListArray::try_new(
                Arc::<Field>::clone(field),
                l.offsets().clone(),
                values,
                l.nulls().cloned(),
            )?))
        }
        _ => Ok(cast(array, to)?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::StringArray;
    use datafusion::arrow::buffer::OffsetBuffer;
    use datafusion::arrow::datatypes::Fields;

    fn fields(names: &[(&str, DataType)]) -> Fields {
        names
            .iter()
            .map(|(n, t)| Field::new(*n, t.clone(), true))
            .collect()
    }

    /// A struct column written before a field was added: one row, `{peer: "a"}`.
    fn old_struct() -> ArrayRef {
        let peer: ArrayRef = Arc::new(StringArray::from(vec!["a"]));
        Arc::new(StructArray::new(
            fields(&[("peer", DataType::Utf8)]),
            vec![peer],
            None,
        ))
    }

    fn new_fields() -> Fields {
        fields(&[("peer", DataType::Utf8), ("attempt", DataType::Int64)])
    }

    #[test]
    fn a_field_added_to_a_struct_reads_as_null_from_an_older_file() {
        let to = DataType::Struct(new_fields());
        assert!(adaptable(old_struct().data_type(), &to));
        let got = adapt(&old_struct(), &to).unwrap();
        let s = got.as_struct();
        assert_eq!(
            s.column_by_name("peer")
                .unwrap()
                .as_string::<i32>()
                .value(0),
            "a"
        );
        assert!(s.column_by_name("attempt").unwrap().is_null(0));
    }

    #[test]
    fn a_list_of_structs_is_adapted_element_by_element() {
        let item = Arc::new(Field::new("item", old_struct().data_type().clone(), true));
        let old: ArrayRef = Arc::new(ListArray::new(
            item,
            OffsetBuffer::from_lengths([1]),
            old_struct(),
            None,
        ));
        let to = DataType::List(Arc::new(Field::new(
            "item",
            DataType::Struct(new_fields()),
            true,
        )));
        let got = adapt(&old, &to).unwrap();
        assert_eq!(got.data_type(), &to);
        let values = got.as_list::<i32>().values().clone();
        assert!(
            values
                .as_struct()
                .column_by_name("attempt")
                .unwrap()
                .is_null(0)
        );
    }

    #[test]
    fn a_column_whose_type_cannot_become_the_tables_is_refused_not_read_as_garbage() {
        let to = DataType::Struct(fields(&[("peer", DataType::Struct(new_fields()))]));
        assert!(!adaptable(old_struct().data_type(), &to));
        let adapter = Adapter {
            projected: Arc::new(Schema::new(vec![Field::new("c", to, true)])),
        };
        let file = Schema::new(vec![Field::new(
            "c",
            old_struct().data_type().clone(),
            true,
        )]);
        assert!(adapter.map_schema(&file).is_err());
    }
}
