"""Rows written at commit: appends that nothing reads back in their own transaction.

A change of state logs an event and may announce a message: several small appends per
transaction, each a round trip and a statement of its own if written at once. Deferred,
they go out as one multi-row INSERT per table just before the commit (in the order they
were deferred), inside the same transaction, so they commit or roll back with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Table, event, insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from .bulk import insert_many

_ROWS = "deferred_rows"  # Session.info key: table -> rows, in the order deferred


def defer(s: AsyncSession, table: Table, rows: Iterable[Mapping[str, Any]]) -> None:
    """Insert `rows` into `table` when the session commits. Every row of a table names
    the same columns."""
    pending: dict[Table, list[Mapping[str, Any]]] = s.info.setdefault(_ROWS, {})
    pending.setdefault(table, []).extend(rows)


async def write_deferred(s: AsyncSession) -> None:
    """Write the deferred rows now: before a statement that must find them, or that
    inserts rows whose order must follow theirs (a bulk load of more events), and as a
    transaction of `Database.transaction` is about to commit (on the driver's own
    connection: db/session_driver.py)."""
    pending: dict[Table, list[Mapping[str, Any]]] = s.info.pop(_ROWS, {})
    for table, rows in pending.items():
        await insert_many(s, table, rows)


def _write(session: Session) -> None:
    # For a session committed some other way: through SQLAlchemy, at its commit.
    pending: dict[Table, list[Mapping[str, Any]]] = session.info.pop(_ROWS, {})
    for table, rows in pending.items():
        if rows:
            session.execute(insert(table), rows)


class DeferringSession(Session):
    """A session that writes its deferred rows as it commits."""


# Runs inside the commit of an AsyncSession too: its sync session commits within the
# same greenlet, so the INSERTs here are awaited like any statement.
event.listen(DeferringSession, "before_commit", _write)
