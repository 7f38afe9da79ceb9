"""Claiming tasks (dequeue and batch claim): each claim takes a lease."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.claim import claim_next
from ..db.models import Job, Stage, Task
from ..db.types import utcnow
from ..domain.leases import DEFAULT_LEASE
from ..domain.statuses import JobStatus, StageStatus, TaskStatus
from .cascade import bump_summary
from .history import Entity, insert_rows, task_row


async def claim_tasks(
    s: AsyncSession,
    stage_types: Sequence[str],
    *,
    limit: int = 1,
    lease: timedelta | None = None,
    worker: str | None = None,
) -> list[Task]:
    """Claim up to `limit` tasks of these stage types: highest job priority, then oldest."""
    now = utcnow()
    lease = lease or DEFAULT_LEASE
    tasks = await claim_next(s, stage_types, limit)
    if not tasks:
        return []
    moves: dict[uuid.UUID, Counter[TaskStatus]] = {}
    events = []
    for task in tasks:
        previous = TaskStatus(task.status)
        moves.setdefault(task.stage_id, Counter())[previous] += 1
        task.status = TaskStatus.IN_PROGRESS
        task.claimable = False
        task.start_time = now
        task.update_time = now
        task.lease_id = uuid.uuid4()
        task.lease_expires_at = now + lease
        task.lease_seconds = lease.total_seconds()
        task.worker = worker
        task.progress = None
        events.append(task_row(task, previous, TaskStatus.IN_PROGRESS, now, None))
    await s.flush()
    await insert_rows(s, events)
    # Stage rows in one order, so two batch claimers never wait on each other in a cycle.
    for stage_id in sorted(moves):
        counts = moves[stage_id]
        delta: dict[TaskStatus, int] = {status: -n for status, n in counts.items()}
        delta[TaskStatus.IN_PROGRESS] = sum(counts.values())
        await bump_summary(s, stage_id, delta, now)
    await _start(s, sorted(moves), sorted({t.job_id for t in tasks}), now)
    return tasks


async def _start(
    s: AsyncSession, stage_ids: list[uuid.UUID], job_ids: list[uuid.UUID], now: datetime
) -> None:
    """First claims start their stages and jobs. The status guard makes these no-ops
    (and lock-free on PostgreSQL) once they have started."""
    started_stages = await s.execute(
        update(Stage)
        .where(Stage.id.in_(stage_ids), Stage.status == StageStatus.PENDING)
        .values(status=StageStatus.IN_PROGRESS, update_time=now)
        .returning(Stage.id, Stage.job_id, Stage.type)
        .execution_options(synchronize_session=False)
    )
    rows = [
        {
            "job_id": r.job_id,
            "entity": Entity.STAGE,
            "entity_id": r.id,
            "stage_id": r.id,
            "stage_type": r.type,
            "from_status": StageStatus.PENDING,
            "to_status": StageStatus.IN_PROGRESS,
            "time": now,
        }
        for r in started_stages
    ]
    started_jobs = await s.execute(
        update(Job)
        .where(Job.id.in_(job_ids), Job.status == JobStatus.PENDING)
        .values(status=JobStatus.IN_PROGRESS, update_time=now)
        .returning(Job.id)
        .execution_options(synchronize_session=False)
    )
    rows += [
        {
            "job_id": job_id,
            "entity": Entity.JOB,
            "entity_id": job_id,
            "from_status": JobStatus.PENDING,
            "to_status": JobStatus.IN_PROGRESS,
            "time": now,
        }
        for job_id in started_jobs.scalars()
    ]
    await insert_rows(s, rows)
