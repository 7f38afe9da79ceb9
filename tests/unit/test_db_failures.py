"""Which database errors mean "run it again" or "the database is away" (a 503), and
which are faults to report as they are."""

from __future__ import annotations

import asyncpg
import pytest
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from jobnik_manager.db.failures import is_conflict, is_unavailable


def _wrapped(error: Exception, cls: type[DBAPIError] = DBAPIError) -> DBAPIError:
    return cls("SELECT 1", None, error)


@pytest.mark.parametrize(
    "error",
    [
        asyncpg.CannotConnectNowError("the database system is starting up"),
        asyncpg.AdminShutdownError("terminating connection due to administrator command"),
        asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
        asyncpg.InternalClientError("cannot switch to state 12"),
        ConnectionRefusedError(111, "Connection refused"),
        _wrapped(asyncpg.CannotConnectNowError("the database system is shutting down")),
        _wrapped(ConnectionResetError(104, "reset")),
        _wrapped(Exception("server closed the connection"), OperationalError),
        asyncpg.TooManyConnectionsError("sorry, too many clients already"),
        _wrapped(asyncpg.TooManyConnectionsError("sorry, too many clients already")),
    ],
    ids=repr,
)
def test_a_database_that_is_away_is_unavailable(error: Exception) -> None:
    assert is_unavailable(error)
    assert not is_conflict(error)


@pytest.mark.parametrize(
    "error",
    [asyncpg.DeadlockDetectedError("deadlock"), asyncpg.SerializationError("serialization")],
    ids=repr,
)
def test_deadlocks_and_serialization_failures_are_conflicts(error: Exception) -> None:
    assert is_conflict(error) and is_conflict(_wrapped(error))
    assert not is_unavailable(error)


def test_sqlite_busy_is_a_conflict() -> None:
    assert is_conflict(_wrapped(Exception("database is locked"), OperationalError))


@pytest.mark.parametrize(
    "error",
    [
        asyncpg.UniqueViolationError("duplicate key"),
        _wrapped(asyncpg.UniqueViolationError("duplicate key"), IntegrityError),
        asyncpg.UndefinedTableError('relation "jobs" does not exist'),
        asyncpg.QueryCanceledError("canceling statement due to statement timeout"),
        ValueError("not a database error"),
    ],
    ids=repr,
)
def test_other_errors_are_neither(error: Exception) -> None:
    assert not is_unavailable(error) and not is_conflict(error)
