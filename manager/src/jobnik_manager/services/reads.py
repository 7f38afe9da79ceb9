"""One job, stage or task by id, with its progress: a key lookup each (db/reads.py; a
stage's or a job's with those other requests are reading at the same time,
services/batching.py), the progress from the stages' counters (services/progress.py)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from ..db import reads
from ..db.engine import Database
from ..db.models import Job, Stage
from ..domain.errors import JobNotFound, StageNotFound, TaskNotFound
from . import batching, progress


async def task(db: Database, task_id: uuid.UUID) -> Mapping[str, Any]:
    """The task's columns."""
    columns = await reads.task_columns(db, task_id)
    if columns is None:
        raise TaskNotFound()
    return columns


async def stage(db: Database, stage_id: uuid.UUID) -> tuple[Stage, float]:
    """The stage and its progress."""
    st = await batching.stage(db, stage_id)
    if st is None:
        raise StageNotFound()
    return st, progress.of_stage(st)


async def job(db: Database, job_id: uuid.UUID) -> tuple[Job, float]:
    """The job and its progress."""
    found = await batching.job(db, job_id)
    if found is None:
        raise JobNotFound()
    j, stages = found
    return j, progress.of_job(j, stages)
