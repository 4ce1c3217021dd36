//! Each Parquet file's footer parsed once per session. A compacted partition is one file whose
//! footer describes every column of every row group (for a fleet of runs, tens of MB), and a scan
//! parses the footer again in each of its partitions; a view that reads a table in several places
//! paid for that parse many times over, more than for reading its rows. The scans of a session's
//! table ask [`Footers`] instead: the first asks for the file's footer and the others wait for it,
//! then share it. A file is known by its path, size and modification time, so a file replaced
//! under the same name is parsed again.

use std::collections::HashMap;
use std::ops::Range;

use datafusion::datasource::listing::PartitionedFile;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use datafusion::datasource::physical_plan::{ParquetFileMetrics, ParquetFileReaderFactory};
use datafusion::parquet::arrow::arrow_reader::ArrowReaderOptions;
use datafusion::parquet::arrow::async_reader::{AsyncFileReader, ParquetObjectReader};
use datafusion::parquet::errors::Result;
use datafusion::parquet::file::metadata::ParquetMetaData;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use futures::FutureExt;
use futures::future::BoxFuture;
use object_store::{ObjectMeta, ObjectStore};

/// A file's footer once parsed; the lock is held while it is parsed, so a second scan waits
/// for the first rather than parsing it too.
type Slot = Arc<futures::lock::Mutex<Option<Arc<ParquetMetaData>>>>;

/// The footers of the files a table's scans read, by file.
#[derive(Debug, Default)]
pub struct Footers {
    files: Mutex<HashMap<String, Slot>>,
}

impl Footers {
    fn slot(&self, file: &ObjectMeta) -> Slot {
        let key = format!("{}\n{}\n{:?}", file.location, file.size, file.last_modified);
        let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(files.entry(key).or_default())
    }

    /// A reader of `file` in `store` whose footer is this set's.
    pub fn reader(&self, store: Arc<dyn ObjectStore>, file: &ObjectMeta) -> Reader {
        Reader {
            inner: ParquetObjectReader::new(store, file.location.clone()).with_file_size(file.size),
            footer: self.slot(file),
            metrics: None,
        }
    }
}

/// Hands the scans of one table readers that share [`Footers`].
#[derive(Debug)]
pub struct SharedFooters {
    store: Arc<dyn ObjectStore>,
    footers: Arc<Footers>,
}

impl SharedFooters {
    /// Readers of files in `store`, their footers kept in `footers`.
    pub fn new(store: Arc<dyn ObjectStore>, footers: Arc<Footers>) -> SharedFooters {
        SharedFooters { store, footers }
    }
}

impl ParquetFileReaderFactory for SharedFooters {
    fn create_reader(
        &self,
        partition_index: usize,
        file: PartitionedFile,
        metadata_size_hint: Option<usize>,
        metrics: &ExecutionPlanMetricsSet,
    ) -> datafusion::common::Result<Box<dyn AsyncFileReader + Send>> {
        let location = file.object_meta.location.to_string();
        let mut reader = self
            .footers
            .reader(Arc::clone(&self.store), &file.object_meta);
        if let Some(hint) = metadata_size_hint {
            reader.inner = reader.inner.with_footer_size_hint(hint);
        }
        reader.metrics = Some(ParquetFileMetrics::new(partition_index, &location, metrics));
        Ok(Box::new(reader))
    }
}

/// A file's reader: its bytes from the store, its footer from [`Footers`].
pub struct Reader {
    inner: ParquetObjectReader,
    footer: Slot,
    metrics: Option<ParquetFileMetrics>,
}

impl Reader {
    fn count(&self, bytes: u64) {
        if let Some(m) = &self.metrics {
            m.bytes_scanned
                .add(usize::try_from(bytes).unwrap_or(usize::MAX));
        }
    }
}

impl AsyncFileReader for Reader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, Result<Bytes>> {
        self.count(range.end - range.start);
        self.inner.get_bytes(range)
    }

    fn get_byte_ranges(&mut self, ranges: Vec<Range<u64>>) -> BoxFuture<'_, Result<Vec<Bytes>>> {
        self.count(ranges.iter().map(|r| r.end - r.start).sum());
        self.inner.get_byte_ranges(ranges)
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, Result<Arc<ParquetMetaData>>> {
        let footer = Arc::clone(&self.footer);
        async move {
            let mut footer = footer.lock().await;
            if let Some(parsed) = footer.as_ref() {
                return Ok(Arc::clone(parsed));
            }
            let parsed = self.inner.get_metadata(options).await?;
            *footer = Some(Arc::clone(&parsed));
            Ok(parsed)
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch};
    use datafusion::parquet::arrow::ArrowWriter;
    use object_store::memory::InMemory;
    use object_store::path::Path;

    use super::*;

    async fn put(store: &InMemory, path: &Path, rows: i64) -> ObjectMeta {
        let column: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows));
        let batch = RecordBatch::try_from_iter([("n", column)]).unwrap();
        let mut bytes = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut bytes, batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        store.put(path, bytes.into()).await.unwrap();
        store.head(path).await.unwrap()
    }

    #[test]
    fn a_files_footer_is_parsed_once_and_again_when_the_file_changes() {
        crate::query::block_on(async {
            let store = Arc::new(InMemory::new());
            let path = Path::from("t/part-0.parquet");
            let footers = Footers::default();
            let file = put(&store, &path, 10).await;
            let first = footers
                .reader(store.clone(), &file)
                .get_metadata(None)
                .await
                .unwrap();
            let again = footers
                .reader(store.clone(), &file)
                .get_metadata(None)
                .await
                .unwrap();
            assert!(Arc::ptr_eq(&first, &again));
            let file = put(&store, &path, 1000).await;
            let replaced = footers
                .reader(store.clone(), &file)
                .get_metadata(None)
                .await
                .unwrap();
            assert!(!Arc::ptr_eq(&first, &replaced));
            assert_eq!(replaced.file_metadata().num_rows(), 1000);
            Ok(())
        })
        .unwrap();
    }
}
