-- The claim: the one statement on the hot path of every worker, run as a transaction
-- of its own (db/claim.py composes it from these parts, in order). Its parts claim
-- the tasks, bump their stages' summaries, start the stages this is the first claim
-- of and their jobs, log every move and, when announcing, write the starts' lifecycle
-- messages. Statuses are bound from the moves that declare them (domain/moves.py).
--
-- `picked` reads the partial index ix_tasks_claim, which holds only claimable tasks,
-- in (stage_type, priority_rank, seq) order: an equality on one stage type keeps the
-- plan a plain ordered index scan (tests/integration/test_hot_plans.py holds it). A
-- paused stage type (stage_type_pauses, a handful of rows) hands out nothing: the check
-- names the bound types, not the row's, so it is planned once per statement (an
-- InitPlan) and the index scan stays as it is. So does a limited one's
-- (stage_type_limits): its tasks are claimed by the statement without that check
-- (`claim_statement(limited=True)`), one type at a time, under the limit's row lock;
-- `asked` names the limited ones among the types asked for.
-- A task past its `expires_at` is never handed out, before the maintenance loop aborts it.

-- name: picked_one_type
WITH picked AS (
    SELECT tasks.seq, tasks.status AS previous
    FROM tasks
    WHERE tasks.claimable
      AND tasks.status = ANY (:claim_sources::varchar[])
      AND tasks.stage_type = :types::varchar
      AND (tasks.expires_at IS NULL OR tasks.expires_at > :now::timestamptz)
  AND NOT EXISTS (SELECT 1 FROM stage_type_pauses p WHERE p.type = :types::varchar)
  AND NOT EXISTS (SELECT 1 FROM stage_type_limits l WHERE l.type = :types::varchar)
    ORDER BY tasks.priority_rank, tasks.seq
    LIMIT :n
    FOR UPDATE SKIP LOCKED
)
, asked AS (
    SELECT ARRAY(SELECT l.type FROM stage_type_limits l WHERE l.type = :types::varchar)
           AS limited_types
)

-- name: picked_types
-- Several stage types, bound as one array, so the text is the same whatever their count.
WITH picked AS (
    SELECT tasks.seq, tasks.status AS previous
    FROM tasks
    WHERE tasks.claimable
      AND tasks.status = ANY (:claim_sources::varchar[])
      AND (tasks.expires_at IS NULL OR tasks.expires_at > :now::timestamptz)
      AND tasks.stage_type = ANY (ARRAY(
      SELECT unnest(:types::varchar[]) EXCEPT SELECT p.type FROM stage_type_pauses p
      EXCEPT SELECT l.type FROM stage_type_limits l))
    ORDER BY tasks.priority_rank, tasks.seq
    LIMIT :n
    FOR UPDATE SKIP LOCKED
)
, asked AS (
    SELECT ARRAY(SELECT l.type FROM stage_type_limits l
                 WHERE l.type = ANY (:types::varchar[]) ORDER BY l.type) AS limited_types
)

-- name: claimed
, claimed AS (
    UPDATE tasks SET
        status = :claimed::varchar,
        claimable = false,
        update_time = :now::timestamptz,
        start_time = :now::timestamptz,
        lease_id = gen_random_uuid(),
        lease_expires_at = :expires::timestamptz,
        lease_seconds = :seconds::float8,
        worker = :worker::varchar,
        progress = NULL,
        progress_message = NULL
    FROM picked
    WHERE tasks.seq = picked.seq
    RETURNING tasks.*, picked.previous
), counted AS (
    SELECT stage_id,
           count(*) FILTER (WHERE previous = :pending::varchar) AS pending,
           count(*) FILTER (WHERE previous = :retried::varchar) AS retried,
           count(*) AS claimed
    FROM claimed
    GROUP BY stage_id
), locked AS (
    -- The stages, locked in id order, with their status as it was before the claim:
    -- RETURNING shows only the new row, and the lock keeps this one current.
    SELECT stages.id, stages.status, counted.pending, counted.retried, counted.claimed
    FROM stages JOIN counted ON counted.stage_id = stages.id
    ORDER BY stages.id
    FOR UPDATE OF stages
), bumped AS (
    UPDATE stages SET
        status = CASE WHEN locked.status = :unstarted::varchar
                      THEN :started::varchar ELSE stages.status END,
        update_time = :now::timestamptz,
        start_time = CASE WHEN locked.status = :unstarted::varchar
                          THEN coalesce(stages.start_time, :now::timestamptz)
                          ELSE stages.start_time END,
        pending = stages.pending - locked.pending,
        retried = stages.retried - locked.retried,
        in_progress = stages.in_progress + locked.claimed
    FROM locked
    WHERE stages.id = locked.id
    -- The whole row: a claim that answers its context answers the stage from here.
    RETURNING stages.*, locked.status = :unstarted::varchar AS started
), started_jobs AS (
    UPDATE jobs SET
        status = :started::varchar,
        update_time = :now::timestamptz,
        start_time = coalesce(jobs.start_time, :now::timestamptz)
    WHERE jobs.id IN (SELECT job_id FROM bumped WHERE started)
      AND jobs.status = :unstarted::varchar
    RETURNING jobs.*
), starts AS (
    SELECT 1 AS rank, job_id, 'STAGE'::varchar AS entity, id, id AS stage_id,
           type AS stage_type
    FROM bumped WHERE started
    UNION ALL
    SELECT 2, id, 'JOB', id, NULL, NULL FROM started_jobs
), logged AS (
    -- One INSERT, tasks then stages then jobs, as the session path logs them: the
    -- order in which separate data-modifying CTEs run is not defined.
    INSERT INTO events (job_id, entity, entity_id, stage_id, task_id, from_status,
                        to_status, attempt, lease_id, worker, reason, time, principal)
    SELECT job_id, entity, entity_id, stage_id, task_id, from_status, to_status,
           attempt, lease_id, worker, NULL, :now::timestamptz, :principal::varchar
    FROM (
        SELECT 0 AS rank, priority_rank AS k1, seq AS k2, job_id, 'TASK' AS entity,
               id AS entity_id, stage_id, id AS task_id, previous AS from_status,
               :claimed::varchar AS to_status, attempts AS attempt, lease_id, worker
        FROM claimed
        UNION ALL
        SELECT rank, 0, 0, job_id, entity, id, stage_id, NULL, :unstarted::varchar,
               :started::varchar, NULL, NULL, NULL
        FROM starts
    ) AS moves
    ORDER BY rank, k1, k2, entity_id
)

