"""An operator's purge of a stage type (an OJS queue): its jobs deleted, those not yet
final aborted first, by the same moves as a user's abort and delete. Only jobs of that
type alone: a job with a stage of another type is left for its own operator."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from functools import partial

from sqlalchemy import exists, false, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from ..db.engine import Database
from ..db.models import Stage
from ..domain.statuses import JobStatus, TaskStatus
from ..domain.summary import summary_field
from .jobs import change_status, delete_job
from .loading import load_job

BATCH = 200


async def purge_stage_type(db: Database, stage_type: str, statuses: Collection[TaskStatus]) -> int:
    """Delete the jobs of `stage_type` alone that hold a task in `statuses`; how many."""
    purged = 0
    while True:
        found = await db.transaction(partial(_some, stage_type=stage_type, statuses=statuses))
        for job_id in found:
            # Two transactions: the abort's event rows are written as its transaction
            # ends, and must find their job still there.
            await db.transaction(partial(_abort_unfinished, job_id=job_id))
            await db.transaction(partial(delete_job, job_id=job_id))
        purged += len(found)
        if len(found) < BATCH:
            return purged


async def _some(
    s: AsyncSession, *, stage_type: str, statuses: Collection[TaskStatus]
) -> list[uuid.UUID]:
    # Found by the stages of the type and their summaries (a task in `statuses` is a
    # counter above zero), not the tasks: the tasks table has no index by type but the
    # claim index, and was read whole for each batch of jobs purged.
    other = aliased(Stage)
    elsewhere = exists().where(other.job_id == Stage.job_id, other.type != stage_type)
    holding = [getattr(Stage, summary_field(status)) > 0 for status in statuses]
    rows = await s.execute(
        select(Stage.job_id)
        .where(Stage.type == stage_type, or_(false(), *holding), ~elsewhere)
        .distinct()
        .limit(BATCH)
    )
    return list(rows.scalars())


async def _abort_unfinished(s: AsyncSession, *, job_id: uuid.UUID) -> None:
    job = await load_job(s, job_id, lock=True)
    if not job.status.is_final:
        await change_status(s, job_id, JobStatus.ABORTED)
