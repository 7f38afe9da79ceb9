"""What the dashboard's pages cost on a full database: 100,000 jobs (each with a stage,
in every status and priority) and a million tasks in PostgreSQL, then the API calls each
page makes, timed: the jobs list's first page (newest first, as the page asks) with and
without filters and by id prefix; a job's page on a job of 100,000 tasks, half of them
run (the job with its stages, a page of a stage's tasks, its history's latest page, the
timeline's 1,000 latest moves); the stage types, the flow of that job's stage type
(its 200,000 moves all within the hour) and the workers. Each must answer within
300 ms; the script exits 1 when one does not.

    uv run python scripts/bench_dashboard.py [--jobs 100000] [--tasks 1000000] [--runs 20]
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


# Tasks for those stages, as many to each, in their stage's final status or PENDING.
_FILL_TASKS = text(
    "INSERT INTO tasks (id, stage_id, job_id, stage_type, priority_rank, claimable, status,"
    " attempts, max_attempts, data, user_metadata, traceparent, creation_time, update_time)"
    " SELECT gen_random_uuid(), s.id, s.job_id, s.type, 2, false,"
    "  CASE WHEN s.status IN ('COMPLETED', 'FAILED', 'ABORTED') THEN s.status"
    "   ELSE 'PENDING' END, 0, 3, '{}', '{}', :tp, s.creation_time, s.creation_time"
    " FROM stages s CROSS JOIN generate_series(1, :each) WHERE s.type = 'bench-type'"
)
SEEN_TASKS = 99_900  # with the 100 of its second stage, the most one call may create


async def fill(db: Database, jobs: int, tasks: int) -> None:
    async with db.sessions() as s, s.begin():
        await s.execute(
            _FILL,
            {"n": jobs, "tp": TRACEPARENT, "statuses": STATUSES, "priorities": PRIORITIES},
        )
        each = max((tasks - SEEN_TASKS) // jobs, 0)
        if each:
            await s.execute(_FILL_TASKS, {"each": each, "tp": TRACEPARENT})
    async with db.engine.connect() as conn:
        await conn.execute(text("COMMIT"))
        await conn.execute(text("VACUUM ANALYZE"))


async def a_job_seen(client: httpx.AsyncClient) -> tuple[str, str]:
    """A job made over the API, as the dashboard would show one: two stages, 100,000
    tasks in the first, half of them run by two named workers in batches (so it has a
    long history). Its and its first stage's ids."""
    tasks = [{"data": {"i": i}} for i in range(SEEN_TASKS)]
    made = await client.post(
        "/v1/jobs?should_return_tasks=false",
        json=job_body(
            "bench-seen",
            {"type": "bench-seen-1", "tasks": tasks},
            {"type": "bench-seen-2", "startAsWaiting": True, "tasks": tasks[:100]},
        ),
    )
    assert made.status_code == 201, made.text
    job = made.json()
    for n in range(SEEN_TASKS // 2 // 100):  # a hundred a claim, as many as one may take
        claim = {"stageTypes": ["bench-seen-1"], "limit": 100, "worker": f"seen-{n % 2}"}
        claimed = (await client.post("/v1/tasks/claim", json=claim)).json()["items"]
        reports = [
            {"taskId": t["id"], "leaseId": t["leaseId"], "status": "COMPLETED"} for t in claimed
        ]
        done = await client.post("/v1/tasks/reports", json={"reports": reports})
        assert done.status_code == 200, done.text
    return job["id"], job["stages"][0]["id"]


async def timed(client: httpx.AsyncClient, url: str, runs: int) -> tuple[float, float, Any]:
    """Median and slowest milliseconds of `runs` calls (after one to warm up)."""
    first = await client.get(url)
    assert first.status_code == 200, f"{url}: {first.status_code} {first.text}"
    took = await get_times(client, url, runs)
    return statistics.median(took), max(took), first.json()


async def main() -> int:
    args = bench_args(__doc__, jobs=100_000, tasks=1_000_000, runs=20)
    db = Database(await fresh_database(NAME))
    began = time.perf_counter()
    await fill(db, args.jobs, args.tasks)
    print(
        f"inserted {args.jobs:,} jobs, their stages and {args.tasks - SEEN_TASKS:,} tasks "
        f"in {time.perf_counter() - began:.1f} s"
    )
    slow = []
    async with manager_client(db) as client:
        began = time.perf_counter()
        job_id, stage_id = await a_job_seen(client)
        took = time.perf_counter() - began
        print(f"made a job of {SEEN_TASKS:,} tasks and ran half of them in {took:.1f} s")
        async with db.engine.connect() as conn:
            await conn.execute(text("COMMIT"))
            await conn.execute(text("ANALYZE"))
        newest = "&newest_first=true"
        calls = [
            ("jobs list, first page", f"/v1/jobs?page=1&page_size=20{newest}"),
            ("jobs list, oldest first", "/v1/jobs?page=1&page_size=20"),
            ("jobs list, id prefix", f"/v1/jobs?page=1&page_size=20&id_prefix={job_id[:6]}"),
            ("jobs list, status", f"/v1/jobs?page=1&page_size=20&status=IN_PROGRESS{newest}"),
            ("jobs list, priority", f"/v1/jobs?page=1&page_size=20&priority=HIGH{newest}"),
            ("jobs list, name", f"/v1/jobs?page=1&page_size=20&job_name=bench-7{newest}"),
            (
                "jobs list, all three",
                "/v1/jobs?page=1&page_size=20&status=FAILED&priority=VERY_HIGH&job_name=bench-10"
                + newest,
            ),
            ("job page: the job and stages", f"/v1/jobs/{job_id}?should_return_stages=true"),
            ("job page: a stage's tasks", f"/v1/stages/{stage_id}/tasks?page=1&page_size=20"),
            ("job page: its history", f"/v1/jobs/{job_id}/events?page=1&page_size=50{newest}"),
            (
                "job page: its timeline",
                f"/v1/jobs/{job_id}/events?page=1&page_size=1000{newest}",
            ),
            (
                "jobs list, part of a name",
                f"/v1/jobs?page=1&page_size=20&name_contains=ch-7{newest}",
            ),
            ("stage types", "/v1/stage-types"),
            ("a stage type's flow, an hour", "/v1/stage-types/bench-seen-1/flow"),
            ("a stage type's flow, a day", "/v1/stage-types/bench-seen-1/flow?minutes=1440"),
            ("workers", "/v1/workers"),
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
