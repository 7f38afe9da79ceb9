-- Reads of jobs, stages and tasks by their keys: what a v1 worker reads around each task
-- (db/reads.py; the reads of many workers at once go as one, services/batching.py).
-- Each is a primary key lookup, whatever the size of the stage and whether or not the
-- table has statistics yet; a stage's progress is in its counters.

-- name: task
SELECT * FROM tasks WHERE id = :id::uuid

-- name: stages
SELECT * FROM stages WHERE id = ANY(:ids::uuid[])

-- name: jobs
-- Each job, once per stage, with what its progress needs of each stage (its status, its
-- summary counters and running progress, as stage_<column>); one row with NULLs there
-- for a job without stages.
SELECT jobs.*,
       stages.status AS stage_status, stages.running_progress AS stage_running_progress,
       stages.pending AS stage_pending, stages.in_progress AS stage_in_progress,
       stages.completed AS stage_completed, stages.failed AS stage_failed,
       stages.created AS stage_created, stages.retried AS stage_retried,
       stages.aborted AS stage_aborted
FROM jobs LEFT JOIN stages ON stages.job_id = jobs.id
WHERE jobs.id = ANY(:ids::uuid[])
