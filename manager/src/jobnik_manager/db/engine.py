"""Engine construction and the one transaction seam every use case runs through."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import sqlite3
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Container, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy import event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from ..clock import Clock, SystemClock
from ..domain.announcements import READY_TYPES
from ..domain.auth import acting
from . import json_text
from .deferred import DeferringSession, write_deferred
from .direct import BROKEN_CONNECTION, DirectStatement, reset_connection, setup_connection
from .failures import is_conflict, is_unavailable
from .sqlite_inline import connector
from .sqlite_writer import PRAGMAS, SqliteWriter, WriteLock

log = logging.getLogger(__name__)
T = TypeVar("T")

_MAX_CONFLICT_RETRIES = 4
_PATIENCE = 1.5  # seconds a request waits for a database that is away


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def asyncpg_dsn(url: str) -> str:
    """The database URL `url` (SQLAlchemy's, `postgresql+asyncpg://...`) as asyncpg takes
    it, password included."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def make_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    if is_sqlite(url):
        engine = create_async_engine(url, async_creator=connector(make_url(url).database or ""))
        _configure_sqlite(engine)
        return engine
    # No pre-ping: it would cost a round trip per transaction. A connection found dead on
    # use is invalidated by SQLAlchemy and the transaction runs again (`_retried`).
    engine = create_async_engine(
        url, pool_size=pool_size, max_overflow=pool_size, json_deserializer=json_text.loads
    )
    _track_backends(engine)
    return engine


# PostgreSQL: the server process id of each engine's open connections, by the id of the
# connection object, which send its NOTIFYs (`backends`). Read when one opens: one closed
# because it broke can no longer tell.
_BACKENDS: weakref.WeakKeyDictionary[Any, dict[int, int]] = weakref.WeakKeyDictionary()


def _track_backends(engine: AsyncEngine) -> None:
    opened = _BACKENDS.setdefault(engine.sync_engine, {})

    @event.listens_for(engine.sync_engine, "connect")
    def _opened(dbapi_connection: Any, _record: Any) -> None:
        opened[id(dbapi_connection)] = dbapi_connection.driver_connection.get_server_pid()

    @event.listens_for(engine.sync_engine, "close")
    def _closed(dbapi_connection: Any, _record: Any) -> None:
        opened.pop(id(dbapi_connection), None)

    @event.listens_for(engine.sync_engine, "close_detached")
    def _detached_closed(dbapi_connection: Any) -> None:
        opened.pop(id(dbapi_connection), None)


def backends(engine: AsyncEngine) -> Container[int]:
    """The server process ids of the engine's open PostgreSQL connections, kept up to
    date as they open and close (none for SQLite). A NOTIFY sent from one of them was
    sent by this process."""
    return _BACKENDS.get(engine.sync_engine, {}).values()


def _configure_sqlite(engine: AsyncEngine) -> None:
    """Every SQLite transaction takes the write lock at BEGIN.

    That makes each one serial, so claim and cascade read-then-write steps cannot
    interleave (SQLite has no row locks), and no transaction fails late on upgrade.
    """

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Opened in autocommit mode (`sqlite_inline`): BEGIN is sent here.
        cursor = dbapi_connection.cursor()
        for pragma in PRAGMAS:
            cursor.execute(pragma)
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


# Session.info key: the clock of the database the session belongs to (`now_in`).
CLOCK = "clock"
_SYSTEM_CLOCK = SystemClock()


PRINCIPAL = "principal"


def principal_in(s: AsyncSession) -> str | None:
    """Who makes this session's changes, as its events name them: the token name of the
    request that began the transaction (None with authentication off, and for the
    manager's own work). Read once, as the transaction begins (`Database.transaction`)."""
    name: str | None = s.info.get(PRINCIPAL)
    return name


def acting_name() -> str | None:
    """The token name of the request being served, for a statement's `principal`."""
    principal = acting()
    return None if principal is None else principal.name


def now_in(s: AsyncSession) -> datetime:
    """The time for the work of this session's transaction, from its database's clock."""
    clock: Clock = s.info.get(CLOCK, _SYSTEM_CLOCK)
    return clock.now()


def make_sessionmaker(
    engine: AsyncEngine, info: Mapping[str, Any] | None = None
) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(
        engine,
        expire_on_commit=False,
        autoflush=False,
        sync_session_class=DeferringSession,
        info=dict(info or {}),
    )


class TransactionHook(Protocol):
    """What a layer above runs with every transaction of a `Database`.

    `info` is copied into each transaction's `Session.info` as it starts (and is in
    `Database.info` for work done outside a transaction); `before_commit` runs inside the
    transaction once its work is done; `after_commit` is given the session's info once
    the commit succeeded."""

    @property
    def info(self) -> Mapping[str, Any]: ...

    async def before_commit(self, s: AsyncSession) -> None: ...

    def after_commit(self, info: Mapping[str, Any]) -> None: ...


async def _retried(
    run: Callable[[], Awaitable[T]], may_replay: Callable[[], bool] = lambda: True
) -> T:
    """Run again after a deadlock or a serialization failure (a few times), and while
    the database is away or a connection broke (for up to `_PATIENCE` seconds, long
    enough for a restart or a failover) if `may_replay()` says the failed run may be
    repeated: only then does the error reach the caller (a 503 for a request)."""
    conflicts, waited, pause = 0, 0.0, 0.02
    while True:
        try:
            return await run()
        except Exception as exc:
            cause = exc.orig if isinstance(exc, DBAPIError) else exc
            # A conflict is the server's word that the transaction was rolled back.
            if is_conflict(exc) and conflicts < _MAX_CONFLICT_RETRIES:
                conflicts += 1
                log.info("transaction conflict, retrying (%d): %s", conflicts, cause)
                await asyncio.sleep(0.01 * conflicts)
            elif is_unavailable(exc) and waited < _PATIENCE and may_replay():
                log.info("database unavailable, retrying in %.2f s: %s", pause, cause)
                await asyncio.sleep(pause)
                waited, pause = waited + pause, min(pause * 2, 0.4)
            else:
                raise


class Database:
    """Owns the engine; runs each use case in one transaction, retried on deadlock."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 10,
        hooks: Sequence[TransactionHook] = (),
        clock: Clock = _SYSTEM_CLOCK,
        engine: AsyncEngine | None = None,
    ) -> None:
        """`engine`, if given, is one `make_engine(url, pool_size=pool_size)` made, used
        instead of a new one: `dispose` closes its connections and leaves it usable
        (SQLAlchemy opens a new pool), so a process may keep an engine, and the statements
        it compiled, for databases on the same URL used one after another."""
        self.url = url
        self.clock = clock
        self.engine = engine or make_engine(url, pool_size=pool_size)
        self._pool_size = pool_size
        self._direct_pools: dict[bool, asyncpg.Pool] = {}  # by durability
        self._direct_pool_opening = asyncio.Lock()
        # SQLite: the process's write lock, and the connection of the hot calls.
        self._writer: SqliteWriter | None = None
        if self.is_sqlite:
            self._writer = SqliteWriter(make_url(url).database or "", WriteLock())
        self._set_hooks(tuple(hooks))

    def _set_hooks(self, hooks: tuple[TransactionHook, ...]) -> None:
        self.hooks = hooks
        self.info: Mapping[str, Any] = {k: v for hook in hooks for k, v in hook.info.items()}
        self.sessions = make_sessionmaker(self.engine, {**self.info, CLOCK: self.clock})

    def with_hooks(self, *hooks: TransactionHook) -> Database:
        """This database with more hooks: the same engine and pools (disposing either
        disposes both), this one left as it is."""
        view = copy.copy(self)
        view._set_hooks((*self.hooks, *hooks))
        return view

    def with_clock(self, clock: Clock) -> Database:
        """This database on `clock`: the same engine and pools (disposing either disposes
        both), this one left as it is."""
        view = copy.copy(self)
        view.clock = clock
        view._set_hooks(self.hooks)
        return view

    @property
    def is_sqlite(self) -> bool:
        return is_sqlite(self.url)

    @property
    def backends(self) -> Container[int]:
        """PostgreSQL: the server process ids of this database's ORM connections, the
        ones its transactions NOTIFY from (`engine.backends`)."""
        return backends(self.engine)

    async def transaction(self, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
        """Run `work` in a fresh transaction and commit it.

        A deadlock or serialization failure rolls back and runs it again, so `work`
        must not have effects outside the session. So does a connection that broke
        before the COMMIT was sent; one that broke during the COMMIT is not run again
        (it may have committed: a create run twice would make two jobs), and the error
        reaches the caller as the database being away.
        """
        committing = woke = False
        principal = acting_name()

        async def once() -> T:
            nonlocal committing
            committing = False
            if self._writer is None:
                return await in_session()
            async with self._writer.lock.held():
                return await in_session()

        async def in_session() -> T:
            nonlocal committing, woke
            async with self.sessions() as session:
                session.info[PRINCIPAL] = principal
                async with session.begin():
                    # The connection first (and on SQLite its write lock): what `work`
                    # reads of the clock is then the time it runs, not the time before a
                    # wait for a connection.
                    await session.connection()
                    result = await work(session)
                    for hook in self.hooks:
                        await hook.before_commit(session)
                    await write_deferred(session)
                    committing = True  # leaving the block sends the COMMIT
                self.committed(session.info)
                woke = READY_TYPES in session.info
            return result

        result = await _retried(once, may_replay=lambda: not committing)
        if woke:
            # The claims it woke, and the relay that publishes its wake-ups, run up to
            # their first statement before the rest of this request (its answer) does,
            # the write lock let go: the database works while the answer is built.
            await asyncio.sleep(0)
        return result

    def committed(self, info: Mapping[str, Any]) -> None:
        """Run the after-commit hooks: for a transaction, and for work committed outside
        one (a direct statement) with the info its caller gathered."""
        for hook in self.hooks:
            hook.after_commit(info)

    async def sqlite_direct(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """SQLite: `work(connection)`, synchronous statements on the driver, as a
        transaction of its own on the writer's connection and thread (`db.sqlite_writer`):
        one hop from the event loop, however many statements. Retried like
        `transaction`: a run either committed or was rolled back, so it may run again."""
        writer = self._writer
        assert writer is not None, "a SQLite database's"
        return await _retried(lambda: writer.run(work))

    async def direct(
        self,
        statement: DirectStatement,
        params: Mapping[str, Any] | Callable[[], Mapping[str, Any]],
        *,
        durable: bool = True,
        replay_safe: bool,
        replaying: Callable[[], None] = lambda: None,
    ) -> list[asyncpg.Record]:
        """PostgreSQL: run `statement`, a single statement, as a transaction of its own
        (autocommit) and answer its rows. Retried like `transaction`, except after a
        connection that broke once the statement was sent: it may have committed, so it
        runs again only if it is `replay_safe` (a second run does no harm), after a call
        of `replaying`; otherwise the error goes to the caller (a 503 for a request).
        `params` may be a function, called once a connection is in hand: for values that
        must be read when the statement runs, such as the time a lease starts.

        Row locks it takes last only as long as the statement runs, not a round trip
        more for the COMMIT; see `db.direct` for why it bypasses SQLAlchemy. A statement
        that need not be `durable` commits without waiting for its WAL to reach the disk
        (`synchronous_commit = off`), so its locks go as soon as it has run: a crash may
        then lose it, though never a durable commit made after it (WAL keeps order)."""
        sent = False

        async def once() -> list[asyncpg.Record]:
            nonlocal sent
            sent = False
            pool = self._direct_pools.get(durable) or await self._open_direct_pool(durable)
            async with pool.acquire() as conn:
                args = statement.args(params() if callable(params) else params)
                # Failures before here (connecting, setting a connection up) sent nothing.
                sent = True
                try:
                    rows: list[asyncpg.Record] = await conn.fetch(statement.sql, *args)
                except BROKEN_CONNECTION:
                    conn.terminate()
                    raise
                return rows

        def may_replay() -> bool:
            # Sent, it may have committed before the connection broke: only a
            # replay-safe statement runs again then, and `replaying` hears of it.
            if sent and replay_safe:
                replaying()
            return replay_safe or not sent

        return await _retried(once, may_replay)

    @contextlib.asynccontextmanager
    async def direct_transaction(self) -> AsyncIterator[asyncpg.Connection]:
        """PostgreSQL: a connection of the direct pool inside a transaction of its own,
        committed when the block ends, rolled back if it raises; for a few plain
        statements around work outside the database (not retried here)."""
        pool = self._direct_pools.get(True) or await self._open_direct_pool(True)
        async with pool.acquire() as conn:
            try:
                async with conn.transaction():
                    yield conn
            except BROKEN_CONNECTION:
                conn.terminate()
                raise

    async def _open_direct_pool(self, durable: bool) -> asyncpg.Pool:
        # As many connections as the engine's pool with its overflow, opened when needed
        # (none at first, so an unreachable database fails the statement, not this).
        # Planned without bitmap scans: the planner's estimate for a stage type's
        # claimable tasks is often stale or far too small (a new stage of thousands), and
        # a bitmap scan then reads and sorts every claimable task of the type on each
        # claim, where the ordered scan of the claim index stops at `limit`.
        # Planned once per connection (a generic plan), not on every run: planning these
        # statements cost PostgreSQL about as much CPU as running them, and their plans
        # do not depend on the values (the claim index in order for one type; the tasks
        # by id for the completions). Without sequential scans: a plan made while the
        # tasks table was empty or small (a new deployment's first claims, a table
        # ANALYZE has not seen grow) reads the whole table, and kept for the
        # connection's life it made each completion slower as the table grew (17-40 ms
        # a report at 100,000 tasks, where the key lookup takes 0.1 ms).
        async with self._direct_pool_opening:
            if durable not in self._direct_pools:
                settings = {
                    "enable_bitmapscan": "off",
                    "enable_seqscan": "off",
                    "plan_cache_mode": "force_generic_plan",
                }
                if not durable:
                    settings["synchronous_commit"] = "off"
                self._direct_pools[durable] = await asyncpg.create_pool(
                    asyncpg_dsn(self.url),
                    min_size=0,
                    max_size=self._pool_size,
                    init=setup_connection,
                    reset=reset_connection,
                    server_settings=settings,
                )
            return self._direct_pools[durable]

    async def ping(self) -> None:
        async with self.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))

    def connections_in_use(self) -> int:
        """How many connections are out of this database's pools now (the engine's and,
        on PostgreSQL, the direct statements')."""
        pool: Any = self.engine.sync_engine.pool
        out = int(pool.checkedout())
        for direct in self._direct_pools.values():
            out += direct.get_size() - direct.get_idle_size()
        return out

    async def dispose(self) -> None:
        await self.engine.dispose()
        if self._writer is not None:
            await self._writer.close()
        # Emptied in place: a view from `with_hooks` shares the dict.
        pools = list(self._direct_pools.values())
        self._direct_pools.clear()
        for pool in pools:
            await pool.close()
