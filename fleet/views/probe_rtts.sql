-- Per run and observer -> target: SwimProbeSent joined with SwimProbeAcked / SwimProbeTimedOut on
-- (target, sequence, kind); probes, acked, timed out, pending (sent, never answered), the RTT's
-- median, p95 and p99 (nearest rank: the smallest RTT whose rank reaches ceil(p * n / 100)) and
-- the timeout budget the last answer carried. An acknowledgement after the probe timed out counts
-- once, as timed out. The RTT is the acknowledgement's own rtt_ms, else the difference of the two
-- events' wall_ms. The summary's "Probe RTT distribution" (its per-pair rows).
WITH sent AS (
  SELECT run_id, node AS observer, swim_probe_sent.target AS target,
    swim_probe_sent.sequence AS seq, swim_probe_sent.kind AS kind, wall_ms
  FROM events WHERE type = 'SwimProbeSent'
),
answers AS (
  SELECT run_id, node AS observer, swim_probe_acked.target AS target,
    swim_probe_acked.sequence AS seq, swim_probe_acked.kind AS kind, 0 AS timed_out,
    swim_probe_acked.rtt_ms AS rtt_ms,
    CAST(swim_probe_acked.timeout_budget_ms AS STRING) || ' ms' AS budget,
    wall_ms, file_seq * 1000000000 + record_index AS pos
  FROM events WHERE type = 'SwimProbeAcked'
  UNION ALL
  SELECT run_id, node AS observer, swim_probe_timed_out.target AS target,
    swim_probe_timed_out.sequence AS seq, swim_probe_timed_out.kind AS kind, 1 AS timed_out,
    NULL AS rtt_ms,
    CASE WHEN swim_probe_timed_out.timeout_budget_ms IS NULL
      THEN CAST(swim_probe_timed_out.budget_ticks AS STRING) || ' ticks'
      ELSE CAST(swim_probe_timed_out.timeout_budget_ms AS STRING) || ' ms' END AS budget,
    wall_ms, file_seq * 1000000000 + record_index AS pos
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
counted AS (
  SELECT a.run_id, a.observer, a.target, a.timed_out, a.budget, a.pos,
    CASE WHEN a.timed_out = 1 THEN NULL ELSE COALESCE(a.rtt_ms, a.wall_ms - s.wall_ms) END AS rtt
  FROM answers a
  LEFT JOIN first_timeout t ON t.run_id = a.run_id AND t.observer = a.observer
    AND t.target = a.target AND t.seq = a.seq AND t.kind = a.kind
  LEFT JOIN last_sent s ON s.run_id = a.run_id AND s.observer = a.observer
    AND s.target = a.target AND s.seq = a.seq AND s.kind = a.kind
  WHERE a.timed_out = 1 OR t.pos IS NULL OR t.pos > a.pos
),
answered AS (
  SELECT DISTINCT run_id, observer, target, seq, kind FROM answers
),
pending AS (
  SELECT s.run_id, s.observer, s.target, COUNT(*) AS pending
  FROM sent s
  LEFT JOIN answered a ON a.run_id = s.run_id AND a.observer = s.observer
    AND a.target = s.target AND a.seq = s.seq AND a.kind = s.kind
  WHERE a.run_id IS NULL
  GROUP BY s.run_id, s.observer, s.target
),
pairs AS (
  SELECT run_id, observer, target FROM counted
  UNION
  SELECT run_id, observer, target FROM pending
),
counts AS (
  SELECT run_id, observer, target, COUNT(*) AS answers,
    SUM(1 - timed_out) AS acked, SUM(timed_out) AS timed_out
  FROM counted GROUP BY run_id, observer, target
),
ranked AS (
  SELECT run_id, observer, target, rtt,
    ROW_NUMBER() OVER (PARTITION BY run_id, observer, target ORDER BY rtt) AS rn,
    COUNT(*) OVER (PARTITION BY run_id, observer, target) AS n
  FROM counted WHERE timed_out = 0 AND rtt IS NOT NULL
),
quantiles AS (
  SELECT run_id, observer, target,
    MIN(CASE WHEN rn >= CEIL(50 * n / 100.0) THEN rtt END) AS median_ms,
    MIN(CASE WHEN rn >= CEIL(95 * n / 100.0) THEN rtt END) AS p95_ms,
    MIN(CASE WHEN rn >= CEIL(99 * n / 100.0) THEN rtt END) AS p99_ms
  FROM ranked GROUP BY run_id, observer, target
),
budgets AS (
  SELECT run_id, observer, target, budget,
    ROW_NUMBER() OVER (PARTITION BY run_id, observer, target ORDER BY pos DESC) AS latest
  FROM counted WHERE budget IS NOT NULL
)
SELECT p.run_id, p.observer, COALESCE(l.label, SUBSTR(p.target, 1, 8)) AS target,
  COALESCE(c.answers, 0) + COALESCE(w.pending, 0) AS probes,
  COALESCE(c.acked, 0) AS acked,
  COALESCE(c.timed_out, 0) AS timed_out,
  COALESCE(w.pending, 0) AS pending,
  q.median_ms, q.p95_ms, q.p99_ms,
  b.budget
FROM pairs p
LEFT JOIN counts c ON c.run_id = p.run_id AND c.observer = p.observer AND c.target = p.target
LEFT JOIN pending w ON w.run_id = p.run_id AND w.observer = p.observer AND w.target = p.target
LEFT JOIN quantiles q ON q.run_id = p.run_id AND q.observer = p.observer AND q.target = p.target
LEFT JOIN budgets b ON b.run_id = p.run_id AND b.observer = p.observer AND b.target = p.target AND b.latest = 1
LEFT JOIN node_labels l ON l.run_id = p.run_id AND l.node_id = p.target
