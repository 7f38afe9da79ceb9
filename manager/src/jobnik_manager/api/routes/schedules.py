"""/v1/schedules (extension): named schedules that make a job from a template at each
time of a cron expression (in an IANA time zone) or of an interval; paused and resumed
with PUT and DELETE on /v1/schedules/{name}/pause, run at once with POST .../run; each
time's outcome is listed by GET .../runs (services.schedules, domain.schedules)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Annotated, Any, Self

from fastapi import APIRouter, Path, Response
from pydantic import AfterValidator, Field, StrictBool, model_validator
from sqlalchemy.ext.asyncio import AsyncSession

from ...db.models import Schedule, ScheduleRun
from ...domain.schedules import Missed, Overlap, Timing
from ...services import schedules as service
from ...services.specs import NewJob
from ..auth import creator, listing_owner
from ..create_bodies import new_job
from ..deps import DatabaseDep, PageDep
from ..edge import EdgeRoute
from ..json_values import no_nul
from ..presenters import json_response
from ..same_named import same_named
from ..schemas import Inbound, JobCreate, OkMessage, Outbound, Page
from ..transaction import in_transaction
from .common import ERRORS, one_page, pages_of

router = APIRouter(prefix="/v1/schedules", tags=["schedules"], route_class=EdgeRoute)

ScheduleName = Annotated[str, Path(min_length=1, max_length=100)]
Text = Annotated[str, Field(strict=True), AfterValidator(no_nul)]
# Bounds a duration's seconds may have at all (the rules of domain.schedules are tighter).
MAX_SECONDS = 10 * 366 * 86400


class ScheduleIn(Inbound):
    """A schedule: `cron` (read in `timezone`) or `intervalSeconds`, and the job to make
    at each time, as POST /v1/jobs takes it (without notBefore, deadline or expiresAt,
    which are times of one job)."""

    cron: Text | None = Field(default=None, min_length=1, max_length=200)
    interval_seconds: float | None = Field(
        default=None, strict=True, allow_inf_nan=False, ge=-MAX_SECONDS, le=MAX_SECONDS
    )
    timezone: Text = Field(default="UTC", min_length=1, max_length=64)
    job: JobCreate
    overlap_policy: Overlap = Overlap.SKIP
    missed_runs: Missed = Missed.ONE
    description: Text | None = Field(default=None, max_length=500)
    paused: StrictBool = False

    @model_validator(mode="after")
    def _a_template(self) -> Self:
        job = self.job
        if any(t is not None for t in (job.not_before, job.deadline, job.expires_at)):
            raise ValueError(
                "a schedule's job takes no notBefore, deadline or expiresAt (times of one job)"
            )
        return self

    def spec(self, name: str) -> service.ScheduleSpec:
        seconds = self.interval_seconds
        interval = None if seconds is None else timedelta(seconds=seconds)
        return service.ScheduleSpec(
            name=name,
            timing=Timing(self.cron, interval, self.timezone),
            job=self.job.model_dump(mode="json", by_alias=True, exclude_unset=True),
            overlap=self.overlap_policy,
            missed=self.missed_runs,
            description=self.description,
            paused=self.paused,
        )


class ScheduleOut(Outbound):
    name: str
    cron: str | None = None
    interval_seconds: float | None = None
    timezone: str
    job: dict[str, Any]
    overlap_policy: str
    missed_runs: str
    description: str | None = None
    paused: bool
    paused_at: datetime | None = None
    next_run_at: datetime | None = None  # none while paused
    last_run_at: datetime | None = None
    last_job_id: uuid.UUID | None = None
    run_count: int  # jobs made
    skipped_count: int  # times that made none (missed, overlap, unique key held)
    owner: str | None = None
    created_at: datetime
    updated_at: datetime


class ScheduleRunOut(Outbound):
    schedule: str
    run_at: datetime  # the schedule's time it stands for (the time asked, for a manual run)
    job_id: uuid.UUID | None = None
    skipped: str | None = None  # why no job: missed, overlap or unique
    manual: bool
    made_at: datetime


def schedule_out(row: Schedule) -> ScheduleOut:
    paused = row.paused_at is not None
    given = {
        "overlap_policy": row.overlap,
        "missed_runs": row.missed,
        "paused": paused,
        "next_run_at": None if paused else row.next_run_at,
    }
    return ScheduleOut(**same_named(row, ScheduleOut, **given))


def run_out(run: ScheduleRun) -> ScheduleRunOut:
    return ScheduleRunOut(**same_named(run, ScheduleRunOut))


async def job_of(template: dict[str, Any]) -> NewJob:
    """A schedule's job, from its stored template, by the rules of POST /v1/jobs."""
    return replace(new_job(JobCreate.model_validate(template)), owner=None)


