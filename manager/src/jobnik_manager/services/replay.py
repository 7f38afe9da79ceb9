"""Replaying a failed job: its failed stage runs again.

The failed stage's FAILED and ABORTED tasks get a fresh set of attempts and are offered
again at once; the stage and the job go back to IN_PROGRESS, and the job's event history
says who asked and when. Its tasks still running when it failed keep running, and its
completed tasks stay done. Everything happens under the job's lock, so a report or a
pause waits for it (or it for them) and each task is handed out once.
"""

from __future__ import annotations

import uuid

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from jobnik_protocol.wire import SystemReason

from ..db.engine import now_in
from ..db.models import TASKS, Stage, Task
from ..domain.errors import Conflict
from ..domain.moves import job_move, stage_move, task_move
from ..domain.statuses import JobStatus, StageStatus, TaskStatus
from ..domain.transitions import Actor
from .cascade import recount
from .claimability import open_tasks
from .history import move_tasks, moved
from .loading import load_job

_REPLAYED = (TaskStatus.FAILED, TaskStatus.ABORTED)


class JobNotFailed(Conflict):
    code = "JOB_NOT_FAILED"


async def retry_job(s: AsyncSession, job_id: uuid.UUID) -> None:
    now = now_in(s)
    job = await load_job(s, job_id, lock=True)
    if job.status is not JobStatus.FAILED:
        raise JobNotFailed(f"Job is {job.status}; only a FAILED job can be retried")
    stage = (
        await s.execute(
            select(Stage)
            .where(Stage.job_id == job.id, Stage.status == StageStatus.FAILED)
            .with_for_update(key_share=True)
        )
    ).scalar_one()
    replayed = await move_tasks(
        s,
        [Task.stage_id == stage.id],
        [task_move(source, TaskStatus.PENDING, Actor.REPLAY) for source in _REPLAYED],
        now,
        reason=SystemReason.RETRIED_BY_USER,
        attempts=0,
        not_before=None,
        lease_id=None,
        lease_expires_at=None,
        lease_seconds=None,
    )
    if replayed:  # their last failure is the job's history now, not theirs
        ids = [t.id for t in replayed]
        await s.execute(update(TASKS).where(TASKS.c.id.in_(ids)).values(reason=None))
    await recount(s, [stage.id], now)
    stage.reason = None
    await moved(s, stage, stage_move(stage.status, StageStatus.IN_PROGRESS, Actor.REPLAY), now)
    job.reason = job.failed_task_id = job.failed_stage_id = None
    replay = job_move(job.status, JobStatus.IN_PROGRESS, Actor.REPLAY)
    await moved(s, job, replay, now, reason=SystemReason.RETRIED_BY_USER)
    await s.flush()
    await open_tasks(s, [TASKS.c.stage_id == stage.id], now)
