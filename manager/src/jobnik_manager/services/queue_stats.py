"""An OJS queue's jobs by state (a stage type's tasks), for its stats (level 4,
L4-STATS-001).

The counts come from the stages' summary counters, kept in step with their tasks in
every transaction that moves one: the type's stages summed by the index on their type,
so no task row is read for them. Only the split the counters do not make is read from
the tasks: of the waiting ones, those whose time is still to come (scheduled, or a retry
waiting out its delay), through the index of tasks with a time to wait for, which holds
waiting work only. What it costs grows with the stages of the type kept (retention
bounds them), never with the other types'."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import now_in
from ..db.models import Stage, StageTypePause, Task, written_all
from ..domain.statuses import TaskStatus
from ..domain.summary import COUNTERS

_WAITING = (TaskStatus.PENDING, TaskStatus.RETRIED)


async def queue_counts(s: AsyncSession, stage_type: str) -> dict[str, int]:
    """The type's tasks by OJS state, and their `total`. A task aborted when it expired
    counts as cancelled here (INFO reads it discarded)."""
    sums = await s.execute(
        select(*(func.coalesce(func.sum(getattr(Stage, c)), 0) for c in COUNTERS)).where(
            Stage.type == stage_type
        )
    )
    counted = dict(zip(COUNTERS, (int(n) for n in sums.one()), strict=True))
    later = await s.execute(
        select(Task.status, func.count())
        .where(Task.not_before > now_in(s), Task.stage_type == stage_type)
        .where(Task.status.in_(written_all(_WAITING)))
        .group_by(Task.status)
    )
    not_due = {TaskStatus(status): int(n) for status, n in later}
    scheduled = not_due.get(TaskStatus.PENDING, 0)
    retryable = not_due.get(TaskStatus.RETRIED, 0)
    return {
        "total": sum(counted.values()),
        "pending": counted["created"],
        "scheduled": scheduled,
        "available": counted["pending"] - scheduled + counted["retried"] - retryable,
        "active": counted["in_progress"],
        "retryable": retryable,
        "completed": counted["completed"],
        "cancelled": counted["aborted"],
        "discarded": counted["failed"],
    }


async def is_paused(s: AsyncSession, stage_type: str) -> bool:
    found = await s.scalar(select(StageTypePause.type).where(StageTypePause.type == stage_type))
    return found is not None
