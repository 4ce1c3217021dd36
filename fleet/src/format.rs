//! The dataset's Parquet format: the plain Parquet format of DataFusion with scans that read
//! older files by field name ([`ByName`], `evolve`), read only the struct leaves a query reaches
//! ([`LeafSource`], `leaves`), and share each file's parsed footer ([`Footers`], `footers`).
//! `ParquetFormat` offers no other hook for these, so the format wraps it.

use std::any::Any;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::{Result, Statistics};
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::physical_plan::parquet::metadata::DFParquetMetadata;
use datafusion::datasource::physical_plan::{
    FileScanConfig, FileScanConfigBuilder, FileSource, ParquetSource,
};
use datafusion::datasource::source::DataSourceExec;
use datafusion::parquet::arrow::async_reader::AsyncFileReader;
use datafusion::physical_plan::ExecutionPlan;
use object_store::{ObjectMeta, ObjectStore};

use crate::evolve::ByName;
use crate::footers::{Footers, SharedFooters};
use crate::leaves::LeafSource;

/// Parquet, with scans that read older files by field name ([`ByName`]) and share each file's
/// parsed footer ([`Footers`]) with the other scans of the same table.
#[derive(Debug, Default)]
pub struct EvolvingParquet {
    inner: ParquetFormat,
    footers: Arc<Footers>,
}

#[async_trait]
impl FileFormat for EvolvingParquet {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn get_ext(&self) -> String {
        self.inner.get_ext()
    }

    fn get_ext_with_compression(&self, c: &FileCompressionType) -> Result<String> {
        self.inner.get_ext_with_compression(c)
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        self.inner.compression_type()
    }

    async fn infer_schema(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        self.inner.infer_schema(state, store, objects).await
    }

    async fn infer_stats(
        &self,
        _state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<Statistics> {
        let footer = self
            .footers
            .reader(Arc::clone(store), object)
            .get_metadata(None)
            .await?;
        DFParquetMetadata::statistics_from_parquet_metadata(&footer, &table_schema)
    }

    async fn create_physical_plan(
        &self,
        state: &dyn Session,
        conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // What the inner format's own plan is, with the readers that share the footers, in a
        // source that reads only the struct leaves a plan reaches (`leaves`).
        let store = state.runtime_env().object_store(&conf.object_store_url)?;
        let mut source =
            ParquetSource::new(self.inner.options().clone()).with_parquet_file_reader_factory(
                Arc::new(SharedFooters::new(store, Arc::clone(&self.footers))),
            );
        if let Some(hint) = self.inner.metadata_size_hint() {
            source = source.with_metadata_size_hint(hint);
        }
        let source = LeafSource::new(source.with_schema_adapter_factory(Arc::new(ByName))?);
        let conf = FileScanConfigBuilder::from(conf)
            .with_source(Arc::new(source))
            .build();
        Ok(DataSourceExec::from_data_source(conf))
    }

    fn file_source(&self) -> Arc<dyn FileSource> {
        let plain = ParquetSource::default();
        // Parquet's source always takes an adapter; were it ever to refuse, the scan would still
        // read, only without older files' struct columns.
        plain
            .with_schema_adapter_factory(Arc::new(ByName))
            .unwrap_or_else(|_| Arc::new(ParquetSource::default()))
    }
}
