"""Unique jobs: one job per key at a time. A create that names a key held by a job
answers that job instead of making another: while it is not final, or, when the create
gives a window, until the window after the holder's creation has passed. Whoever creates
once the key is free takes it.

Settled in the database: the key's row is locked while a create looks at it, and a key
first taken by two creates at once goes to the one that commits first; the other runs
again (`KeyTakenMeanwhile`) and finds it held.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.models import Job, UniqueJobKey
from ..db.upserts import insert_for


class KeyTakenMeanwhile(Exception):
    """Another create took the key after this one looked: run this one again."""


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a key: `job` while it does; `row` whether the key has a row (locked
    against other creates until this transaction ends)."""

    job: Job | None
    row: bool


async def holder(s: AsyncSession, key: str, now: datetime) -> Holder:
    """The job holding `key` now, if any."""
    row = (
        await s.execute(select(UniqueJobKey).where(UniqueJobKey.key == key).with_for_update())
    ).scalar_one_or_none()
    if row is None:
        return Holder(None, row=False)
    job = await s.get(Job, row.job_id)
    if job is None:
        return Holder(None, row=True)
    held = now < row.expires_at if row.expires_at is not None else not job.status.is_final
    return Holder(job if held else None, row=True)


async def take(
    s: AsyncSession,
    key: str,
    job_id: uuid.UUID,
    window: timedelta | None,
    now: datetime,
    *,
    row: bool,
) -> None:
    """Give `key` to the job just made: it was free when `holder` looked, with a row
    (locked since: ours to update) or without one (inserted now, unless another create
    inserted it meanwhile)."""
    expires = now + window if window is not None else None
    if row:
        await s.execute(
            update(UniqueJobKey)
            .where(UniqueJobKey.key == key)
            .values(job_id=job_id, expires_at=expires)
            .execution_options(synchronize_session=False)
        )
        return
    inserted = await s.execute(
        insert_for(s, UniqueJobKey)
        .values(key=key, job_id=job_id, expires_at=expires)
        .on_conflict_do_nothing(index_elements=[UniqueJobKey.key])
        .returning(UniqueJobKey.key)
    )
    if inserted.scalar_one_or_none() is None:
        raise KeyTakenMeanwhile(key)
