"""Typed views of the manager's entities, and the specs used to create them.

Field names are snake_case in Python and camelCase on the wire. Entities ignore fields
they do not know, so a newer manager that answers with more stays readable.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class JobStatus(StrEnum):
    """Status of a job. COMPLETED, FAILED and ABORTED are final."""

    CREATED = "CREATED"
    PENDING = "PENDING"
    IN_PROGRESS = "IN_PROGRESS"
    PAUSED = "PAUSED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    ABORTED = "ABORTED"

    @property
    def is_final(self) -> bool:
        """True for COMPLETED, FAILED and ABORTED: nothing changes a job after them."""
        return self in (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.ABORTED)


class StageStatus(StrEnum):
    """Status of a stage. A WAITING stage needs approval before its tasks can run."""

    CREATED = "CREATED"
    WAITING = "WAITING"
    PENDING = "PENDING"
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    ABORTED = "ABORTED"

    @property
    def is_final(self) -> bool:
        """True for COMPLETED, FAILED and ABORTED."""
        return self in (StageStatus.COMPLETED, StageStatus.FAILED, StageStatus.ABORTED)


class TaskStatus(StrEnum):
    """Status of a task. PENDING and RETRIED tasks are waiting to be claimed."""

    CREATED = "CREATED"
    PENDING = "PENDING"
    IN_PROGRESS = "IN_PROGRESS"
    RETRIED = "RETRIED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    ABORTED = "ABORTED"

    @property
    def is_final(self) -> bool:
        """True for COMPLETED, FAILED and ABORTED."""
        return self in (TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.ABORTED)


class Priority(StrEnum):
    """Job priority; tasks of higher-priority jobs are claimed first."""

    VERY_HIGH = "VERY_HIGH"
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"
    VERY_LOW = "VERY_LOW"


class _Wire(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore"
    )


class Summary(_Wire):
    """Counts of a stage's tasks by status; `total` is the sum of the others."""

    pending: int = 0
    in_progress: int = 0
    completed: int = 0
    failed: int = 0
    created: int = 0
    retried: int = 0
    # Not in the reference Jobnik API, hence the default.
    aborted: int = 0
    total: int = 0


class Task(_Wire):
    """A unit of work. `attempts` counts the failed attempts so far."""

    id: uuid.UUID
    stage_id: uuid.UUID
    data: dict[str, Any]
    user_metadata: dict[str, Any] = Field(default_factory=dict)
    status: TaskStatus
    attempts: int = 0
    max_attempts: int = 1
    creation_time: datetime
    update_time: datetime
    start_time: datetime | None = None
    end_time: datetime | None = None
    traceparent: str | None = None
    tracestate: str | None = None


class Stage(_Wire):
    """An ordered step of a job; its tasks run in parallel. `tasks` is set when asked for."""

    id: uuid.UUID
    job_id: uuid.UUID
    type: str
    order: int
    data: dict[str, Any] = Field(default_factory=dict)
    user_metadata: dict[str, Any] = Field(default_factory=dict)
    status: StageStatus
    percentage: int = 0
    summary: Summary = Field(default_factory=Summary)
    traceparent: str | None = None
    tracestate: str | None = None
    tasks: list[Task] | None = None


class Job(_Wire):
    """An ordered list of stages. `stages` is set when asked for."""

    id: uuid.UUID
    name: str
    data: dict[str, Any] = Field(default_factory=dict)
    user_metadata: dict[str, Any] = Field(default_factory=dict)
    priority: Priority = Priority.MEDIUM
    status: JobStatus
    percentage: int = 0
    creation_time: datetime
    update_time: datetime
    traceparent: str | None = None
    tracestate: str | None = None
    stages: list[Stage] | None = None


ItemT = TypeVar("ItemT")


class Page(_Wire, Generic[ItemT]):
    """One page of a list: `total` counts every match, `items` holds this page's."""

    total: int
    items: list[ItemT]


class NewTask(_Wire):
    """A task to create: its data, and how many attempts it gets (the manager's default is 1)."""

    data: dict[str, Any] = Field(default_factory=dict)
    user_metadata: dict[str, Any] | None = None
    max_attempts: int | None = Field(default=None, ge=1)
    traceparent: str | None = None
    tracestate: str | None = None


class NewStage(_Wire):
    """A stage to create, optionally WAITING for approval and with its tasks."""

    type: str
    data: dict[str, Any] = Field(default_factory=dict)
    user_metadata: dict[str, Any] | None = None
    start_as_waiting: bool = False
    tasks: Sequence[NewTask] | None = None
    traceparent: str | None = None
    tracestate: str | None = None


def wire(spec: BaseModel) -> dict[str, Any]:
    """A spec as the manager expects it: camelCase, unset options left out."""
    return spec.model_dump(mode="json", by_alias=True, exclude_none=True)


# Ids may be passed as UUIDs or as their string form.
EntityId = uuid.UUID | str
