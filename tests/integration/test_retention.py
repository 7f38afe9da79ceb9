"""Retention on both backends: finished jobs that ended long enough ago are deleted with
their stages, tasks and events, in batches, never an unfinished one (a replayed job
included), while jobs are created and run; two replicas deleting at once delete each job
once. Time is moved by hand (the manager's clock), never waited for."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Event, Job, Stage, Task
from jobnik_manager.maintenance import retention
from jobnik_manager.maintenance.loop import run_maintenance

from ..support.api import Api, unique
from ..support.invariants import assert_invariants

WEEK = timedelta(days=7)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(retention, "BATCH", 3)
    yield


async def _rows(db: Database, job_ids: list[str]) -> dict[str, int]:
    ids = [uuid.UUID(j) for j in job_ids]
    async with db.sessions() as s:
        return {
            model.__name__: int(
                await s.scalar(
                    select(func.count()).where(
                        (model.id if model is Job else model.job_id).in_(ids)
                    )
                )
                or 0
            )
            for model in (Job, Stage, Task, Event)
        }


async def _done_job(api: Api) -> dict[str, Any]:
    kind = unique("old")
    job = await api.create_job(stages=[{"type": kind, "data": {}, "tasks": [{"data": {}}] * 2}])
    await api.run_one(kind)
    await api.run_one(kind)
    return job


async def test_old_finished_jobs_go_with_everything_under_them(
    api: Api, db: Database, clock: ManualClock, small_batches: None
) -> None:
    old = [await _done_job(api) for _ in range(5)]  # more than a batch
    aborted = await api.create_job()
    await api.set_job_status(aborted["id"], "ABORTED")
    running_kind = unique("running")
    running = await api.create_job(
        stages=[{"type": running_kind, "data": {}, "tasks": [{"data": {}}, {"data": {}}]}]
    )
    await api.run_one(running_kind)  # started long ago, not finished
    failing = unique("replayed")
    replayed = await api.create_job(stages=[{"type": failing, "data": {}, "tasks": [{"data": {}}]}])
    await api.run_one(failing, "FAILED")
    clock.advance(WEEK + timedelta(seconds=1))
    await api.call("POST", f"/v1/jobs/{replayed['id']}/retry")  # running again, not final
    recent = await _done_job(api)

    gone_ids = [j["id"] for j in [*old, aborted]]
    assert (await _rows(db, gone_ids))["Event"] > 0
    deleted = await retention.delete_finished_before(db, clock.now() - WEEK)
    assert sorted(map(str, deleted.job_ids)) == sorted(gone_ids)
    assert (deleted.jobs, deleted.stages, deleted.tasks) == (6, 5, 10)
    assert await _rows(db, gone_ids) == {"Job": 0, "Stage": 0, "Task": 0, "Event": 0}
    kept = [running["id"], replayed["id"], recent["id"]]
    assert (await _rows(db, kept))["Job"] == 3
    for job_id in gone_ids:
        await api.call("GET", f"/v1/jobs/{job_id}", 404)
    again = await retention.delete_finished_before(db, clock.now() - WEEK)
    assert again.jobs == 0
    await assert_invariants(db)


async def test_a_dry_run_counts_and_deletes_nothing(
    api: Api, db: Database, clock: ManualClock
) -> None:
    job = await _done_job(api)
    clock.advance(WEEK * 2)
    async with db.sessions() as s:
        counted = await retention.count_finished_before(s, clock.now() - WEEK)
    assert (counted.jobs, counted.stages, counted.tasks) == (1, 1, 2)
    assert (await _rows(db, [job["id"]]))["Job"] == 1


async def test_retention_while_jobs_are_created_and_run_loses_nothing_unfinished(
    api: Api, db: Database, clock: ManualClock, small_batches: None
) -> None:
    made: list[str] = []
    finished: set[str] = set()
    stop, enough = asyncio.Event(), asyncio.Event()

    async def producer() -> None:
        while not stop.is_set():
            kind = unique("busy")
            job = await api.create_job(
                stages=[{"type": kind, "data": {}, "tasks": [{"data": {}}, {"data": {}}]}]
            )
            made.append(job["id"])
            await api.run_one(kind)
            if len(made) % 2:
                await api.run_one(kind)
                finished.add(job["id"])
            clock.advance(timedelta(days=3))
            if len(made) >= 24:
                enough.set()

    async def deleter() -> int:
        total = 0
        while not stop.is_set():
            total += (await retention.delete_finished_before(db, clock.now() - WEEK)).jobs
            await asyncio.sleep(0)
        return total

    tasks = [asyncio.create_task(producer()), asyncio.create_task(deleter())]
    await asyncio.wait_for(enough.wait(), 30)
    stop.set()
    _, deleted = await asyncio.gather(*tasks)
    assert deleted > 0
    unfinished = [j for j in made if j not in finished]
    assert (await _rows(db, unfinished))["Job"] == len(unfinished), "an unfinished job was lost"
    await assert_invariants(db)


# PostgreSQL only: SQLite has one writer, so replicas cannot delete at the same moment.
async def test_two_replicas_deleting_at_once_delete_each_job_once(
    pg_db: Database, pg_api: Api, postgres_url: str, clock: ManualClock, small_batches: None
) -> None:
    jobs = [await _done_job(pg_api) for _ in range(12)]
    clock.advance(WEEK * 2)
    other = Database(postgres_url, pool_size=2, clock=clock)
    try:
        ours, theirs = await asyncio.gather(
            retention.delete_finished_before(pg_db, clock.now() - WEEK),
            retention.delete_finished_before(other, clock.now() - WEEK),
        )
    finally:
        await other.dispose()
    both = [*ours.job_ids, *theirs.job_ids]
    assert len(both) == len(set(both)) == len(jobs)
    assert {str(j) for j in both} == {j["id"] for j in jobs}
    await assert_invariants(pg_db)


async def test_the_managers_retention_rests_between_batches_and_holds_up_no_tick(
    api: Api, db: Database, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backlog of history is deleted beside the maintenance ticks, not inside one: a
    lease that runs out meanwhile is reaped while the deletion is still under way."""
    monkeypatch.setattr(retention, "BATCH", 1)
    old = [await _done_job(api) for _ in range(30)]
    clock.advance(WEEK * 2)
    kind = unique("held")
    await api.create_job(stages=[{"type": kind, "data": {}, "tasks": [{"data": {}}]}])
    held = await api.call("PATCH", f"/v1/stages/{kind}/tasks/dequeue", params={"lease_seconds": 5})
    loop = asyncio.create_task(
        run_maintenance(db, timedelta(milliseconds=20), retention=WEEK, build=None)
    )
    try:
        for _ in range(500):  # the deletion under way
            if (await _rows(db, [j["id"] for j in old]))["Job"] < len(old):
                break
            await asyncio.sleep(0.01)
        clock.advance(timedelta(seconds=10))  # the lease runs out now
        for _ in range(200):
            if (await api.task(held["id"]))["status"] != "IN_PROGRESS":
                break
            await asyncio.sleep(0.01)
        left_when_reaped = (await _rows(db, [j["id"] for j in old]))["Job"]
        for _ in range(500):
            if (await _rows(db, [j["id"] for j in old]))["Job"] == 0:
                break
            await asyncio.sleep(0.02)
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop
    assert (await api.task(held["id"]))["reason"] == "lease expired"
    assert left_when_reaped > 0, "the reaper waited for retention to finish"
    assert (await _rows(db, [j["id"] for j in old]))["Job"] == 0
    await assert_invariants(db)
