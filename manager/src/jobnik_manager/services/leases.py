"""Heartbeats: a worker keeps its lease and learns whether to stop."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import SimpleNamespace

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import now_in
from ..db.models import TASKS, Job
from ..domain.errors import DomainError, LeaseLost, TaskNotFound
from ..domain.leases import DEFAULT_LEASE, lease_is_live
from ..domain.statuses import JobStatus, TaskStatus

_TASKS = TASKS
_RENEW = (
    update(_TASKS)
    .where(_TASKS.c.seq == bindparam("r_seq"))
    .values(
        lease_expires_at=bindparam("r_lease_expires_at"),
        lease_seconds=bindparam("r_lease_seconds"),
        progress=bindparam("r_progress"),
        progress_message=bindparam("r_progress_message"),
    )
)


@dataclass(frozen=True, slots=True)
class HeartbeatAnswer:
    lease_expires_at: datetime
    cancel_requested: bool
    job_status: JobStatus


@dataclass(frozen=True, slots=True)
class Beat:
    """One heartbeat: the lease it renews and, optionally, the task's progress."""

    task_id: uuid.UUID
    lease_id: uuid.UUID
    progress: int | None = None
    # What the work is at, in words: kept until a later heartbeat says otherwise.
    message: str | None = None


async def heartbeat(
    s: AsyncSession,
    task_id: uuid.UUID,
    lease_id: uuid.UUID,
    *,
    progress: int | None = None,
    message: str | None = None,
    lease: timedelta | None = None,
) -> HeartbeatAnswer:
    """Extend a live lease. An aborted task answers `cancel_requested` to its holder."""
    (answer,) = await heartbeats(s, [Beat(task_id, lease_id, progress, message)], lease=lease)
    if isinstance(answer, DomainError):
        raise answer
    return answer


async def heartbeats(
    s: AsyncSession, beats: Sequence[Beat], *, lease: timedelta | None = None
) -> list[HeartbeatAnswer | DomainError]:
    """Extend many leases in one go: one locking SELECT and one executemany UPDATE.
    Answers each beat in order, with its own answer or error."""
    now = now_in(s)
    ids = sorted({b.task_id for b in beats})
    rows = await s.execute(
        select(
            _TASKS.c.id,
            _TASKS.c.seq,
            _TASKS.c.status,
            _TASKS.c.lease_id,
            _TASKS.c.lease_expires_at,
            _TASKS.c.lease_seconds,
            _TASKS.c.progress,
            _TASKS.c.progress_message,
            Job.status.label("job_status"),
        )
        .join(Job, Job.id == _TASKS.c.job_id)
        .where(_TASKS.c.id.in_(ids))
        .order_by(_TASKS.c.id)
        .with_for_update(of=_TASKS)
    )
    tasks = {row.id: SimpleNamespace(**row._mapping) for row in rows}
    answers: list[HeartbeatAnswer | DomainError] = []
    renewed: dict[uuid.UUID, SimpleNamespace] = {}
    for beat in beats:
        task = tasks.get(beat.task_id)
        if task is None:
            answers.append(TaskNotFound())
            continue
        job_status = task.job_status
        status = task.status
        if status is TaskStatus.ABORTED and task.lease_id == beat.lease_id:
            answers.append(HeartbeatAnswer(task.lease_expires_at or now, True, job_status))
            continue
        if not lease_is_live(status, task.lease_id, task.lease_expires_at, beat.lease_id, now):
            answers.append(LeaseLost())
            continue
        if lease is not None:
            task.lease_seconds = lease.total_seconds()
        length = timedelta(seconds=task.lease_seconds) if task.lease_seconds else DEFAULT_LEASE
        task.lease_expires_at = now + length
        if beat.progress is not None:
            task.progress = beat.progress
        if beat.message is not None:
            task.progress_message = beat.message
        renewed[task.id] = task
        answers.append(HeartbeatAnswer(task.lease_expires_at, False, job_status))
    if renewed:
        await s.execute(
            _RENEW,
            [
                {
                    "r_seq": t.seq,
                    "r_lease_expires_at": t.lease_expires_at,
                    "r_lease_seconds": t.lease_seconds,
                    "r_progress": t.progress,
                    "r_progress_message": t.progress_message,
                }
                for t in renewed.values()
            ],
        )
    return answers
