"""Stage use cases: append to a job, approve (set PENDING), add tasks, read and find."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.bulk import insert_alike, insert_new
from ..db.engine import now_in
from ..db.models import Job, Stage, Task
from ..domain.announcements import stage_awaits_approval, tasks_ready
from ..domain.errors import RuleViolation
from ..domain.moves import TASK_CREATED, stage_move
from ..domain.ranks import rank_of
from ..domain.statuses import StageStatus, TaskStatus
from ..domain.summary import Summary
from ..domain.transitions import Actor
from .cascade import bump_summary, complete_stage, job_stages, open_stage_for_claims
from .claimability import claimable_when_created
from .history import moved, tasks_created
from .loading import load_job, load_stage, lock_job_of_stage
from .pages import OwnedList, PageRequest, PageResult, matching, paginate
from .specs import Converted, NewStage, NewTask
from .tasks import TaskFilter, tasks_query
from .tracing import new_traceparent, new_traceparents

TaskRow = dict[str, Any]
"""A task as inserted: column name to value (the columns left out are NULL)."""
_SLICE = 2_000


# A new task's columns that may differ from its stage's other new tasks', in the order
# `insert_tasks` gives them.
_VARYING = (
    "id",
    "claimable",
    "not_before",
    "max_attempts",
    "data",
    "user_metadata",
    "traceparent",
    "tracestate",
    "retry_policy",
    "timeout_seconds",
    "expires_at",
)
_CLAIMABLE = _VARYING.index("claimable")


class CreatedTasks(Converted[TaskRow]):
    """The rows of a stage's new tasks, as inserted: each made only when read (an answer
    without its tasks reads none)."""

    def __init__(self, same: TaskRow, values: list[tuple[Any, ...]]) -> None:
        def row(varying: tuple[Any, ...]) -> TaskRow:
            made = same.copy()
            made.update(zip(_VARYING, varying, strict=True))
            return made

        super().__init__(values, row)


@dataclass(frozen=True, slots=True)
class CreatedStage:
    stage: Stage
    tasks: Sequence[TaskRow]


def _turn_has_come(previous: Stage | None) -> bool:
    """A new stage's turn has come if it is first, or if every stage before it is done."""
    return previous is None or previous.status is StageStatus.COMPLETED


def _initial_status(new: NewStage, previous: Stage | None) -> StageStatus:
    if new.start_as_waiting:
        return StageStatus.WAITING
    return StageStatus.PENDING if _turn_has_come(previous) else StageStatus.CREATED


async def insert_stage(
    s: AsyncSession,
    job: Job,
    new: NewStage,
    order: int,
    previous: Stage | None,
    now: datetime,
) -> CreatedStage:
    """Insert a stage at `order` (the caller holds the job's lock) and its tasks, if any."""
    created = stage_move(None, _initial_status(new, previous))
    stage = Stage(
        id=uuid.uuid4(),
        job_id=job.id,
        type=new.type,
        stage_order=order,
        data=new.data,
        user_metadata=new.user_metadata,
        **created.columns(now),
        percentage=0,
        # Counted here rather than by a summary UPDATE after its tasks are inserted.
        **Summary(pending=len(new.tasks)).counts(),
        running_progress=0,
        traceparent=new.traceparent or new_traceparent(job.traceparent),
        tracestate=new.tracestate,
        creation_time=now,
        retry_policy=new.retry_policy.to_json() if new.retry_policy else None,
        allowed_failures=new.allowed_failures,
        partial=False,
        timeout_seconds=new.timeout_seconds,
    )
    await insert_new(s, stage)
    await moved(s, stage, created, now)
    if stage.status == StageStatus.WAITING and _turn_has_come(previous):
        stage_awaits_approval(
            s.info, job_id=job.id, stage_id=stage.id, stage_type=stage.type, now=now
        )
    tasks = await insert_tasks(s, job, stage, new.tasks, now, counted=True) if new.tasks else []
    return CreatedStage(stage, tasks)


