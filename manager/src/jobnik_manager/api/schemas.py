"""Wire models of the Jobnik v1 API (camelCase JSON), plus our optional extensions."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Annotated, Any, Generic, Literal, Self, TypeVar

import orjson
from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
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
from ..domain.task_events import MAX_FIELDS_BYTES, EventLevel
from ..domain.tasks import DEFAULT_MAX_ATTEMPTS
from ..services.specs import NewJob, NewStage, NewTask
from .json_values import JsonObject, no_nul
from .same_named import same_named

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
UniqueKey = Annotated[str, Field(min_length=1, max_length=255, strict=True), AfterValidator(no_nul)]
# Up to a year; above zero (a window of nothing would hold the key for no one).
UniqueWindow = Annotated[float, Field(strict=True, gt=0, le=366 * 86400, allow_inf_nan=False)]
LeaseSeconds = Annotated[float, Field(strict=True, ge=1, le=MAX_LEASE_SECONDS, allow_inf_nan=False)]
WorkerName = Annotated[
    str, Field(min_length=1, max_length=100, strict=True), AfterValidator(no_nul)
]
Reason = Annotated[str, Field(max_length=2000, strict=True), AfterValidator(no_nul)]
# A worker's name for what went wrong: an exception's class name, say.
ErrorType = Annotated[str, Field(min_length=1, max_length=200, strict=True), AfterValidator(no_nul)]
EventName = Annotated[str, Field(min_length=1, max_length=100, strict=True), AfterValidator(no_nul)]


def _text_only(value: object) -> object:
    """A time on the wire is an RFC 3339 string, not a number of seconds."""
    if not isinstance(value, str | datetime):
        raise ValueError("a date-time string with its offset, e.g. 2026-11-24T10:00:00Z")
    return value


Schedule = Annotated[AwareDatetime, BeforeValidator(_text_only)]


def _not_a_number(value: object) -> object:
    """A time in a query is a date-time, not a number of seconds since the epoch, which
    pydantic would take `0.5` for."""
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return value
        raise ValueError("a date-time, e.g. 2026-11-24T10:00:00Z, not a number")
    return value


QueryTime = Annotated[datetime, BeforeValidator(_not_a_number)]
# An attempt's time limit: above zero, at most a week.
Timeout = Annotated[float, Field(strict=True, gt=0, le=WEEK_SECONDS, allow_inf_nan=False)]
ProgressMessage = Annotated[str, Field(max_length=500, strict=True), AfterValidator(no_nul)]


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
    jitter: Annotated[float, Field(strict=True, ge=0, le=1, allow_inf_nan=False)] = 0.0
    non_retryable_errors: list[ErrorType] = Field(default_factory=list, max_length=50)

    @model_validator(mode="after")
    def _cap_above_start(self) -> Self:
        if self.max_delay_seconds < self.initial_delay_seconds:
            raise ValueError("maxDelaySeconds must be at least initialDelaySeconds")
        return self

    def to_domain(self) -> RetryPolicy:
        return RetryPolicy(
            initial_delay=timedelta(seconds=self.initial_delay_seconds),
            multiplier=self.multiplier,
            max_delay=timedelta(seconds=self.max_delay_seconds),
            jitter=self.jitter,
            non_retryable=tuple(dict.fromkeys(self.non_retryable_errors)),
        )


class TaskCreate(Inbound):
    data: JsonObject
    user_metadata: JsonObject = Field(default_factory=dict)
    max_attempts: StrictInt = Field(default=DEFAULT_MAX_ATTEMPTS, ge=1, le=INT32_MAX)
    traceparent: TraceParent | None = None
    tracestate: TraceState | None = None
    # Extension: the delay between attempts (default: the stage's, else none).
    retry_policy: RetryPolicyIn | None = None
    # Extension: not claimable before this time (nor before its job's `notBefore`).
    not_before: Schedule | None = None
    # Extension: how long an attempt may run (default: its stage's, else no limit).
    timeout_seconds: Timeout | None = None
    # Extension: never handed out from this time on; aborted ("expired") if still waiting
    # (nor after its job's `expiresAt`).
    expires_at: Schedule | None = None

    def to_new(self) -> NewTask:
        # Field by field, not by `same_named`: one per task of a create, this is a third
        # of the time (tests/unit/test_schemas_to_new.py holds the two alike).
        return NewTask(
            data=self.data,
            user_metadata=self.user_metadata,
            max_attempts=self.max_attempts,
            traceparent=self.traceparent,
            tracestate=self.tracestate,
            retry_policy=self.retry_policy.to_domain() if self.retry_policy else None,
            not_before=self.not_before,
            timeout_seconds=self.timeout_seconds,
            expires_at=self.expires_at,
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
    # Extension: how many of its tasks may fail for good with the stage still completing.
    allowed_failures: StrictInt = Field(default=0, ge=0, le=INT32_MAX)
    # Extension: how long an attempt of its tasks that bring no limit of their own may run.
    timeout_seconds: Timeout | None = None

    def to_new(self) -> NewStage:
        policy = self.retry_policy.to_domain() if self.retry_policy else None
        tasks = [t.to_new() for t in self.tasks or ()]
        given = {"tasks": tasks, "retry_policy": policy, "without_tasks": self.tasks == []}
        return NewStage(**same_named(self, NewStage, **given))


class JobCreate(Inbound):
    name: JobName
    data: JsonObject
    priority: Priority = Priority.MEDIUM
    user_metadata: JsonObject = Field(default_factory=dict)
    traceparent: TraceParent | None = None
    tracestate: TraceState | None = None
    # Extension: the job's stages (and their tasks), created in the same transaction.
    stages: list[StageCreate] | None = None
    # Extension: none of its tasks claimable before this time.
    not_before: Schedule | None = None
    # Extension: failed ("deadline exceeded"), its unfinished tasks aborted, if it is not
    # final by this time.
    deadline: Schedule | None = None
    # Extension: one job per key. While the job holding the key is not final (or, with a
    # window, until that long after its creation), a create with the key answers it.
    unique_key: UniqueKey | None = None
    unique_window_seconds: UniqueWindow | None = None
    # Extension: aborted ("expired") if none of its tasks has started by this time; no
    # task of it is handed out from then on.
    expires_at: Schedule | None = None

    @model_validator(mode="after")
    def _window_with_a_key(self) -> Self:
        if self.unique_window_seconds is not None and self.unique_key is None:
            raise ValueError("uniqueWindowSeconds goes with a uniqueKey")
        return self

    def to_new(self) -> NewJob:
        stages = [st.to_new() for st in self.stages or ()]
        window = self.unique_window_seconds
        # The owner is who asks (api.auth), never a field of the body.
        return NewJob(
            **same_named(
                self,
                NewJob,
                stages=stages,
                owner=None,
                priority_number=None,  # an OJS job's; v1 names one of five priorities
                unique_window=None if window is None else timedelta(seconds=window),
            )
        )


class JobStatusChange(Inbound):
    status: Literal[JobStatus.PENDING, JobStatus.PAUSED, JobStatus.ABORTED]


class StageStatusChange(Inbound):
    status: Literal[StageStatus.PENDING]


class TaskStatusReport(Inbound):
    """COMPLETED or FAILED (reference); RETRIED is our "retry later" extension."""

    # ABORTED (an extension) cancels the task, whoever holds it.
    status: Literal[TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.RETRIED, TaskStatus.ABORTED]
    lease_id: uuid.UUID | None = None
    result: JsonObject | None = None
    reason: Reason | None = None
    retryable: StrictBool | None = None
    retry_after_seconds: Seconds | None = None
    error_type: ErrorType | None = None

    @model_validator(mode="after")
    def _fields_fit_the_status(self) -> Self:
        status = TaskStatus(self.status)
        if self.result is not None and status is not TaskStatus.COMPLETED:
            raise ValueError("result goes with a COMPLETED report only")
        if self.retryable is not None and status is not TaskStatus.FAILED:
            raise ValueError("retryable goes with a FAILED report only")
        if self.error_type is not None and status is not TaskStatus.FAILED:
            raise ValueError("errorType goes with a FAILED report only")
        if self.reason is not None and status is TaskStatus.COMPLETED:
            raise ValueError("reason goes with a FAILED, RETRIED or ABORTED report only")
        if (self.retry_after_seconds is None) == (status is TaskStatus.RETRIED):
            raise ValueError("retryAfterSeconds is required with RETRIED, and only there")
        return self


class BatchReportItem(TaskStatusReport):
    task_id: uuid.UUID


class BatchReport(Inbound):
    reports: list[BatchReportItem] = Field(min_length=1, max_length=100)
    # False: each outcome names its task, or its error, without the task as it now is (a
    # worker that only needs to know that each report stood spares both sides the
    # tasks' encoding and parsing).
    with_tasks: StrictBool = True


class ProgressReport(Inbound):
    """What a heartbeat may say of the work: a percentage, or `current` of `total` done
    (from which the percentage follows), and a message."""

    progress: StrictInt | None = Field(default=None, ge=0, le=100)
    # Extensions.
    message: ProgressMessage | None = None
    current: StrictInt | None = Field(default=None, ge=0, le=2**63 - 1)
    total: StrictInt | None = Field(default=None, ge=1, le=2**63 - 1)

    @model_validator(mode="after")
    def _counts_fit(self) -> Self:
        if (self.current is None) != (self.total is None):
            raise ValueError("current and total go together")
        if self.current is not None and self.total is not None and self.current > self.total:
            raise ValueError("current must not be more than total")
        return self

    @property
    def percent(self) -> int | None:
        """`progress`, or else what `current` of `total` makes."""
        if self.progress is not None or self.current is None or self.total is None:
            return self.progress
        return (100 * self.current) // self.total


class Heartbeat(ProgressReport):
    lease_id: uuid.UUID
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


class HeartbeatItem(ProgressReport):
    task_id: uuid.UUID
    lease_id: uuid.UUID


class BatchHeartbeat(Inbound):
    heartbeats: list[HeartbeatItem] = Field(min_length=1, max_length=100)
    lease_seconds: LeaseSeconds | None = None


class TaskEventIn(Inbound):
    """Extension: an entry for the task's job history, by the task's worker."""

    name: EventName
    message: Reason | None = None
    level: EventLevel = EventLevel.INFO
    fields: JsonObject | None = None
    lease_id: uuid.UUID | None = None

    @model_validator(mode="after")
    def _fields_fit(self) -> Self:
        if self.fields is not None and len(orjson.dumps(self.fields)) > MAX_FIELDS_BYTES:
            raise ValueError(f"fields must be at most {MAX_FIELDS_BYTES} bytes of JSON")
        return self


AssetType = Annotated[str, Field(min_length=1, max_length=50, strict=True), AfterValidator(no_nul)]
AssetUri = Annotated[str, Field(min_length=1, max_length=2000, strict=True), AfterValidator(no_nul)]
AssetName = Annotated[str, Field(min_length=1, max_length=200, strict=True), AfterValidator(no_nul)]


class AssetIn(Inbound):
    """Extension: an output of the task's job: its type, where it is, its size."""

    type: AssetType
    uri: AssetUri
    size_bytes: StrictInt | None = Field(default=None, ge=0, le=2**63 - 1)
    name: AssetName | None = None


