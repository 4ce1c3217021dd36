-- Per run and node: the bodies the collector quarantined at ingest and their bytes, one row per
-- node that has any (`node` is the node's folder under `@quarantine/`, the id it posted as). A
-- reason without its body counts as a body of no bytes, as `diagwire validate` reports it too.
SELECT run_id, node, COUNT(*) AS bodies, COALESCE(SUM(bytes), 0) AS bytes
FROM quarantine
GROUP BY run_id, node
