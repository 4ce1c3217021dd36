-- Per run, node and counter: how much each kernel network drop counter moved between the node's
-- first and last snapshot that has any (UDP no_ports, in_errors, rcvbuf_errors, sndbuf_errors;
-- rx/tx dropped and errors per interface), where it moved. The first snapshot is the earliest in
-- time (the first in file order among equal times), the last the latest (the last among equal
-- times); a counter named twice in one of those snapshots (two interfaces of one name) is left
-- out. The summary's "Kernel network drops". The interfaces are read by position
-- (`list_positions` says how).
WITH net AS (
  SELECT run_id, node, wall_ms, file_seq,
    body.host.network.udp_kernel_stats.no_ports AS no_ports,
    body.host.network.udp_kernel_stats.in_errors AS in_errors,
    body.host.network.udp_kernel_stats.rcvbuf_errors AS rcvbuf_errors,
    body.host.network.udp_kernel_stats.sndbuf_errors AS sndbuf_errors,
    body.host.network.interfaces AS l,
    CAST(cardinality(body.host.network.interfaces) AS BIGINT) AS n
  FROM snapshots
),
-- A snapshot's readings: position 1 reads its UDP counters and its first interface, each further
-- position one more interface, so the snapshots are read once (and once for their longest list).
positions AS (
  SELECT p.i FROM list_positions p
  JOIN (SELECT MAX(n) AS m FROM net) AS x ON p.i = 1 OR p.i <= x.m
),
readings AS (
  SELECT s.run_id, s.node, s.wall_ms, s.file_seq, p.i,
    CASE WHEN p.i = 1 THEN s.no_ports END AS no_ports,
    CASE WHEN p.i = 1 THEN s.in_errors END AS in_errors,
    CASE WHEN p.i = 1 THEN s.rcvbuf_errors END AS rcvbuf_errors,
    CASE WHEN p.i = 1 THEN s.sndbuf_errors END AS sndbuf_errors,
    CASE WHEN p.i <= s.n THEN s.l[p.i - 1 + CASE WHEN s.l[0] IS NULL THEN 1 ELSE 0 END] END AS iface
  FROM positions p
  JOIN net s ON p.i = 1 OR p.i <= s.n
),
-- A reading counts when it gives a counter a value: a UDP counter, or an interface's counters.
marked AS (
  SELECT run_id, node, wall_ms, file_seq, i, no_ports, in_errors, rcvbuf_errors, sndbuf_errors,
    iface.name AS iface_name,
    CASE WHEN iface.counters IS NOT NULL THEN 1 ELSE 0 END AS has_counters,
    iface.counters.rx_dropped AS rx_dropped, iface.counters.tx_dropped AS tx_dropped,
    iface.counters.rx_errors AS rx_errors, iface.counters.tx_errors AS tx_errors,
    CASE
      WHEN no_ports IS NOT NULL OR in_errors IS NOT NULL OR rcvbuf_errors IS NOT NULL
        OR sndbuf_errors IS NOT NULL THEN 1
      WHEN iface.counters IS NOT NULL AND (iface.counters.rx_dropped IS NOT NULL
        OR iface.counters.tx_dropped IS NOT NULL OR iface.counters.rx_errors IS NOT NULL
        OR iface.counters.tx_errors IS NOT NULL) THEN 1
      ELSE 0
    END AS counts
  FROM readings
),
-- Each snapshot that has a counter ranked from the node's first and from its last; only the
-- readings of those two become counters. The ranks are taken within the run, node first, and
-- made the node's by its lowest: the same order within a node, in one partition per run.
ranked_in_run AS (
  SELECT m.*,
    DENSE_RANK() OVER (
      PARTITION BY run_id ORDER BY node, counts, wall_ms, file_seq
    ) AS first_rank,
    DENSE_RANK() OVER (
      PARTITION BY run_id ORDER BY node, counts, wall_ms DESC, file_seq DESC
    ) AS last_rank
  FROM marked m
),
ranked AS (
  SELECT r.*,
    first_rank - MIN(first_rank) OVER (PARTITION BY run_id, node, counts) + 1 AS from_first,
    last_rank - MIN(last_rank) OVER (PARTITION BY run_id, node, counts) + 1 AS from_last
  FROM ranked_in_run r
),
names AS (
  SELECT 'udp' AS part, 'no_ports' AS k UNION ALL SELECT 'udp', 'in_errors'
  UNION ALL SELECT 'udp', 'rcvbuf_errors' UNION ALL SELECT 'udp', 'sndbuf_errors'
  UNION ALL SELECT 'iface', 'rx_dropped' UNION ALL SELECT 'iface', 'tx_dropped'
  UNION ALL SELECT 'iface', 'rx_errors' UNION ALL SELECT 'iface', 'tx_errors'
),
counters AS (
  SELECT r.run_id, r.node, r.from_first, r.from_last,
    CASE WHEN c.part = 'udp' THEN 'udp.' || c.k ELSE r.iface_name || '.' || c.k END AS counter,
    CASE c.k
      WHEN 'no_ports' THEN r.no_ports
      WHEN 'in_errors' THEN r.in_errors
      WHEN 'rcvbuf_errors' THEN r.rcvbuf_errors
      WHEN 'sndbuf_errors' THEN r.sndbuf_errors
      WHEN 'rx_dropped' THEN r.rx_dropped
      WHEN 'tx_dropped' THEN r.tx_dropped
      WHEN 'rx_errors' THEN r.rx_errors
      ELSE r.tx_errors
    END AS v
  FROM ranked r CROSS JOIN names c
  WHERE r.counts = 1 AND (r.from_first = 1 OR r.from_last = 1)
    AND ((c.part = 'udp' AND r.i = 1) OR (c.part = 'iface' AND r.has_counters = 1))
),
ends AS (
  SELECT run_id, node, counter,
    MIN(CASE WHEN from_first = 1 THEN v END) AS first_v,
    COUNT(CASE WHEN from_first = 1 THEN v END) AS first_n,
    MIN(CASE WHEN from_last = 1 THEN v END) AS last_v,
    COUNT(CASE WHEN from_last = 1 THEN v END) AS last_n
  FROM counters
  WHERE v IS NOT NULL
  GROUP BY run_id, node, counter
)
SELECT run_id, node, counter, last_v - first_v AS delta
FROM ends
WHERE first_n = 1 AND last_n = 1 AND last_v <> first_v
