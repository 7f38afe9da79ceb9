"""Job use cases: create (optionally with stages and tasks), read, find, control, delete."""

from __future__ import annotations

import uuid
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, exists, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from jobnik_protocol.wire import SystemReason

from ..db.bulk import FEW_ROWS, insert_new
from ..db.deferred import gathered
from ..db.engine import now_in
from ..db.models import DeadLetterDiscard, Event, Job, JobAsset, Stage, Task
from ..domain.errors import RuleViolation
from ..domain.moves import JOB_CREATED, job_move
from ..domain.progress import job_percentage, resumed_job_status
from ..domain.ranks import rank_of
from ..domain.statuses import JobStatus, Priority, StageStatus
from ..domain.transitions import Actor
from .cascade import (
    abort_unfinished,
    close_job_for_claims,
    complete_stage,
    job_stages,
    open_stage_for_claims,
)
from .history import moved
from .loading import load_job, load_stage
from .pages import ANY_TIME, CreatedBetween, OwnedList, PageRequest, PageResult, matching, paginate
from .specs import NewJob
from .stages import CreatedStage, insert_stage
from .tracing import new_traceparent


@dataclass(frozen=True, slots=True)
class CreatedJob:
    job: Job
    stages: list[CreatedStage]


async def create_job(s: AsyncSession, new: NewJob, *, rows_at_commit: bool = False) -> CreatedJob:
    """Insert the job `new` with its stages and tasks.

    `rows_at_commit`: a small create's rows may wait for the commit, to go in one
    statement with what the commit writes (`deferred.gathered(until_commit=True)`); only
    for a caller that reads and inserts nothing more in the transaction."""
    now = now_in(s)
    if new.expires_at is not None and new.expires_at <= now:
        raise RuleViolation(
            "expiresAt must be a time to come (a job that expired would never run)",
            code="VALIDATION_ERROR",
        )
    job = Job(
        id=uuid.uuid4(),
        name=new.name,
        data=new.data,
        user_metadata=new.user_metadata,
        priority=new.priority,
        priority_number=new.priority_number,
        **JOB_CREATED.columns(now),
        percentage=0,
        traceparent=new.traceparent or new_traceparent(),
        tracestate=new.tracestate,
        creation_time=now,
        partial=False,
        not_before=new.not_before if new.not_before and new.not_before > now else None,
        deadline=new.deadline,
        owner=new.owner,
        unique_key=new.unique_key,
        expires_at=new.expires_at,
    )
    stages: list[CreatedStage] = []
    # A few rows per table: one statement for them all (a small create is a task's
    # latency); many go as bulk loads, each after the rows it refers to.
    few = all(len(st.tasks) <= FEW_ROWS for st in new.stages)
    # An empty first stage is passed at once, which reads the rows back.
    empty_first = bool(new.stages) and new.stages[0].without_tasks
    until_commit = rows_at_commit and not empty_first
    async with gathered(s, until_commit=until_commit) if few else nullcontext():
        await insert_new(s, job)
        await moved(s, job, JOB_CREATED, now)
        for order, new_stage in enumerate(new.stages, start=1):
            previous = stages[-1].stage if stages else None
            stages.append(await insert_stage(s, job, new_stage, order, previous, now))
    if empty_first and stages[0].stage.status is StageStatus.PENDING:
        return await _pass_empty_first_stage(s, job.id, stages, now)
    return CreatedJob(job, stages)


async def _pass_empty_first_stage(
    s: AsyncSession, job_id: uuid.UUID, stages: list[CreatedStage], now: datetime
) -> CreatedJob:
    """The first stage's turn comes with the job: with no tasks, it passes at once, as a
    later empty stage's does when the one before completes. The rows were inserted
    around the session; these are its own, as they stand after."""
    job = await load_job(s, job_id, lock=True)
    await complete_stage(s, job, await load_stage(s, stages[0].stage.id, lock=True), now)
    await s.flush()
    now_stages = {st.id: st for st in await job_stages(s, job_id)}
    return CreatedJob(job, [CreatedStage(now_stages[c.stage.id], c.tasks) for c in stages])


@dataclass(frozen=True, slots=True)
class JobFilter(OwnedList):
    name: str | None = None
    priority: Priority | None = None
    statuses: frozenset[JobStatus] = frozenset()  # any of these; none: any status
    created: CreatedBetween = ANY_TIME
    newest_first: bool = False
    # The first and last id of those an id prefix starts (domain/id_prefix.py).
    ids: tuple[uuid.UUID, uuid.UUID] | None = None
    # Jobs whose name holds this text, in any case (a trigram index serves it on
    # PostgreSQL, from three characters).
    name_contains: str | None = None


