"""Walking a paged list to its end."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

from ._models import Page

T = TypeVar("T")


async def iterate_pages(fetch: Callable[[int], Awaitable[Page[T]]]) -> AsyncIterator[T]:
    """Yield the items of page 1, 2, ... until a page comes back short or empty.

    Pages are fetched one at a time as the caller consumes them; rows inserted or
    deleted meanwhile may shift items between pages, as with any offset pagination.
    """
    page = 1
    seen = 0
    while True:
        result = await fetch(page)
        for item in result.items:
            yield item
        seen += len(result.items)
        if not result.items or seen >= result.total:
            return
        page += 1


def iterate_filtered(
    list_page: Callable[..., Awaitable[Page[T]]], page_size: int, filters: Mapping[str, Any]
) -> AsyncIterator[T]:
    """Every item `list_page(page=..., page_size=page_size, **filters)` answers, page by
    page."""
    return iterate_pages(lambda page: list_page(page=page, page_size=page_size, **filters))
