"""INSERT ... ON CONFLICT, which SQLAlchemy builds per dialect: the construct for the
session's database."""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession


def insert_for(s: AsyncSession, table: Any) -> Any:
    """An INSERT into `table` that takes `on_conflict_do_nothing` / `_do_update`."""
    dialect = postgresql if s.get_bind().dialect.name == "postgresql" else sqlite
    return dialect.insert(table)
