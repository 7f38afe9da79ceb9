"""Task use cases: claim (dequeue), report, read and find."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.claim import claim_next
from ..db.models import Job, Stage, Task
from ..db.types import utcnow
from ..domain.statuses import CLAIMING_JOB_STATUSES, JobStatus, StageStatus, TaskStatus
from ..domain.tasks import apply_report
from .cascade import bump_summary, settle_stage
from .loading import load_task
from .pages import PageRequest, PageResult, paginate


async def claim(s: AsyncSession, stage_type: str) -> Task | None:
    """Claim the next task of this stage type: highest job priority, then oldest."""
    now = utcnow()
    task = await claim_next(s, stage_type)
    if task is None:
        return None
    previous = TaskStatus(task.status)
    task.status = TaskStatus.IN_PROGRESS
    task.claimable = False
    task.start_time = now
    task.update_time = now
    await s.flush()
    await bump_summary(s, task.stage_id, {previous: -1, TaskStatus.IN_PROGRESS: 1}, now)
    # First claims start the stage and the job; the status guard makes these no-ops
    # (and lock-free on PostgreSQL) once they have started.
    await s.execute(
        update(Stage)
        .where(Stage.id == task.stage_id, Stage.status == StageStatus.PENDING)
        .values(status=StageStatus.IN_PROGRESS, update_time=now)
        .execution_options(synchronize_session=False)
    )
    await s.execute(
        update(Job)
        .where(Job.id == task.job_id, Job.status == JobStatus.PENDING)
        .values(status=JobStatus.IN_PROGRESS, update_time=now)
        .execution_options(synchronize_session=False)
    )
    return task


async def report(s: AsyncSession, task_id: uuid.UUID, reported: TaskStatus) -> Task:
    """A worker reports COMPLETED or FAILED; the manager decides RETRIED or FAILED."""
    now = utcnow()
    task = await load_task(s, task_id, lock=True)
    previous = TaskStatus(task.status)
    outcome = apply_report(
        previous, reported, attempts=task.attempts, max_attempts=task.max_attempts
    )
    task.status = outcome.status
    task.attempts = outcome.attempts
    task.update_time = now
    if outcome.status.is_final:
        task.end_time = now
    elif outcome.status.is_claimable:
        task.claimable = await _job_allows_claims(s, task.job_id)
    await s.flush()
    stage = await bump_summary(s, task.stage_id, {previous: -1, outcome.status: 1}, now)
    await settle_stage(s, stage, now)
    return task


async def _job_allows_claims(s: AsyncSession, job_id: uuid.UUID) -> bool:
    # A share lock, so a concurrent pause either sees this task claimable and closes
    # it, or commits first and is seen here.
    status = (
        await s.execute(select(Job.status).where(Job.id == job_id).with_for_update(read=True))
    ).scalar_one()
    return JobStatus(status) in CLAIMING_JOB_STATUSES


async def replace_user_metadata(
    s: AsyncSession, task_id: uuid.UUID, metadata: dict[str, Any]
) -> None:
    task = await load_task(s, task_id, lock=True)
    task.user_metadata = metadata
    task.update_time = utcnow()


@dataclass(frozen=True, slots=True)
class TaskFilter:
    stage_id: uuid.UUID | None = None
    stage_type: str | None = None
    from_date: datetime | None = None
    end_date: datetime | None = None
    status: TaskStatus | None = None


async def find_tasks(s: AsyncSession, f: TaskFilter, page: PageRequest) -> PageResult[Task]:
    stmt = select(Task).order_by(Task.seq)
    if f.stage_id is not None:
        stmt = stmt.where(Task.stage_id == f.stage_id)
    if f.stage_type is not None:
        stmt = stmt.where(Task.stage_type == f.stage_type)
    if f.from_date is not None:
        stmt = stmt.where(Task.creation_time >= f.from_date)
    if f.end_date is not None:
        stmt = stmt.where(Task.creation_time <= f.end_date)
    if f.status is not None:
        stmt = stmt.where(Task.status == f.status)
    return await paginate(s, stmt, page)
