"""/v1/tasks"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Body, Query
from sqlalchemy.ext.asyncio import AsyncSession

from ...domain.statuses import TaskStatus
from ...services import tasks as task_service
from ...services.loading import load_task
from ..deps import DatabaseDep, PageDep
from ..json_values import JsonObject
from ..presenters import task_out
from ..schemas import ErrorMessage, OkMessage, Page, TaskOut, TaskStatusReport

router = APIRouter(prefix="/v1/tasks", tags=["tasks"])
ERRORS: dict[int | str, dict[str, object]] = {
    400: {"model": ErrorMessage},
    404: {"model": ErrorMessage},
}


@router.get("", response_model=Page[TaskOut], response_model_exclude_none=True)
async def find_tasks(
    db: DatabaseDep,
    page: PageDep,
    stage_id: uuid.UUID | None = None,
    stage_type: Annotated[str | None, Query(min_length=1, max_length=50)] = None,
    from_date: datetime | None = None,
    end_date: datetime | None = None,
    status: TaskStatus | None = None,
) -> Page[TaskOut]:
    f = task_service.TaskFilter(
        stage_id=stage_id,
        stage_type=stage_type,
        from_date=from_date,
        end_date=end_date,
        status=status,
    )

    async def work(s: AsyncSession) -> Page[TaskOut]:
        result = await task_service.find_tasks(s, f, page)
        return Page[TaskOut](total=result.total, items=[task_out(t) for t in result.items])

    return await db.transaction(work)


@router.get("/{taskId}", response_model=TaskOut, response_model_exclude_none=True, responses=ERRORS)
async def get_task(db: DatabaseDep, taskId: uuid.UUID) -> TaskOut:
    async def work(s: AsyncSession) -> TaskOut:
        return task_out(await load_task(s, taskId))

    return await db.transaction(work)


@router.patch("/{taskId}/user-metadata", response_model=OkMessage, responses=ERRORS)
async def replace_task_user_metadata(
    db: DatabaseDep, taskId: uuid.UUID, metadata: Annotated[JsonObject, Body()]
) -> OkMessage:
    await db.transaction(lambda s: task_service.replace_user_metadata(s, taskId, metadata))
    return OkMessage(code="TASK_MODIFIED_SUCCESSFULLY")


@router.put(
    "/{taskId}/status", response_model=TaskOut, response_model_exclude_none=True, responses=ERRORS
)
async def report_task_status(
    db: DatabaseDep, taskId: uuid.UUID, payload: TaskStatusReport
) -> TaskOut:
    reported = TaskStatus(payload.status)

    async def work(s: AsyncSession) -> TaskOut:
        return task_out(await task_service.report(s, taskId, reported))

    return await db.transaction(work)
