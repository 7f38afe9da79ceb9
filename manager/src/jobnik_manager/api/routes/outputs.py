"""What a job produced (extension): its tasks record assets and set the job's result
(`POST /v1/tasks/{taskId}/assets`, `PUT /v1/tasks/{taskId}/job-result`, under the task's
lease while it runs), and anyone who may read the job lists its assets
(`GET /v1/jobs/{jobId}/assets`); the job's answers carry its `result`."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Request, Response
from sqlalchemy.ext.asyncio import AsyncSession

from ...db.models import JobAsset
from ...services import job_outputs, reads
from ..deps import DatabaseDep, PageDep
from ..edge import EdgeRoute
from ..idempotency import IdempotencyKeyHeader, create_once
from ..presenters import job_response
from ..same_named import same_named
from ..schemas import AssetOut, AssetsIn, AssetsOut, JobOut, JobResultIn, Page
from ..transaction import in_transaction
from .common import ERRORS, LEASE_ERRORS, answers, one_page, pages_of

router = APIRouter(tags=["outputs"], route_class=EdgeRoute)


def asset_out(a: JobAsset) -> AssetOut:
    return AssetOut(**same_named(a, AssetOut))


@router.post("/v1/tasks/{taskId}/assets", **answers(AssetsOut, LEASE_ERRORS, status_code=201))
async def add_assets(
    db: DatabaseDep,
    request: Request,
    taskId: uuid.UUID,
    payload: AssetsIn,
    idempotency_key: IdempotencyKeyHeader = None,
) -> Response:
    """Record outputs of the task's job (up to 100 a call), made by this task. With an
    `Idempotency-Key`, sending it again records nothing more and answers the first."""
    assets = [
        job_outputs.NewAsset(type=a.type, uri=a.uri, size_bytes=a.size_bytes, name=a.name)
        for a in payload.assets
    ]

    async def work(s: AsyncSession) -> object:
        added = await job_outputs.add_assets(s, taskId, assets, payload.lease_id)
        out = AssetsOut(items=[asset_out(a) for a in added])
        return out.model_dump(mode="json", by_alias=True, exclude_none=True)

    return await create_once(
        db, request, idempotency_key, lambda: payload.model_dump(mode="json"), work
    )


@router.put("/v1/tasks/{taskId}/job-result", **answers(JobOut, LEASE_ERRORS))
async def set_job_result(db: DatabaseDep, taskId: uuid.UUID, payload: JobResultIn) -> Response:
    """Set the result of the task's job (a JSON object; the last one set stands)."""

    job_id = await in_transaction(
        db, job_outputs.set_job_result, taskId, payload.result, payload.lease_id
    )
    return job_response(*await reads.job(db, job_id))


@router.get("/v1/jobs/{jobId}/assets", **pages_of(AssetOut, ERRORS))
async def list_assets(db: DatabaseDep, jobId: uuid.UUID, page: PageDep) -> Page[AssetOut]:
    """One page of the job's assets, in the order they were recorded."""
    return await one_page(db, asset_out, job_outputs.list_assets, jobId, page)
