//! `diagwire fleet`: the fleet report of a dataset, computed with SQL through the same DataFusion
//! session `diagwire query` uses (the tables with their registered schemas and the shipped
//! views), into the typed [`FleetReport`] that `diagwire_fleet_report` renders as Markdown, HTML
//! or JSON. Dial failures read the `dials` view, RTTs by region the `probe_rtt_samples` view and
//! subprocess buckets the `subprocesses` view, so each counts by the rules the summary's section
//! of one run uses; relay closes count every `RelaySessionClosed` (the `relay_sessions` view keeps
//! only the latest close per relay and peer, which would undercount a flapping relay). Quarantined
//! bodies count the `quarantine` table's rows per kind of post.

use std::path::Path;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::prelude::SessionContext;
use diagwire_fleet_report::{
    DayRow, DialDimension, DialFailureRow, FORMAT_VERSION, FaultRow, FleetReport, QuarantineRow,
    RegionRttRow, RelayCloseRow, SubprocessBucketRow, WriterRow,
};

use crate::Error;

const RUNS: &str = "SELECT COUNT(*) AS n FROM runs";

const RUNS_OVER_TIME: &str = "SELECT r.date AS day, r.writer.kind AS writer_kind, COUNT(*) AS runs,
  SUM(COALESCE(n.nodes, 0)) AS nodes
FROM runs r
LEFT JOIN (SELECT run_id, COUNT(*) AS nodes FROM nodes GROUP BY run_id) AS n ON n.run_id = r.run_id
GROUP BY r.date, r.writer.kind
ORDER BY day, writer_kind";

const FAULTS: &str = "SELECT event_type, reason, component, COUNT(*) AS events,
  COUNT(DISTINCT run_id) AS runs
FROM (
  SELECT run_id, type AS event_type, node_faulted.reason AS reason, node_faulted.component AS component
  FROM events WHERE type = 'node_faulted'
  UNION ALL
  SELECT run_id, type, run_faulted.reason, run_faulted.component FROM events WHERE type = 'run_faulted'
  UNION ALL
  SELECT run_id, type, fault_detected.reason, fault_detected.component FROM events WHERE type = 'fault_detected'
) AS f
GROUP BY event_type, reason, component
ORDER BY events DESC, event_type, reason, component";

/// Per dimension; `{dim}` is the `nodes` column.
const DIAL_FAILURES: &str = "SELECT n.{dim} AS dim_value, COUNT(DISTINCT d.run_id) AS runs,
  COUNT(*) AS peers, SUM(d.started) AS started, SUM(d.succeeded) AS succeeded, SUM(d.failed) AS failed
FROM dials d
LEFT JOIN nodes n ON n.run_id = d.run_id AND n.node = d.peer
GROUP BY n.{dim}
ORDER BY dim_value";

const RTT_BY_REGION: &str = "WITH regions AS (
  SELECT s.run_id, o.host_country AS from_region, t.host_country AS to_region, s.rtt
  FROM probe_rtt_samples s
  LEFT JOIN nodes o ON o.run_id = s.run_id AND o.node = s.observer
  LEFT JOIN node_labels l ON l.run_id = s.run_id AND l.node_id = s.target
  LEFT JOIN nodes t ON t.run_id = s.run_id AND t.node = l.label
  WHERE s.rtt IS NOT NULL
),
ranked AS (
  SELECT run_id, from_region, to_region, rtt,
    ROW_NUMBER() OVER (PARTITION BY from_region, to_region ORDER BY rtt) AS rn,
    COUNT(*) OVER (PARTITION BY from_region, to_region) AS n
  FROM regions
)
SELECT from_region, to_region, COUNT(DISTINCT run_id) AS runs, COUNT(*) AS samples,
  MIN(CASE WHEN rn >= CEIL(50 * n / 100.0) THEN rtt END) AS p50_ms,
  MIN(CASE WHEN rn >= CEIL(95 * n / 100.0) THEN rtt END) AS p95_ms,
  MIN(CASE WHEN rn >= CEIL(99 * n / 100.0) THEN rtt END) AS p99_ms
FROM ranked
GROUP BY from_region, to_region
ORDER BY from_region, to_region";

