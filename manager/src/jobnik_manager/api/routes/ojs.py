"""/ojs/v1: the Open Job Spec's HTTP binding (levels 0 to 4 declared), on the same
tables and rules as /v1. An OJS job is a task in a job of its own; its queue is the
task's stage type, its id the task's (a UUIDv7 the client may choose), its type, args,
meta and priority kept in the task's data. PUSH creates the job, FETCH is the claim (its
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
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from ... import __version__
from ...db.engine import Database
from ...db.models import TASKS
from ...domain import ojs
from ...domain.errors import DomainError
from ...domain.ojs import State, WorkerState
from ...domain.statuses import JobStatus, TaskStatus
from ...services import jobs
from ...services.claimability import open_due_retries
from ...services.claims import claim
from ...services.dead_letters import failures_of
from ...services.leases import Beat, HeartbeatAnswer, heartbeats
from ...services.ojs_pushes import Duplicate, Push, push_jobs
from ...services.reports import Report, expire_lease_if_due, settle
from ...services.unique_jobs import KeyTakenMeanwhile
from ...services.worker_directives import state_of
from ...services.workflow_events import record_events
from ...services.workflows import batch_of, fire_callbacks, mark_of, parent_results
from ..deps import DatabaseDep
from ..ojs_push import new_job, rate_limit_of, unique_of
from ..ojs_wire import (
    BASE,
    OjsError,
    answer,
    columns,
    conflict,
    envelope,
    error_entry,
    invalid,
    read_body,
    task_of,
    when,
)
from ..presenters import json_response
from ..transaction import in_transaction

BATCH_PUSH = 1000

router = APIRouter(tags=["open job spec"])


@router.get("/ojs/manifest")
async def manifest(request: Request) -> Response:
    """What this server implements of the spec: level 4 (core, reliable, scheduled,
    orchestration, advanced), over HTTP; the capabilities say what it has of each."""
    base = str(request.base_url).rstrip("/")
    return json_response(
        {
            "specversion": ojs.SPEC_VERSION,
            "ojs_version": ojs.SPEC_VERSION,
            "implementation": {"name": "jobnik", "version": __version__, "language": "python"},
            "conformance_level": 4,
            "conformance_tier": "runtime",
            "protocols": ["http"],
            "backend": request.app.state.database.engine.dialect.name,
            "capabilities": {
                "batch_enqueue": True,
                "cron_jobs": True,
                "dead_letter": True,
                "delayed_jobs": True,
                "job_ttl": True,
                "priority_queues": True,
                "rate_limiting": True,
                "schema_validation": False,
                "unique_jobs": True,
                "workflows": True,
                "pause_resume": True,
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


def _push_of(body: dict[str, Any], now: datetime) -> Push:
    """A PUSH body as what it makes: its job, its unique policy, its queue's limits."""
    return Push(new_job(body, now), unique_of(body), rate_limit_of(body))


async def _create(db: Database, pushes: list[Push]) -> list[tuple[Mapping[str, Any], bool]]:
    """The jobs made in one transaction (all or none): their tasks, in order, and
    whether each was made (a duplicate ignored answers the job it duplicates)."""

    async def work(s: AsyncSession) -> list[tuple[Mapping[str, Any], bool]]:
        done = await push_jobs(s, pushes)
        ids = [task_id for task_id, _ in done]
        found = (await s.execute(select(TASKS).where(TASKS.c.id.in_(ids)))).mappings()
        by_id = {row["id"]: dict(row) for row in found}
        return [(by_id[task_id], made) for task_id, made in done]

    try:
        try:
            return await in_transaction(db, work)
        except KeyTakenMeanwhile:  # another push took a fingerprint first: look again
            return await in_transaction(db, work)
    except IntegrityError as exc:  # an id is another job's (or twice in the batch)
        raise OjsError(409, "duplicate", "A job with one of these ids exists already.") from exc
    except Duplicate as exc:
        raise OjsError(409, "duplicate", str(exc)) from exc


@router.post(f"{BASE}/jobs", status_code=201)
async def push(request: Request, db: DatabaseDep) -> Response:
    """PUSH: enqueue one job (a job of one stage, its queue, of one task). A duplicate
    its unique policy ignores answers 200 with the job it duplicates."""
    now = db.clock.now()
    [(made, new)] = await _create(db, [_push_of(await read_body(request), now)])
    if not new:
        return answer({"job": envelope(made, now), "deduplicated": True}, 200)
    location = {"Location": f"{BASE}/jobs/{made['id']}"}
    return answer({"job": envelope(made, now)}, 201, location)


