"""/ojs/v1: the Open Job Spec's HTTP binding (level 0, core), on the same tables and
rules as /v1. An OJS job is a task in a job of its own; its queue is the task's stage
type, its id the task's (a UUIDv7 the client may choose), its type, args, meta and
priority kept in the task's data. PUSH creates the job, FETCH is the claim (its
visibility timeout the lease), ACK and NACK the reports (NACK's retries decided by the
task's attempts and retry rules, as a v1 FAILED report's), CANCEL aborts the job, INFO
reads the task. Every answer is `application/openjobspec+json` (api/ojs_headers.py);
every refusal the spec's error object (api/errors.py), never /v1's.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import TypeAdapter, ValidationError
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from uuid6 import uuid7

from ... import __version__
from ...db.reads import task_columns
from ...domain import ojs
from ...domain.errors import DomainError
from ...domain.ojs import State
from ...domain.retry import RetryPolicy
from ...domain.statuses import JobStatus, TaskStatus
from ...services import jobs
from ...services.claimability import open_due_retries
from ...services.claims import claim
from ...services.reports import Report, settle
from ...services.specs import NewJob, NewStage, NewTask
from ..auth import creator
from ..deps import DatabaseDep
from ..edge import inbound
from ..presenters import json_response
from ..transaction import in_transaction

router = APIRouter(tags=["open job spec"])

BASE = "/ojs/v1"
_MAX_ID = 128
_KNOWN = frozenset({"type", "args", "id", "meta", "options", "specversion", "schema", "queue"})
_SYSTEM = frozenset(
    {"state", "attempt", "created_at", "enqueued_at", "started_at", "completed_at", "error"}
)


class OjsError(DomainError):
    """A refusal worded with the spec's own code (api/errors.py passes it on as is)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message, code=code)
        self.http_status = status


def _invalid(message: str) -> OjsError:
    return OjsError(400, "invalid_request", message)


def _not_found(job_id: object) -> OjsError:
    return OjsError(404, "not_found", f"Job '{job_id}' not found.")


async def _body(request: Request) -> dict[str, Any]:
    """The request's JSON object, as the edge parsed it (400 invalid_payload else)."""
    edge = inbound(request.scope)
    body = await edge.body()
    value = edge.parsed() if body.data else None
    if not isinstance(value, dict):
        raise OjsError(400, "invalid_payload", "The body must be a JSON object.")
    return value


def _when(at: datetime | None) -> str | None:
    if at is None:
        return None
    return at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def envelope(task: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """A task as the spec's job envelope; what the task lacks is left out, not null."""
    data = task["data"] if isinstance(task["data"], dict) else {}
    status = TaskStatus(task["status"])
    state = ojs.state_of(status, task["not_before"], now)
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
        "created_at": _when(task["creation_time"]),
        "enqueued_at": _when(task["not_before"] or task["creation_time"]),
    }
    job.update(data.get("extra", {}))
    if task["not_before"] is not None and state is State.SCHEDULED:
        job["scheduled_at"] = _when(task["not_before"])
    if task.get("expires_at") is not None:
        job["expires_at"] = _when(task["expires_at"])
    if task["start_time"] is not None:
        job["started_at"] = _when(task["start_time"])
    ended = _when(task["end_time"] or task["update_time"])
    if state is State.ACTIVE and task["worker"]:
        job["worker_id"] = task["worker"]
    if state is State.COMPLETED:
        job["completed_at"] = ended
        if task["result"] is not None:
            job["result"] = task["result"]
    elif state is State.DISCARDED:
        job["completed_at"] = job["discarded_at"] = ended
    elif state is State.CANCELLED:
        job["cancelled_at"] = ended
    if task["reason"] and state in (State.RETRYABLE, State.DISCARDED, State.ACTIVE):
        job["error"] = ojs.error_of(task["reason"])
    if state is State.RETRYABLE and task["not_before"] is not None:
        job["next_attempt_at"] = _when(task["not_before"])
    return job


