"""/v1/stage-types (extension): each stage type's queue as workers see it: tasks waiting
to be claimed, tasks in flight, the oldest waiting task's age, whether it is paused. The
figures /metrics exposes (observe.state), read through indexes and counters, so the call
costs the same whatever the history; over all jobs, like /metrics. A stage type is paused
and resumed with PUT and DELETE on /v1/stage-types/{stageType}/pause, and limited (tasks
in flight, tasks a second) with PUT and DELETE on /v1/stage-types/{stageType}/limits. Its
flow, tasks created, completed, failed and retried a minute, is read from the event log
by GET /v1/stage-types/{stageType}/flow."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import Field, StrictInt
from sqlalchemy.ext.asyncio import AsyncSession

from ...observe.state import read_state
from ...services import flow, stage_type_limits, stage_type_pauses
from ..deps import DatabaseDep
from ..edge import EdgeRoute
from ..schemas import ErrorMessage, Inbound, Outbound
from ..transaction import in_transaction
from .common import StageTypePath, answers

router = APIRouter(prefix="/v1/stage-types", tags=["stage types"], route_class=EdgeRoute)


class StageTypeOut(Outbound):
    type: str
    waiting: int  # PENDING or RETRIED tasks that a worker could claim now
    in_flight: int  # IN_PROGRESS tasks
    expiring: int  # in flight, their lease running out within seconds
    failed: int  # FAILED tasks of its stages that may still run (partial success)
    oldest_waiting_seconds: float | None = None
    paused: bool = False  # none of its tasks is handed out until it is resumed
    # Its limits, when it has any: tasks in flight at once, handed out a second.
    max_in_flight: int | None = None
    rate_per_second: float | None = None
    burst: int | None = None


class StageTypesOut(Outbound):
    items: list[StageTypeOut]
    total: int


@router.get("", **answers(StageTypesOut, {400: {"model": ErrorMessage}}))
async def stage_types(db: DatabaseDep) -> StageTypesOut:
    """The stage types that have work in a stage that may run, are paused or limited, by
    name."""
    state = await read_state(db)
    limited = await in_transaction(db, stage_type_limits.limits)
    names = sorted(set(state.ready) | set(state.in_flight) | state.paused | set(limited))
    items = []
    for name in names:
        limit = limited.get(name)
        items.append(
            StageTypeOut(
                type=name,
                waiting=state.ready.get(name, 0),
                in_flight=state.in_flight.get(name, 0),
                expiring=state.expiring.get(name, 0),
                failed=state.failed.get(name, 0),
                oldest_waiting_seconds=state.oldest_ready_age.get(name),
                paused=name in state.paused,
                max_in_flight=limit.max_in_flight if limit else None,
                rate_per_second=limit.rate if limit else None,
                burst=limit.burst if limit and limit.rate is not None else None,
            )
        )
    return StageTypesOut(items=items, total=len(items))


class FlowMinuteOut(Outbound):
    start: datetime  # the minute's first instant (UTC)
    created: int
    completed: int
    failed: int
    retried: int


class FlowOut(Outbound):
    type: str
    since: datetime
    minutes: list[FlowMinuteOut]  # oldest first, the current (partial) minute last


@router.get("/{stageType}/flow", response_model=FlowOut, responses={400: {"model": ErrorMessage}})
async def stage_type_flow(
    db: DatabaseDep,
    stageType: StageTypePath,
    minutes: Annotated[int, Query(ge=1, le=1440)] = 60,
) -> FlowOut:
    """The type's tasks created, completed, failed and retried in each of the last
    `minutes` minutes and the current one, from the event log (over all jobs)."""
    read = await in_transaction(db, flow.flow, stageType, minutes)
    items = [FlowMinuteOut.model_validate(m, from_attributes=True) for m in read.minutes]
    return FlowOut(type=stageType, since=read.since, minutes=items)


class StageTypePauseOut(Outbound):
    type: str
    paused: bool
    paused_at: datetime | None = None
    paused_by: str | None = None  # the token that paused it (null with auth off)


@router.put(
    "/{stageType}/pause", response_model=StageTypePauseOut, responses={400: {"model": ErrorMessage}}
)
async def pause_stage_type(db: DatabaseDep, stageType: StageTypePath) -> StageTypePauseOut:
    """Hand out none of this stage type's tasks, in any job, until it is resumed: claims
    and dequeues of it find nothing; running tasks go on. Pausing it again changes
    nothing (it keeps its first pause's time)."""

    async def work(s: AsyncSession) -> StageTypePauseOut:
        done = await stage_type_pauses.pause(s, stageType)
        return StageTypePauseOut(type=stageType, paused=True, paused_at=done.at, paused_by=done.by)

    return await in_transaction(db, work)


@router.delete(
    "/{stageType}/pause", response_model=StageTypePauseOut, responses={400: {"model": ErrorMessage}}
)
async def resume_stage_type(db: DatabaseDep, stageType: StageTypePath) -> StageTypePauseOut:
    """Hand this stage type's tasks out again, waking its waiting workers; resuming one
    that is not paused changes nothing."""

    async def work(s: AsyncSession) -> StageTypePauseOut:
        await stage_type_pauses.resume(s, stageType)
        return StageTypePauseOut(type=stageType, paused=False)

    return await in_transaction(db, work)


class LimitsIn(Inbound):
    """At most `maxInFlight` of the type's tasks running at once, `ratePerSecond` handed
    out a second (up to `burst` at once after a quiet spell; a second's worth by
    default); one of them at least."""

    max_in_flight: StrictInt | None = None
    rate_per_second: float | None = Field(default=None, strict=True, allow_inf_nan=False)
    burst: StrictInt | None = None


class LimitsOut(Outbound):
    type: str
    max_in_flight: int | None = None
    rate_per_second: float | None = None
    burst: int | None = None
    set_at: datetime | None = None
    set_by: str | None = None  # the token that set them (null with auth off)


@router.put("/{stageType}/limits", **answers(LimitsOut, {400: {"model": ErrorMessage}}))
async def set_stage_type_limits(
    db: DatabaseDep, stageType: StageTypePath, payload: LimitsIn
) -> LimitsOut:
    """Limit the type's tasks, in every job, across every worker and replica: the claim
    hands out no more than the limits allow (replacing the type's limits, if any)."""
    given = payload.max_in_flight, payload.rate_per_second, payload.burst
    spec = stage_type_limits.LimitSpec(*given)

    async def work(s: AsyncSession) -> LimitsOut:
        row = await stage_type_limits.set_limit(s, stageType, spec)
        return LimitsOut(
            type=row.type,
            max_in_flight=row.max_in_flight,
            rate_per_second=row.rate,
            burst=row.burst if row.rate is not None else None,
            set_at=row.set_at,
            set_by=row.principal,
        )

    return await in_transaction(db, work)


@router.delete("/{stageType}/limits", **answers(LimitsOut, {400: {"model": ErrorMessage}}))
async def clear_stage_type_limits(db: DatabaseDep, stageType: StageTypePath) -> LimitsOut:
    """Hand the type's tasks out without limits again; one without limits is left as it is."""
    await in_transaction(db, stage_type_limits.clear_limit, stageType)
    return LimitsOut(type=stageType)
