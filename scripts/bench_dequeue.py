"""Dequeue cost against finished history.

Measures the median time of a claim (the dequeue transaction, and the full HTTP
endpoint in-process) on a database that holds only the tasks being claimed, then again
after 100,000 finished tasks of the same stage type have been added, and prints the
ratio. The claim reads a partial index of claimable tasks only, so the ratio should stay
near 1; the run fails (exit 1) above --max-ratio.

    uv run python scripts/bench_dequeue.py                       # PostgreSQL on 127.0.0.1
    uv run python scripts/bench_dequeue.py --url sqlite+aiosqlite:////tmp/bench.db
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import httpx
from bench_rows import TRACEPARENT, add_job_and_stage
from sqlalchemy import insert, text

from jobnik_manager.app import create_app
from jobnik_manager.db import migrate
from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Task
from jobnik_manager.services.claims import claim
from jobnik_manager.settings import Settings

STAGE_TYPE = "bench"
DEFAULT_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/jobnik_bench"


async def recreate(url: str) -> None:
    if url.startswith("sqlite"):
        await asyncio.to_thread(Path(url.split("///", 1)[1]).unlink, missing_ok=True)
        return
    base, _, name = url.replace("postgresql+asyncpg://", "postgresql://").rpartition("/")
    conn = await asyncpg.connect(f"{base}/postgres")
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


async def add_tasks(db: Database, n: int, *, finished: bool, jobs: int = 1) -> None:
    """Insert `n` tasks of STAGE_TYPE over `jobs` jobs: claimable, or COMPLETED history."""
    now = datetime.now(UTC)
    status = "COMPLETED" if finished else "PENDING"
    per_job = n // jobs
    async with db.sessions() as s, s.begin():
        for _ in range(jobs):
            job_id, stage_id = await add_job_and_stage(
                s, name="bench", stage_type=STAGE_TYPE, tasks=per_job, finished=finished, now=now
            )
            rows = [
                {
                    "id": uuid.uuid4(),
                    "stage_id": stage_id,
                    "job_id": job_id,
                    "stage_type": STAGE_TYPE,
                    "priority_rank": 2,
                    "claimable": not finished,
                    "status": status,
                    "attempts": 0,
                    "max_attempts": 1,
                    "tracestate": None,
                    "creation_time": now,
                    "update_time": now,
                    "start_time": now if finished else None,
                    "end_time": now if finished else None,
                    "data": {},
                    "user_metadata": {},
                    "traceparent": TRACEPARENT,
                }
                for _ in range(per_job)
            ]
            for i in range(0, len(rows), 5000):
                await s.execute(insert(Task), rows[i : i + 5000])
    if not db.is_sqlite:
        async with db.engine.connect() as conn:
            await conn.execute(text("COMMIT"))
            await conn.execute(text("ANALYZE"))


async def measure(db: Database, claims: int) -> tuple[float, float]:
    """Median ms of `claims` dequeues: the service's claim, then the HTTP endpoint."""
    service_ms = []
    for _ in range(claims):
        t0 = time.perf_counter()
        tasks = (await claim(db, [STAGE_TYPE])).rows
        service_ms.append((time.perf_counter() - t0) * 1000)
        assert tasks, "ran out of claimable tasks"
    app = create_app(Settings(database_url=db.url), database=db)
    http_ms = []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://m") as c:
        for _ in range(claims):
            t0 = time.perf_counter()
            r = await c.patch(f"/v1/stages/{STAGE_TYPE}/tasks/dequeue")
            http_ms.append((time.perf_counter() - t0) * 1000)
            assert r.status_code == 200, r.text
    return statistics.median(service_ms), statistics.median(http_ms)


async def run(url: str, history: int, claims: int, max_ratio: float) -> int:
    await recreate(url)
    await asyncio.to_thread(migrate.upgrade, url)
    db = Database(url)
    try:
        await add_tasks(db, 2 * claims + 200, finished=False)
        await measure(db, 50)  # warm-up: connections, caches, plans
        empty = await measure(db, claims)
        started = time.perf_counter()
        await add_tasks(db, history, finished=True, jobs=100)
        print(f"added {history:,} finished tasks in {time.perf_counter() - started:.1f} s")
        await add_tasks(db, 2 * claims + 200, finished=False)
        await measure(db, 50)
        full = await measure(db, claims)
    finally:
        await db.dispose()
    backend = "SQLite" if url.startswith("sqlite") else "PostgreSQL"
    print(f"{backend}: median of {claims} claims each")
    print(f"  {'':28}{'dequeue tx':>12}{'HTTP':>10}")
    print(f"  {'empty database':28}{empty[0]:>10.2f}ms{empty[1]:>8.2f}ms")
    print(f"  {f'{history:,} finished tasks':28}{full[0]:>10.2f}ms{full[1]:>8.2f}ms")
    ratio = full[0] / empty[0]
    print(f"  ratio (dequeue tx): {ratio:.2f}x   ratio (HTTP): {full[1] / empty[1]:.2f}x")
    return 0 if ratio <= max_ratio else 1


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--url", default=DEFAULT_URL, help="database to create and fill (dropped first!)"
    )
    parser.add_argument("--history", type=int, default=100_000)
    parser.add_argument("--claims", type=int, default=500)
    parser.add_argument("--max-ratio", type=float, default=1.5)
    args = parser.parse_args()
    sys.exit(asyncio.run(run(args.url, args.history, args.claims, args.max_ratio)))


if __name__ == "__main__":
    main()
