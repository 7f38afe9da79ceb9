"""Pagination of list queries: `page` from 1, `page_size` items, with the total."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

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


async def paginate(s: AsyncSession, stmt: Select[Any], page: PageRequest) -> PageResult[Any]:
    total = (
        await s.execute(select(func.count()).select_from(stmt.order_by(None).subquery()))
    ).scalar_one()
    rows = (await s.execute(stmt.offset(page.offset).limit(page.page_size))).scalars()
    return PageResult(total=total, items=list(rows))
