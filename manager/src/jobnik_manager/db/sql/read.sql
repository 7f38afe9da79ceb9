-- Reads of one job, stage or task by its key: what a v1 worker reads around each task
-- (db/reads.py). Each is a primary key lookup, whatever the size of the stage and
-- whether or not the table has statistics yet; a stage's progress is in its counters.

-- name: task
SELECT * FROM tasks WHERE id = :id::uuid

-- name: stage
SELECT * FROM stages WHERE id = :id::uuid

-- name: job
SELECT * FROM jobs WHERE id = :id::uuid

-- name: stages_of_job
-- A job's stages by the job's key (the unique (job_id, stage_order) index), in order.
SELECT * FROM stages WHERE job_id = :id::uuid ORDER BY stage_order