class AssetsIn(Inbound):
    assets: list[AssetIn] = Field(min_length=1, max_length=100)
    lease_id: uuid.UUID | None = None


class JobResultIn(Inbound):
    """Extension: the result of the task's job (a JSON object; the last one set stands)."""

    result: JsonObject
    lease_id: uuid.UUID | None = None


class PriorityChange(Inbound):
    priority: Priority


# ---- responses --------------------------------------------------------------------------


class ErrorMessage(Outbound):
    message: str
    code: str


class TokenCreate(Inbound):
    name: Annotated[str, Field(min_length=1, max_length=100, strict=True), AfterValidator(no_nul)]
    role: Literal["producer", "worker", "operator", "admin"]
    stage_types: list[StageType] | None = Field(default=None, max_length=100)


class TokenOut(Outbound):
    name: str
    role: str
    stage_types: list[str] | None = None
    created_at: datetime
    revoked_at: datetime | None = None
    # Only in the answer to its creation: its text, never stored.
    token: str | None = None


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
    progress_message: str | None = None
    not_before: datetime | None = None
    retry_policy: dict[str, object] | None = None
    timeout_seconds: float | None = None
    reason: str | None = None
    result: dict[str, object] | None = None
    expires_at: datetime | None = None


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


class AssetOut(Outbound):
    id: uuid.UUID
    job_id: uuid.UUID
    task_id: uuid.UUID | None = None
    type: str
    uri: str
    size_bytes: int | None = None
    name: str | None = None
    created_at: datetime


