"""The Open Job Spec's vocabulary, read off our own: an OJS job is a task in a job of its
own, its queue the task's stage type. Pure: how a task's status reads as one of the
spec's eight states, a priority (-100 to 100, or a name) and its band among our five,
what an envelope's fields must look like, and the spec's error codes for our refusals."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from jobnik_protocol.wire import SystemReason

from .statuses import Priority, TaskStatus

SPEC_VERSION = "1.0"
DEFAULT_QUEUE = "default"
DEFAULT_MAX_ATTEMPTS = 3
# A FETCH's reservation when neither it nor the job names one: the worker protocol's
# 30 minutes (ojs-worker-protocol.md 5.2; the binding's table says 30 s), which the
# conformance suite's cron overlap case relies on (a job held unacked past a minute).
DEFAULT_VISIBILITY_MS = 1_800_000
# A type: dot-separated lowercase segments (hyphens and underscores within); a queue:
# lowercase letters, digits, hyphens and dots, not starting with a hyphen or dot.
TYPE_PATTERN = re.compile(r"[a-z][a-z0-9_\-]*(\.[a-z][a-z0-9_\-]*)*")
QUEUE_PATTERN = re.compile(r"[a-z0-9][a-z0-9\-.]*")
UUID7_PATTERN = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
# An error's code kept in the task's reason ahead of its message: "<code>: <message>".
_CODED = re.compile(r"([a-z_][a-zA-Z0-9_.\-]*): (.*)", re.S)


class State(StrEnum):
    SCHEDULED = "scheduled"
    AVAILABLE = "available"
    PENDING = "pending"
    ACTIVE = "active"
    COMPLETED = "completed"
    RETRYABLE = "retryable"
    CANCELLED = "cancelled"
    DISCARDED = "discarded"

    @property
    def is_final(self) -> bool:
        return self in (State.COMPLETED, State.CANCELLED, State.DISCARDED)


_BY_STATUS = {
    TaskStatus.CREATED: State.PENDING,  # its stage waits for an approval
    TaskStatus.PENDING: State.AVAILABLE,
    TaskStatus.IN_PROGRESS: State.ACTIVE,
    TaskStatus.COMPLETED: State.COMPLETED,
    TaskStatus.RETRIED: State.RETRYABLE,
    TaskStatus.ABORTED: State.CANCELLED,
    TaskStatus.FAILED: State.DISCARDED,
}


def state_of(
    status: TaskStatus,
    not_before: datetime | None,
    now: datetime,
    reason: str | None = None,
    claimable: bool = True,
) -> State:
    """A task's status as an OJS state: a waiting task not due yet is scheduled; one that
    waits for something else (its stage for an approval or its turn, its job to be
    resumed: not `claimable`, and no delay) is pending; a retry whose delay is over (or
    that had none) is available again; one aborted because it expired is discarded, as
    the spec has it."""
    state = _BY_STATUS[status]
    if state is State.CANCELLED and reason == SystemReason.EXPIRED:
        return State.DISCARDED
    due = not_before is None or not_before <= now
    if state is State.AVAILABLE and not due:
        return State.SCHEDULED
    if status is TaskStatus.PENDING and not_before is None and not claimable:
        return State.PENDING
    if state is State.RETRYABLE and due:
        return State.AVAILABLE
    return state


# The task statuses each state reads from (the inverse of `state_of`, delays aside).
STATUSES = {
    State.SCHEDULED: (TaskStatus.PENDING,),
    State.AVAILABLE: (TaskStatus.PENDING, TaskStatus.RETRIED),
    State.PENDING: (TaskStatus.CREATED,),
    State.ACTIVE: (TaskStatus.IN_PROGRESS,),
    State.COMPLETED: (TaskStatus.COMPLETED,),
    State.RETRYABLE: (TaskStatus.RETRIED,),
    State.CANCELLED: (TaskStatus.ABORTED,),
    State.DISCARDED: (TaskStatus.FAILED,),
}


def attempt_of(state: State, failed: int, started: bool) -> int:
    """The spec's `attempt` (runs begun) from the attempts a task spent (runs that
    failed): a running or completed task's run is one more. A cancelled task counts its
    last run when it had begun one that did not fail (its first)."""
    if state in (State.ACTIVE, State.COMPLETED):
        return failed + 1
    if state is State.CANCELLED and started and failed == 0:
        return 1
    return failed


# Named priorities as the conformance levels map them (ojs-conformance.md L4-PRI-003;
# ojs-core.md's table recommends 10, 0, -10: the order is the same).
NAMED_PRIORITIES = {"HIGH": 3, "NORMAL": 2, "LOW": 1}


def priority_number(value: object) -> int | None:
    """A job's priority as its number: an integer from -100 to 100, or a name (HIGH,
    NORMAL, LOW, in any case); None when it is neither."""
    if isinstance(value, str):
        return NAMED_PRIORITIES.get(value.upper())
    if type(value) is int and -100 <= value <= 100:
        return value
    return None


def priority_of(value: int) -> Priority:
    """The spec's -100..100 (higher first) as our five levels."""
    if value >= 50:
        return Priority.VERY_HIGH
    if value >= 10:
        return Priority.HIGH
    if value > -10:
        return Priority.MEDIUM
    if value > -50:
        return Priority.LOW
    return Priority.VERY_LOW


