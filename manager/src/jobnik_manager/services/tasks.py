"""Task use cases: read, find, user metadata. Claims and reports have their own modules."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.models import Task
from ..domain.statuses import TaskStatus
from .pages import ANY_TIME, CreatedBetween, OwnedList, PageRequest, PageResult, matching, paginate


@dataclass(frozen=True, slots=True)
class TaskFilter(OwnedList):
    stage_id: uuid.UUID | None = None
    stage_type: str | None = None
    status: TaskStatus | None = None
    created: CreatedBetween = ANY_TIME


def tasks_query(f: TaskFilter) -> Select[tuple[Task]]:
    """The tasks `f` selects, in their order (a stage's: ix_tasks_stage_id_seq)."""
    stmt = matching(
        select(Task).order_by(Task.seq),
        (Task.stage_id, f.stage_id),
        (Task.stage_type, f.stage_type),
        (Task.status, f.status),
    )
    return f.created.narrow(f.owned(stmt, Task.job_id), Task)


async def find_tasks(s: AsyncSession, f: TaskFilter, page: PageRequest) -> PageResult[Task]:
    return await paginate(s, tasks_query(f), page)
