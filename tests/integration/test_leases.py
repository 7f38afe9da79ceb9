"""Leases: claims carry one, heartbeats extend it, lost leases are refused, expired
ones are reaped into failed attempts, and an abort reaches the holder."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.maintenance.reaper import reap_expired

from ..support.api import Api, unique
from ..support.invariants import assert_invariants


@pytest.fixture
def clock() -> ManualClock:
    """The manager's time in these tests: leases run out when the test moves it on."""
    return ManualClock()


def at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


async def one_task(api: Api, **task_fields: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("lease"))
    task = (await api.create_tasks(stage["id"], **task_fields))[0]
    return stage, task


async def claim(api: Api, stage_type: str, lease_seconds: float | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"worker": "w-1"}
    if lease_seconds is not None:
        params["lease_seconds"] = lease_seconds
    return await api.call(  # type: ignore[no-any-return]
        "PATCH", f"/v1/stages/{stage_type}/tasks/dequeue", params=params
    )


async def test_a_claim_carries_a_lease_of_the_asked_length(api: Api, db: Database) -> None:
    stage, _ = await one_task(api)
    claimed = await claim(api, stage["type"], lease_seconds=60)
    assert claimed["worker"] == "w-1" and claimed["leaseId"]
    length = at(claimed["leaseExpiresAt"]) - at(claimed["startTime"])
    assert timedelta(seconds=59) < length <= timedelta(seconds=61)


async def test_a_reference_claim_gets_the_long_default_lease(api: Api) -> None:
    stage, _ = await one_task(api)
    claimed = await api.dequeue(stage["type"])
    assert claimed is not None
    length = at(claimed["leaseExpiresAt"]) - at(claimed["startTime"])
    assert timedelta(minutes=29) < length <= timedelta(minutes=31)


async def test_heartbeat_extends_the_lease_and_records_progress(api: Api) -> None:
    stage, task = await one_task(api)
    claimed = await claim(api, stage["type"], lease_seconds=5)
    beat = await api.call(
        "POST",
        f"/v1/tasks/{task['id']}/heartbeat",
        json={"leaseId": claimed["leaseId"], "progress": 40, "leaseSeconds": 120},
    )
    assert beat["cancelRequested"] is False and beat["jobStatus"] == "IN_PROGRESS"
    assert at(beat["leaseExpiresAt"]) - at(claimed["leaseExpiresAt"]) > timedelta(seconds=100)
    got = await api.task(task["id"])
    assert got["progress"] == 40 and got["leaseExpiresAt"] == beat["leaseExpiresAt"]


async def test_a_wrong_lease_is_refused_and_changes_nothing(api: Api, db: Database) -> None:
    stage, task = await one_task(api)
    await claim(api, stage["type"])
    stranger = "00000000-0000-4000-8000-000000000000"
    for method, url, body in (
        ("POST", f"/v1/tasks/{task['id']}/heartbeat", {"leaseId": stranger}),
        ("PUT", f"/v1/tasks/{task['id']}/status", {"status": "COMPLETED", "leaseId": stranger}),
    ):
        err = await api.call(method, url, 409, json=body)
        assert err["code"] == "LEASE_LOST" and err["message"]
    assert (await api.task(task["id"]))["status"] == "IN_PROGRESS"
    await assert_invariants(db)


async def test_an_expired_lease_is_reaped_reclaimed_and_its_late_report_refused(
    api: Api, db: Database, clock: ManualClock
) -> None:
    stage, task = await one_task(api, maxAttempts=2)
    first = await claim(api, stage["type"], lease_seconds=1)
    assert await reap_expired(db) == 0  # not before it runs out
    clock.advance(1.2)
    # Expired but not yet reaped: already lost.
    beat = {"leaseId": first["leaseId"]}
    lost = await api.call("POST", f"/v1/tasks/{task['id']}/heartbeat", 409, json=beat)
    assert lost["code"] == "LEASE_LOST"
    assert await reap_expired(db) == 1
    reaped = await api.task(task["id"])
    assert (reaped["status"], reaped["attempts"], reaped["reason"]) == (
        "RETRIED",
        1,
        "lease expired",
    )
    second = await claim(api, stage["type"], lease_seconds=30)
    assert second["id"] == task["id"] and second["leaseId"] != first["leaseId"]
    late = {"status": "COMPLETED", "leaseId": first["leaseId"]}
    err = await api.call("PUT", f"/v1/tasks/{task['id']}/status", 409, json=late)
    assert err["code"] == "LEASE_LOST"
    done = await api.call(
        "PUT",
        f"/v1/tasks/{task['id']}/status",
        json={"status": "COMPLETED", "leaseId": second["leaseId"], "result": {"n": 1}},
    )
    assert done["status"] == "COMPLETED" and done["result"] == {"n": 1}
    assert (await api.stage(stage["id"]))["status"] == "COMPLETED"
    await assert_invariants(db)


