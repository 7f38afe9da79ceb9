"""What a worker sends about a claimed task (reports, heartbeats) and what it hears back."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any, Self

from pydantic import Field, model_validator

from ._models import EntityId, JobStatus, Task, TaskStatus, _Wire, given, seconds, wire

MAX_REASON = 2000
MAX_ERROR_TYPE = 200
_REPORTED = (TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.RETRIED)


class HeartbeatAnswer(_Wire):
    """The manager's answer to a heartbeat.

    `cancel_requested` is True once the task was aborted (its job was): stop the work
    and do not report it. `job_status` PAUSED means nothing new of the job is handed
    out; the task itself should still be finished.
    """

    lease_expires_at: datetime
    cancel_requested: bool = False
    job_status: JobStatus | None = None


class TaskReport(_Wire):
    """One report in a batch (`report_many`): build it with `completed`, `failed` or
    `retry_later`, which take the same options as the single-task calls."""

    # Ids are checked by the manager, which answers VALIDATION_ERROR for a malformed one.
    task_id: uuid.UUID | str
    status: TaskStatus
    lease_id: uuid.UUID | str | None = None
    result: dict[str, Any] | None = None
    reason: str | None = Field(default=None, max_length=MAX_REASON)
    retryable: bool = True
    retry_after: timedelta | None = Field(default=None, ge=timedelta(0))
    error_type: str | None = Field(default=None, min_length=1, max_length=MAX_ERROR_TYPE)

    @model_validator(mode="after")
    def _fits_the_status(self) -> Self:
        if self.status not in _REPORTED:
            raise ValueError("a report is COMPLETED, FAILED or RETRIED")
        if self.result is not None and self.status is not TaskStatus.COMPLETED:
            raise ValueError("result goes with a COMPLETED report only")
        if self.reason is not None and self.status is TaskStatus.COMPLETED:
            raise ValueError("reason goes with a FAILED or RETRIED report only")
        if not self.retryable and self.status is not TaskStatus.FAILED:
            raise ValueError("retryable goes with a FAILED report only")
        if self.error_type is not None and self.status is not TaskStatus.FAILED:
            raise ValueError("error_type goes with a FAILED report only")
        if (self.retry_after is None) == (self.status is TaskStatus.RETRIED):
            raise ValueError("retry_after is required with RETRIED, and only there")
        return self

    @classmethod
    def completed(
        cls,
        task_id: EntityId,
        *,
        lease_id: EntityId | None = None,
        result: dict[str, Any] | None = None,
    ) -> TaskReport:
        """The task is done; `result` (a JSON object) is stored on it."""
        return cls._of(task_id, TaskStatus.COMPLETED, lease_id=lease_id, result=result)

    @classmethod
    def failed(
        cls,
        task_id: EntityId,
        *,
        lease_id: EntityId | None = None,
        reason: str | None = None,
        retryable: bool = True,
        error_type: str | None = None,
    ) -> TaskReport:
        """The attempt failed; with `retryable=False` the task fails now, as it does when
        `error_type` is one its retry policy names as not to be retried."""
        return cls._of(
            task_id,
            TaskStatus.FAILED,
            lease_id=lease_id,
            reason=reason,
            retryable=retryable,
            error_type=error_type,
        )

    @classmethod
    def retry_later(
        cls,
        task_id: EntityId,
        *,
        delay: timedelta,
        lease_id: EntityId | None = None,
        reason: str | None = None,
    ) -> TaskReport:
        """Offer the task again after `delay`, without spending an attempt."""
        return cls._of(
            task_id, TaskStatus.RETRIED, lease_id=lease_id, reason=reason, retry_after=delay
        )

    @classmethod
    def _of(cls, task_id: EntityId, status: TaskStatus, **fields: Any) -> TaskReport:
        return cls.model_validate({"task_id": task_id, "status": status, **fields})

    def body(self) -> dict[str, Any]:
        """The report as the manager takes it, without `taskId`; options left unset
        are left out, so a plain report is the reference API's."""
        return given(
            status=self.status.value,
            leaseId=self.lease_id,
            result=self.result,
            reason=self.reason,
            retryable=None if self.retryable else False,
            retryAfterSeconds=seconds(self.retry_after),
            errorType=self.error_type,
        )


class ReportError(_Wire):
    """Why the manager refused one item of a batch (a report or a heartbeat): its
    `{message, code}`."""

    message: str
    code: str


class ReportOutcome(_Wire):
    """The answer to one report of a batch: the task as it now is, or the error."""

    task_id: uuid.UUID
    task: Task | None = None
    error: ReportError | None = None

    @property
    def ok(self) -> bool:
        """True when the report was accepted."""
        return self.error is None


class TaskHeartbeat(_Wire):
    """One lease to renew in a batch (`heartbeat_many`), with the task's `progress`
    (0 to 100) when there is news of it."""

    task_id: uuid.UUID | str
    lease_id: uuid.UUID | str
    progress: int | None = Field(default=None, ge=0, le=100)
    # What the work is at, in words (up to 500 characters): the task's progressMessage.
    message: str | None = Field(default=None, max_length=500)
    # Or how far, counted: `current` of `total` done (the manager works out `progress`).
    current: int | None = Field(default=None, ge=0)
    total: int | None = Field(default=None, ge=1)

    def body(self) -> dict[str, Any]:
        """The item as the manager takes it."""
        return wire(self)


class HeartbeatOutcome(_Wire):
    """The answer to one heartbeat of a batch: the renewed lease (as `HeartbeatAnswer`
    has it), or the error, e.g. LEASE_LOST or TASK_NOT_FOUND."""

    task_id: uuid.UUID
    lease_expires_at: datetime | None = None
    cancel_requested: bool = False
    job_status: JobStatus | None = None
    error: ReportError | None = None

    @property
    def ok(self) -> bool:
        """True when the lease was renewed."""
        return self.error is None
