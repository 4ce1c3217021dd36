-- Per run, node and subprocess (label, pid): its bucket and the evidence in words, as the
-- summary's "Subprocesses". A subprocess is known from SubprocessSpawned, SubprocessExited and
-- the subprocesses of the node's snapshots; writers before those events report their worker with
-- the Custom events `worker_starting` and `worker_exited`, which carry no pid: each start is a
-- worker of its own, numbered from 1 per node, and an exit belongs to the latest start before it
-- (the first worker when none). Buckets: `exited` (its last exit: code, else signal, and uptime;
-- a legacy exit's `status` text gives `exit status: N` or `signal: N`), `healthy` (spawned, no
-- exit, and the node posted `worker_ready`), `stuck` (otherwise; with the first and last RSS and
-- CPU its snapshots reported), and `never_spawned` for a node whose role is `stage` (its latest
-- boot record's, else the manifest's, else its first snapshot's) and that has no subprocess.
-- The manifest's node list is read by position (`list_positions` says how).
WITH worker_events AS (
  SELECT run_id, node, file_seq, record_index, custom.kind AS kind, custom.fields AS fields
  FROM events
  WHERE type = 'Custom' AND custom.kind IN ('worker_starting', 'worker_exited', 'worker_ready')
),
first_start AS (
  SELECT run_id, node, MIN(file_seq * 1000000000 + record_index) AS pos
  FROM worker_events WHERE kind = 'worker_starting' GROUP BY run_id, node
),
-- 1 when a node's first legacy exit comes before its first start: the exit counts as worker 1
-- and the starts after it from 2, as the summary's counter does.
offsets AS (
  SELECT x.run_id, x.node,
    MAX(CASE WHEN s.pos IS NULL OR x.file_seq * 1000000000 + x.record_index < s.pos THEN 1 ELSE 0 END) AS offset_n
  FROM worker_events x
  LEFT JOIN first_start s ON s.run_id = x.run_id AND s.node = x.node
  WHERE x.kind = 'worker_exited'
  GROUP BY x.run_id, x.node
),
legacy AS (
  SELECT x.run_id, x.node, x.file_seq, x.record_index, x.kind, x.fields,
    SUM(CASE WHEN y.kind = 'worker_starting' THEN 1 ELSE 0 END) + COALESCE(MAX(o.offset_n), 0) AS n
  FROM worker_events x
  JOIN worker_events y ON y.run_id = x.run_id AND y.node = x.node
    AND y.file_seq * 1000000000 + y.record_index <= x.file_seq * 1000000000 + x.record_index
  LEFT JOIN offsets o ON o.run_id = x.run_id AND o.node = x.node
  WHERE x.kind IN ('worker_starting', 'worker_exited')
  GROUP BY x.run_id, x.node, x.file_seq, x.record_index, x.kind, x.fields
),
legacy_exits AS (
  SELECT run_id, node, file_seq, record_index, n,
    CASE WHEN INSTR(fields, '"status":"') > 0
      THEN SUBSTR(fields, INSTR(fields, '"status":"') + 10) END AS status_rest,
    CASE WHEN INSTR(fields, '"uptime_ms":') > 0
      THEN SUBSTR(fields, INSTR(fields, '"uptime_ms":') + 12) END AS uptime_rest
  FROM legacy WHERE kind = 'worker_exited'
),
legacy_status AS (
  SELECT run_id, node, file_seq, record_index, n,
    SUBSTR(status_rest, 1, INSTR(status_rest, '"') - 1) AS status,
    SUBSTR(uptime_rest, 1, INSTR(REPLACE(uptime_rest, '}', ','), ',') - 1) AS uptime
  FROM legacy_exits
),
legacy_words AS (
  SELECT run_id, node, file_seq, record_index, n, uptime,
    CASE WHEN status LIKE 'exit status:%' THEN TRIM(SUBSTR(status, 13)) END AS code_text,
    CASE WHEN status LIKE 'signal:%' THEN TRIM(SUBSTR(status, 8)) END AS signal_text
  FROM legacy_status
),
exits AS (
  SELECT run_id, node, subprocess_exited.label AS label, subprocess_exited.pid AS pid, 0 AS legacy,
    subprocess_exited.exit_code AS code, subprocess_exited.exit_signal AS signal,
    subprocess_exited.uptime_ms AS uptime_ms, file_seq, record_index
  FROM events WHERE type = 'SubprocessExited'
  UNION ALL
  SELECT run_id, node, 'worker' AS label, n AS pid, 1 AS legacy,
    TRY_CAST(SUBSTR(code_text, 1, INSTR(code_text || ' ', ' ') - 1) AS BIGINT) AS code,
    TRY_CAST(SUBSTR(signal_text, 1, INSTR(signal_text || ' ', ' ') - 1) AS BIGINT) AS signal,
    TRY_CAST(TRIM(uptime) AS BIGINT) AS uptime_ms, file_seq, record_index
  FROM legacy_words
),
last_exit AS (
  SELECT run_id, node, label, pid, code, signal, uptime_ms,
    ROW_NUMBER() OVER (
      PARTITION BY run_id, node, label, pid ORDER BY file_seq DESC, record_index DESC
    ) AS latest
  FROM exits
),
spawns AS (
  SELECT run_id, node, subprocess_spawned.label AS label, subprocess_spawned.pid AS pid, 0 AS legacy
  FROM events WHERE type = 'SubprocessSpawned'
  UNION ALL
  SELECT run_id, node, 'worker' AS label, n AS pid, 1 AS legacy
  FROM legacy WHERE kind = 'worker_starting'
),
lists AS (
  SELECT run_id, node, file_seq, body.subprocess.subprocesses AS l
  FROM snapshots WHERE cardinality(body.subprocess.subprocesses) > 0
),
positions AS (
  SELECT p.i FROM list_positions p
  JOIN (SELECT MAX(cardinality(l)) AS m FROM lists) AS x ON p.i <= x.m
),
seen AS (
  SELECT s.run_id, s.node, s.file_seq, p.i,
    CASE WHEN p.i <= cardinality(s.l)
      THEN s.l[p.i - 1 + CASE WHEN s.l[0] IS NULL THEN 1 ELSE 0 END] END AS sub
  FROM lists s
  JOIN positions p ON p.i <= cardinality(s.l)
),
samples AS (
  SELECT run_id, node, sub.label AS label, sub.pid AS pid, sub.rss_bytes AS rss, sub.cpu_ms AS cpu,
    file_seq * 100000 + i AS pos
  FROM seen
),
rss AS (
  SELECT run_id, node, label, pid, rss,
    ROW_NUMBER() OVER (PARTITION BY run_id, node, label, pid ORDER BY pos) AS from_first,
    ROW_NUMBER() OVER (PARTITION BY run_id, node, label, pid ORDER BY pos DESC) AS from_last
  FROM samples WHERE rss IS NOT NULL
),
cpu AS (
  SELECT run_id, node, label, pid, cpu,
    ROW_NUMBER() OVER (PARTITION BY run_id, node, label, pid ORDER BY pos) AS from_first,
    ROW_NUMBER() OVER (PARTITION BY run_id, node, label, pid ORDER BY pos DESC) AS from_last
  FROM samples WHERE cpu IS NOT NULL
),
trends AS (
  SELECT k.run_id, k.node, k.label, k.pid,
    'RSS bytes ' || CAST(MAX(CASE WHEN r.from_first = 1 THEN r.rss END) AS STRING)
      || ' → ' || CAST(MAX(CASE WHEN r.from_last = 1 THEN r.rss END) AS STRING) AS rss_words,
    'CPU ms ' || CAST(MAX(CASE WHEN c.from_first = 1 THEN c.cpu END) AS STRING)
      || ' → ' || CAST(MAX(CASE WHEN c.from_last = 1 THEN c.cpu END) AS STRING) AS cpu_words
  FROM (SELECT DISTINCT run_id, node, label, pid FROM samples) AS k
  LEFT JOIN rss r ON r.run_id = k.run_id AND r.node = k.node AND r.label = k.label AND r.pid = k.pid
    AND (r.from_first = 1 OR r.from_last = 1)
  LEFT JOIN cpu c ON c.run_id = k.run_id AND c.node = k.node AND c.label = k.label AND c.pid = k.pid
    AND (c.from_first = 1 OR c.from_last = 1)
  GROUP BY k.run_id, k.node, k.label, k.pid
),
known AS (
  SELECT run_id, node, label, pid, MAX(legacy) AS legacy, MAX(spawned) AS spawned
  FROM (
    SELECT run_id, node, label, pid, legacy, 1 AS spawned FROM spawns
    UNION ALL
    SELECT run_id, node, label, pid, legacy, 0 AS spawned FROM exits
    UNION ALL
    SELECT run_id, node, label, pid, 0 AS legacy, 0 AS spawned FROM samples
  ) AS k
  GROUP BY run_id, node, label, pid
),
ready AS (
  SELECT DISTINCT run_id, node FROM worker_events WHERE kind = 'worker_ready'
),
classified AS (
  SELECT k.run_id, k.node,
    CASE WHEN k.legacy = 1
      THEN k.label || ' #' || CAST(k.pid AS STRING) || ' (legacy events, no pid)'
      ELSE k.label || ' (pid ' || CAST(k.pid AS STRING) || ')'
    END AS label,
    CASE
      WHEN x.run_id IS NOT NULL THEN 'exited'
      WHEN k.spawned = 1 AND r.run_id IS NOT NULL THEN 'healthy'
      ELSE 'stuck'
    END AS bucket,
    CASE
      WHEN x.run_id IS NOT NULL THEN 'exited with ' || CASE
          WHEN x.code IS NOT NULL THEN 'code ' || CAST(x.code AS STRING)
          WHEN x.signal IS NOT NULL THEN 'signal ' || CAST(x.signal AS STRING)
          ELSE 'no code or signal'
        END || ' after ' || COALESCE(CAST(x.uptime_ms AS STRING) || ' ms', 'an unknown time')
      WHEN k.spawned = 1 AND r.run_id IS NOT NULL THEN 'spawned and `worker_ready`'
      ELSE TRIM('spawned, no exit and no `worker_ready`; ' || COALESCE(t.rss_words, '')
        || ' ' || COALESCE(t.cpu_words, ''))
    END AS detail
  FROM known k
  LEFT JOIN last_exit x ON x.run_id = k.run_id AND x.node = k.node AND x.label = k.label
    AND x.pid = k.pid AND x.latest = 1
  LEFT JOIN ready r ON r.run_id = k.run_id AND r.node = k.node
  LEFT JOIN trends t ON t.run_id = k.run_id AND t.node = k.node AND t.label = k.label AND t.pid = k.pid
),
manifest_lists AS (
  SELECT run_id, nodes AS l FROM runs WHERE cardinality(nodes) > 0
),
manifest_positions AS (
  SELECT p.i FROM list_positions p
  JOIN (SELECT MAX(cardinality(l)) AS m FROM manifest_lists) AS x ON p.i <= x.m
),
manifest_nodes AS (
  SELECT m.run_id, CASE WHEN p.i <= cardinality(m.l)
      THEN m.l[p.i - 1 + CASE WHEN m.l[0] IS NULL THEN 1 ELSE 0 END] END AS listed
  FROM manifest_lists m
  JOIN manifest_positions p ON p.i <= cardinality(m.l)
),
first_snapshot AS (
  SELECT run_id, node, identity.role AS role,
    ROW_NUMBER() OVER (PARTITION BY run_id, node ORDER BY file_seq) AS from_first
  FROM snapshots
),
labels AS (
  SELECT run_id, node FROM nodes
  UNION SELECT run_id, node FROM events
  UNION SELECT run_id, node FROM snapshots
  UNION SELECT run_id, listed.label AS node FROM manifest_nodes
),
roles AS (
  SELECT a.run_id, a.node,
    COALESCE(MAX(b.role), MAX(m.listed.role), MAX(s.role)) AS role
  FROM labels a
  LEFT JOIN nodes b ON b.run_id = a.run_id AND b.node = a.node
  LEFT JOIN manifest_nodes m ON m.run_id = a.run_id AND m.listed.label = a.node
  LEFT JOIN first_snapshot s ON s.run_id = a.run_id AND s.node = a.node AND s.from_first = 1
  GROUP BY a.run_id, a.node
)
SELECT run_id, node, label, bucket, detail FROM classified
UNION ALL
SELECT o.run_id, o.node, '-' AS label, 'never_spawned' AS bucket,
  'no `SubprocessSpawned` or `worker_starting` event and no subprocess in any snapshot' AS detail
FROM roles o
WHERE o.role = 'stage'
  AND NOT EXISTS (SELECT 1 FROM known k WHERE k.run_id = o.run_id AND k.node = o.node)
