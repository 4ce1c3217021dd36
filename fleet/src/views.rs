//! The shipped views, defined once: each is a `SELECT` in `fleet/views/<name>.sql`, compiled in
//! here for `diagwire query` and read from the same files by the DuckDB and Spark tests, so every
//! engine runs the same text. They use only SQL the three engines share (no JSON functions, no
//! list-to-rows function: a list's elements are read by position, as `list_positions` explains),
//! identifiers that are keywords double-quoted.
//!
//! A session holds them in its default schema ([`ViewSchema`]) and plans each only when a
//! statement first names it (directly or through another view), then keeps it: a statement that
//! names none of them plans none of them (planning all ten took most of a `SELECT 1`'s time, and
//! `list_positions` is computed only by a statement that reads a list). The schema is written
//! here, on DataFusion's schema provider, because DataFusion's own views are planned when
//! defined.

use std::any::Any;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::common::DataFusionError;
use datafusion::datasource::MemTable;
use datafusion::datasource::ViewTable;
use datafusion::execution::SessionState;
use datafusion::optimizer::Analyzer;
use datafusion::optimizer::analyzer::type_coercion::TypeCoercion;
use datafusion::prelude::{DataFrame, SessionContext};

/// One view.
#[derive(Debug)]
pub struct View {
    /// Its name.
    pub name: &'static str,
    /// Its `SELECT`.
    pub sql: &'static str,
    /// Computed once, when a statement of the session first names it, and held as one in-memory
    /// batch rather than re-planned into every query that names it: for `list_positions`, whose
    /// 10,000 rows DataFusion's cross join would otherwise hand on one row per batch, in every
    /// view that reads a list. The other engines define it as a view of the same text.
    pub materialized: bool,
}

/// A view whose `SELECT` is `fleet/views/<name>.sql`; `materialized` as [`View::materialized`].
macro_rules! view {
    ($name:literal) => {
        view!($name, false)
    };
    ($name:literal, $materialized:literal) => {
        View {
            name: $name,
            sql: include_str!(concat!("../views/", $name, ".sql")),
            materialized: $materialized,
        }
    };
}

/// Every shipped view; a view may use the ones before it.
pub const VIEWS: &[View] = &[
    view!("node_labels"),
    view!("list_positions", true),
    view!("dials"),
    view!("swim_transitions"),
    view!("probe_rtt_samples"),
    view!("probe_rtts"),
    view!("kernel_drops"),
    view!("relay_sessions"),
    view!("subprocesses"),
    view!("quarantined_per_node"),
];

/// The view named `name`, if it is one.
pub fn named(name: &str) -> Option<&'static View> {
    VIEWS.iter().find(|v| v.name == name)
}

/// The session's state as a view is planned in it, `None` once the session is gone.
type StateOf = Box<dyn Fn() -> Option<SessionState> + Send + Sync>;

/// A session's default schema: the tables registered in it (`inner`), and the shipped views,
/// each planned when first named and then kept in `inner`.
pub struct ViewSchema {
    inner: Arc<dyn SchemaProvider>,
    state: StateOf,
}

impl std::fmt::Debug for ViewSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ViewSchema")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl ViewSchema {
    /// The shipped views over the tables of `inner`, planned in `ctx`'s session (held weakly:
    /// the session holds this schema).
    pub fn new(inner: Arc<dyn SchemaProvider>, ctx: &SessionContext) -> ViewSchema {
        let weak = ctx.state_weak_ref();
        ViewSchema {
            inner,
            state: Box::new(move || weak.upgrade().map(|s| s.read().clone())),
        }
    }

    /// Plans `view` in the session (as `CREATE VIEW` would: the `SELECT`'s plan with its types
    /// coerced), computed into one batch when it is [`View::materialized`].
    async fn plan(&self, view: &View) -> Result<Arc<dyn TableProvider>, DataFusionError> {
        let state = (self.state)()
            .ok_or_else(|| DataFusionError::Internal("the session is gone".into()))?;
        let plan = state.create_logical_plan(view.sql).await?;
        let plan = Analyzer::with_rules(vec![Arc::new(TypeCoercion::new())]).execute_and_check(
            plan,
            state.config_options(),
            |_, _| {},
        )?;
        if !view.materialized {
            return Ok(Arc::new(ViewTable::new(plan, Some(view.sql.to_owned()))));
        }
        let schema = Arc::new(plan.schema().as_arrow().clone());
        let batches = DataFrame::new(state, plan).collect().await?;
        let one = datafusion::arrow::compute::concat_batches(&schema, &batches)?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![one]])?))
    }
}

