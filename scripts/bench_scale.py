"""Scale: a million-task job, and a thousand idle workers.

Two scenarios, each on a real manager process and a PostgreSQL database of its own
(dropped at the end unless --keep):

  million  A job of `--tasks` (1,000,000) no-op tasks, created in calls of up to
           `--chunk` (100,000): the job with its stage and the first chunk, then the
           rest added to the stage. Then `--workers` (8) worker processes, each the
           SDK's `Worker` (concurrency 16), drain it. Printed: the creation's rate, the
           drain's completions per second in every tenth of the drain (from the event
           log) and the last tenth's rate over the first's (flat is near 1), the
           database's size, the manager's and the workers' peak memory. Every task is
           checked COMPLETED with exactly one COMPLETED event, and DESIGN.md's
           invariants are checked at the end.
  retention  `--history` (1,000,000) finished tasks in jobs of `--job-tasks` (1,000),
           with their events; then a drain of `--drain-tasks` (20,000) by the batch API
           (4 loops of claim(100) + report_many), alone and again while retention
           deletes the whole history at the manager's pace (`--rest-per-work 0`: at full
           speed), after a warm-up drain. Printed: both drains' rates, their ratio (the
           claim's slowdown while retention runs), and retention's own pace.
  idle     `--idle-workers` (1,000) SDK `Worker`s across `--types` (100) stage types,
           in `--workers` (8) processes, long-polling with nothing to do. Printed: the
           manager's and PostgreSQL's CPU over `--seconds` (60) of idleness, as a share
           of one core; then `--probes` (200) tasks created one at a time, each in a job
           of its own on a random stage type, and the time from each task's creation to
           its handler's start (p50, p99, max).

    uv run python scripts/bench_scale.py million
    uv run python scripts/bench_scale.py million --tasks 200000 --chunk 50000
    uv run python scripts/bench_scale.py retention --history 1000000
    uv run python scripts/bench_scale.py idle --idle-workers 1000 --types 100
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from bench_drain import (
    add_history,
    backends_cpu,
    check_invariants,
    create_job,
    database,
    drain_batch,
    libpq_url,
    process_cpu_seconds,
    served,
    verify_drain,
)
from bench_rows import job_body

from jobnik_sdk import JobnikClient, NewStage, NewTask, TaskContext, Worker

PG = "postgresql+asyncpg://postgres@127.0.0.1:5432/jobnik_scale_{pid}"
SELF = Path(__file__).resolve()


def rss_mib(pid: int) -> float:
    """Resident memory of a process, MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def database_mib(url: str) -> float:
    conn = await asyncpg.connect(libpq_url(url))
    try:
        size: int = await conn.fetchval("SELECT pg_database_size(current_database())")
    finally:
        await conn.close()
    return size / 2**20


def tasks_body(n: int) -> list[dict[str, Any]]:
    return [{"data": {}}] * n


# ---- million ------------------------------------------------------------------------


async def create_million(
    base: str, stage_type: str, total: int, chunk: int
) -> tuple[str, str, float]:
    """The job, its stage (waiting) with the first chunk, then the rest in chunks; the
    job's and the stage's ids and the seconds the calls took."""
    began = time.perf_counter()
    async with httpx.AsyncClient(base_url=base, timeout=900) as http:
        first = min(chunk, total)
        made = await http.post(
            "/v1/jobs",
            # Waiting: nothing is claimed until every chunk is in and it is approved.
            json=job_body(
                "bench-scale",
                {"type": stage_type, "startAsWaiting": True, "tasks": tasks_body(first)},
            ),
            params={"should_return_tasks": "false"},
        )
        if made.status_code != 201:
            raise RuntimeError(f"create: {made.status_code} {made.text[:300]}")
        job = made.json()
        stage_id = job["stages"][0]["id"]
        added = first
        while added < total:
            n = min(chunk, total - added)
            more = await http.post(f"/v1/stages/{stage_id}/tasks", json=tasks_body(n))
            if more.status_code != 201:
                raise RuntimeError(f"add tasks: {more.status_code} {more.text[:300]}")
            added += n
            print(f"  created {added:,} of {total:,}", flush=True)
    return job["id"], stage_id, time.perf_counter() - began


async def approve(base: str, stage_id: str) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        done = await http.put(f"/v1/stages/{stage_id}/status", json={"status": "PENDING"})
        if done.status_code != 200:
            raise RuntimeError(f"approve: {done.status_code} {done.text[:300]}")


