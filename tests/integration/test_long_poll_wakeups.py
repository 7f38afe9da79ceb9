"""Long-polling claims and the tasks that wake them, through the API on both backends:
one new task wakes one waiting claim, not every claim of its type (a thousand idle
workers would otherwise all claim for it), and the claim it wakes hands it out."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from jobnik_manager.api.routes import tasks as task_routes
from jobnik_manager.db.engine import Database
from jobnik_manager.dispatch.wakeups import listen

from ..conftest import app_client
from ..support.api import Api, unique
from ..support.processes import served_manager


def counting_claims(
    monkeypatch: pytest.MonkeyPatch, waiting: int
) -> tuple[list[Any], asyncio.Event]:
    """The stage types of every claim the app makes from now on, and an event set once
    `waiting` of them came back (each long poll makes one before it waits). A task made
    while a first claim is still under way may go to that claim, the one woken for it:
    then no claim more is made for it."""
    real, calls, all_waiting = task_routes.claim, [], asyncio.Event()
    returned = 0

    async def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal returned
        calls.append(args[1])
        try:
            return await real(*args, **kwargs)
        finally:
            returned += 1
            if returned == waiting:
                all_waiting.set()

    monkeypatch.setattr(task_routes, "claim", counted)
    return calls, all_waiting


async def settled(calls: list[Any], expected: int) -> int:
    """How many claims were made once `expected` were (or 10 s passed, on a machine too
    loaded to get there) and then 0.3 s more: room for any other claim woken to run."""
    for _ in range(200):
        if len(calls) >= expected:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)
    return len(calls)


async def test_a_new_task_wakes_one_waiting_claim_and_two_wake_two(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls, all_waiting = counting_claims(monkeypatch, 5)
    kind = unique("wake")
    body = {"stageTypes": [kind], "limit": 1, "waitSeconds": 20}
    waiting = [
        asyncio.ensure_future(api.call("POST", "/v1/tasks/claim", json=body)) for _ in range(5)
    ]
    await asyncio.wait_for(all_waiting.wait(), 10)  # each claimed once, found nothing, waits
    job = await api.create_job()
    stage = await api.create_stage(job["id"], kind)
    await api.create_tasks(stage["id"], 1)
    done, _ = await asyncio.wait(waiting, timeout=10, return_when=asyncio.FIRST_COMPLETED)
    [answered] = done
    assert len(answered.result()["items"]) == 1
    assert await settled(calls, 6) == 6 and sum(f.done() for f in waiting) == 1

    other = await api.create_stage((await api.create_job())["id"], kind)
    await api.create_tasks(other["id"], 2)
    # The two claims it wakes answer, one after the other or both at once.
    while sum(f.done() for f in waiting) < 3:
        left = [f for f in waiting if not f.done()]
        done, _ = await asyncio.wait(left, timeout=10, return_when=asyncio.FIRST_COMPLETED)
        if not done:
            break
    assert await settled(calls, 8) == 8 and sum(f.done() for f in waiting) == 3
    for f in waiting:
        f.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)


@pytest.mark.postgres_only
async def test_a_managers_own_notify_wakes_none_of_its_claims_again(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the listener a manager runs beside its app, a task created through it wakes
    one of its claims at commit; its own NOTIFY, coming back through the listener, does
    not wake a second (other managers' NOTIFYs do: test_hot_paths)."""
    calls, all_waiting = counting_claims(monkeypatch, 3)
    db = Database(postgres_url)
    try:
        async with app_client(db) as client:
            await _three_tasks_for_three_waiting_claims(Api(client), db, calls, all_waiting)
    finally:
        await db.dispose()
    # Each task woke one claim, which took it: three claims that waited, three woken.
    assert len(calls) == 6


