"""Push dispatch end to end on the production profile (PostgreSQL, RabbitMQ, authentication
on, two replicas with the relay behind one URL): worker processes with a worker token,
woken over RabbitMQ. The broker may go away mid-run, messages may be duplicated or
stray; the database decides, so nothing is lost or run twice."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import aio_pika
import httpx
import pytest
from sqlalchemy import func, select

from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Event, OutboxMessage

from ..reliability.test_worker_reliability import marker_worker, until
from ..support import profiles
from ..support.api import unique
from ..support.deployment import Deployment
from ..support.invariants import assert_invariants

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def production(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    with profiles.production(request, tmp_path_factory.mktemp("production")) as d:
        yield d


@pytest.fixture
async def database(production: Deployment) -> AsyncIterator[Database]:
    found = Database(production.database_url)
    try:
        yield found
    finally:
        await found.dispose()


def worker(
    d: Deployment, stage_type: str, markers: Path, name: str, **env: str
) -> contextlib.AbstractContextManager[subprocess.Popen[bytes]]:
    """marker_worker on the deployment (with its worker token), woken over its broker."""
    assert d.amqp_url is not None
    return marker_worker(d, stage_type, markers, name, MARKER_AMQP=d.amqp_url, **env)


def broker(action: str) -> None:
    """Stop or start the RabbitMQ application of the machine's broker node."""
    subprocess.run(["rabbitmqctl", f"{action}_app"], check=True, capture_output=True, timeout=60)


def starts_per_task(markers: Path) -> Counter[str]:
    return Counter(path.name.split(".")[0] for path in markers.glob("*.started.*"))


async def outbox_size(db: Database) -> int:
    async with db.sessions() as s:
        return int((await s.execute(select(func.count()).select_from(OutboxMessage))).scalar_one())


async def claims_per_task(db: Database) -> Counter[Any]:
    async with db.sessions() as s:
        rows = await s.execute(
            select(Event.task_id, func.count())
            .where(Event.entity == "TASK", Event.to_status == "IN_PROGRESS")
            .group_by(Event.task_id)
        )
        return Counter(dict(rows.all()))


async def add_job(http: httpx.AsyncClient, kind: str, n: int, start: int) -> str:
    """A job of one stage of `n` tasks (tasks cannot join a stage already running)."""
    tasks = [{"data": {"seconds": 0.01, "i": start + i}} for i in range(n)]
    body = {
        "name": unique("outage"),
        "data": {},
        "stages": [{"type": kind, "data": {}, "tasks": tasks}],
    }
    response = await http.post("/v1/jobs", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def test_the_run_survives_the_broker_going_away_and_the_outbox_drains(
    production: Deployment, database: Database, tmp_path: Path
) -> None:
    kind = unique("outage")
    total, batch = 500, 25
    with ExitStack() as stack:
        for i in range(2):
            stack.enter_context(worker(production, kind, tmp_path, f"w{i}", MARKER_CONCURRENCY="4"))
        async with httpx.AsyncClient(
            base_url=production.url, headers=production.headers("producer"), timeout=30
        ) as http:
            await asyncio.sleep(1)  # workers connected and idle
            job_ids: list[str] = []
            stopped = False
            try:
                for n in range(0, total, batch):
                    if n == 150:
                        broker("stop")
                        stopped = True
                    if n == 350:
                        broker("start")
                        stopped = False
                    job_ids.append(await add_job(http, kind, batch, n))
                    await asyncio.sleep(0.2)
            finally:
                if stopped:
                    broker("start")

            async def jobs_done() -> bool:
                for job_id in job_ids:
                    got = (await http.get(f"/v1/jobs/{job_id}")).json()
                    if got["status"] != "COMPLETED":
                        return False
                return True

            await until(jobs_done, "every job to complete", seconds=120)
        await until(lambda: _is_zero(outbox_size(database)), "the outbox to drain", seconds=60)

    starts = starts_per_task(tmp_path)
    assert len(starts) == total and set(starts.values()) == {1}, "a task ran twice or never"
    claims = await claims_per_task(database)
    assert len(claims) == total and set(claims.values()) == {1}
    await assert_invariants(database)


async def _is_zero(size: Any) -> bool:
    return await size == 0


async def test_duplicate_and_stray_wake_ups_are_harmless(
    production: Deployment, database: Database, tmp_path: Path
) -> None:
    kind = unique("dupes")
    assert production.amqp_url is not None
    with ExitStack() as stack:
        proc = stack.enter_context(worker(production, kind, tmp_path, "w"))
        connection = await aio_pika.connect(production.amqp_url)
        async with (
            connection,
            httpx.AsyncClient(
                base_url=production.url, headers=production.headers("producer"), timeout=30
            ) as http,
        ):
            channel = await connection.channel()
            exchange = await channel.get_exchange("jobnik")
            body = {
                "name": unique("dupes"),
                "data": {},
                "stages": [
                    {"type": kind, "data": {}, "tasks": [{"data": {"i": i}} for i in range(20)]}
                ],
            }
            job = (await http.post("/v1/jobs", json=body)).json()
            noise = [
                json.dumps({"stageType": kind}).encode(),  # a duplicate
                b"not json at all",  # stray bodies
                b"",
                json.dumps({"stageType": "someone-else"}).encode(),
            ]
            for i in range(200):
                await exchange.publish(
                    aio_pika.Message(noise[i % len(noise)]), routing_key=f"task.ready.{kind}"
                )

            async def job_done() -> bool:
                got = (await http.get(f"/v1/jobs/{job['id']}")).json()
                return got["status"] == "COMPLETED"

            await until(job_done, "the job to complete")
            queue = await channel.declare_queue(f"jobnik.tasks.{kind}", durable=True, passive=True)

            async def queue_empty() -> bool:
                declared = await channel.declare_queue(queue.name, durable=True, passive=True)
                return declared.declaration_result.message_count == 0

            await until(queue_empty, "every wake-up to be acknowledged")
            await queue.delete(if_unused=False, if_empty=False)
            assert proc.poll() is None, "the worker died of the noise"
    starts = starts_per_task(tmp_path)
    assert len(starts) == 20 and set(starts.values()) == {1}
    await assert_invariants(database)
