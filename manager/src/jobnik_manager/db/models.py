"""The tables. Tasks carry their stage type and job priority so that claiming reads
one partial index holding only claimable tasks (see `claimable`)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    SmallInteger,
    String,
    Table,
    UniqueConstraint,
    Uuid,
    bindparam,
    false,
    literal,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.sql.elements import BindParameter

from ..domain.statuses import JobStatus, Priority, StageStatus, TaskStatus
from ..domain.summary import COUNTERS
from .types import EnumText, JsonColumn, UtcDateTime

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# SQLite only auto-increments an INTEGER PRIMARY KEY.
SeqType = BigInteger().with_variant(Integer(), "sqlite")


def _partial_index(name: str, column: str, where: str) -> Index:
    """An index of the rows `where` holds for, alike on PostgreSQL and SQLite."""
    return Index(name, column, postgresql_where=text(where), sqlite_where=text(where))


def _job_key() -> ForeignKeyConstraint:
    """A row's `job_id` held to its job, on SQLite only. On PostgreSQL each row inserted
    would run a lookup of the job that also locks its row (FOR KEY SHARE): for an event,
    on every move, the largest part of its insert's cost, and a lock shared by every
    worker of the job; for a task, a fifth of a create's COPY. The rows are deleted with
    their job by explicit statements (services/jobs.py, maintenance/retention.py), and
    a task's stage is held to the job by the stage's own key. SQLite's check is a cheap
    lookup, and dropping it would rebuild the tables (and their triggers)."""
    key = ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE")
    return key.ddl_if(dialect="sqlite")


def written(value: str) -> BindParameter[str]:
    """`value` written into the statement's text, not bound: PostgreSQL keeps one plan
    for a prepared statement (the driver prepares every one), and a plan made for
    `status = $1` cannot use a partial index whose predicate names the status: it reads
    the table. Statuses only, never input."""
    return literal(value, literal_execute=True)


def written_all(values: Iterable[str]) -> BindParameter[list[str]]:
    """As `written`, for `column.in_(...)`."""
    return bindparam(None, list(values), expanding=True, literal_execute=True)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        # Unfinished jobs that must be final by a time, for the maintenance tick.
        _partial_index(
            "ix_jobs_deadline",
            "deadline",
            "deadline IS NOT NULL AND status IN ('CREATED', 'PENDING', 'IN_PROGRESS', 'PAUSED')",
        ),
        # Unstarted jobs that expire, by when: what the maintenance tick aborts.
        _partial_index(
            "ix_jobs_expiring",
            "expires_at",
            "expires_at IS NOT NULL AND start_time IS NULL"
            " AND status IN ('CREATED', 'PENDING', 'PAUSED')",
        ),
        # A name's trigrams, for a search by part of a name (PostgreSQL's pg_trgm; SQLite
        # reads the table, which at its scale takes milliseconds).
        Index(
            "ix_jobs_name_trgm",
            "name",
            postgresql_using="gin",
            postgresql_ops={"name": "gin_trgm_ops"},
        ).ddl_if(dialect="postgresql"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    name: Mapped[str] = mapped_column(String(50), index=True)
    data: Mapped[dict[str, Any]] = mapped_column(JsonColumn)
    user_metadata: Mapped[dict[str, Any]] = mapped_column(JsonColumn)
    # The token name that created it, when authentication is on.
    owner: Mapped[str | None] = mapped_column(String(100), default=None)
    # Its unique key, when created with one (unique_job_keys says who holds it now).
    unique_key: Mapped[str | None] = mapped_column(String(255), default=None)
    # What a task set as the job's result (a JSON object); its outputs are JobAssets.
    result: Mapped[dict[str, Any] | None] = mapped_column(JsonColumn, default=None)
    priority: Mapped[Priority] = mapped_column(EnumText(Priority))
    # An OJS job's own priority number, finer than `priority` (domain/ranks.py).
    priority_number: Mapped[int | None] = mapped_column(SmallInteger, default=None)
    status: Mapped[JobStatus] = mapped_column(EnumText(JobStatus))
    percentage: Mapped[int] = mapped_column(SmallInteger, default=0)
    traceparent: Mapped[str] = mapped_column(String(55))
    tracestate: Mapped[str | None] = mapped_column(String(512))
    creation_time: Mapped[datetime] = mapped_column(UtcDateTime, index=True)
    update_time: Mapped[datetime] = mapped_column(UtcDateTime)
    # How it went: its first claim, its final status, why it failed or was aborted.
    start_time: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    end_time: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    reason: Mapped[str | None] = mapped_column(String(2000), default=None)
    failed_task_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, default=None)
    failed_stage_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, default=None)
    # Scheduled: none of its tasks may be claimed before then.
    not_before: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    # Failed ("deadline exceeded") if not final by then.
    deadline: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    # COMPLETED with failures its stages allowed.
    partial: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Aborted ("expired") if none of its tasks has started by then; its tasks' default.
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)


class Stage(Base):
    __tablename__ = "stages"
    __table_args__ = (
        UniqueConstraint("job_id", "stage_order"),
        # Stages that may run, by type: what /metrics sums the task counters of.
        _partial_index("ix_stages_active", "type", "status IN ('PENDING', 'IN_PROGRESS')"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    job_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    type: Mapped[str] = mapped_column(String(50), index=True)
    stage_order: Mapped[int] = mapped_column(Integer)
    data: Mapped[dict[str, Any]] = mapped_column(JsonColumn)
    user_metadata: Mapped[dict[str, Any]] = mapped_column(JsonColumn)
    status: Mapped[StageStatus] = mapped_column(EnumText(StageStatus))
    percentage: Mapped[int] = mapped_column(SmallInteger, default=0)
    # The summary's counter columns are added below, one per `domain.summary.COUNTERS`.
    traceparent: Mapped[str] = mapped_column(String(55))
    tracestate: Mapped[str | None] = mapped_column(String(512))
    creation_time: Mapped[datetime] = mapped_column(UtcDateTime)
    update_time: Mapped[datetime] = mapped_column(UtcDateTime)
    # The retry policy its tasks get unless they bring their own.
    retry_policy: Mapped[dict[str, Any] | None] = mapped_column(JsonColumn, default=None)
    start_time: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    end_time: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    reason: Mapped[str | None] = mapped_column(String(2000), default=None)
    # How many of its tasks may fail for good with the stage still completing (partial).
    allowed_failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # The time limit of an attempt of its tasks that bring none of their own.
    timeout_seconds: Mapped[float | None] = mapped_column(Float, default=None)
    partial: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # The progress its IN_PROGRESS tasks last reported, summed: kept by a trigger on
    # tasks (migration 0007), whatever moves them, and read, never written, here.
    running_progress: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


# The summary, kept in step with the tasks inside every transaction that moves one: read
# it with `Summary.of_columns(stage)`, write it with `**summary.counts()`.
for _counter in COUNTERS:
    setattr(Stage, _counter, mapped_column(_counter, Integer, nullable=False, default=0))


class Task(Base):
    __tablename__ = "tasks"
    __table_args__ = (
        # The claim index: only rows a worker could take right now are in it.
        Index(
            "ix_tasks_claim",
            "stage_type",
            "priority_rank",
            "seq",
            postgresql_where=text("claimable"),
            sqlite_where=text("claimable = 1"),
        ),
        # A stage's tasks in their order: its pages, and the foreign key's cascade.
        Index("ix_tasks_stage_id_seq", "stage_id", "seq"),
        # What the reaper scans: running claims by expiry.
        _partial_index("ix_tasks_lease_expiry", "lease_expires_at", "status = 'IN_PROGRESS'"),
        # Running attempts that have a time limit, by start.
        _partial_index(
            "ix_tasks_timed", "start_time", "status = 'IN_PROGRESS' AND timeout_seconds IS NOT NULL"
        ),
        # Retries waiting out their delay, and scheduled tasks, by due time.
        _partial_index("ix_tasks_not_before", "not_before", "not_before IS NOT NULL"),
        # The dead letters: tasks FAILED for good, by when they ended.
        _partial_index("ix_tasks_failed", "end_time", "status = 'FAILED'"),
        # Tasks waiting to start that expire, by when: what the maintenance loop aborts.
        _partial_index(
            "ix_tasks_expiring",
            "expires_at",
            "expires_at IS NOT NULL AND status IN ('PENDING', 'RETRIED')",
        ),
        _job_key(),
    )

    # Insertion order: the oldest-first tie-break between tasks of equal priority.
    seq: Mapped[int] = mapped_column(SeqType, primary_key=True, autoincrement=True)
    id: Mapped[uuid.UUID] = mapped_column(Uuid, unique=True)
    # Indexed with `seq` (ix_tasks_stage_id_seq): a stage's tasks in their order.
    stage_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("stages.id", ondelete="CASCADE"))
    # Its stage's job (the stage's foreign key holds it to the job; see `_job_key`).
    job_id: Mapped[uuid.UUID] = mapped_column(Uuid, index=True)
    stage_type: Mapped[str] = mapped_column(String(50))
    priority_rank: Mapped[int] = mapped_column(SmallInteger)
    claimable: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[TaskStatus] = mapped_column(EnumText(TaskStatus))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    max_attempts: Mapped[int] = mapped_column(Integer)
    data: Mapped[dict[str, Any]] = mapped_column(JsonColumn)
    user_metadata: Mapped[dict[str, Any]] = mapped_column(JsonColumn)
    traceparent: Mapped[str] = mapped_column(String(55))
    tracestate: Mapped[str | None] = mapped_column(String(512))
    creation_time: Mapped[datetime] = mapped_column(UtcDateTime, index=True)
    update_time: Mapped[datetime] = mapped_column(UtcDateTime)
    start_time: Mapped[datetime | None] = mapped_column(UtcDateTime)
    end_time: Mapped[datetime | None] = mapped_column(UtcDateTime)
    # The current (or last) claim.
    lease_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, default=None)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    lease_seconds: Mapped[float | None] = mapped_column(Float, default=None)
    worker: Mapped[str | None] = mapped_column(String(100), default=None)
    progress: Mapped[int | None] = mapped_column(SmallInteger, default=None)
    progress_message: Mapped[str | None] = mapped_column(String(500), default=None)
    # Set while a retry waits out its delay, or a scheduled task (its own `notBefore` or
    # its job's) waits for its time; the task is not claimable until then.
    not_before: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    retry_policy: Mapped[dict[str, Any] | None] = mapped_column(JsonColumn, default=None)
    # How long an attempt may run: failed "timed out" past it, heartbeats or not.
    timeout_seconds: Mapped[float | None] = mapped_column(Float, default=None)
    reason: Mapped[str | None] = mapped_column(String(2000), default=None)
    result: Mapped[dict[str, Any] | None] = mapped_column(JsonColumn, default=None)
    # Never handed out from then on: aborted ("expired") if it is still waiting.
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)


class Event(Base):
    """One status change of a job, stage or task, or an entry a task's worker added
    (`name`, no status). Append-only; goes with its job."""

    __tablename__ = "events"
    __table_args__ = (Index("ix_events_job_id_seq", "job_id", "seq"), _job_key())

    seq: Mapped[int] = mapped_column(SeqType, primary_key=True, autoincrement=True)
    job_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    entity: Mapped[str] = mapped_column(String(8))
    entity_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    stage_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    task_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    from_status: Mapped[str | None] = mapped_column(String(16))
    to_status: Mapped[str | None] = mapped_column(String(16))
    attempt: Mapped[int | None] = mapped_column(Integer)
    lease_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    worker: Mapped[str | None] = mapped_column(String(100))
    reason: Mapped[str | None] = mapped_column(String(2000))
    time: Mapped[datetime] = mapped_column(UtcDateTime)
    # A task event's (POST /v1/tasks/{id}/events); none of a status change's.
    name: Mapped[str | None] = mapped_column(String(100), default=None)
    level: Mapped[str | None] = mapped_column(String(8), default=None)
    message: Mapped[str | None] = mapped_column(String(2000), default=None)
    fields: Mapped[dict[str, Any] | None] = mapped_column(JsonColumn, default=None)
    # The token name of the request that made it (with authentication on).
    principal: Mapped[str | None] = mapped_column(String(100), default=None)


class IdempotencyKey(Base):
    """The first answer to a create request sent with an Idempotency-Key."""

    __tablename__ = "idempotency_keys"

    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int] = mapped_column(Integer)
    response: Mapped[Any] = mapped_column(JsonColumn)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, index=True)


class ApiToken(Base):
    """An API token: only its SHA-256 is kept (migration 0006)."""

    __tablename__ = "api_tokens"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    stage_types: Mapped[list[str] | None] = mapped_column(JsonColumn, default=None)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)


class StatusCount(Base):
    """Jobs and stages by status, kept by triggers as rows change (migration 0005): a
    count is the sum of its slots."""

    __tablename__ = "status_counts"

    entity: Mapped[str] = mapped_column(String(8), primary_key=True)
    status: Mapped[str] = mapped_column(String(16), primary_key=True)
    slot: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    n: Mapped[int] = mapped_column(BigInteger)


class OutboxMessage(Base):
    """A message for RabbitMQ, written in the transaction of the change it announces
    and deleted by the relay once the broker confirmed it."""

    __tablename__ = "outbox"

    seq: Mapped[int] = mapped_column(SeqType, primary_key=True, autoincrement=True)
    routing_key: Mapped[str] = mapped_column(String(120))
    payload: Mapped[dict[str, Any]] = mapped_column(JsonColumn)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)


class WorkerSighting(Base):
    """A named worker as its claims last showed it (migration 0008): what it claims,
    with whose token, when it was first and last seen. Written at most every few
    seconds per worker (services.workers), so the claim path barely pays for it."""

    __tablename__ = "workers"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    stage_types: Mapped[list[str]] = mapped_column(JsonColumn)
    principal: Mapped[str | None] = mapped_column(String(100), default=None)
    first_seen: Mapped[datetime] = mapped_column(UtcDateTime)
    last_seen: Mapped[datetime] = mapped_column(UtcDateTime, index=True)


class StageTypePause(Base):
    """A stage type whose tasks are not handed out until it is resumed (migration 0009):
    the claim statements skip its tasks."""

    __tablename__ = "stage_type_pauses"

    type: Mapped[str] = mapped_column(String(50), primary_key=True)
    paused_at: Mapped[datetime] = mapped_column(UtcDateTime)
    principal: Mapped[str | None] = mapped_column(String(100), default=None)


class WorkerDirective(Base):
    """What an operator told an Open Job Spec worker (migration 0015; domain.ojs
    WorkerState): `quiet` or `terminate`, answered to its heartbeats."""

    __tablename__ = "worker_directives"
    __table_args__ = (
        CheckConstraint("state IN ('quiet', 'terminate')", name="ck_worker_directives_state"),
    )

    worker: Mapped[str] = mapped_column(String(100), primary_key=True)
    state: Mapped[str] = mapped_column(String(10))
    set_at: Mapped[datetime] = mapped_column(UtcDateTime)
    principal: Mapped[str | None] = mapped_column(String(100), default=None)


class StageTypeLimit(Base):
    """How many of a stage type's tasks may run at once and be handed out a second
    (migration 0013; domain.limits). The fast claim statements skip a type that has a
    row; its claims lock the row, count the type's tasks in flight and spend its
    tokens (services.stage_type_limits)."""

    __tablename__ = "stage_type_limits"

    type: Mapped[str] = mapped_column(String(50), primary_key=True)
    max_in_flight: Mapped[int | None] = mapped_column(Integer, default=None)
    rate: Mapped[float | None] = mapped_column(Float, default=None)
    burst: Mapped[int] = mapped_column(Integer)
    tokens: Mapped[float] = mapped_column(Float)
    refilled_at: Mapped[datetime] = mapped_column(UtcDateTime)
    set_at: Mapped[datetime] = mapped_column(UtcDateTime)
    principal: Mapped[str | None] = mapped_column(String(100), default=None)


class UniqueJobKey(Base):
    """A unique key and the job that holds it (migration 0010): a create with the key
    answers that job while it holds it, until `expires_at`, or while it is not final
    when there is no window (services.unique_jobs)."""

    __tablename__ = "unique_job_keys"

    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    job_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)


class JobAsset(Base):
    """An output a job's task recorded (migration 0011): its type, where it is (a URL or
    a path) and, when known, its size and a name."""

    __tablename__ = "job_assets"
    __table_args__ = (Index("ix_job_assets_job_id_created_at", "job_id", "created_at"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    job_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    task_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, default=None)
    type: Mapped[str] = mapped_column(String(50))
    uri: Mapped[str] = mapped_column(String(2000))
    size_bytes: Mapped[int | None] = mapped_column(BigInteger, default=None)
    name: Mapped[str | None] = mapped_column(String(200), default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    # Its place among the assets recorded in the same call, which share `created_at`.
    position: Mapped[int] = mapped_column(Integer, default=0)
    principal: Mapped[str | None] = mapped_column(String(100), default=None)


class DeadLetterDiscard(Base):
    """A FAILED task an operator took off the dead letters (migration 0012), kept with
    its job so that deleting the job deletes it."""

    __tablename__ = "dead_letter_discards"

    task_id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    job_id: Mapped[uuid.UUID] = mapped_column(Uuid, index=True)
    discarded_at: Mapped[datetime] = mapped_column(UtcDateTime)
    principal: Mapped[str | None] = mapped_column(String(100), default=None)


class Schedule(Base):
    """A named schedule that makes a job from its template at each of its times
    (migration 0013; domain.schedules). `next_run_at` is the time a tick makes its next
    job: moving it on, from the value read, is how one replica's tick owns that run."""

    __tablename__ = "schedules"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    cron: Mapped[str | None] = mapped_column(String(200), default=None)
    interval_seconds: Mapped[float | None] = mapped_column(Float, default=None)
    timezone: Mapped[str] = mapped_column(String(64))
    job: Mapped[dict[str, Any]] = mapped_column(JsonColumn)  # a POST /v1/jobs body
    overlap: Mapped[str] = mapped_column(String(16))
    missed: Mapped[str] = mapped_column(String(16))
    description: Mapped[str | None] = mapped_column(String(500), default=None)
    next_run_at: Mapped[datetime] = mapped_column(UtcDateTime, index=True)
    anchor: Mapped[datetime] = mapped_column(UtcDateTime)  # an interval's first time
    paused_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    last_run_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    last_job_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, default=None)
    run_count: Mapped[int] = mapped_column(Integer, default=0)
    skipped_count: Mapped[int] = mapped_column(Integer, default=0)
    owner: Mapped[str | None] = mapped_column(String(100), default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime)