async def completions_by_tenth(url: str, job_id: str, total: int) -> list[float]:
    """Completions per second in each tenth of the drain, by the order of completion."""
    conn = await asyncpg.connect(libpq_url(url))
    try:
        times = [
            r["time"]
            for r in await conn.fetch(
                "SELECT time FROM events WHERE job_id = $1 AND entity = 'TASK' "
                "AND to_status = 'COMPLETED' ORDER BY time",
                uuid.UUID(job_id),
            )
        ]
    finally:
        await conn.close()
    rates = []
    step = len(times) // 10
    for i in range(10):
        part = times[i * step : (i + 1) * step + 1]
        span = (part[-1] - part[0]).total_seconds()
        rates.append((len(part) - 1) / span if span > 0 else float("inf"))
    return rates


async def million(args: argparse.Namespace) -> None:
    url = PG.format(pid=os.getpid())
    workers: list[subprocess.Popen[bytes]] = []

    async def start(*argv: str) -> subprocess.Popen[bytes]:
        return await asyncio.to_thread(subprocess.Popen, argv)

    async with served(url, keep=args.keep) as manager:
        try:
            empty_mib = await database_mib(url)
            stage_type = f"scale-{uuid.uuid4().hex[:6]}"
            print(f"million: {args.tasks:,} tasks in calls of {args.chunk:,}", flush=True)
            job_id, stage_id, create_s = await create_million(
                manager.base, stage_type, args.tasks, args.chunk
            )
            print(
                f"  created in {create_s:.1f} s: {args.tasks / create_s:,.0f} tasks/s", flush=True
            )
            spec = json.dumps({"base": manager.base, "type": stage_type, "job": job_id})
            for _ in range(args.workers):
                workers.append(await start(sys.executable, str(SELF), "drain-worker", spec))
            await asyncio.sleep(5)  # every worker up and long-polling
            began = time.perf_counter()
            await approve(manager.base, stage_id)
            peak_manager = peak_workers = 0.0
            async with JobnikClient(manager.base) as client:
                while True:
                    job = await client.get_job(job_id)
                    peak_manager = max(peak_manager, rss_mib(manager.proc.pid))
                    peak_workers = max(
                        peak_workers,
                        sum(rss_mib(w.pid) for w in workers if w.poll() is None),
                    )
                    if job.status.value in ("COMPLETED", "FAILED", "ABORTED"):
                        break
                    if any(w.poll() not in (None, 0) for w in workers):
                        raise RuntimeError("a worker process failed")
                    await asyncio.sleep(2)
            drained_s = time.perf_counter() - began
            for w in workers:
                w.wait(60)
            facts = await verify_drain(url, uuid.UUID(job_id), args.tasks)
            rates = await completions_by_tenth(url, job_id, args.tasks)
            full_mib = await database_mib(url)
            print(
                f"  drained by {args.workers} worker processes in {facts.span_s:.1f} s "
                f"(wall {drained_s:.1f} s): {args.tasks / facts.span_s:,.0f} tasks/s",
                flush=True,
            )
            print("  completions/s by tenth: " + ", ".join(f"{r:,.0f}" for r in rates))
            print(f"  last tenth / first tenth: {rates[-1] / rates[0]:.2f}")
            print(f"  database: {empty_mib:,.0f} MiB empty, {full_mib:,.0f} MiB after")
            print(
                f"  peak memory: manager {peak_manager:,.0f} MiB, workers {peak_workers:,.0f} MiB"
            )
            began = time.perf_counter()
            await check_invariants(url)
            print(f"  invariants hold (checked in {time.perf_counter() - began:.0f} s)")
        finally:
            for w in workers:
                if w.poll() is None:
                    w.kill()


async def drain_worker(spec: dict[str, Any]) -> None:
    """A worker process of `million`: the SDK Worker until the job is final."""

    async def noop(data: dict[str, Any], ctx: TaskContext) -> None:
        return None

    worker: Worker[dict[str, Any]] = Worker(
        spec["base"], stage_types=spec["type"], handler=noop, concurrency=16, handle_signals=False
    )
    async with JobnikClient(spec["base"]) as client, worker:
        while (await client.get_job(spec["job"])).status.value not in ("COMPLETED", "FAILED"):  # noqa: ASYNC110
            await asyncio.sleep(1)