@router.get("/ojs/manifest")
async def manifest(request: Request) -> Response:
    """What this server implements of the spec: level 0 (core), over HTTP."""
    base = str(request.base_url).rstrip("/")
    return json_response(
        {
            "specversion": ojs.SPEC_VERSION,
            "ojs_version": ojs.SPEC_VERSION,
            "implementation": {"name": "jobnik", "version": __version__, "language": "python"},
            "conformance_level": 0,
            "conformance_tier": "runtime",
            "protocols": ["http"],
            "backend": request.app.state.database.engine.dialect.name,
            "capabilities": {
                "batch_enqueue": False,
                "cron_jobs": False,
                "dead_letter": False,
                "delayed_jobs": True,
                "job_ttl": False,
                "priority_queues": True,
                "rate_limiting": False,
                "schema_validation": False,
                "unique_jobs": False,
                "workflows": False,
                "pause_resume": False,
            },
            "extensions": [],
            "endpoints": {
                "base_url": f"{base}{BASE}",
                "manifest": "/ojs/manifest",
                "health": f"{BASE}/health",
            },
        },
        200,
    )


@router.get(f"{BASE}/health")
async def health(db: DatabaseDep) -> Response:
    """ok while the database answers (the backend's latency with it); else 503."""
    began = datetime.now(UTC)
    try:
        await db.ping()
    except Exception as exc:  # the database away, whatever the driver raised
        backend: dict[str, object] = {
            "type": db.engine.dialect.name,
            "status": "disconnected",
            "error": str(exc),
        }
        return json_response({"status": "degraded", "backend": backend}, 503)
    latency = (datetime.now(UTC) - began).total_seconds() * 1000
    backend = {"type": db.engine.dialect.name, "status": "connected", "latency_ms": latency}
    return json_response({"status": "ok", "version": ojs.SPEC_VERSION, "backend": backend}, 200)


def _new_task(body: dict[str, Any], now: datetime) -> tuple[str, str, int, NewTask]:
    """A PUSH body as the task it makes (with its type, queue and priority), or the
    refusal that names the first field wrong."""
    kind = body.get("type")
    if not isinstance(kind, str) or not ojs.TYPE_PATTERN.fullmatch(kind) or len(kind) > 255:
        raise _invalid("type: required, dot-separated lowercase names (e.g. email.send)")
    args = body.get("args")
    if not isinstance(args, list):
        raise _invalid("args: required, a JSON array")
    meta = body.get("meta", {})
    if not isinstance(meta, dict):
        raise _invalid("meta: a JSON object")
    options = body.get("options", {})
    if not isinstance(options, dict):
        raise _invalid("options: a JSON object")
    queue = options.get("queue", body.get("queue", ojs.DEFAULT_QUEUE))
    if not isinstance(queue, str) or not ojs.QUEUE_PATTERN.fullmatch(queue) or len(queue) > 50:
        raise _invalid("options.queue: lowercase letters, digits, '-' and '.', up to 50")
    priority = options.get("priority", body.get("priority", 0))
    if type(priority) is not int or not -100 <= priority <= 100:
        raise _invalid("options.priority: an integer from -100 to 100")
    task_id = None
    if "id" in body:
        given = body["id"]
        if not isinstance(given, str) or not ojs.UUID7_PATTERN.fullmatch(given):
            raise _invalid("id: a lowercase UUIDv7")
        task_id = uuid.UUID(given)
    attempts, policy = _retry(options.get("retry", options.get("retry_policy", {})))
    timeout_ms = options.get("timeout_ms")
    if timeout_ms is not None and (type(timeout_ms) is not int or timeout_ms < 1):
        raise _invalid("options.timeout_ms: a positive integer")
    not_before = _time(options.get("delay_until", options.get("scheduled_at")), "delay_until")
    extra = {k: v for k, v in body.items() if k not in _KNOWN and k not in _SYSTEM}
    data = {"type": kind, "args": args, "meta": meta, "priority": priority}
    if extra:
        data["extra"] = extra
    task = NewTask(
        data=data,
        max_attempts=max(attempts, 1),
        retry_policy=policy,
        not_before=not_before if not_before is not None and not_before > now else None,
        timeout_seconds=timeout_ms / 1000 if timeout_ms else None,
        id=task_id,
    )
    return kind, queue, priority, task


