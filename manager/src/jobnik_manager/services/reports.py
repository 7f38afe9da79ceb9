"""A worker's report on its task, and the same settlement when a lease expires."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.models import Job, Task
from ..db.types import utcnow
from ..dispatch.outbox import tasks_ready
from ..domain.errors import LeaseLost
from ..domain.leases import lease_is_live
from ..domain.retry import RetryPolicy
from ..domain.statuses import CLAIMING_JOB_STATUSES, JobStatus, TaskStatus
from ..domain.tasks import ReportOutcome, apply_report
from .cascade import bump_summary, settle_stage
from .history import task_moved
from .loading import load_task

LEASE_EXPIRED = "lease expired"


@dataclass(frozen=True, slots=True)
class Report:
    """What a worker says of its task. `status` RETRIED means "retry later"."""

    status: TaskStatus
    lease_id: uuid.UUID | None = None
    result: dict[str, Any] | None = None
    reason: str | None = None
    retryable: bool = True
    retry_after: timedelta | None = None


async def report(s: AsyncSession, task_id: uuid.UUID, r: Report) -> Task:
    """Record a report; the manager decides RETRIED or FAILED from the attempts left."""
    now = utcnow()
    task = await load_task(s, task_id, lock=True)
    current = TaskStatus(task.status)
    if r.lease_id is not None and not lease_is_live(
        current, task.lease_id, task.lease_expires_at, r.lease_id, now
    ):
        if _repeats_completion(task, r):
            return task  # the answer to the first report was lost; say it again
        raise LeaseLost()
    outcome = apply_report(
        current,
        r.status,
        attempts=task.attempts,
        max_attempts=task.max_attempts,
        retryable=r.retryable,
    )
    if outcome.status is TaskStatus.COMPLETED:
        task.result = r.result
        task.reason = None
    else:
        task.reason = r.reason
    delay = r.retry_after if r.status is TaskStatus.RETRIED else _policy_delay(task, outcome)
    await settle(s, task, outcome, now, delay=delay, reason=r.reason)
    return task


async def expire_lease(s: AsyncSession, task: Task, now: datetime) -> None:
    """The lease ran out: the attempt failed (the caller holds the task's lock)."""
    outcome = apply_report(
        TaskStatus.IN_PROGRESS,
        TaskStatus.FAILED,
        attempts=task.attempts,
        max_attempts=task.max_attempts,
    )
    task.reason = LEASE_EXPIRED
    await settle(s, task, outcome, now, delay=_policy_delay(task, outcome), reason=LEASE_EXPIRED)


async def settle(
    s: AsyncSession,
    task: Task,
    outcome: ReportOutcome,
    now: datetime,
    *,
    delay: timedelta | None,
    reason: str | None,
) -> None:
    """Apply an outcome to a locked IN_PROGRESS task, log it, and cascade."""
    previous = TaskStatus(task.status)
    task.status = outcome.status
    task.attempts = outcome.attempts
    task.update_time = now
    if outcome.status.is_final:
        task.end_time = now
    elif outcome.status.is_claimable:
        if delay is not None and delay > timedelta(0):
            task.not_before = now + delay  # opened by the maintenance loop when due
        else:
            task.claimable = await _job_allows_claims(s, task.job_id)
            if task.claimable:
                await tasks_ready(s, task.stage_type, task.job_id, task.stage_id, now)
    await s.flush()
    await task_moved(s, task, previous, now, reason)
    stage = await bump_summary(s, task.stage_id, {previous: -1, outcome.status: 1}, now)
    await settle_stage(s, stage, now)


def _policy_delay(task: Task, outcome: ReportOutcome) -> timedelta | None:
    policy = RetryPolicy.from_json(task.retry_policy)
    if policy is None or outcome.status is not TaskStatus.RETRIED:
        return None
    return policy.delay_after(outcome.attempts)


def _repeats_completion(task: Task, r: Report) -> bool:
    return (
        r.status is TaskStatus.COMPLETED
        and TaskStatus(task.status) is TaskStatus.COMPLETED
        and task.lease_id == r.lease_id
    )


async def _job_allows_claims(s: AsyncSession, job_id: uuid.UUID) -> bool:
    # A share lock, so a concurrent pause either sees this task claimable and closes
    # it, or commits first and is seen here.
    status = (
        await s.execute(select(Job.status).where(Job.id == job_id).with_for_update(read=True))
    ).scalar_one()
    return JobStatus(status) in CLAIMING_JOB_STATUSES


async def jobs_allowing_claims(s: AsyncSession, job_ids: list[uuid.UUID]) -> set[uuid.UUID]:
    """Of these jobs, the ones whose tasks may be claimed now (share-locked, as above)."""
    if not job_ids:
        return set()
    rows = await s.execute(
        select(Job.id, Job.status)
        .where(Job.id.in_(sorted(job_ids)))
        .order_by(Job.id)
        .with_for_update(read=True)
    )
    return {job_id for job_id, status in rows if JobStatus(status) in CLAIMING_JOB_STATUSES}