def _dumped(out: Outbound, status: int = 200) -> Response:
    return json_response(out.model_dump(mode="json", by_alias=True, exclude_none=True), status)


@router.get("", **pages_of(ScheduleOut))
async def list_schedules(db: DatabaseDep, page: PageDep) -> Page[ScheduleOut]:
    """The schedules by name (a producer's own only)."""
    return await one_page(db, schedule_out, service.find, listing_owner(), page)


@router.put("/{name}", response_model=ScheduleOut, responses=ERRORS)
async def put_schedule(db: DatabaseDep, name: ScheduleName, payload: ScheduleIn) -> Response:
    """Create the schedule (201) or replace the one of that name (200): its runs and
    counts stay, and its next time is worked out again if its timing changed."""
    spec = payload.spec(name)

    async def work(s: AsyncSession) -> Response:
        row, created = await service.put(s, spec, creator())
        return _dumped(schedule_out(row), 201 if created else 200)

    return await in_transaction(db, work)


@router.get("/{name}", response_model=ScheduleOut, responses=ERRORS)
async def get_schedule(db: DatabaseDep, name: ScheduleName) -> Response:
    return _dumped(schedule_out(await in_transaction(db, service.get, name)))


@router.delete("/{name}", response_model=OkMessage, responses=ERRORS)
async def delete_schedule(db: DatabaseDep, name: ScheduleName) -> OkMessage:
    """Delete the schedule and its runs; the jobs it made stay."""
    await in_transaction(db, service.remove, name)
    return OkMessage(code="SCHEDULE_DELETED_SUCCESSFULLY")


@router.put("/{name}/pause", response_model=ScheduleOut, responses=ERRORS)
async def pause_schedule(db: DatabaseDep, name: ScheduleName) -> Response:
    """Make no job until it is resumed; pausing again changes nothing."""
    return _dumped(schedule_out(await in_transaction(db, service.set_paused, name, True)))


@router.delete("/{name}/pause", response_model=ScheduleOut, responses=ERRORS)
async def resume_schedule(db: DatabaseDep, name: ScheduleName) -> Response:
    """Go on from the first time after now (the times it was paused for are not made up);
    resuming one that is not paused changes nothing."""
    return _dumped(schedule_out(await in_transaction(db, service.set_paused, name, False)))


@router.post("/{name}/run", status_code=201, response_model=ScheduleRunOut, responses=ERRORS)
async def run_schedule(db: DatabaseDep, name: ScheduleName) -> Response:
    """Make the schedule's job now, whatever its times (which stay as they were); paused
    or not. A job whose unique key is held makes none (`skipped: unique`)."""
    run = await in_transaction(db, service.run_now, name, job_of)
    return _dumped(run_out(run), 201)


@router.get("/{name}/runs", response_model=Page[ScheduleRunOut], responses=ERRORS)
async def schedule_runs(db: DatabaseDep, name: ScheduleName, page: PageDep) -> Page[ScheduleRunOut]:
    """The schedule's runs, the latest first: each time's job, or why it made none."""
    return await one_page(db, run_out, service.runs, name, page)
