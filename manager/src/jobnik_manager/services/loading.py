"""Fetching one entity by id, optionally row-locked, or the not-found error.

A lock here is FOR NO KEY UPDATE, what PostgreSQL's own UPDATE of a non-key column
takes: it serialises control operations on the row, but does not conflict with the KEY
SHARE lock that inserting a row referencing it (a task, an event) takes through the
foreign key. With FOR UPDATE, a pause holding the job and waiting for a task row that a
claim held deadlocked with that claim waiting to log its event against the job.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.models import Job, Stage, Task
from ..domain.errors import JobNotFound, NotFound, StageNotFound, TaskNotFound

Row = TypeVar("Row", bound=Job | Stage | Task)
_MISSING: dict[type, Callable[[], NotFound]] = {
    Job: JobNotFound,
    Stage: StageNotFound,
    Task: TaskNotFound,
}


async def load(s: AsyncSession, model: type[Row], row_id: uuid.UUID, *, lock: bool = False) -> Row:
    await s.flush()  # populate_existing must not overwrite unflushed changes
    stmt = select(model).where(model.id == row_id).execution_options(populate_existing=True)
    if lock:
        stmt = stmt.with_for_update(key_share=True)
    row = (await s.execute(stmt)).scalar_one_or_none()
    if row is None:
        raise _MISSING[model]()
    return row


async def load_job(s: AsyncSession, job_id: uuid.UUID, *, lock: bool = False) -> Job:
    return await load(s, Job, job_id, lock=lock)


async def load_stage(s: AsyncSession, stage_id: uuid.UUID, *, lock: bool = False) -> Stage:
    return await load(s, Stage, stage_id, lock=lock)


async def load_task(s: AsyncSession, task_id: uuid.UUID, *, lock: bool = False) -> Task:
    return await load(s, Task, task_id, lock=lock)


async def lock_job_of_stage(s: AsyncSession, stage_id: uuid.UUID) -> tuple[Job, Stage]:
    """The stage and its job, locked in the house order (job first)."""
    job_id = (await s.execute(select(Stage.job_id).where(Stage.id == stage_id))).scalar()
    if job_id is None:
        raise StageNotFound()
    job = await load_job(s, job_id, lock=True)
    return job, await load_stage(s, stage_id, lock=True)


async def load_stages_with_jobs(
    s: AsyncSession, stage_ids: Iterable[uuid.UUID]
) -> tuple[list[Stage], list[Job]]:
    """These stages and their jobs, each once, in one statement (missing ones left out)."""
    ids = sorted(set(stage_ids))
    if not ids:
        return [], []
    rows = (
        await s.execute(
            select(Stage, Job).join(Job, Job.id == Stage.job_id).where(Stage.id.in_(ids))
        )
    ).all()
    jobs = {job.id: job for _, job in rows}
    return [stage for stage, _ in rows], list(jobs.values())
