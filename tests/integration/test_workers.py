"""GET /v1/workers: the named workers claiming now, with what they hold, from their
claims and their tasks; a worker unseen for the window and holding nothing drops out."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.services import workers
from jobnik_manager.services.workers import forget_gone

from ..support.api import Api, unique


@pytest.fixture
def clock() -> ManualClock:
    """The manager's time: workers drop out when the test moves it on."""
    return ManualClock()


async def claim(api: Api, stage_type: str, worker: str, limit: int = 1) -> list[dict[str, Any]]:
    body = {"stageTypes": [stage_type], "limit": limit, "worker": worker, "leaseSeconds": 300}
    answer = await api.call("POST", "/v1/tasks/claim", json=body)
    items: list[dict[str, Any]] = answer["items"]
    return items


async def listed(api: Api) -> dict[str, dict[str, Any]]:
    answer = await api.call("GET", "/v1/workers")
    assert answer["total"] == len(answer["items"])
    assert answer["windowSeconds"] == 60
    return {item["name"]: item for item in answer["items"]}


async def test_busy_and_idle_workers_are_listed_until_they_go_quiet(
    api: Api, clock: ManualClock
) -> None:
    busy_type, idle_type = unique("tiles"), unique("exports")
    job = await api.create_job()
    stage = await api.create_stage(job["id"], busy_type)
    await api.create_tasks(stage["id"], 3)
    busy, idle = unique("render-1"), unique("export-1")
    held = await claim(api, busy_type, busy, limit=2)
    assert len(held) == 2
    assert await claim(api, idle_type, idle) == []  # nothing to do: still alive
    assert await api.dequeue(busy_type) is not None  # a v1 worker names itself nowhere

    workers = await listed(api)
    assert set(workers) == {busy, idle}
    assert (workers[busy]["stageTypes"], workers[busy]["inFlight"]) == ([busy_type], 2)
    assert (workers[idle]["stageTypes"], workers[idle]["inFlight"]) == ([idle_type], 0)
    for worker in workers.values():
        assert datetime.fromisoformat(worker["lastSeen"]) == clock.now()
        assert worker["firstSeen"] == worker["lastSeen"]

    # Past the window: the idle worker has not claimed again; the busy one still holds
    # its tasks under live leases.
    clock.advance(timedelta(seconds=61))
    workers = await listed(api)
    assert set(workers) == {busy}
    assert workers[busy]["inFlight"] == 2

    # Once it has reported them and stays quiet, it drops out too.
    for task in held:
        await api.call(
            "PUT",
            f"/v1/tasks/{task['id']}/status",
            json={"status": "COMPLETED", "leaseId": task["leaseId"]},
        )
    assert await listed(api) == {}

    # A claim brings it back, first seen when it was first seen.
    first_seen = workers[busy]["firstSeen"]
    await claim(api, busy_type, busy)
    back = (await listed(api))[busy]
    assert back["firstSeen"] == first_seen
    assert datetime.fromisoformat(back["lastSeen"]) == clock.now()


async def test_a_worker_that_changes_its_stage_types_is_shown_with_the_new_ones(
    api: Api,
) -> None:
    worker, first, second = unique("w"), unique("a"), unique("b")
    await claim(api, first, worker)
    await claim(api, second, worker)  # within seconds: recorded all the same
    assert (await listed(api))[worker]["stageTypes"] == [second]


async def test_a_v1_dequeue_that_names_its_worker_is_seen_too(api: Api) -> None:
    stage_type, worker = unique("v1"), unique("v1-worker")
    job = await api.create_job()
    stage = await api.create_stage(job["id"], stage_type)
    await api.create_tasks(stage["id"], 1)
    await api.call("PATCH", f"/v1/stages/{stage_type}/tasks/dequeue", params={"worker": worker})
    seen = (await listed(api))[worker]
    assert (seen["stageTypes"], seen["inFlight"]) == ([stage_type], 1)


