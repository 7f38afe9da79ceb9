"""Schedules (`notBefore` on a job and on a task at creation), on the manager (SQLite and
PostgreSQL, in-process, its clock moved by hand) and on the fake alike: nothing of it is
claimable before then, and it is after (on the manager, at the next maintenance tick:
within about a second); a claim waiting for work and the RabbitMQ outbox hear of it."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest

from ..integration.test_outbox import drain, keys
from ..support.api import unique
from .conftest import Timed


def _at(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


async def test_a_scheduled_task_waits_for_its_time(timed: Timed) -> None:
    api, kind = timed.api, unique("sched")
    at = timed.now() + timedelta(minutes=1)
    job = await api.create_job(
        stages=[
            {"type": kind, "data": {}, "tasks": [{"data": {}, "notBefore": _at(at)}, {"data": {}}]}
        ]
    )
    scheduled = job["stages"][0]["tasks"][0]
    assert datetime.fromisoformat(scheduled["notBefore"]) == at
    first = await api.dequeue(kind)
    assert first is not None and first["id"] != scheduled["id"]
    assert await api.dequeue(kind) is None
    await timed.advance(timedelta(seconds=59))
    assert await api.dequeue(kind) is None, "not a second early"
    await timed.advance(timedelta(seconds=2))
    due = await api.dequeue(kind)
    assert due is not None and due["id"] == scheduled["id"]


async def test_a_scheduled_job_holds_all_its_tasks_even_those_added_later(timed: Timed) -> None:
    api, kind = timed.api, unique("job-sched")
    at = timed.now() + timedelta(hours=1)
    job = await api.create_job(
        notBefore=_at(at), stages=[{"type": kind, "data": {}, "tasks": [{"data": {}}]}]
    )
    assert datetime.fromisoformat(job["notBefore"]) == at
    added = await api.call(
        "POST", f"/v1/stages/{job['stages'][0]['id']}/tasks", 201, json=[{"data": {}}]
    )
    assert datetime.fromisoformat(added[0]["notBefore"]) == at
    assert await api.dequeue(kind) is None
    await timed.advance(timedelta(hours=1, seconds=1))
    claimed = {(await api.dequeue(kind) or {}).get("id") for _ in range(2)}
    assert claimed == {job["stages"][0]["tasks"][0]["id"], added[0]["id"]}
    assert (await api.job(job["id"]))["status"] == "IN_PROGRESS"


async def test_a_past_time_holds_nothing_back(timed: Timed) -> None:
    api, kind = timed.api, unique("past")
    past = _at(timed.now() - timedelta(minutes=5))
    job = await api.create_job(
        notBefore=past,
        stages=[{"type": kind, "data": {}, "tasks": [{"data": {}, "notBefore": past}]}],
    )
    assert "notBefore" not in job and "notBefore" not in job["stages"][0]["tasks"][0]
    assert await api.dequeue(kind) is not None


# The manager only: the fake has no maintenance tick nor outbox (its clock is the schedule).
@pytest.mark.parametrize("surface_url", ["sqlite", "postgres"], indirect=True)
async def test_a_waiting_claim_and_the_outbox_hear_when_the_time_comes(timed: Timed) -> None:
    assert timed.database is not None
    api, kind = timed.api, unique("wake")
    at = timed.now() + timedelta(seconds=30)
    await api.create_job(
        stages=[{"type": kind, "data": {}, "tasks": [{"data": {}, "notBefore": _at(at)}]}]
    )
    before = keys(await drain(timed.database))
    assert f"task.ready.{kind}" not in before
    waiting = asyncio.create_task(
        api.call("POST", "/v1/tasks/claim", json={"stageTypes": [kind], "waitSeconds": 30})
    )
    await asyncio.sleep(0.2)
    assert not waiting.done()
    await timed.advance(timedelta(seconds=31))
    answer = await asyncio.wait_for(waiting, 10)
    assert len(answer["items"]) == 1
    assert f"task.ready.{kind}" in keys(await drain(timed.database))


@pytest.mark.parametrize(
    "value", ["tomorrow", 0.5, 1764000000, "2026-11-24T10:00:00", "", None, [1]]
)
async def test_a_malformed_time_is_refused_and_nothing_is_made(timed: Timed, value: Any) -> None:
    api, name = timed.api, unique("bad-sched")
    if value is not None:  # null means "no schedule", and is taken
        refused = await api.call(
            "POST", "/v1/jobs", 400, json={"name": name, "data": {}, "notBefore": value}
        )
        assert refused["code"] == "VALIDATION_ERROR" and "notBefore" in refused["message"]
    task = {"data": {}, "notBefore": value}
    stages = [{"type": unique("k"), "data": {}, "tasks": [task]}]
    if value is None:
        await api.call("POST", "/v1/jobs", 201, json={"name": name, "data": {}, "stages": stages})
        return
    await api.call("POST", "/v1/jobs", 400, json={"name": name, "data": {}, "stages": stages})
    assert (await api.call("GET", "/v1/jobs", params={"job_name": name}))["total"] == 0
