"""The fake manager's state: plain rows, and their projections onto the SDK's models."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .._exceptions import ApiError, error_for
from .._models import (
    EntityId,
    Job,
    JobStatus,
    Priority,
    Stage,
    StageStatus,
    Summary,
    Task,
    TaskRetryPolicy,
    TaskStatus,
)

PRIORITY_RANK = {p: i for i, p in enumerate(Priority)}


def now() -> datetime:
    return datetime.now(UTC)


@dataclass
class TaskRow:
    id: uuid.UUID
    stage_id: uuid.UUID
    job_id: uuid.UUID
    seq: int
    data: dict[str, Any]
    user_metadata: dict[str, Any]
    max_attempts: int
    status: TaskStatus = TaskStatus.PENDING
    attempts: int = 0
    creation_time: datetime = field(default_factory=now)
    update_time: datetime = field(default_factory=now)
    start_time: datetime | None = None
    end_time: datetime | None = None
    traceparent: str | None = None
    tracestate: str | None = None
    retry_policy: TaskRetryPolicy | None = None
    lease_id: uuid.UUID | None = None
    lease_expires_at: datetime | None = None
    lease_seconds: float | None = None
    worker: str | None = None
    progress: int | None = None
    not_before: datetime | None = None
    reason: str | None = None
    result: dict[str, Any] | None = None

    def model(self) -> Task:
        return Task(
            id=self.id,
            stage_id=self.stage_id,
            data=dict(self.data),
            user_metadata=dict(self.user_metadata),
            status=self.status,
            attempts=self.attempts,
            max_attempts=self.max_attempts,
            creation_time=self.creation_time,
            update_time=self.update_time,
            start_time=self.start_time,
            end_time=self.end_time,
            traceparent=self.traceparent,
            tracestate=self.tracestate,
            retry_policy=self.retry_policy,
            lease_id=self.lease_id,
            lease_expires_at=self.lease_expires_at,
            worker=self.worker,
            progress=self.progress,
            not_before=self.not_before,
            reason=self.reason,
            result=dict(self.result) if self.result is not None else None,
        )


@dataclass
class StageRow:
    id: uuid.UUID
    job_id: uuid.UUID
    seq: int
    type: str
    order: int
    data: dict[str, Any]
    user_metadata: dict[str, Any]
    status: StageStatus
    tasks: list[TaskRow] = field(default_factory=list)
    creation_time: datetime = field(default_factory=now)
    traceparent: str | None = None
    tracestate: str | None = None
    retry_policy: TaskRetryPolicy | None = None

    def summary(self) -> Summary:
        counts = {status: 0 for status in TaskStatus}
        for task in self.tasks:
            counts[task.status] += 1
        return Summary(
            pending=counts[TaskStatus.PENDING],
            in_progress=counts[TaskStatus.IN_PROGRESS],
            completed=counts[TaskStatus.COMPLETED],
            failed=counts[TaskStatus.FAILED],
            created=counts[TaskStatus.CREATED],
            retried=counts[TaskStatus.RETRIED],
            aborted=counts[TaskStatus.ABORTED],
            total=len(self.tasks),
        )

    def model(self, *, with_tasks: bool = False) -> Stage:
        summary = self.summary()
        return Stage(
            id=self.id,
            job_id=self.job_id,
            type=self.type,
            order=self.order,
            data=dict(self.data),
            user_metadata=dict(self.user_metadata),
            status=self.status,
            percentage=percentage(summary.completed, summary.total),
            summary=summary,
            traceparent=self.traceparent,
            tracestate=self.tracestate,
            tasks=[t.model() for t in self.tasks] if with_tasks else None,
            retry_policy=self.retry_policy,
        )


@dataclass
class JobRow:
    id: uuid.UUID
    seq: int
    name: str
    data: dict[str, Any]
    user_metadata: dict[str, Any]
    priority: Priority
    status: JobStatus = JobStatus.PENDING
    stages: list[StageRow] = field(default_factory=list)
    creation_time: datetime = field(default_factory=now)
    update_time: datetime = field(default_factory=now)
    traceparent: str | None = None
    tracestate: str | None = None

    def model(self, *, with_stages: bool = False, with_tasks: bool = False) -> Job:
        done = sum(1 for st in self.stages if st.status is StageStatus.COMPLETED)
        return Job(
            id=self.id,
            name=self.name,
            data=dict(self.data),
            user_metadata=dict(self.user_metadata),
            priority=self.priority,
            status=self.status,
            percentage=percentage(done, len(self.stages)),
            creation_time=self.creation_time,
            update_time=self.update_time,
            traceparent=self.traceparent,
            tracestate=self.tracestate,
            stages=[st.model(with_tasks=with_tasks) for st in self.stages] if with_stages else None,
        )


def percentage(done: int, total: int) -> int:
    return (100 * done) // total if total > 0 else 0


def parse_id(value: EntityId) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(value)
    except ValueError:
        raise invalid(f"{value!r} is not a valid UUID") from None


def not_found(kind: str) -> ApiError:
    return error_for(404, f"{kind.upper()}_NOT_FOUND", f"{kind} not found")


def illegal(entity: str, current: str, target: str) -> ApiError:
    return refused(
        f"Illegal status transition from {current} to {target}",
        f"ILLEGAL_{entity}_STATUS_TRANSITION",
    )


def refused(message: str, code: str) -> ApiError:
    return error_for(400, code, message)


def lease_lost() -> ApiError:
    return error_for(
        409,
        "LEASE_LOST",
        "The lease is no longer held: it expired, or the task was reclaimed or settled",
    )


def invalid(message: str) -> ApiError:
    return error_for(400, "VALIDATION_ERROR", message)
