"""The event log: one row per status change, written in the transaction that makes it."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from sqlalchemy import ColumnElement, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.bulk import FEW_ROWS, insert_many
from ..db.deferred import defer, write_deferred
from ..db.event_rows import EVENT_COLUMNS
from ..db.models import EVENTS, Event, Job, Stage, Task
from ..domain import announcements
from ..domain.auth import acting
from ..domain.statuses import JobStatus, StageStatus, TaskStatus
from .loading import load_job
from .pages import PageRequest, PageResult, paginate


class Entity(StrEnum):
    JOB = "JOB"
    STAGE = "STAGE"
    TASK = "TASK"


async def job_moved(
    s: AsyncSession, job: Job, previous: JobStatus | None, now: datetime, reason: str | None = None
) -> None:
    """Log the job's move to its current status, and stamp its start and end times."""
    _stamp(job, now)
    await insert_rows(
        s,
        [event_row(Entity.JOB, job.id, job.id, previous, job.status, now, reason=reason)],
    )


async def stage_moved(
    s: AsyncSession, stage: Stage, previous: StageStatus | None, now: datetime
) -> None:
    """Log the stage's move to its current status, and stamp its start and end times."""
    _stamp(stage, now)
    await insert_rows(
        s,
        [
            event_row(
                Entity.STAGE,
                stage.id,
                stage.job_id,
                previous,
                stage.status,
                now,
                stage_id=stage.id,
                stage_type=stage.type,
            )
        ],
    )


def _stamp(row: Job | Stage, now: datetime) -> None:
    """A job or stage starts at its first IN_PROGRESS and ends at a final status (a job
    taken out of one, by a retry, has no end again)."""
    if row.status == "IN_PROGRESS" and row.start_time is None:
        row.start_time = now
    row.end_time = (row.end_time or now) if row.status.is_final else None


async def tasks_created(
    s: AsyncSession,
    job_id: uuid.UUID,
    stage_id: uuid.UUID,
    task_ids: Sequence[uuid.UUID],
    now: datetime,
) -> None:
    """Log the creation of new tasks of one stage: PENDING, no attempt yet, no lease.

    A task event announces no lifecycle message. A few rows join the events written at
    commit; many are streamed into one bulk insert (COPY on PostgreSQL) after them, so
    the log keeps its order: a create may carry tens of thousands of tasks."""
    principal = acting_name()
    rows = (
        {
            "job_id": job_id,
            "entity": Entity.TASK,
            "entity_id": task_id,
            "stage_id": stage_id,
            "task_id": task_id,
            "from_status": None,
            "to_status": TaskStatus.PENDING,
            "attempt": 0,
            "lease_id": None,
            "worker": None,
            "reason": None,
            "time": now,
            "principal": principal,
        }
        for task_id in task_ids
    )
    if len(task_ids) <= FEW_ROWS:
        defer(s, EVENTS, (_complete(row) for row in rows))
        return
    await write_deferred(s)
    await insert_many(s, Event, rows)


@dataclass(frozen=True, slots=True)
class MovedTask:
    id: uuid.UUID
    stage_id: uuid.UUID


async def move_tasks(
    s: AsyncSession,
    where: Iterable[ColumnElement[bool]],
    sources: Iterable[TaskStatus],
    target: TaskStatus,
    now: datetime,
    reason: str | None = None,
    **values: Any,
) -> list[MovedTask]:
    """Move every task matching `where` from any of `sources` to `target` in bulk, and
    log each move. One UPDATE per source status, so each event knows where it came from
    without reading the rows first."""
    conditions = list(where)
    if target.is_final:
        # A final task leaves the claim index in the same statement that settles it, so
        # a task made claimable meanwhile (a retry racing an abort) cannot stay in it.
        values["claimable"] = False
        if reason is not None:
            values["reason"] = reason  # the task says why it ended, as its event does
    moved: list[MovedTask] = []
    rows: list[dict[str, Any]] = []
    for source in sources:
        result = await s.execute(
            update(Task)
            .where(*conditions, Task.status == source)
            .values(status=target, update_time=now, **values)
            .returning(
                Task.id, Task.stage_id, Task.job_id, Task.attempts, Task.lease_id, Task.worker
            )
            .execution_options(synchronize_session=False)
        )
        for r in result:
            moved.append(MovedTask(r.id, r.stage_id))
            rows.append(task_row(r, source, target, now, reason))
    await insert_rows(s, rows)
    return moved