@router.post(f"{BASE}/jobs/batch", status_code=201)
async def push_many(request: Request, db: DatabaseDep) -> Response:
    """PUSH of up to 1,000 jobs at once: all made, or none (the first bad one named)."""
    body = await read_body(request)
    listed = body.get("jobs")
    if not isinstance(listed, list) or not 1 <= len(listed) <= BATCH_PUSH:
        raise invalid(f"jobs: required, a list of 1 to {BATCH_PUSH:,} jobs")
    now, pushes = db.clock.now(), []
    for index, item in enumerate(listed):
        if not isinstance(item, dict):
            raise invalid(f"jobs[{index}]: a JSON object")
        try:
            pushes.append(_push_of(item, now))
        except OjsError as refused:
            raise OjsError(refused.http_status, refused.code, f"jobs[{index}]: {refused}") from None
    made = await _create(db, pushes)
    return answer({"jobs": [envelope(task, now) for task, _ in made], "count": len(made)}, 201)


@router.get(BASE + "/jobs/{taskId}")
async def info(db: DatabaseDep, taskId: str) -> Response:
    """INFO: the job as it stands, with the errors of its failed attempts (`errors`). A
    job whose visibility timeout ran out is settled as the reaper would, first."""
    task = await task_of(db, taskId)
    expiry = task["lease_expires_at"]
    if task["status"] == TaskStatus.IN_PROGRESS and expiry and expiry < db.clock.now():
        # Settled here, or by the reaper meanwhile (waited for): read as it now stands.
        await in_transaction(db, expire_lease_if_due, uuid.UUID(str(task["id"])), wait=True)
        task = await task_of(db, taskId)
    job = envelope(task, db.clock.now())
    key = (task["job_id"], task["id"])
    failures = (await in_transaction(db, failures_of, [key])).get(task["id"], [])
    if failures:
        job["errors"] = [error_entry(f) for f in failures]
    return answer({"job": job}, 200)


@router.delete(BASE + "/jobs/{taskId}")
async def cancel(db: DatabaseDep, taskId: str) -> Response:
    """CANCEL: abort the job (its task with it); a finished one is a conflict."""
    task = await task_of(db, taskId)
    now = db.clock.now()
    previous = ojs.state_of(
        TaskStatus(task["status"]), task["not_before"], now, claimable=task["claimable"]
    )
    if previous.is_final:
        raise conflict(task, previous, "cancel")
    try:
        await in_transaction(db, jobs.change_status, task["job_id"], JobStatus.ABORTED)
    except DomainError as exc:
        raise conflict(task, previous, "cancel") from exc
    await _workflow_turn(db, task)
    job = envelope(await task_of(db, taskId), db.clock.now())
    return answer({"job": {**job, "previous_state": previous.value}}, 200)


@router.post(f"{BASE}/workers/fetch")
async def fetch(request: Request, db: DatabaseDep) -> Response:
    """FETCH: claim up to `count` jobs of the queues, each leased for its visibility
    timeout."""
    body = await read_body(request)
    queues = body.get("queues")
    if (
        not isinstance(queues, list)
        or not queues
        or len(queues) > 20
        or not all(isinstance(q, str) and ojs.QUEUE_PATTERN.fullmatch(q) for q in queues)
    ):
        raise invalid("queues: required, 1 to 20 queue names")
    count = body.get("count", 1)
    if type(count) is not int or not 1 <= count <= 100:
        raise invalid("count: an integer from 1 to 100")
    worker = body.get("worker_id")
    if worker is not None and (not isinstance(worker, str) or not 0 < len(worker) <= 100):
        raise invalid("worker_id: a string of up to 100 characters")
    named = body.get("visibility_timeout_ms")
    visibility = ojs.DEFAULT_VISIBILITY_MS if named is None else named
    if type(visibility) is not int or not 1000 <= visibility <= 86_400_000:
        raise invalid("visibility_timeout_ms: an integer from 1000 to 86400000")
    lease = timedelta(milliseconds=visibility)
    if worker is not None and await in_transaction(db, state_of, worker) != WorkerState.RUNNING:
        return answer({"jobs": []}, 200)  # told to go quiet or terminate: it gets no more
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
            claimed.extend(columns(row) for row in got.rows)
    if named is None:
        await _own_leases(db, claimed)
    now = db.clock.now()
    jobs = [envelope(t, now) for t in claimed]
    begun: set[uuid.UUID] = set()
    for job, task in zip(jobs, claimed, strict=True):
        mark = mark_of(task["data"])
        if mark is not None:  # a chain's step or a batch's callback sees what came before
            parents = await in_transaction(db, parent_results, mark)
            if parents is not None:
                job["parent_results"] = parents
            begun.add(uuid.UUID(str(mark["id"])))
    for workflow_id in begun:  # its first job fetched: workflow.started
        await in_transaction(db, record_events, workflow_id)
    return answer({"jobs": jobs}, 200)


async def _own_leases(db: Database, claimed: list[Mapping[str, Any]]) -> None:
    """The jobs that brought their own visibility timeout, leased for it (the FETCH
    named none): their leases renewed at once for that long, as a heartbeat would."""
    by_length: dict[int, list[Beat]] = {}
    for task in claimed:
        data = task["data"] if isinstance(task["data"], dict) else {}
        own = data.get("visibility_ms")
        if isinstance(own, int):
            beat = Beat(uuid.UUID(str(task["id"])), task["lease_id"])
            by_length.setdefault(own, []).append(beat)
    for length, beats in by_length.items():
        await in_transaction(db, heartbeats, beats, lease=timedelta(milliseconds=length))


