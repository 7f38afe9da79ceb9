"""What the database holds, read for a scrape: queues by stage type, jobs and stages by
status, the outbox. Every read goes through an index or a small table, so a scrape costs
the same with ten rows as with ten million: waiting and running tasks are summed from the
counters of the stages that may run (a partial index), the oldest waiting task is the
first entry of each priority in the claim index, and jobs and stages by status are kept
by triggers (`status_counts`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import String, case, column, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import Database, now_in
from ..db.models import (
    JOBS,
    STAGES,
    OutboxMessage,
    StageTypePause,
    StatusCount,
    Task,
    written,
    written_all,
)
from ..db.types import UtcDateTime
from ..domain.statuses import CLAIMING_JOB_STATUSES, StageStatus, TaskStatus

# Leases that run out within this long count as expiring.
EXPIRING_WITHIN = timedelta(seconds=10)
_MAY_RUN = (StageStatus.PENDING, StageStatus.IN_PROGRESS)


@dataclass
class State:
    ready: dict[str, int] = field(default_factory=dict)
    oldest_ready_age: dict[str, float] = field(default_factory=dict)
    in_flight: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)  # in stages that may run
    expiring: dict[str, int] = field(default_factory=dict)
    jobs: dict[str, int] = field(default_factory=dict)
    stages: dict[str, int] = field(default_factory=dict)
    paused: set[str] = field(default_factory=set)  # stage types handed out to no one
    outbox_backlog: int = 0
    outbox_oldest_age: float = 0.0


async def read_state(db: Database) -> State:
    return await db.transaction(_read)


async def _read(s: AsyncSession) -> State:
    now = now_in(s)
    state = State()
    job_may_run = JOBS.c.status.in_([st.value for st in CLAIMING_JOB_STATUSES])
    queues = await s.execute(
        select(
            STAGES.c.type,
            func.sum(case((job_may_run, STAGES.c.pending + STAGES.c.retried), else_=0)),
            func.sum(STAGES.c.in_progress),
            func.sum(STAGES.c.failed),
        )
        .join(JOBS, JOBS.c.id == STAGES.c.job_id)
        .where(STAGES.c.status.in_(written_all(_MAY_RUN)))
        .group_by(STAGES.c.type)
    )
    for stage_type, ready, running, failed in queues:
        state.ready[stage_type] = int(ready or 0)
        state.in_flight[stage_type] = int(running or 0)
        state.failed[stage_type] = int(failed or 0)
    waiting = sorted(t for t, n in state.ready.items() if n)
    if waiting:
        for stage_type, oldest in (await _oldest_ready(s, waiting)).items():
            state.oldest_ready_age[stage_type] = max((now - oldest).total_seconds(), 0.0)
    expiring = await s.execute(
        select(Task.stage_type, func.count())
        .where(
            Task.status == written(TaskStatus.IN_PROGRESS),
            Task.lease_expires_at < now + EXPIRING_WITHIN,
        )
        .group_by(Task.stage_type)
    )
    state.expiring = {t: int(n) for t, n in expiring}
    counts = await s.execute(
        select(StatusCount.entity, StatusCount.status, func.sum(StatusCount.n)).group_by(
            StatusCount.entity, StatusCount.status
        )
    )
    for entity, status, n in counts:
        (state.jobs if entity == "JOB" else state.stages)[status] = int(n)
    state.paused = set((await s.execute(select(StageTypePause.type))).scalars())
    backlog, oldest = (
        await s.execute(select(func.count(), func.min(OutboxMessage.created_at)))
    ).one()
    state.outbox_backlog = int(backlog)
    if oldest is not None:
        state.outbox_oldest_age = max((now - oldest).total_seconds(), 0.0)
    return state


# The first claim-index entry of each priority rank each type has waiting, the ranks
# found by skipping through the index (one probe per rank present, of up to 201): one
# statement for every type, as a scrape should cost the same for one type or a hundred.
_OLDEST = """
WITH RECURSIVE ranks(stage_type, r) AS (
    SELECT t.stage_type, (SELECT min(priority_rank) FROM tasks
                          WHERE {claimable} AND stage_type = t.stage_type)
    FROM ({types}) AS t
    UNION ALL
    SELECT ranks.stage_type, (SELECT min(priority_rank) FROM tasks
                              WHERE {claimable} AND stage_type = ranks.stage_type
                              AND priority_rank > ranks.r)
    FROM ranks WHERE ranks.r IS NOT NULL
)
SELECT stage_type, min((SELECT creation_time FROM tasks
                        WHERE {claimable} AND stage_type = ranks.stage_type
                        AND priority_rank = ranks.r ORDER BY seq LIMIT 1)) AS at
FROM ranks WHERE ranks.r IS NOT NULL GROUP BY stage_type
"""
# Each backend's way to a list of types, and its partial index's condition as the index
# states it (so that the index is used).
_OLDEST_ON = {
    "postgresql": _OLDEST.format(
        types="SELECT unnest(CAST(:types AS text[])) AS stage_type", claimable="claimable"
    ),
    "sqlite": _OLDEST.format(
        types="SELECT value AS stage_type FROM json_each(:types)", claimable="claimable = 1"
    ),
}


async def _oldest_ready(s: AsyncSession, stage_types: list[str]) -> dict[str, datetime]:
    """The creation time of the oldest claimable task of each type: the first entry of
    each priority rank in the claim index (stage type, priority rank, insertion order)."""
    backend = s.get_bind().dialect.name
    statement = text(_OLDEST_ON[backend]).columns(
        column("stage_type", String), column("at", UtcDateTime)
    )
    types = stage_types if backend == "postgresql" else json.dumps(stage_types)
    rows = await s.execute(statement, {"types": types})
    return {stage_type: at for stage_type, at in rows if at is not None}
