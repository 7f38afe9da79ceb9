"""The tests' engines (tests/support/engines.py), kept per process and lent to one test
at a time: a test's database has none of the connections an earlier test opened, nor
the listeners or options it left on the engine."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from jobnik_manager.clock import ManualClock

from ..support.engines import lent_database

# A pool size of these tests' own: the fixtures' engines are not theirs to take.
POOL = 3


def _noop(*_: Any) -> None:
    pass


async def test_a_returned_engine_is_lent_again_closed_and_on_the_new_databases_clock(
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
        assert engine.sync_engine.pool.checkedin() == 0  # closed with the first
        assert second.clock is clock and first.clock is not clock
        assert second.sessions.kw["bind"] is engine
        await second.ping()


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
