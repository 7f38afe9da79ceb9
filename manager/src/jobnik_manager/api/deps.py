"""Request-scoped dependencies."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request

from ..db.engine import Database
from ..services.pages import PageRequest


def get_database(request: Request) -> Database:
    db: Database = request.app.state.database
    return db


def get_page(
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=100)] = 10,
) -> PageRequest:
    return PageRequest(page=page, page_size=page_size)


DatabaseDep = Annotated[Database, Depends(get_database)]
PageDep = Annotated[PageRequest, Depends(get_page)]
