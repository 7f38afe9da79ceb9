"""jobnik_sdk.testing.run_attempt: a handler run as a Worker runs an attempt, on a fake
manager in memory: what the Worker would report, the progress, heartbeats and events it
sent, and a cancellation (abort, lost lease, time limit) when the test says."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from jobnik_sdk import NonRetryableError, RetryLaterError, TaskContext, TaskStatus
from jobnik_sdk.testing import FakeJobnik, SentHeartbeat, run_attempt

pytestmark = pytest.mark.unit

OK = SentHeartbeat(progress=None, message=None, cancel_requested=False, error=None)


class Tile(BaseModel):
    zoom: int


async def renders(tile: Tile, ctx: TaskContext) -> dict[str, Any]:
    await ctx.update_progress(50, message="half way")
    await ctx.emit("tile.rendered", f"zoom {tile.zoom}", zoom=tile.zoom)
    await ctx.update_progress(90)
    return {"tiles": tile.zoom * 4}


async def test_a_returning_handler_is_completed_with_its_result_and_its_progress() -> None:
    run = await run_attempt(renders, {"zoom": 3})
    assert run.cancelled is None and run.outcome is not None
    assert (run.outcome.status, run.outcome.result) == (TaskStatus.COMPLETED, {"tiles": 12})
    assert [(p.percentage, p.message) for p in run.progress] == [(50, "half way"), (90, None)]
    assert [(e.name, e.message, e.fields) for e in run.events] == [
        ("tile.rendered", "zoom 3", {"zoom": 3})
    ]
    assert run.context.user_metadata == {"progress": 90}


class Rendered(BaseModel):
    url: str


@pytest.mark.parametrize(
    ("returned", "result"),
    [
        (None, None),
        ({"n": 1}, {"n": 1}),
        (Rendered(url="u"), {"url": "u"}),
        ("a string", None),  # not a result: completed without one, as the Worker does
    ],
)
async def test_what_a_handler_returns_is_the_result_the_worker_would_store(
    returned: object, result: dict[str, Any] | None
) -> None:
    async def returns(data: dict[str, Any], ctx: TaskContext) -> Any:
        return returned

    run = await run_attempt(returns, {})
    assert run.outcome is not None
    assert (run.outcome.status, run.outcome.result) == (TaskStatus.COMPLETED, result)


@pytest.mark.parametrize(
    ("raised", "status", "retryable", "delay", "reason"),
    [
        (RuntimeError("boom"), TaskStatus.FAILED, True, None, "RuntimeError: boom"),
        (NonRetryableError("bad input"), TaskStatus.FAILED, False, None, "bad input"),
        (
            RetryLaterError(timedelta(minutes=5), "rate limited"),
            TaskStatus.RETRIED,
            True,
            300,
            "rate limited",
        ),
        (
            asyncio.CancelledError(),  # the handler's own, not the Worker's
            TaskStatus.FAILED,
            True,
            None,
            "CancelledError: handler cancelled",
        ),
    ],
)
async def test_a_raising_handler_maps_as_the_worker_maps_it(
    raised: BaseException, status: TaskStatus, retryable: bool, delay: int | None, reason: str
) -> None:
    async def fails(data: dict[str, Any], ctx: TaskContext) -> None:
        raise raised

    run = await run_attempt(fails, {}, max_attempts=3)
    assert run.cancelled is None and run.outcome is not None
    assert (run.outcome.status, run.outcome.retryable) == (status, retryable)
    assert run.outcome.reason == reason
    got = run.outcome.delay.total_seconds() if run.outcome.delay is not None else None
    assert got == delay


async def test_data_that_does_not_fit_fails_for_good_without_calling_the_handler() -> None:
    called = []

    async def tile(data: Tile, ctx: TaskContext) -> None:
        called.append(data)

    run = await run_attempt(tile, {"zoom": "high"}, max_attempts=5)
    assert run.outcome is not None and called == []
    assert (run.outcome.status, run.outcome.retryable) == (TaskStatus.FAILED, False)
    assert run.outcome.reason is not None and "not a valid Tile" in run.outcome.reason


async def test_heartbeats_carry_the_progress_in_order_and_renew_the_lease() -> None:
    async def steps(data: dict[str, Any], ctx: TaskContext) -> None:
        await ctx.update_progress(10, message="started")
        await asyncio.sleep(0.3)  # a few heartbeats' worth
        await ctx.update_progress(60)
        await asyncio.sleep(0.3)

    run = await run_attempt(steps, {})  # a heartbeat every 0.1 s
    assert run.outcome is not None and run.outcome.status is TaskStatus.COMPLETED
    assert [(p.percentage, p.message) for p in run.progress] == [(10, "started"), (60, None)]
    carried = [(b.progress, b.message) for b in run.heartbeats if b.progress is not None]
    assert carried == [(10, "started"), (60, None)]
    # Between them, plain renewals; every one answered without a word of cancelling.
    assert len(run.heartbeats) >= 3
    assert all(not b.cancel_requested and b.error is None for b in run.heartbeats)


async def endless(data: dict[str, Any], ctx: TaskContext) -> None:
    seen: list[str] = data.setdefault("seen", [])
    try:
        for percent in range(0, 100, 5):
            await ctx.update_progress(percent)
            await asyncio.sleep(0.05)
    except asyncio.CancelledError:
        seen.append("cancelled")
        raise


@pytest.mark.parametrize(
    ("heard", "why", "answers"),
    [
        ({"abort_at_heartbeat": 2}, "its job was aborted", [(False, None), (True, None)]),
        ({"lose_lease_at_heartbeat": 1}, "its lease was lost", [(False, "LEASE_LOST")]),
    ],
)
async def test_what_a_heartbeat_hears_cancels_the_handler_and_reports_nothing(
    heard: dict[str, int], why: str, answers: list[tuple[bool, str | None]]
) -> None:
    seen: list[str] = []

    async def handler(data: dict[str, Any], ctx: TaskContext) -> None:
        await endless({"seen": seen}, ctx)

    run = await run_attempt(handler, {}, **heard)
    assert (run.cancelled, run.outcome, seen) == (why, None, ["cancelled"])
    assert [(b.cancel_requested, b.error) for b in run.heartbeats] == answers


async def test_a_cancel_after_a_while_reaches_the_handler_through_the_next_heartbeat() -> None:
    stopped: list[str] = []

    async def waits(data: dict[str, Any], ctx: TaskContext) -> None:
        try:
            await ctx.update_progress(10)
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            stopped.append("at sleep")
            raise

    run = await run_attempt(waits, {}, cancel_after=timedelta(milliseconds=100))
    assert (run.cancelled, run.outcome, stopped) == ("its job was aborted", None, ["at sleep"])
    assert [p.percentage for p in run.progress] == [10]
    assert run.heartbeats[-1].cancel_requested
    assert not any(b.cancel_requested for b in run.heartbeats[:-1])


async def test_an_attempt_is_cancelled_once_it_reports_enough_progress() -> None:
    async def steps(data: dict[str, Any], ctx: TaskContext) -> None:
        for percent in (20, 40, 60, 80):
            await ctx.update_progress(percent)
            await asyncio.sleep(0)

    run = await run_attempt(steps, {}, cancel_at_progress=40)
    assert run.cancelled == "the test cancelled it" and run.outcome is None
    assert [p.percentage for p in run.progress] == [20, 40]


async def test_the_task_time_limit_stops_the_handler_as_the_worker_does() -> None:
    async def slow(data: dict[str, Any], ctx: TaskContext) -> None:
        await asyncio.sleep(3600)

    run = await run_attempt(slow, {}, timeout_seconds=0.1)
    assert (run.cancelled, run.outcome) == ("it ran past its time limit", None)


async def test_the_context_is_the_workers_on_a_task_of_the_given_fake() -> None:
    fake = FakeJobnik()

    async def reads(data: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
        return {"attempt": ctx.attempt, "stage": ctx.stage.type, "job": ctx.job.name}

    run = await run_attempt(
        reads, {}, client=fake, stage_type="tiles", attempts=1, max_attempts=3, job_name="jj"
    )
    assert run.outcome is not None
    assert run.outcome.result == {"attempt": 2, "stage": "tiles", "job": "jj"}
    task = await fake.get_task(run.context.task.id)  # the same manager holds the task
    assert task.status is TaskStatus.IN_PROGRESS
