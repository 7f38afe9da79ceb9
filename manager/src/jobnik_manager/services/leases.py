"""Heartbeats: a worker keeps its lease and learns whether to stop."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.models import Job
from ..db.types import utcnow
from ..domain.errors import LeaseLost
from ..domain.leases import DEFAULT_LEASE, lease_is_live
from ..domain.statuses import JobStatus, TaskStatus
from .loading import load_task


@dataclass(frozen=True, slots=True)
class HeartbeatAnswer:
    lease_expires_at: datetime
    cancel_requested: bool
    job_status: JobStatus


async def heartbeat(
    s: AsyncSession,
    task_id: uuid.UUID,
    lease_id: uuid.UUID,
    *,
    progress: int | None = None,
    lease: timedelta | None = None,
) -> HeartbeatAnswer:
    """Extend a live lease. An aborted task answers `cancel_requested` to its holder."""
    now = utcnow()
    task = await load_task(s, task_id, lock=True)
    job_status = JobStatus(
        (await s.execute(select(Job.status).where(Job.id == task.job_id))).scalar_one()
    )
    status = TaskStatus(task.status)
    if status is TaskStatus.ABORTED and task.lease_id == lease_id:
        return HeartbeatAnswer(task.lease_expires_at or now, True, job_status)
    if not lease_is_live(status, task.lease_id, task.lease_expires_at, lease_id, now):
        raise LeaseLost()
    if lease is not None:
        task.lease_seconds = lease.total_seconds()
    length = timedelta(seconds=task.lease_seconds) if task.lease_seconds else DEFAULT_LEASE
    task.lease_expires_at = now + length
    if progress is not None:
        task.progress = progress
    return HeartbeatAnswer(task.lease_expires_at, False, job_status)
