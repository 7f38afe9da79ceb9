"""The Jobnik API's vocabulary, as both of its sides use it: statuses, priorities, the
reasons the manager gives, and an event's JSON. Standard library only.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class _Status(StrEnum):
    """What the three status enums share: COMPLETED, FAILED and ABORTED are final."""

    @property
    def is_final(self) -> bool:
        """True for COMPLETED, FAILED and ABORTED: nothing changes it after them."""
        return self.value in _FINAL


class JobStatus(_Status):
    """Status of a job. COMPLETED, FAILED and ABORTED are final."""

    CREATED = "CREATED"
    PENDING = "PENDING"
    IN_PROGRESS = "IN_PROGRESS"
    PAUSED = "PAUSED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    ABORTED = "ABORTED"


class StageStatus(_Status):
    """Status of a stage. A WAITING stage needs approval before its tasks can run."""

    CREATED = "CREATED"
    WAITING = "WAITING"
    PENDING = "PENDING"
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    ABORTED = "ABORTED"

    @property
    def is_active(self) -> bool:
        """Its tasks may be claimed (when their job allows it too)."""
        return self in (StageStatus.PENDING, StageStatus.IN_PROGRESS)


class TaskStatus(_Status):
    """Status of a task. PENDING and RETRIED tasks are waiting to be claimed."""

    CREATED = "CREATED"
    PENDING = "PENDING"
    IN_PROGRESS = "IN_PROGRESS"
    RETRIED = "RETRIED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    ABORTED = "ABORTED"

    @property
    def is_claimable(self) -> bool:
        """True for PENDING and RETRIED (once their stage, job and any delay allow it)."""
        return self in (TaskStatus.PENDING, TaskStatus.RETRIED)


class Priority(StrEnum):
    """Job priority; tasks of higher-priority jobs are claimed first."""

    VERY_HIGH = "VERY_HIGH"
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"
    VERY_LOW = "VERY_LOW"

    @property
    def rank(self) -> int:
        """Sort key for claiming: lower is served first."""
        return _RANK[self]


# The final statuses share their names across jobs, stages and tasks (StrEnum members
# compare equal to their values).
_FINAL = frozenset({"COMPLETED", "FAILED", "ABORTED"})
_RANK = {p: i for i, p in enumerate(Priority)}


class SystemReason:
    """The reasons the manager gives for what it decides itself (a task's, stage's or
    job's `reason`, and in its event history); a failed task's own reason is its worker's."""

    LEASE_EXPIRED = "lease expired"
    STAGE_FAILED = "stage failed"
    JOB_ABORTED = "job aborted"
    ABORTED_BY_USER = "aborted by user"
    # A task cancelled on its own (PUT /v1/tasks/{id}/status ABORTED) without a reason.
    CANCELLED_BY_USER = "cancelled by user"
    # An attempt past its task's time limit (timeoutSeconds), failed by the manager.
    TIMED_OUT = "timed out"
    # A job not final by its deadline: its reason, and its aborted tasks' and stages'.
    DEADLINE_EXCEEDED = "deadline exceeded"
    # A failed job run again (POST /v1/jobs/{id}/retry): its event, and its tasks'.
    RETRIED_BY_USER = "retried by user"
    # A job's or stage's reason when the task that failed it gave none.
    TASK_FAILED = "a task failed"
    # A task, or a job, not started by its `expiresAt`: aborted, never run late.
    EXPIRED = "expired"


# The keys of an entry a task's worker added to its job's history; a status change's
# JSON leaves them out, and keeps the keys it always had.
ENTRY_KEYS = ("name", "level", "message", "fields")
# Keys an event carries only where they are set: an added entry's, and who made it.
OPTIONAL_EVENT_KEYS = (*ENTRY_KEYS, "principal")


def event_json(body: dict[str, Any]) -> dict[str, Any]:
    """An event's JSON (camelCase, nulls kept) as the API answers it: an added entry's
    keys and its principal only where they are set."""
    return {k: v for k, v in body.items() if k not in OPTIONAL_EVENT_KEYS or v is not None}
