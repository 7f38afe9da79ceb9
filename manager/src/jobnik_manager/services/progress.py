"""How far stages and jobs are, read when they are answered: completed tasks, and the
progress running tasks last reported (one grouped read of the running tasks)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.models import Job, Stage, Task
from ..domain.progress import job_progress, stage_progress
from ..domain.statuses import JobStatus, TaskStatus
from ..domain.summary import Summary


async def of_stages(s: AsyncSession, stages: Sequence[Stage]) -> dict[uuid.UUID, float]:
    running = [st.id for st in stages if st.status.is_active]
    in_flight: dict[uuid.UUID, float] = {}
    if running:
        rows = await s.execute(
            select(Task.stage_id, func.coalesce(func.sum(Task.progress), 0))
            .where(Task.stage_id.in_(running), Task.status == TaskStatus.IN_PROGRESS)
            .group_by(Task.stage_id)
        )
        in_flight = {stage_id: float(total or 0) for stage_id, total in rows}
    return {
        st.id: stage_progress(st.status, Summary.of_columns(st), in_flight.get(st.id, 0.0))
        for st in stages
    }


async def of_jobs(
    s: AsyncSession, jobs: Sequence[Job], stages_by_job: dict[uuid.UUID, list[Stage]]
) -> tuple[dict[uuid.UUID, float], dict[uuid.UUID, float]]:
    """Each job's progress from its stages (all of them, in `stages_by_job`), and each
    of those stages' own."""
    every = [st for job in jobs for st in stages_by_job.get(job.id, [])]
    by_stage = await of_stages(s, every)
    by_job = {
        job.id: 100.0
        if job.status is JobStatus.COMPLETED
        else job_progress([by_stage[st.id] for st in stages_by_job.get(job.id, [])])
        for job in jobs
    }
    return by_job, by_stage
