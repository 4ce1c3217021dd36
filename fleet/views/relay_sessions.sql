-- Per run, relay and peer: the relay's latest RelaySessionClosed for that peer (the latest
-- closed_at_ms; a tie goes to the later record in the bundle's order), its initiator as a
-- canonical side (a 1.0.0 `remote` reads `peer`, an `idle_timeout` reads `relay`), reason,
-- duration and bytes; beside it the latest `last_failure_reason` any other node's connection
-- cache (in its snapshots) holds for that peer, and that node (a tie in time goes to the greater
-- node name, then to the later entry). The summary's "Relay sessions" per (relay, peer) rows. The
-- cache entries are read by position (`list_positions` says how).
WITH closed AS (
  SELECT run_id, node AS relay, file_seq, record_index,
    relay_session_closed.peer_node_id_hex AS peer_hex,
    relay_session_closed.close_initiator AS close_initiator,
    relay_session_closed.close_reason AS reason,
    relay_session_closed.duration_ms AS duration_ms,
    relay_session_closed.bytes_rx AS bytes_in,
    relay_session_closed.bytes_tx AS bytes_out,
    relay_session_closed.closed_at_ms AS closed_at_ms
  FROM events WHERE type = 'RelaySessionClosed'
),
closes AS (
  SELECT run_id, relay, peer_hex,
    CASE close_initiator
      WHEN 'remote' THEN 'peer'
      WHEN 'idle_timeout' THEN 'relay'
      ELSE close_initiator
    END AS initiator,
    reason, duration_ms, bytes_in, bytes_out, closed_at_ms,
    ROW_NUMBER() OVER (
      PARTITION BY run_id, relay, peer_hex
      ORDER BY closed_at_ms DESC, file_seq DESC, record_index DESC
    ) AS latest
  FROM closed
),
caches AS (
  SELECT run_id, node, file_seq, body.iroh.connection_cache AS l,
    CAST(cardinality(body.iroh.connection_cache) AS BIGINT) AS n
  FROM snapshots
),
positions AS (
  SELECT p.i FROM list_positions p
  JOIN (SELECT MAX(n) AS m FROM caches) AS x ON p.i <= x.m
),
entries AS (
  SELECT c.run_id, c.node, c.file_seq, p.i,
    CASE WHEN p.i <= c.n
      THEN c.l[p.i - 1 + CASE WHEN c.l[0] IS NULL THEN 1 ELSE 0 END] END AS entry
  FROM positions p
  JOIN caches c ON p.i <= c.n
),
-- An entry names its peer only when it holds a failure, so that only failures join below (a
-- filter here would be pushed into the join with the positions, the element read for every
-- position of every list there and again after it).
failures AS (
  SELECT run_id, node, file_seq, i,
    CASE WHEN entry.last_failure_at_ms IS NOT NULL AND entry.last_failure_reason IS NOT NULL
      THEN entry.peer_node_id_hex END AS peer_hex,
    entry.last_failure_at_ms AS at_ms, entry.last_failure_reason AS reason
  FROM entries
),
-- Each latest close beside every failure another node's cache holds for its peer, the latest
-- failure first (a close no cache holds a failure for stands alone).
paired AS (
  SELECT c.*, f.reason AS failure_reason, f.node AS failure_node,
    ROW_NUMBER() OVER (
      PARTITION BY c.run_id, c.relay, c.peer_hex
      ORDER BY f.at_ms DESC, f.node DESC, f.file_seq DESC, f.i DESC
    ) AS latest_failure
  FROM closes c
  LEFT JOIN failures f ON f.run_id = c.run_id AND f.peer_hex = c.peer_hex AND f.node <> c.relay
  WHERE c.latest = 1
)
SELECT c.run_id, c.relay,
  COALESCE(l.label, SUBSTR(c.peer_hex, 1, 8)) AS peer,
  c.initiator, c.reason, c.duration_ms, c.bytes_in, c.bytes_out, c.closed_at_ms,
  c.failure_reason AS node_last_failure_reason,
  c.failure_node AS node_last_failure_from
FROM paired c
LEFT JOIN node_labels l ON l.run_id = c.run_id AND l.node_id = c.peer_hex
WHERE c.latest_failure = 1
