-- The positions 1 to 10,000, one row each: the views read the elements of a list column by
-- joining its rows with the positions up to the list's length, because the three engines share no
-- function that turns a list into rows (DataFusion and DuckDB spell it `UNNEST`, Spark `explode`).
-- An element is read with `CASE WHEN i <= n THEN list[i - 1 + CASE WHEN list[0] IS NULL THEN 1
-- ELSE 0 END] END`, n the list's length (guarded: Spark may evaluate it before the join's
-- condition):
-- DataFusion and DuckDB count from 1 and read `list[0]` as null, Spark counts from 0, so the case
-- turns position i into the engine's own index (a list's elements are structs, never null).
-- A view first keeps the positions up to its longest list, so that the join reads each list row
-- against that many positions, not 10,000. A list longer than 10,000 elements is read up to its
-- 10,000th. A view takes a list's length n once, beside the list, as `CAST(cardinality(list) AS
-- BIGINT)` (DataFusion's `cardinality` is slow on a list of structs, and its unsigned result is
-- compared with a position as a decimal), and names the positions first in the join (DataFusion
-- holds a join's left side in memory and streams the list rows past it).
WITH digits AS (
  SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
  UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9
)
SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 1 AS i
FROM digits a CROSS JOIN digits b CROSS JOIN digits c CROSS JOIN digits e
