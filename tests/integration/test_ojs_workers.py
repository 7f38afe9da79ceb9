"""Level 1's server-initiated worker states, on both backends: an operator tells an OJS
worker to go quiet or to terminate; the worker hears it in the answer to its next BEAT,
its leases are still renewed so it can finish its jobs, and FETCH hands it nothing more
while other workers go on; a terminating worker is never told to go back, and a bad
worker id is refused in the spec's shape, changing nothing."""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import select

from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import WorkerDirective

from ..support.api import unique
from .test_ojs import call, push, refused


def beat(worker: str, *jobs: str) -> dict[str, object]:
    return {"worker_id": worker, "active_jobs": list(jobs)}


async def test_a_quiet_worker_finishes_its_job_and_fetches_nothing_more(
    client: httpx.AsyncClient,
) -> None:
    queue = unique("q").lower()
    first, second = [(await push(client, options={"queue": queue}))["id"] for _ in range(2)]
    fetched = await call(client, "POST", "/v1/workers/fetch", {"queues": [queue], "worker_id": "a"})
    assert [job["id"] for job in fetched["jobs"]] == [first]
    said = await call(client, "POST", "/v1/admin/workers/a/quiet")
    assert said["worker"] == {"id": "a", "state": "quiet"}
    heard = await call(client, "POST", "/v1/workers/heartbeat", beat("a", first))
    assert (heard["state"], heard["jobs_extended"]) == ("quiet", [first])
    # It asks for more anyway: none for it; another worker takes the next job.
    fetch = {"queues": [queue], "worker_id": "a"}
    assert (await call(client, "POST", "/v1/workers/fetch", fetch))["jobs"] == []
    other = await call(client, "POST", "/v1/workers/fetch", {"queues": [queue], "worker_id": "b"})
    assert [job["id"] for job in other["jobs"]] == [second]
    assert (await call(client, "POST", "/v1/workers/heartbeat", beat("b")))["state"] == "running"
    # What it held it may still finish.
    await call(client, "POST", "/v1/workers/ack", {"job_id": first, "worker_id": "a"})
    assert (await call(client, "GET", f"/v1/jobs/{first}"))["job"]["state"] == "completed"


async def test_terminate_is_heard_and_there_is_no_way_back(
    client: httpx.AsyncClient, db: Database
) -> None:
    worker = f"w-{uuid.uuid4().hex[:8]}"
    await call(client, "POST", f"/v1/admin/workers/{worker}/quiet")
    again = await call(client, "POST", f"/v1/admin/workers/{worker}/quiet")  # idempotent
    assert again["worker"]["state"] == "quiet"
    said = await call(client, "POST", f"/v1/admin/workers/{worker}/terminate")
    assert said["worker"] == {"id": worker, "state": "terminate"}
    heard = await call(client, "POST", "/v1/workers/heartbeat", beat(worker))
    assert heard["state"] == "terminate"
    await call(client, "POST", f"/v1/admin/workers/{worker}/terminate")
    refused(await call(client, "POST", f"/v1/admin/workers/{worker}/quiet", None, 409), "conflict")
    assert (await call(client, "POST", "/v1/workers/heartbeat", beat(worker)))["state"] == (
        "terminate"
    )
    rows = await db.transaction(
        lambda s: s.execute(select(WorkerDirective.worker, WorkerDirective.state))
    )
    assert [tuple(r) for r in rows] == [(worker, "terminate")]


@pytest.mark.parametrize("told", ["quiet", "terminate"])
async def test_a_worker_id_longer_than_fetch_takes_is_refused_and_tells_no_one(
    client: httpx.AsyncClient, db: Database, told: str
) -> None:
    worker = "x" * 101  # FETCH and BEAT take ids of up to 100 characters
    refused(
        await call(client, "POST", f"/v1/admin/workers/{worker}/{told}", None, 400),
        "invalid_request",
    )
    rows = await db.transaction(lambda s: s.execute(select(WorkerDirective.worker)))
    assert rows.all() == []
