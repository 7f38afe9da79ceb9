"""asyncpg's rows as the model objects SQLAlchemy would have loaded."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from types import SimpleNamespace
from typing import Any, TypeVar, cast

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy import Table

from .types import EnumText

M = TypeVar("M")


def model_values(table: Table, r: asyncpg.Record, prefix: str = "") -> dict[str, Any]:
    """The columns of `table` from `r` (named `<prefix><column>`), statuses and priority
    as the enums the columns read back through SQLAlchemy."""
    return {
        name: r[key] if coerce is None else coerce(r[key])
        for name, key, coerce in _columns(table, prefix)
    }


@cache
def _columns(table: Table, prefix: str) -> tuple[tuple[str, str, Callable[[Any], Any] | None], ...]:
    """Each column's name, its name in a row, and what reads an enum's value."""
    return tuple(
        (c.name, prefix + c.name, c.type.coerce if isinstance(c.type, EnumText) else None)
        for c in table.c
    )


def detached(model: type[M], values: Mapping[str, Any]) -> M:
    """An object with the attributes of a `model` holding `values`, without SQLAlchemy's
    instrumentation: for a row read only to be answered or measured, never added to a
    session. Making a model object cost a GET of one stage or job about a tenth of the
    manager's CPU (docs/performance.md)."""
    return cast(M, SimpleNamespace(**values))
