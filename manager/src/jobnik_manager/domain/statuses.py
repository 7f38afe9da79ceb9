"""The status and priority vocabularies, exactly as they appear on the wire.

Defined once, in `jobnik_protocol.wire`, for the manager and its clients alike.
"""

from jobnik_protocol.wire import JobStatus, Priority, StageStatus, TaskStatus

__all__ = ["CLAIMING_JOB_STATUSES", "JobStatus", "Priority", "StageStatus", "TaskStatus"]

# A job whose tasks may be claimed.
CLAIMING_JOB_STATUSES = frozenset({JobStatus.PENDING, JobStatus.IN_PROGRESS})
