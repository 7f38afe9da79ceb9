"""Stage-type limits: at most so many of a type's tasks in flight and so many handed out
a second, enforced by the claim itself on both backends, whoever claims (dequeue, batch
claims, several types at once, concurrent claimers, two managers on one database); a
waiting claim is answered when the limit allows more; bad limits answer 400."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.services.claims import claim as claim_tasks

from ..support.api import Api, unique
from ..support.apps import app_on
from ..support.invariants import assert_invariants
from .test_stage_type_pause import claim, ready_tasks, stage_type


async def limit(api: Api, kind: str, **limits: Any) -> dict[str, Any]:
    return await api.call("PUT", f"/v1/stage-types/{kind}/limits", json=limits)  # type: ignore[no-any-return]


async def complete(api: Api, task: dict[str, Any]) -> None:
    body = {"status": "COMPLETED", "leaseId": task["leaseId"]}
    await api.call("PUT", f"/v1/tasks/{task['id']}/status", json=body)


async def test_at_most_max_in_flight_run_at_once(api: Api, db: Database) -> None:
    kind, free = unique("capped"), unique("free")
    await ready_tasks(api, kind, 10)
    await ready_tasks(api, free, 2)
    answer = await limit(api, kind, maxInFlight=3)
    assert (answer["type"], answer["maxInFlight"]) == (kind, 3)
    first = await claim(api, kind, limit=10)
    assert len(first) == 3
    assert await claim(api, kind) == []
    assert await api.dequeue(kind) is None  # the v1 dequeue is held to it too
    # A claim of several types takes the others' tasks and the limited one's room.
    await complete(api, first[0])
    both = await claim(api, kind, free, limit=10)
    assert sorted(t["stageId"] for t in both).count(first[0]["stageId"]) == 1
    assert len(both) == 3
    shown = await stage_type(api, kind)
    assert (shown["maxInFlight"], shown["inFlight"], shown["waiting"]) == (3, 3, 6)
    assert "ratePerSecond" not in shown

    await api.call("DELETE", f"/v1/stage-types/{kind}/limits")
    assert len(await claim(api, kind, limit=10)) == 6  # unlimited again
    await assert_invariants(db)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


async def test_a_rate_limit_hands_out_a_bucket_then_its_rate(
    api: Api, db: Database, clock: ManualClock
) -> None:
    kind = unique("rated")
    await ready_tasks(api, kind, 20)
    answer = await limit(api, kind, ratePerSecond=2)
    assert (answer["ratePerSecond"], answer["burst"]) == (2, 2)  # a second's worth
    assert len(await claim(api, kind, limit=10)) == 2
    assert await claim(api, kind, limit=10) == []
    clock.advance(0.5)
    assert len(await claim(api, kind, limit=10)) == 1
    clock.advance(60)  # a quiet minute fills the bucket to its burst, no more
    assert len(await claim(api, kind, limit=10)) == 2
    await limit(api, kind, ratePerSecond=1, burst=5, maxInFlight=6)
    assert len(await claim(api, kind, limit=10)) == 1  # 5 in flight before: 6 at most
    shown = await stage_type(api, kind)
    assert (shown["ratePerSecond"], shown["burst"], shown["maxInFlight"]) == (1, 5, 6)


async def test_concurrent_claimers_and_two_managers_never_pass_the_limit(
    api: Api, db: Database
) -> None:
    kind = unique("contended")
    await ready_tasks(api, kind, 40)
    await limit(api, kind, maxInFlight=5)
    other = Database(db.url, pool_size=5)  # a second manager on the same database
    try:
        with app_on(other) as app:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://m2") as http:
                second = Api(http)
                calls = [claim(api if i % 2 else second, kind, limit=3) for i in range(16)]
                got = await asyncio.gather(*calls)
    finally:
        await other.dispose()
    assert sum(len(g) for g in got) == 5
    await assert_invariants(db)


async def test_a_waiting_claim_is_answered_when_the_rate_allows(
    api: Api, clock: ManualClock
) -> None:
    kind = unique("trickle")
    await ready_tasks(api, kind, 10)
    await limit(api, kind, ratePerSecond=4, burst=1)
    assert len(await claim(api, kind, limit=5)) == 1

    async def time_passes() -> None:  # the manager's clock, as fast as the real one
        while True:
            await asyncio.sleep(0.05)
            clock.advance(0.05)

    passing = asyncio.create_task(time_passes())
    began = time.monotonic()
    try:
        more = await claim(api, kind, limit=5, waitSeconds=5)
    finally:
        passing.cancel()
    took = time.monotonic() - began
    assert len(more) == 1 and took < 2, took  # a quarter of a second's wait, not five


async def test_the_service_answers_when_to_look_again(db: Database, api: Api) -> None:
    kind = unique("hint")
    await ready_tasks(api, kind, 3)
    await limit(api, kind, maxInFlight=1)
    assert len((await claim_tasks(db, [kind], limit=3)).rows) == 1
    held = await claim_tasks(db, [kind], limit=3)
    assert held.rows == [] and held.retry_after is not None and held.retry_after > 0


BAD = [
    ("nothing", {}),
    ("zero in flight", {"maxInFlight": 0}),
    ("negative in flight", {"maxInFlight": -1}),
    ("in flight as text", {"maxInFlight": "3"}),
    ("a zero rate", {"ratePerSecond": 0}),
    ("a rate that is a boolean", {"ratePerSecond": True}),
    ("a rate as text", {"ratePerSecond": "5"}),
    ("a negative rate", {"ratePerSecond": -2}),
    ("too high a rate", {"ratePerSecond": 1e9}),
    ("a zero burst", {"ratePerSecond": 1, "burst": 0}),
    ("an unknown field", {"maxInFlight": 2, "perMinute": 5}),
]


@pytest.mark.parametrize(("what", "body"), BAD, ids=[b[0] for b in BAD])
async def test_bad_limits_answer_400_and_change_nothing(
    api: Api, what: str, body: dict[str, Any]
) -> None:
    kind = unique("bad")
    await ready_tasks(api, kind, 2)
    await limit(api, kind, maxInFlight=1)
    answer = await api.call("PUT", f"/v1/stage-types/{kind}/limits", 400, json=body)
    assert answer["code"] == "VALIDATION_ERROR" and answer["message"], what
    shown = await stage_type(api, kind)
    assert (shown["maxInFlight"], shown.get("ratePerSecond")) == (1, None)


async def test_a_limit_set_through_one_manager_applies_to_the_next_claim_through_another(
    api: Api, db: Database
) -> None:
    # What a manager last read of the limits must not hold a newly limited type back:
    # the claim after the limit is set, through whichever replica, hands out its room.
    kind = unique("set-elsewhere")
    await ready_tasks(api, kind, 4)
    assert await claim(api, unique("none"), limit=2) == []  # a claim that came back short
    elsewhere = Database(db.url, pool_size=2)
    try:
        with app_on(elsewhere) as app:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://m2") as http:
                await limit(Api(http), kind, maxInFlight=2)
    finally:
        await elsewhere.dispose()
    assert len(await claim(api, kind, limit=4)) == 2
    assert await claim(api, kind, limit=4) == []
    await assert_invariants(db)
