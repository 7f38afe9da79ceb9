"""The fake manager's event history: one entry per status change, kept per job."""

from __future__ import annotations

import itertools
import uuid
from datetime import datetime
from typing import Any

from .._models import Event
from ._rows import JobRow, StageRow, TaskRow


class EventLog:
    """Every status change of each job, its stages and its tasks, oldest first."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._by_job: dict[uuid.UUID, list[Event]] = {}

    def of_job(self, job_id: uuid.UUID) -> list[Event]:
        return self._by_job.get(job_id, [])

    def forget(self, job_id: uuid.UUID) -> None:
        self._by_job.pop(job_id, None)

    def job(
        self, job: JobRow, previous: str | None, at: datetime, reason: str | None = None
    ) -> None:
        self._add(job.id, at, "JOB", job.id, previous, job.status, reason=reason)

    def stage(self, stage: StageRow, previous: str | None, at: datetime) -> None:
        self._add(stage.job_id, at, "STAGE", stage.id, previous, stage.status, stage_id=stage.id)

    def task(self, task: TaskRow, previous: str | None, at: datetime, reason: str | None) -> None:
        self._add(
            task.job_id,
            at,
            "TASK",
            task.id,
            previous,
            task.status,
            stage_id=task.stage_id,
            task_id=task.id,
            attempt=task.attempts,
            lease_id=task.lease_id,
            worker=task.worker,
            reason=reason,
        )

    def added(
        self,
        task: TaskRow,
        at: datetime,
        running: bool,
        **entry: Any,
    ) -> Event:
        """An entry the task's worker added (name, level, message, fields)."""
        return self._add(
            task.job_id,
            at,
            "TASK",
            task.id,
            None,
            None,
            stage_id=task.stage_id,
            task_id=task.id,
            attempt=task.attempts,
            lease_id=task.lease_id if running else None,
            worker=task.worker if running else None,
            **entry,
        )

    def _add(
        self,
        job_id: uuid.UUID,
        at: datetime,
        entity: str,
        entity_id: uuid.UUID,
        previous: str | None,
        target: str | None,
        **task: Any,
    ) -> Event:
        event = Event(
            id=next(self._ids),
            time=at,
            entity=entity,
            entity_id=entity_id,
            job_id=job_id,
            from_status=previous,
            to_status=target,
            **task,
        )
        self._by_job.setdefault(job_id, []).append(event)
        return event
