"""The tests' databases: every table emptied before each test (tests/conftest.py), on
engines kept per process and lent to one test at a time (tests/support/engines.py): a
test's database has none of the rows an earlier test left, nor the listeners or options
it left on the engine, nor a connection it left out or the server closed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest
from sqlalchemy import event, func, inspect, select, table, text
from sqlalchemy.ext.asyncio import AsyncEngine

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import CLOCK, Database, asyncpg_dsn
from jobnik_manager.domain.auth import Role
from jobnik_manager.services import tokens
from jobnik_manager.services.jobs import create_job
from jobnik_manager.services.specs import NewJob, NewStage, NewTask

from .. import conftest
from ..support.engines import lent_database

# A pool size of these tests' own: the fixtures' engines are not theirs to take.
POOL = 3


def _noop(*_: Any) -> None:
    pass


async def test_a_returned_engine_is_lent_again_on_the_new_databases_clock(
    database_url: str,
) -> None:
    async with lent_database(database_url, pool_size=POOL) as first:
        await first.ping()
        await first.transaction(lambda s: s.connection())  # the sessions' engine too
        engine = first.engine
        assert engine.sync_engine.pool.checkedin() == 1
    clock = ManualClock()
    async with lent_database(database_url, pool_size=POOL, clock=clock) as second:
        assert second.engine is engine
        assert engine.sync_engine.pool.checkedin() == 1  # the connection lent with it
        assert second.clock is clock and first.clock is not clock
        assert second.sessions.kw["bind"] is engine
        assert await second.transaction(_clock_of) is clock
        await second.ping()


async def _clock_of(session: Any) -> Any:
    return session.info[CLOCK]


async def _backend_pid(database: Database) -> int:
    async with database.engine.connect() as conn:
        return int((await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one())


@pytest.mark.postgres_only
async def test_a_connection_the_server_closed_is_not_lent_again(postgres_url: str) -> None:
    async with lent_database(postgres_url, pool_size=POOL) as first:
        pid = await _backend_pid(first)
    admin = await asyncpg.connect(asyncpg_dsn(postgres_url))
    try:
        # Returns once the process has ended (PostgreSQL 14 and later).
        assert await admin.fetchval("SELECT pg_terminate_backend($1, 5000)", pid)
    finally:
        await admin.close()
    await asyncio.sleep(0.05)  # the closed socket's EOF read by this loop
    async with lent_database(postgres_url, pool_size=POOL) as second:
        assert second.engine is first.engine
        assert second.engine.sync_engine.pool.checkedin() == 0  # closed, and a new pool
        assert await _backend_pid(second) != pid


async def test_a_database_left_with_a_connection_out_is_closed(database_url: str) -> None:
    async with lent_database(database_url, pool_size=POOL) as first:
        await first.ping()
        left = await first.engine.connect()
    try:
        async with lent_database(database_url, pool_size=POOL) as second:
            assert second.engine is first.engine
            assert second.engine.sync_engine.pool.checkedin() == 0
            assert second.connections_in_use() == 0
            await second.ping()
    finally:
        await left.close()


async def test_databases_lent_at_once_have_engines_of_their_own(database_url: str) -> None:
    async with (
        lent_database(database_url, pool_size=POOL) as one,
        lent_database(database_url, pool_size=POOL) as other,
    ):
        assert one.engine is not other.engine
        await one.ping()
        await other.ping()


def _engine_listener(engine: AsyncEngine) -> None:
    event.listen(engine.sync_engine, "before_cursor_execute", _noop)


def _pool_listener(engine: AsyncEngine) -> None:
    event.listen(engine.sync_engine.pool, "checkout", _noop)


def _dialect_listener(engine: AsyncEngine) -> None:
    event.listen(engine.sync_engine, "do_connect", _noop)


def _options(engine: AsyncEngine) -> None:
    engine.sync_engine.update_execution_options(isolation_level="AUTOCOMMIT")


CHANGES: dict[str, Callable[[AsyncEngine], None]] = {
    "engine listener": _engine_listener,
    "pool listener": _pool_listener,
    "dialect listener": _dialect_listener,
    "execution options": _options,
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=list(CHANGES))
async def test_an_engine_a_test_changed_is_not_lent_again(
    database_url: str, change: Callable[[AsyncEngine], None]
) -> None:
    async with lent_database(database_url, pool_size=POOL) as first:
        change(first.engine)
    async with lent_database(database_url, pool_size=POOL) as second:
        assert second.engine is not first.engine
        await second.ping()
    # One left as it was is lent again.
    async with lent_database(database_url, pool_size=POOL) as third:
        assert third.engine is second.engine


async def test_every_table_is_emptied_before_a_test(database_url: str) -> None:
    async with lent_database(database_url, pool_size=POOL) as database:
        async with database.engine.connect() as conn:
            names = await conn.run_sync(lambda c: inspect(c).get_table_names())
        # status_counts is kept by triggers on jobs and stages: their DELETEs count down.
        assert set(names) - {"alembic_version", "status_counts"} == set(conftest.TABLES)
        # Rows in the tables under a job (jobs, stages, tasks, events) and a token's.
        job = NewJob(
            name="left", data={}, stages=[NewStage(type="t", data={}, tasks=(NewTask(data={}),))]
        )
        await database.transaction(lambda s: create_job(s, job))
        await database.transaction(lambda s: tokens.create(s, "left", Role.ADMIN))
    async with (
        conftest._emptied(database_url, ManualClock()) as emptied,
        emptied.engine.connect() as conn,
    ):
        for name in conftest.TABLES:
            count = select(func.count()).select_from(table(name))
            assert (await conn.scalar(count)) == 0, name
        counted = text(
            "SELECT count(*) FROM status_counts GROUP BY entity, status HAVING sum(n) <> 0"
        )
        assert (await conn.execute(counted)).all() == []
