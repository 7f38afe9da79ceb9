"""Expired leases become failed attempts; retries whose delay is over become claimable."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime
from functools import partial

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import Database, now_in
from ..db.models import Task, written
from ..domain.statuses import TaskStatus
from ..services.reports import expire_leases

REAP_BATCH = 100


def due_scan(now: datetime) -> Select[uuid.UUID]:
    """The running tasks whose lease ran out by `now`, oldest first, locked."""
    return (
        select(Task.id)
        .where(Task.status == written(TaskStatus.IN_PROGRESS), Task.lease_expires_at < now)
        .order_by(Task.lease_expires_at)
        .limit(REAP_BATCH)
        .with_for_update(skip_locked=True)
    )


async def reap_some(s: AsyncSession) -> int:
    """Settle up to REAP_BATCH expired leases, oldest first, as one set-based batch;
    rows another replica is settling are skipped."""
    now = now_in(s)
    task_ids = list((await s.execute(due_scan(now))).scalars())
    if task_ids:
        await expire_leases(s, task_ids, now)
    return len(task_ids)


async def in_batches(
    db: Database, step: Callable[[AsyncSession], Awaitable[int]], batch: int, limit: int
) -> int:
    """Run `step` (which handles up to `batch` rows) a transaction at a time until it
    handles fewer, or `limit` rows in all; returns how many it handled."""
    done = 0
    while done < limit:
        n = await db.transaction(step)
        done += n
        if n < batch:
            break
    return done


async def each_due(
    db: Database,
    due: Select[uuid.UUID],
    step: Callable[..., Awaitable[bool]],
) -> int:
    """Run `step(session, job_id=...)` for each job `due` selects, each in a transaction
    of its own (the job's rows are locked and checked again there); how many it acted on."""
    async with db.sessions() as s:
        ids = list((await s.execute(due)).scalars())
    acted = 0
    for job_id in ids:
        if await db.transaction(partial(step, job_id=job_id)):
            acted += 1
    return acted


async def reap_expired(db: Database, limit: int = 1000) -> int:
    """Settle up to `limit` expired leases; returns how many."""
    return await in_batches(db, reap_some, REAP_BATCH, limit)
