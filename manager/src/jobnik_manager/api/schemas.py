"""Wire models of the Jobnik v1 API (camelCase JSON), plus our optional extensions."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Generic, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt
from pydantic.alias_generators import to_camel

from ..domain.statuses import JobStatus, Priority, StageStatus, TaskStatus
from ..domain.tasks import DEFAULT_MAX_ATTEMPTS
from .json_values import JsonObject, no_nul

TRACEPARENT = r"^[\da-f]{2}-[\da-f]{32}-[\da-f]{16}-[\da-f]{2}$"
TRACESTATE = r"^[a-z0-9][a-z0-9_\-*/]*=[^,=]+(?:,[a-z0-9][a-z0-9_\-*/]*=[^,=]+)*$"
INT32_MAX = 2**31 - 1

JobName = Annotated[str, Field(min_length=2, max_length=50, strict=True), AfterValidator(no_nul)]
StageType = Annotated[str, Field(min_length=1, max_length=50, strict=True), AfterValidator(no_nul)]
TraceParent = Annotated[str, Field(pattern=TRACEPARENT, strict=True)]
TraceState = Annotated[str, Field(pattern=TRACESTATE, max_length=512, strict=True)]


class Inbound(BaseModel):
    """A request body: unknown fields are an error, not silently dropped."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class Outbound(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


# ---- requests ---------------------------------------------------------------------------


class TaskCreate(Inbound):
    data: JsonObject
    user_metadata: JsonObject = Field(default_factory=dict)
    max_attempts: StrictInt = Field(default=DEFAULT_MAX_ATTEMPTS, ge=1, le=INT32_MAX)
    traceparent: TraceParent | None = None
    tracestate: TraceState | None = None


class StageCreate(Inbound):
    type: StageType
    data: JsonObject
    user_metadata: JsonObject = Field(default_factory=dict)
    start_as_waiting: StrictBool = False
    traceparent: TraceParent | None = None
    tracestate: TraceState | None = None
    # Extension: the stage's tasks, created in the same transaction.
    tasks: list[TaskCreate] | None = None


class JobCreate(Inbound):
    name: JobName
    data: JsonObject
    priority: Priority = Priority.MEDIUM
    user_metadata: JsonObject = Field(default_factory=dict)
    traceparent: TraceParent | None = None
    tracestate: TraceState | None = None
    # Extension: the job's stages (and their tasks), created in the same transaction.
    stages: list[StageCreate] | None = None


class JobStatusChange(Inbound):
    status: Literal[JobStatus.PENDING, JobStatus.PAUSED, JobStatus.ABORTED]


class StageStatusChange(Inbound):
    status: Literal[StageStatus.PENDING]


class TaskStatusReport(Inbound):
    status: Literal[TaskStatus.COMPLETED, TaskStatus.FAILED]


class PriorityChange(Inbound):
    priority: Priority


# ---- responses --------------------------------------------------------------------------


class SummaryOut(Outbound):
    pending: int
    in_progress: int
    completed: int
    failed: int
    created: int
    retried: int
    aborted: int
    total: int


class TaskOut(Outbound):
    id: uuid.UUID
    stage_id: uuid.UUID
    data: dict[str, object]
    user_metadata: dict[str, object]
    status: TaskStatus
    attempts: int
    max_attempts: int
    creation_time: datetime
    update_time: datetime
    start_time: datetime | None = None
    end_time: datetime | None = None
    traceparent: str
    tracestate: str | None = None


class StageOut(Outbound):
    id: uuid.UUID
    job_id: uuid.UUID
    type: str
    order: int
    data: dict[str, object]
    user_metadata: dict[str, object]
    status: StageStatus
    percentage: int
    summary: SummaryOut
    traceparent: str
    tracestate: str | None = None
    tasks: list[TaskOut] | None = None


class JobOut(Outbound):
    id: uuid.UUID
    name: str
    data: dict[str, object]
    user_metadata: dict[str, object]
    priority: Priority
    status: JobStatus
    percentage: int
    creation_time: datetime
    update_time: datetime
    traceparent: str
    tracestate: str | None = None
    stages: list[StageOut] | None = None


ItemT = TypeVar("ItemT")


class Page(Outbound, Generic[ItemT]):
    total: int
    items: list[ItemT]


class OkMessage(Outbound):
    code: str


class ErrorMessage(Outbound):
    message: str
    code: str
