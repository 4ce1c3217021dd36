-- Per run and target peer, across all observers: DialStarted events, outcomes that are Success
-- and the others, in flight (started - succeeded - failed), and the last outcome (in the text
-- reachability writes: Success, Timeout, Refused, NoRoute, Error("...")) and its time; a tie in
-- time goes to the later record in the bundle's order. The summary's "Per-peer dials".
WITH d AS (
  SELECT run_id, dial_started.peer AS peer, 1 AS started, 0 AS succeeded, 0 AS failed
  FROM events WHERE type = 'DialStarted'
  UNION ALL
  SELECT run_id, dial_outcome.peer AS peer, 0 AS started,
    CASE WHEN dial_outcome.outcome = '"Success"' THEN 1 ELSE 0 END AS succeeded,
    CASE WHEN dial_outcome.outcome = '"Success"' THEN 0 ELSE 1 END AS failed
  FROM events WHERE type = 'DialOutcome'
),
totals AS (
  SELECT run_id, peer, SUM(started) AS started, SUM(succeeded) AS succeeded, SUM(failed) AS failed
  FROM d GROUP BY run_id, peer
),
outcomes AS (
  SELECT run_id, dial_outcome.peer AS peer, dial_outcome.outcome AS outcome, wall_ms,
    ROW_NUMBER() OVER (
      PARTITION BY run_id, dial_outcome.peer
      ORDER BY wall_ms DESC, node DESC, file_seq DESC, record_index DESC
    ) AS latest
  FROM events WHERE type = 'DialOutcome'
)
SELECT t.run_id,
  COALESCE(l.label, SUBSTR(t.peer, 1, 8)) AS peer,
  t.started, t.succeeded, t.failed,
  t.started - t.succeeded - t.failed AS in_flight,
  CASE
    WHEN o.outcome IS NULL THEN NULL
    WHEN o.outcome LIKE '{"Error":%' THEN 'Error(' || SUBSTR(o.outcome, 10, LENGTH(o.outcome) - 10) || ')'
    ELSE REPLACE(o.outcome, '"', '')
  END AS last_outcome,
  o.wall_ms AS last_outcome_ms
FROM totals t
LEFT JOIN outcomes o ON o.run_id = t.run_id AND o.peer = t.peer AND o.latest = 1
LEFT JOIN node_labels l ON l.run_id = t.run_id AND l.node_id = t.peer
