"""Typed views of the manager's entities, and the specs used to create them.

Field names are snake_case in Python and camelCase on the wire. Entities ignore fields
they do not know, so a newer manager that answers with more stays readable.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Generic, Literal, Self, TypeVar, overload

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    SerializerFunctionWrapHandler,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from jobnik_protocol.rules import retries_error, retry_delay
from jobnik_protocol.summary import Summary

# Exported from here (__all__) as they are: defined once, in jobnik_protocol.
from jobnik_protocol.wire import JobStatus, Priority, StageStatus, TaskStatus

# The public entities, which the package exports as they are.
__all__ = [
    "DeadLetter",
    "DeadLetterSkip",
    "DeadLettersHandled",
    "Event",
    "Job",
    "JobAsset",
    "JobStatus",
    "NewAsset",
    "NewJob",
    "NewStage",
    "NewTask",
    "Page",
    "Priority",
    "Schedule",
    "ScheduleRun",
    "Stage",
    "StageStatus",
    "Summary",
    "Task",
    "TaskFailure",
    "TaskRetryPolicy",
    "TaskStatus",
]


class _Wire(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore"
    )


class _SummaryAnswer(RootModel[Summary]):
    """A stage's summary read on its own (`GET /v1/stages/{id}/summary`)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


def read_summary(answer: object) -> Summary:
    return _SummaryAnswer.model_validate(answer).root


# The longest delay the manager accepts.
_WEEK = timedelta(days=7)


class TaskRetryPolicy(_Wire):
    """How long a task waits before it is offered again after a failed attempt.

    After the n-th failed attempt the manager holds the task back for
    `min(initial_delay * multiplier ** (n - 1), max_delay)`. Set it on a task
    (`NewTask.retry_policy`) or on a stage, whose policy its tasks get unless they bring
    their own. Without one, a failed task is offered again at once. How many attempts a
    task gets is its `max_attempts`, not part of the policy.

    `jitter` (0 to 1) spreads each wait down by up to that share of it, at random, so
    that tasks failed together do not come back together. A failure whose error type (a
    Worker sends its exception's class name) is one of `non_retryable_errors` fails the
    task for good, whatever attempts it has left.

    On the wire: `{"initialDelaySeconds", "multiplier", "maxDelaySeconds", "jitter",
    "nonRetryableErrors"}`.
    """

    initial_delay: timedelta = Field(alias="initialDelaySeconds", ge=timedelta(0), le=_WEEK)
    multiplier: float = Field(default=2.0, ge=1, le=100)
    max_delay: timedelta = Field(default=timedelta(hours=1), alias="maxDelaySeconds", le=_WEEK)
    # Extensions of the policy, left off the wire when unset.
    jitter: float | None = Field(default=None, ge=0, le=1)
    non_retryable_errors: tuple[str, ...] | None = Field(default=None, max_length=50)

    @model_validator(mode="after")
    def _cap_above_start(self) -> Self:
        if self.max_delay < self.initial_delay:
            raise ValueError("max_delay must be at least initial_delay")
        return self

    @field_serializer("initial_delay", "max_delay")
    def _as_seconds(self, value: timedelta) -> float:
        return value.total_seconds()

    def delay_after(self, failed_attempts: int) -> timedelta:
        """The longest wait after the `failed_attempts`-th failed attempt (none before the
        first); with `jitter` the manager waits between (1 - jitter) and 1 times this."""
        return retry_delay(self, failed_attempts)

    def retries(self, error_type: str | None) -> bool:
        """Whether a failure of `error_type` may be tried again under this policy."""
        return retries_error(self.non_retryable_errors or (), error_type)


class Task(_Wire):
    """A unit of work. `attempts` counts the failed attempts so far.

    A claimed task carries its lease (`lease_id`, `lease_expires_at`) and the `worker`
    that claimed it, if it gave a name. `reason` is the last failure's (or retry-later's),
    `result` what a COMPLETED report sent, `progress` the last heartbeat's percentage,
    and `not_before` when a task waiting out a retry delay may be claimed again.
    """

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
    # Not in the reference Jobnik API: absent there, hence the defaults.
    lease_id: uuid.UUID | None = None
    lease_expires_at: datetime | None = None
    worker: str | None = None
    not_before: datetime | None = None
    reason: str | None = None
    result: dict[str, Any] | None = None
    progress: int | None = None
    # What the work is at, in words, from its last heartbeat that said.
    progress_message: str | None = None
    # How long an attempt may run; past it the manager fails the attempt "timed out".
    timeout_seconds: float | None = None
    retry_policy: TaskRetryPolicy | None = None
    # Never handed out from then on; aborted ("expired") if still waiting by then.
    expires_at: datetime | None = None


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
    retry_policy: TaskRetryPolicy | None = None
    # Not in the reference Jobnik API: when it started (first claim) and ended (a final
    # status), and why it failed or was aborted.
    start_time: datetime | None = None
    end_time: datetime | None = None
    reason: str | None = None
    # Not in the reference Jobnik API: how many of its tasks may fail for good with the
    # stage still completing, and whether it completed with some failed (partial).
    allowed_failures: int = 0
    partial: bool = False
    timeout_seconds: float | None = None
    # How far it is, 0 to 100: its completed tasks and what its running tasks last
    # reported (`percentage` counts completed tasks only). Set on reads.
    progress: float | None = None

    @field_serializer("summary", mode="wrap")
    def _summary_with_total(
        self, summary: Summary, counters: SerializerFunctionWrapHandler
    ) -> dict[str, int]:
        # As the manager writes it: the counters, then their sum.
        return {**counters(summary), "total": summary.total}


