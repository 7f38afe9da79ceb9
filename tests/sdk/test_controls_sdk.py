"""Stage-type limits and expiry from the SDK: a limit set with `limit_stage_type` holds
the claims of any client, and `unlimit_stage_type` lifts it; a task past its
`expires_at` is never handed out and ends ABORTED "expired", a job none of whose tasks
started ends so too. Against the FakeJobnik and the manager on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.maintenance.expiry import expire
from jobnik_sdk import JobnikValidationError, JobStatus, NewStage, NewTask, TaskStatus
from jobnik_sdk.testing import FakeJobnik

from ..support.api import unique
from .conftest import Surface


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


async def test_a_limit_holds_every_claim_until_lifted(surface: Surface) -> None:
    kind = unique("limited")
    await surface.create_job(unique("job"), stages=[NewStage(type=kind, tasks=[NewTask()] * 5)])
    answer = await surface.limit_stage_type(kind, max_in_flight=2)
    assert (answer["type"], answer["maxInFlight"]) == (kind, 2)
    assert len(await surface.claim(kind, limit=5)) == 2
    assert await surface.claim(kind, limit=5) == []
    held = await surface.claim_with_context(kind, limit=5)
    assert held.items == [] and held.retry_after_seconds is not None
    [shown] = [t for t in await surface.list_stage_types() if t["type"] == kind]
    assert (shown["maxInFlight"], shown["inFlight"]) == (2, 2)
    await surface.unlimit_stage_type(kind)
    assert len(await surface.claim(kind, limit=5)) == 3
    with pytest.raises(JobnikValidationError):
        await surface.limit_stage_type(kind, max_in_flight=0)


async def test_expired_tasks_and_jobs_end_aborted_expired(
    surface: Surface, surface_url: str | None, clock: ManualClock
) -> None:
    fake = isinstance(surface, FakeJobnik)
    now = surface.clock.now() if isinstance(surface, FakeJobnik) else clock.now()
    kind = unique("expiring")
    soon = now + timedelta(seconds=10)
    started = await surface.create_job(
        unique("job"),
        stages=[NewStage(type=kind, tasks=[NewTask(expires_at=soon), NewTask()])],
    )
    idle = await surface.create_job(
        unique("idle"), expires_at=soon, stages=[NewStage(type=unique("none"), tasks=[NewTask()])]
    )
    assert idle.expires_at == soon
    assert started.stages is not None and started.stages[0].tasks is not None
    expiring, lasting = started.stages[0].tasks
    assert expiring.expires_at == soon
    if fake:
        surface.clock.advance(timedelta(seconds=11))
    else:
        clock.advance(timedelta(seconds=11))
        assert surface_url is not None
        database = Database(surface_url, pool_size=2, clock=clock)
        try:
            await expire(database)
        finally:
            await database.dispose()
    [claimed] = await surface.claim(kind, limit=5)
    assert claimed.id == lasting.id
    gone = await surface.get_task(expiring.id)
    assert (gone.status, gone.reason) == (TaskStatus.ABORTED, "expired")
    ended = await surface.get_job(idle.id)
    assert (ended.status, ended.reason) == (JobStatus.ABORTED, "expired")
    with pytest.raises(JobnikValidationError):
        await surface.create_job(unique("late"), expires_at=now - timedelta(seconds=1))
