"""A workflow's lifecycle events (workflow.started, .completed, .failed, .cancelled).

A workflow's state is worked out from its jobs whenever it is read, and many paths end a
job (an OJS or v1 report, the reaper, a time limit, an abort), in transactions that may
race: two jobs of a group ending at once each see the other still running. So the
moments are not caught in the move that makes them but noticed after it: the OJS routes
look right after their own transaction commits, and the maintenance tick looks at every
workflow still open, which catches the rest. Whoever notices first records the event:
`started_at` and `ended_at` are each set by an UPDATE that only one transaction wins, in
the transaction that writes the event's row and its message, so each is told once."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Exists, exists, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from ..db.engine import Database, now_in
from ..db.models import Job, Workflow, WorkflowEvent, WorkflowJob
from ..domain import announcements, ojs
from ..domain.statuses import JobStatus, TaskStatus
from ..domain.workflows import ENDED, STARTED, WorkflowState
from .workflows import JOB, WorkflowView, each_due_workflow, read_workflow, tasks_of

Row = dict[str, Any]
_NOT_FINAL = [status for status in JobStatus if not status.is_final]


async def record_events(s: AsyncSession, workflow_id: uuid.UUID) -> int:
    """Record the workflow's start (a job of it has begun) and its end (its state is
    final) if not recorded yet, each at the time its jobs say; how many were recorded."""
    seen = await s.execute(
        select(Workflow.started_at, Workflow.ended_at).where(Workflow.id == workflow_id)
    )
    row = seen.one_or_none()
    if row is None or row.ended_at is not None:
        return 0
    if row.started_at is not None and await s.scalar(select(_open_member(workflow_id))):
        return 0  # nothing to tell before its last job ends: not worth reading it whole
    view = await read_workflow(s, workflow_id)
    if view is None:
        return 0
    by_job = await tasks_of(s, view)
    every = [task for member in view.members for task in by_job.get(member.job_id, [])]
    steps = [t for m in view.jobs for t in by_job.get(m.job_id, [])]
    said: Row = {
        "workflow_id": str(view.id),
        "workflow_name": view.name or view.kind.value,
        "workflow_type": view.kind.value,
    }
    recorded = 0
    started = row.started_at
    begun = [t["start_time"] for t in every if t["start_time"] is not None]
    if started is None and begun:
        started = min(begun)
        if await _mark(s, workflow_id, Workflow.started_at, started):
            await _record(s, view.id, STARTED, started, said | {"total_steps": len(steps)})
            recorded += 1
    if view.state.is_final:
        ends = [t["end_time"] for t in every if t["end_time"] is not None]
        ended = view.cancelled_at or max(ends, default=now_in(s))
        if await _mark(s, workflow_id, Workflow.ended_at, ended):
            data = said | _ending(view, steps, every, started or view.created_at, ended)
            await _record(s, view.id, ENDED[view.state], ended, data)
            recorded += 1
    return recorded


def _ending(
    view: WorkflowView, steps: list[Row], every: list[Row], started: datetime, ended: datetime
) -> Row:
    """What the event of its end says: how long it took and how many steps it had, and
    when it failed, the job that failed it (the first failed for good, else the first
    cancelled) and its error."""
    said: Row = {"total_steps": len(steps)}
    said["duration_ms"] = max(0, int((ended - started).total_seconds() * 1000))
    if view.state is not WorkflowState.FAILED:
        return said
    ended_badly = [t for t in every if t["status"] == TaskStatus.FAILED] or [
        t for t in every if t["status"] != TaskStatus.COMPLETED
    ]
    if ended_badly:
        failed = ended_badly[0]
        data = failed["data"] if isinstance(failed["data"], dict) else {}
        error = ojs.error_of(failed["reason"] or "failed")
        said["failed_step_id"] = str(failed["id"])
        said["failed_step_type"] = data.get("type", failed["stage_type"])
        said["error"] = {"code": error["code"], "message": error["message"]}
    return said


async def _mark(
    s: AsyncSession, workflow_id: uuid.UUID, column: InstrumentedAttribute[Any], at: datetime
) -> bool:
    """Set the moment's column if nobody has: only one transaction wins (another waits
    on the row, then finds it set)."""
    won = await s.execute(
        update(Workflow)
        .where(Workflow.id == workflow_id, column.is_(None))
        .values({column.key: at})
        .returning(Workflow.id)
    )
    return won.first() is not None


async def _record(
    s: AsyncSession, workflow_id: uuid.UUID, kind: str, at: datetime, data: Row
) -> None:
    seq = await s.scalar(
        insert(WorkflowEvent)
        .values(workflow_id=workflow_id, type=kind, time=at, data=data)
        .returning(WorkflowEvent.seq)
    )
    body = ojs.event(event_id(int(seq or 0)), kind, at, str(workflow_id), data)
    announcements.workflow_event(s.info, kind, body, at)


def event_id(seq: int) -> str:
    """A workflow event's id: apart from the jobs' (`evt_<seq>`), whose log is another."""
    return f"evt_w{seq}"


async def watch_workflows(db: Database, limit: int = 500) -> int:
    """The maintenance tick's share: the open workflows one of whose jobs has begun
    though none was recorded, or all of whose jobs are final, their events recorded.
    One statement finds them, by the index of the open ones."""
    member = (WorkflowJob.workflow_id == Workflow.id, Job.id == WorkflowJob.job_id)
    begun = exists().where(*member, WorkflowJob.role == JOB, Job.start_time.is_not(None))
    return await each_due_workflow(
        db,
        record_events,
        Workflow.ended_at.is_(None),
        or_(Workflow.started_at.is_(None) & begun, ~_open_member(Workflow.id)),
        limit=limit,
    )


def _open_member(workflow_id: Any) -> Exists:
    """A job of the workflow (a step, or a batch's callback) not final yet."""
    return exists().where(
        WorkflowJob.workflow_id == workflow_id,
        Job.id == WorkflowJob.job_id,
        Job.status.in_(_NOT_FINAL),
    )


async def read_events(
    s: AsyncSession, kinds: list[str], after: int, limit: int, owner: str | None = None
) -> list[WorkflowEvent]:
    """The workflows' events of these types after the key `after`, oldest first, of the
    workflows of `owner` (a producer's) or all."""
    query = (
        select(WorkflowEvent)
        .where(WorkflowEvent.seq > after, WorkflowEvent.type.in_(kinds))
        .order_by(WorkflowEvent.seq)
        .limit(limit)
    )
    if owner is not None:
        query = query.join(Workflow, Workflow.id == WorkflowEvent.workflow_id).where(
            Workflow.owner == owner
        )
    return list((await s.scalars(query)).all())
