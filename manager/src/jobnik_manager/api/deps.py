"""Request-scoped dependencies."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Query, Request

from ..db.engine import Database
from ..db.models import Stage
from ..dispatch.wakeups import ReadyWaiters
from ..domain.summary import Summary
from ..services.pages import PageRequest
from ..settings import Settings


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
WaitersDep = Annotated[ReadyWaiters, Depends(get_waiters)]
