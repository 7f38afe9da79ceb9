"""What a Worker sends the manager, counted at the HTTP transport: no per-task reads of
the job and stage, reports in batches, one heartbeat call for many tasks, a claim that
waits for work instead of polling, and pending reports sent at once on shutdown. Against
the manager in-process (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
import pytest

from jobnik_manager.app import create_app
from jobnik_manager.db.engine import Database
from jobnik_manager.settings import Settings
from jobnik_sdk import (
    Backoff,
    JobnikClient,
    JobStatus,
    NewStage,
    NewTask,
    TaskContext,
    TaskStatus,
)

from ..support.api import unique
from ..support.handlers import Gate
from ..support.workers import worker
from .conftest import FAST_RETRY

DEADLINE = timedelta(seconds=10)
POLL = timedelta(milliseconds=20)
# So slow that an idle worker which polled, rather than waited, would miss the deadline.
GLACIAL = Backoff(initial=timedelta(seconds=30), maximum=timedelta(seconds=60), jitter=0)


@dataclass(frozen=True)
class Sent:
    method: str
    path: str
    body: Any


class Recording(httpx.AsyncBaseTransport):
    """Passes each request on to `inner`, keeping its method, path and JSON body as it
    leaves."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.sent: list[Sent] = []
        self._one_more = asyncio.Event()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.sent.append(Sent(request.method, request.url.path, body))
        self._one_more.set()
        return await self.inner.handle_async_request(request)

    async def until(self, method: str, pattern: str, count: int) -> list[Sent]:
        """Wait until `count` requests like these were sent; return them."""
        while len(found := self.of(method, pattern)) < count:
            self._one_more.clear()
            await self._one_more.wait()
        return found

    async def aclose(self) -> None:
        await self.inner.aclose()

    def of(self, method: str, pattern: str) -> list[Sent]:
        """The requests sent with `method` to a path that matches `pattern` in full."""
        return [s for s in self.sent if s.method == method and re.fullmatch(pattern, s.path)]


@dataclass
class Manager:
    """The manager in-process: `worker_client` for the worker, its requests recorded in
    `sent`, and `client` for the test's own calls, which are not."""

    worker_client: JobnikClient
    sent: Recording
    client: JobnikClient


@pytest.fixture
async def manager(db: Database) -> AsyncIterator[Manager]:
    app = create_app(Settings(database_url=db.url), database=db)
    recording = Recording(httpx.ASGITransport(app=app))
    plain = httpx.ASGITransport(app=app)
    async with (
        JobnikClient("http://manager", transport=recording, retry=FAST_RETRY) as worker_client,
        JobnikClient("http://manager", transport=plain, retry=FAST_RETRY) as client,
    ):
        yield Manager(worker_client, recording, client)


async def one_stage_job(client: JobnikClient, kind: str, count: int) -> Any:
    tasks = [NewTask(data={"n": n}) for n in range(count)]
    return await client.create_job(unique("job"), stages=[NewStage(type=kind, tasks=tasks)])


async def test_a_stage_is_drained_without_reading_the_job_and_stage_per_task(
    manager: Manager,
) -> None:
    client, sent = manager.client, manager.sent
    kind, count = unique("drain"), 48
    seen: set[str] = set()

    async def noop(data: dict[str, Any], ctx: TaskContext) -> None:
        seen.add(f"{ctx.job.name}/{ctx.stage.type}")

    job = await one_stage_job(client, kind, count)
    async with worker(manager.worker_client, kind, noop, concurrency=16):
        done = await client.wait(job.id, poll_interval=POLL, timeout=DEADLINE)
    assert done.status is JobStatus.COMPLETED
    assert seen == {f"{job.name}/{kind}"}
    # The job and stage come with the claims: never read on their own.
    assert sent.of("GET", r"/v1/stages/[^/]+") == []
    assert sent.of("GET", r"/v1/jobs/[^/]+") == []
    claims = sent.of("POST", "/v1/tasks/claim")
    assert claims and all(c.body["withContext"] is True for c in claims)
    reports = sent.of("POST", "/v1/tasks/reports")
    assert sum(len(r.body["reports"]) for r in reports) == count
    assert len(reports) <= count // 4, "reports go in batches"
    assert sent.of("PUT", r"/v1/tasks/[^/]+/status") == []


async def test_the_leases_of_running_tasks_are_renewed_in_one_call(
    manager: Manager,
) -> None:
    client, sent = manager.client, manager.sent
    kind, count = unique("beats"), 12
    hold = Gate(count)
    job = await one_stage_job(client, kind, count)
    interval = timedelta(milliseconds=100)
    options = dict(concurrency=count, lease=timedelta(seconds=5), heartbeat_interval=interval)
    async with worker(manager.worker_client, kind, hold, **options):
        async with asyncio.timeout(DEADLINE.total_seconds()):
            await hold.all_running.wait()
            before = len(sent.of("POST", "/v1/tasks/heartbeats"))
            beats = (await sent.until("POST", "/v1/tasks/heartbeats", before + 3))[before:]
        hold.release.set()
        done = await client.wait(job.id, poll_interval=POLL, timeout=DEADLINE)
    assert done.status is JobStatus.COMPLETED
    for beat in beats:
        assert len(beat.body["heartbeats"]) == count
    assert sent.of("POST", r"/v1/tasks/[^/]+/heartbeat") == []