async def find_jobs(s: AsyncSession, f: JobFilter, page: PageRequest) -> PageResult[Job]:
    order = (
        (Job.creation_time.desc(), Job.id.desc()) if f.newest_first else (Job.creation_time, Job.id)
    )
    stmt = matching(
        select(Job).order_by(*order),
        (Job.name, f.name),
        (Job.priority, f.priority),
    )
    if f.statuses:
        stmt = stmt.where(Job.status.in_(sorted(f.statuses)))
    if f.owner is not None:
        stmt = stmt.where(Job.owner == f.owner)
    if f.ids is not None:
        stmt = stmt.where(Job.id.between(*f.ids))
    if f.name_contains is not None:
        stmt = stmt.where(Job.name.icontains(f.name_contains, autoescape=True))
    return await paginate(s, f.created.narrow(stmt, Job), page)


async def stages_by_job(s: AsyncSession, job_ids: list[uuid.UUID]) -> dict[uuid.UUID, list[Stage]]:
    grouped: dict[uuid.UUID, list[Stage]] = {jid: [] for jid in job_ids}
    if job_ids:
        rows = await s.execute(
            select(Stage).where(Stage.job_id.in_(job_ids)).order_by(Stage.stage_order)
        )
        for stage in rows.scalars():
            grouped[stage.job_id].append(stage)
    return grouped


async def change_priority(s: AsyncSession, job_id: uuid.UUID, priority: Priority) -> bool:
    """Returns False when the job already had this priority (nothing changes)."""
    if (await load_job(s, job_id)).priority == priority:
        return False
    # The claim index orders by the task's copy of the priority. Tasks first, the job
    # row last, in the order a claim takes them (tasks, stages, jobs): the other way a
    # first claim of the job and this deadlock, and one waits a second to be told.
    await s.execute(
        update(Task)
        .where(Task.job_id == job_id)
        .values(priority_rank=rank_of(priority))
        .execution_options(synchronize_session=False)
    )
    job = await load_job(s, job_id, lock=True)
    job.priority = priority
    job.priority_number = None  # a number it was pushed with gives way to the new level
    job.update_time = now_in(s)
    return True


async def change_status(s: AsyncSession, job_id: uuid.UUID, target: JobStatus) -> None:
    """A person pauses, resumes or aborts the job."""
    now = now_in(s)
    if target is JobStatus.ABORTED:
        await _abort(s, job_id, now)
        return
    job = await load_job(s, job_id, lock=True)
    move = job_move(job.status, target, Actor.USER)
    if target is JobStatus.PAUSED:
        await moved(s, job, move, now)
        await close_job_for_claims(s, job.id)
    else:
        await _resume(s, job, now)


async def _abort(s: AsyncSession, job_id: uuid.UUID, now: datetime) -> None:
    # Tasks first, the job row last: a worker settling a task holds that task and then
    # takes the job, so taking the job first here would deadlock with every report.
    seen = await load_job(s, job_id)
    job_move(seen.status, JobStatus.ABORTED, Actor.USER)  # refused before any task moves
    await abort_unfinished(s, job_id, now)
    job = await load_job(s, job_id, lock=True)
    # The job may have finished while its tasks were being aborted; then nothing happens.
    await moved(s, job, job_move(job.status, JobStatus.ABORTED, Actor.USER), now)
    job.reason = SystemReason.ABORTED_BY_USER
    job.percentage = job_percentage([st.status for st in await job_stages(s, job_id)])


async def _resume(s: AsyncSession, job: Job, now: datetime) -> None:
    """The person asks for PENDING (checked by the caller's move); the job takes the
    status its stages imply."""
    stages = await job_stages(s, job.id)
    started = (
        await s.execute(select(exists().where(Task.job_id == job.id, Task.start_time.is_not(None))))
    ).scalar_one()
    implied = resumed_job_status([st.status for st in stages], bool(started))
    if implied is JobStatus.COMPLETED:
        job.percentage = 100
        job.partial = any(st.partial for st in stages)
    else:
        for stage in stages:
            if stage.status.is_active:
                await open_stage_for_claims(s, stage, implied, now)
            elif stage.status is not StageStatus.COMPLETED:
                break
    # Logged (and announced) after the tasks it made ready, as a claim would see them.
    await moved(s, job, job_move(job.status, implied), now)


async def delete_job(s: AsyncSession, job_id: uuid.UUID) -> None:
    job = await load_job(s, job_id, lock=True)
    if not job.status.is_final:
        raise RuleViolation(
            f"Job is {job.status}; only a COMPLETED, FAILED or ABORTED job can be deleted",
            code="JOB_NOT_IN_FINITE_STATE",
        )
    # Explicit deletes, children first: events and tasks have no foreign key to their
    # job on PostgreSQL (db/models.py, `_job_key`), and the rest need not depend on the
    # driver's cascade.
    await s.execute(delete(Event).where(Event.job_id == job_id))
    await s.execute(delete(Task).where(Task.job_id == job_id))
    await s.execute(delete(Stage).where(Stage.job_id == job_id))
    await s.execute(delete(JobAsset).where(JobAsset.job_id == job_id))
    await s.execute(delete(DeadLetterDiscard).where(DeadLetterDiscard.job_id == job_id))
    await s.execute(delete(Job).where(Job.id == job_id))
