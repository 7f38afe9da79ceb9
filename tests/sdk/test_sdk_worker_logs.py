"""The Worker's log lines say which worker, and about a task which task of which job:
the handler's own lines (through `ctx.logger`) and the Worker's, for tasks running at
the same time."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Any

import httpx
import pytest

from jobnik_sdk import (
    Job,
    JobnikClient,
    JobStatus,
    NewStage,
    NewTask,
    TaskContext,
    TaskLogFilter,
    Worker,
)
from jobnik_sdk.testing import FakeJobnik

from .conftest import QUICK


async def jobs_of_one_task(*stage_types: str) -> tuple[FakeJobnik, list[Job]]:
    """A fake with a job a stage type (`job-0`, `job-1`, ...), its one task's data
    `{"n": <its number>}`."""
    fake = FakeJobnik()
    jobs = [
        await fake.create_job(
            f"job-{n}", stages=[NewStage(type=kind, tasks=[NewTask(data={"n": n})])]
        )
        for n, kind in enumerate(stage_types)
    ]
    return fake, jobs


async def test_every_line_about_a_task_names_it_and_its_job(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake, jobs = await jobs_of_one_task("logged", "logged")
    both = asyncio.Barrier(2)

    async def handler(data: dict[str, Any], ctx: TaskContext) -> None:
        await both.wait()  # the two run at the same time
        ctx.logger.info("working on %d", data["n"])
        if data["n"] == 1:
            raise RuntimeError("tile missing")

    caplog.set_level(logging.INFO, logger="jobnik_sdk")
    async with Worker(
        fake,
        stage_types="logged",
        handler=handler,
        concurrency=2,
        poll_backoff=QUICK,
        handle_signals=False,
    ):
        for job in jobs:
            done = await fake.wait(job.id, timeout=timedelta(seconds=10))
            assert done.status in (JobStatus.COMPLETED, JobStatus.FAILED)
    tasks = {job.id: job.stages[0].tasks[0].id for job in jobs}  # type: ignore[index]
    for n, job in enumerate(jobs):
        task = tasks[job.id]
        mine = [r for r in caplog.records if str(task) in r.getMessage()]
        assert any(f"working on {n}" in r.getMessage() for r in mine)
        for record in mine:
            assert f"of job {job.id}" in record.getMessage(), record.getMessage()
    failed = [r for r in caplog.records if "tile missing" in (r.exc_text or "") or r.exc_info]
    assert failed and all(getattr(r, "job_id", "") == str(jobs[1].id) for r in failed)
    assert all(
        r.getMessage().startswith("[worker logged]")
        for r in caplog.records
        if r.name == "jobnik_sdk.worker"
    )


async def test_concurrent_tasks_each_log_with_their_own_ids_whatever_the_logger(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The handler logs through ctx.logger and through a logger of its own module; with
    # TaskLogFilter on the handler that writes them, both carry the task's ids, as do
    # the Worker's own lines about the task, though the two tasks run at the same time.
    fake, jobs = await jobs_of_one_task("render", "publish")
    both = asyncio.Barrier(2)
    own = logging.getLogger("tests.sdk.a_handler_module")

    async def handler(data: dict[str, Any], ctx: TaskContext) -> None:
        ctx.logger.info("first of %d", data["n"])
        await both.wait()
        own.info("second of %d", data["n"])
        await both.wait()
        ctx.logger.info("third of %d", data["n"])
        if data["n"] == 1:
            raise RuntimeError("no target")

    caplog.handler.addFilter(TaskLogFilter())
    caplog.set_level(logging.INFO)
    async with Worker(
        fake,
        stage_types=["render", "publish"],
        handler=handler,
        concurrency=2,
        poll_backoff=QUICK,
        handle_signals=False,
    ):
        for job in jobs:
            await fake.wait(job.id, timeout=timedelta(seconds=10))

    for n, (job, kind) in enumerate(zip(jobs, ("render", "publish"), strict=True)):
        assert job.stages is not None and job.stages[0].tasks is not None
        task = job.stages[0].tasks[0].id
        ids = {"task_id": str(task), "job_id": str(job.id), "stage_type": kind}
        mine = [r for r in caplog.records if getattr(r, "task_id", "") == str(task)]
        said = [r.getMessage().split("] ", 1)[-1] for r in mine]
        for line in (
            f"first of {n}",
            f"second of {n}",
            f"third of {n}",
            "started (attempt 1 of 1)",
        ):
            assert line in said, (line, said)
        for record in mine:
            got = {key: getattr(record, key) for key in ids}
            assert got == ids, record.getMessage()
        # The text says it too, except on the lines of the handler's own logger.
        for record in mine:
            if record.name != own.name:
                assert f"{kind} task {task} of job {job.id}" in record.getMessage()
    [failed] = [r for r in caplog.records if r.exc_info and r.levelno == logging.ERROR]
    assert (failed.task_id, failed.job_id, failed.stage_type) == (  # type: ignore[attr-defined]
        str(jobs[1].stages[0].tasks[0].id),  # type: ignore[index]
        str(jobs[1].id),
        "publish",
    )
    # Lines about no task in particular name the worker, and no task.
    for record in caplog.records:
        if record.name == "jobnik_sdk.worker" and record.task_id == "":  # type: ignore[attr-defined]
            assert record.stage_types == "render,publish"  # type: ignore[attr-defined]
            assert record.getMessage().startswith("[worker render,publish]")


async def test_lines_about_a_lost_lease_name_the_task_its_job_and_stage_type(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = FakeJobnik()
    job = await fake.create_job("lost", stages=[NewStage(type="slow", tasks=[NewTask()])])
    started = asyncio.Event()

    async def handler(data: dict[str, Any], ctx: TaskContext) -> None:
        started.set()
        await asyncio.sleep(30)

    caplog.set_level(logging.INFO, logger="jobnik_sdk")
    async with Worker(
        fake,
        stage_types="slow",
        handler=handler,
        lease=timedelta(seconds=2),
        heartbeat_interval=timedelta(milliseconds=50),
        poll_backoff=QUICK,
        handle_signals=False,
    ):
        await asyncio.wait_for(started.wait(), 10)
        fake.clock.advance(timedelta(seconds=5))  # the lease ran out at the manager
        for _ in range(200):
            if any("lease was lost" in r.getMessage() for r in caplog.records):
                break
            await asyncio.sleep(0.02)
    assert job.stages is not None and job.stages[0].tasks is not None
    task = job.stages[0].tasks[0].id
    [lost] = [r for r in caplog.records if "lease was lost" in r.getMessage()]
    assert (
        f"[worker slow] slow task {task} of job {job.id}: its lease was lost" in lost.getMessage()
    )
    assert (lost.task_id, lost.job_id, lost.stage_type) == (  # type: ignore[attr-defined]
        str(task),
        str(job.id),
        "slow",
    )


class CountingTransport(httpx.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.paths: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        return await self.inner.handle_async_request(request)


async def test_an_idle_worker_logs_nothing_per_poll(caplog: pytest.LogCaptureFixture) -> None:
    counting = CountingTransport(FakeJobnik().transport)
    caplog.set_level(logging.DEBUG)

    async def handler(data: dict[str, Any], ctx: TaskContext) -> None:
        pass

    async with JobnikClient("http://jobnik.test", transport=counting) as client:
        worker = Worker(
            client,
            stage_types="quiet",
            handler=handler,
            poll_backoff=QUICK,
            claim_wait=timedelta(0),  # plain polls, every few milliseconds
            handle_signals=False,
        )
        async with worker:
            # Ten polls, however long a busy machine takes to make them.
            async with asyncio.timeout(30):
                while len([p for p in counting.paths if p.endswith("/claim")]) < 10:  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
    informative = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert [line.split(":")[0] for line in informative] == [
        f"[worker quiet] worker {worker.name} started",
        "[worker quiet] worker stopped",
    ]


def test_the_filter_gives_records_outside_a_task_empty_ids() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "hello", None, None)
    assert TaskLogFilter().filter(record)
    assert (record.task_id, record.job_id, record.stage_type) == ("", "", "")  # type: ignore[attr-defined]
