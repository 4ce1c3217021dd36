//! Reading only the leaves of a struct column that a query reaches. In the Parquet files a struct
//! column is one leaf column per field at any depth (a snapshot's `body` has about two hundred),
//! and the reader decodes every page of every leaf of a column it reads, even for a query that
//! names `body.host.network` alone. So when a session plans a query, [`Planner`] finds, in the
//! whole plan, the struct fields through which each struct column is reached (`body.host.network`
//! reaches `body` through `host.network`), and the scans of the dataset's tables read only the
//! leaves under those fields; the struct's other fields read as null, which nothing in the query
//! looks at. A column the query uses in any other way — returned, compared, grouped, renamed,
//! handed to a function whole — is read whole, wherever in the plan that happens, and so is a
//! column reached through anything but a field name. Columns are matched by name across the plan,
//! so two columns of one name pool what they need: a scan may read more than it needs, never less.

use std::any::Any;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result, Statistics};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::DefaultParquetFileReaderFactory;
use datafusion::datasource::physical_plan::{
    FileOpenFuture, FileOpener, FileScanConfig, FileSource, ParquetFileReaderFactory, ParquetSource,
};
use datafusion::datasource::schema_adapter::SchemaAdapterFactory;
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::execution::context::{QueryPlanner, SessionState};
use datafusion::logical_expr::{Distinct, Expr, LogicalPlan};
use datafusion::parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use datafusion::parquet::arrow::async_reader::AsyncFileReader;
use datafusion::parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};
use datafusion::parquet::schema::types::SchemaDescriptor;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::filter_pushdown::FilterPushdownPropagation;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::{DisplayFormatType, ExecutionPlan};
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};
use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStore;

use crate::evolve::ByName;

/// A field path below a struct column: `["host", "network"]` for `body.host.network`.
type FieldPath = Vec<String>;

/// How a plan reaches a column of a name.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reach {
    /// Only through these field paths.
    Fields(BTreeSet<FieldPath>),
    /// Some other way: the column is read whole.
    Whole,
}

/// What a plan reaches, by column name.
#[derive(Debug, Default)]
struct Reached(HashMap<String, Reach>);

impl Reached {
    fn whole(&mut self, name: &str) {
        self.0.insert(name.to_owned(), Reach::Whole);
    }

    fn field(&mut self, name: &str, path: FieldPath) {
        match self
            .0
            .entry(name.to_owned())
            .or_insert_with(|| Reach::Fields(BTreeSet::new()))
        {
            Reach::Fields(paths) => {
                paths.insert(path);
            }
            Reach::Whole => {}
        }
    }

    fn whole_schema(&mut self, plan: &LogicalPlan) {
        for f in plan.schema().fields() {
            self.whole(f.name());
        }
    }

    /// The names reached only through fields, with their paths.
    fn fields(self) -> HashMap<String, Vec<FieldPath>> {
        self.0
            .into_iter()
            .filter_map(|(name, reach)| match reach {
                Reach::Fields(paths) => Some((name, paths.into_iter().collect())),
                Reach::Whole => None,
            })
            .collect()
    }
}

/// `expr` as a column reached through field names (`get_field` with literal names, nested),
/// the outermost name last; `None` for anything else.
fn field_chain(expr: &Expr) -> Option<(&str, FieldPath)> {
    let mut path = FieldPath::new();
    let mut at = expr;
    loop {
        match at {
            Expr::ScalarFunction(f) if f.func.name() == "get_field" && f.args.len() >= 2 => {
                let mut names = FieldPath::new();
                for arg in &f.args[1..] {
                    let Expr::Literal(value, _) = arg else {
                        return None;
                    };
                    names.push(value.try_as_str()??.to_owned());
                }
                names.append(&mut path);
                path = names;
                at = &f.args[0];
            }
            Expr::Column(c) if !path.is_empty() => return Some((c.name.as_str(), path)),
            _ => return None,
        }
    }
}