# ---- retention ---------------------------------------------------------------------


async def timed_drain(base: str, url: str, n: int) -> float:
    """Tasks per second of a batch-API drain of a new job of `n` tasks."""
    stage_type = f"ret-{uuid.uuid4().hex[:6]}"
    job_id, _ = await create_job(base, stage_type, n)
    spec = {
        "base": base,
        "stage_type": stage_type,
        "loops": 4,
        "batch_size": 100,
        "report_tasks": False,
    }
    began = time.perf_counter()
    done = await drain_batch(spec)
    elapsed = time.perf_counter() - began
    facts = await verify_drain(url, job_id, n)
    assert done == n, f"drained {done:,} of {n:,}"
    return n / (facts.span_s or elapsed)


async def retention(args: argparse.Namespace) -> None:
    from jobnik_manager.maintenance.retention import REST_PER_WORK, delete_finished_before

    url = PG.format(pid=os.getpid())
    # The manager's own pace (its maintenance loop's) unless told otherwise; 0: full speed.
    rest = REST_PER_WORK if args.rest_per_work is None else args.rest_per_work
    async with served(url, keep=args.keep) as manager:
        jobs = max(1, args.history // args.job_tasks)
        print(f"retention: {jobs:,} finished jobs of {args.job_tasks:,} tasks", flush=True)
        took = await add_history(url, [f"old-{i}" for i in range(jobs)], args.history)
        print(f"  history added in {took:.0f} s ({await database_mib(url):,.0f} MiB)", flush=True)
        # The first drain on a new database warms what the later ones find warm.
        await timed_drain(manager.base, url, args.drain_tasks)
        alone = await timed_drain(manager.base, url, args.drain_tasks)
        print(f"  drain alone: {alone:,.0f} tasks/s (after a warm-up drain)", flush=True)

        async def delete_history() -> tuple[int, float]:
            began = time.perf_counter()
            async with database(url) as db:
                gone = await delete_finished_before(
                    db, datetime.now(UTC) + timedelta(days=1), rest_per_work=rest
                )
            return gone.tasks, time.perf_counter() - began

        deleting = asyncio.create_task(delete_history())
        await asyncio.sleep(1)  # under way
        during = await timed_drain(manager.base, url, args.drain_tasks)
        still_deleting = not deleting.done()
        tasks, seconds = await deleting
        print(
            f"  drain while retention deletes: {during:,.0f} tasks/s "
            f"({during / alone:.2f} of alone{'' if still_deleting else '; retention ended first'})"
        )
        print(
            f"  retention deleted {tasks:,} tasks in {seconds:.0f} s: {tasks / seconds:,.0f}/s"
            f" (resting {rest:g}x each batch's time)"
        )
        await check_invariants(url)
        print("  invariants hold")


# ---- idle ---------------------------------------------------------------------------


async def idle_workers(spec: dict[str, Any]) -> None:
    """A process of `idle`: Workers of the stage types given, long-polling; each
    handler start is printed as `started <task id> <epoch seconds>`; ends on stdin EOF."""

    async def handle(data: dict[str, Any], ctx: TaskContext) -> None:
        print(f"started {ctx.task.id} {time.time():.6f}", flush=True)

    workers: list[Worker[dict[str, Any]]] = [
        Worker(spec["base"], stage_types=t, handler=handle, concurrency=1, handle_signals=False)
        for t in spec["types"]
    ]
    async with contextlib.AsyncExitStack() as stack:
        for w in workers:
            await stack.enter_async_context(w)
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.read)


