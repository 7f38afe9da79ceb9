"""Inserting many rows in one go: COPY on PostgreSQL, the driver's executemany on SQLite.

A create may carry tens of thousands of tasks. COPY is the fastest way into PostgreSQL
(no statement per row, no SQL to parse, binary values), several times faster end to end
than asyncpg's pipelined executemany that a Core INSERT of many rows turns into.
"""

from __future__ import annotations

import asyncio
import itertools
import operator
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from functools import cache
from typing import Any, TypeVar, cast

import asyncpg  # type: ignore[import-untyped]
import orjson
from sqlalchemy import JSON, Table, insert, text
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.types import TypeEngine

from .models import Base
from .session_driver import as_sqlalchemy_error, driver_of, run

Converter = Callable[[Any], Any]
# Up to this many rows go as one plain INSERT; more are streamed (COPY on PostgreSQL).
FEW_ROWS = 50
# Rows converted between two turns of the event loop. With PostgreSQL taking rows as fast
# as they come, a COPY never waits for its socket: these turns are all the other requests
# get while a large create streams.
_SLICE = 500
_NOTHING = object()
R = TypeVar("R")
_DEFERRED = "deferred_rows"  # Session.info key: table -> rows, in the order deferred
_GATHERING = "gathering_rows"  # Session.info key: new rows are deferred (db/deferred.py)


def defer(s: AsyncSession, table: Table, rows: Iterable[Mapping[str, Any]]) -> None:
    """Insert `rows` into `table` with the transaction's other deferred rows: at its
    commit, or sooner (db/deferred.py). Every row of a table names the same columns."""
    pending: dict[Table, list[Mapping[str, Any]]] = s.info.setdefault(_DEFERRED, {})
    pending.setdefault(table, []).extend(rows)


def take_deferred(info: dict[Any, Any]) -> dict[Table, list[Mapping[str, Any]]]:
    """The rows deferred so far, by table, no longer pending."""
    return cast(dict[Table, list[Mapping[str, Any]]], info.pop(_DEFERRED, {}))


def gathering(info: dict[Any, Any], on: bool) -> None:
    """While on, the few rows `insert_rows` is given are deferred rather than sent."""
    if on:
        info[_GATHERING] = True
    else:
        info.pop(_GATHERING, None)


async def insert_many(
    s: AsyncSession, model: type[Base] | Table, rows: Iterable[Mapping[str, Any]]
) -> None:
    """Insert `rows` (column name to value; every row names the same columns, in the same
    order) into the model's table, in the session's transaction, in the order given.

    `rows` may be a generator: on PostgreSQL each row is then built, sent and dropped in
    turn, never all held at once."""
    iterator = iter(rows)
    head = list(itertools.islice(iterator, FEW_ROWS + 1))
    if not head:
        return
    table = model if isinstance(model, Table) else cast(Table, model.__table__)
    if len(head) <= FEW_ROWS:
        # A few rows: plain INSERTs beat COPY's set-up round trips, which would otherwise
        # dominate a small create (and the latency of its first task).
        await insert_rows(s, table, head)
        return
    first = head[0]
    iterator = itertools.chain(head[1:], iterator)
    columns = list(first)
    conn = await s.connection()
    converters = _converters(table, columns, conn.dialect)
    records = (_record(row, converters) for row in itertools.chain((first,), iterator))
    await _stream(s, conn, table, columns, records)


async def insert_alike(
    s: AsyncSession,
    model: type[Base] | Table,
    same: Mapping[str, Any],
    varying: Sequence[str],
    values: Iterable[Sequence[Any]],
) -> None:
    """Insert a row per item of `values` (the values of the `varying` columns, in that
    order), each with the values of `same` in its other columns, in the session's
    transaction, in the order given. What all the rows share is converted once: the
    rows of a create differ in a few columns of many.

    `values` may be a generator: on PostgreSQL each row is then made as it is sent."""
    table = model if isinstance(model, Table) else cast(Table, model.__table__)
    iterator = iter(values)
    head = list(itertools.islice(iterator, FEW_ROWS + 1))
    if len(head) <= FEW_ROWS:
        rows: list[Mapping[str, Any]] = [
            {**same, **dict(zip(varying, v, strict=True))} for v in head
        ]
        await insert_rows(s, table, rows)
        return
    # A shared column NULL is left to its default (NULL): fewer values to encode.
    same = {k: v for k, v in same.items() if v is not None or _needs_null(table, k)}
    conn = await s.connection()
    dialect = conn.dialect
    fixed = _record(same, _converters(table, list(same), dialect))
    converters = _converters(table, varying, dialect)

    def record(row: Sequence[Any]) -> tuple[Any, ...]:
        if not converters:
            return fixed + tuple(row)
        converted = list(row)
        for i, convert in converters:
            converted[i] = convert(converted[i])
        return fixed + tuple(converted)

    rest = itertools.chain(head, iterator)
    await _stream(s, conn, table, [*same, *varying], map(record, rest))


