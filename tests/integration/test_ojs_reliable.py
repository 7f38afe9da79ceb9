"""Level 1's cancellation and events, on both backends: CANCEL takes a job in each of
the states the spec names (scheduled, available, pending, active, retryable) to
`cancelled`, and
the queue's events tell of each retry (`job.retrying`) and each cancellation
(`job.cancelled`) with the job they concern."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.maintenance.time_limits import time_out_attempts

from ..support.api import Api, unique
from .test_ojs import call, push


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 5, 1, 9, 0, tzinfo=UTC))


async def test_a_job_in_each_cancellable_state_is_cancelled_and_told_as_an_event(
    client: httpx.AsyncClient, api: Api, clock: ManualClock
) -> None:
    queue = unique("q").lower()
    # `pending`: a task whose stage waits for an approval (made over v1, read over OJS).
    job = await api.create_job()
    body = {"type": queue, "data": {}, "startAsWaiting": True, "tasks": [{"data": {}}]}
    stage = await api.call("POST", f"/v1/jobs/{job['id']}/stage", 201, json=body)
    pending = {"id": stage["tasks"][0]["id"]}
    later = (clock.now() + timedelta(hours=1)).isoformat()
    scheduled = await push(client, options={"queue": queue, "delay_until": later})
    retried = await push(client, options={"queue": queue, "retry": {"max_attempts": 3}})
    [fetched] = (await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]}))["jobs"]
    assert fetched["id"] == retried["id"]
    error = {"code": "flaky", "message": "try again", "retryable": True}
    nacked = await call(
        client, "POST", "/v1/workers/nack", {"job_id": retried["id"], "error": error}
    )
    assert nacked["state"] == "retryable"
    available = await push(client, options={"queue": queue})
    active = await push(client, options={"queue": queue})
    fetch = {"queues": [queue], "count": 2, "visibility_timeout_ms": 3_600_000}
    assert [j["id"] for j in (await call(client, "POST", "/v1/workers/fetch", fetch))["jobs"]] == [
        available["id"],
        active["id"],
    ]
    # `available` again: released by a NACK that a later attempt would retry.
    await call(client, "POST", "/v1/workers/nack", {"job_id": available["id"], "error": error})
    clock.advance(timedelta(minutes=10))  # its backoff is over; the scheduled one still waits
    states = {
        job["id"]: (await call(client, "GET", f"/v1/jobs/{job['id']}"))["job"]["state"]
        for job in (pending, scheduled, retried, available, active)
    }
    assert list(states.values()) == ["pending", "scheduled", "available", "available", "active"]
    nack = {"job_id": retried["id"], "error": error}
    [again] = (await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]}))["jobs"]
    assert again["id"] == retried["id"]
    assert (await call(client, "POST", "/v1/workers/nack", nack))["state"] == "retryable"
    before = {"pending": pending, "scheduled": scheduled, "retryable": retried}
    before["available"] = available
    for state, job in {**before, "active": active}.items():
        cancelled = (await call(client, "DELETE", f"/v1/jobs/{job['id']}"))["job"]
        assert (cancelled["state"], cancelled["previous_state"]) == ("cancelled", state)
        read = (await call(client, "GET", f"/v1/jobs/{job['id']}"))["job"]
        assert read["state"] == "cancelled"
    told = await call(client, "GET", f"/v1/events?queues={queue}&types=job.retrying,job.cancelled")
    said = [(e["type"], e["subject"]) for e in told["events"]]
    assert said[:3] == [
        ("job.retrying", retried["id"]),
        ("job.retrying", available["id"]),
        ("job.retrying", retried["id"]),
    ]
    assert sorted(said[3:]) == sorted(
        ("job.cancelled", job["id"]) for job in (pending, scheduled, retried, available, active)
    )


async def test_an_attempt_past_its_execution_timeout_fails_as_a_timeout(
    client: httpx.AsyncClient, db: Database, clock: ManualClock
) -> None:
    queue = unique("q").lower()
    options = {"queue": queue, "timeout_ms": 2000, "retry": {"max_attempts": 1}}
    job = await push(client, options=options)
    [fetched] = (await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]}))["jobs"]
    assert fetched["id"] == job["id"]
    clock.advance(timedelta(seconds=1))
    assert await time_out_attempts(db) == 0  # within its time
    clock.advance(timedelta(seconds=1, milliseconds=500))
    assert await time_out_attempts(db) == 1
    read = (await call(client, "GET", f"/v1/jobs/{job['id']}"))["job"]
    assert read["state"] == "discarded"
    assert [(e["type"], e["attempt"]) for e in read["errors"]] == [("timeout", 1)]
