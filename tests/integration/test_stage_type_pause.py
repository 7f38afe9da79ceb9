"""Pausing a stage type: while paused, no claim or dequeue hands out its tasks, in any
job; running tasks go on; resuming hands them out again and wakes a waiting claim. Both
calls are idempotent. The stage types list and /metrics say which types are paused."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..support.api import Api, unique


async def ready_tasks(api: Api, stage_type: str, n: int) -> dict[str, Any]:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], stage_type)
    await api.create_tasks(stage["id"], n)
    return stage


async def claim(api: Api, *types: str, limit: int = 10, **extra: Any) -> list[dict[str, Any]]:
    body = {"stageTypes": list(types), "limit": limit, **extra}
    items: list[dict[str, Any]] = (await api.call("POST", "/v1/tasks/claim", json=body))["items"]
    return items


async def stage_type(api: Api, name: str) -> dict[str, Any]:
    listed = await api.call("GET", "/v1/stage-types")
    [found] = [t for t in listed["items"] if t["type"] == name]
    return found


async def test_a_paused_stage_type_hands_out_nothing_until_resumed(api: Api) -> None:
    paused, other = unique("maint"), unique("free")
    await ready_tasks(api, paused, 3)
    free = await ready_tasks(api, other, 1)
    running = await claim(api, paused, limit=1)

    answer = await api.call("PUT", f"/v1/stage-types/{paused}/pause")
    assert (answer["type"], answer["paused"]) == (paused, True)
    again = await api.call("PUT", f"/v1/stage-types/{paused}/pause")
    assert again["pausedAt"] == answer["pausedAt"]  # the first pause stands

    assert await claim(api, paused) == []
    await api.call("PATCH", f"/v1/stages/{paused}/tasks/dequeue", 404)
    both = await claim(api, paused, other)
    assert [t["stageId"] for t in both] == [free["id"]]  # other types are handed out as ever
    # The task claimed before the pause runs on to its end.
    [task] = running
    done = await api.call(
        "PUT",
        f"/v1/tasks/{task['id']}/status",
        json={"status": "COMPLETED", "leaseId": task["leaseId"]},
    )
    assert done["status"] == "COMPLETED"

    shown = await stage_type(api, paused)
    assert (shown["paused"], shown["waiting"], shown["inFlight"]) == (True, 2, 0)
    scrape = (await api.http.get("/metrics")).text
    assert f'jobnik_stage_type_paused{{stage_type="{paused}"}} 1.0' in scrape
    assert f'jobnik_stage_type_paused{{stage_type="{other}"}}' not in scrape

    resumed = await api.call("DELETE", f"/v1/stage-types/{paused}/pause")
    assert (resumed["paused"], resumed.get("pausedAt")) == (False, None)
    assert len(await claim(api, paused)) == 2
    assert (await api.call("DELETE", f"/v1/stage-types/{paused}/pause"))["paused"] is False
    assert (await stage_type(api, paused))["paused"] is False


async def test_resuming_wakes_a_claim_waiting_for_that_type(api: Api) -> None:
    kind = unique("wake")
    await ready_tasks(api, kind, 1)
    await api.call("PUT", f"/v1/stage-types/{kind}/pause")
    began = time.monotonic()
    waiting = asyncio.ensure_future(claim(api, kind, waitSeconds=10))
    await asyncio.sleep(0.3)
    assert not waiting.done()  # paused: nothing to hand out yet
    await api.call("DELETE", f"/v1/stage-types/{kind}/pause")
    claimed = await asyncio.wait_for(waiting, 5)
    assert len(claimed) == 1
    assert time.monotonic() - began < 5  # woken by the resume, not at the end of its wait


async def test_a_paused_type_with_nothing_to_do_is_listed(api: Api) -> None:
    kind = unique("idle")
    await api.call("PUT", f"/v1/stage-types/{kind}/pause")
    shown = await stage_type(api, kind)
    assert (shown["paused"], shown["waiting"], shown["inFlight"]) == (True, 0, 0)


async def test_a_stage_type_name_too_long_is_refused(api: Api) -> None:
    for method in ("PUT", "DELETE"):
        answer = await api.call(method, f"/v1/stage-types/{'x' * 51}/pause", 400)
        assert answer["code"] == "VALIDATION_ERROR"
    assert all(not t["paused"] for t in (await api.call("GET", "/v1/stage-types"))["items"])
