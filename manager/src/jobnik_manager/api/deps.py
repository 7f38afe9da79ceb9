"""Request-scoped dependencies."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request

from ..db.engine import Database
from ..dispatch.wakeups import ReadyWaiters
from ..services.pages import PageRequest


# Async, so FastAPI calls them on the event loop rather than in a worker thread.
async def get_database(request: Request) -> Database:
    db: Database = request.app.state.database
    return db


async def get_waiters(request: Request) -> ReadyWaiters:
    waiters: ReadyWaiters = request.app.state.waiters
    return waiters


async def get_page(
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=100)] = 10,
) -> PageRequest:
    return PageRequest(page=page, page_size=page_size)


DatabaseDep = Annotated[Database, Depends(get_database)]
PageDep = Annotated[PageRequest, Depends(get_page)]
WaitersDep = Annotated[ReadyWaiters, Depends(get_waiters)]
