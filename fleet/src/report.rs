//! `diagwire fleet`: the fleet report of a dataset, computed with SQL through the same DataFusion
//! session `diagwire query` uses (the tables with their registered schemas and the shipped
//! views), into the typed [`FleetReport`] that `diagwire_summary::fleet` renders as Markdown, HTML
//! or JSON. Dial failures read the `dials` view; relay closes and subprocess buckets read the
//! events table through one common table expression each ([`RELAY_CLOSES`],
//! [`SUBPROCESS_ROWS`]), written so that a shipped view with those columns replaces it in one
//! line.

use std::path::Path;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::prelude::SessionContext;
use diagwire_summary::fleet::{
    DayRow, DialDimension, DialFailureRow, FORMAT_VERSION, FaultRow, FleetReport, RegionRttRow,
    RelayCloseRow, SubprocessBucketRow, WriterRow,
};

use crate::Error;

/// Every relay session close: `run_id`, `initiator` (deprecated spellings folded: `remote` is
/// `peer`, `idle_timeout` is `relay`, as `diagwire::canonical::relay_close` reads them) and
/// `reason`. With the shipped `relay_sessions` view (the summary's rows: the latest close per relay
/// and peer) it is `relay_closes AS (SELECT run_id, initiator, reason FROM relay_sessions)`.
pub const RELAY_CLOSES: &str = "relay_closes AS (
  SELECT run_id,
    CASE relay_session_closed.close_initiator
      WHEN 'remote' THEN 'peer' WHEN 'idle_timeout' THEN 'relay'
      ELSE relay_session_closed.close_initiator END AS initiator,
    relay_session_closed.close_reason AS reason
  FROM events WHERE type = 'RelaySessionClosed'
)";

/// Every subprocess in its bucket: `run_id`, `node`, `label`, `bucket`, from the subprocess
/// events only — a `(label, pid)` with a `SubprocessExited` is `exited`, else `healthy` when its
/// node wrote `worker_ready`, else `stuck` — and each stage without one as `never_spawned`.
/// Subprocesses seen only in snapshots and the oldest writers' `worker_starting` events are not
/// counted here. With the shipped `subprocesses` view (the summary's rules) it is
/// `subprocess_rows AS (SELECT run_id, node, label, bucket FROM subprocesses)`.
pub const SUBPROCESS_ROWS: &str = "subprocess_rows AS (
  WITH subs AS (
    SELECT run_id, node, label, pid, MAX(exited) AS exited FROM (
      SELECT run_id, node, subprocess_spawned.label AS label, subprocess_spawned.pid AS pid, 0 AS exited
      FROM events WHERE type = 'SubprocessSpawned'
      UNION ALL
      SELECT run_id, node, subprocess_exited.label AS label, subprocess_exited.pid AS pid, 1 AS exited
      FROM events WHERE type = 'SubprocessExited'
    ) AS s GROUP BY run_id, node, label, pid
  ),
  ready AS (
    SELECT DISTINCT run_id, node FROM events WHERE custom.kind = 'worker_ready'
  )
  SELECT s.run_id, s.node, s.label,
    CASE WHEN s.exited = 1 THEN 'exited' WHEN r.node IS NOT NULL THEN 'healthy' ELSE 'stuck' END AS bucket
  FROM subs s LEFT JOIN ready r ON r.run_id = s.run_id AND r.node = s.node
  UNION ALL
  SELECT n.run_id, n.node, '-' AS label, 'never_spawned' AS bucket
  FROM nodes n LEFT JOIN (SELECT DISTINCT run_id, node FROM subs) AS h
    ON h.run_id = n.run_id AND h.node = n.node
  WHERE n.role = 'stage' AND h.node IS NULL
)";

