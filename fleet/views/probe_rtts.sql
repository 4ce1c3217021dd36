-- Per run and observer -> target: SwimProbeSent joined with SwimProbeAcked / SwimProbeTimedOut on
-- (target, sequence, kind); probes, acked, timed out, pending (sent, never answered), the RTT's
-- median, p95 and p99 (nearest rank: the smallest RTT whose rank reaches ceil(p * n / 100)) and
-- the timeout budget the last answer carried, over the answers `probe_rtt_samples` counts. The
-- summary's "Probe RTT distribution" (its per-pair rows).
WITH counted AS (
  SELECT run_id, observer, target, timed_out, rtt, budget, pos,
    CASE WHEN timed_out = 0 AND rtt IS NOT NULL THEN 1 ELSE 0 END AS has_rtt,
    CASE WHEN budget IS NULL THEN 0 ELSE 1 END AS has_budget
  FROM probe_rtt_samples
),
-- Each answer ranked among its pair's answers with an RTT (by RTT), and among those with a budget
-- (the latest first).
ranked AS (
  SELECT c.*,
    ROW_NUMBER() OVER (PARTITION BY run_id, observer, target, has_rtt ORDER BY rtt) AS rn,
    COUNT(*) OVER (PARTITION BY run_id, observer, target, has_rtt) AS n,
    ROW_NUMBER() OVER (
      PARTITION BY run_id, observer, target, has_budget ORDER BY pos DESC
    ) AS latest
  FROM counted c
),
answers AS (
  SELECT run_id, observer, target, COUNT(*) AS answers,
    SUM(1 - timed_out) AS acked, SUM(timed_out) AS timed_out,
    MIN(CASE WHEN has_rtt = 1 AND rn >= CEIL(50 * n / 100.0) THEN rtt END) AS median_ms,
    MIN(CASE WHEN has_rtt = 1 AND rn >= CEIL(95 * n / 100.0) THEN rtt END) AS p95_ms,
    MIN(CASE WHEN has_rtt = 1 AND rn >= CEIL(99 * n / 100.0) THEN rtt END) AS p99_ms,
    MAX(CASE WHEN has_budget = 1 AND latest = 1 THEN budget END) AS budget
  FROM ranked GROUP BY run_id, observer, target
),
-- A send is pending when no answer has its key (every key an answer has is a key of an answer
-- `probe_rtt_samples` counts), or when a part of its key is missing, which matches nothing.
-- An event's key from the struct of its type (null in every row of another type, so the first
-- that is not null).
probe_keys AS (
  SELECT run_id, node AS observer, type,
    COALESCE(swim_probe_sent.target, swim_probe_acked.target, swim_probe_timed_out.target)
      AS target,
    COALESCE(swim_probe_sent.sequence, swim_probe_acked.sequence, swim_probe_timed_out.sequence)
      AS seq,
    COALESCE(swim_probe_sent.kind, swim_probe_acked.kind, swim_probe_timed_out.kind) AS kind
  FROM events WHERE type IN ('SwimProbeSent', 'SwimProbeAcked', 'SwimProbeTimedOut')
),
keys AS (
  SELECT run_id, observer, target, seq, kind,
    COUNT(CASE WHEN type = 'SwimProbeSent' THEN 1 END) AS sent,
    COUNT(CASE WHEN type <> 'SwimProbeSent' THEN 1 END) AS answered
  FROM probe_keys GROUP BY run_id, observer, target, seq, kind
),
pending AS (
  SELECT run_id, observer, target, SUM(sent) AS pending
  FROM keys
  WHERE sent > 0 AND (answered = 0 OR run_id IS NULL OR observer IS NULL OR target IS NULL
    OR seq IS NULL OR kind IS NULL)
  GROUP BY run_id, observer, target
),
-- The samples and the events are each read once: a pair's answers and its pending sends are summed
-- per pair; a pair with a part missing gets no counts, as nothing joins on it.
pairs AS (
  SELECT run_id, observer, target, answers, acked, timed_out, 0 AS pending,
    median_ms, p95_ms, p99_ms, budget
  FROM answers
  UNION ALL
  SELECT run_id, observer, target, 0 AS answers, 0 AS acked, 0 AS timed_out, pending,
    NULL AS median_ms, NULL AS p95_ms, NULL AS p99_ms, NULL AS budget
  FROM pending
),
totals AS (
  SELECT run_id, observer, target,
    CASE WHEN run_id IS NULL OR observer IS NULL OR target IS NULL THEN 0 ELSE 1 END AS whole,
    SUM(answers) AS answers, SUM(acked) AS acked, SUM(timed_out) AS timed_out,
    SUM(pending) AS pending,
    MAX(median_ms) AS median_ms, MAX(p95_ms) AS p95_ms, MAX(p99_ms) AS p99_ms,
    MAX(budget) AS budget
  FROM pairs GROUP BY run_id, observer, target
)
SELECT t.run_id, t.observer, COALESCE(l.label, SUBSTR(t.target, 1, 8)) AS target,
  CASE WHEN t.whole = 1 THEN t.answers + t.pending ELSE 0 END AS probes,
  CASE WHEN t.whole = 1 THEN t.acked ELSE 0 END AS acked,
  CASE WHEN t.whole = 1 THEN t.timed_out ELSE 0 END AS timed_out,
  CASE WHEN t.whole = 1 THEN t.pending ELSE 0 END AS pending,
  CASE WHEN t.whole = 1 THEN t.median_ms END AS median_ms,
  CASE WHEN t.whole = 1 THEN t.p95_ms END AS p95_ms,
  CASE WHEN t.whole = 1 THEN t.p99_ms END AS p99_ms,
  CASE WHEN t.whole = 1 THEN t.budget END AS budget
FROM totals t
LEFT JOIN node_labels l ON l.run_id = t.run_id AND l.node_id = t.target
