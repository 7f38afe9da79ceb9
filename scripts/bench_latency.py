"""Dispatch latency: from a task's creation to its handler starting.

Starts a real manager process on PostgreSQL per mode, then feeds tasks one at a time
(with idle gaps, as real work trickles in) from a producer in a process of its own
(`--same-process`: from the worker's own event loop) to each mode:
  * push: a Worker woken over RabbitMQ (`amqp_url`, 30 s safety poll), the manager's
    outbox relay publishing the wake-ups,
  * poll: a Worker polling only (the SDK's jittered backoff; long-poll claims turned
    off), the manager without a broker, and
  * longpoll: a Worker as it comes (it long-polls its claims), the manager without a
    broker: a deployment without RabbitMQ,
and prints p50/p95/p99/max of `handler start - task creationTime`. The creation time
is taken by the manager at the start of the creating transaction, so the figures
include the commit itself. Each is then split at the task's startTime, taken by the
manager as its claim's statement is sent: creation to claim (the create's transaction,
its commit, the wake-up) and claim to handler (the claim, its answer, the Worker).

    uv run python scripts/bench_latency.py                 # 500 tasks per mode
    uv run python scripts/bench_latency.py --tasks 1000 --gap-ms 20-200
    uv run python scripts/bench_latency.py --modes longpoll,push
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import asyncpg
import httpx

from jobnik_manager.db import migrate
from jobnik_sdk import JobnikClient, NewStage, NewTask, TaskContext, Worker

PG = "postgresql+asyncpg://postgres@127.0.0.1:5432/jobnik_latency"
AMQP = "amqp://guest:guest@127.0.0.1:5672/"
MODES = {"push": "RabbitMQ wake-ups", "poll": "polling only", "longpoll": "long-poll claims"}


async def recreate(url: str, *, log_statements: bool = False) -> None:
    base, _, name = url.replace("postgresql+asyncpg://", "postgresql://").rpartition("/")
    conn = await asyncpg.connect(f"{base}/postgres")
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{name}"')
        if log_statements:
            # Every statement with its duration in the server's log (timestamps in ms),
            # to see where a task's time goes between its creation and its handler.
            await conn.execute(f'ALTER DATABASE "{name}" SET log_min_duration_statement = 0')
    finally:
        await conn.close()


@contextmanager
def manager(url: str, amqp_url: str | None, port: int) -> Iterator[str]:
    env = {
        **os.environ,
        "JOBNIK_DATABASE_URL": url,
        "JOBNIK_PORT": str(port),
        "JOBNIK_LOG_LEVEL": "warning",
    }
    env.pop("JOBNIK_AMQP_URL", None)
    if amqp_url:
        env["JOBNIK_AMQP_URL"] = amqp_url
    proc = subprocess.Popen([sys.executable, "-m", "jobnik_manager.cli", "serve"], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{base}/readiness", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        else:
            raise RuntimeError("manager did not start")
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def worker_options(mode: str, amqp_url: str) -> dict[str, Any]:
    """The Worker's settings that make the mode."""
    if mode == "push":
        return {"amqp_url": amqp_url}
    if mode == "poll" and "claim_wait" in inspect.signature(Worker).parameters:
        return {"claim_wait": timedelta(0)}  # no long polls: the backoff alone
    return {}  # longpoll: the Worker's defaults, without a broker


Latencies = dict[str, list[float]]  # ms by leg: "total", "to claim", "claim on"


async def run_mode(
    base: str,
    *,
    mode: str,
    amqp_url: str,
    tasks: int,
    gap: tuple[float, float],
    same_process: bool = False,
) -> Latencies:
    """Feed `tasks` tasks one by one; return each one's latency in ms, whole and by leg."""
    stage_type = f"lat-{mode}-{uuid.uuid4().hex[:6]}"
    started: dict[str, float] = {}
    claimed: dict[str, float] = {}
    done = asyncio.Event()

    async def handle(data: dict[str, Any], ctx: TaskContext) -> None:
        started[str(ctx.task.id)] = time.time()
        assert ctx.task.start_time is not None
        claimed[str(ctx.task.id)] = _timestamp(ctx.task.start_time)
        if len(started) >= tasks:
            done.set()

    async with JobnikClient(base) as client:
        options = worker_options(mode, amqp_url)
        worker = Worker(
            client,
            stage_types=stage_type,
            handler=handle,
            concurrency=4,
            handle_signals=False,
            **options,
        )
        async with worker:
            await asyncio.sleep(2)  # connected and idle, as a long-running worker is
            if same_process:
                created = await produce(client, stage_type, tasks, gap)
            else:
                created = await produce_elsewhere(base, stage_type, tasks, gap)
            await asyncio.wait_for(done.wait(), timeout=120)
    return {
        "total": [(started[t] - created[t]) * 1000 for t in created],
        "to claim": [(claimed[t] - created[t]) * 1000 for t in created],
        "claim on": [(started[t] - claimed[t]) * 1000 for t in created],
    }


