"""Schedule use cases: put (create or replace), read, list, pause, resume, delete, run
now, and the tick that makes the jobs of the schedules due (domain.schedules decides).

Settled in the database: a tick owns a schedule's run by moving `next_run_at` on from
the value it read (an UPDATE ... WHERE next_run_at = read), and the run's row is keyed
by schedule and time; a second replica's tick, or the same one again, finds nothing to
do. The job is made in the same transaction, so a run and its job stand or fall together.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import PRINCIPAL, Database, now_in
from ..db.models import Job, Schedule, ScheduleRun
from ..db.upserts import insert_for
from ..domain.auth import Facts
from ..domain.errors import DomainError, NotFound
from ..domain.schedules import Missed, Overlap, Timing, check_name, decide
from . import unique_jobs
from .jobs import create_job
from .pages import PageRequest, PageResult, paginate
from .specs import NewJob

# Turns a schedule's stored job (a POST /v1/jobs body) into the job to make; given by the
# API layer, which owns that body's rules.
JobBuilder = Callable[[dict[str, Any]], Awaitable[NewJob]]
DUE_BATCH = 50  # schedules a tick looks at, each in its own transaction


@dataclass(frozen=True, slots=True)
class ScheduleSpec:
    name: str
    timing: Timing
    job: dict[str, Any]
    overlap: Overlap = Overlap.SKIP
    missed: Missed = Missed.ONE
    description: str | None = None
    paused: bool = False


async def put(s: AsyncSession, spec: ScheduleSpec, owner: str | None) -> tuple[Schedule, bool]:
    """Create the schedule, or replace the one of that name (its counts and runs stay;
    its next time is worked out again when its timing changed). True when created."""
    check_name(spec.name)
    now = now_in(s)
    first = _first(spec.timing, now)
    values = {
        "cron": spec.timing.cron,
        "interval_seconds": _seconds(spec.timing.interval),
        "timezone": spec.timing.timezone,
        "job": spec.job,
        "overlap": spec.overlap.value,
        "missed": spec.missed.value,
        "description": spec.description,
        "paused_at": now if spec.paused else None,
        "updated_at": now,
    }
    inserted = await s.execute(
        insert_for(s, Schedule.__table__)
        .values(
            name=spec.name,
            next_run_at=first,
            anchor=first,
            run_count=0,
            skipped_count=0,
            owner=owner,
            created_at=now,
            **values,
        )
        .on_conflict_do_nothing(index_elements=["name"])
    )
    row = await _load(s, spec.name, lock=True)
    if getattr(inserted, "rowcount", 0):
        return row, True
    if _timing(row) != spec.timing:
        values |= {"next_run_at": first, "anchor": first}
    if spec.paused and row.paused_at is not None:
        values["paused_at"] = row.paused_at  # paused already: since then
    for key, value in values.items():
        setattr(row, key, value)
    return row, False


def _first(timing: Timing, now: datetime) -> datetime:
    """A new timing's first time: an interval's one interval from now."""
    if timing.interval is not None:
        return now + timing.interval
    return timing.first_after(now, now)


def _seconds(interval: timedelta | None) -> float | None:
    return None if interval is None else interval.total_seconds()


def _timing(row: Schedule) -> Timing:
    interval = None if row.interval_seconds is None else timedelta(seconds=row.interval_seconds)
    return Timing(row.cron, interval, row.timezone)


async def _load(s: AsyncSession, name: str, *, lock: bool = False) -> Schedule:
    stmt = select(Schedule).where(Schedule.name == name)
    if lock:
        stmt = stmt.with_for_update()
    row = (await s.execute(stmt)).scalar_one_or_none()
    if row is None:
        raise NotFound(f"Schedule {name!r} not found", code="SCHEDULE_NOT_FOUND")
    return row


async def get(s: AsyncSession, name: str) -> Schedule:
    return await _load(s, name)


async def find(s: AsyncSession, owner: str | None, page: PageRequest) -> PageResult[Schedule]:
    stmt = select(Schedule).order_by(Schedule.name)
    if owner is not None:
        stmt = stmt.where(Schedule.owner == owner)
    return await paginate(s, stmt, page)


async def runs(s: AsyncSession, name: str, page: PageRequest) -> PageResult[ScheduleRun]:
    """The schedule's runs, latest first."""
    await _load(s, name)
    stmt = (
        select(ScheduleRun).where(ScheduleRun.schedule == name).order_by(ScheduleRun.run_at.desc())
    )
    return await paginate(s, stmt, page)


