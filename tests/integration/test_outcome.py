"""How a job and its stages ended, on both backends: start and end times, the reason of
a failure or an abort, and the task that failed the job. A v1 client that never looks
sees no new keys until they have values."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.maintenance.reaper import reap_expired

from ..support.api import Api, unique
from ..support.invariants import assert_invariants

OUTCOME_KEYS = {"startTime", "endTime", "reason", "failedTaskId", "failedStageId"}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


def _time(body: dict[str, Any], key: str) -> datetime:
    return datetime.fromisoformat(body[key])


async def _two_stage_job(api: Api, tasks: int = 2, **task_fields: Any) -> tuple[Any, Any, Any]:
    job = await api.create_job()
    first = await api.create_stage(job["id"], unique("first"))
    second = await api.create_stage(job["id"], unique("second"))
    await api.create_tasks(first["id"], tasks, **task_fields)
    await api.create_tasks(second["id"], 1)
    return job, first, second


async def test_a_completed_job_and_its_stages_carry_start_and_end(
    api: Api, db: Database, clock: ManualClock
) -> None:
    job, first, second = await _two_stage_job(api)
    created = await api.job(job["id"])
    assert not OUTCOME_KEYS & created.keys()  # nothing to say yet: the v1 shape

    clock.advance(timedelta(seconds=5))
    claimed = await api.dequeue(first["type"])
    assert claimed is not None
    started = await api.job(job["id"])
    assert _time(started, "startTime") == _time(claimed, "startTime")
    assert "endTime" not in started and "reason" not in started
    assert _time(await api.stage(first["id"]), "startTime") == _time(claimed, "startTime")
    assert "startTime" not in await api.stage(second["id"])

    await api.report(claimed["id"], "COMPLETED")
    clock.advance(timedelta(seconds=5))
    await api.run_one(first["type"])
    first_done = await api.stage(first["id"])
    assert _time(first_done, "endTime") - _time(first_done, "startTime") == timedelta(seconds=5)
    clock.advance(timedelta(seconds=5))
    await api.run_one(second["type"])

    done = await api.job(job["id"], should_return_stages="true")
    assert done["status"] == "COMPLETED"
    assert _time(done, "endTime") - _time(done, "startTime") == timedelta(seconds=10)
    assert not {"reason", "failedTaskId", "failedStageId"} & done.keys()
    for stage in done["stages"]:
        assert stage["status"] == "COMPLETED" and "reason" not in stage
        assert _time(stage, "startTime") <= _time(stage, "endTime") <= _time(done, "endTime")
    await assert_invariants(db)


async def test_a_failed_job_names_the_task_that_failed_it_and_its_reason(
    api: Api, db: Database
) -> None:
    job, first, second = await _two_stage_job(api)
    task = await api.dequeue(first["type"])
    assert task is not None
    await api.call(
        "PUT",
        f"/v1/tasks/{task['id']}/status",
        json={"status": "FAILED", "reason": "tile 7 is corrupt"},
    )
    failed = await api.job(job["id"], should_return_stages="true")
    assert failed["status"] == "FAILED"
    assert failed["reason"] == "tile 7 is corrupt"
    assert failed["failedTaskId"] == task["id"]
    assert failed["failedStageId"] == first["id"]
    assert "endTime" in failed and "startTime" in failed
    by_id = {st["id"]: st for st in failed["stages"]}
    assert by_id[first["id"]]["status"] == "FAILED"
    assert by_id[first["id"]]["reason"] == "tile 7 is corrupt"
    assert "endTime" in by_id[first["id"]]
    # A later stage keeps its status, as the reference does: it never ran, never ended.
    assert by_id[second["id"]]["status"] == "CREATED"
    assert not {"startTime", "endTime", "reason"} & by_id[second["id"]].keys()
    await assert_invariants(db)


async def test_a_failure_without_a_reason_and_an_expired_lease_are_named(
    api: Api, db: Database, clock: ManualClock
) -> None:
    silent, stage, _ = await api.one_stage_job("silent")
    await api.run_one(stage["type"], "FAILED")
    assert (await api.job(silent["id"]))["reason"] == "a task failed"

    lapsed, stage, [task] = await api.one_stage_job("lapsed")
    assert await api.dequeue(stage["type"]) is not None
    clock.advance(timedelta(hours=1))
    await reap_expired(db)
    body = await api.job(lapsed["id"])
    assert body["status"] == "FAILED" and body["reason"] == "lease expired"
    assert body["failedTaskId"] == task["id"]
    await assert_invariants(db)


async def test_an_aborted_job_says_who_aborted_it_and_its_stages_why(
    api: Api, db: Database
) -> None:
    job, first, second = await _two_stage_job(api, tasks=1)
    await api.run_one(first["type"])  # the first stage completes; the second is pending
    await api.set_job_status(job["id"], "ABORTED")
    aborted = await api.job(job["id"], should_return_stages="true")
    assert aborted["status"] == "ABORTED" and aborted["reason"] == "aborted by user"
    assert "failedTaskId" not in aborted and "endTime" in aborted
    by_id = {st["id"]: st for st in aborted["stages"]}
    assert "reason" not in by_id[first["id"]]
    assert by_id[second["id"]]["status"] == "ABORTED"
    assert by_id[second["id"]]["reason"] == "job aborted"
    assert "endTime" in by_id[second["id"]] and "startTime" not in by_id[second["id"]]
    await assert_invariants(db)


async def test_a_paused_job_that_completes_on_resume_ends_then(
    api: Api, db: Database, clock: ManualClock
) -> None:
    job, stage, _ = await api.one_stage_job("paused")
    task = await api.dequeue(stage["type"])
    assert task is not None
    await api.set_job_status(job["id"], "PAUSED")
    await api.report(task["id"], "COMPLETED")
    paused = await api.job(job["id"])
    assert paused["status"] == "PAUSED" and "endTime" not in paused
    clock.advance(timedelta(seconds=3))
    await api.set_job_status(job["id"], "PENDING")
    resumed = await api.job(job["id"])
    assert resumed["status"] == "COMPLETED"
    assert _time(resumed, "endTime") - _time(paused, "updateTime") == timedelta(seconds=3)
    await assert_invariants(db)
