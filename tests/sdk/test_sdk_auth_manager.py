"""The SDK and its Worker against the manager with JOBNIK_AUTH=on, both backends: a
producer's token creates and reads its job, a worker token of the job's stage type runs
it (its handler reporting progress; the template worker's handler too), and the roles'
refusals reach the SDK as its own exceptions."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest

from jobnik_manager.db.engine import Database
from jobnik_manager.domain.auth import Role
from jobnik_manager.services import tokens
from jobnik_manager.settings import Settings
from jobnik_sdk import (
    AuthenticationError,
    JobnikClient,
    JobStatus,
    NewStage,
    NewTask,
    PermissionDeniedError,
    TaskContext,
    TaskStatus,
    Worker,
)
from tile_render_worker.app import build_worker
from tile_render_worker.settings import HANDLER, WorkerSettings

from ..support.api import unique
from ..support.apps import app_on
from .conftest import FAST_RETRY, QUICK

Clients = Callable[[str | None], JobnikClient]


@pytest.fixture
async def as_(db: Database) -> AsyncIterator[tuple[Clients, dict[str, str]]]:
    kind = unique("secured")
    made = {}
    for name, role, types in (
        ("maker", Role.PRODUCER, ()),
        ("runner", Role.WORKER, (kind,)),
        ("elsewhere", Role.WORKER, ("other",)),
    ):
        made[name] = (
            await db.transaction(lambda s, n=name, r=role, t=types: tokens.create(s, n, r, t))
        ).token
    with app_on(db, Settings(database_url=db.url, auth="on")) as app:

        def client(who: str | None) -> JobnikClient:
            token = "" if who is None else made[who]
            transport = httpx.ASGITransport(app=app)
            return JobnikClient("http://m", transport=transport, retry=FAST_RETRY, token=token)

        yield client, {"kind": kind}


async def test_a_producer_and_a_worker_run_a_job_with_their_tokens(
    as_: tuple[Clients, dict[str, str]],
) -> None:
    client, names = as_
    kind = names["kind"]
    done = asyncio.Event()

    async def handle(data: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
        done.set()
        return {"ok": True}

    async with client("maker") as producer, client("runner") as runner:
        job = await producer.create_job(
            unique("job"), stages=[NewStage(type=kind, tasks=[NewTask()])]
        )
        async with Worker(
            runner, stage_types=kind, handler=handle, poll_backoff=QUICK, handle_signals=False
        ):
            await asyncio.wait_for(done.wait(), 20)
            ended = await producer.wait(job.id, timeout=timedelta(seconds=20))
        assert ended.status is JobStatus.COMPLETED


async def test_refusals_reach_the_sdk_as_its_exceptions(
    as_: tuple[Clients, dict[str, str]],
) -> None:
    client, names = as_
    async with client(None) as nobody, client("runner") as runner, client("elsewhere") as other:
        with pytest.raises(AuthenticationError):
            await nobody.list_jobs()
        with pytest.raises(PermissionDeniedError):
            await runner.create_job(unique("job"), stages=[NewStage(type=names["kind"])])
        with pytest.raises(PermissionDeniedError):
            await other.claim([names["kind"]])


async def test_a_worker_token_reports_progress_from_its_handler(
    as_: tuple[Clients, dict[str, str]],
) -> None:
    client, names = as_
    kind = names["kind"]
    seen: list[tuple[int | None, str | None]] = []

    async with client("maker") as producer, client("runner") as runner:

        async def handle(data: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
            await ctx.update_progress(40, message="half way", step="one")
            # The heartbeat that carries it goes out within a second.
            for _ in range(100):
                task = await producer.get_task(ctx.task.id)
                if task.progress == 40:
                    break
                await asyncio.sleep(0.05)
            seen.append((task.progress, task.progress_message))
            return {"ok": True}

        job = await producer.create_job(
            unique("job"), stages=[NewStage(type=kind, tasks=[NewTask()])]
        )
        async with Worker(
            runner, stage_types=kind, handler=handle, poll_backoff=QUICK, handle_signals=False
        ):
            ended = await producer.wait(job.id, timeout=timedelta(seconds=20))
        assert ended.status is JobStatus.COMPLETED
        assert seen == [(40, "half way")]
        [task] = (await producer.list_tasks(stage_type=kind)).items
        assert task.status is TaskStatus.COMPLETED
        assert task.user_metadata == {"progress": 40, "step": "one"}


async def test_the_template_worker_completes_its_tasks_with_a_worker_token(
    as_: tuple[Clients, dict[str, str]],
) -> None:
    client, names = as_
    kind = names["kind"]
    settings = WorkerSettings(  # type: ignore[call-arg]
        _env_file=None,
        stage_type=kind,
        handler=HANDLER,
        concurrency=2,
        poll_initial_seconds=0.01,
        poll_max_seconds=0.05,
    )
    tiles = [NewTask(data={"x": x, "y": 0, "zoom": 1}) for x in range(2)]
    async with client("maker") as producer, client("runner") as runner:
        job = await producer.create_job(unique("tiles"), stages=[NewStage(type=kind, tasks=tiles)])
        async with build_worker(settings, runner):
            ended = await producer.wait(job.id, timeout=timedelta(seconds=20))
        assert ended.status is JobStatus.COMPLETED
        done = (await producer.list_tasks(stage_type=kind)).items
        assert sorted(t.result["tile"] for t in done if t.result) == ["1/0/0", "1/1/0"]
        assert {t.user_metadata["progress"] for t in done} == {100}
