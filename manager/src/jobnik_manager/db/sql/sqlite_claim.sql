-- SQLite: the claim, as the statements of one transaction run on the writer's thread
-- (db/sqlite_claim.py). SQLite's RETURNING sees only the updated table, and its
-- data-modifying statements cannot be parts of one: the writer's lock, held from
-- BEGIN, keeps them together. Statuses are bound from the moves that declare them
-- (domain/moves.py), and `{...}` stands for the columns a move writes, made from its
-- declaration (db/sqlite_values.py `assignments`). A list is bound as JSON text.
--
-- `picked` reads the partial index ix_tasks_claim, which holds only claimable tasks,
-- in (stage_type, priority_rank, seq) order: an equality on one stage type keeps the
-- plan an ordered index scan, without a sort. A paused stage type (stage_type_pauses)
-- hands out nothing; the check names the bound types, not the row's, so it runs once.
-- A limited one's (stage_type_limits) is claimed without that check, one type at a
-- time, by `claim(limited=True)` within its limit. A task past its `expires_at` is never
-- handed out, before the maintenance loop aborts it.

-- name: picked_one_type
SELECT seq, status AS previous
FROM tasks
WHERE claimable = 1
  AND status IN (SELECT value FROM json_each(:claim_sources))
  AND stage_type = :type
  AND (expires_at IS NULL OR expires_at > :now)
  AND NOT EXISTS (SELECT 1 FROM stage_type_pauses p WHERE p.type = :type)
  AND NOT EXISTS (SELECT 1 FROM stage_type_limits l WHERE l.type = :type)
ORDER BY priority_rank, seq
LIMIT :n

-- name: picked_types
SELECT seq, status AS previous
FROM tasks
WHERE claimable = 1
  AND status IN (SELECT value FROM json_each(:claim_sources))
  AND (expires_at IS NULL OR expires_at > :now)
  AND stage_type IN (SELECT value FROM json_each(:types)
                     EXCEPT SELECT p.type FROM stage_type_pauses p
                     EXCEPT SELECT l.type FROM stage_type_limits l)
ORDER BY priority_rank, seq
LIMIT :n

-- name: claimed
-- SQLite keeps a UUID as 32 hex digits.
UPDATE tasks SET
    {claimed},
    lease_id = lower(hex(randomblob(16))),
    lease_expires_at = :expires,
    lease_seconds = :seconds,
    worker = :worker,
    progress = NULL,
    progress_message = NULL
WHERE seq IN (SELECT value FROM json_each(:seqs))
RETURNING *

-- name: bumped
-- A stage's summary after a claim of its tasks, with its status before it (a PENDING
-- stage starts now).
UPDATE stages SET
    pending = pending - :pending,
    retried = retried - :retried,
    in_progress = in_progress + :claimed,
    update_time = :now
WHERE id = :id
RETURNING job_id, status, type

-- name: stage_started
UPDATE stages SET {started}, start_time = coalesce(start_time, :now)
WHERE id = :id AND status = :unstarted

-- name: job_started
UPDATE jobs SET {started}, start_time = coalesce(start_time, :now)
WHERE id = :id AND status = :unstarted
RETURNING id

-- name: stages
SELECT * FROM stages WHERE id IN (SELECT value FROM json_each(:ids)) ORDER BY id

-- name: jobs
SELECT * FROM jobs WHERE id IN (SELECT value FROM json_each(:ids)) ORDER BY id