async def add_stage(s: AsyncSession, job_id: uuid.UUID, new: NewStage) -> CreatedStage:
    now = now_in(s)
    # The job's row lock serialises concurrent appends, so orders never collide.
    job = await load_job(s, job_id, lock=True)
    if job.status.is_final:
        raise RuleViolation(
            f"Job is {job.status}; stages cannot be added to a finished job",
            code="JOB_IN_FINITE_STATE",
        )
    last = (
        await s.execute(
            select(Stage).where(Stage.job_id == job_id).order_by(Stage.stage_order.desc()).limit(1)
        )
    ).scalar_one_or_none()
    order = last.stage_order + 1 if last else 1
    created = await insert_stage(s, job, new, order, last, now)
    job.update_time = now
    return created


async def insert_tasks(
    s: AsyncSession,
    job: Job,
    stage: Stage,
    new: Sequence[NewTask],
    now: datetime,
    *,
    counted: bool = False,
) -> CreatedTasks:
    """Insert the stage's new tasks and their events, a constant number of statements
    whatever their number (multi-row INSERTs, no ORM object per task). `counted`: the
    stage's summary already counts them (a stage created with its tasks)."""
    status = stage.status
    if status.is_final:
        raise RuleViolation(
            f"Stage is {stage.status}; tasks cannot be added to a finished stage",
            code="STAGE_IN_FINITE_STATE",
        )
    if status is StageStatus.IN_PROGRESS:
        raise RuleViolation(
            "Tasks cannot be added to a stage that is IN_PROGRESS",
            code="NOT_ALLOWED_TO_ADD_TASKS_TO_IN_PROGRESS_STAGE",
        )
    claimable = claimable_when_created(status, job.status)
    rank = rank_of(job.priority, job.priority_number)

    job_due = job.not_before if job.not_before is not None and job.not_before > now else None

    def scheduled(at: datetime) -> datetime | None:
        """When a task of its own time `at` may first be claimed, if that is to come."""
        due = at if job.not_before is None else max(at, job.not_before)
        return due if due > now else None

    def expiry(at: datetime) -> datetime:
        """From when a task expiring at `at` is never handed out: then or at its job's."""
        if at <= now:
            raise RuleViolation(
                "expiresAt must be a time to come (a task that expired would never run)",
                code="VALIDATION_ERROR",
            )
        return at if job.expires_at is None else min(at, job.expires_at)

    ids: list[uuid.UUID] = []
    spans, policy = new_traceparents(stage.traceparent), stage.retry_policy
    timeout, job_expires = stage.timeout_seconds, job.expires_at
    # What every new task of the stage has alike; the rest, one tuple per task.
    same = {
        "stage_id": stage.id,
        "job_id": job.id,
        "stage_type": stage.type,
        "priority_rank": rank,
        **TASK_CREATED.columns(now),
        "attempts": 0,
        "creation_time": now,
    }
    values: list[tuple[Any, ...]] = []

    def made() -> Iterator[tuple[Any, ...]]:
        """Each task's values, kept in `values` (and its id in `ids`) as the insert takes
        them: a large create's rows are made while PostgreSQL inserts the ones before
        (db/bulk.py lets the event loop in as it streams them)."""
        for start in range(0, len(new), _SLICE):
            chunk = new[start : start + _SLICE]
            ids.extend(
                task.id or id_ for task, id_ in zip(chunk, new_task_ids(len(chunk)), strict=True)
            )
            for task_id, p in zip(ids[start:], chunk, strict=True):
                # Most tasks bring no time of their own: the stage's and job's, read once.
                not_before = job_due if p.not_before is None else scheduled(p.not_before)
                row = (
                    task_id,
                    claimable and not_before is None,
                    not_before,
                    p.max_attempts,
                    p.data,
                    p.user_metadata,
                    p.traceparent or next(spans),
                    p.tracestate,
                    p.retry_policy.to_json() if p.retry_policy else policy,
                    p.timeout_seconds or timeout,
                    job_expires if p.expires_at is None else expiry(p.expires_at),
                )
                values.append(row)
                yield row

    if not new:
        return CreatedTasks(same, values)
    # In list order, so `seq` (the oldest-first tie-break) follows the request's order.
    await insert_alike(s, Task, same, _VARYING, made())
    await tasks_created(s, job.id, stage.id, ids, now)
    if not counted:
        await bump_summary(s, stage.id, {TaskStatus.PENDING: len(values)}, now)
    ready = sum(1 for row in values if row[_CLAIMABLE]) if claimable else 0
    if ready:
        tasks_ready(s.info, stage.type, job.id, stage.id, now, ready)
    return CreatedTasks(same, values)


