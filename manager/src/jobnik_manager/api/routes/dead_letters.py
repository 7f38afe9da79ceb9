"""/v1/dead-letters (extension): the tasks that failed for good, newest first, with their
error history; retried (their FAILED jobs replayed) or discarded, by id or by stage type
(services.dead_letters)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Self

from fastapi import APIRouter
from pydantic import Field, model_validator
from sqlalchemy.ext.asyncio import AsyncSession

from ...services import dead_letters as service
from ..auth import listing_owner
from ..deps import DatabaseDep, PageDep
from ..edge import EdgeRoute
from ..presenters import task_out
from ..schemas import ErrorMessage, Inbound, Outbound, Page, StageType, TaskOut
from ..transaction import in_transaction
from .common import StageTypeQuery, pages_of

router = APIRouter(prefix="/v1/dead-letters", tags=["dead letters"], route_class=EdgeRoute)


class FailureOut(Outbound):
    time: datetime
    attempt: int | None = None
    status: str  # RETRIED: an attempt failed with attempts left; FAILED: the last one
    reason: str | None = None
    worker: str | None = None


class DeadLetterOut(Outbound):
    task: TaskOut
    job_id: uuid.UUID
    job_name: str
    job_status: str
    stage_type: str
    errors: list[FailureOut]  # its failed attempts, oldest first (the latest 20)


class SelectionIn(Inbound):
    """These dead letters (1 to 100 task ids), or every one of a stage type (up to 1000)."""

    task_ids: list[uuid.UUID] | None = Field(default=None, min_length=1, max_length=100)
    stage_type: StageType | None = None

    @model_validator(mode="after")
    def _one_way(self) -> Self:
        if (self.task_ids is None) == (self.stage_type is None):
            raise ValueError("give taskIds or stageType, one of them")
        return self

    def selection(self) -> service.Selection:
        return service.Selection(task_ids=self.task_ids or (), stage_type=self.stage_type)


class SkippedOut(Outbound):
    task_id: uuid.UUID
    code: str
    message: str


class RetriedOut(Outbound):
    jobs: list[uuid.UUID]  # the FAILED jobs replayed
    tasks: list[uuid.UUID]  # the dead letters among their tasks, offered again
    skipped: list[SkippedOut]


class DiscardedOut(Outbound):
    tasks: list[uuid.UUID]
    skipped: list[SkippedOut]


def _letter(d: service.DeadLetter) -> DeadLetterOut:
    return DeadLetterOut(
        task=task_out(d.task),
        job_id=d.task.job_id,
        job_name=d.job_name,
        job_status=d.job_status,
        stage_type=d.task.stage_type,
        errors=[
            FailureOut(
                time=e.time, attempt=e.attempt, status=e.status, reason=e.reason, worker=e.worker
            )
            for e in d.errors
        ],
    )


def _skipped(skipped: list[service.Skipped]) -> list[SkippedOut]:
    return [SkippedOut(task_id=k.task_id, code=k.code, message=k.message) for k in skipped]


@router.get("", **pages_of(DeadLetterOut))
async def list_dead_letters(
    db: DatabaseDep,
    page: PageDep,
    stage_type: StageTypeQuery = None,
    job_id: uuid.UUID | None = None,
) -> Page[DeadLetterOut]:
    """The tasks that failed for good and were not discarded, the latest first."""
    f = service.DeadLetterFilter(owner=listing_owner(), stage_type=stage_type, job_id=job_id)

    async def work(s: AsyncSession) -> Page[DeadLetterOut]:
        total, letters = await service.list_dead_letters(s, f, page)
        return Page[DeadLetterOut](total=total, items=[_letter(d) for d in letters])

    return await in_transaction(db, work)


@router.post("/retry", response_model=RetriedOut, responses={400: {"model": ErrorMessage}})
async def retry_dead_letters(db: DatabaseDep, payload: SelectionIn) -> RetriedOut:
    """Replay the FAILED job of each selected dead letter: its failed stage runs again."""
    done = await service.retry_dead_letters(db, payload.selection(), listing_owner())
    return RetriedOut(jobs=done.jobs, tasks=done.tasks, skipped=_skipped(done.skipped))


@router.post("/discard", response_model=DiscardedOut, responses={400: {"model": ErrorMessage}})
async def discard_dead_letters(db: DatabaseDep, payload: SelectionIn) -> DiscardedOut:
    """Take the selected dead letters off the list, without retrying them."""
    taken, skipped = await in_transaction(
        db, service.discard_dead_letters, payload.selection(), listing_owner()
    )
    return DiscardedOut(tasks=taken, skipped=_skipped(skipped))
