-- SQLite: completions that leave their stage open, as the statements of one
-- transaction run on the writer's thread (db/sqlite_complete.py), the counterpart of
-- complete.sql. Statuses are bound from the move that declares them (domain/moves.py),
-- and `{completed}` stands for the columns it writes (db/sqlite_values.py
-- `assignments`). A list is bound as JSON text.

-- name: candidates
-- The reported tasks, as stored; which of them may complete is decided by the caller.
SELECT seq, id, stage_id, status, lease_id, lease_expires_at
FROM tasks
WHERE id IN (SELECT value FROM json_each(:ids))

-- name: bumped
-- The summary and percentage of a stage that stays open: it is running, and its other
-- tasks are not done. domain/summary.py's percentage: floor(100 * completed / total),
-- in integers; the total does not change.
UPDATE stages SET
    in_progress = in_progress - :n,
    completed = completed + :n,
    percentage = (100 * (completed + :n))
                 / (pending + in_progress + completed + failed + created + retried + aborted),
    update_time = :now
WHERE id = :id
  AND status = :stage_running
  AND created + pending + in_progress + retried - :n > 0
RETURNING id

-- name: done
-- `settled` pairs each task's seq with its result (JSON text, or NULL), as a JSON array.
UPDATE tasks SET
    {completed},
    result = v.result,
    reason = NULL,
    progress = 100
FROM (SELECT json_extract(value, '$[0]') AS seq, json_extract(value, '$[1]') AS result
      FROM json_each(:settled)) AS v
WHERE tasks.seq = v.seq
RETURNING *
