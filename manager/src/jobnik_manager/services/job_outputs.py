"""What a job produced: the result one of its tasks set, and the assets (outputs: a type,
where it is, its size) its tasks recorded. Tasks add them as they add to their job's
history: while a task runs, only the holder of its lease (services.task_events).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import now_in, principal_in
from ..db.models import JOBS, JobAsset
from .loading import load_job, load_task
from .pages import PageRequest, PageResult, paginate
from .task_events import holder_only


@dataclass(frozen=True, slots=True)
class NewAsset:
    type: str
    uri: str
    size_bytes: int | None = None
    name: str | None = None


async def add_assets(
    s: AsyncSession, task_id: uuid.UUID, assets: Sequence[NewAsset], lease_id: uuid.UUID | None
) -> list[JobAsset]:
    """Record the task's outputs with its job, in the order given."""
    now = now_in(s)
    task = await load_task(s, task_id)
    holder_only(task, lease_id, now, "outputs")
    principal = principal_in(s)
    rows = [
        {
            "id": uuid.uuid4(),
            "job_id": task.job_id,
            "task_id": task.id,
            "type": a.type,
            "uri": a.uri,
            "size_bytes": a.size_bytes,
            "name": a.name,
            "created_at": now,
            "position": position,
            "principal": principal,
        }
        for position, a in enumerate(assets)
    ]
    await s.execute(insert(JobAsset), rows)
    return [JobAsset(**row) for row in rows]


async def set_job_result(
    s: AsyncSession, task_id: uuid.UUID, result: dict[str, Any], lease_id: uuid.UUID | None
) -> uuid.UUID:
    """Set the task's job's result (the last one set stands); answers the job's id."""
    now = now_in(s)
    task = await load_task(s, task_id)
    holder_only(task, lease_id, now, "its job's result")
    await s.execute(update(JOBS).where(JOBS.c.id == task.job_id).values(result=result))
    return task.job_id


async def list_assets(
    s: AsyncSession, job_id: uuid.UUID, page: PageRequest
) -> PageResult[JobAsset]:
    """One page of the job's assets, oldest first, and how many it has."""
    await load_job(s, job_id)  # 404 for a job that is not there
    stmt = (
        select(JobAsset)
        .where(JobAsset.job_id == job_id)
        .order_by(JobAsset.created_at, JobAsset.position)
    )
    return await paginate(s, stmt, page)
