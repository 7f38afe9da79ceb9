"""What the dashboard's pages cost on a full database: 100,000 jobs (each with a stage,
in every status and priority) in PostgreSQL, then the API calls each page makes, timed:
the jobs list's first page with and without filters, a job's page (the job with its
stages, a page of a stage's tasks, a page of its history) and the stage types. Each must
answer within 300 ms; the script exits 1 when one does not.

    uv run python scripts/bench_dashboard.py [--jobs 100000] [--runs 20]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from typing import Any

import httpx
from bench_rows import (
    TRACEPARENT,
    bench_args,
    fresh_database,
    get_times,
    job_body,
    manager_client,
)
from sqlalchemy import text

from jobnik_manager.db.engine import Database
from jobnik_manager.domain.summary import COUNTERS

BASE = "postgresql+asyncpg://postgres@127.0.0.1:5432"
NAME = "jobnik_bench_dashboard"
LIMIT_MS = 300.0
STATUSES = ["PENDING", "IN_PROGRESS", "PAUSED", "COMPLETED", "FAILED", "ABORTED"]
PRIORITIES = ["VERY_HIGH", "HIGH", "MEDIUM", "LOW", "VERY_LOW"]
# Jobs and their one stage each, straight into the tables, in one statement: statuses and
# priorities in turn, a thousand names, a second apart in creation time.
_FILL = text(
    "WITH made AS ("
    " INSERT INTO jobs (id, name, data, user_metadata, priority, status, percentage,"
    "  traceparent, creation_time, update_time)"
    " SELECT gen_random_uuid(), 'bench-' || (i % 1000),"
    "  '{{}}', '{{}}', (CAST(:priorities AS text[]))[1 + i % 5],"
    "  (CAST(:statuses AS text[]))[1 + i % 6],"
    "  CASE WHEN i % 6 = 3 THEN 100 ELSE 0 END, :tp,"
    "  now() - make_interval(secs => :n - i), now() - make_interval(secs => :n - i)"
    " FROM generate_series(1, :n) AS i"
    " RETURNING id, status, creation_time)"
    " INSERT INTO stages (id, job_id, type, stage_order, data, user_metadata, status,"
    "  percentage, traceparent, creation_time, update_time, {counters})"
    " SELECT gen_random_uuid(), id, 'bench-type', 1, '{{}}', '{{}}',"
    "  CASE WHEN status = 'PAUSED' THEN 'PENDING' ELSE status END,"
    "  CASE WHEN status = 'COMPLETED' THEN 100 ELSE 0 END, :tp, creation_time, creation_time,"
    "  {zeros}"
    " FROM made".format(counters=", ".join(COUNTERS), zeros=", ".join("0" for _ in COUNTERS))
)


async def fill(db: Database, jobs: int) -> None:
    async with db.sessions() as s, s.begin():
        await s.execute(
            _FILL,
            {"n": jobs, "tp": TRACEPARENT, "statuses": STATUSES, "priorities": PRIORITIES},
        )
    async with db.engine.connect() as conn:
        await conn.execute(text("COMMIT"))
        await conn.execute(text("VACUUM ANALYZE"))


async def a_job_seen(client: httpx.AsyncClient) -> tuple[str, str]:
    """A job made over the API, as the dashboard would show one: two stages, a hundred
    tasks in the first, half of them done (so it has a history). Its and its first
    stage's ids."""
    tasks = [{"data": {"i": i}} for i in range(100)]
    made = await client.post(
        "/v1/jobs",
        json=job_body(
            "bench-seen",
            {"type": "bench-seen-1", "tasks": tasks},
            {"type": "bench-seen-2", "startAsWaiting": True, "tasks": tasks},
        ),
    )
    assert made.status_code == 201, made.text
    job = made.json()
    for _ in range(50):
        claimed = (await client.patch("/v1/stages/bench-seen-1/tasks/dequeue")).json()
        done = await client.put(
            f"/v1/tasks/{claimed['id']}/status",
            json={"status": "COMPLETED", "leaseId": claimed["leaseId"]},
        )
        assert done.status_code == 200, done.text
    return job["id"], job["stages"][0]["id"]


async def timed(client: httpx.AsyncClient, url: str, runs: int) -> tuple[float, float, Any]:
    """Median and slowest milliseconds of `runs` calls (after one to warm up)."""
    first = await client.get(url)
    assert first.status_code == 200, f"{url}: {first.status_code} {first.text}"
    took = await get_times(client, url, runs)
    return statistics.median(took), max(took), first.json()


async def main() -> int:
    args = bench_args(__doc__, jobs=100_000, runs=20)
    db = Database(await fresh_database(NAME))
    began = time.perf_counter()
    await fill(db, args.jobs)
    print(f"inserted {args.jobs:,} jobs and their stages in {time.perf_counter() - began:.1f} s")
    slow = []
    async with manager_client(db) as client:
        job_id, stage_id = await a_job_seen(client)
        calls = [
            ("jobs list, first page", "/v1/jobs?page=1&page_size=20"),
            ("jobs list, status", "/v1/jobs?page=1&page_size=20&status=IN_PROGRESS"),
            ("jobs list, priority", "/v1/jobs?page=1&page_size=20&priority=HIGH"),
            ("jobs list, name", "/v1/jobs?page=1&page_size=20&job_name=bench-7"),
            (
                "jobs list, all three",
                "/v1/jobs?page=1&page_size=20&status=FAILED&priority=VERY_HIGH&job_name=bench-10",
            ),
            ("job page: the job and stages", f"/v1/jobs/{job_id}?should_return_stages=true"),
            ("job page: a stage's tasks", f"/v1/stages/{stage_id}/tasks?page=1&page_size=20"),
            ("job page: its history", f"/v1/jobs/{job_id}/events?page=1&page_size=50"),
            ("stage types", "/v1/stage-types"),
        ]
        print(f"{'call':<32} {'median ms':>10} {'max ms':>8}  answered")
        for label, path in calls:
            median, worst, body = await timed(client, path, args.runs)
            total = body.get("total", "") if isinstance(body, dict) else ""
            said = f"total {total:,}" if isinstance(total, int) else ""
            flag = "" if worst <= LIMIT_MS else f"  OVER {LIMIT_MS:.0f} ms"
            print(f"{label:<32} {median:>10.1f} {worst:>8.1f}  {said}{flag}")
            if worst > LIMIT_MS:
                slow.append(label)
    await db.dispose()
    if slow:
        print(f"over {LIMIT_MS:.0f} ms: {', '.join(slow)}")
        return 1
    print(f"every call answered within {LIMIT_MS:.0f} ms ({args.runs} runs each)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
