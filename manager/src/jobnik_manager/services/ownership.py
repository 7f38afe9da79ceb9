"""What the authorization rules need to know of the job, stage or task a request names:
its job's owner and the stage types it concerns."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.models import Job, Stage, Task, Workflow, WorkflowJob
from ..domain.auth import Facts


async def of_job(s: AsyncSession, job_id: uuid.UUID) -> Facts:
    owner = await s.execute(select(Job.owner).where(Job.id == job_id))
    row = owner.first()
    if row is None:
        return Facts()
    types = await s.scalars(select(Stage.type).where(Stage.job_id == job_id))
    return Facts(True, row.owner, frozenset(types))


async def of_stage(s: AsyncSession, stage_id: uuid.UUID) -> Facts:
    row = (
        await s.execute(
            select(Job.owner, Stage.type)
            .join(Job, Job.id == Stage.job_id)
            .where(Stage.id == stage_id)
        )
    ).first()
    return Facts() if row is None else Facts(True, row.owner, frozenset([row.type]))


async def of_tasks(s: AsyncSession, task_ids: Iterable[uuid.UUID]) -> Facts:
    """Of several tasks at once (a batch): their owners must agree to be known."""
    ids = sorted(set(task_ids))
    if not ids:
        return Facts()
    rows = (
        await s.execute(
            select(Job.owner, Task.stage_type)
            .join(Job, Job.id == Task.job_id)
            .where(Task.id.in_(ids))
        )
    ).all()
    if not rows:
        return Facts()
    owners = {r.owner for r in rows}
    return Facts(
        True, owners.pop() if len(owners) == 1 else None, frozenset(r.stage_type for r in rows)
    )


async def of_workflow(s: AsyncSession, workflow_id: uuid.UUID) -> Facts:
    owner = (await s.execute(select(Workflow.owner).where(Workflow.id == workflow_id))).first()
    if owner is None:
        return Facts()
    types = await s.scalars(
        select(Stage.type)
        .join(WorkflowJob, WorkflowJob.job_id == Stage.job_id)
        .where(WorkflowJob.workflow_id == workflow_id)
    )
    return Facts(True, owner.owner, frozenset(types))
