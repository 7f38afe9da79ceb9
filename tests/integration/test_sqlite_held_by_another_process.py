"""SQLite is reached from the event loop's own thread (db/sqlite_inline.py): while
another process holds the database's write lock, the manager's calls wait for it without
holding up the loop, and go through once it is let go; a lock never let go ends in the
database being away (503), with nothing half done."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import AsyncSession

from jobnik_manager.db import migrate, sqlite_inline
from jobnik_manager.db.engine import Database

from ..support.api import Api
from ..support.apps import app_on

pytestmark = pytest.mark.integration


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path / 'held.db'}"
    migrate.upgrade(url)
    return url


@pytest.fixture
async def api(url: str) -> AsyncIterator[Api]:
    db = Database(url)
    try:
        with app_on(db) as app:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://m") as client:
                yield Api(client)
    finally:
        await db.dispose()


@contextmanager
def write_lock_held(url: str) -> Iterator[sqlite3.Connection]:
    """The database's write lock, taken as another process (the CLI, a migration)
    would take it, until the block ends or the connection commits."""
    other = sqlite3.connect(make_url(url).database or "", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield other
    finally:
        if other.in_transaction:
            other.execute("COMMIT")
        other.close()


class Ticks:
    """Counts the loop's turns every 10 ms while it runs: whether the loop was free."""

    def __init__(self) -> None:
        self.count = 0
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0.01)
            self.count += 1

    def stop(self) -> None:
        self._task.cancel()


async def test_calls_wait_for_another_process_s_write_lock_and_the_loop_goes_on(
    url: str, api: Api
) -> None:
    _job, stage, tasks = await api.one_stage_job("held", tasks=2)
    with write_lock_held(url):
        ticks = Ticks()
        # A session's transaction (a create) and a hot call on the writer's connection
        # (a claim), both begun while the lock is held.
        create = asyncio.create_task(api.create_job())
        claim = asyncio.create_task(api.dequeue(stage["type"]))
        await asyncio.sleep(0.4)
        assert not create.done() and not claim.done()
        waited = ticks.count
        assert waited >= 20, f"the loop turned {waited} times in 0.4 s"
    created, claimed = await asyncio.wait_for(asyncio.gather(create, claim), 10)
    ticks.stop()
    assert claimed is not None and claimed["id"] in {t["id"] for t in tasks}
    assert (await api.job(created["id"]))["status"] == "PENDING"
    assert (await api.stage(stage["id"]))["summary"]["inProgress"] == 1


async def test_a_lock_never_let_go_is_the_database_away_and_nothing_is_half_done(
    url: str, api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_inline, "BUSY_PATIENCE", 0.1)
    _job, stage, _tasks = await api.one_stage_job("held", tasks=1)
    with write_lock_held(url):
        refused = await api.http.post(f"/v1/stages/{stage['id']}/tasks", json=[{"data": {}}])
        dequeued = await api.http.patch(f"/v1/stages/{stage['type']}/tasks/dequeue")
    assert refused.status_code == 503, refused.text
    assert dequeued.status_code == 503, dequeued.text
    after = await api.stage(stage["id"])
    assert after["summary"]["total"] == 1 and after["summary"]["pending"] == 1


async def test_transactions_one_after_another_let_the_loop_s_other_work_in(url: str) -> None:
    """The statements never give the loop up, so each transaction does as it begins:
    a run of transactions (the reaper's batches, the claims of a worker's loop) lets
    another request's in between, on the writer's connection as in a session."""
    db = Database(url)
    order: list[str] = []

    async def select_one(s: AsyncSession) -> None:
        await s.execute(text("SELECT 1"))

    def read(conn: sqlite3.Connection) -> None:
        conn.execute("SELECT 1").fetchall()

    async def run_of(name: str, one: Callable[[], Awaitable[object]]) -> None:
        for i in range(5):
            await one()
            order.append(f"{name} {i}")

    try:
        await asyncio.gather(
            run_of("direct", lambda: db.sqlite_direct(read)),
            run_of("other direct", lambda: db.sqlite_direct(read)),
        )
        await asyncio.gather(
            run_of("session", lambda: db.transaction(select_one)),
            run_of("other session", lambda: db.transaction(select_one)),
        )
    finally:
        await db.dispose()
    assert order.index("other direct 0") < order.index("direct 4"), order
    assert order.index("other session 0") < order.index("session 4"), order