class ScheduleRun(Base):
    """One time of a schedule and what came of it: its job, or why none was made. The
    key is the schedule and the time, so no run is made twice."""

    __tablename__ = "schedule_runs"

    schedule: Mapped[str] = mapped_column(String(100), primary_key=True)
    run_at: Mapped[datetime] = mapped_column(UtcDateTime, primary_key=True)
    job_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, default=None)
    skipped: Mapped[str | None] = mapped_column(String(16), default=None)  # missed, overlap
    manual: Mapped[bool] = mapped_column(Boolean, default=False)  # made by "run now"
    made_at: Mapped[datetime] = mapped_column(UtcDateTime)


class Workflow(Base):
    """An Open Job Spec workflow (migration 0014): a chain (one job, a stage a step), a
    group or a batch (a job each). A batch's callbacks are jobs made with it, their
    stage WAITING; `fired_at` is set once, when its jobs are all final and the
    callbacks due are approved (the others aborted)."""

    __tablename__ = "workflows"
    __table_args__ = (
        _partial_index(
            "ix_workflows_unfired",
            "created_at",
            "kind = 'batch' AND fired_at IS NULL AND cancelled_at IS NULL",
        ),
        # Not yet seen final: what the maintenance tick watches (migration 0017).
        _partial_index("ix_workflows_open", "created_at", "ended_at IS NULL"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    kind: Mapped[str] = mapped_column(String(8))  # chain, group, batch
    name: Mapped[str | None] = mapped_column(String(200), default=None)
    owner: Mapped[str | None] = mapped_column(String(100), default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    fired_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    cancelled_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    # When it was seen started and final, each set once with its event's row.
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    ended_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)


class WorkflowEvent(Base):
    """A workflow's lifecycle event (workflow.started, .completed, .failed, .cancelled),
    its `data` as the Open Job Spec's events word it. Goes with its workflow."""

    __tablename__ = "workflow_events"

    seq: Mapped[int] = mapped_column(SeqType, primary_key=True, autoincrement=True)
    workflow_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("workflows.id", ondelete="CASCADE"), index=True
    )
    type: Mapped[str] = mapped_column(String(24))
    time: Mapped[datetime] = mapped_column(UtcDateTime)
    data: Mapped[dict[str, Any]] = mapped_column(JsonColumn)


class WorkflowJob(Base):
    """A job of a workflow, at its position: `role` "job" for the work, or the outcome
    a batch's callback waits for (on_complete, on_success, on_failure)."""

    __tablename__ = "workflow_jobs"

    workflow_id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    role: Mapped[str] = mapped_column(String(12))
    job_id: Mapped[uuid.UUID] = mapped_column(Uuid, index=True)


# The tables, typed as such, for Core statements on the hot paths.
JOBS = cast(Table, Job.__table__)
IDEMPOTENCY_KEYS = cast(Table, IdempotencyKey.__table__)
TASKS = cast(Table, Task.__table__)
STAGES = cast(Table, Stage.__table__)
EVENTS = cast(Table, Event.__table__)
OUTBOX = cast(Table, OutboxMessage.__table__)