#[async_trait]
impl SchemaProvider for ViewSchema {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn table_names(&self) -> Vec<String> {
        let mut names = self.inner.table_names();
        for v in VIEWS {
            if !names.iter().any(|n| n == v.name) {
                names.push(v.name.to_owned());
            }
        }
        names
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>, DataFusionError> {
        if let Some(t) = self.inner.table(name).await? {
            return Ok(Some(t));
        }
        let Some(view) = named(name) else {
            return Ok(None);
        };
        let table = self
            .plan(view)
            .await
            .map_err(|e| DataFusionError::Plan(format!("view {name}: {}", e.strip_backtrace())))?;
        // Two statements planning it at once: the first one kept is the one used.
        match self
            .inner
            .register_table(name.to_owned(), Arc::clone(&table))
        {
            Ok(_) => Ok(Some(table)),
            Err(_) => self.inner.table(name).await,
        }
    }

    fn register_table(
        &self,
        name: String,
        table: Arc<dyn TableProvider>,
    ) -> Result<Option<Arc<dyn TableProvider>>, DataFusionError> {
        self.inner.register_table(name, table)
    }

    fn deregister_table(
        &self,
        name: &str,
    ) -> Result<Option<Arc<dyn TableProvider>>, DataFusionError> {
        self.inner.deregister_table(name)
    }

    fn table_exist(&self, name: &str) -> bool {
        self.inner.table_exist(name) || named(name).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::Int64Type;
    use datafusion::catalog::MemorySchemaProvider;

    /// A session whose default schema is the views over `inner` (no dataset tables).
    fn session() -> (SessionContext, Arc<dyn SchemaProvider>) {
        let ctx = SessionContext::new();
        let inner: Arc<dyn SchemaProvider> = Arc::new(MemorySchemaProvider::new());
        let schema = ViewSchema::new(Arc::clone(&inner), &ctx);
        ctx.catalog("datafusion")
            .unwrap()
            .register_schema("public", Arc::new(schema))
            .unwrap();
        (ctx, inner)
    }

    fn run(ctx: &SessionContext, sql: &str) -> Result<i64, crate::Error> {
        crate::query::block_on(async {
            let batches = crate::query::read(ctx, sql).await?;
            Ok(batches[0].column(0).as_primitive::<Int64Type>().value(0))
        })
    }

    #[test]
    fn every_view_is_named_in_the_schema_before_any_is_planned() {
        let (ctx, inner) = session();
        let schema = ctx.catalog("datafusion").unwrap().schema("public").unwrap();
        for v in VIEWS {
            assert!(schema.table_exist(v.name), "{}", v.name);
            assert!(
                schema.table_names().iter().any(|n| n == v.name),
                "{}",
                v.name
            );
        }
        assert!(inner.table_names().is_empty());
    }

    #[test]
    fn a_statement_that_names_no_view_plans_none() {
        let (ctx, inner) = session();
        assert_eq!(run(&ctx, "SELECT 1").unwrap(), 1);
        assert!(inner.table_names().is_empty(), "{:?}", inner.table_names());
    }

    #[test]
    fn a_view_is_planned_when_first_named_and_kept() {
        let (ctx, inner) = session();
        let count = "SELECT CAST(COUNT(*) AS BIGINT) FROM list_positions";
        assert_eq!(run(&ctx, count).unwrap(), 10_000);
        assert_eq!(inner.table_names(), ["list_positions"]);
        let kept = crate::query::block_on(async {
            Ok(inner.table("list_positions").await.unwrap().unwrap())
        })
        .unwrap();
        assert_eq!(run(&ctx, count).unwrap(), 10_000);
        let again = crate::query::block_on(async {
            Ok(inner.table("list_positions").await.unwrap().unwrap())
        })
        .unwrap();
        assert!(Arc::ptr_eq(&kept, &again), "planned once");
    }

    #[test]
    fn a_view_that_does_not_plan_says_which() {
        let (ctx, _) = session();
        let e = run(&ctx, "SELECT CAST(COUNT(*) AS BIGINT) FROM dials").unwrap_err();
        assert!(e.to_string().contains("view dials"), "{e}");
    }
}
