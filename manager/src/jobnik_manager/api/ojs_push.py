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
from ..domain.ojs import State
from ..domain.ojs_unique import (
    DEFAULT_STATES,
    DIMENSIONS,
    OnConflict,
    UniquePolicy,
    missing_args_keys,
)
from ..domain.retry import RetryPolicy
from ..services.specs import NewJob, NewStage, NewTask
from ..services.stage_type_limits import LimitSpec
from .auth import creator
from .ojs_wire import OjsError, invalid

_KNOWN = frozenset(
    {
        *("type", "args", "id", "meta", "options", "specversion", "schema", "queue"),
        *("scheduled_at", "priority"),
    }
)
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
        priority_number=priority,
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
    priority = ojs.priority_number(options.get("priority", body.get("priority", 0)))
    if priority is None:
        raise invalid("options.priority: an integer from -100 to 100, or HIGH, NORMAL, LOW")
    task_id = None
    if "id" in body:
        given = body["id"]
        if not isinstance(given, str) or not ojs.UUID7_PATTERN.fullmatch(given):
            raise invalid("id: a lowercase UUIDv7")
        task_id = uuid.UUID(given)
    attempts, policy = _retry(options.get("retry", options.get("retry_policy", {})))
    visibility = options.get("visibility_timeout_ms")
    if visibility is not None and (
        type(visibility) is not int or not 1000 <= visibility <= 86_400_000
    ):
        raise invalid("options.visibility_timeout_ms: an integer from 1000 to 86400000")
    timeout_ms = options.get("timeout_ms")
    if timeout_ms is not None and (type(timeout_ms) is not int or timeout_ms < 1):
        raise invalid("options.timeout_ms: a positive integer")
    # The job's own `scheduled_at` (ojs-core) or the binding's `options.delay_until`.
    at = options.get("delay_until", options.get("scheduled_at", body.get("scheduled_at")))
    not_before = _time(at, "delay_until", now)
    expires_at = _time(options.get("expires_at", body.get("expires_at")), "expires_at", now)
    if expires_at is not None and expires_at <= now:
        raise invalid("options.expires_at: a time to come (a job past it would never run)")
    extra = {k: v for k, v in body.items() if k not in _KNOWN and k not in _SYSTEM}
    data = {"type": kind, "args": args, "meta": meta, "priority": priority}
    if extra:
        data["extra"] = extra
    if mark is not None:
        data["workflow"] = mark
    if visibility is not None:  # its lease when a FETCH names none (api/routes/ojs.py)
        data["visibility_ms"] = visibility
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
    strategy = retry.get("backoff_strategy", "exponential")
    if strategy not in ("exponential", "linear", "constant"):
        raise bad("backoff_strategy", "exponential, linear or constant")
    jitter = retry.get("jitter", True)
    if not isinstance(jitter, bool):
        raise bad("jitter", "true or false")
    never = retry.get("non_retryable_errors", [])
    if not isinstance(never, list) or not all(isinstance(e, str) and e for e in never):
        raise bad("non_retryable_errors", "a list of error types")
    policy = RetryPolicy(
        initial_delay=durations["initial_interval"],
        multiplier=1.0 if strategy == "constant" else float(coefficient),
        max_delay=durations["max_interval"],
        jitter=0.5 if jitter else 0.0,
        non_retryable=tuple(never),
        linear=strategy == "linear",
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


def unique_of(body: dict[str, Any]) -> tuple[UniquePolicy, str] | None:
    """The PUSH's unique policy (`options.unique`, or `unique` beside them) and the
    job's fingerprint under it; None without one. Called once `new_task` passed the
    body, so its type, queue, args and meta are sound."""
    options = body.get("options", {})
    given = options.get("unique", body.get("unique"))
    if given is None:
        return None
    if not isinstance(given, dict):
        raise invalid("options.unique: a JSON object")
    keys = given.get("keys", ["type"])
    if not isinstance(keys, list) or not set(keys) <= DIMENSIONS or not keys:
        raise invalid("unique.keys: some of type, queue, args, meta")
    args, meta = body["args"], body.get("meta", {})
    args_keys = _names(given.get("args_keys"), "args_keys")
    if args_keys is not None and (missing := missing_args_keys(args, args_keys)):
        raise invalid(f"unique.args_keys: not in the job's args: {', '.join(missing)}")
    meta_keys = _names(given.get("meta_keys"), "meta_keys") or ()
    if "meta" in keys and not meta_keys:
        raise invalid("unique.meta_keys: required when keys holds meta")
    period = None
    if given.get("period") is not None:
        period = _duration(given["period"], "unique.period")
    states = given.get("states", [s.value for s in DEFAULT_STATES])
    if not isinstance(states, list) or not states or not set(states) <= {s.value for s in State}:
        raise invalid("unique.states: job states (available, active, scheduled, ...)")
    try:
        on_conflict = OnConflict(given.get("on_conflict", OnConflict.REJECT))
    except ValueError:
        raise invalid(
            "unique.on_conflict: reject, ignore, replace or replace_except_schedule"
        ) from None
    policy = UniquePolicy(
        frozenset(keys),
        args_keys,
        meta_keys,
        period,
        frozenset(State(s) for s in states),
        on_conflict,
    )
    queue = options.get("queue", body.get("queue", ojs.DEFAULT_QUEUE))
    return policy, policy.fingerprint(body["type"], queue, args, meta)


def _names(value: object, field: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise invalid(f"unique.{field}: a list of key names")
    return tuple(value)


def _duration(value: object, field: str) -> timedelta:
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        duration = _DURATION.validate_python(value)
    except (ValueError, ValidationError):
        raise invalid(f"{field}: an ISO 8601 duration such as PT1M") from None
    if duration <= timedelta(0):
        raise invalid(f"{field}: longer than nothing")
    return duration


def rate_limit_of(body: dict[str, Any]) -> LimitSpec | None:
    """The PUSH's `options.rate_limit`, as its queue's limits: `concurrency` (jobs active
    at once), `rate` (`limit` starts a `period`: a bucket of that many), `throttle` or
    `max_per_second` (evenly spaced: a bucket of one). Limits belong to a queue here, so
    a `key` must name the job's queue (or be left out), and a job past them waits."""
    options = body.get("options", {})
    given = options.get("rate_limit")
    if given is None:
        return None
    if not isinstance(given, dict):
        raise invalid("options.rate_limit: a JSON object")
    queue = options.get("queue", body.get("queue", ojs.DEFAULT_QUEUE))
    if given.get("key") not in (None, queue, f"queue:{queue}"):
        raise invalid("rate_limit.key: the job's queue (limits here are a queue's)")
    if given.get("on_limit", "wait") != "wait":
        raise invalid("rate_limit.on_limit: wait (a job past the limit waits its turn)")
    concurrency = given.get("concurrency")
    if concurrency is not None and (type(concurrency) is not int or concurrency < 1):
        raise invalid("rate_limit.concurrency: a positive integer")
    rate, burst = None, None
    if "max_per_second" in given:
        per_second = given["max_per_second"]
        if type(per_second) not in (int, float) or not per_second > 0:
            raise invalid("rate_limit.max_per_second: a positive number")
        rate, burst = float(per_second), 1
    for name, spaced in (("throttle", True), ("rate", False)):
        window = given.get(name)
        if window is None:
            continue
        if (
            not isinstance(window, dict)
            or type(window.get("limit")) is not int
            or window["limit"] < 1
        ):
            raise invalid(f"rate_limit.{name}: an object with a positive limit and a period")
        seconds = _duration(window.get("period"), f"rate_limit.{name}.period").total_seconds()
        limit = window["limit"]
        rate, burst = limit / seconds, 1 if spaced else limit
    if concurrency is None and rate is None:
        raise invalid("rate_limit: concurrency, rate, throttle or max_per_second")
    return LimitSpec(concurrency, rate, burst)
