"""What a PUSH body makes: the task of an OJS job (its type, queue and priority with it),
or the refusal that names the first field wrong. The spec's retry policy becomes ours."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from pydantic import TypeAdapter, ValidationError
from uuid6 import uuid7

from ..domain import ojs
from ..domain.retry import RetryPolicy
from ..services.specs import NewJob, NewStage, NewTask
from .auth import creator
from .ojs_wire import OjsError, invalid

_KNOWN = frozenset({"type", "args", "id", "meta", "options", "specversion", "schema", "queue"})
_SYSTEM = frozenset(
    {"state", "attempt", "created_at", "enqueued_at", "started_at", "completed_at", "error"}
)


def new_job(
    body: dict[str, Any], now: datetime, mark: dict[str, Any] | None = None, waiting: bool = False
) -> NewJob:
    """A PUSH body's job: one stage, its queue, of one task, its id the OJS job's.
    `mark`: the workflow it is part of, kept in the task's data; `waiting`: its stage
    WAITING (a batch's callback, until its batch fires it)."""
    kind, queue, priority, task = new_task(body, now, mark)
    task = replace(task, id=task.id or uuid.UUID(str(uuid7())))
    return NewJob(
        name=kind[:50],
        data={},
        priority=ojs.priority_of(priority),
        owner=creator(),
        stages=[NewStage(type=queue, data={}, tasks=[task], start_as_waiting=waiting)],
    )


def new_task(
    body: dict[str, Any], now: datetime, mark: dict[str, Any] | None = None
) -> tuple[str, str, int, NewTask]:
    """A PUSH body as the task it makes (with its type, queue and priority), or the
    refusal that names the first field wrong."""
    kind = body.get("type")
    if not isinstance(kind, str) or not ojs.TYPE_PATTERN.fullmatch(kind) or len(kind) > 255:
        raise invalid("type: required, dot-separated lowercase names (e.g. email.send)")
    args = body.get("args")
    if not isinstance(args, list):
        raise invalid("args: required, a JSON array")
    meta = body.get("meta", {})
    if not isinstance(meta, dict):
        raise invalid("meta: a JSON object")
    options = body.get("options", {})
    if not isinstance(options, dict):
        raise invalid("options: a JSON object")
    queue = options.get("queue", body.get("queue", ojs.DEFAULT_QUEUE))
    if not isinstance(queue, str) or not ojs.QUEUE_PATTERN.fullmatch(queue) or len(queue) > 50:
        raise invalid("options.queue: lowercase letters, digits, '-' and '.', up to 50")
    priority = options.get("priority", body.get("priority", 0))
    if type(priority) is not int or not -100 <= priority <= 100:
        raise invalid("options.priority: an integer from -100 to 100")
    task_id = None
    if "id" in body:
        given = body["id"]
        if not isinstance(given, str) or not ojs.UUID7_PATTERN.fullmatch(given):
            raise invalid("id: a lowercase UUIDv7")
        task_id = uuid.UUID(given)
    attempts, policy = _retry(options.get("retry", options.get("retry_policy", {})))
    timeout_ms = options.get("timeout_ms")
    if timeout_ms is not None and (type(timeout_ms) is not int or timeout_ms < 1):
        raise invalid("options.timeout_ms: a positive integer")
    not_before = _time(options.get("delay_until", options.get("scheduled_at")), "delay_until", now)
    expires_at = _time(options.get("expires_at", body.get("expires_at")), "expires_at", now)
    if expires_at is not None and expires_at <= now:
        raise invalid("options.expires_at: a time to come (a job past it would never run)")
    extra = {k: v for k, v in body.items() if k not in _KNOWN and k not in _SYSTEM}
    data = {"type": kind, "args": args, "meta": meta, "priority": priority}
    if extra:
        data["extra"] = extra
    if mark is not None:
        data["workflow"] = mark
    task = NewTask(
        data=data,
        max_attempts=max(attempts, 1),
        retry_policy=policy,
        not_before=not_before if not_before is not None and not_before > now else None,
        timeout_seconds=timeout_ms / 1000 if timeout_ms else None,
        expires_at=expires_at,
        id=task_id,
    )
    return kind, queue, priority, task


def _retry(retry: object) -> tuple[int, RetryPolicy]:
    """The spec's retry policy (its defaults for what it leaves out) as ours: attempts
    in all, and the backoff. Its jitter, a wait drawn from half to one and a half of
    the backoff, is ours of half: a wait drawn from half to all of it."""
    if not isinstance(retry, dict):
        raise invalid("options.retry: a JSON object")

    def bad(field: str, what: str) -> OjsError:
        return OjsError(422, "validation_error", f"retry.{field}: {what}")

    attempts = retry.get("max_attempts", ojs.DEFAULT_MAX_ATTEMPTS)
    if type(attempts) is not int or not 0 <= attempts <= 100:
        raise bad("max_attempts", "an integer from 0 to 100")
    durations = {}
    for field, default in (("initial_interval", "PT1S"), ("max_interval", "PT5M")):
        given = retry.get(field, default)
        try:
            if not isinstance(given, str):
                raise ValueError(given)
            durations[field] = _DURATION.validate_python(given)
        except (ValueError, ValidationError):
            raise bad(field, "an ISO 8601 duration such as PT1S") from None
        if durations[field] <= timedelta(0):
            raise bad(field, "longer than nothing")
    if durations["max_interval"] < durations["initial_interval"]:
        raise bad("max_interval", "at least initial_interval")
    coefficient = retry.get("backoff_coefficient", 2.0)
    if type(coefficient) not in (int, float) or not 1 <= coefficient <= 100:
        raise bad("backoff_coefficient", "a number from 1 to 100")
    jitter = retry.get("jitter", True)
    if not isinstance(jitter, bool):
        raise bad("jitter", "true or false")
    never = retry.get("non_retryable_errors", [])
    if not isinstance(never, list) or not all(isinstance(e, str) and e for e in never):
        raise bad("non_retryable_errors", "a list of error types")
    policy = RetryPolicy(
        initial_delay=durations["initial_interval"],
        multiplier=float(coefficient),
        max_delay=durations["max_interval"],
        jitter=0.5 if jitter else 0.0,
        non_retryable=tuple(never),
    )
    return attempts, policy


_DURATION = TypeAdapter(timedelta)


def _time(value: object, name: str, now: datetime) -> datetime | None:
    """An RFC 3339 time with its zone, or one relative to now ("+PT5S")."""
    if value is None:
        return None
    at = None
    if isinstance(value, str):
        try:
            if value.startswith("+"):
                at = now + _DURATION.validate_python(value[1:])
            else:
                at = datetime.fromisoformat(value)
        except (ValueError, ValidationError):
            at = None
    if at is None or at.tzinfo is None:
        raise invalid(f"options.{name}: an RFC 3339 time with its zone, or +PT<n>S from now")
    return at
