"""Task use cases: read, find, user metadata. Claims and reports have their own modules."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import now_in
from ..db.models import Task
from ..domain.statuses import TaskStatus
from .loading import load_task
from .pages import PageRequest, PageResult, paginate


async def replace_user_metadata(
    s: AsyncSession, task_id: uuid.UUID, metadata: dict[str, Any]
) -> None:
    task = await load_task(s, task_id, lock=True)
    task.user_metadata = metadata
    task.update_time = now_in(s)


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