def _retry(retry: object) -> tuple[int, RetryPolicy]:
    """The spec's retry policy (its defaults for what it leaves out) as ours: attempts
    in all, and the backoff. Its jitter, a wait drawn from half to one and a half of
    the backoff, is ours of half: a wait drawn from half to all of it."""
    if not isinstance(retry, dict):
        raise _invalid("options.retry: a JSON object")

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


def _time(value: object, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        at = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        at = None
    if at is None or at.tzinfo is None:
        raise _invalid(f"options.{name}: an RFC 3339 time with its zone")
    return at


@router.post(f"{BASE}/jobs", status_code=201)
async def push(request: Request, db: DatabaseDep) -> Response:
    """PUSH: enqueue one job (a job of one stage, its queue, of one task)."""
    body = await _body(request)
    now = db.clock.now()
    kind, queue, priority, task = _new_task(body, now)
    task = NewTask(**{**_fields(task), "id": task.id or uuid.UUID(str(uuid7()))})
    new = NewJob(
        name=kind[:50],
        data={},
        priority=ojs.priority_of(priority),
        owner=creator(),
        stages=[NewStage(type=queue, data={}, tasks=[task])],
    )

    async def work(s: AsyncSession) -> None:
        await jobs.create_job(s, new)

    try:
        await in_transaction(db, work)
    except IntegrityError as exc:  # the id is another job's
        raise OjsError(409, "duplicate", f"A job with id '{task.id}' exists already.") from exc
    made = await task_columns(db, task.id) if task.id else None
    assert made is not None
    location = {"Location": f"{BASE}/jobs/{task.id}"}
    return _answer({"job": envelope(made, now)}, 201, location)


def _fields(task: NewTask) -> dict[str, Any]:
    return {name: getattr(task, name) for name in task.__slots__}


def _answer(body: object, status: int, headers: Mapping[str, str] | None = None) -> Response:
    response = json_response(body, status)
    response.headers.update(headers or {})
    return response


async def _task(db: Any, job_id: object) -> Mapping[str, Any]:
    """The task of this OJS job id, or 404 (an id that is no UUID names no job)."""
    try:
        parsed = uuid.UUID(job_id) if isinstance(job_id, str) and len(job_id) <= _MAX_ID else None
    except ValueError:
        parsed = None
    found = await task_columns(db, parsed) if parsed is not None else None
    if found is None:
        raise _not_found(job_id)
    return found


@router.get(BASE + "/jobs/{taskId}")
async def info(db: DatabaseDep, taskId: str) -> Response:
    """INFO: the job as it stands."""
    return _answer({"job": envelope(await _task(db, taskId), db.clock.now())}, 200)


@router.delete(BASE + "/jobs/{taskId}")
async def cancel(db: DatabaseDep, taskId: str) -> Response:
    """CANCEL: abort the job (its task with it); a finished one is a conflict."""
    task = await _task(db, taskId)
    now = db.clock.now()
    previous = ojs.state_of(TaskStatus(task["status"]), task["not_before"], now)
    if previous.is_final:
        raise _conflict(task, previous, "cancel")
    try:
        await in_transaction(db, jobs.change_status, task["job_id"], JobStatus.ABORTED)
    except DomainError as exc:
        raise _conflict(task, previous, "cancel") from exc
    job = envelope(await _task(db, taskId), db.clock.now())
    return _answer({"job": {**job, "previous_state": previous.value}}, 200)


def _conflict(task: Mapping[str, Any], state: State, doing: str) -> OjsError:
    return OjsError(409, "conflict", f"Job '{task['id']}' is {state.value}: it cannot {doing}.")


@router.post(f"{BASE}/workers/fetch")
async def fetch(request: Request, db: DatabaseDep) -> Response:
    """FETCH: claim up to `count` jobs of the queues, each leased for its visibility
    timeout."""
    body = await _body(request)
    queues = body.get("queues")
    if (
        not isinstance(queues, list)
        or not queues
        or len(queues) > 20
        or not all(isinstance(q, str) and ojs.QUEUE_PATTERN.fullmatch(q) for q in queues)
    ):
        raise _invalid("queues: required, 1 to 20 queue names")
    count = body.get("count", 1)
    if type(count) is not int or not 1 <= count <= 100:
        raise _invalid("count: an integer from 1 to 100")
    worker = body.get("worker_id")
    if worker is not None and (not isinstance(worker, str) or not 0 < len(worker) <= 100):
        raise _invalid("worker_id: a string of up to 100 characters")
    visibility = body.get("visibility_timeout_ms", ojs.DEFAULT_VISIBILITY_MS)
    if type(visibility) is not int or not 1000 <= visibility <= 86_400_000:
        raise _invalid("visibility_timeout_ms: an integer from 1000 to 86400000")
    lease = timedelta(milliseconds=visibility)
    claimed: list[Mapping[str, Any]] = []
    for look in range(2):
        # Short: retries and delayed jobs whose time came since the last tick are opened
        # now (the tick would, within its interval), and the queues looked at again.
        if look and (len(claimed) == count or not await open_due_retries(db)):
            break
        for queue in dict.fromkeys(queues):  # in the order given: the first queue first
            left = count - len(claimed)
            if left <= 0:
                break
            got = await claim(db, [queue], limit=left, lease=lease, worker=worker)
            claimed.extend(_columns(row) for row in got.rows)
    now = db.clock.now()
    return _answer({"jobs": [envelope(t, now) for t in claimed]}, 200)


def _columns(row: Any) -> Mapping[str, Any]:
    mapping: Mapping[str, Any] | None = getattr(row, "_mapping", None)
    return mapping if mapping is not None else vars(row)


async def _report(db: Any, body: dict[str, Any], report: Report, doing: str) -> Mapping[str, Any]:
    task = await _task(db, body.get("job_id"))
    state = ojs.state_of(TaskStatus(task["status"]), task["not_before"], db.clock.now())
    if state is not State.ACTIVE:
        raise _conflict(task, state, doing)
    [answer] = await settle(db, [(uuid.UUID(str(task["id"])), report)])
    if isinstance(answer, DomainError):
        raise _conflict(task, state, doing) from answer
    return _columns(answer)


@router.post(f"{BASE}/workers/ack")
async def ack(request: Request, db: DatabaseDep) -> Response:
    """ACK: the job completed, with its result (a JSON object) if any."""
    body = await _body(request)
    result = body.get("result")
    if result is not None and not isinstance(result, dict):
        raise _invalid("result: a JSON object")
    task = await _report(db, body, Report(TaskStatus.COMPLETED, result=result), "be acked")
    job = envelope(task, db.clock.now())
    said = {"acknowledged": True, "id": job["id"], "job_id": job["id"], "state": job["state"]}
    return _answer({**said, "completed_at": job.get("completed_at")}, 200)


@router.post(f"{BASE}/workers/nack")
async def nack(request: Request, db: DatabaseDep) -> Response:
    """NACK: the attempt failed. Retried after a delay while it has attempts left and
    the error is retryable, else discarded."""
    body = await _body(request)
    error = body.get("error")
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        raise _invalid("error: required, an object with a message")
    code = error.get("code") if isinstance(error.get("code"), str) else None
    details = error.get("details")
    details = details if isinstance(details, dict) else {}
    kind = error.get("type") or details.get("error_class") or code
    report = Report(
        TaskStatus.FAILED,
        reason=ojs.reason_of(code, error["message"])[:2000],
        retryable=error.get("retryable") is not False,
        error_type=kind if isinstance(kind, str) else None,
    )
    task = await _report(db, body, report, "be nacked")
    now = db.clock.now()
    job = envelope(task, now)
    said = {
        "id": job["id"],
        "job_id": job["id"],
        "state": job["state"],
        "attempt": job["attempt"],
        "max_attempts": job["max_attempts"],
    }
    if job["state"] == State.RETRYABLE and task["not_before"] is not None:
        said["next_attempt_at"] = job["next_attempt_at"]
        said["retry_delay_ms"] = max(0, int((task["not_before"] - now).total_seconds() * 1000))
    for field in ("discarded_at", "completed_at"):
        if field in job:
            said[field] = job[field]
    return _answer(said, 200)
