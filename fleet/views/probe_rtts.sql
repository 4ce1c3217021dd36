-- Per run and observer -> target: SwimProbeSent joined with SwimProbeAcked / SwimProbeTimedOut on
-- (target, sequence, kind); probes, acked, timed out, pending (sent, never answered), the RTT's
-- median, p95 and p99 (nearest rank: the smallest RTT whose rank reaches ceil(p * n / 100)) and
-- the timeout budget the last answer carried, over the answers `probe_rtt_samples` counts. The
-- summary's "Probe RTT distribution" (its per-pair rows).
WITH sent AS (
  SELECT run_id, node AS observer, swim_probe_sent.target AS target,
    swim_probe_sent.sequence AS seq, swim_probe_sent.kind AS kind
  FROM events WHERE type = 'SwimProbeSent'
),
counted AS (
  SELECT * FROM probe_rtt_samples
),
answered AS (
  SELECT DISTINCT run_id, observer, target, seq, kind FROM counted
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
