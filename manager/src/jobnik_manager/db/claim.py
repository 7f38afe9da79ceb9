"""PostgreSQL: the claim, the one statement on the hot path of every worker
(db/sql/claim.sql; SQLite's is `db.sqlite_claim`).

One UPDATE takes up to `limit` claimable tasks and starts their leases, whatever the
limit. Its inner SELECT reads the partial index `ix_tasks_claim`, which holds only
claimable tasks, in (stage_type, priority_rank, seq) order, so its cost does not grow
with finished history or with paused, waiting or delayed work. PostgreSQL skips rows
another claimer has locked.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from ..domain.moves import CLAIMS, JOB_STARTED, STAGE_STARTED, TASK_CLAIMED, TASK_RECLAIMED
from .direct import DirectStatement
from .models import JOBS, STAGES, Job, Stage, Task
from .queries import queries, statement
from .records import detached, model_values

TASK_COLUMNS = tuple(Task.__table__.c)
# Belt and braces: only a task waiting to run is ever claimed, whatever its flag says.
_WAITING_STATUSES = [str(m.source) for m in CLAIMS]
_WAITING = Task.status.in_(_WAITING_STATUSES)


# The statuses the claim statement writes and reads, bound from the moves it makes.
_CLAIM_CONSTANTS = {
    "claim_sources": [str(m.source) for m in CLAIMS],
    "claimed": str(TASK_CLAIMED.target),
    "pending": str(TASK_CLAIMED.source),
    "retried": str(TASK_RECLAIMED.source),
    "unstarted": str(STAGE_STARTED.source),
    "started": str(STAGE_STARTED.target),
}
# A first claim starts its stage and its job by one CASE and one UPDATE, logged in one
# SELECT: the two moves must share their statuses' names.
assert (JOB_STARTED.source, JOB_STARTED.target) == (STAGE_STARTED.source, STAGE_STARTED.target)
assert TASK_RECLAIMED.target == TASK_CLAIMED.target


# The line of the one-type claim that skips a limited type; the limited claim drops it.
LIMITS_CHECK = (
    "  AND NOT EXISTS (SELECT 1 FROM stage_type_limits l WHERE l.type = :types::varchar)\n"
)


# The context's columns in the claim's answer (`answer_with_context`).
_STAGE_PREFIX, _JOB_PREFIX = "ctx_stage_", "ctx_job_"
_CONTEXT_MARKER = "/* context columns */"


def _context_columns() -> str:
    stage = [f'cs."{c.name}" AS {_STAGE_PREFIX}{c.name}' for c in STAGES.c]
    job = [f'cj."{c.name}" AS {_JOB_PREFIX}{c.name}' for c in JOBS.c]
    return ", ".join(stage + job)


@cache
def claim_statement(
    single_type: bool, announce: bool, limited: bool = False, with_context: bool = False
) -> DirectStatement:
    """PostgreSQL: the whole claim as one statement (db/sql/claim.sql), so it can run as
    a transaction of its own and hold the stage's summary row only while it runs.

    The rows are the claimed tasks with `previous` and `stage_started` (whether this
    claim started the task's stage), and the limited types asked for (`claim_answer`
    reads them). Binds `types` (one string when `single_type`, else a list), `n`, `now`,
    `expires`, `seconds`, `worker`, `principal`, and `time` (`now` as lifecycle messages
    spell it, when `announce`). `limited`: the one-type claim of a
    limited type, run within its limit (services.stage_type_limits). `with_context`:
    each stage's first row also holds the stage and its job (`claimed_context`).
    """
    q = queries("claim")
    picked = q["picked_one_type" if single_type else "picked_types"]
    if limited:
        assert single_type and LIMITS_CHECK in picked
        picked = picked.replace(LIMITS_CHECK, "")
    parts = [picked, q["claimed"]]
    if announce:
        parts.append(q["announced"])
    if with_context:
        parts.append(q["answer_with_context"].replace(_CONTEXT_MARKER, _context_columns()))
    else:
        parts.append(q["answer"])
    return statement("\n".join(parts), _CLAIM_CONSTANTS)


def claim_answer(records: list[asyncpg.Record]) -> tuple[list[dict[str, Any]], list[str]]:
    """The claim statement's rows as the claimed tasks' columns (each with `previous`
    and `stage_started`), and the limited types among those asked for: every answer
    holds them, a claim that took nothing in one row of NULLs."""
    if not records:
        return [], []
    limited: list[str] = list(records[0]["limited_types"])
    keys = list(records[0].keys())
    if "stage_nth" in keys:  # with its context: the task's columns come first
        own = keys[: keys.index("stage_nth")]
        # strict=False: the row goes on past them, to the context's columns.
        tasks = [dict(zip(own, r.values(), strict=False)) for r in records if r["id"] is not None]
        return tasks, limited
    rows = [dict(r.items()) for r in records if r["id"] is not None]
    for row in rows:
        del row["limited_types"]
    return rows, limited


def claimed_context(records: list[asyncpg.Record]) -> tuple[list[Stage], list[Job]]:
    """The stages and jobs a claim `with_context` answered, in stage id order, each job
    once (`detached`, as `stages_and_jobs` gives them)."""
    stages: list[Stage] = []
    jobs: dict[Any, Job] = {}
    for r in records:
        if r["ctx_stage_id"] is None:
            continue
        stages.append(detached(Stage, model_values(STAGES, r, prefix=_STAGE_PREFIX)))
        if r["ctx_job_id"] not in jobs:
            jobs[r["ctx_job_id"]] = detached(Job, model_values(JOBS, r, prefix=_JOB_PREFIX))
    stages.sort(key=lambda st: st.id)
    first: dict[Any, Job] = {}  # each job where its first stage is, as the read has them
    for st in stages:
        first.setdefault(st.job_id, jobs[st.job_id])
    return stages, list(first.values())


@cache
def context_statement() -> DirectStatement:
    """The stages `stage_ids` with their jobs: every column of each, the job's
    labelled `job_<name>` (`stages_and_jobs` reads them)."""
    return statement(queries("claim")["context"])


def stages_and_jobs(rows: list[asyncpg.Record]) -> tuple[list[Stage], list[Job]]:
    """PostgreSQL: the rows of `context_statement` as the models' attributes, each job
    once (`detached`: they are only answered), statuses and priority as the enums the
    columns read back through SQLAlchemy."""
    stages: list[Stage] = []
    jobs: dict[Any, Job] = {}
    for r in rows:
        stages.append(detached(Stage, model_values(STAGES, r)))
        if r["job_id"] not in jobs:
            jobs[r["job_id"]] = detached(Job, model_values(JOBS, r, prefix="job_"))
    return stages, list(jobs.values())
