"""SQLite: the process's write lock, and a connection of its own for the hot calls.

SQLite lets one writer at a time into a database file, and every transaction here takes
the write lock at BEGIN (`BEGIN IMMEDIATE`). Left to SQLite, the transactions of a busy
manager queued in its busy handler, each asleep for 1, 2, 5 ... 100 ms between tries,
while the lock sat free: profiled, most of a v1 drain's time went there. So the
manager's transactions take turns in-process first (`WriteLock`, first come first
served); another process's transaction (a migration, the CLI) is waited for without
holding up the loop (`sqlite_inline.patiently`).

The hot calls (claims, completions) do not go through SQLAlchemy's session at all: each
is one synchronous function, BEGIN to COMMIT, run on the writer's own connection
(`SqliteWriter.run`), without the ORM's and the async layers' work.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import urllib.parse
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

from .sqlite_inline import patiently

T = TypeVar("T")

# The settings of every connection to the database file, the engine's and the writer's.
# WAL: readers never wait for the writer, and a commit appends to the log rather than
# rewriting pages. synchronous=NORMAL: a commit is in the log (in the OS) before it is
# acknowledged, so it survives the manager's crash; the log is flushed to the disk at
# each checkpoint, not at each commit (an fsync cost 6 ms on the development machine,
# and SQLite's writers cannot share one), so a power loss may take the last commits
# back, never leave the file corrupt. One manager process runs on SQLite; PostgreSQL is
# the store for more.
PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA foreign_keys=ON",
    "PRAGMA synchronous=NORMAL",
)
# The writer's own, beyond those: pages kept in memory between calls (32 MiB; the
# default is 2 MiB, less than the claim index and the hot rows of a large queue), and
# reads through a memory map rather than a read() per page.
_WRITER_PRAGMAS = ("PRAGMA cache_size=-32768", "PRAGMA mmap_size=268435456")


class WriteLock:
    """The database's write lock, in-process: one transaction at a time, in turn.

    Bound to the event loop that first waits on it, made anew for another (a test may
    run one database under several loops, one after the other)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = asyncio.Lock()

    def current(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._lock = loop, asyncio.Lock()
        return self._lock

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        # A turn of the loop for everything else first: SQLite's statements run on the
        # loop's thread and never give it up (`sqlite_inline`), so work that runs one
        # transaction after another (the reaper's batches) would otherwise hold the loop,
        # and the waiting requests, until it was all done.
        await asyncio.sleep(0)
        async with self.current():
            yield


class SqliteWriter:
    """One connection to the database file that runs whole transactions handed to it
    (`run`), each holding the `WriteLock`, on the event loop's thread
    (`db.sqlite_inline` says why no thread of its own)."""

    def __init__(self, path: str, lock: WriteLock) -> None:
        self._path = path
        self.lock = lock
        self._conn: sqlite3.Connection | None = None  # opened at the first run

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work(connection)` in a transaction of its own, committed once it returns and
        rolled back if it raises.

        Nothing is awaited between BEGIN and COMMIT: a request given up on (cancelled)
        either never began its transaction or finished it."""
        async with self.lock.held():
            conn = self._conn or self._open()
            await patiently(conn.execute, "BEGIN IMMEDIATE")
            try:
                result = work(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return result

    def _open(self) -> sqlite3.Connection:
        # No transactions of the module's own: BEGIN and COMMIT are sent here. The file
        # must exist (mode=rw): a writer outliving its database (a test's, removed) must
        # fail, not make a new, empty one and run a claim on it.
        conn = sqlite3.connect(
            f"file:{urllib.parse.quote(self._path)}?mode=rw",
            uri=True,
            isolation_level=None,
            timeout=0,  # waits are `patiently`'s
            check_same_thread=False,  # a test may run the database under another loop
        )
        for pragma in (*PRAGMAS, *_WRITER_PRAGMAS):
            conn.execute(pragma)
        self._conn = conn
        return conn

    async def close(self) -> None:
        """Close the connection (a later run opens it again)."""
        async with self.lock.held():  # after the transaction under way, if any
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()
