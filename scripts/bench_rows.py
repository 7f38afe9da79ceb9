"""Rows the benchmarks insert straight into the database, past the API: a job with one
stage, to hold tasks that are claimable or finished long ago; and the manager they
time, served in-process on that database."""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from datetime import datetime
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import httpx
from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession

from jobnik_manager.app import create_app
from jobnik_manager.db import migrate
from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Job, Stage
from jobnik_manager.domain.summary import Summary
from jobnik_manager.settings import Settings

POSTGRES = "postgresql+asyncpg://postgres@127.0.0.1:5432"
TRACEPARENT = "00-" + "0" * 32 + "-" + "0" * 16 + "-01"


async def add_job_and_stage(
    s: AsyncSession, *, name: str, stage_type: str, tasks: int, finished: bool, now: datetime
) -> tuple[uuid.UUID, uuid.UUID]:
    """A job and its one stage of `stage_type`, counting `tasks` tasks: COMPLETED if
    `finished`, else PENDING (inserting the tasks is the caller's part). Their ids."""
    job_id, stage_id = uuid.uuid4(), uuid.uuid4()
    common: dict[str, Any] = {
        "status": "COMPLETED" if finished else "PENDING",
        "percentage": 100 if finished else 0,
        "data": {},
        "user_metadata": {},
        "traceparent": TRACEPARENT,
        "tracestate": None,
        "creation_time": now,
        "update_time": now,
    }
    if finished:  # a finished row has run: its start and end are the invariants' too
        common |= {"start_time": now, "end_time": now}
    await s.execute(insert(Job).values(id=job_id, name=name, priority="MEDIUM", **common))
    counts = Summary(completed=tasks) if finished else Summary(pending=tasks)
    await s.execute(
        insert(Stage).values(
            id=stage_id, job_id=job_id, type=stage_type, stage_order=1, **counts.counts(), **common
        )
    )
    return job_id, stage_id


def bench_args(doc: str, **counts: int) -> argparse.Namespace:
    """The command line of a benchmark that `doc` describes (its first paragraph is the
    help): a whole-number option `--NAME` for each of `counts`, by default its value."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    for name, default in counts.items():
        parser.add_argument(f"--{name}", type=int, default=default)
    return parser.parse_args()


async def fresh_database(name: str) -> str:
    """A PostgreSQL database of this name, dropped and made anew, at the latest revision."""
    conn = await asyncpg.connect("postgresql://postgres@127.0.0.1:5432/postgres")
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    url = f"{POSTGRES}/{name}"
    await asyncio.to_thread(migrate.upgrade, url)
    return url


def manager_client(db: Database) -> httpx.AsyncClient:
    """A client of the manager's app on `db` (without its maintenance), served in-process."""
    app = create_app(Settings(database_url=db.url, maintenance=False), database=db)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://manager")


async def get_times(client: httpx.AsyncClient, url: str, runs: int) -> list[float]:
    """Milliseconds each of `runs` GETs of `url` took; every one must answer 200."""
    took = []
    for _ in range(runs):
        began = time.perf_counter()
        response = await client.get(url)
        took.append((time.perf_counter() - began) * 1000)
        assert response.status_code == 200, response.text
    return took


def job_body(name: str, *stages: dict[str, object]) -> dict[str, object]:
    """A v1 create-job body: the job `name` with `stages` (each as the API takes a stage;
    an empty `data` unless it gives one)."""
    return {"name": name, "data": {}, "stages": [{"data": {}} | stage for stage in stages]}