/// Every relay session close, its initiator's deprecated spellings folded (`remote` is `peer`,
/// `idle_timeout` is `relay`, as `diagwire::canonical::relay_close` reads them).
const RELAY: &str = "WITH relay_closes AS (
  SELECT run_id,
    CASE relay_session_closed.close_initiator
      WHEN 'remote' THEN 'peer' WHEN 'idle_timeout' THEN 'relay'
      ELSE relay_session_closed.close_initiator END AS initiator,
    relay_session_closed.close_reason AS reason
  FROM events WHERE type = 'RelaySessionClosed'
)
SELECT initiator, reason, COUNT(*) AS closes, COUNT(DISTINCT run_id) AS runs
FROM relay_closes
GROUP BY initiator, reason
ORDER BY closes DESC, initiator, reason";

const SUBPROCESSES: &str = "SELECT bucket, COUNT(*) AS subprocesses, COUNT(DISTINCT run_id) AS runs
FROM subprocesses
GROUP BY bucket
ORDER BY bucket";

const WRITERS: &str = "SELECT contract_version, writer.kind AS writer_kind, writer.name AS writer_name,
  writer.version AS writer_version, COUNT(*) AS runs, MIN(date) AS first_seen, MAX(date) AS last_seen
FROM runs
GROUP BY contract_version, writer.kind, writer.name, writer.version
ORDER BY first_seen, contract_version, writer_kind, writer_name, writer_version";

/// The quarantined bodies per kind of post; a node is a run's node.
const QUARANTINED: &str = "SELECT route, COUNT(*) AS bodies, COALESCE(SUM(bytes), 0) AS bytes,
  COUNT(DISTINCT concat(run_id, '/', node)) AS nodes, COUNT(DISTINCT run_id) AS runs
FROM quarantine
GROUP BY route
ORDER BY bodies DESC, route";

/// The rows of one query, as a column reader.
struct Rows(Vec<RecordBatch>);

impl Rows {
    fn each(&self) -> impl Iterator<Item = (&RecordBatch, usize)> {
        self.0
            .iter()
            .flat_map(|b| (0..b.num_rows()).map(move |i| (b, i)))
    }
}

fn column<'a>(b: &'a RecordBatch, name: &str) -> Result<&'a dyn Array, Error> {
    b.column_by_name(name)
        .map(|c| c.as_ref())
        .ok_or_else(|| Error::query(format!("the report's query has no column {name}")))
}

/// A text cell (null as `None`).
fn text(b: &RecordBatch, i: usize, name: &str) -> Result<Option<String>, Error> {
    let c = column(b, name)?;
    if c.is_null(i) {
        return Ok(None);
    }
    let v = match c.data_type() {
        DataType::Utf8 => c.as_string::<i32>().value(i).to_owned(),
        DataType::LargeUtf8 => c.as_string::<i64>().value(i).to_owned(),
        DataType::Utf8View => c.as_string_view().value(i).to_owned(),
        DataType::Dictionary(_, _) => {
            let cast = datafusion::arrow::compute::cast(&c.slice(i, 1), &DataType::Utf8)
                .map_err(|e| Error::query(e.to_string()))?;
            cast.as_string::<i32>().value(0).to_owned()
        }
        other => {
            return Err(Error::query(format!(
                "the report's column {name} is {other}, not text"
            )));
        }
    };
    Ok(Some(v))
}

/// An integer cell (null as `None`).
fn int(b: &RecordBatch, i: usize, name: &str) -> Result<Option<i64>, Error> {
    let c = column(b, name)?;
    if c.is_null(i) {
        return Ok(None);
    }
    let cast = datafusion::arrow::compute::cast(&c.slice(i, 1), &DataType::Int64)
        .map_err(|e| Error::query(format!("{name}: {e}")))?;
    let ints = cast.as_primitive::<Int64Type>();
    Ok((!ints.is_null(0)).then(|| ints.value(0)))
}

fn count(b: &RecordBatch, i: usize, name: &str) -> Result<u64, Error> {
    Ok(int(b, i, name)?.map_or(0, |v| u64::try_from(v).unwrap_or(0)))
}

fn required(b: &RecordBatch, i: usize, name: &str) -> Result<String, Error> {
    text(b, i, name)?.ok_or_else(|| Error::query(format!("the report's column {name} is null")))
}

async fn rows(ctx: &SessionContext, section: &str, sql: &str) -> Result<Rows, Error> {
    let frame = ctx
        .sql(sql)
        .await
        .map_err(|e| Error::query(format!("fleet report, {section}: {e}")))?;
    let batches = frame
        .collect()
        .await
        .map_err(|e| Error::query(format!("fleet report, {section}: {e}")))?;
    Ok(Rows(batches))
}

