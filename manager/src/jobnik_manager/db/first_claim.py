"""PostgreSQL: a stage's first claim, and the context a claim may ask for.

The claim statement (`db.claim`) starts the stages it takes their first tasks from and
their jobs (PENDING -> IN_PROGRESS) itself, logs each start and, when announcing
(`domain.announcements`), writes its lifecycle message: one statement, one commit, so
no reader ever sees a running task in a PENDING stage or job. A claim that asks for its
context then reads the claimed tasks' stages and jobs in one more statement.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy import (
    ARRAY,
    CTE,
    ColumnElement,
    Select,
    Table,
    Text,
    Uuid,
    any_,
    bindparam,
    case,
    cast,
    func,
    insert,
    literal,
    null,
    select,
    update,
)

from ..domain.moves import JOB_STARTED, STAGE_STARTED
from .direct import DirectStatement
from .event_rows import named, principal
from .models import JOBS, OUTBOX, STAGES, Job, Stage
from .types import EnumText

# A first claim makes two declared moves, written by one SELECT of event rows: they must
# share their statuses' names.
_PENDING, _RUNNING = str(STAGE_STARTED.source), str(STAGE_STARTED.target)
assert (JOB_STARTED.source, JOB_STARTED.target) == (_PENDING, _RUNNING)


def locked_stages(counted: CTE) -> CTE:
    """The stages of `counted` (its `stage_id`, with its other columns), locked in id
    order, with `status` as it is before the claim changes it: RETURNING shows only the
    new row, and the lock keeps this one current until the claim commits."""
    return (
        select(STAGES.c.id, STAGES.c.status, *(c for c in counted.c if c.name != "stage_id"))
        .join(counted, counted.c.stage_id == STAGES.c.id)
        .order_by(STAGES.c.id)
        .with_for_update(of=STAGES)
        .cte("locked")
    )


def starting(locked: CTE) -> ColumnElement[bool]:
    """Whether the claim starts this stage (it is its first), labelled `started`."""
    return (locked.c.status == _PENDING).label("started")


def start_values(locked: CTE, now: ColumnElement[Any]) -> dict[str, Any]:
    """The stage's columns a first claim sets, the others left as they are."""
    first = locked.c.status == _PENDING
    return {
        "status": case((first, _RUNNING), else_=STAGES.c.status),
        "start_time": case(
            (first, func.coalesce(STAGES.c.start_time, now)), else_=STAGES.c.start_time
        ),
    }


def start_rows(
    bumped: CTE, now: ColumnElement[Any], *, announce: bool
) -> tuple[Select[Any], list[CTE]]:
    """The starts of the stages `bumped` (`id`, `job_id`, `type`, `started`) says the
    claim started, and of their jobs still PENDING: their event rows (EVENT_COLUMNS, then
    `rank`, `k1`, `k2` to order them after the tasks'), and the CTEs that must run with
    them (the jobs' UPDATE; when `announce`, the lifecycle messages' INSERT)."""
    b = bumped.c
    jobs = (
        update(JOBS)
        .where(JOBS.c.id.in_(select(b.job_id).where(b.started)), JOBS.c.status == _PENDING)
        .values(**JOB_STARTED.columns(now), start_time=func.coalesce(JOBS.c.start_time, now))
        .returning(JOBS.c.id)
        .cte("started_jobs")
    )
    moves = (
        select(
            literal(1).label("rank"),
            b.job_id.label("job_id"),
            literal("STAGE").label("entity"),
            b.id.label("id"),
            b.id.label("stage_id"),
            b.type.label("stage_type"),
        )
        .where(b.started)
        .union_all(select(literal(2), jobs.c.id, literal("JOB"), jobs.c.id, null(), null()))
        .cte("starts")
    )
    m = moves.c
    rows = select(
        *named(
            m.job_id,
            m.entity,
            m.id,
            m.stage_id,
            null(),
            literal(_PENDING),
            literal(_RUNNING),
            null(),
            null(),
            null(),
            null(),
            now,
            principal(),
        ),
        m.rank,
        literal(0),
        literal(0),
    )
    ctes = [jobs]
    if announce:
        announced = insert(OUTBOX).from_select(
            ("routing_key", "payload", "created_at"),
            select(
                func.lower(m.entity) + literal(f".{_RUNNING.lower()}"),
                _message(m),
                now,
            ).order_by(m.rank, m.id),
        )
        ctes.append(announced.cte("announced"))
    return rows, ctes


def _message(m: Any) -> Any:
    """The lifecycle message's body, key for key as `domain.announcements` makes it."""
    body = [
        *("entity", m.entity),
        *("jobId", cast(m.job_id, Text())),
        *("fromStatus", literal(_PENDING)),
        *("toStatus", literal(_RUNNING)),
        *("time", bindparam("time", type_=Text())),
    ]
    of_stage = [*("stageId", cast(m.stage_id, Text())), *("stageType", m.stage_type)]
    return case(
        (m.stage_id.is_(None), func.json_build_object(*body)),
        else_=func.json_build_object(*body, *of_stage),
    )


@cache
def context_statement() -> DirectStatement:
    """The stages `stage_ids` with their jobs: every column of each, the job's
    labelled `job_<name>`. Binds `stage_ids`."""
    return DirectStatement.of(
        select(*STAGES.c, *(c.label(f"job_{c.name}") for c in JOBS.c))
        .join(JOBS, JOBS.c.id == STAGES.c.job_id)
        .where(STAGES.c.id == any_(bindparam("stage_ids", type_=ARRAY(Uuid()))))
        .order_by(STAGES.c.id)
    )


def stages_and_jobs(rows: list[asyncpg.Record]) -> tuple[list[Stage], list[Job]]:
    """The rows of `context_statement` as (detached) model objects, each job once; their
    statuses and priority as the enums the columns read back through SQLAlchemy."""
    stages: list[Stage] = []
    jobs: dict[Any, Job] = {}
    for r in rows:
        stages.append(Stage(**_values(STAGES, r)))
        if r["job_id"] not in jobs:
            jobs[r["job_id"]] = Job(**_values(JOBS, r, prefix="job_"))
    return stages, list(jobs.values())


def _values(table: Table, r: asyncpg.Record, prefix: str = "") -> dict[str, Any]:
    values = {c.name: r[prefix + c.name] for c in table.c}
    for c in table.c:
        if isinstance(c.type, EnumText):
            values[c.name] = c.type.coerce(values[c.name])
    return values
