"""The fake manager's rules for creating and steering jobs, synchronous: the same
transitions as the manager's for the common path (create, approve, stage order, pause,
resume, abort, delete). Claims, leases and reports are in `_work.py`."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from .._models import (
    EntityId,
    JobStatus,
    NewStage,
    NewTask,
    Priority,
    StageStatus,
    TaskStatus,
)
from ._events import EventLog
from ._rows import (
    JobRow,
    StageRow,
    TaskRow,
    illegal,
    invalid,
    not_found,
    parse_id,
    refused,
)

CLAIMABLE_TASK = (TaskStatus.PENDING, TaskStatus.RETRIED)
_USER_JOB_MOVES = {
    (JobStatus.PENDING, JobStatus.PAUSED),
    (JobStatus.IN_PROGRESS, JobStatus.PAUSED),
    (JobStatus.PAUSED, JobStatus.PENDING),
    (JobStatus.CREATED, JobStatus.ABORTED),
    (JobStatus.PENDING, JobStatus.ABORTED),
    (JobStatus.IN_PROGRESS, JobStatus.ABORTED),
    (JobStatus.PAUSED, JobStatus.ABORTED),
}


class Rules:
    """Jobs, stages and tasks in memory, changed only through the manager's rules.

    Its clock is the real one moved on by `skew`, so tests can let leases and retry
    delays run out without waiting.
    """

    def __init__(self) -> None:
        self.jobs: dict[uuid.UUID, JobRow] = {}
        self.stages: dict[uuid.UUID, StageRow] = {}
        self.tasks: dict[uuid.UUID, TaskRow] = {}
        self.events = EventLog()
        self.skew = timedelta(0)
        self._seq = itertools.count(1)

    def now(self) -> datetime:
        return datetime.now(UTC) + self.skew

    def reap(self) -> None:
        """Settle whatever ran out on the clock (expired leases); `_work.State` does it."""

    # ---- lookups ------------------------------------------------------------------------

    def job(self, job_id: EntityId) -> JobRow:
        self.reap()
        row = self.jobs.get(parse_id(job_id))
        if row is None:
            raise not_found("Job")
        return row

    def stage(self, stage_id: EntityId) -> StageRow:
        self.reap()
        row = self.stages.get(parse_id(stage_id))
        if row is None:
            raise not_found("Stage")
        return row

    def task(self, task_id: EntityId) -> TaskRow:
        self.reap()
        row = self.tasks.get(parse_id(task_id))
        if row is None:
            raise not_found("Task")
        return row

    # ---- status changes, each logged ----------------------------------------------------

    def move_job(self, job: JobRow, status: JobStatus, at: datetime) -> None:
        previous = job.status
        job.status, job.update_time = status, at
        if previous is not status:
            self.events.job(job, previous, at)

    def move_stage(self, stage: StageRow, status: StageStatus, at: datetime) -> None:
        previous = stage.status
        stage.status = status
        if previous is not status:
            self.events.stage(stage, previous, at)

    def move_task(
        self, task: TaskRow, status: TaskStatus, at: datetime, reason: str | None = None
    ) -> None:
        previous = task.status
        task.status, task.update_time = status, at
        if status.is_final:
            task.end_time = at
        self.events.task(task, previous, at, reason)

    # ---- creation -----------------------------------------------------------------------

    def create_job(
        self,
        name: str,
        data: Mapping[str, Any],
        *,
        priority: Priority,
        user_metadata: Mapping[str, Any] | None,
        stages: Sequence[NewStage],
        traceparent: str | None = None,
        tracestate: str | None = None,
    ) -> JobRow:
        if not 2 <= len(name) <= 50:
            raise invalid("name: String should have between 2 and 50 characters")
        at = self.now()
        job = JobRow(
            id=uuid.uuid4(),
            seq=next(self._seq),
            name=name,
            data=dict(data),
            user_metadata=dict(user_metadata or {}),
            priority=Priority(priority),
            creation_time=at,
            update_time=at,
            traceparent=traceparent,
            tracestate=tracestate,
        )
        self.jobs[job.id] = job
        self.events.job(job, None, at)
        for spec in stages:
            self._insert_stage(job, spec, at)
        return job

    def add_stage(self, job_id: EntityId, spec: NewStage) -> StageRow:
        job = self.job(job_id)
        if job.status.is_final:
            raise refused(
                f"Job is {job.status}; stages cannot be added to a finished job",
                "JOB_IN_FINITE_STATE",
            )
        at = self.now()
        job.update_time = at
        return self._insert_stage(job, spec, at)

    def _insert_stage(self, job: JobRow, spec: NewStage, at: datetime) -> StageRow:
        if not 1 <= len(spec.type) <= 50:
            raise invalid("type: String should have between 1 and 50 characters")
        previous = job.stages[-1] if job.stages else None
        if spec.start_as_waiting:
            status = StageStatus.WAITING
        elif previous is None or previous.status is StageStatus.COMPLETED:
            status = StageStatus.PENDING
        else:
            status = StageStatus.CREATED
        stage = StageRow(
            id=uuid.uuid4(),
            job_id=job.id,
            seq=next(self._seq),
            type=spec.type,
            order=len(job.stages) + 1,
            data=dict(spec.data),
            user_metadata=dict(spec.user_metadata or {}),
            status=status,
            creation_time=at,
            traceparent=spec.traceparent,
            tracestate=spec.tracestate,
            retry_policy=spec.retry_policy,
        )
        job.stages.append(stage)
        self.stages[stage.id] = stage
        self.events.stage(stage, None, at)
        if spec.tasks:
            self._insert_tasks(stage, spec.tasks, at)
        return stage

    def add_tasks(self, stage_id: EntityId, specs: Sequence[NewTask]) -> list[TaskRow]:
        if not specs:
            raise invalid("body: List should have at least 1 item")
        return self._insert_tasks(self.stage(stage_id), specs, self.now())

    def _insert_tasks(
        self, stage: StageRow, specs: Sequence[NewTask], at: datetime
    ) -> list[TaskRow]:
        if stage.status.is_final:
            raise refused(
                f"Stage is {stage.status}; tasks cannot be added to a finished stage",
                "STAGE_IN_FINITE_STATE",
            )
        if stage.status is StageStatus.IN_PROGRESS:
            raise refused(
                "Tasks cannot be added to a stage that is IN_PROGRESS",
                "NOT_ALLOWED_TO_ADD_TASKS_TO_IN_PROGRESS_STAGE",
            )
        rows = [
            TaskRow(
                id=uuid.uuid4(),
                stage_id=stage.id,
                job_id=stage.job_id,
                seq=next(self._seq),
                data=dict(spec.data),
                user_metadata=dict(spec.user_metadata or {}),
                max_attempts=spec.max_attempts or 1,
                creation_time=at,
                update_time=at,
                traceparent=spec.traceparent,
                tracestate=spec.tracestate,
                retry_policy=spec.retry_policy or stage.retry_policy,
            )
            for spec in specs
        ]
        stage.tasks.extend(rows)
        for row in rows:
            self.tasks[row.id] = row
            self.events.task(row, None, at, None)
        return rows

    # ---- steering -----------------------------------------------------------------------

    def approve(self, stage_id: EntityId) -> None:
        stage = self.stage(stage_id)
        job = self.jobs[stage.job_id]
        if stage.status is StageStatus.PENDING:
            return
        if job.status.is_final or stage.status not in (StageStatus.WAITING, StageStatus.CREATED):
            raise illegal("STAGE", stage.status, StageStatus.PENDING)
        if stage.order > 1 and job.stages[stage.order - 2].status is not StageStatus.COMPLETED:
            raise refused("Previous stage is not COMPLETED", "ILLEGAL_STAGE_STATUS_TRANSITION")
        at = self.now()
        self.move_stage(stage, StageStatus.PENDING, at)
        if not stage.tasks:
            self.complete_stage(job, stage, at)

    def set_job_status(self, job_id: EntityId, target: JobStatus) -> None:
        job = self.job(job_id)
        if (job.status, target) not in _USER_JOB_MOVES:
            raise illegal("JOB", job.status, target)
        at = self.now()
        job.update_time = at
        if target is JobStatus.ABORTED:
            # A running task's holder learns of it at its next heartbeat.
            for stage in job.stages:
                for task in stage.tasks:
                    if not task.status.is_final:
                        self.move_task(task, TaskStatus.ABORTED, at)
                if not stage.status.is_final:
                    self.move_stage(stage, StageStatus.ABORTED, at)
            self.move_job(job, JobStatus.ABORTED, at)
        elif target is JobStatus.PAUSED:
            self.move_job(job, JobStatus.PAUSED, at)
        else:
            self.move_job(job, self._implied_status(job), at)

    def _implied_status(self, job: JobRow) -> JobStatus:
        statuses = [st.status for st in job.stages]
        if StageStatus.FAILED in statuses:
            return JobStatus.FAILED
        if statuses and all(s is StageStatus.COMPLETED for s in statuses):
            return JobStatus.COMPLETED
        started = any(t.start_time is not None for st in job.stages for t in st.tasks)
        return JobStatus.IN_PROGRESS if started else JobStatus.PENDING

    def set_priority(self, job_id: EntityId, priority: Priority) -> bool:
        job = self.job(job_id)
        if job.priority is Priority(priority):
            return False
        job.priority, job.update_time = Priority(priority), self.now()
        return True

    def delete_job(self, job_id: EntityId) -> None:
        job = self.job(job_id)
        if not job.status.is_final:
            raise refused(
                f"Job is {job.status}; only a COMPLETED, FAILED or ABORTED job can be deleted",
                "JOB_NOT_IN_FINITE_STATE",
            )
        for stage in job.stages:
            for task in stage.tasks:
                del self.tasks[task.id]
            del self.stages[stage.id]
        del self.jobs[job.id]
        self.events.forget(job.id)

    # ---- cascades -----------------------------------------------------------------------

    def settle(self, stage: StageRow, at: datetime) -> None:
        """After a task moved: fail or complete its stage, and what follows from that."""
        if stage.status.is_final:
            return
        job = self.jobs[stage.job_id]
        summary = stage.summary()
        if summary.failed:
            self.move_stage(stage, StageStatus.FAILED, at)
            self.move_job(job, JobStatus.FAILED, at)
            for task in stage.tasks:
                if task.status in CLAIMABLE_TASK:
                    self.move_task(task, TaskStatus.ABORTED, at)
        elif summary.total and summary.completed == summary.total:
            self.complete_stage(job, stage, at)

    def complete_stage(self, job: JobRow, stage: StageRow, at: datetime) -> None:
        self.move_stage(stage, StageStatus.COMPLETED, at)
        while True:
            following = job.stages[stage.order] if stage.order < len(job.stages) else None
            if following is None:
                if job.status is not JobStatus.PAUSED:
                    self.move_job(job, JobStatus.COMPLETED, at)
                break
            if following.status is not StageStatus.CREATED:
                break  # WAITING: it holds until approved
            self.move_stage(following, StageStatus.PENDING, at)
            if following.tasks:
                break
            self.move_stage(following, StageStatus.COMPLETED, at)
            stage = following
        job.update_time = at
