"""Expiry, enforced by the maintenance tick on every replica.

A task waiting to be claimed (PENDING, RETRIED) past its `expires_at` is
aborted "expired", as a cancelled task is: it counts for neither completed nor failed.
The claim never hands it out from that time on, so the abort cannot race a claim that
comes later; one that came earlier holds the task, whose status is then checked again
under the lock. A job none of whose tasks has started by its `expires_at` is aborted
"expired" with everything under it; a job that started goes on without its expired
tasks.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from jobnik_protocol.wire import SystemReason

from ..db.engine import Database, now_in
from ..db.models import Job, Task, written_all
from ..domain.moves import job_move
from ..domain.progress import job_percentage
from ..domain.statuses import JobStatus, TaskStatus
from ..services.cascade import abort_unfinished, job_stages
from ..services.history import moved
from ..services.loading import load_job
from ..services.reports import Report, settle_reports
from .reaper import each_due, in_batches

BATCH = 100
WAITING = (TaskStatus.PENDING, TaskStatus.RETRIED)  # a CREATED one when its stage opens
# An unstarted job's statuses: those of ix_jobs_expiring's predicate.
UNSTARTED_JOB = (JobStatus.CREATED, JobStatus.PENDING, JobStatus.PAUSED)


def due_scan(now: datetime) -> Select[uuid.UUID]:
    """The waiting tasks past their expiry at `now`, soonest first, locked."""
    return (
        select(Task.id)
        .where(Task.expires_at <= now, Task.status.in_(written_all(WAITING)))
        .order_by(Task.expires_at, Task.id)
        .limit(BATCH)
        .with_for_update(skip_locked=True)
    )


async def expire_some_tasks(s: AsyncSession) -> int:
    """Abort up to BATCH waiting tasks past their expiry, soonest first, skipping any a
    claim or a report holds (the next tick sees them as they then are)."""
    now = now_in(s)
    locked = await s.execute(due_scan(now))
    ids = list(locked.scalars())
    expired = Report(TaskStatus.ABORTED, reason=SystemReason.EXPIRED)
    await settle_reports(s, [(task_id, expired) for task_id in ids], now)
    return len(ids)


async def abort_unstarted(s: AsyncSession, *, job_id: uuid.UUID) -> bool:
    """Abort the job if it is past its expiry with none of its tasks started; False if
    it started, ended or has no expiry passed (any more)."""
    now = now_in(s)
    # Its tasks locked first, as an abort takes them: a claim that took one before its
    # expiry (a replica's clock a little behind) has then committed, and started the
    # job, and no claim takes one any more (claims skip locked tasks).
    await s.execute(
        select(Task.id).where(Task.job_id == job_id).order_by(Task.id).with_for_update()
    )
    seen = (
        await s.execute(select(Job.start_time, Job.status, Job.expires_at).where(Job.id == job_id))
    ).one_or_none()
    if seen is None or seen.start_time is not None or seen.status.is_final:
        return False
    if seen.expires_at is None or seen.expires_at > now:
        return False
    await abort_unfinished(s, job_id, now, SystemReason.EXPIRED)
    job = await load_job(s, job_id, lock=True)
    job.reason = SystemReason.EXPIRED
    await moved(s, job, job_move(job.status, JobStatus.ABORTED), now, reason=SystemReason.EXPIRED)
    job.percentage = job_percentage([st.status for st in await job_stages(s, job_id)])
    return True


def due_jobs_scan(now: datetime) -> Select[uuid.UUID]:
    """The unstarted jobs past their expiry at `now`, soonest first: read from the
    partial index ix_jobs_expiring, which holds only those that may expire (a table of a
    million one-task jobs, as Open Job Spec pushes make, was read whole every tick)."""
    return (
        select(Job.id)
        .where(
            Job.expires_at <= now,
            Job.start_time.is_(None),
            Job.status.in_(written_all(UNSTARTED_JOB)),
        )
        .order_by(Job.expires_at)
        .limit(BATCH)
    )


async def expire(db: Database) -> int:
    """Abort the unstarted jobs and the waiting tasks past their expiry; how many of
    each together."""
    jobs = await each_due(db, due_jobs_scan(db.clock.now()), abort_unstarted)
    return jobs + await in_batches(db, expire_some_tasks, BATCH, 10 * BATCH)
