"""Engines kept per test process, URL and pool size, and lent to one test's Database at
a time. An engine compiles each statement on its first use and keeps it (SQLAlchemy's
compiled cache): with an engine of their own, a thousand tests compiled the same
statements a thousand times, a tenth of the fast tier's time.

Nothing a test does to its database outlives it through the engine: the database is
disposed of when the test ends, which closes the engine's connections (on the test's
event loop, whose end they would not survive) and leaves it a new, empty pool; the
direct pools, the SQLite writer and the locks are the test's Database's own. An engine
whose state a test changed (a listener left on it, on its pool or dialect, other
execution options or another pool) is not lent again: the next test makes a new one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from jobnik_manager.clock import Clock, SystemClock
from jobnik_manager.db.engine import Database, make_engine

_idle: dict[tuple[str, int], AsyncEngine] = {}


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


@asynccontextmanager
async def lent_database(
    url: str, *, pool_size: int, clock: Clock | None = None
) -> AsyncIterator[Database]:
    """A Database on `url` for the block, on an engine kept for the next one, disposed of
    when the block ends."""
    key = (url, pool_size)
    # Taken out while lent: a test with two databases on one URL gets two engines.
    engine = _idle.pop(key, None) or make_engine(url, pool_size=pool_size)
    state = engine_state(engine)
    database = Database(url, pool_size=pool_size, clock=clock or SystemClock(), engine=engine)
    try:
        yield database
    finally:
        await database.dispose()
        if engine_state(engine) == state:
            _idle[key] = engine