async def move_stages(
    s: AsyncSession,
    job_id: uuid.UUID,
    sources: Iterable[StageStatus],
    target: StageStatus,
    now: datetime,
    reason: str | None = None,
) -> None:
    """Move the job's stages in any of `sources` to `target` in bulk, logging each."""
    ended = {"end_time": now, "reason": reason} if target.is_final else {}
    rows: list[dict[str, Any]] = []
    for source in sources:
        result = await s.execute(
            update(Stage)
            .where(Stage.job_id == job_id, Stage.status == source)
            .values(status=target, update_time=now, **ended)
            .returning(Stage.id, Stage.type)
            .execution_options(synchronize_session=False)
        )
        rows.extend(
            event_row(
                Entity.STAGE, r.id, job_id, source, target, now, stage_id=r.id, stage_type=r.type
            )
            for r in result
        )
    await insert_rows(s, rows)


async def events_of_job(s: AsyncSession, job_id: uuid.UUID, page: PageRequest) -> PageResult[Event]:
    await load_job(s, job_id)
    return await paginate(s, select(Event).where(Event.job_id == job_id).order_by(Event.seq), page)


class TaskLike(Protocol):
    """What an event row needs of a task: an ORM object or a row of the tasks table."""

    @property
    def id(self) -> uuid.UUID: ...
    @property
    def job_id(self) -> uuid.UUID: ...
    @property
    def stage_id(self) -> uuid.UUID: ...
    @property
    def attempts(self) -> int: ...
    @property
    def lease_id(self) -> uuid.UUID | None: ...
    @property
    def worker(self) -> str | None: ...


def task_row(
    task: TaskLike,
    previous: TaskStatus | None,
    target: TaskStatus | None,
    now: datetime,
    reason: str | None,
) -> dict[str, Any]:
    """A task's event: a move from `previous` to `target`, or (neither) an entry added."""
    return event_row(
        Entity.TASK,
        task.id,
        task.job_id,
        previous,
        target,
        now,
        stage_id=task.stage_id,
        task_id=task.id,
        attempt=task.attempts,
        lease_id=task.lease_id,
        worker=task.worker,
        reason=reason,
    )


def event_row(
    entity: Entity,
    entity_id: uuid.UUID,
    job_id: uuid.UUID,
    previous: str | None,
    target: str | None,
    now: datetime,
    **extra: Any,
) -> dict[str, Any]:
    """An event row: a move of a job, stage or task, named for who makes it."""
    return {
        "job_id": job_id,
        "entity": entity,
        "entity_id": entity_id,
        "from_status": previous,
        "to_status": target,
        "time": now,
        "principal": acting_name(),
        **extra,
    }


def acting_name() -> str | None:
    """Who makes the changes being logged: the token name of the request (None with
    authentication off, and for the manager's own work); the statements that log in SQL
    (`db.event_rows`) bind it as `principal`."""
    principal = acting()
    return None if principal is None else principal.name


async def insert_rows(s: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """Append events (written at commit); job and stage moves are also announced
    (`domain.announcements.moves`). A row may carry `stage_type` for the announcement."""
    if not rows:
        return
    defer(s, EVENTS, (_complete(row) for row in rows))
    announcements.moves(s.info, rows)


def _complete(row: dict[str, Any]) -> dict[str, Any]:
    """The row naming every column, in one order: the deferred rows of a table are
    written by one multi-row INSERT."""
    return {c: row.get(c) for c in EVENT_COLUMNS}
