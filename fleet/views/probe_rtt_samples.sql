-- Every answer to a probe that counts, one row each: SwimProbeAcked and SwimProbeTimedOut paired
-- with SwimProbeSent by (observer, target, sequence, kind). An acknowledgement that comes after
-- its probe timed out is left out (the probe counts once, as timed out). `rtt` is the
-- acknowledgement's own rtt_ms, else the difference of the two events' wall_ms (the latest send
-- of that key), null for a time-out; `budget` is the timeout budget the answer carried, in words;
-- `pos` orders a node's records (file_seq, then record_index). The samples of `probe_rtts` and of
-- the fleet report's RTT by region.
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
)
SELECT a.run_id, a.observer, a.target, a.seq, a.kind, a.timed_out, a.budget, a.pos,
  CASE WHEN a.timed_out = 1 THEN NULL ELSE COALESCE(a.rtt_ms, a.wall_ms - s.wall_ms) END AS rtt
FROM answers a
LEFT JOIN first_timeout t ON t.run_id = a.run_id AND t.observer = a.observer
  AND t.target = a.target AND t.seq = a.seq AND t.kind = a.kind
LEFT JOIN last_sent s ON s.run_id = a.run_id AND s.observer = a.observer
  AND s.target = a.target AND s.seq = a.seq AND s.kind = a.kind
WHERE a.timed_out = 1 OR t.pos IS NULL OR t.pos > a.pos
