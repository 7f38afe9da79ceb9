"""PostgreSQL restarted several times (once as a crash) while template workers drain a
job on the production profile (two replicas behind the balancer, auth on, RabbitMQ):
the job completes, no task fails, no answer any client saw is a 500 (503 only), nothing
is completed twice.

The server is one of the test's own (`support.private_postgres`), so restarting it
disturbs no other test."""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest

from jobnik_manager.db.engine import Database

from ..conftest import outside_any_loop
from ..support.api import unique
from ..support.deployment import Deployment, deployment
from ..support.invariants import assert_invariants
from ..support.private_postgres import PrivatePostgres, private_postgres

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


@pytest.fixture
def profile(
    postgres: PrivatePostgres, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Deployment]:
    async def create() -> None:
        admin = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{postgres.port}/postgres")
        await admin.execute("CREATE DATABASE jobnik")
        await admin.close()

    outside_any_loop(create())
    amqp_url: str = request.getfixturevalue("amqp_url")
    logs = Path(tempfile.mkdtemp(prefix="jobnik-restart-"))
    with deployment(
        "production", logs, postgres_url=postgres.url("jobnik"), amqp_url=amqp_url,
        postgres=postgres,
    ) as d:  # fmt: skip
        yield d


async def test_a_drain_survives_postgres_restarts(
    profile: Deployment, postgres: PrivatePostgres
) -> None:
    stage_type = unique("restart")
    async with httpx.AsyncClient(
        base_url=profile.url, timeout=30, headers=profile.headers("producer")
    ) as http:
        created = await http.post(
            "/v1/jobs",
            json={
                "name": unique("restart"),
                "data": {},
                "stages": [
                    {
                        "type": stage_type,
                        "data": {},
                        # Three attempts, as a team would give them.
                        "tasks": [{"data": {"do": "ok", "seconds": TASK_SECONDS}, "maxAttempts": 3}]
                        * TASKS,
                    }
                ],
            },
        )
        assert created.status_code == 201, created.text
        job_id = created.json()["id"]
        for _ in range(WORKERS):
            profile.start_worker(stage_type, WORKER_CONCURRENCY=str(CONCURRENCY))
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
        answers: Counter[int] = Counter()
        for answer in profile.balancer_answers()["answers"]:
            answers[answer["status"]] += answer["count"]
        print(f"restarts after {restarted_at} tasks done; the answers: {dict(answers)}")

        assert job["status"] == "COMPLETED", (job, dict(answers), str(profile.logs))
        # Every restart hit the drain while it ran.
        assert all(0 < done < TASKS for done in restarted_at), restarted_at
        assert not {s for s in answers if s >= 500 and s != 503}, answers
        stage = (await _get(http, f"/v1/jobs/{job_id}/stages")).json()[0]
        assert stage["summary"]["completed"] == TASKS
        assert stage["summary"]["failed"] == 0
    url = profile.database_url
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
