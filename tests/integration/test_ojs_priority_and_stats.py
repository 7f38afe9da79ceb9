"""Level 4's priorities and queue stats, on both backends (spec/ojs-conformance.md
L4-PRI-001..003, L4-STATS-001; ojs-core.md's `priority`): every number from -100 to 100
is its own place in the order, higher first, equal ones oldest first; HIGH, NORMAL and
LOW are 3, 2 and 1; v1's five priorities keep their places among them. A queue's stats
count its jobs by state and in all, and its flow."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Job

from ..support.api import Api, unique
from .test_ojs import call, push, refused


async def fetch_all(client: httpx.AsyncClient, queue: str) -> list[dict[str, Any]]:
    body = {"queues": [queue], "count": 100}
    jobs: list[dict[str, Any]] = (await call(client, "POST", "/v1/workers/fetch", body))["jobs"]
    return jobs


async def test_numbers_order_one_by_one_higher_first_and_equal_ones_oldest_first(
    client: httpx.AsyncClient,
) -> None:
    queue = unique("prio").lower()
    pushed = [
        await push(client, args=[n], options={"queue": queue, "priority": n})
        for n in (1, 9, 5, 9, -3, 100, -100)
    ]
    order = [job["id"] for job in await fetch_all(client, queue)]
    by_number = sorted(range(len(pushed)), key=lambda i: -pushed[i]["priority"])  # stable
    assert order == [pushed[i]["id"] for i in by_number]


async def test_named_priorities_are_the_conformance_levels_numbers(
    client: httpx.AsyncClient,
) -> None:
    queue = unique("named").lower()
    low = await push(client, options={"queue": queue, "priority": "LOW"})
    normal = await push(client, priority="NORMAL", options={"queue": queue})
    high = await push(client, options={"queue": queue, "priority": "HIGH"})
    between = await push(client, options={"queue": queue, "priority": 4})
    assert [j["priority"] for j in (low, normal, high)] == [1, 2, 3]
    order = [job["id"] for job in await fetch_all(client, queue)]
    assert order == [between["id"], high["id"], normal["id"], low["id"]]
    said = (await call(client, "GET", f"/v1/jobs/{high['id']}"))["job"]
    assert said["priority"] == 3


async def test_v1_priorities_keep_their_places_among_the_numbers(
    client: httpx.AsyncClient, api: Api
) -> None:
    queue = unique("mixed").lower()
    above = await push(client, options={"queue": queue, "priority": 1})
    v1_ids = {}
    for priority in ("VERY_LOW", "MEDIUM", "VERY_HIGH", "HIGH", "LOW"):
        job = await api.create_job(priority=priority)
        stage = await api.create_stage(job["id"], queue)
        [task] = await api.create_tasks(stage["id"])
        v1_ids[priority] = task["id"]
    same = await push(client, options={"queue": queue, "priority": 0})  # MEDIUM's, later
    top = await push(client, options={"queue": queue, "priority": 51})
    order = [job["id"] for job in await fetch_all(client, queue)]
    assert order == [
        top["id"],  # 51 is above VERY_HIGH's 50
        v1_ids["VERY_HIGH"],
        v1_ids["HIGH"],
        above["id"],  # 1 is between HIGH (10) and MEDIUM (0)
        v1_ids["MEDIUM"],
        same["id"],  # as MEDIUM, pushed after it
        v1_ids["LOW"],
        v1_ids["VERY_LOW"],
    ]


@pytest.mark.parametrize("priority", ["URGENT", "", 101, -101, 2.5, True, None, [3]])
async def test_a_bad_priority_is_refused_and_makes_nothing(
    client: httpx.AsyncClient, db: Database, priority: Any
) -> None:
    body = {"type": "a.b", "args": [], "options": {"priority": priority}}
    refused(await call(client, "POST", "/v1/jobs", body, 400), "invalid_request")
    made = await db.transaction(lambda s: s.scalar(select(func.count()).select_from(Job)))
    assert made == 0


async def test_a_queues_stats_count_its_jobs_by_state_and_in_all(
    client: httpx.AsyncClient, api: Api, clock: ManualClock
) -> None:
    queue = unique("stats").lower()
    other = unique("other").lower()
    await push(client, options={"queue": other})  # another queue's: not counted
    later = (clock.now() + timedelta(hours=1)).isoformat()
    await push(client, scheduled_at=later, options={"queue": queue})
    for _ in range(6):
        await push(client, options={"queue": queue, "retry": {"max_attempts": 2}})
    jobs = await fetch_all(client, queue)
    assert len(jobs) == 6
    done, retried, dead, cancelled, running, _ = jobs
    await call(client, "POST", "/v1/workers/ack", {"job_id": done["id"]})
    error = {"message": "no", "retryable": True}
    await call(client, "POST", "/v1/workers/nack", {"job_id": retried["id"], "error": error})
    no = {"message": "no", "retryable": False}
    await call(client, "POST", "/v1/workers/nack", {"job_id": dead["id"], "error": no})
    await call(client, "DELETE", f"/v1/jobs/{cancelled['id']}")
    waiting = await push(client, options={"queue": queue})
    said = await call(client, "GET", f"/v1/queues/{queue}/stats")
    stats = said["stats"]
    assert {k: stats[k] for k in (*STATES, "total")} == {
        "available": 1,
        "scheduled": 1,
        "pending": 0,
        "active": 2,
        "retryable": 1,
        "completed": 1,
        "discarded": 1,
        "cancelled": 1,
        "total": 8,
    }
    assert (stats["completed_last_hour"], stats["failed_last_hour"]) == (1, 1)
    assert stats["throughput_per_second"] == round(1 / 3600, 4)
    queue_said = said["queue"]
    assert (queue_said["name"], queue_said["total"], queue_said["available"]) == (queue, 8, 1)
    assert (queue_said["active"], queue_said["completed"], said["status"]) == (2, 1, "active")
    del running, waiting
    # An unknown queue has nothing; a name too long is refused in the spec's shape.
    empty = (await call(client, "GET", f"/v1/queues/{unique('none').lower()}/stats"))["stats"]
    assert empty["total"] == 0 and empty["available"] == 0
    refused(
        await call(client, "GET", f"/v1/queues/{'q' * 51}/stats", expect=400), "invalid_request"
    )


STATES = (
    "available",
    "scheduled",
    "pending",
    "active",
    "retryable",
    "completed",
    "discarded",
    "cancelled",
)
