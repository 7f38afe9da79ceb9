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
    if f.stage_id is None:
        stmt = select(Task).order_by(Task.seq)
    else:
        # A stage's tasks in order come from ix_tasks_stage_id_seq alone. With the stage
        # as an equality, PostgreSQL may instead walk every task in `seq` order (the
        # primary key) and filter, when its statistics make the stage's tasks look
        # spread evenly: after an ANALYZE it sometimes did, for a stage whose tasks all
        # came last, reading every task ahead of them. Written as a range of one value
        # and ordered by (stage_id, seq), the order is one only that index gives.
        stmt = select(Task).where(Task.stage_id >= f.stage_id, Task.stage_id <= f.stage_id)
        stmt = stmt.order_by(Task.stage_id, Task.seq)
    stmt = matching(stmt, (Task.stage_type, f.stage_type), (Task.status, f.status))
    return f.created.narrow(f.owned(stmt, Task.job_id), Task)


async def find_tasks(s: AsyncSession, f: TaskFilter, page: PageRequest) -> PageResult[Task]:
    return await paginate(s, tasks_query(f), page)
