"""The Worker's own plumbing never costs a task an attempt: a failure to read the task's
job and stage before its handler runs hands the task back, and the handler runs once
the manager answers again."""

from __future__ import annotations

import asyncio
import os
import signal
from datetime import timedelta
from typing import Any

import httpx

from jobnik_manager.app import create_app
from jobnik_manager.db.engine import Database
from jobnik_manager.settings import Settings
from jobnik_sdk import (
    JobnikClient,
    NewStage,
    NewTask,
    RequestRetryPolicy,
    TaskContext,
    Worker,
)
from jobnik_sdk._worker import CONTEXT_UNREAD_REASON

from ..support.api import unique


class FlakyContext(httpx.AsyncBaseTransport):
    """The app in-process, except that claims carry no context (as from a manager
    without it) and the first read of a stage fails to connect."""

    def __init__(self, app: Any) -> None:
        self._app = httpx.ASGITransport(app=app)
        self.failed_reads = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/tasks/claim" and b'"withContext":true' in request.content:
            return httpx.Response(
                400, json={"message": "withContext: unknown field", "code": "VALIDATION_ERROR"}
            )
        path, method = request.url.path, request.method
        if path.startswith("/v1/stages/") and method == "GET" and self.failed_reads == 0:
            self.failed_reads += 1
            raise httpx.ConnectError("connection refused", request=request)
        return await self._app.handle_async_request(request)


async def test_a_context_read_that_fails_hands_the_task_back(db: Database) -> None:
    app = create_app(Settings(database_url=db.url), database=db)
    transport = FlakyContext(app)
    stage_type = unique("plumbing")
    ran: list[int] = []
    done = asyncio.Event()

    async def handle(data: dict[str, Any], ctx: TaskContext) -> None:
        ran.append(ctx.task.attempts)
        done.set()

    # No request retries: the one failed read reaches the Worker.
    once = RequestRetryPolicy(max_attempts=1)
    async with JobnikClient("http://manager", transport=transport, retry=once) as client:
        job = await client.create_job(
            unique("job"), stages=[NewStage(type=stage_type, tasks=[NewTask(data={})])]
        )
        worker = Worker(client, stage_types=stage_type, handler=handle, handle_signals=False)
        async with worker:
            await asyncio.wait_for(done.wait(), timeout=30)
        finished = await client.wait(job.id, timeout=timedelta(seconds=30))
        history = [
            (e.entity, e.to_status, e.attempt, e.reason)
            for e in (await client.list_events(job.id, page_size=100)).items
            if e.entity == "TASK"
        ]

    assert transport.failed_reads == 1
    assert ran == [0], "the handler ran once, on the task's first attempt"
    assert finished.status == "COMPLETED"
    handed_back = [h for h in history if h[1] == "RETRIED"]
    assert len(handed_back) == 1 and handed_back[0][2] == 0, history
    assert handed_back[0][3] is not None and handed_back[0][3].startswith(CONTEXT_UNREAD_REASON)


async def test_a_second_signal_stops_the_worker_without_waiting(db: Database) -> None:
    """The first SIGTERM starts a graceful stop (a long grace here); the second cancels
    the running handler at once, and its task is handed back with no attempt spent."""
    app = create_app(Settings(database_url=db.url), database=db)
    stage_type = unique("signals")
    started = asyncio.Event()

    async def handle(data: dict[str, Any], ctx: TaskContext) -> None:
        started.set()
        await asyncio.Event().wait()  # never ends of itself

    transport = httpx.ASGITransport(app=app)
    async with JobnikClient("http://manager", transport=transport) as client:
        job = await client.create_job(
            unique("job"), stages=[NewStage(type=stage_type, tasks=[NewTask(data={})])]
        )
        worker = Worker(
            client, stage_types=stage_type, handler=handle, shutdown_grace=timedelta(hours=1)
        )
        running = asyncio.create_task(worker.run())
        await asyncio.wait_for(started.wait(), timeout=30)
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.sleep(0.1)
        assert not running.done(), "the first signal waits for the running task"
        os.kill(os.getpid(), signal.SIGTERM)
        # Returns of itself, long before the hour of grace; the bound keeps a failing
        # test from hanging.
        await asyncio.wait_for(running, timeout=30)
        [stage] = await client.get_job_stages(job.id, with_tasks=True)
    assert stage.tasks is not None
    [handed_back] = stage.tasks
    assert handed_back.status == "RETRIED" and handed_back.attempts == 0
