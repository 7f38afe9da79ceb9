"""GET /v1/stage-types: each stage type's waiting and in-flight tasks and the oldest
waiting one's age, as workers see the queues."""

from __future__ import annotations

from typing import Any

import pytest

from jobnik_manager.clock import ManualClock

from ..support.api import Api, unique


@pytest.fixture
def clock() -> ManualClock:
    """Ages are exact when the test moves the manager's time on."""
    return ManualClock()


def by_type(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    assert answer["total"] == len(answer["items"])
    return {item["type"]: item for item in answer["items"]}


async def test_waiting_in_flight_and_the_oldest_waiting_by_stage_type(api: Api) -> None:
    first, second = unique("types-a"), unique("types-b")
    job = await api.create_job()
    stage = await api.create_stage(job["id"], first, allowedFailures=1)
    await api.create_tasks(stage["id"], 4)
    waiting = await api.create_stage(job["id"], second, waiting=True)
    await api.create_tasks(waiting["id"], 2)
    failing = await api.dequeue(first)
    assert failing is not None
    await api.call("PUT", f"/v1/tasks/{failing['id']}/status", json={"status": "FAILED"})
    assert await api.dequeue(first) is not None

    types = by_type(await api.call("GET", "/v1/stage-types"))
    assert set(types) >= {first}
    seen = types[first]
    assert (seen["waiting"], seen["inFlight"], seen["expiring"], seen["failed"]) == (2, 1, 0, 1)
    assert seen["oldestWaitingSeconds"] >= 0
    assert second not in types  # its stage may not run yet: nothing a worker could claim

    await api.set_job_status(job["id"], "PAUSED")
    paused = by_type(await api.call("GET", "/v1/stage-types"))[first]
    assert (paused["waiting"], paused["inFlight"]) == (0, 1)  # claims wait for the resume
    assert "oldestWaitingSeconds" not in paused or paused["oldestWaitingSeconds"] is None


async def test_the_oldest_waiting_is_found_across_priorities_and_types(
    api: Api, clock: ManualClock
) -> None:
    """The oldest waiting task of a type whatever its priority (a low one waits behind
    younger high ones in the claim order), each type its own, for any number of types."""
    mixed, single, drained = unique("oldest-mixed"), unique("oldest-one"), unique("oldest-none")

    async def tasks_of(stage_type: str, n: int = 1, **job: Any) -> None:
        stage = await api.create_stage((await api.create_job(**job))["id"], stage_type)
        await api.create_tasks(stage["id"], n)

    await tasks_of(mixed, priority="VERY_LOW")  # the oldest, last in the claim order
    clock.advance(100)
    await tasks_of(single, 2)
    await tasks_of(drained)
    clock.advance(20)
    await tasks_of(mixed, 3, priority="VERY_HIGH")
    await tasks_of(mixed, priority="MEDIUM")
    assert await api.dequeue(drained) is not None
    clock.advance(5)

    types = by_type(await api.call("GET", "/v1/stage-types"))
    assert types[mixed]["oldestWaitingSeconds"] == pytest.approx(125)
    assert types[single]["oldestWaitingSeconds"] == pytest.approx(25)
    assert types[drained].get("oldestWaitingSeconds") is None


async def test_an_unknown_parameter_is_refused(api: Api) -> None:
    answer = await api.call("GET", "/v1/stage-types", 400, params={"page": 1})
    assert answer["code"] == "VALIDATION_ERROR"
