-- The label of each node id of a run: its directory in the bundle, from its boot record and
-- its events (a peer the run has no directory for is named by the first 8 hex characters).
SELECT run_id, node_id, MIN(node) AS label
FROM (
  SELECT run_id, node_id, node FROM nodes
  UNION ALL
  SELECT DISTINCT run_id, node_id, node FROM events
) AS ids
WHERE node_id IS NOT NULL
GROUP BY run_id, node_id