async def _three_tasks_for_three_waiting_claims(
    api: Api, db: Database, calls: list[Any], all_waiting: asyncio.Event
) -> None:
    waiters = api.http._transport.app.state.waiters  # type: ignore[attr-defined]
    listener = asyncio.create_task(listen(db.url, waiters, db.backends))
    await asyncio.sleep(0.3)  # connected: its first act, waking every waiting claim, is done
    kind = unique("own")
    body = {"stageTypes": [kind], "limit": 1, "waitSeconds": 20}
    waiting = [
        asyncio.ensure_future(api.call("POST", "/v1/tasks/claim", json=body)) for _ in range(3)
    ]
    try:
        await asyncio.wait_for(all_waiting.wait(), 10)
        for _ in range(3):  # one task at a time, each in a transaction of its own
            stage = await api.create_stage((await api.create_job())["id"], kind)
            await api.create_tasks(stage["id"], 1)
            await asyncio.sleep(0.3)  # room for its NOTIFY to come back
        await settled(calls, 6)
        assert all(f.done() for f in waiting)
    finally:
        listener.cancel()
        for f in waiting:
            f.cancel()
        await asyncio.gather(listener, *waiting, return_exceptions=True)


@pytest.mark.e2e  # a manager process of its own
async def test_a_long_poll_whose_client_left_holds_up_no_stopping_manager(
    postgres_url: str, tmp_path: Path
) -> None:
    """A worker stops while its claim waits; the manager, told to stop, waits for its
    requests, and used to wait out that claim's whole wait for nobody."""
    with served_manager(postgres_url, log=tmp_path / "manager.log") as (base_url, proc):
        async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
            body = {"stageTypes": [unique("idle")], "waitSeconds": 30}
            poll = asyncio.create_task(client.post("/v1/tasks/claim", json=body))
            await asyncio.sleep(1)  # the claim waits
            poll.cancel()  # and its worker goes away
            with contextlib.suppress(asyncio.CancelledError):
                await poll
        await asyncio.sleep(0.5)
        began = time.monotonic()
        proc.terminate()
        await asyncio.to_thread(proc.wait, 40)
        stopped_in = time.monotonic() - began
    assert stopped_in < 10, f"the manager took {stopped_in:.1f} s to stop"


@pytest.mark.e2e  # a manager process of its own: a client that really hangs up
async def test_a_task_made_after_a_waiting_client_left_goes_to_one_still_waiting(
    postgres_url: str, tmp_path: Path
) -> None:
    """Two workers wait on one type; one hangs up. The task made next goes to the one
    still there, and the claim of the one that left took nothing for nobody."""
    stage_type = unique("left")
    with served_manager(postgres_url, log=tmp_path / "manager.log") as (base_url, _proc):
        async with (
            httpx.AsyncClient(base_url=base_url, timeout=60) as gone,
            httpx.AsyncClient(base_url=base_url, timeout=60) as staying,
        ):

            def claim(client: httpx.AsyncClient, worker: str) -> asyncio.Task[httpx.Response]:
                body = {"stageTypes": [stage_type], "waitSeconds": 30, "worker": worker}
                return asyncio.create_task(client.post("/v1/tasks/claim", json=body))

            left = claim(gone, "left")
            await asyncio.sleep(0.5)  # it waits first, so it is the first to be woken
            waiting = claim(staying, "stayed")
            await asyncio.sleep(0.5)
            left.cancel()  # its worker goes away
            with contextlib.suppress(asyncio.CancelledError):
                await left
            await gone.aclose()
            await asyncio.sleep(0.5)
            stage = {"type": stage_type, "data": {}, "tasks": [{"data": {}}]}
            body = {"name": "left", "data": {}, "stages": [stage]}
            created = await staying.post("/v1/jobs", json=body)
            assert created.status_code == 201, created.text
            made = created.json()
            answer = await asyncio.wait_for(waiting, 10)
            [task] = answer.json()["items"]
            assert task["id"] == made["stages"][0]["tasks"][0]["id"]
            assert task["worker"] == "stayed"
            stored = (await staying.get(f"/v1/tasks/{task['id']}")).json()
            assert (stored["status"], stored["worker"]) == ("IN_PROGRESS", "stayed")
