"""The event log: one row per status change, written in the transaction that makes it."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import ColumnElement, and_, false, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.bulk import FEW_ROWS, insert_alike
from ..db.deferred import defer, write_deferred
from ..db.engine import principal_in
from ..db.models import EVENTS, Event, Job, Stage, Task
from ..domain import announcements
from ..domain.errors import IllegalTransition
from ..domain.moves import EVENT_COLUMNS, TASK_CREATED, Entity, Move
from ..domain.statuses import TaskStatus
from .loading import load_job
from .pages import PageRequest, PageResult, paginate


async def moved(
    s: AsyncSession, row: Job | Stage, move: Move, now: datetime, reason: str | None = None
) -> None:
    """Make `move` on a job's or stage's object (its columns and start) and log it. A
    creation logs the row as it was inserted."""
    if move.source is not None:
        if row.status != move.source:
            raise IllegalTransition(move.entity.value, row.status, move.target)
        for column, value in move.columns(now).items():
            setattr(row, column, value)
    if move.starts and row.start_time is None:
        row.start_time = now
    await insert_rows(s, [_row_event(s, row, move, now, reason)])


def _row_event(
    s: AsyncSession, row: Job | Stage, move: Move, now: datetime, reason: str | None
) -> dict[str, Any]:
    if isinstance(row, Job):
        return move.event(
            job_id=row.id, entity_id=row.id, now=now, principal=principal_in(s), reason=reason
        )
    return move.event(
        job_id=row.job_id, entity_id=row.id, now=now, principal=principal_in(s), reason=reason
    ) | {"stage_type": row.type}


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
    principal = principal_in(s)
    if len(task_ids) <= FEW_ROWS:
        rows = (
            TASK_CREATED.event(
                job_id=job_id,
                entity_id=task_id,
                stage_id=stage_id,
                attempt=0,
                now=now,
                principal=principal,
            )
            for task_id in task_ids
        )
        defer(s, EVENTS, rows)
        return
    # The rows differ in their task alone: the rest is converted once.
    same = TASK_CREATED.event(
        job_id=job_id, entity_id=job_id, stage_id=stage_id, attempt=0, now=now, principal=principal
    )
    varying = ("entity_id", "task_id")
    for name in varying:
        del same[name]
    await write_deferred(s)
    await insert_alike(s, Event, same, varying, ((task_id, task_id) for task_id in task_ids))


@dataclass(frozen=True, slots=True)
class MovedTask:
    id: uuid.UUID
    stage_id: uuid.UUID


async def move_tasks(
    s: AsyncSession,
    where: Iterable[ColumnElement[bool]],
    moves: Iterable[Move],
    now: datetime,
    reason: str | None = None,
    **values: Any,
) -> list[MovedTask]:
    """Make each move on every task matching `where` in its source status, in bulk, and
    log each. One UPDATE per move, so each event knows where it came from without
    reading the rows first."""
    conditions = list(where)
    moved: list[MovedTask] = []
    rows: list[dict[str, Any]] = []
    principal = principal_in(s)
    for move in moves:
        written = move.columns(now) | values
        if move.final and reason is not None:
            written["reason"] = reason  # the task says why it ended, as its event does
        result = await s.execute(
            update(Task)
            .where(*conditions, Task.status == move.source)
            .values(**written)
            .returning(
                Task.id, Task.stage_id, Task.job_id, Task.attempts, Task.lease_id, Task.worker
            )
            .execution_options(synchronize_session=False)
        )
        for r in result:
            moved.append(MovedTask(r.id, r.stage_id))
            rows.append(task_event(r, move, now, principal, reason))
    await insert_rows(s, rows)
    return moved


async def move_stages(
    s: AsyncSession,
    job_id: uuid.UUID,
    moves: Iterable[Move],
    now: datetime,
    reason: str | None = None,
) -> None:
    """Make each move on the job's stages in its source status, in bulk, logging each."""
    rows: list[dict[str, Any]] = []
    principal = principal_in(s)
    for move in moves:
        written = move.columns(now) | ({"reason": reason} if move.final else {})
        result = await s.execute(
            update(Stage)
            .where(Stage.job_id == job_id, Stage.status == move.source)
            .values(**written)
            .returning(Stage.id, Stage.type)
            .execution_options(synchronize_session=False)
        )
        rows.extend(
            move.event(job_id=job_id, entity_id=r.id, now=now, principal=principal)
            | {"stage_type": r.type}
            for r in result
        )
    await insert_rows(s, rows)


async def events_of_job(
    s: AsyncSession, job_id: uuid.UUID, page: PageRequest, *, newest_first: bool = False
) -> PageResult[Event]:
    await load_job(s, job_id)
    order = Event.seq.desc() if newest_first else Event.seq
    return await paginate(s, select(Event).where(Event.job_id == job_id).order_by(order), page)


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


def task_event(
    task: TaskLike, move: Move, now: datetime, principal: str | None, reason: str | None
) -> dict[str, Any]:
    """A task's move, as its event row records it."""
    return move.event(
        job_id=task.job_id,
        entity_id=task.id,
        stage_id=task.stage_id,
        attempt=task.attempts,
        lease_id=task.lease_id,
        worker=task.worker,
        now=now,
        principal=principal,
        reason=reason,
    )


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


async def read_events(
    s: AsyncSession,
    moves: Sequence[TaskStatus | None],
    stage_types: Sequence[str],
    after: int,
    limit: int,
    owner: str | None = None,
) -> list[Mapping[str, Any]]:
    """Tasks' events after the key `after`, oldest first: those that moved a task to one
    of `moves` (`None`: its creation), of the stage types named (all when none), of the
    jobs of `owner` (a producer's) or all, with the task's type, data and start."""
    made = Event.from_status.is_(None)
    into = [m for m in moves if m is not None]
    which = or_(
        and_(made, Event.to_status.is_not(None)) if None in moves else false(),
        and_(~made, Event.to_status.in_(into)) if into else false(),
    )
    query = (
        select(
            Event.seq,
            Event.time,
            Event.task_id,
            Event.from_status,
            Event.to_status,
            Event.attempt,
            Task.stage_type,
            Task.data,
            Task.start_time,
        )
        .join(Task, Task.id == Event.task_id)
        .where(Event.seq > after, Event.entity == Entity.TASK, which)
        .order_by(Event.seq)
        .limit(limit)
    )
    if stage_types:
        query = query.where(Task.stage_type.in_(list(stage_types)))
    if owner is not None:
        query = query.join(Job, Job.id == Event.job_id).where(Job.owner == owner)
    return [dict(row) for row in (await s.execute(query)).mappings()]
