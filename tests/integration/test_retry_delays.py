"""Retry delays (policy on the task or its stage), retry-later, and failure detail."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.maintenance.reaper import reap_expired
from jobnik_manager.services.claimability import open_due_retries

from ..support.api import Api, unique
from ..support.invariants import assert_invariants

POLICY = {"initialDelaySeconds": 1, "multiplier": 3, "maxDelaySeconds": 2}


@pytest.fixture
def clock() -> ManualClock:
    """The manager's time in these tests: delays end when the test moves it on."""
    return ManualClock()


def at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


async def leased(api: Api, stage_type: str) -> dict[str, Any]:
    return await api.call(  # type: ignore[no-any-return]
        "PATCH", f"/v1/stages/{stage_type}/tasks/dequeue", params={"lease_seconds": 30}
    )


async def put(api: Api, task: dict[str, Any], expect: int = 200, **body: Any) -> Any:
    return await api.call(
        "PUT", f"/v1/tasks/{task['id']}/status", expect, json={"leaseId": task["leaseId"], **body}
    )


async def test_a_failed_task_is_not_offered_before_its_not_before(
    api: Api, db: Database, clock: ManualClock
) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("delay"))
    task = (await api.create_tasks(stage["id"], maxAttempts=3, retryPolicy=POLICY))[0]
    assert task["retryPolicy"] == {**POLICY, "initialDelaySeconds": 1.0, "maxDelaySeconds": 2.0}

    delays = []
    for expected_delay in (1, 2):  # 1 s, then min(3 s, cap 2 s)
        claimed = await leased(api, stage["type"])
        failed = await put(api, claimed, status="FAILED", reason="flaky")
        assert (failed["status"], failed["reason"]) == ("RETRIED", "flaky")
        not_before = at(failed["notBefore"])
        delays.append(round((not_before - at(failed["updateTime"])).total_seconds()))
        # Not offered early, even when the maintenance loop runs.
        assert await open_due_retries(db) == 0
        assert await api.dequeue(stage["type"]) is None
        await assert_invariants(db)
        clock.advance(expected_delay - 0.1)
        assert await open_due_retries(db) == 0
        clock.advance(0.2)
        assert await open_due_retries(db) == 1
    assert delays == [1, 2]
    claimed = await leased(api, stage["type"])
    assert claimed["attempts"] == 2
    assert datetime.fromisoformat(claimed["startTime"]) >= not_before
    await put(api, claimed, status="COMPLETED")
    assert (await api.job(job["id"]))["status"] == "COMPLETED"
    await assert_invariants(db)


async def test_a_lost_lease_waits_its_retry_delay_from_when_it_ran_out(
    api: Api, db: Database, clock: ManualClock
) -> None:
    """The attempt failed when its lease ran out, not when the reaper came by: a reaper
    run within the delay leaves the rest of it; one after it, none."""
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("lost"))
    await api.create_tasks(stage["id"], maxAttempts=3, retryPolicy=POLICY)
    claimed = await leased(api, stage["type"])
    ran_out = at(claimed["leaseExpiresAt"])
    clock.advance(30.4)
    assert await reap_expired(db) == 1
    got = await api.task(claimed["id"])
    assert (got["status"], got["attempts"], got["reason"]) == ("RETRIED", 1, "lease expired")
    assert at(got["notBefore"]) == ran_out + timedelta(seconds=1)
    assert await api.dequeue(stage["type"]) is None
    clock.advance(0.7)
    assert await open_due_retries(db) == 1
    again = await leased(api, stage["type"])
    clock.advance(60)  # its lease, 30 s, and the next delay, 2 s, long over
    assert await reap_expired(db) == 1
    got = await api.task(again["id"])
    assert (got["status"], got["attempts"], got.get("notBefore")) == ("RETRIED", 2, None)
    assert (await api.dequeue(stage["type"]) or {}).get("id") == again["id"]
    await assert_invariants(db)


