"""What the fake manager accepts: the request bodies and query strings of the Jobnik API
with the manager's limits. Bodies are strict JSON with no unknown fields; query strings
are read as FastAPI reads them (unknown parameters are ignored)."""

from __future__ import annotations

import json
import math
import uuid
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal, Self, get_args, get_origin

import httpx
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_validator,
)
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


def _is_list(model: type[BaseModel], name: str) -> bool:
    field = model.model_fields.get(name)
    if field is None:
        return False
    kinds = (field.annotation, *get_args(field.annotation))  # list[X] | None included
    return any(get_origin(kind) is list for kind in kinds)


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


def _time_text(value: object) -> datetime:
    """An RFC 3339 date-time with its offset, as the manager takes it (not a number)."""
    if not isinstance(value, str):
        raise ValueError("a date-time string with its offset, e.g. 2026-11-24T10:00:00Z")
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError("Input should have timezone info")
    return parsed


Schedule = Annotated[datetime, BeforeValidator(_time_text)]
Timeout = Annotated[float, Field(gt=0, le=WEEK, allow_inf_nan=False)]


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
    not_before: Schedule | None = None
    timeout_seconds: Timeout | None = None


class StageIn(Body):
    type: StageType
    data: JsonObject
    user_metadata: JsonObject = Field(default_factory=dict)
    start_as_waiting: bool = False
    traceparent: TraceParent | None = None
    tracestate: TraceState | None = None
    tasks: list[TaskIn] | None = None
    retry_policy: RetryPolicyIn | None = None
    allowed_failures: int = Field(default=0, ge=0, le=2**31 - 1)
    timeout_seconds: Timeout | None = None


class JobIn(Body):
    name: JobName
    data: JsonObject
    priority: Priority = Priority.MEDIUM
    user_metadata: JsonObject = Field(default_factory=dict)
    traceparent: TraceParent | None = None
    tracestate: TraceState | None = None
    stages: list[StageIn] | None = None
    not_before: Schedule | None = None
    deadline: Schedule | None = None


class JobStatusIn(Body):
    status: Literal[JobStatus.PENDING, JobStatus.PAUSED, JobStatus.ABORTED]


class StageStatusIn(Body):
    status: Literal[StageStatus.PENDING]


class PriorityIn(Body):
    priority: Priority


class ReportIn(Body):
    # ABORTED (an extension) cancels the task, whoever holds it.
    status: Literal[TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.RETRIED, TaskStatus.ABORTED]
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
            raise ValueError("reason goes with a FAILED, RETRIED or ABORTED report only")
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


class ProgressIn(Body):
    progress: int | None = Field(default=None, ge=0, le=100)
    message: Annotated[str, _text(0, 500), AfterValidator(_no_nul)] | None = None
    current: int | None = Field(default=None, ge=0, le=2**63 - 1)
    total: int | None = Field(default=None, ge=1, le=2**63 - 1)

    @model_validator(mode="after")
    def _counts_fit(self) -> Self:
        if (self.current is None) != (self.total is None):
            raise ValueError("current and total go together")
        if self.current is not None and self.total is not None and self.current > self.total:
            raise ValueError("current must not be more than total")
        return self

    @property
    def percent(self) -> int | None:
        if self.progress is not None or self.current is None or self.total is None:
            return self.progress
        return (100 * self.current) // self.total


class HeartbeatIn(ProgressIn):
    lease_id: uuid.UUID
    lease_seconds: LeaseSeconds | None = None


class HeartbeatItemIn(ProgressIn):
    task_id: uuid.UUID
    lease_id: uuid.UUID


class HeartbeatsIn(Body):
    heartbeats: list[HeartbeatItemIn] = Field(min_length=1, max_length=100)
    lease_seconds: LeaseSeconds | None = None


class TaskEventIn(Body):
    name: Annotated[str, _text(1, 100), AfterValidator(_no_nul)]
    message: Reason | None = None
    level: Literal["info", "warning", "error"] = "info"
    fields: JsonObject | None = None
    lease_id: uuid.UUID | None = None

    @model_validator(mode="after")
    def _fields_fit(self) -> Self:
        limit = 16 * 1024
        compact = json.dumps(self.fields, separators=(",", ":"), ensure_ascii=False)
        if self.fields is not None and len(compact.encode()) > limit:
            raise ValueError(f"fields must be at most {limit} bytes of JSON")
        return self


class ClaimIn(Body):
    stage_types: list[StageType] = Field(min_length=1, max_length=20)
    limit: int = Field(default=1, ge=1, le=100)
    lease_seconds: LeaseSeconds | None = None
    worker: WorkerName | None = None
    wait_seconds: WaitSeconds | None = None
    with_context: bool = False


# ---- query strings ------------------------------------------------------------------------


class Query(BaseModel):
    """A query string: a parameter the route does not take is refused, as the manager
    refuses it; a list field takes the parameter's every value (`?status=A&status=B`)."""

    model_config = ConfigDict(extra="forbid")

    @classmethod
    def of(cls, params: httpx.QueryParams) -> Self:
        values = {
            name: params.get_list(name) if _is_list(cls, name) else params[name] for name in params
        }
        return cls.model_validate(values)


class PageQuery(Query):
    page: int = Field(default=1, ge=1, le=1_000_000)
    page_size: int = Field(default=10, ge=1, le=100)


class JobsQuery(PageQuery):
    job_name: str | None = Field(default=None, min_length=2, max_length=50)
    from_date: datetime | None = None
    end_date: datetime | None = None
    priority: Priority | None = None
    status: list[JobStatus] | None = None
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
