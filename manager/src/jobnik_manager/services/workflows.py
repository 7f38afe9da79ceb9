"""Workflows (domain/workflows.py) over jobs: made with their jobs in one transaction,
read with their jobs' statuses, cancelled, and a batch's callbacks fired exactly once
when its jobs are all final. A callback is a job made with its batch, its stage WAITING:
firing approves the ones due and aborts the others, by the same moves as a person's."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import ColumnElement, exists, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import Database, now_in
from ..db.models import TASKS, Job, Stage, Task, Workflow, WorkflowJob, written
from ..domain.errors import RuleViolation
from ..domain.statuses import JobStatus
from ..domain.workflows import (
    CALLBACKS,
    Kind,
    WorkflowState,
    batch_state,
    callbacks_due,
    chain_state,
    group_state,
)
from .jobs import change_status, create_job
from .specs import NewJob
from .stages import approve

JOB = "job"  # a member's role when it is the work, not a callback
_NOT_FINAL = [status for status in JobStatus if not status.is_final]


@dataclass(frozen=True, slots=True)
class NewWorkflow:
    id: uuid.UUID
    kind: Kind
    name: str | None
    jobs: Sequence[NewJob]
    callbacks: Mapping[str, NewJob]  # by the outcome each waits for; its stage WAITING
    owner: str | None


@dataclass(frozen=True, slots=True)
class Member:
    position: int
    role: str
    job_id: uuid.UUID
    status: JobStatus


@dataclass(frozen=True, slots=True)
class WorkflowView:
    id: uuid.UUID
    kind: Kind
    name: str | None
    created_at: datetime
    cancelled_at: datetime | None
    members: list[Member]  # by position: the jobs, then the callbacks
    state: WorkflowState

    @property
    def jobs(self) -> list[Member]:
        return [m for m in self.members if m.role == JOB]

    @property
    def callbacks(self) -> list[Member]:
        return [m for m in self.members if m.role != JOB]


async def create_workflow(s: AsyncSession, new: NewWorkflow) -> None:
    now = now_in(s)
    s.add(Workflow(id=new.id, kind=new.kind, name=new.name, owner=new.owner, created_at=now))
    roles = [(JOB, job) for job in new.jobs]
    roles += [(role, new.callbacks[role]) for role in CALLBACKS if role in new.callbacks]
    for position, (role, job) in enumerate(roles):
        made = await create_job(s, job)
        s.add(WorkflowJob(workflow_id=new.id, position=position, role=role, job_id=made.job.id))
    await s.flush()


async def read_workflow(s: AsyncSession, workflow_id: uuid.UUID) -> WorkflowView | None:
    row = (await s.execute(select(Workflow).where(Workflow.id == workflow_id))).scalar_one_or_none()
    if row is None:
        return None
    listed = await s.execute(
        select(WorkflowJob.position, WorkflowJob.role, WorkflowJob.job_id, Job.status)
        .join(Job, Job.id == WorkflowJob.job_id)
        .where(WorkflowJob.workflow_id == workflow_id)
        .order_by(WorkflowJob.position)
    )
    members = [Member(r.position, r.role, r.job_id, JobStatus(r.status)) for r in listed]
    kind, cancelled = Kind(row.kind), row.cancelled_at is not None
    return WorkflowView(
        row.id,
        kind,
        row.name,
        row.created_at,
        row.cancelled_at,
        members,
        _state(kind, members, row.fired_at is not None, cancelled),
    )


def _state(kind: Kind, members: list[Member], fired: bool, cancelled: bool) -> WorkflowState:
    jobs = [m.status for m in members if m.role == JOB]
    if kind is Kind.CHAIN:
        return chain_state(jobs[0], cancelled) if jobs else WorkflowState.CANCELLED
    if kind is Kind.GROUP:
        return group_state(jobs, cancelled)
    due = callbacks_due(jobs) or frozenset()
    fired_ones = [m.status for m in members if m.role in due] if fired else None
    return batch_state(jobs, fired_ones, cancelled)


async def cancel_workflow(s: AsyncSession, workflow_id: uuid.UUID) -> WorkflowView | None:
    """Cancel it: every job of it not final aborted, callbacks never fired. A final
    workflow is refused (RuleViolation)."""
    view = await read_workflow(s, workflow_id)
    if view is None:
        return None
    if view.state.is_final:
        raise RuleViolation(f"Workflow '{workflow_id}' is already {view.state.value}.")
    await s.execute(
        update(Workflow).where(Workflow.id == workflow_id).values(cancelled_at=now_in(s))
    )
    for member in view.members:
        if not member.status.is_final:
            await change_status(s, member.job_id, JobStatus.ABORTED)
    return await read_workflow(s, workflow_id)


async def fire_callbacks(s: AsyncSession, workflow_id: uuid.UUID) -> bool:
    """A batch's callbacks, once its jobs are all final: the due ones approved, the
    others aborted. Exactly once: the UPDATE that sets `fired_at` wins for one
    transaction only (another waits on the row, then finds it set)."""
    view = await read_workflow(s, workflow_id)
    if view is None or view.kind is not Kind.BATCH or view.cancelled_at is not None:
        return False
    due = callbacks_due([m.status for m in view.jobs])
    if due is None:
        return False
    won = await s.execute(
        update(Workflow)
        .where(Workflow.id == workflow_id, Workflow.fired_at.is_(None))
        .where(Workflow.cancelled_at.is_(None))
        .values(fired_at=now_in(s))
        .returning(Workflow.id)
    )
    if won.first() is None:
        return False
    for callback in view.callbacks:
        if callback.role in due:
            first = select(Stage.id).where(Stage.job_id == callback.job_id, Stage.stage_order == 1)
            await approve(s, (await s.execute(first)).scalar_one())
        elif not callback.status.is_final:
            await change_status(s, callback.job_id, JobStatus.ABORTED)
    return True


async def each_due_workflow(
    db: Database,
    act: Callable[..., Awaitable[int]],
    *where: ColumnElement[bool],
    limit: int,
) -> int:
    """`act(s, workflow_id=...)` on each workflow meeting `where`, oldest first (up to
    `limit`), each in a transaction of its own, so that one that loses a race or fails
    leaves the others theirs: the maintenance tick's way with workflows. The sum of what
    the acts return (a bool counts one)."""

    async def due(s: AsyncSession) -> list[uuid.UUID]:
        query = select(Workflow.id).where(*where).order_by(Workflow.created_at).limit(limit)
        return list(await s.scalars(query))

    done = 0
    for workflow_id in await db.transaction(due):
        done += await db.transaction(partial(act, workflow_id=workflow_id))
    return done


async def fire_due_batches(db: Database, limit: int = 500) -> int:
    """The maintenance tick's share: fire the batches whose jobs all became final by
    another way than an OJS report (a v1 report, a lease or time limit run out, an
    abort). One statement finds them: the first job of a batch still open ends its look."""
    open_job = exists().where(
        WorkflowJob.workflow_id == Workflow.id,
        WorkflowJob.role == written(JOB),
        Job.id == WorkflowJob.job_id,
        Job.status.in_(_NOT_FINAL),
    )
    return await each_due_workflow(
        db,
        fire_callbacks,
        Workflow.kind == written(Kind.BATCH.value),
        Workflow.fired_at.is_(None),
        Workflow.cancelled_at.is_(None),
        ~open_job,
        limit=limit,
    )


async def parent_results(s: AsyncSession, mark: Mapping[str, Any]) -> list[Any] | None:
    """What a workflow's job sees of the jobs before it (`mark`: its task data's
    "workflow"): a chain's step the results of the steps before, in order; a batch's
    callback the results of all the batch's jobs (null for one that failed). None for
    any other job."""
    workflow_id = uuid.UUID(str(mark["id"]))
    if mark.get("kind") == Kind.CHAIN and int(mark.get("index", 0)) > 0:
        earlier = (
            select(Task.result)
            .join(Stage, Stage.id == Task.stage_id)
            .join(WorkflowJob, WorkflowJob.job_id == Task.job_id)
            .where(WorkflowJob.workflow_id == workflow_id)
            .where(Stage.stage_order <= int(mark["index"]))
            .order_by(Stage.stage_order)
        )
        return list((await s.scalars(earlier)).all())
    if mark.get("role") in CALLBACKS:
        results = (
            select(Task.result)
            .join(WorkflowJob, WorkflowJob.job_id == Task.job_id)
            .where(WorkflowJob.workflow_id == workflow_id, WorkflowJob.role == JOB)
            .order_by(WorkflowJob.position)
        )
        return list((await s.scalars(results)).all())
    return None


async def tasks_of(s: AsyncSession, view: WorkflowView) -> dict[uuid.UUID, list[dict[str, Any]]]:
    """The tasks of the workflow's jobs, by job, in stage order (a chain's, its steps),
    each with its stage's order and status (`stage_order`, `stage_status`)."""
    found = await s.execute(
        select(TASKS, Stage.stage_order, Stage.status.label("stage_status"))
        .join(Stage, Stage.id == TASKS.c.stage_id)
        .where(TASKS.c.job_id.in_([m.job_id for m in view.members]))
        .order_by(Stage.stage_order)
    )
    by_job: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for row in found.mappings():
        by_job.setdefault(row["job_id"], []).append(dict(row))
    return by_job


def mark_of(data: object) -> Mapping[str, Any] | None:
    """The workflow a task's data says its job is part of (an OJS workflow's job)."""
    mark = data.get("workflow") if isinstance(data, dict) else None
    return mark if isinstance(mark, dict) and isinstance(mark.get("id"), str) else None


def batch_of(data: object) -> uuid.UUID | None:
    """The batch whose callbacks a task's end may fire: its job is one of the batch's."""
    mark = mark_of(data)
    if mark is None or mark.get("kind") != Kind.BATCH or mark.get("role") != JOB:
        return None
    return uuid.UUID(mark["id"])
