"""/v1/workers (extension): the workers claiming now, from their recent claims and the
tasks they hold (services.workers); over all jobs, like /v1/stage-types."""

from __future__ import annotations

from datetime import datetime, timedelta

from fastapi import APIRouter, Request

from ...services.workers import live_workers
from ..deps import DatabaseDep
from ..edge import EdgeRoute
from ..schemas import ErrorMessage, Outbound

router = APIRouter(prefix="/v1/workers", tags=["workers"], route_class=EdgeRoute)


class WorkerOut(Outbound):
    name: str
    stage_types: list[str]
    principal: str | None = None  # the token its claims carry (null with auth off)
    first_seen: datetime | None = None  # its first claim this manager recorded
    last_seen: datetime  # its latest claim or heartbeat
    in_flight: int  # tasks it holds under a live lease


class WorkersOut(Outbound):
    items: list[WorkerOut]
    total: int
    window_seconds: float  # how long a worker stays listed after it was last seen


@router.get("", response_model=WorkersOut, responses={400: {"model": ErrorMessage}})
async def workers(request: Request, db: DatabaseDep) -> WorkersOut:
    """The named workers seen claiming within the window, or holding a task, by name."""
    window: timedelta = request.app.state.settings.workers_window
    items = [
        WorkerOut.model_validate(w, from_attributes=True) for w in await live_workers(db, window)
    ]
    return WorkersOut(items=items, total=len(items), window_seconds=window.total_seconds())
