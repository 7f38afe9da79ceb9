"""SQLite for SQLAlchemy's async engine, run on the event loop's own thread.

aiosqlite gives each connection a thread and sends every call to it: a statement made
up to four trips there and back (cursor, execute, fetch, close), each a queue, a thread
switch and a wake-up of the loop. Profiled, those trips cost more CPU than the
statements, which read and write pages of a local file in microseconds. They bought
nothing here: the manager's transactions take turns anyway (`WriteLock`), so no other
transaction of this process could have run while one waited on its thread.

So this module gives SQLAlchemy's aiosqlite dialect a connection with aiosqlite's
methods that runs each call at once (`connector`, the engine's `async_creator`). What
a thread used to absorb is handled here instead:
- another process holding the database's write lock (a migration, the CLI): the
  statement is refused at once (no busy timeout on these connections) and tried again
  after a pause that lets the loop go on (`BUSY_PATIENCE` in all), as SQLite's own busy
  handler would have while blocking the whole process;
- a long statement (a retention delete, a create of many tasks) holds the loop while it
  runs; the manager's own transactions would have waited for it all the same.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

BUSY_PATIENCE = 30.0  # seconds a statement waits for another process's write lock
_FIRST_PAUSE, _LONGEST_PAUSE = 0.001, 0.05


def _busy(exc: sqlite3.OperationalError) -> bool:
    # SQLITE_BUSY and its extended codes, but BUSY_SNAPSHOT: a read transaction that
    # cannot become a write one will not succeed however long it waits.
    code = getattr(exc, "sqlite_errorcode", None)
    return (
        code is not None
        and code & 0xFF == sqlite3.SQLITE_BUSY
        and code != sqlite3.SQLITE_BUSY_SNAPSHOT
    )


async def patiently(call: Callable[..., T], *args: Any) -> T:
    """`call(*args)`, again after a pause while the database is locked by another
    process (a refused statement did nothing: it may run again)."""
    waited, pause = 0.0, _FIRST_PAUSE
    while True:
        try:
            return call(*args)
        except sqlite3.OperationalError as exc:
            if not _busy(exc) or waited >= BUSY_PATIENCE:
                raise
        await asyncio.sleep(pause)
        waited, pause = waited + pause, min(pause * 2, _LONGEST_PAUSE)


class InlineCursor:
    """aiosqlite's `Cursor`, as SQLAlchemy's adapter uses it."""

    __slots__ = ("_cursor",)

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor

    async def __aenter__(self) -> InlineCursor:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        self._cursor.close()

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    @property
    def arraysize(self) -> int:
        return self._cursor.arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._cursor.arraysize = value

    async def execute(self, sql: str, parameters: Any = ()) -> InlineCursor:
        await patiently(self._cursor.execute, sql, parameters)
        return self

    async def executemany(self, sql: str, parameters: Sequence[Any]) -> InlineCursor:
        # A list (SQLAlchemy sends one), so that a refused call can be sent again whole.
        await patiently(self._cursor.executemany, sql, parameters)
        return self

    async def fetchone(self) -> Any:
        return self._cursor.fetchone()

    async def fetchmany(self, size: int | None = None) -> Sequence[Any]:
        return self._cursor.fetchmany(self._cursor.arraysize if size is None else size)

    async def fetchall(self) -> Sequence[Any]:
        return self._cursor.fetchall()

    async def close(self) -> None:
        self._cursor.close()


class _Calls:
    """aiosqlite's queue of calls for its thread, as SQLAlchemy's adapter uses it to
    change a connection's isolation level (Alembic does, around a statement that must
    run outside a transaction): each call runs as it is put."""

    @staticmethod
    def put_nowait(item: tuple[asyncio.Future[Any], Callable[[], Any]]) -> None:
        future, call = item
        try:
            future.set_result(call())
        except Exception as exc:
            future.set_exception(exc)


class InlineConnection:
    """aiosqlite's `Connection`, as SQLAlchemy's adapter uses it: `_connection` is the
    sqlite3 connection, None once closed (the adapter reads it before a commit), `_conn`
    and `_tx` what it changes the isolation level with."""

    _tx = _Calls()

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection: sqlite3.Connection | None = connection
        self._conn = connection

    def _open(self) -> sqlite3.Connection:
        if self._connection is None:
            raise ValueError("Connection closed")
        return self._connection

    @property
    def isolation_level(self) -> str | None:
        return self._open().isolation_level

    @property
    def sqlite(self) -> sqlite3.Connection:
        """The sqlite3 connection itself, for statements run on it directly."""
        return self._open()

    def cursor(self) -> InlineCursor:
        return InlineCursor(self._open().cursor())

    async def executescript(self, script: str) -> None:
        """Run `script`, which should begin by taking the write lock (BEGIN IMMEDIATE):
        only a script refused there, having done nothing, can run again."""
        await patiently(self._open().executescript, script)

    async def commit(self) -> None:
        await patiently(self._open().commit)

    async def rollback(self) -> None:
        self._open().rollback()

    async def create_function(self, *args: Any, **kwargs: Any) -> None:
        self._open().create_function(*args, **kwargs)

    async def close(self) -> None:
        self.stop()

    def stop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


def connector(path: str) -> Callable[[], Awaitable[InlineConnection]]:
    """The engine's `async_creator` for the database file at `path`: each connection in
    autocommit mode (BEGIN is sent by the engine) with no busy timeout of its own."""

    async def connect() -> InlineConnection:
        connection = sqlite3.connect(
            path or ":memory:", isolation_level=None, timeout=0, check_same_thread=False
        )
        return InlineConnection(connection)

    return connect
