"""What the fake manager accepts: the request bodies and query strings of the Jobnik API
with the manager's limits. Bodies are strict JSON with no unknown fields; query strings
are read as FastAPI reads them (unknown parameters are ignored)."""

from __future__ import annotations

import math
import uuid
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from .._models import JobStatus, Priority, StageStatus, TaskRetryPolicy, TaskStatus
from .._reports import TaskReport

WEEK = 7 * 24 * 3600.0
_MAX_DEPTH = 64


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("NUL character in string")
    return value


def _json_object(value: dict[str, Any]) -> dict[str, Any]:
    """What PostgreSQL can store: no NUL characters, no infinities, not too deep."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if depth > _MAX_DEPTH:
            raise ValueError(f"nested deeper than {_MAX_DEPTH} levels")
        if isinstance(item, str):
            _no_nul(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError("non-finite number")
        elif isinstance(item, dict):
            pending += [(_no_nul(k), depth) for k in item] + [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list):
            pending += [(v, depth + 1) for v in item]
    return value


def _text(low: int, high: int) -> Any:
    return Field(min_length=low, max_length=high)


def _number(low: float, high: float) -> Any:
    return Field(ge=low, le=high, allow_inf_nan=False)


JsonObject = Annotated[dict[str, Any], AfterValidator(_json_object)]
JobName = Annotated[str, _text(2, 50), AfterValidator(_no_nul)]
StageType = Annotated[str, _text(1, 50), AfterValidator(_no_nul)]
WorkerName = Annotated[str, _text(1, 100), AfterValidator(_no_nul)]
Reason = Annotated[str, _text(0, 2000), AfterValidator(_no_nul)]
Seconds = Annotated[float, _number(0, WEEK)]
LeaseSeconds = Annotated[float, _number(1, WEEK)]
WaitSeconds = Annotated[float, _number(0, 60)]
Multiplier = Annotated[float, _number(1, 100)]
TraceParent = Annotated[str, Field(pattern=r"^[\da-f]{2}-[\da-f]{32}-[\da-f]{16}-[\da-f]{2}$")]
TraceState = Annotated[
    str,
    Field(
        pattern=r"^[a-z0-9][a-z0-9_\-*/]*=[^,=]+(?:,[a-z0-9][a-z0-9_\-*/]*=[^,=]+)*$",
        max_length=512,
    ),
]


class Body(BaseModel):
    model_config = ConfigDict(
        extra="forbid", strict=True, alias_generator=to_camel, populate_by_name=True
    )


class RetryPolicyIn(Body):
    initial_delay_seconds: Seconds
    multiplier: Multiplier = 2.0
    max_delay_seconds: Seconds = 3600.0

    def policy(self) -> TaskRetryPolicy:
        # As the manager stores it, even with a cap below the first delay.
        return TaskRetryPolicy.model_construct(
            initial_delay=timedelta(seconds=self.initial_delay_seconds),
            multiplier=self.multiplier,
            max_delay=timedelta(seconds=self.max_delay_seconds),
        )


class TaskIn(Body):
    data: JsonObject
    user_metadata: JsonObject = Field(default_factory=dict)
    max_attempts: int = Field(default=1, ge=1, le=2**31 - 1)
    traceparent: TraceParent | None = None
    tracestate: TraceState | None = None
    retry_policy: RetryPolicyIn | None = None


class StageIn(Body):
    type: StageType
    data: JsonObject
    user_metadata: JsonObject = Field(default_factory=dict)
    start_as_waiting: bool = False
    traceparent: TraceParent | None = None
    tracestate: TraceState | None = None
    tasks: list[TaskIn] | None = None
    retry_policy: RetryPolicyIn | None = None


class JobIn(Body):
    name: JobName
    data: JsonObject
    priority: Priority = Priority.MEDIUM
    user_metadata: JsonObject = Field(default_factory=dict)
    traceparent: TraceParent | None = None
    tracestate: TraceState | None = None
    stages: list[StageIn] | None = None


class JobStatusIn(Body):
    status: Literal[JobStatus.PENDING, JobStatus.PAUSED, JobStatus.ABORTED]


class StageStatusIn(Body):
    status: Literal[StageStatus.PENDING]


class PriorityIn(Body):
    priority: Priority


class ReportIn(Body):
    status: Literal[TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.RETRIED]
    lease_id: uuid.UUID | None = None
    result: JsonObject | None = None
    reason: Reason | None = None
    retryable: bool | None = None
    retry_after_seconds: Seconds | None = None

    @model_validator(mode="after")
    def _fits_the_status(self) -> Self:
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

    def report(self, task_id: uuid.UUID) -> TaskReport:
        """The report as the SDK has it."""
        delay = self.retry_after_seconds
        return TaskReport.model_construct(
            **self.model_dump(exclude={"retry_after_seconds", "retryable", "task_id"}),
            task_id=task_id,
            retryable=self.retryable is not False,
            retry_after=None if delay is None else timedelta(seconds=delay),
        )


class ReportItemIn(ReportIn):
    task_id: uuid.UUID


class ReportsIn(Body):
    reports: list[ReportItemIn] = Field(min_length=1, max_length=100)


class HeartbeatIn(Body):
    lease_id: uuid.UUID
    progress: int | None = Field(default=None, ge=0, le=100)
    lease_seconds: LeaseSeconds | None = None


class HeartbeatItemIn(Body):
    task_id: uuid.UUID
    lease_id: uuid.UUID
    progress: int | None = Field(default=None, ge=0, le=100)


class HeartbeatsIn(Body):
    heartbeats: list[HeartbeatItemIn] = Field(min_length=1, max_length=100)
    lease_seconds: LeaseSeconds | None = None


class ClaimIn(Body):
    stage_types: list[StageType] = Field(min_length=1, max_length=20)
    limit: int = Field(default=1, ge=1, le=100)
    lease_seconds: LeaseSeconds | None = None
    worker: WorkerName | None = None
    wait_seconds: WaitSeconds | None = None
    with_context: bool = False


# ---- query strings ------------------------------------------------------------------------


class Query(BaseModel):
    model_config = ConfigDict(extra="ignore")


class PageQuery(Query):
    page: int = Field(default=1, ge=1, le=1_000_000)
    page_size: int = Field(default=10, ge=1, le=100)


class JobsQuery(PageQuery):
    job_name: str | None = Field(default=None, min_length=2, max_length=50)
    from_date: datetime | None = None
    end_date: datetime | None = None
    priority: Priority | None = None
    should_return_stages: bool = False


class StagesQuery(PageQuery):
    job_id: uuid.UUID | None = None
    stage_type: str | None = Field(default=None, min_length=1, max_length=50)
    stage_operation_status: StageStatus | None = None
    should_return_tasks: bool = False


class TasksQuery(PageQuery):
    stage_id: uuid.UUID | None = None
    stage_type: str | None = Field(default=None, min_length=1, max_length=50)
    from_date: datetime | None = None
    end_date: datetime | None = None
    status: TaskStatus | None = None


class EventsQuery(PageQuery):
    page_size: int = Field(default=10, ge=1, le=1000)


class WithStagesQuery(Query):
    should_return_stages: bool = False


class WithTasksQuery(Query):
    should_return_tasks: bool = False


class DequeueQuery(Query):
    lease_seconds: float | None = Field(default=None, ge=1, le=WEEK, allow_inf_nan=False)
    worker: str | None = Field(default=None, min_length=1, max_length=100)
