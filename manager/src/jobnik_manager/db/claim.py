"""The claim query: the one statement on the hot path of every worker.

It reads the partial index `ix_tasks_claim`, which holds only claimable tasks, in
(stage_type, priority_rank, seq) order, so its cost does not grow with finished
history or with paused and waiting work. PostgreSQL skips rows another claimer has
locked; on SQLite the transaction already holds the database's write lock.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from .models import Task


async def claim_next(s: AsyncSession, stage_type: str) -> Task | None:
    stmt = (
        select(Task)
        .where(Task.claimable, Task.stage_type == stage_type)
        .order_by(Task.priority_rank, Task.seq)
        .limit(1)
        .with_for_update(skip_locked=True)
    )
    return (await s.execute(stmt)).scalar_one_or_none()
