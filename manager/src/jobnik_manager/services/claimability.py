"""The claimable flag: whether a task sits in the claim index. Every flip of it goes
through here (the claim statement itself takes claimed tasks out, in `db.claim`).

A task is claimable when it is PENDING or RETRIED, its stage is active, its job lets
tasks be claimed, and no retry delay holds it back. Whoever opens tasks also wakes the
workers of their type (long-polling claims, and RabbitMQ when configured).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Protocol

from sqlalchemy import ColumnElement, Select, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import Database, now_in
from ..db.models import TASKS, Job, Stage, Task
from ..domain.announcements import tasks_ready
from ..domain.statuses import CLAIMING_JOB_STATUSES, JobStatus, StageStatus, TaskStatus

WAITING_TO_RUN = (TaskStatus.PENDING, TaskStatus.RETRIED)


def claimable_when_created(stage_status: StageStatus, job_status: JobStatus) -> bool:
    """New tasks go straight into the claim index when their stage runs and their job
    lets tasks be claimed."""
    return stage_status.is_active and job_status in CLAIMING_JOB_STATUSES


async def open_tasks(s: AsyncSession, where: Iterable[ColumnElement[bool]], now: datetime) -> int:
    """Put the matching tasks that wait to run into the claim index and wake their
    workers; a retry still waiting out its delay stays out (the maintenance loop opens
    it when due). The caller has checked that their job lets tasks be claimed."""
    opened = await s.execute(
        update(TASKS)
        .where(
            *where,
            TASKS.c.status.in_(WAITING_TO_RUN),
            TASKS.c.claimable.is_(False),
            TASKS.c.not_before.is_(None),
        )
        .values(claimable=True)
        .returning(TASKS.c.stage_type, TASKS.c.job_id, TASKS.c.stage_id)
    )
    rows = opened.all()
    announce(s, rows, now)
    return len(rows)


async def close_tasks(s: AsyncSession, where: Iterable[ColumnElement[bool]]) -> None:
    """Take the matching tasks out of the claim index (pause, failure, abort)."""
    await s.execute(
        update(TASKS).where(*where, TASKS.c.claimable.is_(True)).values(claimable=False)
    )


class Ready(Protocol):
    """A task that became claimable: enough to wake its workers."""

    @property
    def stage_type(self) -> str: ...
    @property
    def job_id(self) -> uuid.UUID: ...
    @property
    def stage_id(self) -> uuid.UUID: ...


def announce(s: AsyncSession, tasks: Sequence[Ready], now: datetime) -> None:
    """Wake the workers of these tasks' types: a claim a task, a message a stage."""
    by_stage: dict[uuid.UUID, tuple[Ready, int]] = {}
    for task in tasks:
        first, count = by_stage.get(task.stage_id, (task, 0))
        by_stage[task.stage_id] = (first, count + 1)
    for first, count in by_stage.values():
        tasks_ready(s.info, first.stage_type, first.job_id, first.stage_id, now, count)


async def jobs_allowing_claims(s: AsyncSession, job_ids: Iterable[uuid.UUID]) -> set[uuid.UUID]:
    """Of these jobs, the ones whose tasks may be claimed now.

    Share-locked, so a concurrent pause either sees a task opened by the caller and
    closes it, or commits first and is seen here.
    """
    ids = sorted(set(job_ids))
    if not ids:
        return set()
    rows = await s.execute(
        select(Job.id, Job.status)
        .where(Job.id.in_(ids))
        .order_by(Job.id)
        .with_for_update(read=True)
    )
    return {job_id for job_id, status in rows if status in CLAIMING_JOB_STATUSES}


DUE_BATCH = 500
_RUNNING_STAGES = (StageStatus.PENDING, StageStatus.IN_PROGRESS)


def due_query(now: datetime) -> Select[int, uuid.UUID]:
    """Tasks whose `notBefore` has passed, in a running stage, the earliest first.

    Read from the partial index ix_tasks_not_before, which holds only the tasks that
    wait for a time: the stage's status is a subquery per task found, not a join, which
    the planner may drive from the stage's side instead. On a stage it has no statistics
    for yet (one created a moment ago) it did, and walked every task of the stage once
    a second (37-120 ms at 100,000 tasks, during their drain)."""
    stage_status = select(Stage.status).where(Stage.id == Task.stage_id).scalar_subquery()
    return (
        select(Task.seq, Task.job_id)
        .where(
            Task.not_before <= now,
            Task.status.in_(WAITING_TO_RUN),
            stage_status.in_(_RUNNING_STAGES),
        )
        .order_by(Task.not_before)
        .limit(DUE_BATCH)
        .with_for_update(skip_locked=True)
    )


async def open_due(s: AsyncSession) -> int:
    """Make tasks whose `notBefore` has passed claimable: retries whose delay is over,
    and scheduled tasks whose time has come, if their stage runs and their job lets
    tasks be claimed (a paused job's are opened by its resume, a later stage's when its
    turn comes)."""
    now = now_in(s)
    due = (await s.execute(due_query(now))).all()
    if not due:
        return 0
    await s.execute(
        update(TASKS).where(TASKS.c.seq.in_([r.seq for r in due])).values(not_before=None)
    )
    open_jobs = await jobs_allowing_claims(s, (r.job_id for r in due))
    opening = [r.seq for r in due if r.job_id in open_jobs]
    if opening:
        await open_tasks(s, [TASKS.c.seq.in_(opening)], now)
    return len(due)


async def open_due_retries(db: Database) -> int:
    """Open every task whose time has come, a batch a transaction; how many."""
    opened = 0
    while True:
        n = await db.transaction(open_due)
        opened += n
        if n < DUE_BATCH:
            return opened
