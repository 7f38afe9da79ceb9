"""/v1/jobs"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncSession

from ...db.engine import now_in
from ...db.models import Job
from ...domain.errors import RuleViolation
from ...domain.id_prefix import id_range
from ...domain.statuses import JobStatus, Priority
from ...services import jobs as job_service
from ...services import reads, replay, unique_jobs
from ...services import stages as stage_service
from ...services.history import events_of_job
from ...services.idempotency import StoredAnswer
from ...services.loading import load_job
from ...services.pages import PageRequest
from ..auth import listing_owner
from ..create_bodies import CreateRoute, created_task_bodies, new_job, new_stage
from ..deps import CreatedDep, DatabaseDep, InlineTasksDep, PageDep
from ..idempotency import IdempotencyKeyHeader, create_once
from ..presenters import event_body, job_body, job_out, job_response, json_response, stage_body
from ..schemas import (
    EventOut,
    JobCreate,
    JobOut,
    JobStatusChange,
    OkMessage,
    Page,
    PriorityChange,
    StageCreate,
    StageOut,
)
from ..transaction import in_transaction
from .common import (
    CREATES,
    ERRORS,
    RETRY_ERRORS,
    add_user_metadata_route,
    answers,
    jobs_out,
    pages_of,
    stages_out,
)

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], route_class=CreateRoute)

# Extension: a list newest first (jobs by creation, events by when they happened), so
# that the first page holds what happened last.
NewestFirstQuery = Annotated[
    bool, Query(description="Extension: true lists the newest first (default: oldest first).")
]


@router.get("", **pages_of(JobOut))
async def find_jobs(
    db: DatabaseDep,
    page: PageDep,
    created: CreatedDep,
    job_name: Annotated[str | None, Query(min_length=2, max_length=50)] = None,
    priority: Priority | None = None,
    # Extension: jobs in any of these statuses (`?status=FAILED&status=ABORTED`).
    status: Annotated[list[JobStatus] | None, Query(max_length=len(JobStatus))] = None,
    should_return_stages: bool = False,
    newest_first: NewestFirstQuery = False,
    # Extension: the jobs whose id starts with these hex digits (the dashboard's 8).
    id_prefix: Annotated[str | None, Query(min_length=1, max_length=36)] = None,
    # Extension: the jobs whose name holds this text, in any case.
    name_contains: Annotated[str | None, Query(min_length=1, max_length=100)] = None,
) -> Page[JobOut]:
    ids = None if id_prefix is None else id_range(id_prefix)
    if id_prefix is not None and ids is None:
        raise RuleViolation(
            "query.id_prefix: the first hex digits of an id (1 to 32 of 0-9, a-f)",
            code="VALIDATION_ERROR",
        )
    f = job_service.JobFilter(
        owner=listing_owner(),
        name=job_name,
        priority=priority,
        statuses=frozenset(status or ()),
        created=created,
        newest_first=newest_first,
        ids=ids,
        name_contains=name_contains,
    )

    async def work(s: AsyncSession) -> Page[JobOut]:
        result = await job_service.find_jobs(s, f, page)
        items = await jobs_out(s, result.items, should_return_stages)
        return Page[JobOut](total=result.total, items=items)

    return await in_transaction(db, work)


# Extension: a create of many tasks may be answered without them (its stages' summaries
# count them), sparing both sides the encoding and parsing of every task. An answer
# stored under an idempotency key is answered again as it was first given.
ReturnTasksQuery = Annotated[
    bool,
    Query(description="Extension: false answers the created stages without their tasks."),
]


@router.post("", response_model=JobOut, **CREATES)
async def create_job(
    db: DatabaseDep,
    request: Request,
    payload: JobCreate,
    idempotency_key: IdempotencyKeyHeader = None,
    should_return_tasks: ReturnTasksQuery = True,
) -> Response:
    new = new_job(payload)

    async def work(s: AsyncSession) -> dict[str, object] | StoredAnswer:
        held = None
        if new.unique_key is not None:
            held = await unique_jobs.holder(s, new.unique_key, now_in(s))
            if held.job is not None:  # the job holding the key, as a GET gives it
                [out] = await jobs_out(s, [held.job], True)
                return StoredAnswer(
                    200, out.model_dump(mode="json", by_alias=True, exclude_none=True)
                )
        # Without a unique key to take after it, nothing reads or writes before the
        # commit: the rows go with the key's row and the NOTIFY, one statement.
        created = await job_service.create_job(s, new, rows_at_commit=new.unique_key is None)
        if new.unique_key is not None and held is not None:  # the key was free: it takes it
            await unique_jobs.take(
                s, new.unique_key, created.job.id, new.unique_window, now_in(s), row=held.row
            )
        if not payload.stages:
            return job_body(created.job, new=True)
        # Answered as inserted rather than read back: there may be many tasks.
        return job_body(
            created.job,
            [
                stage_body(
                    c.stage,
                    await created_task_bodies(c.tasks) if should_return_tasks else None,
                    new=True,
                )
                for c in created.stages
            ],
            new=True,
        )

    try:
        return await create_once(db, request, idempotency_key, lambda: _dump(payload), work)
    except unique_jobs.KeyTakenMeanwhile:
        # Another create took the key after this one looked: now it finds it held.
        return await create_once(db, request, idempotency_key, lambda: _dump(payload), work)


@router.get("/{jobId}", **answers(JobOut, ERRORS))
async def get_job(
    db: DatabaseDep, jobId: uuid.UUID, should_return_stages: bool = False
) -> JobOut | Response:
    if not should_return_stages:
        # A key lookup answered without the model (the fast lane's too): the reference
        # SDK's worker reads the job of every task it runs.
        return job_response(*await reads.job(db, jobId))

    async def work(s: AsyncSession) -> JobOut:
        return (await jobs_out(s, [await load_job(s, jobId)], should_return_stages))[0]

    return await in_transaction(db, work)


@router.delete("/{jobId}", response_model=OkMessage, responses=ERRORS)
async def delete_job(db: DatabaseDep, jobId: uuid.UUID) -> OkMessage:
    await in_transaction(db, job_service.delete_job, jobId)
    return OkMessage(code="JOB_DELETED_SUCCESSFULLY")


add_user_metadata_route(router, Job, "jobId", "JOB_MODIFIED_SUCCESSFULLY")


@router.patch(
    "/{jobId}/priority",
    response_model=OkMessage,
    responses={**ERRORS, 204: {"description": "The job already had this priority"}},
)
async def change_job_priority(
    db: DatabaseDep, jobId: uuid.UUID, payload: PriorityChange
) -> OkMessage | Response:
    changed = await in_transaction(db, job_service.change_priority, jobId, payload.priority)
    if not changed:
        return Response(
            status_code=204, headers={"Reason": "Priority cannot be updated to the same value"}
        )
    return OkMessage(code="JOB_MODIFIED_SUCCESSFULLY")


@router.put("/{jobId}/status", response_model=OkMessage, responses=ERRORS)
async def change_job_status(
    db: DatabaseDep, jobId: uuid.UUID, payload: JobStatusChange
) -> OkMessage:
    target = JobStatus(payload.status)
    await in_transaction(db, job_service.change_status, jobId, target)
    return OkMessage(code="JOB_MODIFIED_SUCCESSFULLY")


@router.post("/{jobId}/retry", **answers(JobOut, RETRY_ERRORS))
async def retry_job(db: DatabaseDep, jobId: uuid.UUID) -> JobOut:
    """Extension: run a FAILED job's failed stage again; its FAILED and ABORTED tasks get a
    fresh set of attempts. Answers the job as it stands after."""

    async def work(s: AsyncSession) -> JobOut:
        await replay.retry_job(s, jobId)
        return job_out(await load_job(s, jobId))

    return await in_transaction(db, work)


@router.get("/{jobId}/stages", **answers(list[StageOut], ERRORS))
async def get_job_stages(
    db: DatabaseDep, inline: InlineTasksDep, jobId: uuid.UUID, should_return_tasks: bool = False
) -> list[StageOut]:
    async def work(s: AsyncSession) -> list[StageOut]:
        stages = await stage_service.stages_of_job(s, jobId)
        return await stages_out(s, stages, inline, should_return_tasks)

    return await in_transaction(db, work)


@router.post("/{jobId}/stage", response_model=StageOut, **CREATES)
async def add_stage(
    db: DatabaseDep,
    request: Request,
    jobId: uuid.UUID,
    payload: StageCreate,
    idempotency_key: IdempotencyKeyHeader = None,
    should_return_tasks: ReturnTasksQuery = True,
) -> Response:
    new = new_stage(payload)

    async def work(s: AsyncSession) -> dict[str, object]:
        created = await stage_service.add_stage(s, jobId, new)
        if not (payload.tasks and should_return_tasks):
            return stage_body(created.stage, new=True)
        return stage_body(created.stage, await created_task_bodies(created.tasks), new=True)

    return await create_once(db, request, idempotency_key, lambda: _dump(payload), work)


@router.get(
    "/{jobId}/events",
    response_model=Page[EventOut],
    responses=ERRORS,
)
async def get_job_events(
    db: DatabaseDep,
    jobId: uuid.UUID,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=1000)] = 10,
    newest_first: NewestFirstQuery = False,
) -> Response:
    """Every status change of the job, its stages and tasks, and every entry their
    workers added, oldest first (newest first with `newest_first`)."""
    request = PageRequest(page=page, page_size=page_size)

    async def work(s: AsyncSession) -> Response:
        result = await events_of_job(s, jobId, request, newest_first=newest_first)
        body = {"total": result.total, "items": [event_body(e) for e in result.items]}
        return json_response(body, 200)

    return await in_transaction(db, work)


def _dump(payload: BaseModel) -> object:
    return payload.model_dump(mode="json", by_alias=True)