async def _report(db: Any, body: dict[str, Any], report: Report, doing: str) -> Mapping[str, Any]:
    task = await task_of(db, body.get("job_id"))
    state = ojs.state_of(TaskStatus(task["status"]), task["not_before"], db.clock.now())
    if state is not State.ACTIVE:
        raise conflict(task, state, doing)
    # A worker that names itself may settle only what it holds (one that does not, as
    # the spec's own examples, is taken at its word).
    worker = body.get("worker_id")
    if worker is not None and task["worker"] is not None and worker != task["worker"]:
        raise OjsError(409, "conflict", f"Job '{task['id']}' is held by another worker.")
    [answer] = await settle(db, [(uuid.UUID(str(task["id"])), report)])
    if isinstance(answer, DomainError):
        raise conflict(task, state, doing) from answer
    await _workflow_turn(db, task)
    return columns(answer)


async def _workflow_turn(db: Database, task: Mapping[str, Any]) -> None:
    """A workflow's job has ended: a batch's callbacks fire now if it was the last, and
    the workflow's end is told if it came (the maintenance tick does both for jobs that
    ended by another way)."""
    batch = batch_of(task["data"])
    if batch is not None:
        await in_transaction(db, fire_callbacks, batch)
    mark = mark_of(task["data"])
    if mark is not None:
        await in_transaction(db, record_events, uuid.UUID(str(mark["id"])))


@router.post(f"{BASE}/workers/ack")
async def ack(request: Request, db: DatabaseDep) -> Response:
    """ACK: the job completed, with its result (a JSON object) if any."""
    body = await read_body(request)
    result = body.get("result")
    if result is not None and not isinstance(result, dict):
        raise invalid("result: a JSON object")
    task = await _report(db, body, Report(TaskStatus.COMPLETED, result=result), "be acked")
    job = envelope(task, db.clock.now())
    said = {"acknowledged": True, "id": job["id"], "job_id": job["id"], "state": job["state"]}
    return answer({**said, "completed_at": job.get("completed_at")}, 200)


@router.post(f"{BASE}/workers/nack")
async def nack(request: Request, db: DatabaseDep) -> Response:
    """NACK: the attempt failed. Retried after a delay while it has attempts left and
    the error is retryable, else discarded."""
    body = await read_body(request)
    error = body.get("error")
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        raise invalid("error: required, an object with a message")
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
    return answer(said, 200)


@router.post(f"{BASE}/workers/heartbeat")
async def heartbeat(request: Request, db: DatabaseDep) -> Response:
    """BEAT: the worker is alive; the leases of the active jobs it lists are renewed (for
    `visibility_timeout_ms`, else as long as each was taken for). Jobs another worker
    holds, or no longer active, are not extended. The answer's `state` is what an
    operator told the worker (api/routes/ojs_workers.py), `running` unless told."""
    body = await read_body(request)
    worker = body.get("worker_id")
    if not isinstance(worker, str) or not 0 < len(worker) <= 100:
        raise invalid("worker_id: required, a string of up to 100 characters")
    listed = body.get("active_jobs", body.get("active_job_ids", []))
    if not isinstance(listed, list) or len(listed) > 1000:
        raise invalid("active_jobs: a list of job ids, at most 1,000")
    visibility = body.get("visibility_timeout_ms")
    if visibility is not None and (type(visibility) is not int or not visibility >= 1000):
        raise invalid("visibility_timeout_ms: an integer of 1000 or more")
    beats = []
    for job_id in dict.fromkeys(j for j in listed if isinstance(j, str)):
        try:
            task = await task_of(db, job_id)
        except OjsError:
            continue
        held_by = task["worker"]
        if task["status"] == TaskStatus.IN_PROGRESS and held_by in (None, worker):
            beats.append(Beat(uuid.UUID(str(task["id"])), task["lease_id"]))
    lease = timedelta(milliseconds=visibility) if visibility else None

    async def renew_and_hear(
        s: AsyncSession,
    ) -> tuple[list[HeartbeatAnswer | DomainError], WorkerState]:
        # The leases renewed and the worker's word read in one transaction.
        answers = await heartbeats(s, beats, lease=lease) if beats else []
        return answers, await state_of(s, worker)

    answers, told = await in_transaction(db, renew_and_hear)
    extended = [
        str(beat.task_id)
        for beat, said in zip(beats, answers, strict=True)
        if isinstance(said, HeartbeatAnswer) and not said.cancel_requested
    ]
    now = when(db.clock.now())
    return answer(
        {"state": told.value, "directive": "", "jobs_extended": extended, "server_time": now}, 200
    )