def new_task_ids(n: int) -> list[uuid.UUID]:
    """n new ids in ascending order, time-ordered (RFC 9562's version 7): the creation's
    millisecond, then a counter from a random start (30 bits, across the version's
    `rand_a` and the top of `rand_b`), then 44 random bits. The unique index on tasks'
    ids then takes a create's ids at its right edge, a page after another, instead of
    on a random page each (a third of a large create's COPY, more as history grows)."""
    head = (time.time_ns() // 1_000_000) << 80 | 0x7 << 76 | 0b10 << 62
    start = int.from_bytes(os.urandom(4)) >> 3  # 2^29 more ids fit before 2^30
    noise = os.urandom(6 * n)
    ids = []
    for i in range(n):
        count = start + i
        low = int.from_bytes(noise[6 * i : 6 * i + 6]) >> 4
        ids.append(uuid.UUID(int=head | (count >> 18) << 64 | (count & 0x3FFFF) << 44 | low))
    return ids


async def add_tasks(s: AsyncSession, stage_id: uuid.UUID, new: Sequence[NewTask]) -> CreatedTasks:
    job, stage = await lock_job_of_stage(s, stage_id)
    return await insert_tasks(s, job, stage, new, now_in(s))


async def approve(s: AsyncSession, stage_id: uuid.UUID) -> None:
    """Set the stage PENDING: the approval of a WAITING stage, or an early start of a
    CREATED one. Only once the stage before it has completed."""
    now = now_in(s)
    job, stage = await lock_job_of_stage(s, stage_id)
    current = stage.status
    if current is StageStatus.PENDING:
        return
    if job.status.is_final:
        # The stage's own status allows it; its job's does not: say so.
        raise RuleViolation(
            f"Illegal status transition from {current} to {StageStatus.PENDING}: "
            f"the stage's job is {job.status}",
            code="ILLEGAL_STAGE_STATUS_TRANSITION",
        )
    approval = stage_move(current, StageStatus.PENDING, Actor.USER)
    if stage.stage_order > 1:
        previous_status = (
            await s.execute(
                select(Stage.status).where(
                    Stage.job_id == stage.job_id, Stage.stage_order == stage.stage_order - 1
                )
            )
        ).scalar_one()
        if previous_status != StageStatus.COMPLETED:
            raise RuleViolation(
                "Previous stage is not COMPLETED", code="ILLEGAL_STAGE_STATUS_TRANSITION"
            )
    await moved(s, stage, approval, now)
    if Summary.of_columns(stage).total == 0:
        await complete_stage(s, job, stage, now)  # nothing to run: its turn passes at once
    else:
        await open_stage_for_claims(s, stage, job.status, now)


async def stages_of_job(s: AsyncSession, job_id: uuid.UUID) -> list[Stage]:
    await load_job(s, job_id)
    return await job_stages(s, job_id)


@dataclass(frozen=True, slots=True)
class StageFilter(OwnedList):
    job_id: uuid.UUID | None = None
    stage_type: str | None = None
    status: StageStatus | None = None


async def find_stages(s: AsyncSession, f: StageFilter, page: PageRequest) -> PageResult[Stage]:
    stmt = matching(
        select(Stage).order_by(Stage.creation_time, Stage.stage_order, Stage.id),
        (Stage.job_id, f.job_id),
        (Stage.type, f.stage_type),
        (Stage.status, f.status),
    )
    return await paginate(s, f.owned(stmt, Stage.job_id), page)


async def tasks_by_stage(
    s: AsyncSession, stage_ids: list[uuid.UUID]
) -> dict[uuid.UUID, list[Task]]:
    grouped: dict[uuid.UUID, list[Task]] = {sid: [] for sid in stage_ids}
    if stage_ids:
        rows = await s.execute(select(Task).where(Task.stage_id.in_(stage_ids)).order_by(Task.seq))
        for task in rows.scalars():
            grouped[task.stage_id].append(task)
    return grouped


async def tasks_of_stage(
    s: AsyncSession, stage_id: uuid.UUID, page: PageRequest
) -> PageResult[Task]:
    await load_stage(s, stage_id)
    return await paginate(s, tasks_query(TaskFilter(stage_id=stage_id)), page)