def rfc3339(at: datetime) -> str:
    """RFC 3339 in UTC: to the millisecond, or the second when it has no fraction (a
    client's whole-second time reads back as it was sent)."""
    spec = "milliseconds" if at.microsecond else "seconds"
    return at.astimezone(UTC).isoformat(timespec=spec).replace("+00:00", "Z")


def event(event_id: str, kind: str, at: datetime, subject: str, data: Any) -> dict[str, Any]:
    """An event as the spec's envelope (ojs-events.md 2), whatever carries it."""
    return {
        "specversion": SPEC_VERSION,
        "id": event_id,
        "type": kind,
        "source": "ojs://jobnik",
        "time": rfc3339(at),
        "subject": subject,
        "data": data,
    }


def reason_of(code: str | None, message: str) -> str:
    """A failure's code and message as the task's reason."""
    return f"{code}: {message}" if code and _CODED.fullmatch(f"{code}: x") else message


def error_of(reason: str) -> dict[str, str]:
    """A task's reason as the spec's error object ({type, code, message})."""
    if reason == SystemReason.TIMED_OUT:  # past its execution timeout: the spec's type
        return {"type": "timeout", "code": "timeout", "message": reason}
    coded = _CODED.fullmatch(reason)
    if coded is None:
        return {"type": "error", "code": "error", "message": reason}
    return {"type": coded[1], "code": coded[1], "message": coded[2]}


# Our refusals' codes as the spec's; any other 4xx is invalid_request.
_CODES = {
    "VALIDATION_ERROR": "invalid_request",
    "INVALID_JSON": "invalid_payload",
    "UNAUTHORIZED": "unauthorized",
    "FORBIDDEN": "forbidden",
    "NOT_FOUND": "not_found",
    "METHOD_NOT_ALLOWED": "method_not_allowed",
    "PAYLOAD_TOO_LARGE": "envelope_too_large",
    "UNSUPPORTED_MEDIA_TYPE": "invalid_request",
    "DATABASE_RELATED_ERROR": "backend_error",
    "UNKNOWN_ERROR": "backend_error",
}


def code_of(code: str, status: int) -> str:
    """One of our error codes (and the answer's status) as the spec's code; the spec's
    own codes (lowercase) pass as they are."""
    if code.islower():
        return code
    if code in _CODES:
        return _CODES[code]
    if code.endswith("_NOT_FOUND") or status == 404:
        return "not_found"
    if status == 409:
        return "conflict"
    if status >= 500:
        return "backend_error"
    return "invalid_request"


class WorkerState(StrEnum):
    """A worker's lifecycle state as the manager wants it, told in each BEAT's answer:
    `quiet` stops its FETCHes (it finishes what it holds), `terminate` also has it shut
    down once its jobs are done."""

    RUNNING = "running"
    QUIET = "quiet"
    TERMINATE = "terminate"


# A worker never goes back: a quiet one may be told to terminate, a terminating one
# nothing else (the worker protocol forbids the way back from terminate).
_WORKER_MOVES = {
    WorkerState.RUNNING: {WorkerState.QUIET, WorkerState.TERMINATE},
    WorkerState.QUIET: {WorkerState.TERMINATE},
    WorkerState.TERMINATE: set(),
}


def may_direct(current: WorkerState, wanted: WorkerState) -> bool:
    """Whether a worker in `current` may be told `wanted` (telling it again is allowed)."""
    return wanted == current or wanted in _WORKER_MOVES[current]