def _needs_null(table: Table, name: str) -> bool:
    """Whether a NULL must be written to the column: left out of a COPY or a driver's
    INSERT, it takes its server default, if it has one (a model's Python default only
    applies to SQLAlchemy's own INSERTs)."""
    return table.c[name].server_default is not None


async def _stream(
    s: AsyncSession,
    conn: AsyncConnection,
    table: Table,
    columns: list[str],
    records: Iterator[tuple[Any, ...]],
) -> None:
    # Converting 100,000 rows takes a while: the event loop is let in every `_SLICE`.
    if conn.dialect.driver == "asyncpg":
        await _copy(s, conn, table, columns, _yielding(records))
    else:
        # SQLite: the driver's own executemany of the converted rows. A Core INSERT of
        # many rows would process every parameter of every row once more in Python.
        sql = _statement(table, tuple(columns), conn.dialect).sql
        while batch := list(itertools.islice(records, _SLICE)):
            await conn.exec_driver_sql(sql, batch)
            await asyncio.sleep(0)  # the statements run on the loop's thread (sqlite_inline)


def _converters(
    table: Table, columns: Sequence[str], dialect: Dialect
) -> list[tuple[int, Converter]]:
    """Each column's conversion of its values (as SQLAlchemy binds them), where it has one."""
    return [
        (i, convert)
        for i, name in enumerate(columns)
        if (convert := _converter(table.c[name].type, dialect)) is not None
    ]


async def insert_new(s: AsyncSession, obj: Base) -> None:
    """Insert a new model object's row with a plain INSERT, not through the session's unit
    of work (which costs several times the statement on a small create); the object
    stays detached, so later changes to it are not saved."""
    table = cast(Table, type(obj).__table__)
    await insert_rows(s, table, [{c.name: getattr(obj, c.name) for c in table.c}])


async def insert_rows(s: AsyncSession, table: Table, rows: list[Mapping[str, Any]]) -> None:
    """Insert a few `rows` (each naming the columns the first names) into `table`, in the
    session's transaction, on its driver's connection (db/session_driver.py): values
    converted as SQLAlchemy binds them, SQL made once per table and columns."""
    if not rows:
        return
    if s.info.get(_GATHERING):
        defer(s, table, rows)
        return
    driver = await driver_of(s)
    if driver is None:
        # Nothing sent yet: SQLAlchemy begins the transaction with this statement.
        await s.execute(insert(table), rows)
        return
    columns = tuple(rows[0])
    statement = _statement(table, columns, s.get_bind().dialect)
    await run(driver, statement.sql, [statement.record(row) for row in rows])


