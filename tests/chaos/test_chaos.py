"""Chaos on PostgreSQL: three manager processes behind a round-robin SDK client, eight
worker processes killed with SIGKILL and restarted at random, 2,000 tasks over several
multi-stage jobs. Afterwards every job is COMPLETED, nothing is IN_PROGRESS, every
summary equals a recount, and the event log shows no task completed under two leases."""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
from collections import Counter, defaultdict
from contextlib import ExitStack
from pathlib import Path

import pytest
from sqlalchemy import func, select

from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Event, Job, Task
from jobnik_sdk import JobnikClient, JobStatus, NewStage, NewTask

from ..support.api import unique
from ..support.invariants import assert_invariants
from ..support.processes import manager_process, start_module
from .round_robin import RoundRobinTransport

pytestmark = pytest.mark.slow

JOBS, STAGES, TASKS_PER_STAGE = 5, 2, 200  # 2,000 tasks
WORKERS = 8
KILL_EVERY = (0.3, 1.0)  # seconds between SIGKILLs


def start_worker(managers: list[str], types: list[str], log: Path) -> subprocess.Popen[bytes]:
    return start_module(
        "tests.chaos.chaos_worker",
        log,
        CHAOS_MANAGERS=",".join(managers),
        CHAOS_STAGE_TYPES=",".join(types),
    )


async def test_chaos(pg_db: Database, tmp_path: Path) -> None:
    types = [unique("chaos-a"), unique("chaos-b")]
    rng = random.Random(7)
    kills = 0
    with ExitStack() as stack:
        managers = [
            stack.enter_context(manager_process(pg_db.url, JOBNIK_MAINTENANCE_INTERVAL="0.5"))
            for _ in range(3)
        ]
        client = JobnikClient(managers[0], transport=RoundRobinTransport(managers))
        job_ids = []
        for _ in range(JOBS):
            job = await client.create_job(
                unique("chaos"),
                stages=[
                    NewStage(
                        type=types[s],
                        tasks=[
                            NewTask(data={"i": i}, max_attempts=50) for i in range(TASKS_PER_STAGE)
                        ],
                    )
                    for s in range(STAGES)
                ],
            )
            job_ids.append(job.id)
        workers = [
            start_worker(managers, types, tmp_path / f"worker{i}.log") for i in range(WORKERS)
        ]
        try:
            deadline = asyncio.get_running_loop().time() + 600
            while True:
                jobs = [await client.get_job(j) for j in job_ids]
                if all(j.status is JobStatus.COMPLETED for j in jobs):
                    break
                assert all(not j.status.is_final or j.status is JobStatus.COMPLETED for j in jobs)
                assert asyncio.get_running_loop().time() < deadline, "chaos run timed out"
                await asyncio.sleep(rng.uniform(*KILL_EVERY))
                victim = rng.randrange(WORKERS)
                workers[victim].send_signal(signal.SIGKILL)
                workers[victim].wait()
                kills += 1
                workers[victim] = start_worker(managers, types, tmp_path / f"worker{victim}.log")
        finally:
            for w in workers:
                w.send_signal(signal.SIGTERM)
            for w in workers:
                try:
                    w.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    w.kill()
            await client.aclose()

    await assert_invariants(pg_db)
    async with pg_db.sessions() as s:
        statuses = Counter(
            dict((await s.execute(select(Task.status, func.count()).group_by(Task.status))).all())
        )
        job_statuses = Counter(
            dict((await s.execute(select(Job.status, func.count()).group_by(Job.status))).all())
        )
        events = (
            (await s.execute(select(Event).where(Event.entity == "TASK").order_by(Event.seq)))
            .scalars()
            .all()
        )

    total = JOBS * STAGES * TASKS_PER_STAGE
    assert job_statuses == {"COMPLETED": JOBS}
    assert statuses == {"COMPLETED": total}

    # From the event log: per task, follow its leases in order.
    by_task: dict[object, list[Event]] = defaultdict(list)
    for e in events:
        by_task[e.task_id].append(e)
    claims = completions = reaped = 0
    ended_leases: Counter[object] = Counter()
    for task_id, log in by_task.items():
        current = None
        done = [e for e in log if e.to_status == "COMPLETED"]
        assert len(done) == 1, f"task {task_id} completed {len(done)} times"
        for e in log:
            if e.to_status == "IN_PROGRESS":
                claims += 1
                assert e.lease_id is not None and e.lease_id != current
                current = e.lease_id
            elif e.from_status == "IN_PROGRESS":
                # Every end of a run names the lease it ran under, and only the live one.
                assert e.lease_id == current, f"task {task_id} settled under a stale lease"
                ended_leases[e.lease_id] += 1
                reaped += e.reason == "lease expired"
                completions += e.to_status == "COMPLETED"
                current = None
    assert completions == total
    assert all(n == 1 for n in ended_leases.values()), "a lease ended twice"
    assert kills >= 5
    print(
        f"\nchaos: {total} tasks in {JOBS} jobs x {STAGES} stages, {WORKERS} workers over "
        f"3 managers; {kills} SIGKILLs; {claims} claims, {reaped} leases reaped, "
        f"{claims - total - reaped} other retries; each task completed once under one lease"
    )
