"""Many claimers at once against the production profile: two manager replicas on
PostgreSQL, auth on (each claimer with a worker token), RabbitMQ."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from jobnik_manager.db.engine import Database

from ..support.api import Api, unique
from ..support.deployment import Deployment
from ..support.invariants import assert_invariants
from ..support.profiles import production

CLAIMERS = 16
JOBS = 10
TASKS_PER_JOB = 100


async def _claimer(
    base_url: str, token: str | None, stage_type: str, claims: list[tuple[str, int]]
) -> None:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(base_url=base_url, timeout=30, headers=headers) as http:
        while True:
            got = await http.patch(f"/v1/stages/{stage_type}/tasks/dequeue")
            if got.status_code == 404:
                return
            assert got.status_code == 200, got.text
            task = got.json()
            claims.append((task["id"], task["attempts"]))
            # Every seventh task fails its first attempt, so retries race too.
            outcome = (
                "FAILED" if task["data"]["i"] % 7 == 0 and task["attempts"] == 0 else "COMPLETED"
            )
            reported = await http.put(f"/v1/tasks/{task['id']}/status", json={"status": outcome})
            assert reported.status_code == 200, reported.text


@pytest.fixture
def profile(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    with production(request, tmp_path / "profile") as d:
        yield d


@pytest.mark.slow
async def test_sixteen_claimers_take_each_task_exactly_once(profile: Deployment) -> None:
    http = httpx.AsyncClient(base_url=profile.url, headers=profile.headers("producer"))
    api = Api(http)
    stage_type = unique("crowd")
    job_ids = []
    for j in range(JOBS):
        job = await api.create_job(["HIGH", "MEDIUM", "LOW"][j % 3])
        stage = await api.create_stage(job["id"], stage_type)
        await api.call(
            "POST",
            f"/v1/stages/{stage['id']}/tasks",
            201,
            json=[{"data": {"i": i}, "maxAttempts": 2} for i in range(TASKS_PER_JOB)],
        )
        job_ids.append(job["id"])
    total = JOBS * TASKS_PER_JOB

    claims: list[tuple[str, int]] = []
    # Half straight to each replica, so both processes surely compete for each task.
    replicas = [r.url for r in profile.replicas]
    token = profile.worker_token(stage_type)
    await asyncio.gather(
        *(_claimer(replicas[i % len(replicas)], token, stage_type, claims) for i in range(CLAIMERS))
    )

    retried = sum(1 for i in range(TASKS_PER_JOB) if i % 7 == 0) * JOBS
    print(
        f"\n{len(claims)} claims by {CLAIMERS} claimers over {total} tasks ({retried} retried once)"
    )
    # Each attempt of each task was handed out exactly once.
    assert len(claims) == total + retried
    assert max(Counter(claims).values()) == 1
    assert len({task_id for task_id, _ in claims}) == total
    for job_id in job_ids:
        job = await api.job(job_id, should_return_stages=True)
        assert (job["status"], job["percentage"]) == ("COMPLETED", 100)
        assert job["stages"][0]["summary"]["completed"] == TASKS_PER_JOB
    await http.aclose()
    db = Database(profile.database_url)
    try:
        await assert_invariants(db)
    finally:
        await db.dispose()