/// The report of the dataset the session reads.
pub async fn report_with(ctx: &SessionContext) -> Result<FleetReport, Error> {
    let mut r = FleetReport {
        format_version: FORMAT_VERSION,
        ..FleetReport::default()
    };
    for (b, i) in rows(ctx, "runs", RUNS).await?.each() {
        r.runs = count(b, i, "n")?;
    }
    for (b, i) in rows(ctx, "runs over time", RUNS_OVER_TIME).await?.each() {
        r.runs_over_time.push(DayRow {
            day: required(b, i, "day")?,
            writer_kind: text(b, i, "writer_kind")?,
            runs: count(b, i, "runs")?,
            nodes: count(b, i, "nodes")?,
        });
    }
    for (b, i) in rows(ctx, "fault reasons", FAULTS).await?.each() {
        r.faults.push(FaultRow {
            event_type: required(b, i, "event_type")?,
            reason: text(b, i, "reason")?,
            component: text(b, i, "component")?,
            events: count(b, i, "events")?,
            runs: count(b, i, "runs")?,
        });
    }
    for (by, dim) in [
        (DialDimension::Provider, "host_provider"),
        (DialDimension::Datacenter, "datacenter_id"),
        (DialDimension::Country, "host_country"),
    ] {
        let sql = DIAL_FAILURES.replace("{dim}", dim);
        for (b, i) in rows(ctx, "dial failure rate", &sql).await?.each() {
            let (succeeded, failed) = (count(b, i, "succeeded")?, count(b, i, "failed")?);
            let outcomes = succeeded + failed;
            r.dial_failures.push(DialFailureRow {
                by,
                value: text(b, i, "dim_value")?,
                runs: count(b, i, "runs")?,
                peers: count(b, i, "peers")?,
                started: count(b, i, "started")?,
                succeeded,
                failed,
                failure_rate: (outcomes > 0).then(|| failed as f64 / outcomes as f64),
            });
        }
    }
    for (b, i) in rows(ctx, "relay closes", RELAY).await?.each() {
        r.relay_closes.push(RelayCloseRow {
            initiator: text(b, i, "initiator")?.unwrap_or_else(|| "unknown".into()),
            reason: text(b, i, "reason")?,
            closes: count(b, i, "closes")?,
            runs: count(b, i, "runs")?,
        });
    }
    for (b, i) in rows(ctx, "probe RTT by region pair", RTT_BY_REGION)
        .await?
        .each()
    {
        let q = |name| int(b, i, name).map(|v| v.unwrap_or(0));
        r.probe_rtt_regions.push(RegionRttRow {
            from_region: text(b, i, "from_region")?,
            to_region: text(b, i, "to_region")?,
            runs: count(b, i, "runs")?,
            samples: count(b, i, "samples")?,
            p50_ms: q("p50_ms")?,
            p95_ms: q("p95_ms")?,
            p99_ms: q("p99_ms")?,
        });
    }
    for (b, i) in rows(ctx, "subprocess buckets", SUBPROCESSES).await?.each() {
        r.subprocess_buckets.push(SubprocessBucketRow {
            bucket: required(b, i, "bucket")?,
            subprocesses: count(b, i, "subprocesses")?,
            runs: count(b, i, "runs")?,
        });
    }
    for (b, i) in rows(ctx, "contract versions and writers", WRITERS)
        .await?
        .each()
    {
        r.writers.push(WriterRow {
            contract_version: text(b, i, "contract_version")?,
            writer_kind: text(b, i, "writer_kind")?,
            writer_name: text(b, i, "writer_name")?,
            writer_version: text(b, i, "writer_version")?,
            runs: count(b, i, "runs")?,
            first_seen: required(b, i, "first_seen")?,
            last_seen: required(b, i, "last_seen")?,
        });
    }
    for (b, i) in rows(ctx, "quarantined at ingest", QUARANTINED)
        .await?
        .each()
    {
        r.quarantined.push(QuarantineRow {
            route: text(b, i, "route")?,
            bodies: count(b, i, "bodies")?,
            bytes: count(b, i, "bytes")?,
            nodes: count(b, i, "nodes")?,
            runs: count(b, i, "runs")?,
        });
    }
    Ok(r)
}

/// The report of `dataset`: a missing or invalid dataset is an error at its path.
pub fn report(dataset: &Path) -> Result<FleetReport, Error> {
    crate::query::block_on(async {
        let ctx = crate::query::session(dataset).await?;
        // An index that does not read is an error here, not an empty report.
        crate::dataset::Index::load(dataset)?;
        report_with(&ctx).await
    })
}
