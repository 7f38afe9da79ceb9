"""GET /v1/stage-types: each stage type's waiting and in-flight tasks and the oldest
waiting one's age, as workers see the queues."""

from __future__ import annotations

from typing import Any

from ..support.api import Api, unique


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


async def test_an_unknown_parameter_is_refused(api: Api) -> None:
    answer = await api.call("GET", "/v1/stage-types", 400, params={"page": 1})
    assert answer["code"] == "VALIDATION_ERROR"
