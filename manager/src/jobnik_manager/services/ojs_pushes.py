"""What an Open Job Spec PUSH does besides making its job, in the same transaction: the
queue's limits the job brings (`options.rate_limit`: a stage type's limits), and its
unique policy (`options.unique`) over our unique-key rows, keyed by the job's
fingerprint: a duplicate in one of the policy's states is refused, answered in the new
one's place, or cancelled and replaced."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import now_in
from ..db.models import StageTypeLimit, Task, UniqueJobKey
from ..domain import ojs
from ..domain.ojs import State
from ..domain.ojs_unique import OnConflict, UniquePolicy
from ..domain.statuses import JobStatus
from . import unique_jobs
from .jobs import change_status, create_job
from .specs import NewJob
from .stage_type_limits import LimitSpec, set_limit


@dataclass(frozen=True, slots=True)
class Push:
    job: NewJob  # one stage (the queue) of one task (the OJS job, its id set)
    unique: tuple[UniquePolicy, str] | None = None  # the policy and the fingerprint
    limits: LimitSpec | None = None


class Duplicate(Exception):
    """A job with the fingerprint is in one of the policy's states (or, for a replace,
    active: a running job is not replaced under its worker)."""

    def __init__(self, task_id: uuid.UUID, state: State) -> None:
        super().__init__(f"Job '{task_id}' ({state.value}) is a duplicate of this one.")
        self.task_id, self.state = task_id, state


async def push_jobs(s: AsyncSession, pushes: Sequence[Push]) -> list[tuple[uuid.UUID, bool]]:
    """Each push's job made (or, ignored as a duplicate, the existing one): its task's
    id and whether it was made. All or none: a Duplicate refusal undoes the others."""
    done = []
    for push in pushes:
        if push.limits is not None:
            await _limit(s, push.job.stages[0].type, push.limits)
        if push.unique is None:
            await create_job(s, push.job)
            done.append((_task_id(push.job), True))
        else:
            done.append(await _push_unique(s, push.job, *push.unique))
    return done


async def _push_unique(
    s: AsyncSession, job: NewJob, policy: UniquePolicy, key: str
) -> tuple[uuid.UUID, bool]:
    now = now_in(s)
    row = (
        await s.execute(select(UniqueJobKey).where(UniqueJobKey.key == key).with_for_update())
    ).scalar_one_or_none()
    if row is not None and (row.expires_at is None or now < row.expires_at):
        held = (await s.execute(select(Task).where(Task.job_id == row.job_id))).scalars().first()
        state = (
            None
            if held is None
            else ojs.state_of(held.status, held.not_before, now, held.reason, held.claimable)
        )
        if held is not None and state is not None and policy.is_duplicate(state):
            if policy.on_conflict is OnConflict.IGNORE:
                return held.id, False
            if policy.on_conflict is OnConflict.REJECT or state is State.ACTIVE:
                raise Duplicate(held.id, state)
            await change_status(s, held.job_id, JobStatus.ABORTED)
            if policy.on_conflict is OnConflict.REPLACE_EXCEPT_SCHEDULE and held.not_before:
                job = _at(job, held)
    made = await create_job(s, job)
    await unique_jobs.take(s, key, made.job.id, policy.period, now, row=row is not None)
    return _task_id(job), True


def _task_id(job: NewJob) -> uuid.UUID:
    task_id = job.stages[0].tasks[0].id
    assert task_id is not None  # an OJS job's id is set when its body is read
    return task_id


def _at(job: NewJob, held: Task) -> NewJob:
    """The new job, at the time the one it replaces was scheduled for."""
    stage = job.stages[0]
    task = replace(stage.tasks[0], not_before=held.not_before)
    return replace(job, stages=[replace(stage, tasks=[task])])


async def _limit(s: AsyncSession, queue: str, limits: LimitSpec) -> None:
    """The queue takes the job's limits, unless it has them already (set again, its
    bucket would refill at every push)."""
    row = await s.get(StageTypeLimit, queue)
    has = None if row is None else (row.max_in_flight, row.rate, row.burst if row.rate else None)
    if has != (limits.max_in_flight, limits.rate, limits.burst if limits.rate else None):
        await set_limit(s, queue, limits)