-- name: announced
-- The starts' lifecycle messages, key for key as domain/announcements.py makes them.
, announced AS (
    INSERT INTO outbox (routing_key, payload, created_at)
    SELECT lower(entity) || '.' || lower(:started::varchar),
           CASE WHEN stage_id IS NULL
                THEN json_build_object('entity', entity, 'jobId', job_id::text,
                                       'fromStatus', :unstarted::varchar,
                                       'toStatus', :started::varchar,
                                       'time', :time::text)
                ELSE json_build_object('entity', entity, 'jobId', job_id::text,
                                       'fromStatus', :unstarted::varchar,
                                       'toStatus', :started::varchar,
                                       'time', :time::text,
                                       'stageId', stage_id::text,
                                       'stageType', stage_type)
           END,
           :now::timestamptz
    FROM starts
    ORDER BY rank, id
)

-- name: answer
-- The claimed tasks, each with `previous` and whether this claim started its stage;
-- and on every row, the asked types that have a limit (`asked`, read in the claim's
-- snapshot), which the limited claim takes next when this one comes back short. A
-- claim that takes nothing answers one row of NULLs holding them: the caller needs no
-- second statement to learn them.
SELECT claimed.*, bumped.started AS stage_started, asked.limited_types
FROM asked
LEFT JOIN (claimed JOIN bumped ON bumped.id = claimed.stage_id) ON true
ORDER BY claimed.priority_rank, claimed.seq

-- name: answer_with_context
-- As `answer`, and on the first row of each stage that stage and its job as the claim
-- left them (a job it started from the UPDATE's RETURNING, any other as read): the
-- context a worker runs the tasks in, without a statement more. db/claim.py puts their
-- columns in place of the marker, named ctx_stage_<name> and ctx_job_<name>.
, job_now AS (
    SELECT * FROM started_jobs
    UNION ALL
    SELECT jobs.* FROM jobs
    WHERE jobs.id IN (SELECT job_id FROM bumped)
      AND jobs.id NOT IN (SELECT id FROM started_jobs)
), answered AS (
    SELECT claimed.*, bumped.started AS stage_started,
           row_number() OVER (PARTITION BY claimed.stage_id
                              ORDER BY claimed.priority_rank, claimed.seq) AS stage_nth
    FROM claimed JOIN bumped ON bumped.id = claimed.stage_id
)
SELECT answered.*, asked.limited_types, /* context columns */
FROM asked
LEFT JOIN answered ON true
LEFT JOIN bumped AS cs ON cs.id = answered.stage_id AND answered.stage_nth = 1
LEFT JOIN job_now AS cj ON cj.id = cs.job_id
ORDER BY answered.priority_rank, answered.seq

-- name: context
-- The stages of claimed tasks with their jobs, for a claim that asks for its context:
-- every column of each, the job's as job_<name>.
SELECT stages.*,
       jobs.id AS job_id, jobs.name AS job_name, jobs.data AS job_data,
       jobs.user_metadata AS job_user_metadata, jobs.owner AS job_owner,
       jobs.priority AS job_priority, jobs.status AS job_status,
       jobs.percentage AS job_percentage, jobs.traceparent AS job_traceparent,
       jobs.tracestate AS job_tracestate, jobs.creation_time AS job_creation_time,
       jobs.update_time AS job_update_time, jobs.start_time AS job_start_time,
       jobs.end_time AS job_end_time, jobs.reason AS job_reason,
       jobs.failed_task_id AS job_failed_task_id,
       jobs.failed_stage_id AS job_failed_stage_id, jobs.not_before AS job_not_before,
       jobs.deadline AS job_deadline, jobs.partial AS job_partial,
       jobs.unique_key AS job_unique_key, jobs.result AS job_result,
       jobs.expires_at AS job_expires_at, jobs.priority_number AS job_priority_number
FROM stages JOIN jobs ON jobs.id = stages.job_id
WHERE stages.id = ANY (:stage_ids::uuid[])
ORDER BY stages.id
