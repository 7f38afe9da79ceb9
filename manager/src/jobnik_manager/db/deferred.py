"""Rows written together: appends that nothing reads back in their own transaction.

A change of state logs an event and may announce a message: several small appends per
transaction, each a round trip and a statement of its own if written at once. Deferred,
they go out together just before the commit (in the order they were deferred, per
table), inside the same transaction, so they commit or roll back with it. On PostgreSQL
a few rows of each table, and the transaction's NOTIFY, make one statement
(`bulk.insert_together`). A small create gathers its new rows the same way
(`gathered`): its job, stages, tasks and their events in one statement.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import Table, event, insert, text
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from .bulk import FEW_ROWS, defer, gathering, insert_many, insert_together, take_deferred

__all__ = ["DeferringSession", "defer", "defer_notify", "gathered", "write_deferred"]

_NOTIFY = "deferred_notify"  # Session.info key: (channel, payload) of the NOTIFY to send
_NOTIFY_SQL = text("SELECT pg_notify(:c, :p)")  # where the rows go table by table


def defer_notify(s: AsyncSession, channel: str, payload: str) -> None:
    """NOTIFY `channel` with `payload` along with the deferred rows (PostgreSQL delivers
    it at commit, and drops it on rollback, like the change it announces)."""
    s.info[_NOTIFY] = (channel, payload)


@asynccontextmanager
async def gathered(s: AsyncSession, *, until_commit: bool = False) -> AsyncIterator[None]:
    """Rows inserted a few at a time in the block (`bulk.insert_rows`) are deferred, and
    written with the others as it ends, so nothing after it misses them. Nothing in the
    block may read them back, nor stream many rows (which must follow them). On SQLite,
    whose statements cost no round trip, the rows are inserted as they come.

    `until_commit`: they stay deferred past the block, to go with the rows written at
    the commit (the idempotency key's, the NOTIFY) in the same statement; for a caller
    that neither reads nor inserts anything more before its transaction commits."""
    if s.get_bind().dialect.name != "postgresql":
        yield
        return
    gathering(s.info, True)
    try:
        yield
    finally:
        gathering(s.info, False)
    if not until_commit:
        await write_deferred(s)


async def write_deferred(s: AsyncSession) -> None:
    """Write the deferred rows now: before a statement that must find them, or that
    inserts rows whose order must follow theirs (a bulk load of more events), and as a
    transaction of `Database.transaction` is about to commit (on the driver's own
    connection: db/session_driver.py)."""
    pending = take_deferred(s.info)
    notify: tuple[str, str] | None = s.info.pop(_NOTIFY, None)
    if not pending and notify is None:
        return
    if s.get_bind().dialect.name == "postgresql" and all(
        len(rows) <= FEW_ROWS for rows in pending.values()
    ):
        await insert_together(s, pending, notify)
        return
    for table, rows in pending.items():
        await insert_many(s, table, rows)
    if notify is not None:
        await s.execute(_NOTIFY_SQL, {"c": notify[0], "p": notify[1]})


def _write(session: Session) -> None:
    # For a session committed some other way: through SQLAlchemy, at its commit.
    pending: dict[Table, list[Mapping[str, Any]]] = take_deferred(session.info)
    for table, rows in pending.items():
        if rows:
            session.execute(insert(table), rows)
    notify: tuple[str, str] | None = session.info.pop(_NOTIFY, None)
    if notify is not None:
        session.execute(_NOTIFY_SQL, {"c": notify[0], "p": notify[1]})


class DeferringSession(Session):
    """A session that writes its deferred rows as it commits."""


# Runs inside the commit of an AsyncSession too: its sync session commits within the
# same greenlet, so the INSERTs here are awaited like any statement.
event.listen(DeferringSession, "before_commit", _write)
