"""INSERT ... ON CONFLICT, which SQLAlchemy builds per dialect: the construct for the
session's database."""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession


def insert_for(s: AsyncSession, table: Any) -> Any:
    """An INSERT into `table` that takes `on_conflict_do_nothing` / `_do_update`."""
    return insert_on(s.get_bind().dialect.name, table)


def insert_on(dialect: str, table: Any) -> Any:
    """The same, on the database of the dialect named `dialect`."""
    return (postgresql if dialect == "postgresql" else sqlite).insert(table)
