"""Long-polling claims and the tasks that wake them, through the API on both backends:
one new task wakes one waiting claim, not every claim of its type (a thousand idle
workers would otherwise all claim for it), and the claim it wakes hands it out."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from jobnik_manager.api.routes import tasks as task_routes

from ..support.api import Api, unique


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
    real, calls, all_waiting = task_routes.claim, [], asyncio.Event()

    async def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[1])
        if len(calls) == 5:
            all_waiting.set()
        return await real(*args, **kwargs)

    monkeypatch.setattr(task_routes, "claim", counted)
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
    for _ in range(2):  # the two claims it wakes answer
        left = [f for f in waiting if not f.done()]
        await asyncio.wait(left, timeout=10, return_when=asyncio.FIRST_COMPLETED)
    assert await settled(calls, 8) == 8 and sum(f.done() for f in waiting) == 3
    for f in waiting:
        f.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)
