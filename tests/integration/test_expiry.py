"""Expiry: a task is never handed out from its `expiresAt` (nor its job's) on, and one
still waiting is aborted "expired"; a job none of whose tasks started by its expiry is
aborted "expired"; one that started goes on without its expired tasks. An expiry
racing a claim settles each task once. A time already past answers 400."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Event, Task
from jobnik_manager.maintenance.expiry import expire
from jobnik_manager.maintenance.loop import run_tick
from jobnik_manager.services.claims import claim as claim_tasks

from ..support.api import Api, unique
from ..support.invariants import assert_invariants

START = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


def at(seconds: float) -> str:
    return (START + timedelta(seconds=seconds)).isoformat()


async def job_of(api: Api, kind: str, tasks: list[dict[str, Any]], **job: Any) -> dict[str, Any]:
    body = {"name": unique("expiring"), "data": {}, **job}
    body["stages"] = [{"type": kind, "data": {}, "tasks": tasks}]
    return await api.call("POST", "/v1/jobs", 201, json=body)  # type: ignore[no-any-return]


async def two_tasks_expiring_at_30(api: Api) -> tuple[str, dict[str, Any]]:
    """A stage type of its own, and a job of two tasks of it that expires at 30 s."""
    kind = unique("exp")
    return kind, await job_of(api, kind, [{"data": {}}, {"data": {}}], expiresAt=at(30))


async def report(api: Api, task: dict[str, Any], status: str = "COMPLETED") -> None:
    body = {"status": status, "leaseId": task["leaseId"]}
    await api.call("PUT", f"/v1/tasks/{task['id']}/status", json=body)


async def test_an_expired_task_is_never_handed_out_and_then_aborted(
    api: Api, db: Database, clock: ManualClock
) -> None:
    kind = unique("exp")
    job = await job_of(api, kind, [{"data": {"i": 0}, "expiresAt": at(10)}, {"data": {"i": 1}}])
    first, second = job["stages"][0]["tasks"]
    assert first["expiresAt"] == "2026-11-28T12:00:10Z" and "expiresAt" not in second
    clock.advance(10)  # the moment it expires: no claim takes it, before any tick
    claimed = await api.dequeue(kind)
    assert claimed is not None and claimed["id"] == second["id"]
    assert await api.dequeue(kind) is None
    await run_tick(db)
    expired = await api.task(first["id"])
    assert (expired["status"], expired["reason"]) == ("ABORTED", "expired")
    await report(api, claimed)
    ended = await api.job(job["id"])
    assert ended["status"] == "COMPLETED"  # the expired task counts for neither
    await assert_invariants(db)


async def test_a_job_none_of_whose_tasks_started_is_aborted_expired(
    api: Api, db: Database, clock: ManualClock
) -> None:
    kind, job = await two_tasks_expiring_at_30(api)
    assert job["expiresAt"] == "2026-11-28T12:00:30Z"
    # Its tasks carry its expiry.
    assert {t["expiresAt"] for t in job["stages"][0]["tasks"]} == {"2026-11-28T12:00:30Z"}
    clock.advance(29)
    await run_tick(db)
    assert (await api.job(job["id"]))["status"] == "PENDING"
    clock.advance(1)
    assert await api.dequeue(kind) is None
    await run_tick(db)
    ended = await api.job(job["id"], should_return_stages=True)
    assert (ended["status"], ended["reason"]) == ("ABORTED", "expired")
    assert ended["stages"][0]["status"] == "ABORTED"
    events = await api.call("GET", f"/v1/jobs/{job['id']}/events", params={"page_size": 100})
    aborted = [e for e in events["items"] if e["toStatus"] == "ABORTED" and e["entity"] == "JOB"]
    assert [e["reason"] for e in aborted] == ["expired"]
    await assert_invariants(db)


async def test_a_started_job_goes_on_without_its_expired_tasks(
    api: Api, db: Database, clock: ManualClock
) -> None:
    kind, job = await two_tasks_expiring_at_30(api)
    running = await api.dequeue(kind)
    assert running is not None
    clock.advance(60)
    await run_tick(db)
    tasks = job["stages"][0]["tasks"]
    left = next(t for t in tasks if t["id"] != running["id"])
    assert (await api.task(left["id"]))["reason"] == "expired"
    assert (await api.job(job["id"]))["status"] == "IN_PROGRESS"
    await report(api, running)  # the task that started ends as it ends
    assert (await api.job(job["id"]))["status"] == "COMPLETED"


async def test_an_expiry_racing_claims_settles_each_task_once(
    api: Api, db: Database, clock: ManualClock
) -> None:
    kind = unique("race")
    job = await job_of(api, kind, [{"data": {"i": i}} for i in range(60)], expiresAt=at(5))
    # A claimer whose clock is just before the expiry and an expirer just after it, at
    # once: each task goes one way.
    claimer = Database(db.url, pool_size=5, clock=ManualClock(START + timedelta(seconds=4.999)))
    expirer = Database(db.url, pool_size=5, clock=ManualClock(START + timedelta(seconds=5.001)))
    clock.advance(5.001)
    try:
        got = await asyncio.gather(
            *(claim_tasks(claimer, [kind], limit=7) for _ in range(6)),
            expire(expirer),
            expire(expirer),
        )
    finally:
        await claimer.dispose()
        await expirer.dispose()
    claimed = {r.id for g in got[:6] for r in g.rows}  # type: ignore[union-attr]

    async def read(s: Any) -> tuple[dict[Any, str], dict[Any, list[str]]]:
        statuses = dict(
            (await s.execute(select(Task.id, Task.status).where(Task.stage_type == kind))).all()
        )
        moves: dict[Any, list[str]] = {}
        rows = await s.execute(
            select(Event.task_id, Event.to_status).where(
                Event.job_id == uuid.UUID(job["id"]), Event.task_id.is_not(None)
            )
        )
        for task_id, to_status in rows:
            moves.setdefault(task_id, []).append(str(to_status))
        return statuses, moves

    await expire(db)  # whatever the racing expirer skipped as locked
    statuses, moves = await db.transaction(read)
    for task_id, status in statuses.items():
        started, aborted = "IN_PROGRESS" in moves[task_id], "ABORTED" in moves[task_id]
        assert started != aborted, (task_id, moves[task_id])
        assert (str(status) == "IN_PROGRESS") == (task_id in claimed) == started
    assert len(statuses) == 60 and len(claimed) <= 6 * 7
    await assert_invariants(db)


@pytest.mark.parametrize(
    "body",
    [
        {"expiresAt": "2026-11-28T11:59:59Z"},  # a job's, past
        {"stages": [{"type": "t", "data": {}, "tasks": [{"data": {}, "expiresAt": at(-1)}]}]},
        # Found as a large create's rows stream in, thousands already sent.
        {
            "stages": [
                {
                    "type": "t",
                    "data": {},
                    "tasks": [{"data": {}}] * 8_000 + [{"data": {}, "expiresAt": at(-1)}],
                }
            ]
        },
        {"expiresAt": "tomorrow"},
        {"expiresAt": "2026-11-28T13:00:00"},  # without its offset
        {"expiresAt": 1_800_000_000},
    ],
)
async def test_an_expiry_not_to_come_answers_400_and_makes_nothing(
    api: Api, body: dict[str, Any]
) -> None:
    answer = await api.call("POST", "/v1/jobs", 400, json={"name": "x", "data": {}, **body})
    assert answer["code"] == "VALIDATION_ERROR" and answer["message"]
    assert (await api.call("GET", "/v1/jobs"))["total"] == 0
    assert (await api.call("GET", "/v1/tasks"))["total"] == 0
