"""The Open Job Spec's unique jobs and rate limits (level 4) through PUSH, on both
backends: a duplicate in one of the policy's states is refused, ignored or replaced as
`on_conflict` says, and only within its period; a queue's limits brought by a job hold
FETCH to them. Bad policies are refused and make nothing. Written from
spec/ojs-unique-jobs.md and spec/ojs-rate-limiting.md."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Job

from ..support.api import unique
from .test_ojs import call, refused


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 5, 1, 9, 0, tzinfo=UTC))


def body(queue: str, args: Any, **policy: Any) -> dict[str, Any]:
    options = {"queue": queue, "unique": {"keys": ["type", "args"], **policy}}
    return {"type": "order.process", "args": [args], "options": options}


async def push(client: httpx.AsyncClient, sent: dict[str, Any], expect: int = 201) -> Any:
    return await call(client, "POST", "/v1/jobs", sent, expect)


async def state_of(client: httpx.AsyncClient, job_id: str) -> str:
    said: str = (await call(client, "GET", f"/v1/jobs/{job_id}"))["job"]["state"]
    return said


async def jobs(db: Database) -> int:
    return int(await db.transaction(lambda s: s.scalar(select(func.count()).select_from(Job))))


async def fetch(client: httpx.AsyncClient, queue: str, count: int = 1) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = (
        await call(client, "POST", "/v1/workers/fetch", {"queues": [queue], "count": count})
    )["jobs"]
    return got


async def test_a_duplicate_is_rejected_and_other_args_are_not_duplicates(
    client: httpx.AsyncClient, db: Database
) -> None:
    queue = unique("u").lower()
    first = (await push(client, body(queue, {"order": 1})))["job"]
    said = await push(client, body(queue, {"order": 1}), 409)
    refused(said, "duplicate")
    assert first["id"] in said["error"]["message"]
    assert await state_of(client, first["id"]) == "available" and await jobs(db) == 1
    other = (await push(client, body(queue, {"order": 2})))["job"]
    assert other["args"] == [{"order": 2}] and await jobs(db) == 2
    # The type is always part of it: another type with the same args is no duplicate.
    await push(client, {**body(queue, {"order": 1}), "type": "order.refund"})
    # By default only the type counts.
    alone = {"type": "report.daily", "args": [1], "options": {"queue": queue, "unique": {}}}
    await push(client, alone)
    refused(await push(client, {**alone, "args": [2]}, 409), "duplicate")


async def test_an_ignored_duplicate_answers_the_job_it_duplicates(
    client: httpx.AsyncClient, db: Database
) -> None:
    queue = unique("u").lower()
    first = (await push(client, body(queue, {"n": 1}, on_conflict="ignore")))["job"]
    said = await push(client, body(queue, {"n": 1}, on_conflict="ignore"), 200)
    assert said["deduplicated"] is True
    assert (said["job"]["id"], said["job"]["state"]) == (first["id"], "available")
    assert await jobs(db) == 1


async def test_a_replace_cancels_the_waiting_duplicate_but_never_a_running_one(
    client: httpx.AsyncClient,
) -> None:
    queue = unique("u").lower()
    sent = {"type": "avatar.resize", "options": {"queue": queue}}
    policy = {"keys": ["type"], "on_conflict": "replace"}
    first = (
        await push(client, {**sent, "args": [1], "options": {**sent["options"], "unique": policy}})
    )["job"]
    second = (
        await push(client, {**sent, "args": [2], "options": {**sent["options"], "unique": policy}})
    )["job"]
    assert await state_of(client, first["id"]) == "cancelled"
    assert await state_of(client, second["id"]) == "available"
    [active] = await fetch(client, queue)
    assert active["id"] == second["id"]
    third = {**sent, "args": [3], "options": {**sent["options"], "unique": policy}}
    refused(await push(client, third, 409), "duplicate")
    assert await state_of(client, second["id"]) == "active"


async def test_replace_except_schedule_keeps_the_time_of_the_job_it_replaces(
    client: httpx.AsyncClient,
) -> None:
    queue = unique("u").lower()
    policy = {"keys": ["type"], "on_conflict": "replace_except_schedule"}
    at = "2026-05-01T15:00:00Z"
    sent = {"type": "note.send", "options": {"queue": queue, "unique": policy}}
    first = (
        await push(client, {**sent, "args": [1], "options": {**sent["options"], "delay_until": at}})
    )["job"]
    later = {**sent["options"], "delay_until": "2026-05-01T18:00:00Z"}
    second = (await push(client, {**sent, "args": [2], "options": later}))["job"]
    assert await state_of(client, first["id"]) == "cancelled"
    assert (second["state"], second["scheduled_at"], second["args"]) == ("scheduled", at, [2])


async def test_only_jobs_in_the_policys_states_are_duplicates(client: httpx.AsyncClient) -> None:
    queue = unique("u").lower()
    sent = body(queue, {"pay": 1}, states=["available"])
    first = (await push(client, sent))["job"]
    refused(await push(client, sent, 409), "duplicate")
    [active] = await fetch(client, queue)
    second = (await push(client, sent))["job"]  # the first is active: not in the states
    await call(client, "POST", "/v1/workers/ack", {"job_id": active["id"]})
    assert active["id"] == first["id"] and second["id"] != first["id"]
    refused(await push(client, sent, 409), "duplicate")  # the second is available
    # A completed job is a duplicate when the states say so.
    done = body(queue, {"pay": 2}, states=["completed"])
    made = (await push(client, done))["job"]
    await push(client, done)  # the first is available, not completed
    [got] = await fetch(client, queue)
    assert got["id"] in (made["id"], second["id"])


async def test_a_duplicate_is_one_only_within_its_period(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    queue = unique("u").lower()
    sent = body(queue, {"sync": "B-1"}, period="PT2S")
    await push(client, sent)
    refused(await push(client, sent, 409), "duplicate")
    clock.advance(timedelta(seconds=3))
    await push(client, sent)
    refused(await push(client, sent, 409), "duplicate")


async def test_pushes_of_one_unique_job_at_once_make_it_once(
    client: httpx.AsyncClient, db: Database
) -> None:
    queue = unique("u").lower()
    sent = body(queue, {"once": True})
    answers = await asyncio.gather(
        *(
            client.post(
                "/ojs/v1/jobs", json=sent, headers={"content-type": "application/openjobspec+json"}
            )
            for _ in range(8)
        )
    )
    assert sorted(a.status_code for a in answers) == [201] + [409] * 7
    assert await jobs(db) == 1


BAD_UNIQUE = [
    ({"keys": ["argz"]}, "unique.keys"),
    ({"keys": []}, "unique.keys"),
    ({"keys": ["type", "meta"]}, "unique.meta_keys"),
    ({"keys": ["args"], "args_keys": ["nope"]}, "unique.args_keys"),
    ({"on_conflict": "merge"}, "unique.on_conflict"),
    ({"period": "soon"}, "unique.period"),
    ({"period": "PT0S"}, "unique.period"),
    ({"states": ["waiting"]}, "unique.states"),
    ({"states": []}, "unique.states"),
]


@pytest.mark.parametrize(("policy", "field"), BAD_UNIQUE, ids=[str(p) for p, _ in BAD_UNIQUE])
async def test_a_bad_unique_policy_is_refused_and_makes_nothing(
    client: httpx.AsyncClient, db: Database, policy: dict[str, Any], field: str
) -> None:
    sent = {"type": "a.b", "args": [{"k": 1}], "options": {"unique": policy}}
    said = await push(client, sent, 400)
    refused(said, "invalid_request")
    assert said["error"]["message"].startswith(field) and await jobs(db) == 0


async def test_a_rate_limit_spaces_the_queues_fetches(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    queue = unique("rl").lower()
    for n in range(3):
        options = {"queue": queue, "rate_limit": {"max_per_second": 1}}
        await push(client, {"type": "api.call", "args": [n], "options": options})
    assert len(await fetch(client, queue, 5)) == 1
    assert await fetch(client, queue) == []
    clock.advance(timedelta(milliseconds=1500))
    assert len(await fetch(client, queue, 5)) == 1
    stats = (await call(client, "GET", f"/v1/queues/{queue}/stats"))["queue"]
    assert (stats["available"], stats["active"]) == (1, 2)


async def test_a_concurrency_limit_holds_the_active_jobs_of_the_queue(
    client: httpx.AsyncClient,
) -> None:
    queue = unique("rl").lower()
    for n in range(3):
        options = {"queue": queue, "rate_limit": {"concurrency": 1}}
        await push(client, {"type": "db.heavy", "args": [n], "options": options})
    [first] = await fetch(client, queue, 5)
    assert await fetch(client, queue, 5) == []
    await call(client, "POST", "/v1/workers/ack", {"job_id": first["id"]})
    assert len(await fetch(client, queue, 5)) == 1


BAD_LIMITS = [
    ({"key": "stripe-api", "concurrency": 1}, "rate_limit.key"),
    ({"concurrency": 1, "on_limit": "drop"}, "rate_limit.on_limit"),
    ({}, "rate_limit:"),
    ({"concurrency": 0}, "rate_limit.concurrency"),
    ({"max_per_second": 0}, "rate_limit.max_per_second"),
    ({"rate": {"limit": 10}}, "rate_limit.rate.period"),
    ({"throttle": {"limit": 0, "period": "PT1S"}}, "rate_limit.throttle"),
]


@pytest.mark.parametrize(("limits", "field"), BAD_LIMITS, ids=[f for _, f in BAD_LIMITS])
async def test_a_bad_rate_limit_is_refused_and_makes_nothing(
    client: httpx.AsyncClient, db: Database, limits: dict[str, Any], field: str
) -> None:
    sent = {"type": "a.b", "args": [], "options": {"queue": "q1", "rate_limit": limits}}
    said = await push(client, sent, 400)
    refused(said, "invalid_request")
    assert said["error"]["message"].startswith(field) and await jobs(db) == 0
