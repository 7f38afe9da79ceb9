"""SQLite: values as SQLAlchemy stores and reads them, for statements run on the driver.

The hot calls run on a plain sqlite3 connection (`db.sqlite_writer`), yet their rows must
be the rows every other path writes and reads: a UUID as 32 hex digits, a time as UTC
text, JSON as text, a flag as 0 or 1. Each column is converted by the very processors
of its type that SQLAlchemy's SQLite dialect uses, so the two cannot drift apart.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Table
from sqlalchemy.dialects.sqlite.pysqlite import SQLiteDialect_pysqlite

from ..domain.moves import Move
from . import json_text
from .bulk import equal_to_last, same_as_last
from .types import UtcDateTime

Convert = Callable[[Any], Any]
_DIALECT = SQLiteDialect_pysqlite()


def _same(value: Any) -> Any:
    return value


def _utc_time(text: str | None) -> datetime | None:
    """A time as the dialect stores it (`YYYY-MM-DD HH:MM:SS.ffffff`, UTC), aware."""
    return None if text is None else datetime.fromisoformat(text).replace(tzinfo=UTC)


def _json(text: str | None) -> Any:
    return None if text is None else json_text.loads(text)


class Columns:
    """A table's columns' conversions: to bind (`bind`) and as read (`row`)."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self._binders: dict[str, Convert] = {}
        self._readers: dict[str, Convert] = {}
        for c in table.c:
            impl = c.type.dialect_impl(_DIALECT)
            self._binders[c.name] = impl.bind_processor(_DIALECT) or _same
            self._readers[c.name] = impl.result_processor(_DIALECT, None) or _same
            # The two slowest readers, in C: the text the dialect writes, read alike.
            if isinstance(c.type, UtcDateTime):
                self._readers[c.name] = _utc_time
            elif isinstance(c.type, JSON):
                self._readers[c.name] = _json

    def binder(self, name: str) -> Convert:
        return self._binders[name]

    def bind(self, name: str, value: Any) -> Any:
        return self._binders[name](value)

    def read(self, name: str, value: Any) -> Any:
        return self._readers[name](value)

    def bound(self, values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
        """`values` by column, bound, each key prefixed."""
        return {prefix + name: self._binders[name](v) for name, v in values.items()}

    def rows(self, cursor: sqlite3.Cursor) -> list[dict[str, Any]]:
        """The cursor's rows, each by column name, read as SQLAlchemy reads them (rows of
        one statement share their times, ids and statuses: each is converted once; each
        row gets a JSON value of its own)."""
        names = [d[0] for d in cursor.description]
        readers = [self._reader(n) for n in names]
        return [
            {n: read(v) for n, read, v in zip(names, readers, row, strict=True)}
            for row in cursor.fetchall()
        ]

    def _reader(self, name: str) -> Convert:
        read = self._readers.get(name, _same)
        if read is _same:
            return _same
        return same_as_last(read) if read is _json else equal_to_last(read)

    def insert(self, columns: Iterable[str]) -> str:
        names = list(columns)
        marks = ", ".join(f":{n}" for n in names)
        return f"INSERT INTO {self.table.name} ({', '.join(names)}) VALUES ({marks})"


def assignments(move: Move, prefix: str) -> str:
    """The SET list of the columns `move` writes (`Move.columns`), each bound to the
    parameter `<prefix><column>` (`moved` gives their values)."""
    return ", ".join(f"{c} = :{prefix}{c}" for c in move.columns(datetime.min))


def moved(columns: Columns, move: Move, now: datetime, prefix: str) -> dict[str, Any]:
    """The values of `move`'s columns at `now`, bound, for `assignments`."""
    return columns.bound(move.columns(now), prefix)


def task_moved_event(
    move: Move, row: Mapping[str, Any], now: datetime, principal: str | None
) -> dict[str, Any]:
    """`move`'s event row for a task row it moved (as its statement returned it)."""
    return move.event(
        job_id=row["job_id"],
        entity_id=row["id"],
        stage_id=row["stage_id"],
        attempt=row["attempts"],
        lease_id=row["lease_id"],
        worker=row["worker"],
        now=now,
        principal=principal,
    )
