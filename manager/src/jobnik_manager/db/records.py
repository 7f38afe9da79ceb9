"""asyncpg's rows as the model objects SQLAlchemy would have loaded."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any, TypeVar, cast

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy import Table

from .types import EnumText

M = TypeVar("M")


def model_values(table: Table, r: asyncpg.Record, prefix: str = "") -> dict[str, Any]:
    """The columns of `table` from `r` (named `<prefix><column>`), statuses and priority
    as the enums the columns read back through SQLAlchemy."""
    values = {c.name: r[prefix + c.name] for c in table.c}
    for c in table.c:
        if isinstance(c.type, EnumText):
            values[c.name] = c.type.coerce(values[c.name])
    return values


def detached(model: type[M], values: Mapping[str, Any]) -> M:
    """An object with the attributes of a `model` holding `values`, without SQLAlchemy's
    instrumentation: for a row read only to be answered or measured, never added to a
    session. Making a model object cost a GET of one stage or job about a tenth of the
    manager's CPU (docs/performance.md)."""
    return cast(M, SimpleNamespace(**values))
