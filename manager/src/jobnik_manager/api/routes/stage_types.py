"""/v1/stage-types (extension): each stage type's queue as workers see it: tasks waiting
to be claimed, tasks in flight, the oldest waiting task's age. The figures /metrics
exposes (observe.state), read through indexes and counters, so the call costs the same
whatever the history; over all jobs, like /metrics."""

from __future__ import annotations

from fastapi import APIRouter

from ...observe.state import read_state
from ..deps import DatabaseDep
from ..edge import EdgeRoute
from ..schemas import ErrorMessage, Outbound

router = APIRouter(prefix="/v1/stage-types", tags=["stage types"], route_class=EdgeRoute)


class StageTypeOut(Outbound):
    type: str
    waiting: int  # PENDING or RETRIED tasks that a worker could claim now
    in_flight: int  # IN_PROGRESS tasks
    expiring: int  # in flight, their lease running out within seconds
    failed: int  # FAILED tasks of its stages that may still run (partial success)
    oldest_waiting_seconds: float | None = None


class StageTypesOut(Outbound):
    items: list[StageTypeOut]
    total: int


@router.get("", response_model=StageTypesOut, responses={400: {"model": ErrorMessage}})
async def stage_types(db: DatabaseDep) -> StageTypesOut:
    """The stage types that have work in a stage that may run, by name."""
    state = await read_state(db)
    names = sorted(set(state.ready) | set(state.in_flight))
    items = [
        StageTypeOut(
            type=name,
            waiting=state.ready.get(name, 0),
            in_flight=state.in_flight.get(name, 0),
            expiring=state.expiring.get(name, 0),
            failed=state.failed.get(name, 0),
            oldest_waiting_seconds=state.oldest_ready_age.get(name),
        )
        for name in names
    ]
    return StageTypesOut(items=items, total=len(items))