class AssetsOut(Outbound):
    items: list[AssetOut]


class EventOut(Outbound):
    id: int
    time: datetime
    entity: Literal["JOB", "STAGE", "TASK"]
    entity_id: uuid.UUID
    job_id: uuid.UUID
    stage_id: uuid.UUID | None = None
    task_id: uuid.UUID | None = None
    from_status: str | None
    # None for an entry a task's worker added (then `name` is set).
    to_status: str | None
    attempt: int | None = None
    lease_id: uuid.UUID | None = None
    worker: str | None = None
    reason: str | None = None
    # Extension: an entry a task's worker added (POST /v1/tasks/{taskId}/events).
    name: str | None = None
    level: EventLevel | None = None
    message: str | None = None
    fields: dict[str, object] | None = None
    # Extension, present with authentication on: the token name whose request made it.
    principal: str | None = None


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
    # Extensions, present when set: its first claim, its final status, and why it failed
    # or was aborted.
    start_time: datetime | None = None
    end_time: datetime | None = None
    reason: str | None = None
    # Extensions, present when set: the failures it allows, and that it completed with
    # some (partial).
    allowed_failures: int | None = None
    partial: bool | None = None
    timeout_seconds: float | None = None
    # Extension: how far it is, 0 to 100, counting what its running tasks reported (v1's
    # `percentage` counts completed tasks only). On reads of stages and jobs.
    progress: float | None = None


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
    # Extensions, present when set: its first claim, its final status, why it failed or
    # was aborted and, for a failure, the task (and its stage) that failed it.
    start_time: datetime | None = None
    end_time: datetime | None = None
    reason: str | None = None
    failed_task_id: uuid.UUID | None = None
    failed_stage_id: uuid.UUID | None = None
    # Extension, present when true: COMPLETED with failures its stages allowed.
    partial: bool | None = None
    # Extension, present when set (and still to come at its creation): none of its
    # tasks claimable before then.
    not_before: datetime | None = None
    # Extension, present when set: failed if not final by then.
    deadline: datetime | None = None
    # Extension: how far it is, 0 to 100, the mean of its stages' progress.
    progress: float | None = None
    # Extension, present with authentication on: the name of the token that created it.
    owner: str | None = None
    # Extension, present when it was created with one: its unique key.
    unique_key: str | None = None
    # Extension, present when one of its tasks set it: what the job produced.
    result: dict[str, Any] | None = None
    # Extension, present when set: aborted ("expired") if none of its tasks started by then.
    expires_at: datetime | None = None


ItemT = TypeVar("ItemT")


class Page(Outbound, Generic[ItemT]):
    total: int
    items: list[ItemT]


class OkMessage(Outbound):
    code: str
