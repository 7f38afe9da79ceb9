"""End to end on the production profile (PostgreSQL, RabbitMQ, authentication on, two
replicas behind one URL) and on the minimal one (SQLite, no authentication, polling):
worker processes started from worker-boilerplate (`python -m tile_render_worker`) with
a worker token of their stage types, the SDK as the producer and the operator."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest

from jobnik_sdk import (
    JobStatus,
    NewStage,
    NewTask,
    StageStatus,
    Summary,
    TaskStatus,
)

from ..support.api import unique
from ..support.deployment import Deployment
from ..support.invariants import assert_invariants_at
from ..support.processes import stop

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

T = TypeVar("T")
POLL = timedelta(milliseconds=100)
DEADLINE = timedelta(seconds=60)
HANDLER = "tests.sdk.e2e_handlers:handle"


def start_worker(
    running: Deployment, stage_types: str, name: str, **env: str
) -> subprocess.Popen[bytes]:
    """A template worker running tests.sdk.e2e_handlers:handle, one task at a time."""
    return running.start_worker(
        stage_types,
        name=name,
        WORKER_HANDLER=HANDLER,
        WORKER_CONCURRENCY="1",
        WORKER_POLL_INITIAL_SECONDS="0.05",
        WORKER_POLL_MAX_SECONDS="0.2",
        **env,
    )


def tile(x: int, y: int, zoom: int, *, max_attempts: int = 1, **asked: Any) -> NewTask:
    return NewTask(
        data={"x": x, "y": y, "zoom": zoom}, user_metadata=asked, max_attempts=max_attempts
    )


async def eventually(probe: Callable[[], Awaitable[T | None]], what: str) -> T:
    for _ in range(600):
        if (found := await probe()) is not None:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


async def test_two_worker_processes_run_a_job_with_approval_and_a_retry(
    running: Deployment,
) -> None:
    prepare, render, publish = unique("prepare"), unique("render"), unique("publish")
    types = f"{prepare},{render},{publish}"
    worker_env: dict[str, str] = {}
    if running.amqp_url:
        # Woken by messages only: a safety poll longer than the test proves they arrive.
        worker_env["WORKER_SAFETY_POLL_SECONDS"] = "300"
    names = [unique("e2e-worker") for _ in range(2)]
    workers = [start_worker(running, types, name, **worker_env) for name in names]
    try:
        async with (
            running.client("producer") as jobnik,
            running.client("operator") as operator,
        ):
            job = await jobnik.create_job(
                unique("e2e"),
                stages=[
                    NewStage(type=prepare, tasks=[tile(0, 0, 1), tile(1, 1, 1)]),
                    NewStage(
                        type=render,
                        start_as_waiting=True,
                        tasks=[tile(x, y, 2, sleepSeconds=0.2) for x in range(3) for y in range(2)]
                        + [tile(3, 3, 2, max_attempts=2, failOnce=True)],
                    ),
                    NewStage(type=publish, tasks=[tile(0, 0, 0)]),
                ],
            )

            async def held_for_approval() -> list[Any] | None:
                stages = await jobnik.get_job_stages(job.id)
                return stages if stages[0].status is StageStatus.COMPLETED else None

            stages = await eventually(held_for_approval, "the first stage to complete")
            await asyncio.sleep(0.5)  # workers keep polling; nothing may be claimed
            stages = await jobnik.get_job_stages(job.id)
            assert [s.status for s in stages] == [
                StageStatus.COMPLETED,
                StageStatus.WAITING,
                StageStatus.CREATED,
            ]
            assert (stages[1].summary.pending, stages[1].summary.total) == (7, 7)
            assert (await jobnik.get_job(job.id)).percentage == 33

            await operator.approve_stage(stages[1].id)
            done = await jobnik.wait(job.id, poll_interval=POLL, timeout=DEADLINE)
            assert (done.status, done.percentage) == (JobStatus.COMPLETED, 100)

            stages = await jobnik.get_job_stages(job.id, with_tasks=True)
            assert [s.status for s in stages] == [StageStatus.COMPLETED] * 3
            assert [s.summary for s in stages] == [Summary(completed=n) for n in (2, 7, 1)]
            tasks = [t for s in stages for t in s.tasks or []]
            assert all(t.status is TaskStatus.COMPLETED for t in tasks)
            assert all(t.user_metadata["progress"] == 100 for t in tasks)
            flaky = [t for t in tasks if t.user_metadata.get("failOnce")]
            assert [(t.attempts, t.max_attempts) for t in flaky] == [(1, 2)]
            assert sum(t.attempts for t in tasks) == 1
            assert {t.user_metadata["pid"] for t in tasks} == {w.pid for w in workers}
            assert {t.worker for t in tasks} == set(names)

            # NonRetryableError fails the task at once, whatever attempts remain.
            doomed = await jobnik.create_job(
                unique("e2e-doomed"),
                stages=[
                    NewStage(type=render, tasks=[tile(0, 0, 0, max_attempts=3, nonRetryable=True)])
                ],
            )
            failed = await jobnik.wait(doomed.id, poll_interval=POLL, timeout=DEADLINE)
            assert failed.status is JobStatus.FAILED
            [stage] = await jobnik.get_job_stages(doomed.id, with_tasks=True)
            assert stage.status is StageStatus.FAILED
            assert stage.summary == Summary(failed=1)
            assert stage.tasks is not None
            assert [(t.status, t.attempts, t.reason) for t in stage.tasks] == [
                (TaskStatus.FAILED, 1, "this tile can never be rendered")
            ]
    finally:
        for worker in workers:
            stop(worker)

    assert [w.returncode for w in workers] == [0, 0]
    await assert_invariants_at(running.database_url)
    if running.amqp_url:
        for name in names:
            log = (running.logs / f"worker-{name}.log").read_text()
            assert "listening for wake-ups" in log, log


async def test_sigterm_in_the_middle_of_a_task_lets_it_complete(running: Deployment) -> None:
    kind = unique("slow")
    name = unique("sigterm-worker")
    log = running.logs / f"worker-{name}.log"
    async with running.client("producer") as jobnik:
        job = await jobnik.create_job(
            unique("e2e-sigterm"),
            stages=[NewStage(type=kind, tasks=[tile(0, 0, 0, sleepSeconds=2)])],
        )
        assert job.stages is not None and job.stages[0].tasks is not None
        task_id = job.stages[0].tasks[0].id
        proc = start_worker(running, kind, name, WORKER_SHUTDOWN_GRACE_SECONDS="30")
        try:

            async def claimed() -> bool | None:
                task = await jobnik.get_task(task_id)
                return True if task.status is TaskStatus.IN_PROGRESS else None

            await eventually(claimed, "the worker to claim the task")

            async def handler_started() -> bool | None:
                # Claimed is not started: a task claimed but not yet begun when the
                # signal comes is handed back instead, by design.
                return True if "started (attempt" in log.read_text() else None

            await eventually(handler_started, "the handler to start")
            sent_at = datetime.now(UTC)
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.to_thread(proc.wait, 30)
        finally:
            stop(proc)
        assert code == 0, log.read_text()

        task = await jobnik.get_task(task_id)
        assert task.status is TaskStatus.COMPLETED
        assert task.end_time is not None and task.end_time > sent_at
        in_progress = await jobnik.list_tasks(stage_type=kind, status=TaskStatus.IN_PROGRESS)
        assert in_progress.total == 0
        assert (await jobnik.get_job(job.id)).status is JobStatus.COMPLETED
    assert "SIGTERM received" in log.read_text()
    await assert_invariants_at(running.database_url)
