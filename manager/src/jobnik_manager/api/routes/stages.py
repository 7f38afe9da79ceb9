"""/v1/stages"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Body, Depends, Query, Request, Response
from sqlalchemy.ext.asyncio import AsyncSession

from ...db.models import Stage
from ...domain.errors import TaskNotFound
from ...domain.statuses import StageStatus
from ...services import batching, reads
from ...services import stages as stage_service
from ...services.loading import load_stage
from ..auth import listing_owner
from ..create_bodies import CreateRoute, created_task_bodies, new_tasks
from ..deps import DatabaseDep, InlineTasksDep, PageDep, SightingsDep
from ..idempotency import IdempotencyKeyHeader, create_once
from ..presenters import stage_response, summary_out, task_out, task_response
from ..schemas import (
    MAX_LEASE_SECONDS,
    OkMessage,
    Page,
    StageOut,
    StageStatusChange,
    SummaryOut,
    TaskCreate,
    TaskOut,
)
from ..transaction import in_transaction
from .common import (
    CREATES,
    ERRORS,
    StageTypePath,
    StageTypeQuery,
    add_user_metadata_route,
    answers,
    one_page,
    pages_of,
    stages_out,
)

router = APIRouter(prefix="/v1/stages", tags=["stages"], route_class=CreateRoute)


async def stage_filter(
    job_id: uuid.UUID | None = None,
    stage_type: StageTypeQuery = None,
    stage_operation_status: StageStatus | None = None,
) -> stage_service.StageFilter:
    """The stages a listing asks for by v1's query names; a producer's, its own jobs'."""
    return stage_service.StageFilter(
        owner=listing_owner(), job_id=job_id, stage_type=stage_type, status=stage_operation_status
    )


@router.get("", **pages_of(StageOut))
async def find_stages(
    db: DatabaseDep,
    page: PageDep,
    inline: InlineTasksDep,
    f: Annotated[stage_service.StageFilter, Depends(stage_filter)],
    should_return_tasks: bool = False,
) -> Page[StageOut]:
    async def work(s: AsyncSession) -> Page[StageOut]:
        result = await stage_service.find_stages(s, f, page)
        items = await stages_out(s, result.items, inline, should_return_tasks)
        return Page[StageOut](total=result.total, items=items)

    return await in_transaction(db, work)


@router.get("/{stageId}", **answers(StageOut, ERRORS))
async def get_stage(
    db: DatabaseDep, inline: InlineTasksDep, stageId: uuid.UUID, should_return_tasks: bool = False
) -> StageOut | Response:
    if not should_return_tasks:
        # A key lookup answered without the model (the fast lane's too): the reference
        # SDK's worker reads the stage of every task it runs.
        return stage_response(*await reads.stage(db, stageId))

    async def work(s: AsyncSession) -> StageOut:
        stage = await load_stage(s, stageId)
        return (await stages_out(s, [stage], inline, should_return_tasks))[0]

    return await in_transaction(db, work)


@router.get("/{stageId}/summary", response_model=SummaryOut, responses=ERRORS)
async def get_stage_summary(db: DatabaseDep, stageId: uuid.UUID) -> SummaryOut:
    async def work(s: AsyncSession) -> SummaryOut:
        return summary_out(await load_stage(s, stageId))

    return await in_transaction(db, work)


add_user_metadata_route(router, Stage, "stageId", "STAGE_MODIFIED_SUCCESSFULLY")


@router.put("/{stageId}/status", response_model=OkMessage, responses=ERRORS)
async def change_stage_status(
    db: DatabaseDep, stageId: uuid.UUID, payload: StageStatusChange
) -> OkMessage:
    await in_transaction(db, stage_service.approve, stageId)
    return OkMessage(code="STAGE_MODIFIED_SUCCESSFULLY")


@router.get("/{stageId}/tasks", **pages_of(TaskOut, ERRORS))
async def get_stage_tasks(db: DatabaseDep, stageId: uuid.UUID, page: PageDep) -> Page[TaskOut]:
    return await one_page(db, task_out, stage_service.tasks_of_stage, stageId, page)


@router.post("/{stageId}/tasks", response_model=list[TaskOut], **CREATES)
async def add_tasks(
    db: DatabaseDep,
    request: Request,
    stageId: uuid.UUID,
    payload: Annotated[list[TaskCreate], Body(min_length=1)],
    idempotency_key: IdempotencyKeyHeader = None,
) -> Response:
    new = new_tasks(payload)

    async def work(s: AsyncSession) -> list[dict[str, object]]:
        return await created_task_bodies(await stage_service.add_tasks(s, stageId, new))

    def body() -> object:
        return [p.model_dump(mode="json", by_alias=True) for p in payload]

    return await create_once(db, request, idempotency_key, body, work)


@router.patch("/{stageType}/tasks/dequeue", **answers(TaskOut, ERRORS))
async def dequeue(
    db: DatabaseDep,
    stageType: StageTypePath,
    lease_seconds: Annotated[
        float | None, Query(ge=1, le=MAX_LEASE_SECONDS, allow_inf_nan=False)
    ] = None,
    worker: Annotated[str | None, Query(min_length=1, max_length=100)] = None,
    sightings: SightingsDep = None,
) -> Response:
    lease = timedelta(seconds=lease_seconds) if lease_seconds else None
    if sightings is not None:
        await sightings.seen(db, worker, [stageType])

    task = await batching.dequeue(db, stageType, lease, worker)
    if task is None:
        raise TaskNotFound(f"No task of stage type '{stageType}' is ready to be claimed")
    return task_response(task)
