"""Retention: finished jobs older than a duration are deleted with their stages, tasks
and events, a small batch per transaction, oldest first, safely on every replica.

The manager's own retention yields to the work it runs beside: after each batch it rests
`REST_PER_WORK` times as long as the batch took, so that a backlog (retention turned on
over years of history) costs the claims and reports meanwhile at most a fifth of one
connection's time, and of PostgreSQL's, however long it takes.

"Older" counts from when the job ended (its end time; its last update for a job that
ended before end times were kept). A job is deleted only while it is final: the
statement checks again, so one replayed meanwhile stays.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import ColumnElement, delete, exists, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import Database
from ..db.models import (
    DeadLetterDiscard,
    Event,
    Job,
    JobAsset,
    Stage,
    Task,
    Workflow,
    WorkflowJob,
)
from ..domain.statuses import JobStatus

BATCH = 500
REST_PER_WORK = 4.0
_FINAL = [s for s in JobStatus if s.is_final]


@dataclass
class Deleted:
    jobs: int = 0
    stages: int = 0
    tasks: int = 0
    events: int = 0
    job_ids: list[uuid.UUID] = field(default_factory=list)

    def add(self, other: Deleted) -> None:
        self.jobs += other.jobs
        self.stages += other.stages
        self.tasks += other.tasks
        self.events += other.events
        self.job_ids += other.job_ids

    def __str__(self) -> str:
        return (
            f"{self.jobs:,} jobs ({self.stages:,} stages, {self.tasks:,} tasks, "
            f"{self.events:,} events)"
        )


def _due(before: datetime) -> list[ColumnElement[bool]]:
    return [Job.status.in_(_FINAL), func.coalesce(Job.end_time, Job.update_time) < before]


async def delete_some(s: AsyncSession, before: datetime) -> Deleted:
    """Up to BATCH finished jobs that ended before `before`, deleted with everything
    under them. Jobs another replica is deleting are skipped."""
    ended = func.coalesce(Job.end_time, Job.update_time)
    ids = list(
        (
            await s.execute(
                select(Job.id)
                .where(*_due(before))
                .order_by(ended, Job.id)
                .limit(BATCH)
                .with_for_update(skip_locked=True)
            )
        ).scalars()
    )
    if not ids:
        return Deleted()
    # Children first, by explicit statements (the cascade need not depend on the driver);
    # the job rows last, and only those still final.
    events = await s.execute(delete(Event).where(Event.job_id.in_(ids)))
    tasks = await s.execute(delete(Task).where(Task.job_id.in_(ids)))
    stages = await s.execute(delete(Stage).where(Stage.job_id.in_(ids)))
    await s.execute(delete(JobAsset).where(JobAsset.job_id.in_(ids)))
    await s.execute(delete(DeadLetterDiscard).where(DeadLetterDiscard.job_id.in_(ids)))
    jobs = await s.execute(
        delete(Job).where(Job.id.in_(ids), Job.status.in_(_FINAL)).returning(Job.id)
    )
    gone = list(jobs.scalars())
    await _forget_workflow_jobs(s, gone)
    return Deleted(
        jobs=len(gone),
        stages=_count(stages),
        tasks=_count(tasks),
        events=_count(events),
        job_ids=gone,
    )


async def _forget_workflow_jobs(s: AsyncSession, job_ids: list[uuid.UUID]) -> None:
    """The deleted jobs leave their workflows; a workflow left with none goes too."""
    if not job_ids:
        return
    left = await s.execute(
        delete(WorkflowJob)
        .where(WorkflowJob.job_id.in_(job_ids))
        .returning(WorkflowJob.workflow_id)
    )
    touched = set(left.scalars())
    if touched:
        still = exists().where(WorkflowJob.workflow_id == Workflow.id)
        await s.execute(delete(Workflow).where(Workflow.id.in_(touched), ~still))


def _count(result: object) -> int:
    return int(getattr(result, "rowcount", 0) or 0)


async def count_finished_before(s: AsyncSession, before: datetime) -> Deleted:
    """What `delete_finished_before` would delete now."""
    jobs = select(Job.id).where(*_due(before)).scalar_subquery()
    count = Deleted(jobs=int(await s.scalar(select(func.count()).where(*_due(before))) or 0))
    for model, name in ((Stage, "stages"), (Task, "tasks"), (Event, "events")):
        n = await s.scalar(select(func.count()).where(model.job_id.in_(jobs)))
        setattr(count, name, int(n or 0))
    return count


async def delete_finished_before(
    db: Database, before: datetime, *, rest_per_work: float = 0.0
) -> Deleted:
    """Every finished job that ended before `before`, a batch per transaction; after each
    batch, a rest of `rest_per_work` times the batch's own time (none: at full speed)."""
    total = Deleted()
    while True:
        began = time.perf_counter()
        batch = await db.transaction(lambda s: delete_some(s, before))
        total.add(batch)
        if batch.jobs < BATCH:
            return total
        if rest_per_work > 0:
            await asyncio.sleep((time.perf_counter() - began) * rest_per_work)
