"""PostgreSQL: what follows a claim, each a single statement run on its own.

A stage's first claim starts the stage and its job (PENDING -> IN_PROGRESS), with their
events and, when announcing (`domain.announcements`), their lifecycle messages; a claim
that asks for its context reads the claimed tasks' stages and jobs. Through the ORM these
were five round trips and as many statements' worth of Python between the claim and its
answer; here each is one.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy import (
    ARRAY,
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
    union_all,
    update,
)

from ..domain.statuses import JobStatus, StageStatus
from .direct import DirectStatement
from .event_rows import EVENT_COLUMNS, principal
from .models import EVENTS, JOBS, OUTBOX, STAGES, Job, Stage
from .types import EnumText, UtcDateTime

_PENDING, _RUNNING = StageStatus.PENDING.value, StageStatus.IN_PROGRESS.value
assert JobStatus.PENDING.value == _PENDING and JobStatus.IN_PROGRESS.value == _RUNNING


@cache
def start_statement(announce: bool) -> DirectStatement:
    """Start the stages `stage_ids` and jobs `job_ids` still PENDING (those already
    started are left alone); log each start, stages first, and write its lifecycle
    message into the outbox when `announce`. Binds `stage_ids`, `job_ids`, `now`,
    `principal` and `time` (`now` as the lifecycle messages spell it). Answers one row
    per start: `entity`, `id`."""
    now = bindparam("now", type_=UtcDateTime())
    ids = ARRAY(Uuid())
    stages = (
        update(STAGES)
        .where(STAGES.c.id == any_(bindparam("stage_ids", type_=ids)))
        .where(STAGES.c.status == _PENDING)
        .values(
            status=_RUNNING, update_time=now, start_time=func.coalesce(STAGES.c.start_time, now)
        )
        .returning(STAGES.c.id, STAGES.c.job_id, STAGES.c.type)
        .cte("started_stages")
    )
    jobs = (
        update(JOBS)
        .where(JOBS.c.id == any_(bindparam("job_ids", type_=ids)))
        .where(JOBS.c.status == _PENDING)
        .values(status=_RUNNING, update_time=now, start_time=func.coalesce(JOBS.c.start_time, now))
        .returning(JOBS.c.id)
        .cte("started_jobs")
    )
    st, jb = stages.c, jobs.c
    moves = union_all(
        select(
            literal(0).label("rank"),
            st.job_id.label("job_id"),
            literal("STAGE").label("entity"),
            st.id.label("id"),
            st.id.label("stage_id"),
            st.type.label("stage_type"),
        ),
        select(literal(1), jb.id, literal("JOB"), jb.id, null(), null()),
    ).cte("moves")
    m = moves.c
    logged = insert(EVENTS).from_select(
        EVENT_COLUMNS,
        select(
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
        ).order_by(m.rank, m.id),
    )
    answer = select(m.entity, m.id).add_cte(logged.cte("logged"))
    if announce:
        announced = insert(OUTBOX).from_select(
            ("routing_key", "payload", "created_at"),
            select(
                func.lower(m.entity) + literal(f".{_RUNNING.lower()}"),
                _message(m),
                now,
            ).order_by(m.rank, m.id),
        )
        answer = answer.add_cte(announced.cte("announced"))
    return DirectStatement.of(answer)


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
