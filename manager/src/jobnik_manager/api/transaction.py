"""A route's work in one transaction: the one way routes reach the database."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Concatenate, ParamSpec, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import Database

P = ParamSpec("P")
T = TypeVar("T")


async def in_transaction(
    db: Database,
    work: Callable[Concatenate[AsyncSession, P], Awaitable[T]],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """`work(session, *args, **kwargs)` in one transaction of `db`, committed when it
    returns and run again after a conflict (so it must have no effect outside the
    session)."""
    return await db.transaction(lambda s: work(s, *args, **kwargs))
