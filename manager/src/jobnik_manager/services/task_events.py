"""Entries a task's worker adds to its job's history (`POST /v1/tasks/{id}/events`).

While the task runs, only the holder of its lease may add one (409 LEASE_LOST for
anyone else); a task not running takes entries from anyone (a person's note, say).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import now_in, principal_in
from ..db.models import EVENTS, Event, Task
from ..domain.errors import LeaseLost, RuleViolation
from ..domain.leases import lease_is_live
from ..domain.moves import task_entry
from ..domain.statuses import TaskStatus
from ..domain.task_events import EventLevel
from .loading import load_task


@dataclass(frozen=True, slots=True)
class NewTaskEvent:
    name: str
    level: EventLevel = EventLevel.INFO
    message: str | None = None
    fields: dict[str, Any] | None = None
    lease_id: uuid.UUID | None = None


def holder_only(task: Task, lease_id: uuid.UUID | None, now: datetime, what: str) -> bool:
    """Whether `task` runs, after checking that a caller naming `lease_id` may add `what`
    to it: while it runs, only the holder of its live lease may (LeaseLost otherwise)."""
    running = task.status is TaskStatus.IN_PROGRESS
    if running and lease_id is None:
        raise RuleViolation(
            f"leaseId is required while the task runs: only its holder adds {what}",
            code="VALIDATION_ERROR",
        )
    if lease_id is not None and not lease_is_live(
        task.status, task.lease_id, task.lease_expires_at, lease_id, now
    ):
        raise LeaseLost()
    return running


async def add_task_event(s: AsyncSession, task_id: uuid.UUID, new: NewTaskEvent) -> Event:
    now = now_in(s)
    task = await load_task(s, task_id)
    running = holder_only(task, new.lease_id, now, "to its history")
    entry = task_entry(
        job_id=task.job_id,
        task_id=task.id,
        stage_id=task.stage_id,
        attempt=task.attempts,
        # Not running: no lease, nor worker, to name; it is not anyone's attempt now.
        lease_id=task.lease_id if running else None,
        worker=task.worker if running else None,
        now=now,
        principal=principal_in(s),
    )
    values = entry | {
        "name": new.name,
        "level": new.level,
        "message": new.message,
        "fields": new.fields,
    }
    row = (await s.execute(insert(EVENTS).values(values).returning(*EVENTS.c))).one()
    return Event(**row._mapping)
