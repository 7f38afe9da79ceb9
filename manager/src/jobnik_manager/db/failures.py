"""What a database failure means to a request: worth running again, or the database
being away (a 503 to the client), as opposed to a fault of the request or the code.

The errors come from two drivers' layers: SQLAlchemy's (wrapping asyncpg's or
sqlite3's) on the ORM paths, asyncpg's and sqlite3's own on the direct statements
(`db.direct`, `db.sqlite_writer`).
"""

from __future__ import annotations

import sqlite3

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import InterfaceError as SAInterfaceError
from sqlalchemy.exc import OperationalError as SAOperationalError

from .direct import BROKEN_CONNECTION

# SQLSTATEs after which PostgreSQL asks the client to run the transaction again.
CONFLICT_SQLSTATES = frozenset({"40001", "40P01"})

# The server is going away, restarting or not accepting connections yet: class 08
# (connection exceptions), 57P01-57P03 (admin or crash shutdown, cannot connect now),
# and class 53 (insufficient resources: too many connections already, out of memory).
_AWAY_SQLSTATE_PREFIXES = ("08", "57P01", "57P02", "57P03", "53")


def _driver_error(exc: BaseException) -> BaseException:
    return exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc


def _sqlstate(exc: BaseException) -> str | None:
    error = _driver_error(exc)
    code = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
    if code is None and error.__cause__ is not None:  # SQLAlchemy's asyncpg adaptor
        code = getattr(error.__cause__, "sqlstate", None)
    return code if isinstance(code, str) else None


def is_conflict(exc: BaseException) -> bool:
    """A deadlock or a serialization failure: the transaction may simply run again."""
    if isinstance(exc, SAOperationalError) and "database is locked" in str(exc.orig):
        return True  # SQLite's busy timeout ran out
    if isinstance(exc, sqlite3.OperationalError) and "database is locked" in str(exc):
        return True
    return _sqlstate(exc) in CONFLICT_SQLSTATES


def is_unavailable(exc: BaseException) -> bool:
    """The database is unreachable, restarting or shutting down, or the connection broke:
    nothing the request did wrong; it may succeed in a moment."""
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, SAInterfaceError | SAOperationalError) and not is_conflict(exc):
        return True
    if isinstance(exc, sqlite3.OperationalError) and not is_conflict(exc):
        return True  # the file cannot be opened, read or written
    error = _driver_error(exc)
    if isinstance(error, (*BROKEN_CONNECTION, OSError, asyncpg.PostgresConnectionError)):
        return True
    if isinstance(error.__cause__, (*BROKEN_CONNECTION, OSError)):
        return True
    code = _sqlstate(exc)
    return code is not None and code.startswith(_AWAY_SQLSTATE_PREFIXES)
