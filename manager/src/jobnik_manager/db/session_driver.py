"""The driver's own connection under a session's transaction.

A statement sent through a session pays SQLAlchemy's statement path on every run (a
cache key, an execution context, bind processing, a result to set up): on a small
create that cost several times the INSERTs themselves. The appends a transaction makes
with SQL that never changes (its rows as inserted, its events, its NOTIFY) go straight
to the driver's connection instead, inside the same transaction, which SQLAlchemy began
and commits (db/bulk.py `insert_rows` and `insert_together`, db/deferred.py).
"""

from __future__ import annotations

import sqlite3
import weakref
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession

from .sqlite_inline import InlineConnection

_TRACED: weakref.WeakSet[Engine] = weakref.WeakSet()


def through_sqlalchemy(engine: Engine) -> None:
    """Send every statement of `engine` through SQLAlchemy, whose statements are traced
    (observe/tracing.py): a traced manager shows each of a transaction's statements."""
    _TRACED.add(engine)


async def driver_of(s: AsyncSession) -> asyncpg.Connection | sqlite3.Connection | None:
    """The asyncpg or sqlite3 connection of `s`'s transaction; None while the server has
    not begun it (SQLAlchemy's asyncpg adapter sends BEGIN with the first statement, and
    a statement sent around it before then would run in autocommit), and for a traced
    engine's sessions."""
    if s.get_bind() in _TRACED:
        return None
    conn = await s.connection()
    driver: Any = (await conn.get_raw_connection()).driver_connection
    if isinstance(driver, InlineConnection):
        lite = driver.sqlite
        return lite if lite.in_transaction else None
    if isinstance(driver, asyncpg.Connection) and driver.is_in_transaction():
        return driver
    return None


async def run(
    driver: asyncpg.Connection | sqlite3.Connection, sql: str, records: list[tuple[Any, ...]]
) -> None:
    """`sql` once per record (asyncpg's `$n` or sqlite3's `?` parameters), its errors
    raised as SQLAlchemy raises the driver's, so the transaction's retry on conflict
    (by SQLSTATE), a duplicate key's IntegrityError and the 503 on a lost database
    treat it like any statement."""
    if isinstance(driver, sqlite3.Connection):
        try:
            driver.executemany(sql, records)
        except sqlite3.Error as exc:
            raise DBAPIError.instance(sql, None, exc, sqlite3.Error) from exc
        return
    try:
        if len(records) == 1:
            await driver.execute(sql, *records[0])
        else:
            await driver.executemany(sql, records)
    except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise as_sqlalchemy_error(exc, sql) from exc


def as_sqlalchemy_error(exc: Exception, statement: str) -> DBAPIError:
    """An asyncpg error as SQLAlchemy raises a driver's."""
    if isinstance(exc, asyncpg.InterfaceError):
        return InterfaceError(statement, None, exc)
    if isinstance(
        exc,
        asyncpg.PostgresConnectionError
        | asyncpg.OperatorInterventionError
        | asyncpg.InsufficientResourcesError,
    ):
        return OperationalError(statement, None, exc)
    if isinstance(exc, asyncpg.IntegrityConstraintViolationError):
        return IntegrityError(statement, None, exc)
    return DBAPIError(statement, None, exc)