async def test_reaping_the_last_attempt_fails_the_task_and_its_job(
    api: Api, db: Database, clock: ManualClock
) -> None:
    stage, task = await one_task(api)
    await claim(api, stage["type"], lease_seconds=1)
    clock.advance(0.9)
    assert await reap_expired(db) == 0
    clock.advance(0.3)
    assert await reap_expired(db) == 1
    assert (await api.task(task["id"]))["status"] == "FAILED"
    assert (await api.stage(stage["id"]))["status"] == "FAILED"
    assert (await api.job(stage["jobId"]))["status"] == "FAILED"
    assert await reap_expired(db) == 0
    await assert_invariants(db)


async def test_a_repeated_completion_under_the_same_lease_answers_again(api: Api) -> None:
    stage, task = await one_task(api)
    claimed = await claim(api, stage["type"])
    body = {"status": "COMPLETED", "leaseId": claimed["leaseId"]}
    first = await api.call("PUT", f"/v1/tasks/{task['id']}/status", json=body)
    again = await api.call("PUT", f"/v1/tasks/{task['id']}/status", json=body)
    assert first == again
    failed = {"status": "FAILED", "leaseId": claimed["leaseId"]}
    err = await api.call("PUT", f"/v1/tasks/{task['id']}/status", 409, json=failed)
    assert err["code"] == "LEASE_LOST"


async def test_abort_tells_the_holder_to_cancel_and_refuses_its_report(
    api: Api, db: Database
) -> None:
    stage, task = await one_task(api)
    claimed = await claim(api, stage["type"])
    await api.set_job_status(stage["jobId"], "ABORTED")
    beat = await api.call(
        "POST", f"/v1/tasks/{task['id']}/heartbeat", json={"leaseId": claimed["leaseId"]}
    )
    assert beat["cancelRequested"] is True and beat["jobStatus"] == "ABORTED"
    body = {"status": "COMPLETED", "leaseId": claimed["leaseId"]}
    err = await api.call("PUT", f"/v1/tasks/{task['id']}/status", 409, json=body)
    assert err["code"] == "LEASE_LOST"
    assert (await api.task(task["id"]))["status"] == "ABORTED"
    await assert_invariants(db)


async def test_pause_lets_running_tasks_finish_and_heartbeat(api: Api, db: Database) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("pause"))
    await api.create_tasks(stage["id"], 3)
    running = [await claim(api, stage["type"]) for _ in range(2)]
    await api.set_job_status(job["id"], "PAUSED")
    for t in running:
        beat = await api.call(
            "POST", f"/v1/tasks/{t['id']}/heartbeat", json={"leaseId": t["leaseId"]}
        )
        assert (beat["cancelRequested"], beat["jobStatus"]) == (False, "PAUSED")
        await api.call(
            "PUT",
            f"/v1/tasks/{t['id']}/status",
            json={"status": "COMPLETED", "leaseId": t["leaseId"]},
        )
    assert await api.dequeue(stage["type"]) is None
    await api.set_job_status(job["id"], "PENDING")
    await api.run_one(stage["type"])
    assert (await api.job(job["id"]))["status"] == "COMPLETED"
    await assert_invariants(db)


async def test_a_lease_runs_from_when_the_claim_runs_not_from_before_its_connection(
    api: Api, db: Database, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Opening a connection can take seconds (a database restarting, a slow name
    # lookup); a lease computed before it was shorter than asked by that much, and a
    # worker with a short lease lost tasks it was running.
    stage, _ = await one_task(api)
    began = clock.now()

    def slow(*_: Any) -> None:
        clock.advance(timedelta(seconds=10))

    holder = None
    if db.is_sqlite:
        # SQLite's claim runs on a connection of its own; what it waits for is the write
        # lock, held here by another transaction for those seconds.
        holding = asyncio.Event()

        async def hold_the_lock(s: AsyncSession) -> None:
            holding.set()
            await asyncio.sleep(0.1)
            slow()

        holder = asyncio.create_task(db.transaction(hold_the_lock))
        await holding.wait()
    event.listen(db.engine.sync_engine.pool, "checkout", slow)
    acquire = asyncpg.pool.Pool.acquire

    def slow_acquire(pool: asyncpg.pool.Pool, *args: Any, **kwargs: Any) -> Any:
        slow()
        return acquire(pool, *args, **kwargs)

    monkeypatch.setattr(asyncpg.pool.Pool, "acquire", slow_acquire)
    try:
        claimed = await api.call(
            "POST",
            "/v1/tasks/claim",
            json={"stageTypes": [stage["type"]], "limit": 1, "leaseSeconds": 60},
        )
    finally:
        event.remove(db.engine.sync_engine.pool, "checkout", slow)
        if holder is not None:
            await holder
    (task,) = claimed["items"]
    assert at(task["startTime"]) >= began + timedelta(seconds=10)
    assert at(task["leaseExpiresAt"]) - at(task["startTime"]) == timedelta(seconds=60)
