"""/v1/tasks"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Mapping
from datetime import timedelta
from typing import Any, cast

from fastapi import APIRouter, Request, Response
from sqlalchemy.ext.asyncio import AsyncSession

from ...db.models import Task
from ...dispatch.wakeups import Waiter
from ...domain.errors import DomainError
from ...domain.statuses import TaskStatus
from ...services import reads, task_events
from ...services import tasks as task_service
from ...services.batching import report
from ...services.claims import Claimed, claim
from ...services.leases import Beat, heartbeat, heartbeats
from ...services.reports import Report, settle
from ..auth import listing_owner
from ..deps import CreatedDep, DatabaseDep, PageDep, SightingsDep, WaitersDep
from ..edge import EdgeRoute
from ..idempotency import IdempotencyKeyHeader, create_once
from ..presenters import (
    event_body,
    job_body,
    json_response,
    stage_body,
    task_bodies,
    task_body,
    task_out,
    task_response,
)
from ..schemas import (
    BatchHeartbeat,
    BatchHeartbeatOut,
    BatchReport,
    BatchReportOut,
    ClaimOut,
    ClaimRequest,
    ErrorMessage,
    EventOut,
    Heartbeat,
    HeartbeatOut,
    HeartbeatResultOut,
    Page,
    TaskEventIn,
    TaskOut,
    TaskStatusReport,
)
from ..transaction import in_transaction
from .common import (
    ERRORS,
    LEASE_ERRORS,
    StageTypeQuery,
    add_user_metadata_route,
    answers,
    one_page,
    pages_of,
)

router = APIRouter(prefix="/v1/tasks", tags=["tasks"], route_class=EdgeRoute)


def _report_of(payload: TaskStatusReport) -> Report:
    return Report(
        status=TaskStatus(payload.status),
        lease_id=payload.lease_id,
        result=payload.result,
        reason=payload.reason,
        retryable=payload.retryable is not False,
        error_type=payload.error_type,
        retry_after=(
            timedelta(seconds=payload.retry_after_seconds)
            if payload.retry_after_seconds is not None
            else None
        ),
    )


async def _woken_or_gone(request: Request, waiter: Waiter, seconds: float) -> bool:
    """Wait until `waiter` is woken, the client goes away or `seconds` pass; answer
    whether the client went away. A client that went away ends the wait at once: a long
    poll held for nobody would keep a stopping server (which waits for its requests) up
    for the rest of it.

    The claim waits on its waiter itself, so a wake-up resumes it at the next turn of the
    event loop (before the rest of the request that woke it: engine.transaction), where
    a wait on both in tasks of their own took three turns more. What the watcher heard
    is answered without asking the connection again: that would give up the turn, and
    the claim's statement would wait for the waking request's answer."""
    went = False

    async def gone(wait: asyncio.Timeout) -> None:
        nonlocal went
        while (await request.receive())["type"] != "http.disconnect":
            pass
        went = True
        wait.reschedule(asyncio.get_running_loop().time())  # it ends now

    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds) as wait:
            watching = asyncio.ensure_future(gone(wait))
            watching.add_done_callback(lambda t: t.cancelled() or t.exception())  # heard of
            try:
                await waiter.event.wait()
            finally:
                # Cancelled before the wait is over: it cannot end another one.
                watching.cancel()
    return went


@router.post("/claim", **answers(ClaimOut, ERRORS))
async def claim_batch(
    request: Request,
    db: DatabaseDep,
    waiters: WaitersDep,
    payload: ClaimRequest,
    sightings: SightingsDep = None,
) -> Response:
    """Claim up to `limit` tasks of any of `stageTypes`; `items` is empty when none is ready.

    With `waitSeconds`, a claim that finds nothing waits up to that long for tasks of
    those types to become ready (long poll) and answers as soon as it has some. With
    `withContext`, the answer also holds the claimed tasks' stages and jobs.
    """
    lease = timedelta(seconds=payload.lease_seconds) if payload.lease_seconds else None
    if sightings is not None:  # before a long poll waits: an idle worker is alive too
        await sightings.seen(db, payload.worker, payload.stage_types)

    def work() -> Awaitable[Claimed]:
        return claim(
            db,
            payload.stage_types,
            limit=payload.limit,
            lease=lease,
            worker=payload.worker,
            with_context=payload.with_context,
        )

    wait = payload.wait_seconds or 0.0
    if wait <= 0:
        claimed = await work()
    else:
        deadline = asyncio.get_running_loop().time() + wait
        # Registered before the first claim, so no wake-up in between is missed.
        with waiters.waiting(payload.stage_types) as waiter:
            while True:
                waiter.event.clear()
                claimed = await work()
                left = deadline - asyncio.get_running_loop().time()
                if claimed.rows or left <= 0:
                    break
                if await request.is_disconnected():
                    break  # claiming for a client that is gone would strand the tasks
                # A limit that held a type back frees up with time, announced by nobody.
                if claimed.retry_after is not None:
                    left = min(left, claimed.retry_after)
                if await _woken_or_gone(request, waiter, left):
                    if waiter.event.is_set():
                        waiters.pass_on(waiter)  # woken for a task it will not claim
                    break
                if not waiter.event.is_set() and asyncio.get_running_loop().time() >= deadline:
                    # The wait ran out unwoken: the empty answer stands, and the claim
                    # the worker sends next looks again at once. Claiming here too would
                    # double what an idle worker costs.
                    break
    body: dict[str, Any] = {"items": task_bodies([_columns(r) for r in claimed.rows])}
    if claimed.retry_after is not None:  # a stage type's limit held tasks back
        body["retryAfterSeconds"] = round(claimed.retry_after, 3)
    if payload.with_context and claimed.rows:
        body["stages"] = [stage_body(st) for st in claimed.stages]
        body["jobs"] = [job_body(j) for j in claimed.jobs]
    return json_response(body, 200)


def _columns(row: Any) -> Mapping[str, Any]:
    """A claimed row's columns by name (a Row, or SQLite's namespace of them)."""
    mapping = getattr(row, "_mapping", None)
    return cast(Mapping[str, Any], mapping if mapping is not None else vars(row))


@router.post("/reports", **answers(BatchReportOut, ERRORS))
async def report_batch(db: DatabaseDep, payload: BatchReport) -> Response:
    """Settle many tasks in one transaction; each report stands or falls on its own."""
    items = [(item.task_id, _report_of(item)) for item in payload.reports]
    answers = await settle(db, items)

    def outcome(task_id: uuid.UUID, answer: object) -> dict[str, object]:
        if isinstance(answer, DomainError):
            error = {"message": answer.message, "code": answer.code}
            return {"taskId": str(task_id), "error": error}
        if not payload.with_tasks:
            return {"taskId": str(task_id)}
        return {"taskId": str(task_id), "task": task_body(_columns(answer))}

    return json_response(
        {"items": [outcome(task_id, a) for (task_id, _), a in zip(items, answers, strict=True)]},
        200,
    )


@router.post("/heartbeats", **answers(BatchHeartbeatOut, ERRORS))
async def heartbeat_batch(db: DatabaseDep, payload: BatchHeartbeat) -> BatchHeartbeatOut:
    """Extend many leases at once; each heartbeat is answered on its own, in order."""
    lease = timedelta(seconds=payload.lease_seconds) if payload.lease_seconds else None
    beats = [Beat(h.task_id, h.lease_id, h.percent, h.message) for h in payload.heartbeats]

    async def work(s: AsyncSession) -> BatchHeartbeatOut:
        answers = await heartbeats(s, beats, lease=lease)
        return BatchHeartbeatOut(
            items=[
                HeartbeatResultOut(task_id=beat.task_id, error=_error(answer))
                if isinstance(answer, DomainError)
                else HeartbeatResultOut(
                    task_id=beat.task_id,
                    lease_expires_at=answer.lease_expires_at,
                    cancel_requested=answer.cancel_requested,
                    job_status=answer.job_status,
                )
                for beat, answer in zip(beats, answers, strict=True)
            ]
        )

    return await in_transaction(db, work)


def _error(exc: DomainError) -> ErrorMessage:
    return ErrorMessage(message=exc.message, code=exc.code)


@router.get("", **pages_of(TaskOut))
async def find_tasks(
    db: DatabaseDep,
    page: PageDep,
    created: CreatedDep,
    stage_id: uuid.UUID | None = None,
    stage_type: StageTypeQuery = None,
    status: TaskStatus | None = None,
) -> Page[TaskOut]:
    f = task_service.TaskFilter(
        owner=listing_owner(),
        stage_id=stage_id,
        stage_type=stage_type,
        status=status,
        created=created,
    )

    return await one_page(db, task_out, task_service.find_tasks, f, page)


@router.get("/{taskId}", **answers(TaskOut, ERRORS))
async def get_task(db: DatabaseDep, taskId: uuid.UUID) -> Response:
    # A key lookup answered without the model (also the fast lane's): a v1 worker may
    # read its task around every run.
    return task_response(await reads.task(db, taskId))


add_user_metadata_route(router, Task, "taskId", "TASK_MODIFIED_SUCCESSFULLY")


@router.put("/{taskId}/status", **answers(TaskOut, LEASE_ERRORS))
async def report_task_status(
    db: DatabaseDep, taskId: uuid.UUID, payload: TaskStatusReport
) -> Response:
    return task_response(await report(db, taskId, _report_of(payload)))


@router.post(
    "/{taskId}/events",
    status_code=201,
    response_model=EventOut,
    responses=LEASE_ERRORS,
)
async def add_task_event(
    db: DatabaseDep,
    request: Request,
    taskId: uuid.UUID,
    payload: TaskEventIn,
    idempotency_key: IdempotencyKeyHeader = None,
) -> Response:
    """Extension: add an entry to the task's job history (under the task's lease while it
    runs); GET /v1/jobs/{jobId}/events answers it beside the status changes. With an
    `Idempotency-Key`, sending it again adds nothing and answers the first entry, so a
    client may retry it through a restart."""
    new = task_events.NewTaskEvent(
        name=payload.name,
        level=payload.level,
        message=payload.message,
        fields=payload.fields,
        lease_id=payload.lease_id,
    )

    async def work(s: AsyncSession) -> object:
        return event_body(await task_events.add_task_event(s, taskId, new))

    return await create_once(
        db, request, idempotency_key, lambda: payload.model_dump(mode="json"), work
    )


@router.post("/{taskId}/heartbeat", response_model=HeartbeatOut, responses=LEASE_ERRORS)
async def task_heartbeat(db: DatabaseDep, taskId: uuid.UUID, payload: Heartbeat) -> HeartbeatOut:
    """Extend the lease; `cancelRequested` tells the holder its task was aborted."""
    lease = timedelta(seconds=payload.lease_seconds) if payload.lease_seconds else None

    async def work(s: AsyncSession) -> HeartbeatOut:
        answer = await heartbeat(
            s,
            taskId,
            payload.lease_id,
            progress=payload.percent,
            message=payload.message,
            lease=lease,
        )
        return HeartbeatOut(
            lease_expires_at=answer.lease_expires_at,
            cancel_requested=answer.cancel_requested,
            job_status=answer.job_status,
        )

    return await in_transaction(db, work)
