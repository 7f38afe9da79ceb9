"""PostgreSQL: the hot single statements, run on asyncpg without SQLAlchemy's async layer.

A dequeue and a report each run one statement (`db.claim`, `db.complete`). Through an
AsyncConnection that statement cost more CPU than the rest of the request: greenlet
switches to check a connection out, to execute and to check it in, pool events, an
execution context and a result Row per row. Here a Core statement is compiled once to
asyncpg's SQL (`$1`, `$2`, ...) with its binds in order, and each run only puts the
parameters in that order and asks a connection of a plain asyncpg pool for the rows,
which asyncpg prepares once per connection.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

from . import json_text

_DIALECT = PGDialect_asyncpg()  # type: ignore[no-untyped-call]
_GIVEN = object()  # a bind whose value every run gives


@dataclass(frozen=True, slots=True)
class Bind:
    name: str
    constant: Any  # the statement's own value (converted), or _GIVEN
    convert: Callable[[Any], Any] | None  # a given value's bind processing, as SQLAlchemy's


@dataclass(frozen=True, slots=True)
class DirectStatement:
    """A Core statement compiled for asyncpg; `args` orders a run's parameters."""

    sql: str
    binds: tuple[Bind, ...]

    @classmethod
    def of(cls, statement: ClauseElement) -> DirectStatement:
        compiled = statement.compile(dialect=_DIALECT)
        assert isinstance(compiled, SQLCompiler)
        if compiled.post_compile_params or compiled.positiontup is None:
            # An expanding IN is rendered per run; bind an array with ANY() instead.
            raise ValueError("a direct statement takes no expanding parameters")
        binds = []
        for name in compiled.positiontup:
            bind = compiled.binds[name]
            convert = bind.type.dialect_impl(_DIALECT).bind_processor(_DIALECT)
            if bind.required:
                binds.append(Bind(name, _GIVEN, convert))
            else:  # the statement's own value, converted once
                value = bind.effective_value
                binds.append(Bind(name, value if convert is None else convert(value), None))
        return cls(compiled.string, tuple(binds))

    def args(self, params: Mapping[str, Any]) -> list[Any]:
        values = []
        for bind in self.binds:
            value = params[bind.name] if bind.constant is _GIVEN else bind.constant
            values.append(value if bind.convert is None else bind.convert(value))
        return values


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