async def set_paused(s: AsyncSession, name: str, paused: bool) -> Schedule:
    """Pause (no job is made until it is resumed) or resume. A resumed schedule goes on
    from its first time after now: the times it was paused for are not made up."""
    row = await _load(s, name, lock=True)
    now = now_in(s)
    if paused and row.paused_at is None:
        row.paused_at = now
    elif not paused and row.paused_at is not None:
        row.paused_at = None
        if row.next_run_at <= now:
            row.next_run_at = _timing(row).first_after(now, row.anchor)
    row.updated_at = now
    return row


async def remove(s: AsyncSession, name: str) -> None:
    await _load(s, name, lock=True)
    await s.execute(delete(ScheduleRun).where(ScheduleRun.schedule == name))
    await s.execute(delete(Schedule).where(Schedule.name == name))


async def run_now(s: AsyncSession, name: str, build: JobBuilder) -> ScheduleRun:
    """Make the schedule's job now, beside its times (which stay as they were)."""
    row = await _load(s, name, lock=True)
    return await _make(s, row, now_in(s), build, manual=True)


async def owner_of(s: AsyncSession, name: str) -> Facts:
    owner = (await s.execute(select(Schedule.owner).where(Schedule.name == name))).first()
    return Facts() if owner is None else Facts(True, owner.owner)


async def fire_due(db: Database, build: JobBuilder) -> int:
    """Make the runs of the schedules due now, each schedule in a transaction of its
    own; returns how many runs were made or skipped."""
    now = db.clock.now()
    due = await db.transaction(lambda s: _due_names(s, now))
    done = 0
    for name in due:

        async def fire(s: AsyncSession, name: str = name) -> int:
            return await _fire(s, name, build)

        done += await db.transaction(fire)
    return done


async def _due_names(s: AsyncSession, now: datetime) -> list[str]:
    stmt = (
        select(Schedule.name)
        .where(Schedule.next_run_at <= now, Schedule.paused_at.is_(None))
        .order_by(Schedule.next_run_at)
        .limit(DUE_BATCH)
    )
    return list((await s.execute(stmt)).scalars())


async def _fire(s: AsyncSession, name: str, build: JobBuilder) -> int:
    row = (await s.execute(select(Schedule).where(Schedule.name == name))).scalar_one_or_none()
    now = now_in(s)
    if row is None or row.paused_at is not None or row.next_run_at > now:
        return 0
    running = row.last_job_id is not None and await _running(s, row.last_job_id)
    fire = decide(
        _timing(row),
        row.next_run_at,
        now,
        row.anchor,
        Missed(row.missed),
        Overlap(row.overlap),
        running,
    )
    # The run is this transaction's only if the schedule still stands where it was read.
    moved = await s.execute(
        update(Schedule)
        .where(Schedule.name == name, Schedule.next_run_at == row.next_run_at)
        .values(next_run_at=fire.next_run_at)
        .execution_options(synchronize_session=False)
    )
    if not getattr(moved, "rowcount", 0):
        return 0
    await s.refresh(row)
    # The schedule's jobs are its owner's, and their history names the owner too.
    s.info[PRINCIPAL] = row.owner
    if fire.make:
        await _make(s, row, fire.run_at, build, manual=False)
    else:
        await _record(s, row, fire.run_at, None, fire.skipped_because, manual=False)
    return 1


async def _running(s: AsyncSession, job_id: uuid.UUID) -> bool:
    status = await s.scalar(select(Job.status).where(Job.id == job_id))
    return status is not None and not status.is_final


async def _make(
    s: AsyncSession, row: Schedule, run_at: datetime, build: JobBuilder, *, manual: bool
) -> ScheduleRun:
    try:
        new = replace(await build(row.job), owner=row.owner)
    except (ValueError, DomainError):  # a template stored before a rule it now breaks
        return await _record(s, row, run_at, None, "invalid", manual=manual)
    key, now = new.unique_key, now_in(s)
    if key is None:
        created = await create_job(s, new)
    else:  # one job per key, as for any create: a run while the key is held makes none
        held = await unique_jobs.holder(s, key, now)
        if held.job is not None:
            return await _record(s, row, run_at, None, "unique", manual=manual)
        created = await create_job(s, new)
        await unique_jobs.take(s, key, created.job.id, new.unique_window, now, row=held.row)
    return await _record(s, row, run_at, created.job.id, None, manual=manual)


async def _record(
    s: AsyncSession,
    row: Schedule,
    run_at: datetime,
    job_id: uuid.UUID | None,
    skipped: str | None,
    *,
    manual: bool,
) -> ScheduleRun:
    now = now_in(s)
    run = ScheduleRun(
        schedule=row.name,
        run_at=run_at,
        job_id=job_id,
        skipped=skipped,
        manual=manual,
        made_at=now,
    )
    s.add(run)
    if job_id is not None:
        row.last_job_id = job_id
        row.last_run_at = run_at
        row.run_count = row.run_count + 1
    else:
        row.skipped_count = row.skipped_count + 1
    await s.flush()
    return run
