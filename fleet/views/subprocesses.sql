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
-- Each table is read once (the snapshots' subprocess lists once more, for their longest): the
-- events, snapshots, boot records and manifests become one stream of facts, and a node's facts
-- are weighed together.
WITH subprocess_events AS (
  SELECT run_id, node, file_seq, record_index, type,
    file_seq * 1000000000 + record_index AS pos,
    custom.kind AS kind, custom.fields AS fields,
    CASE type
      WHEN 'SubprocessSpawned' THEN subprocess_spawned.label
      WHEN 'SubprocessExited' THEN subprocess_exited.label
    END AS label,
    CASE type
      WHEN 'SubprocessSpawned' THEN subprocess_spawned.pid
      WHEN 'SubprocessExited' THEN subprocess_exited.pid
    END AS pid,
    subprocess_exited.exit_code AS code, subprocess_exited.exit_signal AS signal,
    subprocess_exited.uptime_ms AS uptime_ms
  FROM events
  WHERE type IN ('SubprocessSpawned', 'SubprocessExited')
    OR (type = 'Custom' AND custom.kind IN ('worker_starting', 'worker_exited', 'worker_ready'))
),
-- A legacy event's worker: the starts of its node up to it (a legacy event without a place in
-- its file counts for none and is left out), plus 1 when the node's first exit comes before its
-- first start (or it has none): that exit is worker 1 and the starts after it count from 2, as
-- the summary's counter does.
legacy_counts AS (
  SELECT e.*,
    SUM(CASE WHEN kind = 'worker_starting' AND pos IS NOT NULL THEN 1 ELSE 0 END)
      OVER (PARTITION BY run_id, node ORDER BY pos) AS starts,
    MIN(CASE WHEN kind = 'worker_starting' THEN pos END) OVER (PARTITION BY run_id, node) AS first_start,
    MIN(CASE WHEN kind = 'worker_exited' THEN pos END) OVER (PARTITION BY run_id, node) AS first_exit,
    MAX(CASE WHEN kind = 'worker_exited' THEN 1 ELSE 0 END) OVER (PARTITION BY run_id, node) AS any_exit
  FROM subprocess_events e
),
event_facts AS (
  SELECT run_id, node, file_seq, record_index, kind, fields, code, signal, uptime_ms,
    CASE WHEN type = 'Custom' THEN 1 ELSE 0 END AS legacy,
    CASE
      WHEN type = 'SubprocessSpawned' OR kind = 'worker_starting' THEN 'spawn'
      WHEN type = 'SubprocessExited' OR kind = 'worker_exited' THEN 'exit'
      ELSE 'ready'
    END AS what,
    CASE
      WHEN type <> 'Custom' THEN label
      WHEN kind <> 'worker_ready' THEN 'worker'
    END AS label,
    CASE
      WHEN type <> 'Custom' THEN pid
      WHEN kind <> 'worker_ready' THEN starts + CASE
          WHEN any_exit = 1 AND (first_start IS NULL OR first_exit < first_start) THEN 1 ELSE 0
        END
    END AS pid
  FROM legacy_counts
  WHERE type <> 'Custom' OR (run_id IS NOT NULL AND node IS NOT NULL
    AND (kind = 'worker_ready' OR pos IS NOT NULL))
),
legacy_exits AS (
  SELECT f.*,
    CASE WHEN kind = 'worker_exited' AND INSTR(fields, '"status":"') > 0
      THEN SUBSTR(fields, INSTR(fields, '"status":"') + 10) END AS status_rest,
    CASE WHEN kind = 'worker_exited' AND INSTR(fields, '"uptime_ms":') > 0
      THEN SUBSTR(fields, INSTR(fields, '"uptime_ms":') + 12) END AS uptime_rest
  FROM event_facts f
),
legacy_status AS (
  SELECT x.*,
    SUBSTR(status_rest, 1, INSTR(status_rest, '"') - 1) AS status,
    SUBSTR(uptime_rest, 1, INSTR(REPLACE(uptime_rest, '}', ','), ',') - 1) AS uptime
  FROM legacy_exits x
),
legacy_words AS (
  SELECT x.*,
    CASE WHEN status LIKE 'exit status:%' THEN TRIM(SUBSTR(status, 13)) END AS code_text,
    CASE WHEN status LIKE 'signal:%' THEN TRIM(SUBSTR(status, 8)) END AS signal_text
  FROM legacy_status x
),
-- Each exit ranked among its subprocess's exits, the last in the bundle's order first.
exits AS (
  SELECT run_id, node, label, pid, legacy, what,
    CASE WHEN legacy = 1
      THEN TRY_CAST(SUBSTR(code_text, 1, INSTR(code_text || ' ', ' ') - 1) AS BIGINT)
      ELSE code END AS code,
    CASE WHEN legacy = 1
      THEN TRY_CAST(SUBSTR(signal_text, 1, INSTR(signal_text || ' ', ' ') - 1) AS BIGINT)
      ELSE signal END AS signal,
    CASE WHEN legacy = 1 THEN TRY_CAST(TRIM(uptime) AS BIGINT) ELSE uptime_ms END AS uptime_ms,
    ROW_NUMBER() OVER (
      PARTITION BY run_id, node, label, pid, what ORDER BY file_seq DESC, record_index DESC
    ) AS latest
  FROM legacy_words
),
lists AS (
  SELECT run_id, node, file_seq, body.subprocess.subprocesses AS l,
    CAST(cardinality(body.subprocess.subprocesses) AS BIGINT) AS n
  FROM snapshots
),
positions AS (
  SELECT p.i FROM list_positions p
  JOIN (SELECT MAX(n) AS m FROM lists) AS x ON p.i <= x.m
),
seen AS (
  SELECT s.run_id, s.node, s.file_seq, p.i,
    CASE WHEN p.i <= s.n
      THEN s.l[p.i - 1 + CASE WHEN s.l[0] IS NULL THEN 1 ELSE 0 END] END AS sub
  FROM positions p
  JOIN lists s ON p.i <= s.n
),
samples AS (
  SELECT run_id, node, sub.label AS label, sub.pid AS pid, sub.rss_bytes AS rss, sub.cpu_ms AS cpu,
    file_seq * 100000 + i AS pos,
    CASE WHEN run_id IS NULL OR node IS NULL OR sub.label IS NULL OR sub.pid IS NULL
      THEN 0 ELSE 1 END AS whole
  FROM seen
),
-- Each sample ranked among its subprocess's samples that report RSS (and those that do not), and
-- likewise for CPU: rank 1 is the first, rank n the last.
sample_ranks AS (
  SELECT run_id, node, label, pid, rss, cpu, whole,
    ROW_NUMBER() OVER (
      PARTITION BY run_id, node, label, pid, CASE WHEN rss IS NULL THEN 0 ELSE 1 END ORDER BY pos
    ) AS rss_rank,
    COUNT(*) OVER (
      PARTITION BY run_id, node, label, pid, CASE WHEN rss IS NULL THEN 0 ELSE 1 END
    ) AS rss_n,
    ROW_NUMBER() OVER (
      PARTITION BY run_id, node, label, pid, CASE WHEN cpu IS NULL THEN 0 ELSE 1 END ORDER BY pos
    ) AS cpu_rank,
    COUNT(*) OVER (
      PARTITION BY run_id, node, label, pid, CASE WHEN cpu IS NULL THEN 0 ELSE 1 END
    ) AS cpu_n
  FROM samples
),
manifest_lists AS (
  SELECT run_id, nodes AS l, CAST(cardinality(nodes) AS BIGINT) AS n
  FROM runs WHERE cardinality(nodes) > 0
),
manifest_positions AS (
  SELECT p.i FROM list_positions p
  JOIN (SELECT MAX(n) AS m FROM manifest_lists) AS x ON p.i <= x.m
),
manifest_nodes AS (
  SELECT m.run_id, CASE WHEN p.i <= m.n
      THEN m.l[p.i - 1 + CASE WHEN m.l[0] IS NULL THEN 1 ELSE 0 END] END AS listed
  FROM manifest_positions p
  JOIN manifest_lists m ON p.i <= m.n
),
first_snapshot AS (
  SELECT run_id, node, role,
    ROW_NUMBER() OVER (PARTITION BY run_id, node ORDER BY file_seq) AS from_first
  FROM (SELECT run_id, node, file_seq, identity.role AS role FROM snapshots) AS s
),
-- One row per fact: a subprocess's event or sample (its last exit's words and its first and last
-- RSS and CPU only where run, node, label and pid are all known), a node's `worker_ready`, a
-- node's role from its boot record, the manifest or its first snapshot.
facts AS (
  SELECT run_id, node, CASE WHEN what = 'ready' THEN 'ready' ELSE 'subprocess' END AS fact,
    label, pid, legacy,
    CASE WHEN what = 'spawn' THEN 1 ELSE 0 END AS spawned,
    CASE WHEN what = 'exit' AND latest = 1 AND run_id IS NOT NULL AND node IS NOT NULL
      AND label IS NOT NULL AND pid IS NOT NULL THEN 1 ELSE 0 END AS last_exit,
    code, signal, uptime_ms,
    CAST(NULL AS BIGINT) AS rss_first, CAST(NULL AS BIGINT) AS rss_last,
    CAST(NULL AS BIGINT) AS cpu_first, CAST(NULL AS BIGINT) AS cpu_last,
    CAST(NULL AS STRING) AS boot_role, CAST(NULL AS STRING) AS manifest_role,
    CAST(NULL AS STRING) AS snapshot_role
  FROM exits
  UNION ALL
  SELECT run_id, node, 'subprocess' AS fact, label, pid, 0 AS legacy, 0 AS spawned,
    0 AS last_exit, NULL AS code, NULL AS signal, NULL AS uptime_ms,
    CASE WHEN whole = 1 AND rss IS NOT NULL AND rss_rank = 1 THEN rss END AS rss_first,
    CASE WHEN whole = 1 AND rss IS NOT NULL AND rss_rank = rss_n THEN rss END AS rss_last,
    CASE WHEN whole = 1 AND cpu IS NOT NULL AND cpu_rank = 1 THEN cpu END AS cpu_first,
    CASE WHEN whole = 1 AND cpu IS NOT NULL AND cpu_rank = cpu_n THEN cpu END AS cpu_last,
    NULL AS boot_role, NULL AS manifest_role, NULL AS snapshot_role
  FROM sample_ranks
  UNION ALL
  SELECT run_id, node, 'role' AS fact, NULL AS label, NULL AS pid, 0 AS legacy, 0 AS spawned,
    0 AS last_exit, NULL AS code, NULL AS signal, NULL AS uptime_ms,
    NULL AS rss_first, NULL AS rss_last, NULL AS cpu_first, NULL AS cpu_last,
    role AS boot_role, NULL AS manifest_role, NULL AS snapshot_role
  FROM nodes WHERE run_id IS NOT NULL AND node IS NOT NULL
  UNION ALL
  SELECT run_id, listed.label AS node, 'role' AS fact, NULL AS label, NULL AS pid, 0 AS legacy,
    0 AS spawned, 0 AS last_exit, NULL AS code, NULL AS signal, NULL AS uptime_ms,
    NULL AS rss_first, NULL AS rss_last, NULL AS cpu_first, NULL AS cpu_last,
    NULL AS boot_role, listed.role AS manifest_role, NULL AS snapshot_role
  FROM manifest_nodes WHERE run_id IS NOT NULL AND listed.label IS NOT NULL
  UNION ALL
  SELECT run_id, node, 'role' AS fact, NULL AS label, NULL AS pid, 0 AS legacy, 0 AS spawned,
    0 AS last_exit, NULL AS code, NULL AS signal, NULL AS uptime_ms,
    NULL AS rss_first, NULL AS rss_last, NULL AS cpu_first, NULL AS cpu_last,
    NULL AS boot_role, NULL AS manifest_role, role AS snapshot_role
  FROM first_snapshot WHERE from_first = 1 AND run_id IS NOT NULL AND node IS NOT NULL
),
kept AS (
  SELECT run_id, node, fact, label, pid,
    MAX(legacy) AS legacy, MAX(spawned) AS spawned, MAX(last_exit) AS exited,
    MAX(CASE WHEN last_exit = 1 THEN code END) AS code,
    MAX(CASE WHEN last_exit = 1 THEN signal END) AS signal,
    MAX(CASE WHEN last_exit = 1 THEN uptime_ms END) AS uptime_ms,
    'RSS bytes ' || CAST(MAX(rss_first) AS STRING) || ' → ' || CAST(MAX(rss_last) AS STRING)
      AS rss_words,
    'CPU ms ' || CAST(MAX(cpu_first) AS STRING) || ' → ' || CAST(MAX(cpu_last) AS STRING)
      AS cpu_words,
    COALESCE(MAX(boot_role), MAX(manifest_role), MAX(snapshot_role)) AS role
  FROM facts
  GROUP BY run_id, node, fact, label, pid
),
judged AS (
  SELECT k.*,
    MAX(CASE WHEN fact = 'ready' THEN 1 ELSE 0 END) OVER (PARTITION BY run_id, node) AS ready,
    MAX(CASE WHEN fact = 'subprocess' THEN 1 ELSE 0 END) OVER (PARTITION BY run_id, node)
      AS has_subprocess
  FROM kept k
)
SELECT run_id, node,
  CASE
    WHEN fact = 'role' THEN '-'
    WHEN legacy = 1 THEN label || ' #' || CAST(pid AS STRING) || ' (legacy events, no pid)'
    ELSE label || ' (pid ' || CAST(pid AS STRING) || ')'
  END AS label,
  CASE
    WHEN fact = 'role' THEN 'never_spawned'
    WHEN exited = 1 THEN 'exited'
    WHEN spawned = 1 AND ready = 1 THEN 'healthy'
    ELSE 'stuck'
  END AS bucket,
  CASE
    WHEN fact = 'role'
      THEN 'no `SubprocessSpawned` or `worker_starting` event and no subprocess in any snapshot'
    WHEN exited = 1 THEN 'exited with ' || CASE
        WHEN code IS NOT NULL THEN 'code ' || CAST(code AS STRING)
        WHEN signal IS NOT NULL THEN 'signal ' || CAST(signal AS STRING)
        ELSE 'no code or signal'
      END || ' after ' || COALESCE(CAST(uptime_ms AS STRING) || ' ms', 'an unknown time')
    WHEN spawned = 1 AND ready = 1 THEN 'spawned and `worker_ready`'
    ELSE TRIM('spawned, no exit and no `worker_ready`; ' || COALESCE(rss_words, '')
      || ' ' || COALESCE(cpu_words, ''))
  END AS detail
FROM judged
WHERE fact = 'subprocess' OR (fact = 'role' AND role = 'stage' AND has_subprocess = 0)
