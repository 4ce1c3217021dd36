-- Per run, node and counter: how much each kernel network drop counter moved between the node's
-- first and last snapshot that has any (UDP no_ports, in_errors, rcvbuf_errors, sndbuf_errors;
-- rx/tx dropped and errors per interface), where it moved. The first snapshot is the earliest in
-- time (the first in file order among equal times), the last the latest (the last among equal
-- times); a counter named twice in one of those snapshots (two interfaces of one name) is left
-- out. The summary's "Kernel network drops". The interfaces are read by position
-- (`list_positions` says how).
WITH net AS (
  SELECT run_id, node, wall_ms, file_seq, body.host.network AS n
  FROM snapshots WHERE body.host.network IS NOT NULL
),
lists AS (
  SELECT run_id, node, wall_ms, file_seq, n.interfaces AS l
  FROM net WHERE cardinality(n.interfaces) > 0
),
positions AS (
  SELECT p.i FROM list_positions p
  JOIN (SELECT MAX(cardinality(l)) AS m FROM lists) AS x ON p.i <= x.m
),
ifaces AS (
  SELECT s.run_id, s.node, s.wall_ms, s.file_seq,
    CASE WHEN p.i <= cardinality(s.l)
      THEN s.l[p.i - 1 + CASE WHEN s.l[0] IS NULL THEN 1 ELSE 0 END] END AS iface
  FROM lists s
  JOIN positions p ON p.i <= cardinality(s.l)
),
udp_names AS (
  SELECT 'no_ports' AS k UNION ALL SELECT 'in_errors' UNION ALL SELECT 'rcvbuf_errors'
  UNION ALL SELECT 'sndbuf_errors'
),
iface_names AS (
  SELECT 'rx_dropped' AS k UNION ALL SELECT 'tx_dropped' UNION ALL SELECT 'rx_errors'
  UNION ALL SELECT 'tx_errors'
),
counters AS (
  SELECT t.run_id, t.node, t.wall_ms, t.file_seq, 'udp.' || u.k AS counter,
    CASE u.k
      WHEN 'no_ports' THEN t.n.udp_kernel_stats.no_ports
      WHEN 'in_errors' THEN t.n.udp_kernel_stats.in_errors
      WHEN 'rcvbuf_errors' THEN t.n.udp_kernel_stats.rcvbuf_errors
      ELSE t.n.udp_kernel_stats.sndbuf_errors
    END AS v
  FROM net t CROSS JOIN udp_names u
  UNION ALL
  SELECT f.run_id, f.node, f.wall_ms, f.file_seq, f.iface.name || '.' || c.k AS counter,
    CASE c.k
      WHEN 'rx_dropped' THEN f.iface.counters.rx_dropped
      WHEN 'tx_dropped' THEN f.iface.counters.tx_dropped
      WHEN 'rx_errors' THEN f.iface.counters.rx_errors
      ELSE f.iface.counters.tx_errors
    END AS v
  FROM ifaces f CROSS JOIN iface_names c
  WHERE f.iface.counters IS NOT NULL
),
-- Each snapshot with a counter ranked from the node's first and from its last.
ranked AS (
  SELECT run_id, node, counter, v,
    DENSE_RANK() OVER (PARTITION BY run_id, node ORDER BY wall_ms, file_seq) AS from_first,
    DENSE_RANK() OVER (PARTITION BY run_id, node ORDER BY wall_ms DESC, file_seq DESC) AS from_last
  FROM counters WHERE v IS NOT NULL
),
ends AS (
  SELECT run_id, node, counter,
    MIN(CASE WHEN from_first = 1 THEN v END) AS first_v,
    COUNT(CASE WHEN from_first = 1 THEN v END) AS first_n,
    MIN(CASE WHEN from_last = 1 THEN v END) AS last_v,
    COUNT(CASE WHEN from_last = 1 THEN v END) AS last_n
  FROM ranked
  GROUP BY run_id, node, counter
)
SELECT run_id, node, counter, last_v - first_v AS delta
FROM ends
WHERE first_n = 1 AND last_n = 1 AND last_v <> first_v
