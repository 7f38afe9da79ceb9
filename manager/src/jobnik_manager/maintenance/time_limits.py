"""Time limits, enforced by the maintenance tick on every replica.

An attempt running longer than its task's `timeout_seconds` is failed "timed out", even
if its worker keeps heartbeating; the usual retry rules follow. A job not final by its
`deadline` is failed "deadline exceeded", its unfinished tasks and stages aborted.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from jobnik_protocol.wire import SystemReason

from ..db.engine import Database, now_in
from ..db.models import Job, Task, written, written_all
from ..domain.moves import job_move
from ..domain.progress import job_percentage
from ..domain.statuses import JobStatus, TaskStatus
from ..services.cascade import abort_unfinished, job_stages
from ..services.history import moved
from ..services.loading import load_job
from ..services.reports import Report, settle_reports
from .reaper import each_due, in_batches

BATCH = 100
# A job's statuses until it ends: those of ix_jobs_deadline's predicate.
UNFINISHED_JOB = tuple(s for s in JobStatus if not s.is_final)


def due_scan(now: datetime) -> Select[uuid.UUID, datetime | None, float | None]:
    """The running attempts that have a time limit, oldest first (which of them are past
    it is checked on what this reads, at `now`)."""
    return (
        select(Task.id, Task.start_time, Task.timeout_seconds)
        .where(Task.status == written(TaskStatus.IN_PROGRESS), Task.timeout_seconds.is_not(None))
        .order_by(Task.start_time)
    )


async def time_out_some(s: AsyncSession) -> int:
    """Fail up to BATCH attempts past their time limit, oldest first. The running timed
    attempts are read without locks; only those past their limit are locked (skipping
    any a report holds) and checked again, so an attempt settled or claimed anew
    meanwhile is left alone."""
    now = now_in(s)
    running = await s.execute(due_scan(now))
    due = {
        r.id: r.start_time
        for r in running
        if r.start_time is not None and r.start_time + timedelta(seconds=r.timeout_seconds) <= now
    }
    if not due:
        return 0
    locked = await s.execute(
        select(Task.id, Task.start_time)
        .where(Task.id.in_(sorted(due)[:BATCH]), Task.status == TaskStatus.IN_PROGRESS)
        .order_by(Task.id)
        .with_for_update(skip_locked=True)
    )
    expired = [r.id for r in locked if r.start_time == due[r.id]]
    timed_out = Report(TaskStatus.FAILED, reason=SystemReason.TIMED_OUT)
    await settle_reports(s, [(task_id, timed_out) for task_id in expired], now)
    return len(expired)


async def time_out_attempts(db: Database, limit: int = 1000) -> int:
    """Fail up to `limit` attempts past their time limit; returns how many."""
    return await in_batches(db, time_out_some, BATCH, limit)


async def fail_past_deadline(s: AsyncSession, *, job_id: uuid.UUID) -> bool:
    """Fail the job if it is still not final past its deadline; False if it is, or if
    it has no deadline passed (any more)."""
    now = now_in(s)
    seen = await load_job(s, job_id)
    if seen.status.is_final or seen.deadline is None or seen.deadline > now:
        return False
    # Tasks first, the job row last, as an abort takes them (a worker settling a task
    # holds it, then takes the job).
    await abort_unfinished(s, job_id, now, SystemReason.DEADLINE_EXCEEDED)
    job = await load_job(s, job_id, lock=True)
    if job.status.is_final:
        return False
    job.reason = SystemReason.DEADLINE_EXCEEDED
    failed = job_move(job.status, JobStatus.FAILED)
    await moved(s, job, failed, now, reason=SystemReason.DEADLINE_EXCEEDED)
    job.percentage = job_percentage([st.status for st in await job_stages(s, job_id)])
    return True


def past_deadline_scan(now: datetime) -> Select[uuid.UUID]:
    """The unfinished jobs past their deadline at `now`, soonest first: read from the
    partial index ix_jobs_deadline, which holds only unfinished jobs with a deadline
    (it held every job with one, so the tick read all those that had ended in time)."""
    return (
        select(Job.id)
        .where(Job.deadline <= now, Job.status.in_(written_all(UNFINISHED_JOB)))
        .order_by(Job.deadline)
        .limit(BATCH)
    )


async def enforce_deadlines(db: Database) -> int:
    """Fail the jobs past their deadline, each in a transaction of its own."""
    return await each_due(db, past_deadline_scan(db.clock.now()), fail_past_deadline)