async def test_the_stage_policy_is_the_default_for_its_tasks(api: Api) -> None:
    job = await api.create_job()
    own = {"initialDelaySeconds": 7}
    stage = await api.create_stage(job["id"], retryPolicy=POLICY)
    inherited, overridden = await api.call(
        "POST",
        f"/v1/stages/{stage['id']}/tasks",
        201,
        json=[{"data": {}}, {"data": {}, "retryPolicy": own}],
    )
    assert inherited["retryPolicy"]["initialDelaySeconds"] == 1
    assert overridden["retryPolicy"] == {
        "initialDelaySeconds": 7,
        "multiplier": 2.0,
        "maxDelaySeconds": 3600.0,
    }
    assert (await api.stage(stage["id"]))["retryPolicy"]["maxDelaySeconds"] == 2


async def test_retry_later_spends_no_attempt_and_waits(
    api: Api, db: Database, clock: ManualClock
) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("later"))
    await api.create_tasks(stage["id"])  # maxAttempts 1: a FAILED report would end it
    for _ in range(3):
        claimed = await leased(api, stage["type"])
        later = await put(
            api, claimed, status="RETRIED", retryAfterSeconds=0.5, reason="rate limited"
        )
        assert (later["status"], later["attempts"], later["reason"]) == (
            "RETRIED",
            0,
            "rate limited",
        )
        assert at(later["notBefore"]) > at(later["updateTime"])
        assert await api.dequeue(stage["type"]) is None
        clock.advance(0.6)
        assert await open_due_retries(db) == 1
    claimed = await leased(api, stage["type"])
    await put(api, claimed, status="COMPLETED")
    assert (await api.stage(stage["id"]))["summary"]["completed"] == 1
    await assert_invariants(db)


async def test_retry_later_with_no_delay_is_offered_at_once(api: Api) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("now"))
    task = (await api.create_tasks(stage["id"]))[0]
    claimed = await leased(api, stage["type"])
    await put(api, claimed, status="RETRIED", retryAfterSeconds=0)
    again = await api.dequeue(stage["type"])
    assert again is not None and again["id"] == task["id"] and again["attempts"] == 0


async def test_non_retryable_failure_fails_at_once_with_its_reason(api: Api, db: Database) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("fatal"))
    task = (await api.create_tasks(stage["id"], maxAttempts=5))[0]
    claimed = await leased(api, stage["type"])
    failed = await put(api, claimed, status="FAILED", retryable=False, reason="bad input")
    assert (failed["status"], failed["attempts"], failed["reason"]) == ("FAILED", 1, "bad input")
    assert (await api.task(task["id"]))["reason"] == "bad input"
    assert (await api.job(job["id"]))["status"] == "FAILED"
    await assert_invariants(db)


async def test_a_delayed_retry_of_a_paused_job_waits_for_the_resume(
    api: Api, db: Database, clock: ManualClock
) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("paused"))
    await api.create_tasks(stage["id"], maxAttempts=2, retryPolicy={"initialDelaySeconds": 0.3})
    claimed = await leased(api, stage["type"])
    await put(api, claimed, status="FAILED")
    await api.set_job_status(job["id"], "PAUSED")
    clock.advance(0.4)
    assert await open_due_retries(db) == 1
    assert await api.dequeue(stage["type"]) is None
    await assert_invariants(db)
    await api.set_job_status(job["id"], "PENDING")
    await api.run_one(stage["type"])
    assert (await api.job(job["id"]))["status"] == "COMPLETED"
    await assert_invariants(db)


async def test_abort_ends_a_delayed_retry(api: Api, db: Database) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("abort"))
    task = (
        await api.create_tasks(stage["id"], maxAttempts=2, retryPolicy={"initialDelaySeconds": 60})
    )[0]
    claimed = await leased(api, stage["type"])
    await put(api, claimed, status="FAILED")
    await api.set_job_status(job["id"], "ABORTED")
    got = await api.task(task["id"])
    assert got["status"] == "ABORTED" and "notBefore" not in got
    await assert_invariants(db)