fn expression(expr: &Expr, reached: &mut Reached) -> Result<()> {
    expr.apply(|e| {
        if let Some((name, path)) = field_chain(e) {
            reached.field(name, path);
            return Ok(TreeNodeRecursion::Jump);
        }
        match e {
            Expr::Column(c) => reached.whole(&c.name),
            Expr::OuterReferenceColumn(_, c) => reached.whole(&c.name),
            Expr::ScalarSubquery(s) => reached.whole_schema(&s.subquery),
            Expr::InSubquery(s) => reached.whole_schema(&s.subquery.subquery),
            Expr::Exists(s) => reached.whole_schema(&s.subquery.subquery),
            _ => {}
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(())
}

/// How `plan` reaches each column name it uses: through the expressions of every node (its
/// subqueries' too), and whole where a node passes its rows on whole (the plan's output, what a
/// subquery, an `EXPLAIN` or a `DISTINCT` hands on, a union's columns it renames) or where the
/// node is one this module does not know.
fn reached(plan: &LogicalPlan) -> Result<HashMap<String, Vec<FieldPath>>> {
    let mut reached = Reached::default();
    reached.whole_schema(plan);
    plan.apply_with_subqueries(|node| {
        node.apply_expressions(|e| {
            expression(e, &mut reached)?;
            Ok(TreeNodeRecursion::Continue)
        })?;
        match node {
            LogicalPlan::Projection(_)
            | LogicalPlan::Filter(_)
            | LogicalPlan::Window(_)
            | LogicalPlan::Aggregate(_)
            | LogicalPlan::Sort(_)
            | LogicalPlan::Join(_)
            | LogicalPlan::Repartition(_)
            | LogicalPlan::TableScan(_)
            | LogicalPlan::EmptyRelation(_)
            | LogicalPlan::SubqueryAlias(_)
            | LogicalPlan::Limit(_)
            | LogicalPlan::Values(_)
            | LogicalPlan::Distinct(Distinct::On(_)) => {}
            LogicalPlan::Union(u) => {
                for input in &u.inputs {
                    for (theirs, ours) in input.schema().fields().iter().zip(u.schema.fields()) {
                        if theirs.name() != ours.name() {
                            reached.whole(theirs.name());
                            reached.whole(ours.name());
                        }
                    }
                }
            }
            other => {
                reached.whole_schema(other);
                for input in other.inputs() {
                    reached.whole_schema(input);
                }
            }
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(reached.fields())
}

/// The session's query planner: DataFusion's, then each scan of a dataset table told which
/// leaves of its struct columns the plan reaches.
#[derive(Debug, Default)]
pub struct Planner;

#[async_trait]
impl QueryPlanner for Planner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session_state: &SessionState,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let plan = DefaultPhysicalPlanner::default()
            .create_physical_plan(logical_plan, session_state)
            .await?;
        let fields = reached(logical_plan)?;
        if fields.is_empty() {
            return Ok(plan);
        }
        plan.transform_up(|node| {
            let Some(exec) = node.as_any().downcast_ref::<DataSourceExec>() else {
                return Ok(Transformed::no(node));
            };
            let Some(config) = exec.data_source().as_any().downcast_ref::<FileScanConfig>() else {
                return Ok(Transformed::no(node));
            };
            let Some(source) = config.file_source.as_any().downcast_ref::<LeafSource>() else {
                return Ok(Transformed::no(node));
            };
            let reaching = source.reaching(config, &fields);
            if reaching.reached.is_empty() {
                return Ok(Transformed::no(node));
            }
            let mut config = config.clone();
            config.file_source = Arc::new(reaching);
            let exec: Arc<dyn ExecutionPlan> = DataSourceExec::from_data_source(config);
            Ok(Transformed::yes(exec))
        })
        .map(|t| t.data)
    }
}

/// The field paths of `paths` that lead through struct fields of `data_type`, or `None` when one
/// of them does not (the column is then read whole).
fn struct_paths(data_type: &DataType, paths: &[FieldPath]) -> Option<Vec<FieldPath>> {
    for path in paths {
        let mut at = data_type;
        for name in path {
            let DataType::Struct(fields) = at else {
                return None;
            };
            at = fields.find(name)?.1.data_type();
        }
    }
    Some(paths.to_vec())
}

/// A Parquet scan's source that reads only the leaves [`Planner`] found the plan reaches; with
/// none, the Parquet source it wraps, unchanged.
#[derive(Clone)]
pub struct LeafSource {
    inner: Arc<dyn FileSource>,
    /// Per struct column of the scan, the field paths the plan reaches it through.
    reached: Arc<HashMap<String, Vec<FieldPath>>>,
    batch_size: Option<usize>,
}

impl LeafSource {
    /// `inner` (a Parquet source), reading every leaf until a plan says otherwise.
    pub fn new(inner: Arc<dyn FileSource>) -> LeafSource {
        LeafSource {
            inner,
            reached: Arc::default(),
            batch_size: None,
        }
    }

    fn with_inner(&self, inner: Arc<dyn FileSource>) -> Arc<dyn FileSource> {
        Arc::new(LeafSource {
            inner,
            ..self.clone()
        })
    }

    /// This source reading, of the scan's struct columns, only the leaves `fields` names.
    fn reaching(&self, config: &FileScanConfig, fields: &HashMap<String, Vec<FieldPath>>) -> Self {
        let schema = config.file_schema();
        let projection = config
            .file_column_projection_indices()
            .unwrap_or_else(|| (0..schema.fields().len()).collect());
        let reached = projection
            .iter()
            .filter_map(|&i| {
                let field = schema.fields().get(i)?;
                let paths = fields.get(field.name())?;
                let paths = struct_paths(field.data_type(), paths)?;
                Some((field.name().clone(), paths))
            })
            .collect();
        LeafSource {
            reached: Arc::new(reached),
            ..self.clone()
        }
    }
}

impl fmt::Debug for LeafSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeafSource")
            .field("reached", &self.reached)
            .finish_non_exhaustive()
    }
}

impl FileSource for LeafSource {
    fn create_file_opener(
        &self,
        object_store: Arc<dyn ObjectStore>,
        base_config: &FileScanConfig,
        partition: usize,
    ) -> Arc<dyn FileOpener> {
        if self.reached.is_empty() {
            return self
                .inner
                .create_file_opener(object_store, base_config, partition);
        }
        let factory = self
            .inner
            .as_any()
            .downcast_ref::<ParquetSource>()
            .and_then(|p| p.parquet_file_reader_factory().cloned())
            .unwrap_or_else(|| Arc::new(DefaultParquetFileReaderFactory::new(object_store)));
        let projection = base_config
            .file_column_projection_indices()
            .unwrap_or_else(|| (0..base_config.file_schema().fields().len()).collect());
        Arc::new(LeafOpener {
            partition,
            projection,
            file_schema: Arc::clone(base_config.file_schema()),
            limit: base_config.limit,
            batch_size: self.batch_size.unwrap_or(8192),
            reached: Arc::clone(&self.reached),
            factory,
            metrics: self.inner.metrics().clone(),
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        Arc::new(LeafSource {
            inner: self.inner.with_batch_size(batch_size),
            batch_size: Some(batch_size),
            ..self.clone()
        })
    }

    fn with_schema(&self, schema: TableSchema) -> Arc<dyn FileSource> {
        self.with_inner(self.inner.with_schema(schema))
    }

    fn with_projection(&self, config: &FileScanConfig) -> Arc<dyn FileSource> {
        self.with_inner(self.inner.with_projection(config))
    }

    fn with_statistics(&self, statistics: Statistics) -> Arc<dyn FileSource> {
        self.with_inner(self.inner.with_statistics(statistics))
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        self.inner.metrics()
    }

    fn statistics(&self) -> Result<Statistics> {
        self.inner.statistics()
    }

    fn file_type(&self) -> &str {
        self.inner.file_type()
    }

    fn fmt_extra(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.fmt_extra(t, f)?;
        if !self.reached.is_empty() {
            let mut reached: Vec<String> = self
                .reached
                .iter()
                .flat_map(|(name, paths)| {
                    paths.iter().map(move |p| format!("{name}.{}", p.join(".")))
                })
                .collect();
            reached.sort();
            write!(f, ", leaves_of=[{}]", reached.join(", "))?;
        }
        Ok(())
    }

    fn try_pushdown_filters(
        &self,
        filters: Vec<Arc<dyn PhysicalExpr>>,
        config: &ConfigOptions,
    ) -> Result<FilterPushdownPropagation<Arc<dyn FileSource>>> {
        let pushed = self.inner.try_pushdown_filters(filters, config)?;
        Ok(FilterPushdownPropagation {
            filters: pushed.filters,
            updated_node: pushed.updated_node.map(|inner| self.with_inner(inner)),
        })
    }

    fn with_schema_adapter_factory(
        &self,
        factory: Arc<dyn SchemaAdapterFactory>,
    ) -> Result<Arc<dyn FileSource>> {
        Ok(self.with_inner(self.inner.with_schema_adapter_factory(factory)?))
    }

    fn schema_adapter_factory(&self) -> Option<Arc<dyn SchemaAdapterFactory>> {
        self.inner.schema_adapter_factory()
    }
}

/// Opens a file of a [`LeafSource`]: the row groups of the scan's range, the leaves reached, the
/// batches mapped onto the table's columns by name ([`ByName`]).
struct LeafOpener {
    partition: usize,
    projection: Vec<usize>,
    file_schema: SchemaRef,
    limit: Option<usize>,
    batch_size: usize,
    reached: Arc<HashMap<String, Vec<FieldPath>>>,
    factory: Arc<dyn ParquetFileReaderFactory>,
    metrics: ExecutionPlanMetricsSet,
}

/// The leaves to read: of each root column the file has and the scan reads, every leaf, or for a
/// reached struct column the leaves under its reached paths (at least one, for its nulls).
fn leaves(
    descr: &SchemaDescriptor,
    file: &Schema,
    roots: &[usize],
    reached: &HashMap<String, Vec<FieldPath>>,
) -> Vec<usize> {
    let mut chosen = Vec::new();
    let mut first = HashMap::new();
    let mut taken = BTreeSet::new();
    for leaf in 0..descr.num_columns() {
        let root = descr.get_column_root_idx(leaf);
        if !roots.contains(&root) {
            continue;
        }
        first.entry(root).or_insert(leaf);
        let take = match file.fields().get(root).and_then(|f| reached.get(f.name())) {
            None => true,
            Some(paths) => {
                let column = descr.column(leaf);
                let parts = column.path().parts();
                paths.iter().any(|p| {
                    parts.len() > p.len() && parts[1..=p.len()].iter().zip(p).all(|(a, b)| a == b)
                })
            }
        };
        if take {
            chosen.push(leaf);
            taken.insert(root);
        }
    }
    for (root, leaf) in first {
        if !taken.contains(&root) {
            chosen.push(leaf);
        }
    }
    chosen.sort_unstable();
    chosen
}

impl FileOpener for LeafOpener {
    fn open(&self, file: PartitionedFile) -> Result<FileOpenFuture> {
        let range = file.range.clone();
        let mut reader: Box<dyn AsyncFileReader> =
            self.factory
                .create_reader(self.partition, file, None, &self.metrics)?;
        let projected = Arc::new(self.file_schema.project(&self.projection)?);
        let adapter = ByName.create(projected, Arc::clone(&self.file_schema));
        let reached = Arc::clone(&self.reached);
        let (batch_size, limit) = (self.batch_size, self.limit);
        Ok(Box::pin(async move {
            let options = ArrowReaderOptions::new().with_page_index(false);
            let metadata = ArrowReaderMetadata::load_async(&mut reader, options).await?;
            let (mapper, roots) = adapter.map_schema(metadata.schema())?;
            let mask = ProjectionMask::leaves(
                metadata.parquet_schema(),
                leaves(
                    metadata.parquet_schema(),
                    metadata.schema(),
                    &roots,
                    &reached,
                ),
            );
            // The row groups that start in the scan's part of the file, as DataFusion splits one.
            let row_groups = metadata
                .metadata()
                .row_groups()
                .iter()
                .enumerate()
                .filter(|(_, group)| {
                    let column = group.column(0);
                    let start = column
                        .dictionary_page_offset()
                        .unwrap_or_else(|| column.data_page_offset());
                    range.as_ref().is_none_or(|r| r.contains(start))
                })
                .map(|(i, _)| i)
                .collect();
            let mut builder = ParquetRecordBatchStreamBuilder::new_with_metadata(reader, metadata)
                .with_projection(mask)
                .with_batch_size(batch_size)
                .with_row_groups(row_groups);
            if let Some(limit) = limit {
                builder = builder.with_limit(limit);
            }
            let stream = builder
                .build()?
                .map_err(DataFusionError::from)
                .map(move |batch| batch.and_then(|b| mapper.map_batch(b)));
            Ok(stream.boxed())
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::dataframe::DataFrameWriteOptions;
    use datafusion::prelude::SessionContext;

    use super::*;
    use crate::Error;
    use crate::query::{block_on, context, parquet_table};

    fn q(e: impl fmt::Display) -> Error {
        Error::query(e.to_string())
    }

    /// A row of table `t`: `s` is a struct with a struct `a`, a list of structs `d` and a text
    /// `g` (left out for `old`, as a file written before `g` existed).
    fn row(id: i64, old: bool) -> String {
        let a = match id % 3 {
            0 => "CASE WHEN false THEN named_struct('b', 0, 'c', 'x') END".to_owned(),
            1 => format!("named_struct('b', CAST(NULL AS BIGINT), 'c', 'c{id}')"),
            _ => format!("named_struct('b', {id}, 'c', CAST(NULL AS VARCHAR))"),
        };
        let d = match id % 2 {
            0 => "CASE WHEN false THEN make_array(named_struct('e', 0, 'f', 'x')) END".to_owned(),
            _ => format!(
                "make_array(named_struct('e', {id}, 'f', 'f{id}'), \
                 named_struct('e', CAST(NULL AS BIGINT), 'f', CAST(NULL AS VARCHAR)))"
            ),
        };
        let g = if old {
            String::new()
        } else {
            format!(
                ", 'g', {}",
                if id % 4 == 0 {
                    "CAST(NULL AS VARCHAR)".to_owned()
                } else {
                    format!("'g{id}'")
                }
            )
        };
        let s = format!("named_struct('a', {a}, 'd', {d}{g})");
        let s = if id % 5 == 0 {
            format!("CASE WHEN false THEN {s} END")
        } else {
            s
        };
        format!("SELECT CAST({id} AS BIGINT) AS id, {s} AS s")
    }

    async fn write(ctx: &SessionContext, file: &Path, ids: std::ops::Range<i64>, old: bool) {
        let sql = ids
            .map(|id| row(id, old))
            .collect::<Vec<_>>()
            .join(" UNION ALL ");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        ctx.sql(&sql)
            .await
            .unwrap()
            .write_parquet(
                &file.display().to_string(),
                DataFrameWriteOptions::new().with_single_file_output(true),
                None,
            )
            .await
            .unwrap();
    }

    /// Table `t` in `dir`, one file of today's columns and one written before `s.g` existed,
    /// registered in a session of this crate's (`pruning`) or in a plain one.
    async fn table(dir: &Path, pruning: bool) -> Result<SessionContext, Error> {
        let plain = SessionContext::new();
        let file = dir.join("contract_major=1/date=2026-01-01/new.parquet");
        if !file.exists() {
            write(&plain, &file, 0..12, false).await;
            write(
                &plain,
                &dir.join("contract_major=1/date=2026-01-02/old.parquet"),
                12..20,
                true,
            )
            .await;
        }
        let schema = plain
            .sql(&row(1, false))
            .await
            .map_err(q)?
            .schema()
            .as_arrow()
            .clone();
        let ctx = if pruning { context() } else { plain };
        ctx.register_table("t", Arc::new(parquet_table(dir, Arc::new(schema))?))
            .map_err(q)?;
        Ok(ctx)
    }

    async fn rows(ctx: &SessionContext, sql: &str) -> Result<String, Error> {
        let batches = ctx.sql(sql).await.map_err(q)?.collect().await.map_err(q)?;
        Ok(pretty_format_batches(&batches).map_err(q)?.to_string())
    }

    fn reached_by(sql: &str) -> HashMap<String, Vec<FieldPath>> {
        let dir = tempfile::tempdir().unwrap();
        block_on(async {
            let ctx = table(dir.path(), true).await?;
            let plan = ctx
                .sql(sql)
                .await
                .map_err(q)?
                .into_optimized_plan()
                .map_err(q)?;
            reached(&plan).map_err(q)
        })
        .unwrap()
    }

    fn paths(list: &[&[&str]]) -> Vec<FieldPath> {
        list.iter()
            .map(|p| p.iter().map(|s| (*s).to_owned()).collect())
            .collect()
    }

    #[test]
    fn a_struct_column_is_reached_through_the_fields_a_query_names() {
        let got = reached_by("SELECT s.a.b FROM t WHERE s.g = 'g1'");
        assert_eq!(got.get("s"), Some(&paths(&[&["a", "b"], &["g"]])));
        let got = reached_by("SELECT s.a.b FROM t UNION ALL SELECT s.a.c FROM t");
        assert_eq!(got.get("s"), Some(&paths(&[&["a", "b"], &["a", "c"]])));
        let got = reached_by("SELECT id FROM t WHERE id IN (SELECT s.a.b FROM t)");
        assert_eq!(got.get("s"), Some(&paths(&[&["a", "b"]])));
    }

    #[test]
    fn a_struct_column_used_whole_anywhere_is_read_whole() {
        for sql in [
            "SELECT s FROM t",
            "SELECT * FROM t WHERE s.a.b > 0",
            "SELECT s.a.b FROM t WHERE s IS NOT NULL",
            "SELECT s.a.b FROM t WHERE s.g IN (SELECT CAST(s AS VARCHAR) FROM t)",
        ] {
            assert_eq!(reached_by(sql).get("s"), None, "{sql}");
        }
    }

    #[test]
    fn reading_only_the_reached_leaves_answers_as_reading_the_whole_column() {
        let dir = tempfile::tempdir().unwrap();
        let queries = [
            "SELECT id, s.a.b, s.a.c, s.a IS NULL AS no_a, s.g, cardinality(s.d) AS n, s.d \
             FROM t ORDER BY id",
            "SELECT id, s.g FROM t WHERE s.a.b IS NULL ORDER BY id",
            "SELECT x.id, y.s.g, x.s.a.c FROM t x JOIN t y ON x.id = y.id + 1 ORDER BY x.id",
            "SELECT s.g, COUNT(*) AS n FROM t GROUP BY s.g ORDER BY s.g",
            "SELECT id, s.d[2] AS second FROM t WHERE cardinality(s.d) > 0 ORDER BY id",
            "SELECT * FROM t ORDER BY id",
            "SELECT id, s.g FROM t ORDER BY id LIMIT 3",
        ];
        block_on(async {
            let pruned = table(dir.path(), true).await?;
            let plain = table(dir.path(), false).await?;
            for sql in queries {
                assert_eq!(rows(&pruned, sql).await?, rows(&plain, sql).await?, "{sql}");
            }
            let plan = rows(&pruned, &format!("EXPLAIN ANALYZE {}", queries[1])).await?;
            assert!(plan.contains("leaves_of=[s.a.b, s.g]"), "{plan}");
            Ok::<_, Error>(())
        })
        .unwrap();
    }
}