async def produce(
    client: JobnikClient, stage_type: str, tasks: int, gap: tuple[float, float]
) -> dict[str, float]:
    """Create `tasks` jobs of one task each, `gap` seconds apart; each task's creation
    time by its id."""
    created: dict[str, float] = {}
    for i in range(tasks):
        # A job per task: tasks cannot join a stage that is already running.
        job = await client.create_job(
            "latency", stages=[NewStage(type=stage_type, tasks=[NewTask(data={"i": i})])]
        )
        assert job.stages and job.stages[0].tasks
        task = job.stages[0].tasks[0]
        created[str(task.id)] = _timestamp(task.creation_time)
        await asyncio.sleep(random.uniform(*gap))
    return created


async def produce_elsewhere(
    base: str, stage_type: str, tasks: int, gap: tuple[float, float]
) -> dict[str, float]:
    """`produce` in a process of its own, as a producer runs beside its workers: in the
    worker's process it would parse each create's answer while the claim's answer
    waits for that same event loop."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--produce",
        json.dumps({"base": base, "type": stage_type, "tasks": tasks, "gap": gap}),
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"the producer exited with status {proc.returncode}")
    created: dict[str, float] = json.loads(out)
    return created


async def producer_main(spec: dict[str, Any]) -> None:
    async with JobnikClient(spec["base"]) as client:
        created = await produce(client, spec["type"], spec["tasks"], tuple(spec["gap"]))
    print(json.dumps(created))


def _timestamp(value: datetime) -> float:
    return value.timestamp()


def describe(name: str, ms: list[float]) -> str:
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return (
        f"  {name:<22}{len(ms):>6}{statistics.median(ms):>10.1f}{q[94]:>10.1f}"
        f"{q[98]:>10.1f}{max(ms):>10.1f}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=PG)
    parser.add_argument("--amqp-url", default=AMQP)
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--gap-ms", default="20-120", help="idle gap between tasks, lo-hi ms")
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument("--modes", default=",".join(MODES), help="of " + ",".join(MODES))
    parser.add_argument(
        "--same-process",
        action="store_true",
        help="create the tasks from the worker's own process and event loop",
    )
    parser.add_argument("--produce", help=argparse.SUPPRESS)  # the producer's process
    parser.add_argument(
        "--log-statements", action="store_true", help="log every statement in PostgreSQL's log"
    )
    args = parser.parse_args()
    if args.produce:
        await producer_main(json.loads(args.produce))
        return
    lo, hi = (float(x) / 1000 for x in args.gap_ms.split("-"))
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or set(modes) - set(MODES):
        parser.error(f"--modes takes some of {','.join(MODES)}")

    await recreate(args.url, log_statements=args.log_statements)
    await asyncio.to_thread(migrate.upgrade, args.url)
    latencies = {}
    for mode in modes:
        # push needs the manager's relay; the other modes are what a deployment without
        # a broker gets, so their manager runs without one (no relay at work beside it).
        broker = args.amqp_url if mode == "push" else None
        with manager(args.url, broker, args.port) as base:
            latencies[mode] = await run_mode(
                base,
                mode=mode,
                amqp_url=args.amqp_url,
                tasks=args.tasks,
                gap=(lo, hi),
                same_process=args.same_process,
            )
    print(f"creation -> handler start, ms ({args.tasks} tasks each, gaps {args.gap_ms} ms)")
    print(f"  {'mode':<22}{'tasks':>6}{'p50':>10}{'p95':>10}{'p99':>10}{'max':>10}")
    for mode, legs in latencies.items():
        print(describe(MODES[mode], legs["total"]))
    print("by leg: creation -> claim (startTime), claim -> handler start")
    for mode, legs in latencies.items():
        print(describe(f"{mode}: to claim", legs["to claim"]))
        print(describe(f"{mode}: claim on", legs["claim on"]))


if __name__ == "__main__":
    asyncio.run(main())