async def idle(args: argparse.Namespace) -> None:
    url = PG.format(pid=os.getpid())
    settings = {"JOBNIK_AMQP_URL": args.amqp_url} if args.amqp_url else {}
    procs: list[asyncio.subprocess.Process] = []
    started: dict[str, float] = {}
    async with served(url, settings, keep=args.keep) as manager:
        try:
            types = [f"idle-{i:03d}" for i in range(args.types)]
            per_process: list[list[str]] = [[] for _ in range(args.workers)]
            for i in range(args.idle_workers):
                per_process[i % args.workers].append(types[i % args.types])

            async def read(proc: asyncio.subprocess.Process) -> None:
                assert proc.stdout
                async for raw in proc.stdout:
                    line = raw.decode().split()
                    if line and line[0] == "started":
                        started[line[1]] = float(line[2])

            readers = []
            for chunk in per_process:
                proc = await asyncio.create_subprocess_exec(
                    sys.executable,
                    str(SELF),
                    "idle-workers",
                    json.dumps({"base": manager.base, "types": chunk}),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                )
                assert proc.stdout
                line = await asyncio.wait_for(proc.stdout.readline(), 300)
                if line.strip() != b"ready":
                    raise RuntimeError(f"an idle worker process did not start: {line!r}")
                procs.append(proc)
                readers.append(asyncio.create_task(read(proc)))
            print(
                f"idle: {args.idle_workers:,} workers over {args.types} stage types in "
                f"{args.workers} processes, long-polling"
                + (" (RabbitMQ wake-ups)" if args.amqp_url else ""),
                flush=True,
            )
            await asyncio.sleep(5)  # settled into their long polls
            cpu, db_cpu = process_cpu_seconds(manager.proc.pid), await backends_cpu(url)
            await asyncio.sleep(args.seconds)
            cpu = process_cpu_seconds(manager.proc.pid) - cpu
            db_cpu = await backends_cpu(url) - db_cpu
            share = 100 * (cpu + db_cpu) / args.seconds
            print(
                f"  idle for {args.seconds:.0f} s: manager {100 * cpu / args.seconds:.1f}% "
                f"+ PostgreSQL {100 * db_cpu / args.seconds:.1f}% = {share:.1f}% of one core",
                flush=True,
            )
            created: dict[str, float] = {}
            async with JobnikClient(manager.base) as client:
                for i in range(args.probes):
                    job = await client.create_job(
                        "probe",
                        stages=[_stage(random.choice(types), i)],
                    )
                    assert job.stages and job.stages[0].tasks
                    task = job.stages[0].tasks[0]
                    created[str(task.id)] = _epoch(task.creation_time)
                    await asyncio.sleep(random.uniform(0.02, 0.12))
                deadline = time.monotonic() + 60
                while len([t for t in created if t in started]) < len(created):
                    if time.monotonic() > deadline:
                        raise RuntimeError("not every probe reached a handler within 60 s")
                    await asyncio.sleep(0.1)
                # Each task's claim began at its startTime (the manager's clock): the
                # legs before and after it say which side a slow probe waited on.
                claimed: dict[str, float] = {}
                for t in created:
                    start = (await client.get_task(t)).start_time
                    assert start is not None, f"task {t} ran unclaimed"
                    claimed[t] = _epoch(start)
            legs = {
                "creation to handler start": [started[t] - created[t] for t in created],
                "  creation to claim (startTime)": [claimed[t] - created[t] for t in created],
                "  claim to handler start": [started[t] - claimed[t] for t in created],
            }
            for name, seconds in legs.items():
                ms = sorted(1000 * s for s in seconds)
                q = statistics.quantiles(ms, n=100, method="inclusive")
                print(
                    f"  {name} over {len(ms)} probes: p50 {statistics.median(ms):.1f} ms, "
                    f"p99 {q[98]:.1f} ms, max {ms[-1]:.1f} ms",
                    flush=True,
                )
            for r in readers:
                r.cancel()
        finally:
            for proc in procs:
                if proc.returncode is None:
                    proc.kill()


def _stage(stage_type: str, i: int) -> NewStage:
    return NewStage(type=stage_type, tasks=[NewTask(data={"i": i})])


def _epoch(value: datetime) -> float:
    return value.timestamp()


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] in ("drain-worker", "idle-workers"):
        role = drain_worker if sys.argv[1] == "drain-worker" else idle_workers
        asyncio.run(role(json.loads(sys.argv[2])))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenario", choices=("million", "retention", "idle"))
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=8, help="worker processes")
    parser.add_argument("--history", type=int, default=1_000_000)
    parser.add_argument("--job-tasks", type=int, default=1000)
    parser.add_argument("--drain-tasks", type=int, default=20_000)
    parser.add_argument("--idle-workers", type=int, default=1000)
    parser.add_argument("--types", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--amqp-url", default=None, help="RabbitMQ wake-ups for `idle`")
    parser.add_argument(
        "--rest-per-work",
        type=float,
        default=None,
        help="`retention`: rest after each batch, times its time (the manager's unless given)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the database")
    args = parser.parse_args()
    scenarios = {"million": million, "retention": retention, "idle": idle}
    asyncio.run(scenarios[args.scenario](args))


if __name__ == "__main__":
    main()