class Job(_Wire):
    """An ordered list of stages. `stages` is set when asked for.

    How it went: `start_time` (its first claim), `end_time` (its final status) and, when
    FAILED or ABORTED, `reason`; a failed job names the task that failed it
    (`failed_task_id`, in stage `failed_stage_id`), whose reason it carries."""

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
    # Not in the reference Jobnik API: when it started (first claim) and ended (a final
    # status), why it failed or was aborted and, for a failure, the task that failed it
    # and that task's stage.
    start_time: datetime | None = None
    end_time: datetime | None = None
    reason: str | None = None
    failed_task_id: uuid.UUID | None = None
    failed_stage_id: uuid.UUID | None = None
    # COMPLETED with failures its stages allowed (`NewStage.allowed_failures`).
    partial: bool = False
    # Scheduled: none of its tasks claimable before then (set when created with one).
    not_before: datetime | None = None
    # Failed ("deadline exceeded") if not final by then.
    deadline: datetime | None = None
    # How far it is, 0 to 100: the mean of its stages' progress. Set on reads.
    progress: float | None = None
    # The unique key it was created with, if any (`create_job(unique_key=...)`).
    unique_key: str | None = None
    # What it produced, as one of its tasks set it (`TaskContext.set_job_result`).
    result: dict[str, Any] | None = None
    # Aborted ("expired") if none of its tasks started by then (`create_job(expires_at=)`).
    expires_at: datetime | None = None


class NewAsset(_Wire):
    """An output of a job to record: its `type` (1-50 characters, yours to name: a tile
    pyramid, a report), where it is (`uri`: a URL or a path, up to 2000 characters)
    and, when known, its size and a name."""

    type: str = Field(min_length=1, max_length=50)
    uri: str = Field(min_length=1, max_length=2000)
    size_bytes: int | None = Field(default=None, ge=0, le=2**63 - 1)
    name: str | None = Field(default=None, min_length=1, max_length=200)


class JobAsset(NewAsset):
    """An output a job's task recorded (`TaskContext.add_asset`), listed with the job
    (`list_job_assets`) in the order they were recorded."""

    id: uuid.UUID
    job_id: uuid.UUID
    task_id: uuid.UUID | None = None
    created_at: datetime


class TaskFailure(_Wire):
    """One failed attempt of a task: RETRIED when attempts were left, FAILED for the last."""

    time: datetime
    attempt: int | None = None
    status: TaskStatus
    reason: str | None = None
    worker: str | None = None


class DeadLetter(_Wire):
    """A task that failed for good (`list_dead_letters`), with its job and its failed
    attempts, oldest first (the latest 20)."""

    task: Task
    job_id: uuid.UUID
    job_name: str
    job_status: JobStatus
    stage_type: str
    errors: list[TaskFailure] = Field(default_factory=list)


class DeadLetterSkip(_Wire):
    """A dead letter a retry or a discard left alone, and why (`code`, `message`)."""

    task_id: uuid.UUID
    code: str
    message: str


class DeadLettersHandled(_Wire):
    """What `retry_dead_letters` or `discard_dead_letters` did: the `tasks` it took
    (and, for a retry, the FAILED `jobs` it replayed), and those it `skipped`."""

    tasks: list[uuid.UUID]
    jobs: list[uuid.UUID] = Field(default_factory=list)
    skipped: list[DeadLetterSkip] = Field(default_factory=list)


ItemT = TypeVar("ItemT")


class Page(_Wire, Generic[ItemT]):
    """One page of a list: `total` counts every match, `items` holds this page's."""

    total: int
    items: list[ItemT]


# How much an entry a task's worker adds to its job's history matters.
EventLevel = Literal["info", "warning", "error"]


class Event(_Wire):
    """One entry of a job's event history: a status change of the job, a stage or a
    task, or an entry a task's worker added (`TaskContext.emit`).

    `entity` is JOB, STAGE or TASK; `from_status` is None when the entity was created.
    Task events also carry `stage_id`, `task_id`, `attempt` (failed attempts so far),
    `lease_id`, `worker` and `reason` where they apply. An added entry has no status
    (`to_status` None) but a `name`, a `level` (info, warning, error), and optionally a
    `message` and `fields`.
    """

    id: int
    time: datetime
    entity: str
    entity_id: uuid.UUID
    job_id: uuid.UUID
    stage_id: uuid.UUID | None = None
    task_id: uuid.UUID | None = None
    from_status: str | None = None
    to_status: str | None = None
    attempt: int | None = None
    lease_id: uuid.UUID | None = None
    worker: str | None = None
    reason: str | None = None
    name: str | None = None
    level: str | None = None
    message: str | None = None
    fields: dict[str, Any] | None = None
    # With authentication on: the token name whose request made the change.
    principal: str | None = None


