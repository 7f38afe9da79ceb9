"""The fake manager's rows, and their answers on the wire (the SDK's models, dumped)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .._models import (
    Job,
    JobStatus,
    Priority,
    Stage,
    StageStatus,
    Task,
    TaskRetryPolicy,
    TaskStatus,
)


@dataclass(eq=False, kw_only=True)
class Row:
    """What jobs, stages and tasks all hold."""

    id: uuid.UUID
    seq: int  # creation order, across all rows
    data: dict[str, Any]
    user_metadata: dict[str, Any]
    creation_time: datetime
    update_time: datetime
    traceparent: str
    tracestate: str | None
    start_time: datetime | None = None
    end_time: datetime | None = None
    reason: str | None = None


@dataclass(eq=False, kw_only=True)
class TaskRow(Row):
    stage_id: uuid.UUID
    job_id: uuid.UUID
    max_attempts: int
    retry_policy: TaskRetryPolicy | None
    status: TaskStatus = TaskStatus.PENDING
    attempts: int = 0
    lease_id: uuid.UUID | None = None
    lease_expires_at: datetime | None = None
    lease_seconds: float | None = None
    worker: str | None = None
    progress: int | None = None
    progress_message: str | None = None
    timeout_seconds: float | None = None
    not_before: datetime | None = None
    result: dict[str, Any] | None = None


@dataclass(eq=False, kw_only=True)
class StageRow(Row):
    job_id: uuid.UUID
    type: str
    order: int
    status: StageStatus
    retry_policy: TaskRetryPolicy | None
    tasks: list[TaskRow] = field(default_factory=list)
    allowed_failures: int = 0
    partial: bool = False
    timeout_seconds: float | None = None

    def summary(self) -> dict[str, int]:
        """The stage's task counts by status (as the wire names them), and `total`."""
        counts = {status.value.lower(): 0 for status in TaskStatus}
        for task in self.tasks:
            counts[task.status.value.lower()] += 1
        return counts | {"total": len(self.tasks)}


@dataclass(eq=False, kw_only=True)
class JobRow(Row):
    name: str
    priority: Priority
    status: JobStatus = JobStatus.PENDING
    # Kept, not derived: the manager sets it when a stage completes and on abort.
    percentage: int = 0
    stages: list[StageRow] = field(default_factory=list)
    failed_task_id: uuid.UUID | None = None
    failed_stage_id: uuid.UUID | None = None
    partial: bool = False
    not_before: datetime | None = None
    deadline: datetime | None = None


def percentage(done: int, total: int) -> int:
    return (100 * done) // total if total > 0 else 0


# Extensions the manager leaves out of an answer until they say something.
_UNSAID = {"allowedFailures": 0, "partial": False}


def wire(model: Task | Stage | Job) -> dict[str, Any]:
    body = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    for key, unsaid in _UNSAID.items():
        if key in body and body[key] == unsaid:
            del body[key]
    return body


def task_out(task: TaskRow) -> dict[str, Any]:
    return wire(Task.model_validate(task, from_attributes=True))


def stage_progress(stage: StageRow) -> float:
    """How far it is: completed tasks, and what running ones last reported, over all."""
    if stage.status is StageStatus.COMPLETED:
        return 100.0
    if not stage.tasks:
        return 0.0
    done = sum(100 for t in stage.tasks if t.status is TaskStatus.COMPLETED)
    running = sum(t.progress or 0 for t in stage.tasks if t.status is TaskStatus.IN_PROGRESS)
    return min(100.0, (done + running) / len(stage.tasks))


def job_progress(job: JobRow) -> float:
    if job.status is JobStatus.COMPLETED:
        return 100.0
    stages = [stage_progress(stage) for stage in job.stages]
    return sum(stages) / len(stages) if stages else 0.0


def stage_out(
    stage: StageRow, *, with_tasks: bool = False, progress: bool = True
) -> dict[str, Any]:
    summary = stage.summary()
    model = Stage.model_validate(
        {
            **vars(stage),
            "summary": summary,
            "percentage": percentage(summary["completed"], summary["total"]),
            "tasks": stage.tasks if with_tasks else None,
            "progress": stage_progress(stage) if progress else None,
        },
        from_attributes=True,
    )
    return wire(model)


def job_out(job: JobRow, *, with_stages: bool = False, progress: bool = True) -> dict[str, Any]:
    body = wire(
        Job.model_validate(
            {**vars(job), "stages": None, "progress": job_progress(job) if progress else None}
        )
    )
    if with_stages:
        body["stages"] = [stage_out(stage) for stage in job.stages]
    return body
