"""Request-scoped dependencies."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from ..db.engine import Database
from ..db.models import Stage
from ..dispatch.wakeups import ReadyWaiters
from ..domain.summary import Summary
from ..services.pages import CreatedBetween, PageRequest
from ..services.workers import Sightings
from ..settings import Settings
from .errors import documented_methods
from .schemas import QueryTime


# Async, so FastAPI calls them on the event loop rather than in a worker thread.
async def get_database(request: Request) -> Database:
    db: Database = request.app.state.database
    return db


async def get_waiters(request: Request) -> ReadyWaiters:
    waiters: ReadyWaiters = request.app.state.waiters
    return waiters


async def get_sightings(request: Request) -> Sightings:
    sightings: Sightings = request.app.state.sightings
    return sightings


async def known_query_only(request: Request) -> None:
    """Refuse a query parameter the route does not take (400), as the reference does,
    rather than ignore it: a misspelt filter must not pass for no filter."""
    if not request.query_params:
        return
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    for name in request.query_params:
        if name not in _query_names(route):
            raise RequestValidationError(
                [{"loc": ("query", name), "msg": "Unknown query parameter", "type": "unknown"}]
            )


async def documented_method(request: Request) -> None:
    """Refuse (405) a method that the request's path does not take, though a route with
    a parameter in its place does: GET /v1/tasks/claim is no GET /v1/tasks/{taskId}."""
    methods = documented_methods(request)
    if methods is not None and request.method not in methods:
        raise HTTPException(405, "Method Not Allowed")


def _query_names(route: APIRoute) -> frozenset[str]:
    """The query parameters of the route and of its dependencies, by their wire names."""
    names: set[str] = set()
    pending = [route.dependant]
    while pending:
        dependant = pending.pop()
        names.update(field.alias for field in dependant.query_params)
        pending.extend(dependant.dependencies)
    return frozenset(names)


async def get_page(
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=100)] = 10,
) -> PageRequest:
    return PageRequest(page=page, page_size=page_size)


async def get_created(
    from_date: QueryTime | None = None, end_date: QueryTime | None = None
) -> CreatedBetween:
    return CreatedBetween(from_date=from_date, end_date=end_date)


@dataclass(frozen=True, slots=True)
class InlineTasks:
    """How many tasks a read with should_return_tasks=true may answer with its stages:
    an answer of 100,000 tasks is some 35 MB, built in memory before it is sent."""

    limit: int

    def check(self, stages: Sequence[Stage]) -> None:
        """Refuse (413) before the stages' tasks are read if they are too many."""
        count = sum(Summary.of_columns(st).total for st in stages)
        if count > self.limit:
            raise HTTPException(
                413,
                f"{count:,} tasks to answer with the stages, more than the {self.limit:,} "
                "an answer may hold; read them a page at a time from "
                "GET /v1/stages/{stageId}/tasks",
            )


async def get_inline_tasks(request: Request) -> InlineTasks:
    settings: Settings = request.app.state.settings
    return InlineTasks(settings.max_inline_tasks)


DatabaseDep = Annotated[Database, Depends(get_database)]
InlineTasksDep = Annotated[InlineTasks, Depends(get_inline_tasks)]
PageDep = Annotated[PageRequest, Depends(get_page)]
# A list's creation period, `from_date` to `end_date`.
CreatedDep = Annotated[CreatedBetween, Depends(get_created)]
WaitersDep = Annotated[ReadyWaiters, Depends(get_waiters)]
# None where a route function is called directly (the fast lane's calls name no worker).
SightingsDep = Annotated[Sightings | None, Depends(get_sightings)]
