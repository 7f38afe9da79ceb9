"""The status and priority vocabularies, exactly as they appear on the wire."""

from enum import StrEnum


class JobStatus(StrEnum):
    CREATED = "CREATED"
    PENDING = "PENDING"
    IN_PROGRESS = "IN_PROGRESS"
    PAUSED = "PAUSED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    ABORTED = "ABORTED"

    @property
    def is_final(self) -> bool:
        return self in _FINAL_JOB


class StageStatus(StrEnum):
    CREATED = "CREATED"
    WAITING = "WAITING"
    PENDING = "PENDING"
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    ABORTED = "ABORTED"

    @property
    def is_final(self) -> bool:
        return self in _FINAL_STAGE

    @property
    def is_active(self) -> bool:
        """Its tasks may be claimed (when the job allows it too)."""
        return self in (StageStatus.PENDING, StageStatus.IN_PROGRESS)


class TaskStatus(StrEnum):
    CREATED = "CREATED"
    PENDING = "PENDING"
    IN_PROGRESS = "IN_PROGRESS"
    RETRIED = "RETRIED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    ABORTED = "ABORTED"

    @property
    def is_final(self) -> bool:
        return self in _FINAL_TASK

    @property
    def is_claimable(self) -> bool:
        return self in (TaskStatus.PENDING, TaskStatus.RETRIED)


class Priority(StrEnum):
    VERY_HIGH = "VERY_HIGH"
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"
    VERY_LOW = "VERY_LOW"

    @property
    def rank(self) -> int:
        """Sort key for claiming: lower is served first."""
        return _PRIORITY_RANK[self]


_FINAL_JOB = frozenset({JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.ABORTED})
_FINAL_STAGE = frozenset({StageStatus.COMPLETED, StageStatus.FAILED, StageStatus.ABORTED})
_FINAL_TASK = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.ABORTED})
_PRIORITY_RANK = {p: i for i, p in enumerate(Priority)}

# A job whose tasks may be claimed.
CLAIMING_JOB_STATUSES = frozenset({JobStatus.PENDING, JobStatus.IN_PROGRESS})
