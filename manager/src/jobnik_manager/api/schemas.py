"""Wire models of the Jobnik v1 API (camelCase JSON), plus our optional extensions."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Annotated, Generic, Literal, Self, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    model_validator,
)
from pydantic.alias_generators import to_camel

from ..domain.leases import MAX_LEASE
from ..domain.retry import DEFAULT_MAX_DELAY, DEFAULT_MULTIPLIER, RetryPolicy
from ..domain.statuses import JobStatus, Priority, StageStatus, TaskStatus
from ..domain.tasks import DEFAULT_MAX_ATTEMPTS
from ..services.specs import NewJob, NewStage, NewTask
from .json_values import JsonObject, no_nul

TRACEPARENT = r"^[\da-f]{2}-[\da-f]{32}-[\da-f]{16}-[\da-f]{2}$"
TRACESTATE = r"^[a-z0-9][a-z0-9_\-*/]*=[^,=]+(?:,[a-z0-9][a-z0-9_\-*/]*=[^,=]+)*$"
INT32_MAX = 2**31 - 1

JobName = Annotated[str, Field(min_length=2, max_length=50, strict=True), AfterValidator(no_nul)]
StageType = Annotated[str, Field(min_length=1, max_length=50, strict=True), AfterValidator(no_nul)]
TraceParent = Annotated[str, Field(pattern=TRACEPARENT, strict=True)]
TraceState = Annotated[str, Field(pattern=TRACESTATE, max_length=512, strict=True)]
MAX_LEASE_SECONDS = MAX_LEASE.total_seconds()
WEEK_SECONDS = 7 * 24 * 3600.0
Seconds = Annotated[float, Field(strict=True, ge=0, le=WEEK_SECONDS, allow_inf_nan=False)]
WaitSeconds = Annotated[float, Field(strict=True, ge=0, le=60, allow_inf_nan=False)]
LeaseSeconds = Annotated[float, Field(strict=True, ge=1, le=MAX_LEASE_SECONDS, allow_inf_nan=False)]
WorkerName = Annotated[
    str, Field(min_length=1, max_length=100, strict=True), AfterValidator(no_nul)
]
Reason = Annotated[str, Field(max_length=2000, strict=True), AfterValidator(no_nul)]


class Inbound(BaseModel):
    """A request body: unknown fields are an error, not silently dropped."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class Outbound(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


# ---- requests ---------------------------------------------------------------------------


class RetryPolicyIn(Inbound):
    """Extension: exponential backoff between failed attempts, with a cap."""

    initial_delay_seconds: Seconds
    multiplier: Annotated[float, Field(strict=True, ge=1, le=100, allow_inf_nan=False)] = (
        DEFAULT_MULTIPLIER
    )
    max_delay_seconds: Seconds = DEFAULT_MAX_DELAY.total_seconds()

    def to_domain(self) -> RetryPolicy:
        return RetryPolicy(
            initial_delay=timedelta(seconds=self.initial_delay_seconds),
            multiplier=self.multiplier,
            max_delay=timedelta(seconds=self.max_delay_seconds),
        )


class TaskCreate(Inbound):
    data: JsonObject
    user_metadata: JsonObject = Field(default_factory=dict)
    max_attempts: StrictInt = Field(default=DEFAULT_MAX_ATTEMPTS, ge=1, le=INT32_MAX)
    traceparent: TraceParent | None = None
    tracestate: TraceState | None = None
    # Extension: the delay between attempts (default: the stage's, else none).
    retry_policy: RetryPolicyIn | None = None

    def to_new(self) -> NewTask:
        return NewTask(
            self.data,
            self.user_metadata,
            self.max_attempts,
            self.traceparent,
            self.tracestate,
            self.retry_policy.to_domain() if self.retry_policy else None,
        )


class StageCreate(Inbound):
    type: StageType
    data: JsonObject
    user_metadata: JsonObject = Field(default_factory=dict)
    start_as_waiting: StrictBool = False
    traceparent: TraceParent | None = None
    tracestate: TraceState | None = None
    # Extension: the stage's tasks, created in the same transaction.
    tasks: list[TaskCreate] | None = None
    # Extension: the retry policy of its tasks that bring none.
    retry_policy: RetryPolicyIn | None = None

    def to_new(self) -> NewStage:
        return NewStage(
            type=self.type,
            data=self.data,
            user_metadata=self.user_metadata,
            start_as_waiting=self.start_as_waiting,
            traceparent=self.traceparent,
            tracestate=self.tracestate,
            tasks=[t.to_new() for t in self.tasks or ()],
            retry_policy=self.retry_policy.to_domain() if self.retry_policy else None,
        )