class NewTask(_Wire):
    """A task to create: its data, how many attempts it gets (the manager's default is 1),
    and how long it waits between them (`retry_policy`; the stage's policy otherwise)."""

    data: dict[str, Any] = Field(default_factory=dict)
    user_metadata: dict[str, Any] | None = None
    max_attempts: int | None = Field(default=None, ge=1)
    traceparent: str | None = None
    tracestate: str | None = None
    retry_policy: TaskRetryPolicy | None = None
    # Scheduled: not claimable before this time (an aware datetime), nor before its
    # job's `not_before`.
    not_before: datetime | None = None
    # How long an attempt may run before the manager fails it "timed out" (None: its
    # stage's `timeout_seconds`, else no limit).
    timeout_seconds: float | None = Field(default=None, gt=0)
    # Never handed out from this time on (nor after its job's `expires_at`); aborted
    # ("expired") if it is still waiting then. An aware datetime still to come.
    expires_at: datetime | None = None

    @field_validator("not_before", "expires_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("a time must carry its time zone (e.g. datetime.now(UTC))")
        return value


class NewStage(_Wire):
    """A stage to create, optionally WAITING for approval and with its tasks.

    `retry_policy` is the default for the stage's tasks that bring none of their own.
    """

    type: str
    data: dict[str, Any] = Field(default_factory=dict)
    user_metadata: dict[str, Any] | None = None
    start_as_waiting: bool = False
    tasks: Sequence[NewTask] | None = None
    traceparent: str | None = None
    tracestate: str | None = None
    retry_policy: TaskRetryPolicy | None = None
    # Partial success: up to this many of its tasks may fail for good and the stage (and
    # its job) still complete, marked `partial`. None: the manager's default, 0.
    allowed_failures: int | None = Field(default=None, ge=0)
    # The time limit of an attempt of its tasks that bring none of their own.
    timeout_seconds: float | None = Field(default=None, gt=0)


class NewJob(_Wire):
    """A job to make at each time of a schedule (`put_schedule`): what `create_job`
    takes, but for `not_before` and `deadline`, which are times of one job."""

    name: str
    data: dict[str, Any] = Field(default_factory=dict)
    priority: Priority = Priority.MEDIUM
    user_metadata: dict[str, Any] | None = None
    stages: Sequence[NewStage] | None = None
    # One job per key: a time whose key is held makes none (its run says `unique`).
    unique_key: str | None = None
    unique_window_seconds: float | None = Field(default=None, gt=0)


class Schedule(_Wire):
    """A named schedule (`put_schedule`): at each time of `cron` (read in `timezone`) or
    every `interval_seconds`, it makes the job its `job` describes (a POST /v1/jobs
    body). `overlap_policy` "skip" makes none while its last job is not final, "allow"
    makes it anyway; after a downtime, `missed_runs` "one" makes one job for the times
    missed, "skip" none. `next_run_at` is None while paused."""

    name: str
    cron: str | None = None
    interval_seconds: float | None = None
    timezone: str = "UTC"
    job: dict[str, Any]
    overlap_policy: Literal["skip", "allow"] = "skip"
    missed_runs: Literal["one", "skip"] = "one"
    description: str | None = None
    paused: bool = False
    paused_at: datetime | None = None
    next_run_at: datetime | None = None
    last_run_at: datetime | None = None
    last_job_id: uuid.UUID | None = None
    run_count: int = 0
    skipped_count: int = 0
    owner: str | None = None
    created_at: datetime
    updated_at: datetime


class ScheduleRun(_Wire):
    """One time of a schedule and what came of it: `job_id`, or why none (`skipped`:
    missed, overlap or unique). `manual` for one made by `run_schedule`."""

    schedule: str
    run_at: datetime
    job_id: uuid.UUID | None = None
    skipped: str | None = None
    manual: bool = False
    made_at: datetime


def wire(spec: BaseModel) -> dict[str, Any]:
    """A spec as the manager expects it: camelCase, unset options left out."""
    return spec.model_dump(mode="json", by_alias=True, exclude_none=True)


@overload
def seconds(duration: timedelta) -> int | float: ...
@overload
def seconds(duration: None) -> None: ...
def seconds(duration: timedelta | None) -> int | float | None:
    """A duration in seconds as the wire takes it: whole seconds as an int (None stays
    None, an option left unset)."""
    if duration is None:
        return None
    value = duration.total_seconds()
    return int(value) if value.is_integer() else value


def given(**fields: Any) -> dict[str, Any]:
    """A request body of the fields whose value is not None, ids in their string form: an
    option left unset is left out, so a body without options is the reference API's."""
    return {
        key: str(value) if isinstance(value, uuid.UUID) else value
        for key, value in fields.items()
        if value is not None
    }


# Ids may be passed as UUIDs or as their string form.
EntityId = uuid.UUID | str
