"""The SDK and its Worker against the manager with JOBNIK_AUTH=on, both backends: a
producer's token creates and reads its job, a worker token of the job's stage type runs
it, and the roles' refusals reach the SDK as its own exceptions."""

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
    Worker,
)

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