class JobCreate(Inbound):
    name: JobName
    data: JsonObject
    priority: Priority = Priority.MEDIUM
    user_metadata: JsonObject = Field(default_factory=dict)
    traceparent: TraceParent | None = None
    tracestate: TraceState | None = None
    # Extension: the job's stages (and their tasks), created in the same transaction.
    stages: list[StageCreate] | None = None

    def to_new(self) -> NewJob:
        return NewJob(
            name=self.name,
            data=self.data,
            priority=self.priority,
            user_metadata=self.user_metadata,
            traceparent=self.traceparent,
            tracestate=self.tracestate,
            stages=[st.to_new() for st in self.stages or ()],
        )


class JobStatusChange(Inbound):
    status: Literal[JobStatus.PENDING, JobStatus.PAUSED, JobStatus.ABORTED]


class StageStatusChange(Inbound):
    status: Literal[StageStatus.PENDING]


class TaskStatusReport(Inbound):
    """COMPLETED or FAILED (reference); RETRIED is our "retry later" extension."""

    status: Literal[TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.RETRIED]
    lease_id: uuid.UUID | None = None
    result: JsonObject | None = None
    reason: Reason | None = None
    retryable: StrictBool | None = None
    retry_after_seconds: Seconds | None = None

    @model_validator(mode="after")
    def _fields_fit_the_status(self) -> Self:
        status = TaskStatus(self.status)
        if self.result is not None and status is not TaskStatus.COMPLETED:
            raise ValueError("result goes with a COMPLETED report only")
        if self.retryable is not None and status is not TaskStatus.FAILED:
            raise ValueError("retryable goes with a FAILED report only")
        if self.reason is not None and status is TaskStatus.COMPLETED:
            raise ValueError("reason goes with a FAILED or RETRIED report only")
        if (self.retry_after_seconds is None) == (status is TaskStatus.RETRIED):
            raise ValueError("retryAfterSeconds is required with RETRIED, and only there")
        return self


class BatchReportItem(TaskStatusReport):
    task_id: uuid.UUID


class BatchReport(Inbound):
    reports: list[BatchReportItem] = Field(min_length=1, max_length=100)


class Heartbeat(Inbound):
    lease_id: uuid.UUID
    progress: StrictInt | None = Field(default=None, ge=0, le=100)
    lease_seconds: LeaseSeconds | None = None


class ClaimRequest(Inbound):
    stage_types: list[StageType] = Field(min_length=1, max_length=20)
    limit: StrictInt = Field(default=1, ge=1, le=100)
    lease_seconds: LeaseSeconds | None = None
    worker: WorkerName | None = None
    # Long poll: with nothing ready, hold the request up to this long for work to appear.
    wait_seconds: WaitSeconds | None = None
    # The claimed tasks' stages and jobs in the answer, so a worker needs no reads of them.
    with_context: StrictBool = False


class HeartbeatItem(Inbound):
    task_id: uuid.UUID
    lease_id: uuid.UUID
    progress: StrictInt | None = Field(default=None, ge=0, le=100)


class BatchHeartbeat(Inbound):
    heartbeats: list[HeartbeatItem] = Field(min_length=1, max_length=100)
    lease_seconds: LeaseSeconds | None = None


class PriorityChange(Inbound):
    priority: Priority


# ---- responses --------------------------------------------------------------------------


class ErrorMessage(Outbound):
    message: str
    code: str


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
    # Extensions, present when set.
    lease_id: uuid.UUID | None = None
    lease_expires_at: datetime | None = None
    worker: str | None = None
    progress: int | None = None
    not_before: datetime | None = None
    retry_policy: dict[str, object] | None = None
    reason: str | None = None
    result: dict[str, object] | None = None


class HeartbeatOut(Outbound):
    lease_expires_at: datetime
    cancel_requested: bool
    job_status: JobStatus


class HeartbeatResultOut(Outbound):
    task_id: uuid.UUID
    lease_expires_at: datetime | None = None
    cancel_requested: bool | None = None
    job_status: JobStatus | None = None
    error: ErrorMessage | None = None


class BatchHeartbeatOut(Outbound):
    items: list[HeartbeatResultOut]


class ClaimOut(Outbound):
    items: list[TaskOut]
    # With `withContext`: each claimed task's stage (without its tasks) and job (without
    # its stages), once each.
    stages: list[StageOut] | None = None
    jobs: list[JobOut] | None = None


class ReportResultOut(Outbound):
    task_id: uuid.UUID
    task: TaskOut | None = None
    error: ErrorMessage | None = None


class BatchReportOut(Outbound):
    items: list[ReportResultOut]


class EventOut(Outbound):
    id: int
    time: datetime
    entity: Literal["JOB", "STAGE", "TASK"]
    entity_id: uuid.UUID
    job_id: uuid.UUID
    stage_id: uuid.UUID | None = None
    task_id: uuid.UUID | None = None
    from_status: str | None
    to_status: str
    attempt: int | None = None
    lease_id: uuid.UUID | None = None
    worker: str | None = None
    reason: str | None = None


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
    retry_policy: dict[str, object] | None = None


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
