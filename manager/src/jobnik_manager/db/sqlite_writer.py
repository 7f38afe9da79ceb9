"""SQLite: the process's write lock, and a connection on a thread of its own for the hot
calls.

SQLite lets one writer at a time into a database file, and every transaction here takes
the write lock at BEGIN (`BEGIN IMMEDIATE`). Left to SQLite, the transactions of a busy
manager queued in its busy handler, each asleep for 1, 2, 5 ... 100 ms between tries,
while the lock sat free: profiled, most of a v1 drain's time went there. So the
manager's transactions take turns in-process first (`WriteLock`, first come first
served); the busy timeout is left for other processes (a migration, the CLI).

The hot calls (claims, completions) do not go through SQLAlchemy's session at all: each
is one synchronous function, BEGIN to COMMIT, run on the writer's own connection and
thread (`SqliteWriter.run`): one hop from the event loop per call, where a session's
transaction took one per statement, plus the ORM's and the async layers' work.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import urllib.parse
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

# The settings of every connection to the database file, the engine's and the writer's.
# WAL: readers never wait for the writer, and a commit appends to the log rather than
# rewriting pages. synchronous=NORMAL: a commit is in the log (in the OS) before it is
# acknowledged, so it survives the manager's crash; the log is flushed to the disk at
# each checkpoint, not at each commit (an fsync cost 6 ms on the development machine,
# and SQLite's writers cannot share one), so a power loss may take the last commits
# back, never leave the file corrupt. busy_timeout: how long another process's write may
# hold us up. One manager process runs on SQLite; PostgreSQL is the store for more.
PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA foreign_keys=ON",
    "PRAGMA busy_timeout=30000",
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
        async with self.current():
            yield


class SqliteWriter:
    """One connection to the database file, used only on its own thread, that runs
    whole transactions handed to it (`run`), each holding the `WriteLock`."""

    def __init__(self, path: str, lock: WriteLock) -> None:
        self._path = path
        self.lock = lock
        self._thread: ThreadPoolExecutor | None = None  # started at the first run
        self._conn: sqlite3.Connection | None = None  # opened, used and closed on the thread

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work(connection)` in a transaction of its own, committed once it returns and
        rolled back if it raises, on the writer's thread.

        The lock goes when the thread is done with it, not when the caller stops waiting:
        a request given up on (cancelled) cannot let another transaction in while its
        own is still running."""
        lock = self.lock.current()
        await lock.acquire()
        try:
            if self._thread is None:
                self._thread = ThreadPoolExecutor(1, thread_name_prefix="jobnik-sqlite")
            done = asyncio.get_running_loop().run_in_executor(self._thread, self._transact, work)
        except BaseException:
            lock.release()
            raise
        done.add_done_callback(lambda _: lock.release())
        return await asyncio.shield(done)

    def _transact(self, work: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._conn or self._open()
        conn.execute("BEGIN IMMEDIATE")
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
            check_same_thread=False,
        )
        for pragma in (*PRAGMAS, *_WRITER_PRAGMAS):
            conn.execute(pragma)
        self._conn = conn
        return conn

    async def close(self) -> None:
        """Close the connection and end the thread (a later run starts them again)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return

        def close() -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

        async with self.lock.held():  # after the transaction under way, if any
            await asyncio.get_running_loop().run_in_executor(thread, close)
        thread.shutdown(wait=True)
