"""The Open Job Spec's wire, as the /ojs/v1 routes speak it: a task as the spec's job
envelope (what the task lacks left out, not null), the spec's refusals, and the small
readings every route shares (its body, a job by id)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from fastapi import Request, Response

from ..db.reads import task_columns
from ..domain import ojs
from ..domain.errors import DomainError
from ..domain.ojs import State
from ..domain.retry import RetryPolicy
from ..domain.statuses import TaskStatus
from ..services.dead_letters import Failure
from .edge import inbound
from .presenters import json_response

BASE = "/ojs/v1"
_MAX_ID = 128


class OjsError(DomainError):
    """A refusal worded with the spec's own code (api/errors.py passes it on as is)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message, code=code)
        self.http_status = status


def invalid(message: str) -> OjsError:
    return OjsError(400, "invalid_request", message)


def not_found(job_id: object) -> OjsError:
    return OjsError(404, "not_found", f"Job '{job_id}' not found.")


async def read_body(request: Request) -> dict[str, Any]:
    """The request's JSON object, as the edge parsed it (400 invalid_payload else)."""
    edge = inbound(request.scope)
    body = await edge.body()
    value = edge.parsed() if body.data else None
    if not isinstance(value, dict):
        raise OjsError(400, "invalid_payload", "The body must be a JSON object.")
    return value


def when(at: datetime | None) -> str | None:
    """RFC 3339 in UTC: to the millisecond, or the second when it has no fraction (a
    client's whole-second time reads back as it was sent)."""
    return None if at is None else ojs.rfc3339(at)


def envelope(task: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """A task as the spec's job envelope; what the task lacks is left out, not null."""
    data = task["data"] if isinstance(task["data"], dict) else {}
    status = TaskStatus(task["status"])
    state = ojs.state_of(
        status, task["not_before"], now, task["reason"], task.get("claimable", True)
    )
    args = data.get("args")
    job: dict[str, Any] = {
        "specversion": ojs.SPEC_VERSION,
        "id": str(task["id"]),
        "type": data.get("type", task["stage_type"]),
        "queue": task["stage_type"],
        "args": args if isinstance(args, list) else [data],
        "meta": data.get("meta", {}),
        "priority": data.get("priority", 0),
        "state": state.value,
        "attempt": ojs.attempt_of(state, task["attempts"], task["start_time"] is not None),
        "max_attempts": task["max_attempts"],
        "created_at": when(task["creation_time"]),
        "enqueued_at": when(task["not_before"] or task["creation_time"]),
    }
    job.update(data.get("extra", {}))
    workflow = data.get("workflow")
    if isinstance(workflow, dict):
        job["workflow_id"] = workflow.get("id")
    if task["not_before"] is not None and state is State.SCHEDULED:
        job["scheduled_at"] = when(task["not_before"])
    if task.get("expires_at") is not None:
        job["expires_at"] = when(task["expires_at"])
    if task["start_time"] is not None:
        job["started_at"] = when(task["start_time"])
    ended = when(task["end_time"] or task["update_time"])
    if state is State.ACTIVE and task["worker"]:
        job["worker_id"] = task["worker"]
    if state is State.COMPLETED:
        job["completed_at"] = ended
        if task["result"] is not None:
            job["result"] = task["result"]
    elif state is State.DISCARDED and status is TaskStatus.ABORTED:  # expired, not run
        job["discarded_at"] = ended
    elif state is State.DISCARDED:
        job["completed_at"] = job["discarded_at"] = ended
    elif state is State.CANCELLED:
        job["cancelled_at"] = ended
    if task["reason"] and task["attempts"] and state not in (State.COMPLETED, State.CANCELLED):
        job["error"] = ojs.error_of(task["reason"])  # its last failed attempt's
    policy = RetryPolicy.from_json(task.get("retry_policy"))
    if task["attempts"] and policy is not None and not policy.jitter:
        # The wait its last failure was given (a jittered one is not known after).
        wait = policy.delay_after(task["attempts"])
        job["retry_delay_ms"] = int(wait.total_seconds() * 1000)
    if state is State.RETRYABLE and task["not_before"] is not None:
        job["next_attempt_at"] = when(task["not_before"])
    return job


def answer(body: object, status: int, headers: Mapping[str, str] | None = None) -> Response:
    response = json_response(body, status)
    response.headers.update(headers or {})
    return response


async def task_of(db: Any, job_id: object) -> Mapping[str, Any]:
    """The task of this OJS job id, or 404 (an id that is no UUID names no job)."""
    try:
        parsed = uuid.UUID(job_id) if isinstance(job_id, str) and len(job_id) <= _MAX_ID else None
    except ValueError:
        parsed = None
    found = await task_columns(db, parsed) if parsed is not None else None
    if found is None:
        raise not_found(job_id)
    return found


def conflict(task: Mapping[str, Any], state: State, doing: str) -> OjsError:
    return OjsError(409, "conflict", f"Job '{task['id']}' is {state.value}: it cannot {doing}.")


def columns(row: Any) -> Mapping[str, Any]:
    mapping: Mapping[str, Any] | None = getattr(row, "_mapping", None)
    return mapping if mapping is not None else vars(row)


def error_entry(failure: Failure) -> dict[str, Any]:
    """A failed attempt, as an entry of the envelope's `errors`."""
    error = ojs.error_of(failure.reason or "")
    entry: dict[str, Any] = {**error, "occurred_at": when(failure.time)}
    if failure.attempt is not None:
        entry["attempt"] = failure.attempt
    return entry