/// Every acknowledged probe's RTT with its observer and target node ids, by the rules of the
/// `probe_rtts` view: answers paired with sends by (target, sequence, kind), an acknowledgement
/// after the probe timed out not counted, the RTT the acknowledgement's own `rtt_ms`, else the
/// difference of the two events' `wall_ms`.
const RTT_SAMPLES: &str = "sent AS (
  SELECT run_id, node AS observer, swim_probe_sent.target AS target,
    swim_probe_sent.sequence AS seq, swim_probe_sent.kind AS kind, wall_ms
  FROM events WHERE type = 'SwimProbeSent'
),
answers AS (
  SELECT run_id, node AS observer, swim_probe_acked.target AS target,
    swim_probe_acked.sequence AS seq, swim_probe_acked.kind AS kind, 0 AS timed_out,
    swim_probe_acked.rtt_ms AS rtt_ms, wall_ms, file_seq * 1000000000 + record_index AS pos
  FROM events WHERE type = 'SwimProbeAcked'
  UNION ALL
  SELECT run_id, node AS observer, swim_probe_timed_out.target AS target,
    swim_probe_timed_out.sequence AS seq, swim_probe_timed_out.kind AS kind, 1 AS timed_out,
    NULL AS rtt_ms, wall_ms, file_seq * 1000000000 + record_index AS pos
  FROM events WHERE type = 'SwimProbeTimedOut'
),
first_timeout AS (
  SELECT run_id, observer, target, seq, kind, MIN(pos) AS pos
  FROM answers WHERE timed_out = 1 GROUP BY run_id, observer, target, seq, kind
),
last_sent AS (
  SELECT run_id, observer, target, seq, kind, MAX(wall_ms) AS wall_ms
  FROM sent GROUP BY run_id, observer, target, seq, kind
),
samples AS (
  SELECT a.run_id, a.observer, a.target, COALESCE(a.rtt_ms, a.wall_ms - s.wall_ms) AS rtt
  FROM answers a
  LEFT JOIN first_timeout t ON t.run_id = a.run_id AND t.observer = a.observer
    AND t.target = a.target AND t.seq = a.seq AND t.kind = a.kind
  LEFT JOIN last_sent s ON s.run_id = a.run_id AND s.observer = a.observer
    AND s.target = a.target AND s.seq = a.seq AND s.kind = a.kind
  WHERE a.timed_out = 0 AND (t.pos IS NULL OR t.pos > a.pos)
)";

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

const RTT_BY_REGION: &str = "WITH {samples},
regions AS (
  SELECT s.run_id, o.host_country AS from_region, t.host_country AS to_region, s.rtt
  FROM samples s
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

const RELAY: &str = "WITH {relay_closes}
SELECT initiator, reason, COUNT(*) AS closes, COUNT(DISTINCT run_id) AS runs
FROM relay_closes
GROUP BY initiator, reason
ORDER BY closes DESC, initiator, reason";

const SUBPROCESSES: &str = "WITH {subprocess_rows}
SELECT bucket, COUNT(*) AS subprocesses, COUNT(DISTINCT run_id) AS runs
FROM subprocess_rows
GROUP BY bucket
ORDER BY bucket";

const WRITERS: &str = "SELECT contract_version, writer.kind AS writer_kind, writer.name AS writer_name,
  writer.version AS writer_version, COUNT(*) AS runs, MIN(date) AS first_seen, MAX(date) AS last_seen
FROM runs
GROUP BY contract_version, writer.kind, writer.name, writer.version
ORDER BY first_seen, contract_version, writer_kind, writer_name, writer_version";

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
    let sql = RELAY.replace("{relay_closes}", RELAY_CLOSES);
    for (b, i) in rows(ctx, "relay closes", &sql).await?.each() {
        r.relay_closes.push(RelayCloseRow {
            initiator: text(b, i, "initiator")?.unwrap_or_else(|| "unknown".into()),
            reason: text(b, i, "reason")?,
            closes: count(b, i, "closes")?,
            runs: count(b, i, "runs")?,
        });
    }
    let sql = RTT_BY_REGION.replace("{samples}", RTT_SAMPLES);
    for (b, i) in rows(ctx, "probe RTT by region pair", &sql).await?.each() {
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
    let sql = SUBPROCESSES.replace("{subprocess_rows}", SUBPROCESS_ROWS);
    for (b, i) in rows(ctx, "subprocess buckets", &sql).await?.each() {
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
