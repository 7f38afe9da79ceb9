"""jobnik_sdk.testing: the fake has the client's calls, and the context builders."""

from __future__ import annotations

import inspect
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from jobnik_sdk import (
    JobnikClient,
    LeaseLostError,
    NewStage,
    NewTask,
    NonRetryableError,
    TaskContext,
    TaskRetryPolicy,
    TaskStatus,
)
from jobnik_sdk.testing import FakeJobnik, make_context, run_handler


def _calls(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_")
    }


def test_the_fake_has_every_call_of_the_client_with_the_same_parameters() -> None:
    client, fake = _calls(JobnikClient), _calls(FakeJobnik)
    assert set(client) <= set(fake)
    for name, signature in client.items():
        expected = [(p.name, p.kind) for p in signature.parameters.values()]
        actual = [(p.name, p.kind) for p in fake[name].parameters.values()]
        assert actual == expected, name


async def test_make_context_claims_a_task_in_a_fake() -> None:
    fake = FakeJobnik()
    ctx = make_context(
        {"x": 1},
        stage_type="tiles",
        user_metadata={"batch": 3},
        attempts=1,
        max_attempts=3,
        client=fake,
    )
    assert ctx.task.status is TaskStatus.IN_PROGRESS and ctx.task.data == {"x": 1}
    assert ctx.task.lease_id is not None
    assert ctx.attempt == 2 and ctx.task.max_attempts == 3
    assert ctx.stage.type == "tiles" and ctx.stage.job_id == ctx.job.id
    await ctx.update_progress(40, step="one")
    stored = await fake.get_task(ctx.task.id)
    assert stored.user_metadata == {"batch": 3, "progress": 40, "step": "one"}
    assert ctx.user_metadata == stored.user_metadata
    with pytest.raises(ValueError):
        await ctx.update_progress(101)
    await fake.complete(ctx.task.id)
    assert (await fake.get_job(ctx.job.id)).status.is_final


def test_make_context_checks_attempts() -> None:
    with pytest.raises(ValueError):
        make_context(attempts=1, max_attempts=1)


class Point(BaseModel):
    x: int


async def test_run_handler_validates_like_a_worker() -> None:
    seen: list[Any] = []

    async def handler(point: Point, ctx: TaskContext) -> None:
        seen.append(point)

    ctx = await run_handler(handler, {"x": 5})
    assert seen == [Point(x=5)] and ctx.task.data == {"x": 5}
    with pytest.raises(NonRetryableError):
        await run_handler(handler, {"x": "five"})

    async def untyped(data, ctx):  # type: ignore[no-untyped-def]
        seen.append(data)

    await run_handler(untyped, {"x": "raw"})
    await run_handler(untyped, {"x": 7}, data_model=Point)
    assert seen[1:] == [{"x": "raw"}, Point(x=7)]


async def test_the_fakes_clock_lets_leases_and_retry_delays_run_out() -> None:
    fake = FakeJobnik()
    policy = TaskRetryPolicy(initial_delay=timedelta(seconds=10))
    job = await fake.create_job(
        "clock", stages=[NewStage(type="t", tasks=[NewTask(max_attempts=3, retry_policy=policy)])]
    )
    task = await fake.dequeue("t", lease=timedelta(seconds=30))
    assert task is not None and task.lease_id is not None
    fake.advance(timedelta(seconds=29))
    await fake.heartbeat(task.id, task.lease_id)  # renewed for another 30 s
    fake.advance(timedelta(seconds=31))

    expired = await fake.get_task(task.id)
    assert (expired.status, expired.attempts, expired.reason) == (
        TaskStatus.RETRIED,
        1,
        "lease expired",
    )
    with pytest.raises(LeaseLostError):
        await fake.heartbeat(task.id, task.lease_id)
    assert await fake.dequeue("t") is None, "the retry policy holds it back 10 s"
    fake.advance(timedelta(seconds=10))
    again = await fake.dequeue("t")
    assert again is not None and again.id == task.id and again.lease_id != task.lease_id
    reasons = [e.reason async for e in fake.iter_events(job.id) if e.to_status == "RETRIED"]
    assert reasons == ["lease expired"]
    with pytest.raises(ValueError):
        fake.advance(timedelta(seconds=-1))
