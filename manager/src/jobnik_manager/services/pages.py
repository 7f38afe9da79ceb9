"""Pagination of list queries: `page` from 1, `page_size` items, with the total."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.models import Job

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PageRequest:
    page: int = 1
    page_size: int = 10

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.page_size


@dataclass(frozen=True, slots=True)
class PageResult(Generic[T]):
    total: int
    items: list[T]


def matching(stmt: Select[Any], *conditions: tuple[Any, object]) -> Select[Any]:
    """`stmt` narrowed by each `(column, value)` whose value was given (is not None)."""
    for column, value in conditions:
        if value is not None:
            stmt = stmt.where(column == value)
    return stmt


@dataclass(frozen=True, slots=True)
class OwnedList:
    """A list filter's `owner`: a producer's lists hold its own jobs' rows only (None:
    everyone's)."""

    owner: str | None = None

    def owned(self, stmt: Select[Any], job_id: Any) -> Select[Any]:
        """`stmt` kept to the rows whose `job_id` column names one of the owner's jobs."""
        if self.owner is None:
            return stmt
        return stmt.where(job_id.in_(select(Job.id).where(Job.owner == self.owner)))


@dataclass(frozen=True, slots=True)
class CreatedBetween:
    """A list filter's creation period: from `from_date` to `end_date`, both included."""

    from_date: datetime | None = None
    end_date: datetime | None = None

    def narrow(self, stmt: Select[Any], table: Any) -> Select[Any]:
        if self.from_date is not None:
            stmt = stmt.where(table.creation_time >= self.from_date)
        if self.end_date is not None:
            stmt = stmt.where(table.creation_time <= self.end_date)
        return stmt


ANY_TIME = CreatedBetween()


async def paginate(s: AsyncSession, stmt: Select[Any], page: PageRequest) -> PageResult[Any]:
    total = (
        await s.execute(select(func.count()).select_from(stmt.order_by(None).subquery()))
    ).scalar_one()
    rows = (await s.execute(stmt.offset(page.offset).limit(page.page_size))).scalars()
    return PageResult(total=total, items=list(rows))
