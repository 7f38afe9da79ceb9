"""What a transaction that makes tasks claimable announces to the other replicas: any
stage type, and any number of them, reaches their waiting claims (PostgreSQL's NOTIFY
carries at most 8,000 bytes, and a type may hold any character)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from jobnik_manager.db.engine import Database
from jobnik_manager.dispatch.wakeups import ReadyWaiters, listen

from ..support.api import Api, unique

pytestmark = pytest.mark.timeout(60)


async def _heard(db: Database, types: list[str], make: object, expect: set[str]) -> set[str]:
    """The types whose waiting claims a listener of another replica woke while `make`
    ran (waiting until those `expect`ed are, then a moment for any others)."""
    waiters = ReadyWaiters()
    heard: set[str] = set()
    with contextlib.ExitStack() as stack:
        waiting = {t: stack.enter_context(waiters.waiting([t])) for t in types}
        listener = asyncio.create_task(listen(db.url, waiters))
        try:
            await asyncio.sleep(0.5)  # connected and listening
            for w in waiting.values():
                w.event.clear()  # the wake-up of every waiter when it connects
            await make()  # type: ignore[operator]
            for _ in range(50):
                heard = {t for t, w in waiting.items() if w.event.is_set()}
                if heard >= expect:
                    await asyncio.sleep(0.2)
                    heard = {t for t, w in waiting.items() if w.event.is_set()}
                    break
                await asyncio.sleep(0.1)
        finally:
            listener.cancel()
    return heard


async def test_a_push_to_hundreds_of_queues_is_stored_and_wakes_each_queue(
    pg_db: Database, pg_api: Api
) -> None:
    base = unique("q").lower()
    queues = [f"{base}-{i:03d}-{'x' * 30}" for i in range(300)]
    jobs = [
        {"type": "tile.render", "args": [i], "options": {"queue": q}} for i, q in enumerate(queues)
    ]

    async def push() -> None:
        await pg_api.call("POST", "/ojs/v1/jobs/batch", 201, json={"jobs": jobs})

    assert await _heard(pg_db, queues, push, set(queues)) == set(queues)


async def test_a_type_with_commas_and_colons_is_woken_by_name(pg_db: Database, pg_api: Api) -> None:
    odd = f"{unique('a')},b:2,c"
    plain = f"{unique('c')}"

    async def create() -> None:
        for t in (odd, plain):
            job = await pg_api.create_job()
            await pg_api.create_tasks((await pg_api.create_stage(job["id"], t))["id"])

    assert await _heard(pg_db, [odd, plain, "b", "c"], create, {odd, plain}) == {odd, plain}
