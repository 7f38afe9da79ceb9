"""Chaos on the production profile (PostgreSQL, RabbitMQ, authentication on, metrics,
JSON logs): three manager replicas behind the balancer's one URL, a producer with its
token, eight worker processes with a worker token killed with SIGKILL and restarted at
random, 2,000 tasks over several multi-stage jobs. Afterwards every job is COMPLETED,
nothing is IN_PROGRESS, every summary equals a recount, the event log shows no task
completed under two leases, and no request was answered with a server error."""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Event, Job, Task
from jobnik_sdk import JobStatus, NewStage, NewTask

from ..support import profiles
from ..support.api import unique
from ..support.deployment import Deployment
from ..support.invariants import assert_invariants
from ..support.processes import start_module, stop

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

JOBS, STAGES, TASKS_PER_STAGE = 5, 2, 200  # 2,000 tasks
WORKERS = 8
REPLICAS = 3  # claims of one task can race on more than two processes
KILL_EVERY = (0.3, 1.0)  # seconds between SIGKILLs


def start_worker(d: Deployment, types: list[str], log: Path) -> subprocess.Popen[bytes]:
    stage_types = ",".join(types)
    return start_module(
        "tests.chaos.chaos_worker",
        log,
        CHAOS_MANAGER_URL=d.url,
        CHAOS_TOKEN=d.worker_token(stage_types) or "",
        CHAOS_STAGE_TYPES=stage_types,
    )


@pytest.fixture
def production(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    with profiles.production(request, tmp_path / "deployment", replicas=REPLICAS) as d:
        yield d


async def test_chaos(production: Deployment, tmp_path: Path) -> None:
    d = production
    types = [unique("chaos-a"), unique("chaos-b")]
    rng = random.Random(7)
    kills = 0
    async with d.client("producer") as client:
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
        workers = [start_worker(d, types, tmp_path / f"worker{i}.log") for i in range(WORKERS)]
        try:
            deadline = asyncio.get_running_loop().time() + 500
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
                workers[victim] = start_worker(d, types, tmp_path / f"worker{victim}.log")
        finally:
            for w in workers:
                stop(w)
    answers = d.balancer_answers()
    database = Database(d.database_url)
    try:
        await _check(database, kills)
    finally:
        await database.dispose()
    # Every request went through the balancer with its role's token; none was refused,
    # none answered with a server error, and no replica died, whatever the workers'
    # deaths cut short.
    assert all(replica.proc is not None and replica.proc.poll() is None for replica in d.replicas)
    assert answers["serverErrors"] == [], (answers["serverErrors"], d.replica_troubles())
    by_role = Counter[str]()
    for answer in answers["answers"]:
        assert answer["status"] not in (401, 403), answer
        by_role[answer["role"]] += answer["count"]
    assert by_role["producer"] > 0 and by_role["worker"] > 0 and "anonymous" not in by_role


async def _check(db: Database, kills: int) -> None:
    await assert_invariants(db)
    async with db.sessions() as s:
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
        f"{REPLICAS} managers; {kills} SIGKILLs; {claims} claims, {reaped} leases reaped, "
        f"{claims - total - reaped} other retries; each task completed once under one lease"
    )
