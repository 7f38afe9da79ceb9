"""How far stages and jobs are, read when they are answered: from each stage's counters
(its completed tasks, and the progress its running tasks last reported, which the
database keeps summed in `running_progress`), never by walking its tasks."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from ..db.models import Job, Stage
from ..domain.progress import job_progress, stage_progress
from ..domain.statuses import JobStatus
from ..domain.summary import Summary


def of_stage(st: Stage) -> float:
    return stage_progress(st.status, Summary.of_columns(st), float(st.running_progress or 0))


def of_stages(stages: Sequence[Stage]) -> dict[uuid.UUID, float]:
    return {st.id: of_stage(st) for st in stages}


def of_job(job: Job, stages: Sequence[Stage]) -> float:
    """A job's progress from all of its stages."""
    if job.status is JobStatus.COMPLETED:
        return 100.0
    return job_progress([of_stage(st) for st in stages])


def of_jobs(
    jobs: Sequence[Job], stages_by_job: dict[uuid.UUID, list[Stage]]
) -> tuple[dict[uuid.UUID, float], dict[uuid.UUID, float]]:
    """Each job's progress from its stages (all of them, in `stages_by_job`), and each
    of those stages' own."""
    by_stage = of_stages([st for job in jobs for st in stages_by_job.get(job.id, [])])
    by_job = {job.id: of_job(job, stages_by_job.get(job.id, [])) for job in jobs}
    return by_job, by_stage
