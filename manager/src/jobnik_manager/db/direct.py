"""PostgreSQL: the hot single statements, run on asyncpg without SQLAlchemy's async layer.

A dequeue and a report each run one statement (`db.claim`, `db.complete`). Through an
AsyncConnection that statement cost more CPU than the rest of the request: greenlet
switches to check a connection out, to execute and to check it in, pool events, an
execution context and a result Row per row. Here the statement is literal SQL
(`db.queries`, from db/sql/) with asyncpg's parameters (`$1`, `$2`, ...), and each run
only puts the parameters in that order and asks a connection of a plain asyncpg pool for
the rows, which asyncpg prepares once per connection.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from . import json_text

GIVEN: Any = object()  # a parameter whose value every run gives


@dataclass(frozen=True, slots=True)
class Bind:
    name: str
    constant: Any  # the statement's own value, or GIVEN


@dataclass(frozen=True, slots=True)
class DirectStatement:
    """asyncpg's SQL; `args` orders a run's parameters."""

    sql: str
    binds: tuple[Bind, ...]

    def args(self, params: Mapping[str, Any]) -> list[Any]:
        return [params[b.name] if b.constant is GIVEN else b.constant for b in self.binds]


# After these a connection cannot be trusted (the server ended it, or the client lost
# track of it): it is closed rather than put back, and the statement runs again if it is
# safe to (`Database.direct`).
BROKEN_CONNECTION = (
    asyncpg.exceptions.ConnectionDoesNotExistError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    ConnectionError,
)


async def setup_connection(conn: asyncpg.Connection) -> None:
    """`json` columns decoded as the engine decodes them (`db.engine.make_engine`)."""
    await conn.set_type_codec(
        "json", schema="pg_catalog", encoder=json.dumps, decoder=json_text.loads, format="text"
    )


async def reset_connection(conn: asyncpg.Connection) -> None:
    """Statements here run alone (autocommit) and change no session state, so a
    connection going back to the pool needs no reset round trip; one left inside a
    transaction (it should never be) is rolled back."""
    if conn.is_in_transaction():
        await conn.execute("ROLLBACK")