async def test_an_idle_worker_starts_a_task_as_the_claim_it_holds_is_answered(
    manager: Manager,
) -> None:
    client, sent = manager.client, manager.sent
    kind = unique("idle")
    started = asyncio.Event()

    async def note(data: dict[str, Any], ctx: TaskContext) -> None:
        started.set()

    async with worker(manager.worker_client, kind, note, poll_backoff=GLACIAL):
        async with asyncio.timeout(DEADLINE.total_seconds()):
            # A plain claim finds nothing; the next one waits for work.
            await sent.until("POST", "/v1/tasks/claim", 2)
            job = await one_stage_job(client, kind, 1)
            await started.wait()
        claims_until_started = sent.of("POST", "/v1/tasks/claim")
        done = await client.wait(job.id, poll_interval=POLL, timeout=DEADLINE)
    assert done.status is JobStatus.COMPLETED
    # No claim went out after the task was created: the one waiting brought it.
    plain, waiting = claims_until_started
    assert "waitSeconds" not in plain.body
    assert waiting.body["waitSeconds"] == 30


async def test_shutdown_sends_the_reports_still_waiting_for_their_batch(
    manager: Manager,
) -> None:
    client, sent = manager.client, manager.sent
    kind, count = unique("flush"), 5
    finished, quick_ones_done, release = 0, asyncio.Event(), asyncio.Event()

    async def handle(data: dict[str, Any], ctx: TaskContext) -> dict[str, int]:
        nonlocal finished
        if data["n"] == 0:
            await release.wait()  # while it runs, the others' reports wait for it
        else:
            finished += 1
            if finished == count - 1:
                quick_ones_done.set()
        return {"n": data["n"]}

    job = await one_stage_job(client, kind, count)
    # A batch would wait a minute to fill up; shutdown must not.
    linger = timedelta(minutes=1)
    w = worker(manager.worker_client, kind, handle, concurrency=count, report_linger=linger)
    run = asyncio.create_task(w.run())
    async with asyncio.timeout(DEADLINE.total_seconds()):
        await quick_ones_done.wait()
        tasks = (await client.list_tasks(stage_id=job.stages[0].id)).items
        assert [t.status for t in tasks] == [TaskStatus.IN_PROGRESS] * count
        assert sent.of("POST", "/v1/tasks/reports") == []
        stopping = asyncio.create_task(w.shutdown())
        # Sent at once, while the last handler still runs within the grace period.
        await sent.until("POST", "/v1/tasks/reports", 1)
        assert not stopping.done()
        release.set()
        await stopping
    assert run.done() and run.exception() is None
    sizes = [len(r.body["reports"]) for r in sent.of("POST", "/v1/tasks/reports")]
    assert sizes == [count - 1, 1]
    tasks = (await client.list_tasks(stage_id=job.stages[0].id)).items
    assert sorted((t.status, (t.result or {}).get("n")) for t in tasks) == [
        (TaskStatus.COMPLETED, n) for n in range(count)
    ]


async def test_a_result_the_manager_refuses_fails_its_own_task_only(
    manager: Manager,
) -> None:
    client, sent = manager.client, manager.sent
    kind, count = unique("refused"), 3

    async def render(data: dict[str, Any], ctx: TaskContext) -> dict[str, str]:
        # PostgreSQL cannot store a NUL character, so the manager refuses the body.
        return {"text": "a\x00b" if data["n"] == count - 1 else "fine"}

    job = await one_stage_job(client, kind, count)
    w = worker(
        manager.worker_client,
        kind,
        render,
        concurrency=count,
        report_batch_size=count,
        report_linger=timedelta(minutes=1),
    )
    async with w:
        done = await client.wait(job.id, poll_interval=POLL, timeout=DEADLINE)
    assert done.status is JobStatus.FAILED
    tasks = sorted(
        (await client.list_tasks(stage_id=job.stages[0].id)).items, key=lambda t: t.data["n"]
    )
    assert [t.status for t in tasks] == [
        TaskStatus.COMPLETED,
        TaskStatus.COMPLETED,
        TaskStatus.FAILED,
    ]
    assert tasks[2].attempts == 1 and tasks[2].reason is not None
    assert tasks[2].reason.startswith("the manager refused the handler's result")
    # The batch, refused as a whole, then each report on its own, then the failure.
    sizes = [len(r.body["reports"]) for r in sent.of("POST", "/v1/tasks/reports")]
    assert sizes == [3, 1, 1, 1, 1]
