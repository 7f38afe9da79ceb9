"""What a scrape of /metrics costs as the database grows: the median time of a scrape
on an empty PostgreSQL database, then with a million tasks in it (900,000 in finished
jobs, 100,000 waiting in running ones, 1,000 of them claimed), over ten stage types.

    uv run python scripts/bench_scrape.py [--tasks 1000000] [--scrapes 50]

The scrape reads through indexes and small tables only (manager/observe/state.py), so
its cost should not grow with the tables: the figure to watch is the ratio.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from datetime import UTC, datetime

import httpx
from bench_rows import (
    TRACEPARENT,
    add_job_and_stage,
    bench_args,
    fresh_database,
    get_times,
    manager_client,
)
from sqlalchemy import text

from jobnik_manager.db.engine import Database

BASE = "postgresql+asyncpg://postgres@127.0.0.1:5432"
NAME = "jobnik_bench_scrape"
TYPES = [f"scrape-{i}" for i in range(10)]
_TASKS = text(
    "INSERT INTO tasks (id, stage_id, job_id, stage_type, priority_rank, claimable, status,"
    " attempts, max_attempts, data, user_metadata, traceparent, creation_time, update_time,"
    " start_time, end_time)"
    " SELECT gen_random_uuid(), :stage, :job, :type, 2, :claimable, :status, 0, 1, '{}', '{}',"
    " :tp, :now, :now, :ended, :ended FROM generate_series(1, :n)"
)


async def fill(db: Database, tasks: int) -> None:
    now = datetime.now(UTC)
    finished, waiting = tasks * 9 // 10, tasks // 10
    for done, total, jobs in ((True, finished, 1000), (False, waiting, 100)):
        jobs = min(jobs, total // 10)
        per_job = total // jobs
        for i in range(jobs):
            async with db.sessions() as s, s.begin():
                job_id, stage_id = await add_job_and_stage(
                    s,
                    name="scrape",
                    stage_type=TYPES[i % len(TYPES)],
                    tasks=per_job,
                    finished=done,
                    now=now,
                )
                await s.execute(
                    _TASKS,
                    {
                        "stage": stage_id,
                        "job": job_id,
                        "type": TYPES[i % len(TYPES)],
                        "claimable": not done,
                        "status": "COMPLETED" if done else "PENDING",
                        "tp": TRACEPARENT,
                        "now": now,
                        "ended": now if done else None,
                        "n": per_job,
                    },
                )
    async with db.engine.connect() as conn:
        await conn.execute(text("COMMIT"))
        await conn.execute(text("VACUUM ANALYZE"))


async def claim_some(client: httpx.AsyncClient) -> None:
    """Some tasks of each type running, with leases."""
    for stage_type in TYPES:
        for _ in range(100):
            claimed = await client.patch(f"/v1/stages/{stage_type}/tasks/dequeue")
            assert claimed.status_code == 200, claimed.text


async def scrapes(client: httpx.AsyncClient, n: int) -> float:
    """Median milliseconds of `n` scrapes (after one to warm up)."""
    await client.get("/metrics")
    return statistics.median(await get_times(client, "/metrics", n))


async def main() -> None:
    args = bench_args(__doc__, tasks=1_000_000, scrapes=50)
    db = Database(await fresh_database(NAME))
    async with manager_client(db) as client:
        # The same work first on a database emptied after it: both scrapes then answer
        # the same series of this process's counters, and differ only by the tables.
        await fill(db, len(TYPES) * 1000)
        await claim_some(client)
        async with db.engine.connect() as conn:
            await conn.execute(text("DELETE FROM jobs"))
            await conn.execute(text("COMMIT"))
            await conn.execute(text("VACUUM ANALYZE"))
        empty = await scrapes(client, args.scrapes)
        print(f"empty database: scrape {empty:.2f} ms (median of {args.scrapes})")
        began = time.perf_counter()
        await fill(db, args.tasks)
        print(f"inserted {args.tasks:,} tasks in {time.perf_counter() - began:.0f} s")
        await claim_some(client)
        full = await scrapes(client, args.scrapes)
        print(f"{args.tasks:,} tasks: scrape {full:.2f} ms (median of {args.scrapes})")
        print(f"ratio: {full / empty:.2f}x")
        sample = (await client.get("/metrics")).text
        ready = sum(
            float(line.rsplit(" ", 1)[1])
            for line in sample.splitlines()
            if line.startswith("jobnik_tasks_ready{")
        )
        print(f"the scrape saw {ready:,.0f} tasks waiting")
    await db.dispose()


if __name__ == "__main__":
    asyncio.run(main())
