"""Many claimers at once against two real manager processes on PostgreSQL."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx
import pytest

from jobnik_manager.db.engine import Database

from ..support.api import Api, unique
from ..support.invariants import assert_invariants
from ..support.processes import manager_process

CLAIMERS = 16
JOBS = 10
TASKS_PER_JOB = 100


async def _claimer(base_url: str, stage_type: str, claims: list[tuple[str, int]]) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
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


@pytest.mark.slow
async def test_sixteen_claimers_take_each_task_exactly_once(pg_api: Api, pg_db: Database) -> None:
    api, db = pg_api, pg_db
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
    with manager_process(db.url) as first, manager_process(db.url) as second:
        await asyncio.gather(
            *(_claimer([first, second][i % 2], stage_type, claims) for i in range(CLAIMERS))
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
    await assert_invariants(db)
