-- Every SWIM transition: the observer (the node that wrote it), the peer, when, from which state
-- to which, and why, with the bundle's order (node, file_seq, record_index). The earliest
-- transition to Dead (the first in the bundle's order among equal times) is the summary's
-- "First peer to go Dead".
SELECT e.run_id, e.node AS observer,
  COALESCE(l.label, SUBSTR(e.swim_transition.peer, 1, 8)) AS peer,
  e.wall_ms,
  e.swim_transition."from" AS from_state,
  e.swim_transition."to" AS to_state,
  e.swim_transition.reason AS reason,
  e.file_seq, e.record_index
FROM events e
LEFT JOIN node_labels l ON l.run_id = e.run_id AND l.node_id = e.swim_transition.peer
WHERE e.type = 'SwimTransition'
