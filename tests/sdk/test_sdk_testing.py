"""jobnik_sdk.testing: the fake manager under the real client, its clock, and the
context builders."""

from __future__ import annotations

import asyncio
import random
import uuid
from datetime import timedelta
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from jobnik_sdk import (
    ConflictError,
    IllegalTransitionError,
    JobnikClient,
    JobnikValidationError,
    JobStatus,
    LeaseLostError,
    NewStage,
    NewTask,
    NonRetryableError,
    NotFoundError,
    RequestRetryPolicy,
    TaskContext,
    TaskHeartbeat,
    TaskRetryPolicy,
    TaskStatus,
)
from jobnik_sdk.testing import FakeClock, FakeJobnik, FakeManager, make_context, run_handler


async def test_any_client_on_the_fake_managers_transport_sees_the_same_manager() -> None:
    fake = FakeJobnik()
    job = await fake.create_job("shared", stages=[NewStage(type="s", tasks=[NewTask()])])
    async with JobnikClient("http://anywhere", transport=fake.transport) as own:
        assert (await own.get_job(job.id)).status.value == "PENDING"
        task = await own.dequeue("s")
    assert task is not None
    other = fake.client(retry=RequestRetryPolicy(max_attempts=1))
    assert isinstance(other, JobnikClient) and other.clock is fake.clock
    assert (await other.get_task(task.id)).status is TaskStatus.IN_PROGRESS
    manager = FakeManager()
    assert (await FakeJobnik(manager).list_jobs()).total == 0, "a manager of its own"


async def test_answers_are_the_managers_json_and_errors_its_codes() -> None:
    fake = FakeManager()
    async with httpx.AsyncClient(transport=fake.transport, base_url="http://fake") as http:
        created = await http.post("/v1/jobs", json={"name": "raw", "data": {}})
        assert created.status_code == 201
        body = created.json()
        assert (body["name"], body["status"], body["priority"]) == ("raw", "PENDING", "MEDIUM")
        assert "stages" not in body and body["traceparent"].startswith("00-")
        missing = await http.get(f"/v1/jobs/{uuid.uuid4()}")
        assert (missing.status_code, missing.json()["code"]) == (404, "JOB_NOT_FOUND")
        unknown = await http.post("/v1/jobs", json={"name": "raw", "data": {}, "colour": 1})
        assert (unknown.status_code, unknown.json()["code"]) == (400, "VALIDATION_ERROR")
        bad_id = await http.get("/v1/jobs/not-a-uuid")
        assert (bad_id.status_code, bad_id.json()["code"]) == (400, "VALIDATION_ERROR")
        assert (await http.get("/v1/nothing")).status_code == 404
        assert (await http.delete("/v1/tasks/claim")).status_code == 405


async def test_the_client_maps_the_fakes_refusals_to_its_errors() -> None:
    fake = FakeJobnik()
    with pytest.raises(NotFoundError):
        await fake.get_stage(uuid.uuid4())
    with pytest.raises(JobnikValidationError):
        await fake.create_job("x")  # a name of 2 to 50 characters
    job = await fake.create_job("done", stages=[NewStage(type="d", tasks=[NewTask()])])
    await fake.abort(job.id)
    with pytest.raises(IllegalTransitionError) as illegal:
        await fake.pause(job.id)
    assert illegal.value.message == "Illegal status transition from ABORTED to PAUSED"
    await fake.create_job("keyed", idempotency_key="k-1")
    with pytest.raises(ConflictError) as reused:
        await fake.create_job("other", idempotency_key="k-1")
    assert reused.value.code == "IDEMPOTENCY_KEY_REUSED"


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
    fake.clock.advance(timedelta(seconds=29))
    await fake.heartbeat(task.id, task.lease_id)  # renewed for another 30 s
    fake.clock.advance(31)

    expired = await fake.get_task(task.id)
    assert (expired.status, expired.attempts, expired.reason) == (
        TaskStatus.RETRIED,
        1,
        "lease expired",
    )
    with pytest.raises(LeaseLostError):
        await fake.heartbeat(task.id, task.lease_id)
    assert await fake.dequeue("t") is None, "the retry policy holds it back 10 s"
    fake.clock.advance(timedelta(seconds=10))
    again = await fake.dequeue("t")
    assert again is not None and again.id == task.id and again.lease_id != task.lease_id
    reasons = [e.reason async for e in fake.iter_events(job.id) if e.to_status == "RETRIED"]
    assert reasons == ["lease expired"]
    with pytest.raises(ValueError):
        fake.clock.advance(timedelta(seconds=-1))


def test_the_clock_moves_only_forward_and_advance_is_kept_with_a_warning() -> None:
    clock = FakeClock()
    before = clock.now()
    clock.advance(timedelta(hours=1))
    assert clock.now() - before >= timedelta(hours=1)
    fake = FakeJobnik(FakeManager(clock))
    with pytest.warns(DeprecationWarning, match="clock.advance"):
        fake.advance(timedelta(hours=1))
    assert clock.now() - before >= timedelta(hours=2)


async def test_requests_their_callers_gave_up_on_finish_and_the_manager_answers_on() -> None:
    # A heartbeat past its deadline is cancelled by its Worker. The manager finishes the
    # request as a server would: cut off inside its transaction, it would keep SQLite's
    # write lock, and every later request would wait for it.
    fake = FakeJobnik()
    job = await fake.create_job("gave-up", stages=[NewStage(type="gave-up", tasks=[NewTask()])])
    [task] = (await fake.claim_with_context("gave-up")).items
    beat = [TaskHeartbeat(task_id=task.id, lease_id=task.lease_id)]
    rng = random.Random(7)
    for _ in range(100):
        sent = asyncio.create_task(fake.heartbeat_many(beat))
        await asyncio.sleep(rng.random() * 0.004)
        sent.cancel()
    answered = await asyncio.wait_for(fake.get_job(job.id), 20)
    assert answered.status is JobStatus.IN_PROGRESS


async def test_a_fake_manager_gone_lends_its_app_to_the_next_which_sees_only_its_own_jobs() -> None:
    # An app prepares its routes on first use: the next FakeManager takes the app of
    # one that closed, on a database of its own.
    from jobnik_sdk.testing import _fake

    first = FakeJobnik()
    async with first:
        made = await first.create_job("first", stages=[NewStage(type="s", tasks=[NewTask()])])
    app = first.manager._served.app
    del first
    for _ in range(100):  # closed on the manager's loop once the last reference went
        if app in _fake._idle_apps:
            break
        await asyncio.sleep(0.01)
    idle = list(_fake._idle_apps)
    assert app in idle
    second = FakeJobnik()
    async with second:
        assert second.manager._served.app in idle  # none made anew
        with pytest.raises(NotFoundError):
            await second.get_job(made.id)
        job = await second.create_job("second", stages=[NewStage(type="s", tasks=[NewTask()])])
        [claimed] = await second.claim("s")
        assert job.stages and claimed.stage_id == job.stages[0].id
