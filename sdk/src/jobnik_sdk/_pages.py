"""Walking a paged list to its end."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

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
