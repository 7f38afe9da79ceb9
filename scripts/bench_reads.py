"""What a read by key costs the manager: GET of one task, stage or job.

The reference SDK's worker reads the stage and the job of every task it runs, so these
reads are per-task work. This starts a real manager on a database of its own, creates a
job whose stage holds `--tasks` tasks, claims 16 of them and has them report progress,
and then, for each read, runs 16 keep-alive loops (`bench_http.Connection`) of the same
GET for `--seconds`, reporting per read the manager's CPU (from /proc), PostgreSQL's
backends' CPU, and the latency's p50 and p99. It does so twice on PostgreSQL: at once,
on a stage the planner has no statistics for, and after `ANALYZE`. Every answer is
checked (status 200, the progress the running tasks reported).

    uv run python scripts/bench_reads.py                  # 100,000 tasks in the stage
    uv run python scripts/bench_reads.py --tasks 1000000 --seconds 10
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
import uuid
from typing import Any

import asyncpg
import httpx
import orjson
from bench_drain import backends_cpu, libpq_url, process_cpu_seconds, served
from bench_http import Connection

PG = "postgresql+asyncpg://postgres@127.0.0.1:5432/jobnik_reads_{pid}"
LOOPS = 16


async def setup(base: str, tasks: int) -> dict[str, str]:
    """A job of one stage of `tasks` tasks, 16 of them running with progress reported."""
    stage_type = f"reads-{uuid.uuid4().hex[:6]}"
    body = {
        "name": "bench-reads",
        "data": {},
        "stages": [{"type": stage_type, "data": {}, "tasks": [{"data": {}}] * tasks}],
    }
    async with httpx.AsyncClient(base_url=base, timeout=900) as http:
        made = await http.post("/v1/jobs", json=body, params={"should_return_tasks": "false"})
        assert made.status_code == 201, made.text
        job = made.json()
        task_id = ""
        for _i in range(LOOPS):
            claimed = await http.patch(
                f"/v1/stages/{stage_type}/tasks/dequeue", params={"lease_seconds": 3600}
            )
            assert claimed.status_code == 200, claimed.text
            task = claimed.json()
            task_id = task["id"]
            beat = await http.post(
                f"/v1/tasks/{task_id}/heartbeat",
                json={"leaseId": task["leaseId"], "progress": 50},
            )
            assert beat.status_code == 200, beat.text
    return {
        "task": f"/v1/tasks/{task_id}",
        "stage": f"/v1/stages/{job['stages'][0]['id']}",
        "job": f"/v1/jobs/{job['id']}",
        # Nothing completed; 16 tasks at 50 each, over every task of the stage.
        "expected_progress": str(50 * LOOPS / tasks),
    }


async def measure(
    base: str, url: str, pid: int, path: str, seconds: float, check: Any
) -> dict[str, float]:
    latencies: list[float] = []
    stop = time.monotonic() + seconds

    async def loop(http: Connection) -> None:
        while time.monotonic() < stop:
            began = time.perf_counter()
            status, body = await http.request("GET", path)
            latencies.append(time.perf_counter() - began)
            if status != 200:
                raise RuntimeError(f"GET {path} answered {status}: {body[:300]!r}")
            check(orjson.loads(body))

    connections = [await Connection.open(base) for _ in range(LOOPS)]
    cpu, db_cpu = process_cpu_seconds(pid), await backends_cpu(url)
    try:
        await asyncio.gather(*(loop(http) for http in connections))
    finally:
        for http in connections:
            http.close()
    cpu, db_cpu = process_cpu_seconds(pid) - cpu, await backends_cpu(url) - db_cpu
    n = len(latencies)
    latencies.sort()
    return {
        "reads": n,
        "per_s": n / seconds,
        "manager_cpu_ms": cpu * 1000 / n,
        "postgres_cpu_ms": db_cpu * 1000 / n,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[int(n * 0.99)] * 1000,
    }


async def main(args: argparse.Namespace) -> None:
    url = PG.format(pid=os.getpid())
    async with served(url) as manager:
        paths = await setup(manager.base, args.tasks)
        progress = float(paths["expected_progress"])

        def stage_check(body: dict[str, Any]) -> None:
            assert abs(body["progress"] - progress) < 1e-6, body["progress"]

        checks = {"task": lambda b: None, "stage": stage_check, "job": stage_check}
        print(
            f"GET by key, {LOOPS} loops, {args.seconds:.0f} s each; a stage of "
            f"{args.tasks:,} tasks, {LOOPS} running with progress reported"
        )
        print(
            f"  {'phase':10} {'read':6} {'reads/s':>8} {'mgr CPU ms':>11} "
            f"{'PG CPU ms':>10} {'p50 ms':>7} {'p99 ms':>7}"
        )
        for phase in ("no stats", "analyzed"):
            if phase == "analyzed":
                conn = await asyncpg.connect(libpq_url(url))
                try:
                    await conn.execute("ANALYZE")
                finally:
                    await conn.close()
            for read in ("task", "stage", "job"):
                r = await measure(
                    manager.base, url, manager.proc.pid, paths[read], args.seconds, checks[read]
                )
                print(
                    f"  {phase:10} {read:6} {r['per_s']:8,.0f} {r['manager_cpu_ms']:11.3f} "
                    f"{r['postgres_cpu_ms']:10.3f} {r['p50_ms']:7.2f} {r['p99_ms']:7.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=5.0)
    asyncio.run(main(parser.parse_args()))
