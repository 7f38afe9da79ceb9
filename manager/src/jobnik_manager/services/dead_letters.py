"""Dead letters: the tasks that failed for good, newest first, each with its job and its
error history (the reasons of its failed attempts, from the event log), until it is
retried (its FAILED job replayed, services.replay) or discarded (taken off the list).

A task FAILED in a job that is not FAILED (one whose stages allowed the failure) is a
dead letter too; it cannot be retried, since only a FAILED job can be replayed.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from sqlalchemy import Select, exists, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import Database, now_in, principal_in
from ..db.models import DeadLetterDiscard, Event, Job, Task, written
from ..db.upserts import insert_for
from ..domain.errors import DomainError
from ..domain.statuses import JobStatus, TaskStatus
from .pages import PageRequest
from .replay import retry_job

# The latest failures of each dead letter that are answered with it.
ERRORS_SHOWN = 20
# The most a selection by stage type takes in one call.
MOST_SELECTED = 1000


@dataclass(frozen=True, slots=True)
class DeadLetterFilter:
    owner: str | None = None  # a producer's: its own jobs only
    stage_type: str | None = None
    job_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    time: datetime
    attempt: int | None
    status: TaskStatus
    reason: str | None
    worker: str | None


@dataclass(frozen=True, slots=True)
class DeadLetter:
    task: Task
    job_name: str
    job_status: JobStatus
    errors: list[Failure] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Selection:
    """Which dead letters a bulk call takes: these tasks, or every one of a stage type."""

    task_ids: Sequence[uuid.UUID] = ()
    stage_type: str | None = None


@dataclass(frozen=True, slots=True)
class Skipped:
    task_id: uuid.UUID
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class Retried:
    jobs: list[uuid.UUID]
    tasks: list[uuid.UUID]
    skipped: list[Skipped]


def _dead(f: DeadLetterFilter) -> Select[Task, str, JobStatus]:
    discarded = exists().where(DeadLetterDiscard.task_id == Task.id)
    q = (
        select(Task, Job.name, Job.status)
        .join(Job, Job.id == Task.job_id)
        .where(Task.status == written(TaskStatus.FAILED), ~discarded)
    )
    if f.owner is not None:
        q = q.where(Job.owner == f.owner)
    if f.stage_type is not None:
        q = q.where(Task.stage_type == f.stage_type)
    if f.job_id is not None:
        q = q.where(Task.job_id == f.job_id)
    return q


async def list_dead_letters(
    s: AsyncSession, f: DeadLetterFilter, page: PageRequest
) -> tuple[int, list[DeadLetter]]:
    """One page of dead letters, the latest to fail first, and how many there are."""
    q = _dead(f)
    total = await s.scalar(select(func.count()).select_from(q.subquery()))
    rows = (
        await s.execute(
            q.order_by(Task.end_time.desc(), Task.id).offset(page.offset).limit(page.page_size)
        )
    ).all()
    errors = await failures_of(s, [(task.job_id, task.id) for task, _, _ in rows])
    letters = [
        DeadLetter(task=task, job_name=name, job_status=status, errors=errors.get(task.id, []))
        for task, name, status in rows
    ]
    return total or 0, letters


async def failures_of(
    s: AsyncSession, tasks: list[tuple[uuid.UUID, uuid.UUID]]
) -> dict[uuid.UUID, list[Failure]]:
    """The failed attempts of these (job, task) pairs: read by job, the events' index."""
    if not tasks:
        return {}
    found = await s.execute(
        select(Event)
        .where(
            Event.job_id.in_({job_id for job_id, _ in tasks}),
            Event.task_id.in_([task_id for _, task_id in tasks]),
            Event.entity == "TASK",
            Event.from_status == TaskStatus.IN_PROGRESS,
            Event.to_status.in_([TaskStatus.FAILED, TaskStatus.RETRIED]),
        )
        .order_by(Event.seq)
    )
    by_task: dict[uuid.UUID, list[Failure]] = {}
    for e in found.scalars():
        assert e.task_id is not None and e.to_status is not None
        by_task.setdefault(e.task_id, []).append(
            Failure(e.time, e.attempt, TaskStatus(e.to_status), e.reason, e.worker)
        )
    return {task_id: failures[-ERRORS_SHOWN:] for task_id, failures in by_task.items()}


async def _selected(
    s: AsyncSession, selection: Selection, owner: str | None
) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """The dead letters a selection names: (task, job), in task id order."""
    f = DeadLetterFilter(owner=owner, stage_type=selection.stage_type)
    q = _dead(f).with_only_columns(Task.id, Task.job_id)
    if selection.task_ids:
        q = q.where(Task.id.in_(list(selection.task_ids)))
    rows = (await s.execute(q.order_by(Task.id).limit(MOST_SELECTED))).all()
    return [(task_id, job_id) for task_id, job_id in rows]


def _not_dead(task_ids: Sequence[uuid.UUID], found: set[uuid.UUID]) -> list[Skipped]:
    return [
        Skipped(t, "NOT_A_DEAD_LETTER", "the task is not FAILED, or was discarded or retried")
        for t in task_ids
        if t not in found
    ]


async def retry_dead_letters(db: Database, selection: Selection, owner: str | None) -> Retried:
    """Replay the jobs of the selected dead letters, each job in a transaction of its own
    (one that cannot be replayed, not FAILED say, does not hold up the others: replay's
    own refusal says why)."""
    chosen = await db.transaction(lambda s: _selected(s, selection, owner))
    skipped = _not_dead(selection.task_ids, {task_id for task_id, _ in chosen})
    by_job: dict[uuid.UUID, list[uuid.UUID]] = {}
    for task_id, job_id in chosen:
        by_job.setdefault(job_id, []).append(task_id)
    jobs, tasks = [], []
    for job_id, task_ids in by_job.items():
        try:
            await db.transaction(partial(retry_job, job_id=job_id))
        except DomainError as refused:
            skipped += [Skipped(t, refused.code, str(refused)) for t in task_ids]
            continue
        jobs.append(job_id)
        tasks += task_ids
    return Retried(jobs=jobs, tasks=tasks, skipped=skipped)


async def discard_dead_letters(
    s: AsyncSession, selection: Selection, owner: str | None
) -> tuple[list[uuid.UUID], list[Skipped]]:
    """Take the selected dead letters off the list; answers those taken and the rest."""
    chosen = await _selected(s, selection, owner)
    now, principal = now_in(s), principal_in(s)
    if chosen:
        rows = [
            {"task_id": t, "job_id": j, "discarded_at": now, "principal": principal}
            for t, j in chosen
        ]
        table = DeadLetterDiscard.__table__
        await s.execute(insert_for(s, table).values(rows).on_conflict_do_nothing())
    taken = [task_id for task_id, _ in chosen]
    return taken, _not_dead(selection.task_ids, set(taken))
