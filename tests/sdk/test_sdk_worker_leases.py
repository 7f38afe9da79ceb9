"""The Worker's leases and reports: heartbeats that keep a claim and hear of an abort,
a lost lease, results, retry-later and non-retryable failures. Each test runs against
the manager (SQLite and PostgreSQL, in-process) and the FakeJobnik, unless it says."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest
from pydantic import BaseModel

from jobnik_sdk import (
    HeartbeatOutcome,
    JobnikTransportError,
    JobStatus,
    NewStage,
    NewTask,
    ReportOutcome,
    RetryLaterError,
    Task,
    TaskContext,
    TaskHeartbeat,
    TaskReport,
    TaskStatus,
)
from jobnik_sdk.testing import FakeJobnik

from ..support.api import unique
from ..support.clients import PassThrough
from ..support.handlers import Held
from ..support.workers import worker
from .conftest import Surface

T = TypeVar("T")
DEADLINE = timedelta(seconds=10)
POLL = timedelta(milliseconds=20)


class Spy(PassThrough):
    """Passes every call to `inner`, recording the reports a worker sends (as the
    single-task call each would be: status and options); its heartbeats can be made to
    fail as if the manager were unreachable."""

    def __init__(self, inner: Surface) -> None:
        super().__init__(inner)
        self.reports: list[tuple[str, dict[str, Any]]] = []
        self.beats: list[TaskHeartbeat] = []
        self.unreachable_until = 0.0

    async def heartbeat_many(
        self, heartbeats: list[TaskHeartbeat], **options: Any
    ) -> list[HeartbeatOutcome]:
        self.beats.extend(heartbeats)
        if time.monotonic() < self.unreachable_until:
            raise JobnikTransportError("scripted outage")
        return await self.inner.heartbeat_many(heartbeats, **options)

    async def heartbeat(self, task_id: Any, lease_id: Any, **options: Any) -> Any:
        # What a worker falls back to against a manager without batch heartbeats.
        if time.monotonic() < self.unreachable_until:
            raise JobnikTransportError("scripted outage")
        return await self.inner.heartbeat(task_id, lease_id, **options)

    async def report_many(
        self, reports: list[TaskReport], *, with_tasks: bool = True
    ) -> list[ReportOutcome]:
        for report in reports:
            options: dict[str, Any] = {"lease_id": report.lease_id}
            if report.status is TaskStatus.COMPLETED:
                options["result"] = report.result
            elif report.status is TaskStatus.RETRIED:
                options.update(delay=report.retry_after, reason=report.reason)
            else:
                options.update(reason=report.reason, retryable=report.retryable)
            self.reports.append((report.status.value, options))
        return await self.inner.report_many(reports)


async def one_task(surface: Surface, kind: str, task: NewTask | None = None) -> Task:
    job = await surface.create_job(
        unique("job"), stages=[NewStage(type=kind, tasks=[task or NewTask()])]
    )
    assert job.stages is not None and job.stages[0].tasks is not None
    return job.stages[0].tasks[0]


async def eventually(probe: Callable[[], Awaitable[T | None]], what: str) -> T:
    deadline = time.monotonic() + DEADLINE.total_seconds()
    while time.monotonic() < deadline:
        if (found := await probe()) is not None:
            return found
        await asyncio.sleep(POLL.total_seconds())
    raise AssertionError(f"timed out waiting for {what}")


def in_status(surface: Surface, task_id: Any, status: TaskStatus) -> Callable[[], Awaitable[Any]]:
    async def probe() -> Task | None:
        task = await surface.get_task(task_id)
        return task if task.status is status else None

    return probe


async def test_aborting_the_job_cancels_the_handler_within_a_heartbeat_and_sends_no_report(
    surface: Surface,
) -> None:
    spy, kind = Spy(surface), unique("abort")
    long = Held()
    created = await one_task(surface, kind, NewTask(max_attempts=2))
    interval = timedelta(milliseconds=300)
    async with worker(spy, kind, long, lease=timedelta(seconds=5), heartbeat_interval=interval):
        await asyncio.wait_for(long.started.wait(), 5)
        stage = await surface.get_stage(created.stage_id)
        await surface.abort(stage.job_id)
        beats_before = len(spy.beats)
        await asyncio.wait_for(long.cancelled.wait(), 5)
        # The next heartbeat hears of it (or one that went out while the abort was made;
        # on a loaded machine, one more if a beat got no answer in time and went again).
        assert len(spy.beats) - beats_before <= 2
    assert spy.reports == []
    task = await surface.get_task(created.id)
    assert (task.status, task.attempts) == (TaskStatus.ABORTED, 0)


async def test_a_lost_lease_cancels_the_handler_and_drops_the_task_quietly(
    surface: Surface, caplog: pytest.LogCaptureFixture
) -> None:
    spy, kind = Spy(surface), unique("lost")
    long = Held()
    created = await one_task(surface, kind, NewTask(max_attempts=2))
    caplog.set_level(logging.INFO, logger="jobnik_sdk.worker")
    lease, interval = timedelta(seconds=1), timedelta(milliseconds=200)
    async with worker(spy, kind, long, lease=lease, heartbeat_interval=interval):
        await asyncio.wait_for(long.started.wait(), 5)
        # The manager is out of reach for longer than the lease: the claim runs out.
        spy.unreachable_until = time.monotonic() + 1.5
        await asyncio.wait_for(long.cancelled.wait(), 5)
    assert spy.reports == []
    lost = [r for r in caplog.records if "lease was lost" in r.getMessage()]
    assert [r.levelno for r in lost] == [logging.WARNING]
    # The worker's own log only: the in-process manager may log a request that the
    # worker's heartbeat timeout cancelled halfway, which a real server would not see.
    worker_errors = [
        r for r in caplog.records if r.name.startswith("jobnik_sdk") and r.levelno >= logging.ERROR
    ]
    assert worker_errors == []
    task = await surface.get_task(created.id)
    if isinstance(surface, FakeJobnik):
        # The fake reaps at once; the manager's reaper is not running in-process.
        assert (task.status, task.attempts, task.reason) == (
            TaskStatus.RETRIED,
            1,
            "lease expired",
        )


async def test_heartbeats_keep_a_claim_longer_than_its_lease(surface: Surface) -> None:
    kind = unique("long")

    async def slow(data: dict[str, Any], ctx: TaskContext) -> None:
        await asyncio.sleep(3)  # half as long again as its lease

    created = await one_task(surface, kind)
    # Room for a heartbeat to be slow on a loaded machine (each must be answered within
    # the lease time left), while still taking several to keep the claim.
    w = worker(
        surface,
        kind,
        slow,
        lease=timedelta(seconds=2),
        heartbeat_interval=timedelta(milliseconds=400),
        name="tiler-1",
    )
    async with w:
        task = await eventually(in_status(surface, created.id, TaskStatus.COMPLETED), "completion")
    assert (task.attempts, task.worker) == (0, "tiler-1")
    assert task.lease_id is not None


async def test_progress_goes_out_with_an_early_heartbeat(surface: Surface) -> None:
    kind = unique("progress")
    seen: list[Task] = []

    async def report(data: dict[str, Any], ctx: TaskContext) -> None:
        await ctx.update_progress(40, phase="half")

        async def recorded() -> Task | None:
            task = await surface.get_task(ctx.task.id)
            return task if task.progress == 40 else None

        seen.append(await eventually(recorded, "the progress to reach the manager"))

    created = await one_task(surface, kind)
    # Heartbeats an hour apart: only an early one reaches the manager while the handler runs.
    hour = timedelta(hours=1)
    async with worker(surface, kind, report, lease=2 * hour, heartbeat_interval=hour):
        task = await eventually(in_status(surface, created.id, TaskStatus.COMPLETED), "completion")
    assert len(seen) == 1, "sent early, not at the hourly heartbeat"
    assert task.user_metadata == {"progress": 40, "phase": "half"}


class Tiles(BaseModel):
    count: int
    when: datetime


@pytest.mark.parametrize("returned", ["dict", "model"])
async def test_a_returned_dict_or_model_is_stored_as_the_result(
    surface: Surface, returned: str
) -> None:
    kind = unique("result")
    stamp = datetime(2024, 5, 1, 12, tzinfo=UTC)

    async def render(data: dict[str, Any], ctx: TaskContext) -> Any:
        if returned == "dict":
            return {"tiles": 12, "when": stamp}
        return Tiles(count=12, when=stamp)

    created = await one_task(surface, kind)
    async with worker(surface, kind, render):
        task = await eventually(in_status(surface, created.id, TaskStatus.COMPLETED), "completion")
    key = "tiles" if returned == "dict" else "count"
    assert task.result == {key: 12, "when": "2024-05-01T12:00:00Z"}


async def test_an_exception_fails_the_attempt_with_its_type_and_message(surface: Surface) -> None:
    kind = unique("boom")

    async def boom(data: dict[str, Any], ctx: TaskContext) -> None:
        raise RuntimeError("x" * 3000)

    created = await one_task(surface, kind, NewTask(max_attempts=1))
    async with worker(surface, kind, boom):
        task = await eventually(in_status(surface, created.id, TaskStatus.FAILED), "failure")
    assert task.reason is not None and len(task.reason) == 2000
    assert task.reason.startswith("RuntimeError: xxx")


async def test_retry_later_hands_the_task_back_without_spending_an_attempt(
    surface: Surface,
) -> None:
    spy, kind = Spy(surface), unique("later")
    attempts: list[int] = []

    async def limited(data: dict[str, Any], ctx: TaskContext) -> None:
        attempts.append(ctx.attempt)
        raise RetryLaterError(timedelta(seconds=30), "rate limited")

    created = await one_task(surface, kind, NewTask(max_attempts=1))
    before = datetime.now(UTC)
    async with worker(spy, kind, limited):
        task = await eventually(in_status(surface, created.id, TaskStatus.RETRIED), "hand-back")
        await asyncio.sleep(0.2)  # not offered again meanwhile
    assert attempts == [1]
    assert (task.attempts, task.reason) == (0, "rate limited")
    assert task.not_before is not None
    assert timedelta(seconds=29) < task.not_before - before < timedelta(seconds=32)
    [(status, options)] = spy.reports
    assert status == "RETRIED" and options["delay"] == timedelta(seconds=30)
    assert options["lease_id"] == task.lease_id


# ---- on the fake only -------------------------------------------------------------------


async def test_a_task_handed_back_runs_again_once_its_delay_is_over() -> None:
    fake = FakeJobnik()
    attempts: list[int] = []

    async def limited(data: dict[str, Any], ctx: TaskContext) -> None:
        attempts.append(ctx.attempt)
        if len(attempts) == 1:
            raise RetryLaterError(timedelta(minutes=5))

    created = await one_task(fake, "later", NewTask(max_attempts=1))
    async with worker(fake, "later", limited):
        await eventually(in_status(fake, created.id, TaskStatus.RETRIED), "hand-back")
        fake.clock.advance(timedelta(minutes=5))
        stage = await fake.get_stage(created.stage_id)
        done = await fake.wait(stage.job_id, timeout=DEADLINE)
    assert done.status is JobStatus.COMPLETED
    assert attempts == [1, 1]


async def test_a_result_that_is_not_json_fails_the_task_for_good() -> None:
    fake = FakeJobnik()

    async def odd(data: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
        return {"handle": object()}

    created = await one_task(fake, "odd", NewTask(max_attempts=3))
    async with worker(fake, "odd", odd):
        task = await eventually(in_status(fake, created.id, TaskStatus.FAILED), "failure")
    assert task.attempts == 1
    assert task.reason is not None and task.reason.startswith("the handler's result is not JSON")


async def test_a_return_value_of_another_kind_completes_without_a_result(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = FakeJobnik()

    async def chatty(data: dict[str, Any], ctx: TaskContext) -> Any:
        return "done"

    created = await one_task(fake, "chatty")
    async with worker(fake, "chatty", chatty):
        task = await eventually(in_status(fake, created.id, TaskStatus.COMPLETED), "completion")
    assert task.result is None
    assert "returned a str" in caplog.text


async def test_every_report_carries_the_lease() -> None:
    fake = FakeJobnik()
    spy = Spy(fake)

    async def ok(data: dict[str, Any], ctx: TaskContext) -> dict[str, int]:
        return {"n": 1}

    created = await one_task(fake, "leased")
    async with worker(spy, "leased", ok):
        task = await eventually(in_status(fake, created.id, TaskStatus.COMPLETED), "completion")
    assert spy.reports == [("COMPLETED", {"lease_id": task.lease_id, "result": {"n": 1}})]