async def test_workers_unseen_for_a_day_are_forgotten(
    api: Api, db: Database, clock: ManualClock
) -> None:
    old, recent = unique("old"), unique("recent")
    await claim(api, unique("t"), old)
    clock.advance(timedelta(hours=23))
    await claim(api, unique("t"), recent)
    clock.advance(timedelta(hours=2))
    assert await db.transaction(forget_gone) == 1
    assert await db.transaction(forget_gone) == 0


async def test_an_unknown_parameter_is_refused(api: Api) -> None:
    answer = await api.call("GET", "/v1/workers", 400, params={"page": 1})
    assert answer["code"] == "VALIDATION_ERROR"


async def fourth_past_the_bar(
    db: Database, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, after: float
) -> workers.Sightings:
    """A replica that remembers three workers sees a, b and c, then d `after` seconds."""
    monkeypatch.setattr(workers, "FORGET_RECORDS_FROM", 3)
    sightings = workers.Sightings()
    for name in ("a", "b", "c"):
        await sightings.seen(db, name, ["t"])
    clock.advance(timedelta(seconds=after))
    await sightings.seen(db, "d", ["t"])
    return sightings


async def test_a_replica_remembers_recent_workers_only(
    db: Database, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each process has a name of its own by default: a replica that remembered each
    # worker it ever recorded would grow for as long as it runs. After 61 s, a, b and c
    # would count as back.
    sightings = await fourth_past_the_bar(db, clock, monkeypatch, after=61)
    assert {name for name, _ in sightings._recorded} == {"d"}
    seen = await workers.live_workers(db, timedelta(seconds=120))
    assert [w.name for w in seen] == ["a", "b", "c", "d"]  # all recorded all the same


async def test_a_replica_at_its_memory_bar_keeps_batching_the_workers_it_sees(
    db: Database, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As many workers as the bar, each claiming every few seconds: none is dropped, so
    # none of their next claims is written on its own.
    sightings = await fourth_past_the_bar(db, clock, monkeypatch, after=6)
    assert {name for name, _ in sightings._recorded} == {"a", "b", "c", "d"}
    clock.advance(timedelta(seconds=6))
    for name in ("a", "b", "c", "d"):
        await sightings.seen(db, name, ["t"])
    # None written on its own:
    assert [name for name, _ in sightings._waiting] == ["a", "b", "c", "d"]


async def test_the_workers_of_one_process_share_its_name_and_their_sightings_wait_together(
    db: Database, clock: ManualClock
) -> None:
    # A process's Workers go by its name, each claiming a type of its own: one's claim
    # is not the others' change of types, written at once each time.
    sightings = workers.Sightings()
    for kind in ("t1", "t2", "t3"):
        await sightings.seen(db, "process", [kind])  # new: at once
    clock.advance(timedelta(seconds=6))
    for kind in ("t1", "t2", "t3"):
        await sightings.seen(db, "process", [kind])
    assert len(sightings._waiting) == 3
    clock.advance(timedelta(seconds=6))
    await sightings.seen(db, "process", ["t1"])  # the oldest waiting is due: all written
    seen = await workers.live_workers(db, timedelta(seconds=60))
    assert [(w.name, w.stage_types) for w in seen] == [("process", ["t1", "t2", "t3"])]
    assert seen[0].last_seen == clock.now()


async def test_sightings_of_workers_seen_again_are_written_together_within_seconds(
    api: Api, clock: ManualClock
) -> None:
    kind, one, two = unique("idle"), unique("w1"), unique("w2")
    began = clock.now()
    for worker in (one, two):  # new: written at once
        await claim(api, kind, worker)

    def last_seen(workers: dict[str, dict[str, Any]]) -> list[float]:
        return [
            (datetime.fromisoformat(workers[w]["lastSeen"]) - began).total_seconds()
            for w in (one, two)
        ]

    clock.advance(timedelta(seconds=6))
    for worker in (one, two):  # seen again: waiting, none of them due yet
        await claim(api, kind, worker)
    assert last_seen(await listed(api)) == [0, 0]
    clock.advance(timedelta(seconds=6))
    await claim(api, kind, one)  # the oldest waiting is due: all written, in one go
    assert last_seen(await listed(api)) == [12, 6]
