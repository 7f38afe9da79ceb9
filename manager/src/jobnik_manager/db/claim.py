"""The claim query: the one statement on the hot path of every worker.

It reads the partial index `ix_tasks_claim`, which holds only claimable tasks, in
(stage_type, priority_rank, seq) order, so its cost does not grow with finished
history or with paused, waiting or delayed work. PostgreSQL skips rows another
claimer has locked; on SQLite the transaction already holds the database's write lock.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from .models import Task


async def claim_next(s: AsyncSession, stage_types: Sequence[str], limit: int = 1) -> list[Task]:
    """Lock up to `limit` claimable tasks of these types: best priority, then oldest."""
    stmt = select(Task).where(Task.claimable)
    if len(stage_types) == 1:
        # Equality keeps the plan a plain ordered index scan.
        stmt = stmt.where(Task.stage_type == stage_types[0])
    else:
        stmt = stmt.where(Task.stage_type.in_(stage_types))
    stmt = (
        stmt.order_by(Task.priority_rank, Task.seq)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .execution_options(populate_existing=True)
    )
    return list((await s.execute(stmt)).scalars())
