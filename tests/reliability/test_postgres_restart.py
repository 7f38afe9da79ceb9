"""PostgreSQL restarted several times (once as a crash) while SDK workers drain a job:
the job completes, no task fails, no answer is a 500 (503 only), nothing is completed
twice.

The server is one of the test's own (`support.private_postgres`), so restarting it
disturbs no other test."""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import asyncpg
import httpx
import pytest

from jobnik_manager.db import migrate
from jobnik_manager.db.engine import Database

from ..support.api import unique
from ..support.invariants import assert_invariants
from ..support.private_postgres import PrivatePostgres, private_postgres
from ..support.processes import manager_process, module_process

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TASKS = 3000
TASK_SECONDS = 0.05
WORKERS = 2
CONCURRENCY = 8
# The second is as a crash: claims commit without waiting for their WAL flush, so a
# crash may lose some; their tasks must be claimed again, their reports refused.
RESTARTS = ("fast", "immediate", "fast")


@pytest.fixture
def postgres() -> Iterator[PrivatePostgres]:
    root = Path(tempfile.mkdtemp(prefix="jobnik-pg-"))
    with private_postgres(root) as server:
        yield server


async def _get(http: httpx.AsyncClient, path: str, **params: object) -> httpx.Response:
    """GET through the restarts: a 503 or a refused connection is asked again."""
    for _ in range(600):
        try:
            response = await http.get(path, params=params)
        except httpx.TransportError:
            response = None
        if response is not None and response.status_code != 503:
            return response
        await asyncio.sleep(0.1)
    raise AssertionError(f"GET {path} kept failing")


async def test_a_drain_survives_postgres_restarts(postgres: PrivatePostgres) -> None:
    admin = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{postgres.port}/postgres")
    await admin.execute("CREATE DATABASE jobnik")
    await admin.close()
    url = postgres.url("jobnik")
    await asyncio.to_thread(migrate.upgrade, url)
    logs = Path(tempfile.mkdtemp(prefix="jobnik-restart-"))
    stage_type = unique("restart")
    with ExitStack() as stack:
        base = stack.enter_context(manager_process(url, log=logs / "manager.log"))
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            created = await http.post(
                "/v1/jobs",
                json={
                    "name": unique("restart"),
                    "data": {},
                    "stages": [
                        {
                            "type": stage_type,
                            "data": {},
                            "tasks": [{"data": {"seconds": TASK_SECONDS}}] * TASKS,
                        }
                    ],
                },
            )
            assert created.status_code == 201, created.text
            job_id = created.json()["id"]
            workers = [
                stack.enter_context(
                    module_process(
                        "tests.reliability.counting_worker",
                        logs / f"worker-{i}.log",
                        COUNTING_MANAGER=base,
                        COUNTING_STAGE_TYPE=stage_type,
                        COUNTING_CONCURRENCY=str(CONCURRENCY),
                        COUNTING_OUT=str(logs / f"counts-{i}.json"),
                    )
                )
                for i in range(WORKERS)
            ]
            restarted_at: list[int] = []
            for mode in RESTARTS:
                await asyncio.sleep(2.0)
                stages = (await _get(http, f"/v1/jobs/{job_id}/stages")).json()
                restarted_at.append(stages[0]["summary"]["completed"])
                await asyncio.to_thread(postgres.restart, mode)
            deadline = time.monotonic() + 180
            while True:
                job = (await _get(http, f"/v1/jobs/{job_id}")).json()
                if job["status"] != "IN_PROGRESS" or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.5)
            for worker in workers:
                worker.terminate()
            for worker in workers:
                worker.wait(timeout=60)
            answers: Counter[str] = Counter()
            for i in range(WORKERS):
                answers.update(json.loads((logs / f"counts-{i}.json").read_text()))
            print(
                f"restarts after {restarted_at} tasks done; the workers' answers: {dict(answers)}"
            )

            assert job["status"] == "COMPLETED", (job, dict(answers), str(logs))
            # Every restart hit the drain while it ran.
            assert all(0 < done < TASKS for done in restarted_at), restarted_at
            assert not {k for k in answers if k.startswith("5") and k != "503"}, answers
            stage = (await _get(http, f"/v1/jobs/{job_id}/stages")).json()[0]
            assert stage["summary"]["completed"] == TASKS
            assert stage["summary"]["failed"] == 0
    db = Database(url)
    try:
        async with db.engine.connect() as conn:
            completed = (
                await conn.exec_driver_sql(
                    "SELECT task_id, count(*) FROM events WHERE to_status = 'COMPLETED'"
                    " AND entity = 'TASK' GROUP BY task_id"
                )
            ).all()
            failed = (
                await conn.exec_driver_sql(
                    "SELECT count(*) FROM events WHERE to_status = 'FAILED' AND entity = 'TASK'"
                )
            ).scalar_one()
        assert len(completed) == TASKS and {n for _, n in completed} == {1}
        assert failed == 0
        await assert_invariants(db)
    finally:
        await db.dispose()
