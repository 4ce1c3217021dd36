-- Per run, node and counter: how much each kernel network drop counter moved between the node's
-- first and last snapshot that has any (UDP no_ports, in_errors, rcvbuf_errors, sndbuf_errors;
-- rx/tx dropped and errors per interface), where it moved. The first snapshot is the earliest in
-- time (the first in file order among equal times), the last the latest (the last among equal
-- times). The summary's "Kernel network drops". The interfaces are read by position
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
counters AS (
  SELECT run_id, node, wall_ms, file_seq, 'udp.no_ports' AS counter, n.udp_kernel_stats.no_ports AS v FROM net
  UNION ALL
  SELECT run_id, node, wall_ms, file_seq, 'udp.in_errors' AS counter, n.udp_kernel_stats.in_errors AS v FROM net
  UNION ALL
  SELECT run_id, node, wall_ms, file_seq, 'udp.rcvbuf_errors' AS counter, n.udp_kernel_stats.rcvbuf_errors AS v FROM net
  UNION ALL
  SELECT run_id, node, wall_ms, file_seq, 'udp.sndbuf_errors' AS counter, n.udp_kernel_stats.sndbuf_errors AS v FROM net
  UNION ALL
  SELECT run_id, node, wall_ms, file_seq, iface.name || '.rx_dropped' AS counter, iface.counters.rx_dropped AS v FROM ifaces WHERE iface.counters IS NOT NULL
  UNION ALL
  SELECT run_id, node, wall_ms, file_seq, iface.name || '.tx_dropped' AS counter, iface.counters.tx_dropped AS v FROM ifaces WHERE iface.counters IS NOT NULL
  UNION ALL
  SELECT run_id, node, wall_ms, file_seq, iface.name || '.rx_errors' AS counter, iface.counters.rx_errors AS v FROM ifaces WHERE iface.counters IS NOT NULL
  UNION ALL
  SELECT run_id, node, wall_ms, file_seq, iface.name || '.tx_errors' AS counter, iface.counters.tx_errors AS v FROM ifaces WHERE iface.counters IS NOT NULL
),
present AS (
  SELECT * FROM counters WHERE v IS NOT NULL
),
ends AS (
  SELECT run_id, node, wall_ms, file_seq,
    ROW_NUMBER() OVER (PARTITION BY run_id, node ORDER BY wall_ms, file_seq) AS from_first,
    ROW_NUMBER() OVER (PARTITION BY run_id, node ORDER BY wall_ms DESC, file_seq DESC) AS from_last
  FROM (SELECT DISTINCT run_id, node, wall_ms, file_seq FROM present) AS s
),
first_values AS (
  SELECT p.run_id, p.node, p.counter, p.v FROM present p
  JOIN ends e ON e.run_id = p.run_id AND e.node = p.node AND e.file_seq = p.file_seq AND e.from_first = 1
),
last_values AS (
  SELECT p.run_id, p.node, p.counter, p.v FROM present p
  JOIN ends e ON e.run_id = p.run_id AND e.node = p.node AND e.file_seq = p.file_seq AND e.from_last = 1
)
SELECT l.run_id, l.node, l.counter, l.v - f.v AS delta
FROM last_values l
JOIN first_values f ON f.run_id = l.run_id AND f.node = l.node AND f.counter = l.counter
WHERE l.v <> f.v
