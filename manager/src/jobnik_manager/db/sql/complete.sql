-- Completions that leave their stage open, settled by one statement run as a
-- transaction of its own (db/complete.py). Most reports say COMPLETED and leave other
-- tasks of their stage unfinished: nothing cascades from them but the summary. A stage
-- the batch would finish, a stage not running and a task whose lease is not live are
-- left untouched (not returned); the caller settles those with the cascade.
-- Statuses are bound from the move that declares them (domain/moves.py).

-- name: complete
-- Binds ids, leases (NULL for a report without a lease) and results (JSON text or
-- NULL) as arrays of equal length without repeated ids.
WITH valid AS (
    SELECT tasks.seq, tasks.stage_id, v.result
    FROM tasks
    JOIN unnest(:ids::uuid[], :leases::uuid[], :results::text[]) AS v (id, lease_id, result)
      ON tasks.id = v.id
    -- Not `status = ...`: that matches the partial index of running tasks, which the
    -- planner then scans whole (every task in flight) to join the batch's ids, when
    -- looking each id up by its key is what a batch wants.
    WHERE coalesce(tasks.status, '') = :running::varchar
      AND (v.lease_id IS NULL
           OR (tasks.lease_id = v.lease_id AND tasks.lease_expires_at > :now::timestamptz))
    ORDER BY tasks.id
    FOR UPDATE OF tasks
), counted AS (
    SELECT stage_id, count(*) AS n FROM valid GROUP BY stage_id
), bumped AS (
    UPDATE stages SET
        in_progress = stages.in_progress - counted.n,
        completed = stages.completed + counted.n,
        -- domain/summary.py's percentage: floor(100 * completed / total), in integers;
        -- the total does not change.
        percentage = (100 * (stages.completed + counted.n))
                     / (stages.pending + stages.in_progress + stages.completed
                        + stages.failed + stages.created + stages.retried + stages.aborted),
        update_time = :now::timestamptz
    FROM counted
    WHERE stages.id = counted.stage_id
      AND stages.status = :stage_running::varchar
      AND stages.created + stages.pending + stages.in_progress + stages.retried
          - counted.n > 0
    RETURNING stages.id
), done AS (
    UPDATE tasks SET
        status = :completed::varchar,
        claimable = false,
        update_time = :now::timestamptz,
        end_time = :now::timestamptz,
        result = valid.result::json,
        reason = NULL,
        progress = 100
    FROM valid, bumped
    WHERE tasks.seq = valid.seq AND valid.stage_id = bumped.id
    RETURNING tasks.*
), logged AS (
    INSERT INTO events (job_id, entity, entity_id, stage_id, task_id, from_status,
                        to_status, attempt, lease_id, worker, reason, time, principal)
    SELECT job_id, 'TASK', id, stage_id, id, :running::varchar, :completed::varchar,
           attempts, lease_id, worker, NULL, :now::timestamptz, :principal::varchar
    FROM done
    ORDER BY id
)
SELECT * FROM done
