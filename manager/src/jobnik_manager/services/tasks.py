"""Task use cases: read, find, user metadata. Claims and reports have their own modules."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.models import Job, Task
from ..domain.statuses import TaskStatus
from .pages import CreatedBetween, PageRequest, PageResult, matching, paginate


@dataclass(frozen=True, slots=True)
class TaskFilter(CreatedBetween):
    stage_id: uuid.UUID | None = None
    stage_type: str | None = None
    status: TaskStatus | None = None
    owner: str | None = None  # a producer's lists hold its own jobs' only


async def find_tasks(s: AsyncSession, f: TaskFilter, page: PageRequest) -> PageResult[Task]:
    stmt = matching(
        select(Task).order_by(Task.seq),
        (Task.stage_id, f.stage_id),
        (Task.stage_type, f.stage_type),
        (Task.status, f.status),
    )
    if f.owner is not None:
        stmt = stmt.where(Task.job_id.in_(select(Job.id).where(Job.owner == f.owner)))
    return await paginate(s, f.narrow(stmt, Task), page)
