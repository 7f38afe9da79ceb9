"""Control operations on a job whose tasks many workers are claiming: priority changes,
pause, resume and abort each answer within 2 s on PostgreSQL, no claim or report gets a
5xx, no task of the aborted job is handed out once the abort has answered, and every
invariant holds afterwards."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import httpx
import pytest

from jobnik_manager.db.engine import Database

from ..support.api import Api, unique
from ..support.invariants import assert_invariants
from ..support.processes import manager_process

LOOPS = 16
TASKS = 3000
CONTROL_LIMIT = 2.0  # seconds


async def _loop(
    base_url: str,
    stage_type: str,
    handed_out: list[tuple[float, str]],
    statuses: Counter[int],
    refused: list[str],
    stop: asyncio.Event,
) -> None:
    """Dequeue and complete until stopped; note when each claim was sent."""
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        while not stop.is_set():
            sent = time.monotonic()
            got = await http.patch(f"/v1/stages/{stage_type}/tasks/dequeue")
            statuses[got.status_code] += 1
            if got.status_code != 200:
                await asyncio.sleep(0.01)
                continue
            task = got.json()
            handed_out.append((sent, task["id"]))
            reported = await http.put(
                f"/v1/tasks/{task['id']}/status", json={"status": "COMPLETED"}
            )
            statuses[reported.status_code] += 1


@pytest.mark.slow
async def test_control_calls_do_not_wait_for_claimers(pg_api: Api, pg_db: Database) -> None:
    stage_type = unique("busy")
    job = await pg_api.create_job("MEDIUM")
    stage = await pg_api.create_stage(job["id"], stage_type)
    await pg_api.create_tasks(stage["id"], TASKS)
    handed_out: list[tuple[float, str]] = []
    statuses: Counter[int] = Counter()
    refused: list[str] = []
    stop = asyncio.Event()
    took: dict[str, float] = {}
    with manager_process(pg_db.url) as base:
        loops = [
            asyncio.create_task(_loop(base, stage_type, handed_out, statuses, refused, stop))
            for _ in range(LOOPS)
        ]
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:

            async def control(name: str, method: str, path: str, body: object) -> None:
                began = time.monotonic()
                response = await http.request(method, path, json=body)
                took[name] = time.monotonic() - began
                assert response.status_code == 200, (name, response.text)

            job_path = f"/v1/jobs/{job['id']}"
            await asyncio.sleep(0.5)
            await control("priority HIGH", "PATCH", f"{job_path}/priority", {"priority": "HIGH"})
            await asyncio.sleep(0.2)
            await control("pause", "PUT", f"{job_path}/status", {"status": "PAUSED"})
            await asyncio.sleep(0.2)
            await control("resume", "PUT", f"{job_path}/status", {"status": "PENDING"})
            await asyncio.sleep(0.2)
            await control("priority LOW", "PATCH", f"{job_path}/priority", {"priority": "LOW"})
            await asyncio.sleep(0.2)
            await control("abort", "PUT", f"{job_path}/status", {"status": "ABORTED"})
            aborted = time.monotonic()
            await asyncio.sleep(0.5)  # the loops keep claiming: nothing more of this job
        stop.set()
        await asyncio.gather(*loops)

    print(f"\ncontrol calls (s): {took}; answers to the loops: {dict(statuses)}")
    assert len(took) == 5 and max(took.values()) < CONTROL_LIMIT, took
    assert not [s for s in statuses if s >= 500], statuses
    assert set(statuses) <= {200, 400, 404}, statuses  # 404: nothing to claim
    after_abort = [task for sent, task in handed_out if sent > aborted]
    assert after_abort == [], f"{len(after_abort)} tasks handed out after the abort"
    done = len(handed_out)
    assert 0 < done < TASKS, "the abort must land while work is left"
    assert (await pg_api.job(job["id"]))["status"] == "ABORTED"
    for task_id in refused:
        assert (await pg_api.call("GET", f"/v1/tasks/{task_id}"))["status"] == "ABORTED"
    await assert_invariants(pg_db)