class _Statement:
    """An INSERT of some columns of a table, in the driver's own parameter style, with
    the conversions SQLAlchemy would make of their values."""

    def __init__(self, table: Table, columns: tuple[str, ...], dialect: Dialect) -> None:
        quote = dialect.identifier_preparer.quote
        names = ", ".join(quote(name) for name in columns)
        if dialect.paramstyle == "qmark":
            marks = ", ".join("?" for _ in columns)
        else:  # asyncpg's numbered parameters, whatever SQLAlchemy's adapter presents
            marks = ", ".join(f"${i}" for i in range(1, len(columns) + 1))
        into = dialect.identifier_preparer.format_table(table)
        self.sql = f"INSERT INTO {into} ({names}) VALUES ({marks})"
        self._values = operator.itemgetter(*columns)
        self._one = len(columns) == 1
        self._converters = _converters(table, columns, dialect)

    def record(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        values = [self._values(row)] if self._one else list(self._values(row))
        for i, convert in self._converters:
            values[i] = convert(values[i])
        return tuple(values)


@cache
def _statement(table: Table, columns: tuple[str, ...], dialect: Dialect) -> _Statement:
    return _Statement(table, columns, dialect)


async def insert_together(
    s: AsyncSession,
    pending: Mapping[Table, Sequence[Mapping[str, Any]]],
    notify: tuple[str, str] | None = None,
) -> None:
    """PostgreSQL: insert a few rows into each of several tables, and NOTIFY `notify`'s
    channel with its payload, as one statement in the session's transaction: one round
    trip where a statement per table took one each. Each table's rows go as an array per
    column (`unnest`), so the statement's text, and the plan kept for it, depends on the
    tables and columns alone, not on how many rows there are. A foreign key between two
    of the tables is checked as the statement ends, with every row in place."""
    groups = [(table, tuple(rows[0]), rows) for table, rows in pending.items() if rows]
    tables = tuple((table, columns) for table, columns, _ in groups)
    statement = _together(tables, notify is not None, s.get_bind().dialect)
    args: list[Any] = []
    for table, columns, rows in groups:
        args.extend(statement.arrays(table, columns, rows))
    if notify is not None:
        args.extend(notify)
    driver = await driver_of(s)
    if driver is None:  # nothing sent yet: SQLAlchemy begins the transaction with it
        await (await s.connection()).exec_driver_sql(statement.sql, tuple(args))
        return
    await run(driver, statement.sql, [tuple(args)])


class _Together:
    """The statement of `insert_together` for some tables' columns."""

    def __init__(
        self, tables: tuple[tuple[Table, tuple[str, ...]], ...], notify: bool, dialect: Dialect
    ) -> None:
        quote = dialect.identifier_preparer.quote
        parts: list[str] = []
        n = 0
        self._converters = {t: _converters(t, columns, dialect) for t, columns in tables}
        for table, columns in tables:
            arrays = []
            for name in columns:
                n += 1
                arrays.append(f"${n}::{table.c[name].type.compile(dialect)}[]")
            names = ", ".join(quote(name) for name in columns)
            parts.append(
                f"INSERT INTO {dialect.identifier_preparer.format_table(table)} ({names}) "
                f"SELECT * FROM unnest({', '.join(arrays)})"
            )
        if notify:
            parts.append(f"SELECT pg_notify(${n + 1}, ${n + 2})")
        *first, last = parts
        ctes = ", ".join(f"w{i} AS ({part})" for i, part in enumerate(first))
        self.sql = f"WITH {ctes} {last}" if ctes else last

    def arrays(
        self, table: Table, columns: tuple[str, ...], rows: Sequence[Mapping[str, Any]]
    ) -> list[list[Any]]:
        """The rows' values, a list per column, converted as SQLAlchemy binds them."""
        arrays = [[row[name] for row in rows] for name in columns]
        for i, convert in self._converters[table]:
            arrays[i] = [convert(v) for v in arrays[i]]
        return arrays


@cache
def _together(
    tables: tuple[tuple[Table, tuple[str, ...]], ...], notify: bool, dialect: Dialect
) -> _Together:
    return _Together(tables, notify, dialect)


async def _yielding(records: Iterable[tuple[Any, ...]]) -> AsyncIterator[tuple[Any, ...]]:
    """`records` one by one, a turn of the event loop after each `_SLICE`: the driver
    asks for more as long as the server takes them, never waiting otherwise."""
    for i, record in enumerate(records, 1):
        yield record
        if i % _SLICE == 0:
            await asyncio.sleep(0)


async def _copy(
    s: AsyncSession,
    conn: AsyncConnection,
    table: Table,
    columns: list[str],
    records: AsyncIterable[tuple[Any, ...]],
) -> None:
    raw = await conn.get_raw_connection()
    driver = raw.driver_connection
    assert driver is not None
    if not driver.is_in_transaction():
        # SQLAlchemy begins on the server at the first statement; COPY must not run
        # before it, in autocommit.
        await s.execute(text("SELECT 1"))
    try:
        # `records` is a generator: asyncpg sends each 512 kB of rows as it fills, so the
        # server inserts the first rows while later ones are still being converted.
        await driver.copy_records_to_table(
            table.name, records=records, columns=columns, schema_name=table.schema
        )
    except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise as_sqlalchemy_error(exc, f"COPY {table.name}") from exc


def _record(row: Mapping[str, Any], converters: list[tuple[int, Converter]]) -> tuple[Any, ...]:
    values = list(row.values())
    for i, convert in converters:
        values[i] = convert(values[i])
    return tuple(values)


def _converter(column_type: TypeEngine[Any], dialect: Dialect) -> Converter | None:
    """A value as a Core INSERT would bind it (JSON text, UTC datetimes, ...), so rows
    stored through COPY read back the same as rows stored any other way."""
    process: Converter | None = column_type.dialect_impl(dialect).bind_processor(dialect)
    if process is None:
        return None
    if isinstance(column_type, JSON):
        process = _json_text(process)
    return same_as_last(process)


def _json_text(standard: Converter) -> Converter:
    """orjson in place of the standard library's json (the dialect's serializer), several
    times faster on many small objects: the text differs in spacing only, the JSON is
    the same. Values orjson refuses (integers beyond 64 bits) and non-ASCII text take the
    standard path, whose ASCII-only escapes store on a database of any encoding."""

    def convert(value: Any) -> Any:
        try:
            encoded = orjson.dumps(value)
        except orjson.JSONEncodeError:
            return standard(value)
        return encoded.decode() if encoded.isascii() else standard(value)

    return convert


def same_as_last(process: Callable[[Any], R]) -> Callable[[Any], R]:
    """`process`, reusing its last result while the value is the very same object: the
    rows of one insert (or one answer) share their timestamps, flags and defaults."""
    last_value: Any = _NOTHING
    last_result: R

    def convert(value: Any) -> R:
        nonlocal last_value, last_result
        if value is not last_value:
            last_value, last_result = value, process(value)
        return last_result

    return convert


def equal_to_last(process: Callable[[Any], R]) -> Callable[[Any], R]:
    """`process`, reusing its last result while the value equals the last one: for a
    column read back from SQLite, whose every row holds new objects, though the rows
    of one claim or one create share their times and ids. Only for processes whose
    results are immutable (a JSON object read is not): two rows then share one."""
    last_value: Any = _NOTHING
    last_result: R

    def convert(value: Any) -> R:
        nonlocal last_value, last_result
        if value != last_value or type(value) is not type(last_value):
            last_value, last_result = value, process(value)
        return last_result

    return convert
