"""Engines kept per test process, URL and pool size, and lent to one test at a time. An
engine compiles each statement on its first use and keeps it (SQLAlchemy's compiled
cache): with an engine of their own, a thousand tests compiled the same statements a
thousand times, a tenth of the fast tier's time.

The database is lent with its connections open (the engine's pool, and the SQLite
writer's or the direct statements' pools): a new PostgreSQL server process cost the
server about 5 ms of CPU to start, load the tables' catalog entries and prepare each
statement again, and the test process 1.3 ms to connect, which every test paid (the
server's CPU was a fifth of the fast tier's); SQLite's connections cost about 3 ms a
test to open and close. PostgreSQL's connections need their event loop to outlive a
test: the tests share one loop per process (pyproject.toml). A database a test left with
a connection checked out, or with one the server has closed, is disposed of instead (its
connections closed, the engine kept with a new, empty pool), and one lent on a loop that
has ended is dropped. A session setting a test SETs would outlive it on its connection:
tests use SET LOCAL. An engine whose state a test changed (a listener left on it, on its
pool or dialect, other execution options or another pool) is not lent again: the next
test makes a new one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from jobnik_manager.clock import Clock, SystemClock
from jobnik_manager.db.engine import Database, make_engine

_Key = tuple[str, int]
_idle: dict[_Key, AsyncEngine] = {}
# PostgreSQL's, connections open, with the loop they were opened on.
_open: dict[_Key, tuple[Database, asyncio.AbstractEventLoop]] = {}


def engine_state(engine: AsyncEngine) -> tuple[Any, ...]:
    """What of `engine` outlives its connections: its listeners (the engine's, its
    pool's, its dialect's, with those of their classes), its execution options, its
    logging and its pool's kind and limits."""
    sync = engine.sync_engine
    pool: Any = sync.pool
    listeners = tuple(
        (name, tuple(getattr(dispatch, name)))
        for dispatch in (sync.dispatch, pool.dispatch, sync.dialect.dispatch)
        for name in dispatch._event_names
    )
    limits = (type(pool), pool.size(), pool._max_overflow, pool._timeout, pool._recycle)
    return listeners, sync._execution_options, sync.echo, limits


def _closed_by_the_server(database: Database) -> bool:
    """Whether a PostgreSQL connection idle in the engine's pool has been closed under it
    (a test terminated its server process): SQLAlchemy would hand it out as it is. The
    direct statements' pools (asyncpg's) open a new connection for a closed one
    themselves; SQLite has no server."""
    if database.is_sqlite:
        return False
    pool: Any = database.engine.sync_engine.pool
    # The idle connections: SQLAlchemy has no public view of them (its asyncio queue
    # keeps them in an asyncio.Queue; tests/integration/test_test_databases.py fails if
    # that changes).
    for record in list(pool._pool._queue._queue):
        connection = record.dbapi_connection
        if connection is None or connection.driver_connection.is_closed():
            return True
    return False


async def _reopened(key: _Key, loop: asyncio.AbstractEventLoop) -> Database | None:
    """The database kept open for `key`, if it may be lent again on `loop`; disposed of
    (its engine kept) if not."""
    kept, its_loop = _open.pop(key, (None, None))
    if kept is None or its_loop is not loop:
        return None  # a loop that has ended took its connections with it
    if kept.connections_in_use() == 0 and not _closed_by_the_server(kept):
        return kept
    await kept.dispose()
    _idle[key] = kept.engine
    return None


@asynccontextmanager
async def lent_database(
    url: str, *, pool_size: int, clock: Clock | None = None
) -> AsyncIterator[Database]:
    """A Database on `url` for the block, on an engine kept for the next one."""
    key = (url, pool_size)
    clock = clock or SystemClock()
    loop = asyncio.get_running_loop()
    # Taken out while lent: a test with two databases on one URL gets two engines.
    kept = await _reopened(key, loop)
    if kept is not None:
        database = kept.with_clock(clock)
    else:
        engine = _idle.pop(key, None) or make_engine(url, pool_size=pool_size)
        database = Database(url, pool_size=pool_size, clock=clock, engine=engine)
    engine = database.engine
    state = engine_state(engine)
    try:
        yield database
    finally:
        if engine_state(engine) != state:
            await database.dispose()  # and the engine is dropped
        elif database.connections_in_use():
            await database.dispose()
            _idle[key] = engine
        else:
            _open[key] = (database, loop)
