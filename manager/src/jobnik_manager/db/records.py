"""asyncpg's rows as the model objects SQLAlchemy would have loaded."""

from __future__ import annotations

from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy import Table

from .types import EnumText


def model_values(table: Table, r: asyncpg.Record, prefix: str = "") -> dict[str, Any]:
    """The columns of `table` from `r` (named `<prefix><column>`), statuses and priority
    as the enums the columns read back through SQLAlchemy."""
    values = {c.name: r[prefix + c.name] for c in table.c}
    for c in table.c:
        if isinstance(c.type, EnumText):
            values[c.name] = c.type.coerce(values[c.name])
    return values
