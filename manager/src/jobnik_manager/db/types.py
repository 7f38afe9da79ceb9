"""Column types that behave the same on PostgreSQL and SQLite."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from sqlalchemy import JSON, DateTime, String
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

E = TypeVar("E", bound=StrEnum)

# Plain `json` on PostgreSQL, not jsonb: clients get back exactly the numbers they sent
# (jsonb rewrites 1.5e300 as a 301-digit integer).
JsonColumn = JSON()


class UtcDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in, aware UTC datetimes out (SQLite keeps no offset)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class EnumText(TypeDecorator[E]):
    """A StrEnum stored as its value in a VARCHAR(16) (the schema's plain string column),
    read back as the member.

    Bound as they are: a member is the string it stores, and the direct statements bind
    plain strings. Reading maps the text through a dict, the cheapest conversion."""

    impl = String(16)
    cache_ok = True

    def __init__(self, enum: type[E]) -> None:
        super().__init__()
        self.enum = enum
        self._members: dict[str | None, E | None] = {m.value: m for m in enum}
        self._members[None] = None

    def result_processor(self, dialect: Dialect, coltype: object) -> Callable[[Any], E | None]:
        return self._members.__getitem__

    def coerce(self, value: Any) -> E:
        """A stored value (a plain string from a direct statement) as the member."""
        member = self._members[value]
        assert member is not None
        return member
