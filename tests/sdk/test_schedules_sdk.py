"""Schedules from the SDK: put a schedule, let its time come (the fake's clock, or the
manager's on PostgreSQL with its tick run), and find its job, which a Worker then runs;
pause, resume, run now, list and delete; bad schedules raise before anything is stored.
Against the FakeJobnik and the manager on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest

from jobnik_manager.api.routes.schedules import job_of
from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.services.schedules import fire_due
from jobnik_sdk import (
    ApiError,
    JobStatus,
    NewJob,
    NewStage,
    NewTask,
    NotFoundError,
    Task,
    TaskContext,
)
from jobnik_sdk.testing import FakeJobnik

from ..support.api import unique
from ..support.workers import worker
from .conftest import Surface


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


async def come(
    surface: Surface, surface_url: str | None, clock: ManualClock, by: timedelta
) -> None:
    """Move the manager's time on by `by` and let its maintenance make what is due."""
    if isinstance(surface, FakeJobnik):
        surface.clock.advance(by)
        await surface.list_schedules()  # the fake settles what came due at its next request
        return
    clock.advance(by)
    assert surface_url is not None
    database = Database(surface_url, pool_size=2, clock=clock)
    try:
        await fire_due(database, job_of)
    finally:
        await database.dispose()


async def test_a_schedule_makes_jobs_that_a_worker_runs(
    surface: Surface, surface_url: str | None, clock: ManualClock
) -> None:
    kind, name = unique("nightly"), unique("roads")
    job = NewJob(
        name="roads-export",
        data={"dataset": "roads"},
        stages=[NewStage(type=kind, tasks=[NewTask(data={"tile": 1})])],
    )
    made = await surface.put_schedule(name, job, cron="* * * * *", description="every minute")
    assert (made.name, made.cron, made.timezone, made.run_count) == (name, "* * * * *", "UTC", 0)
    assert made.next_run_at is not None and made.job["name"] == "roads-export"

    # Just past its first time, not 61 s on: from a start late in a minute, that would
    # pass two times and make a second run.
    fake = surface.clock if isinstance(surface, FakeJobnik) else clock
    await come(surface, surface_url, clock, made.next_run_at - fake.now() + timedelta(seconds=1))
    [run] = (await surface.list_schedule_runs(name)).items
    assert run.job_id is not None and not run.manual and run.skipped is None

    seen: list[object] = []

    async def handle(task: Task, ctx: TaskContext) -> None:
        seen.append(task.data)

    async with worker(surface, kind, handle):
        done = await surface.wait(run.job_id, timeout=timedelta(seconds=10))
    assert done.status is JobStatus.COMPLETED and seen == [{"tile": 1}]
    shown = await surface.get_schedule(name)
    assert (shown.run_count, shown.last_job_id) == (1, run.job_id)


async def test_pause_resume_run_now_list_and_delete(
    surface: Surface, surface_url: str | None, clock: ManualClock
) -> None:
    name = unique("hourly")
    job = NewJob(name="hourly", stages=[NewStage(type=unique("h"), tasks=[NewTask()])])
    await surface.put_schedule(name, job, interval=timedelta(minutes=1), overlap_policy="allow")
    paused = await surface.pause_schedule(name)
    assert paused.paused and paused.next_run_at is None
    await come(surface, surface_url, clock, timedelta(minutes=5))
    assert (await surface.list_schedule_runs(name)).total == 0
    resumed = await surface.resume_schedule(name)
    assert not resumed.paused and resumed.next_run_at is not None

    now = await surface.run_schedule(name)
    assert now.manual and now.job_id is not None
    assert (await surface.get_job(now.job_id)).name == "hourly"
    assert name in [s.name for s in (await surface.list_schedules(page_size=100)).items]

    await surface.delete_schedule(name)
    with pytest.raises(NotFoundError):
        await surface.get_schedule(name)


@pytest.mark.parametrize(
    "bad",
    [
        {"cron": "every night"},
        {"cron": "0 3 * * *", "timezone": "Moon/Tranquility"},
        {"interval": timedelta(0)},
        {},  # neither cron nor interval
    ],
)
async def test_bad_schedules_raise_and_store_nothing(
    surface: Surface, bad: dict[str, object]
) -> None:
    name = unique("bad")
    with pytest.raises(ApiError) as raised:
        await surface.put_schedule(name, NewJob(name="x"), **bad)  # type: ignore[arg-type]
    assert raised.value.status_code == 400
    with pytest.raises(NotFoundError):
        await surface.get_schedule(name)
