"""What `wait()` tells of how a job ended, against the manager (SQLite and PostgreSQL,
through the SDK in-process) and the FakeJobnik, with the same expectations."""

from __future__ import annotations

from datetime import timedelta

from jobnik_sdk import JobStatus, NewStage, NewTask, StageStatus

from ..support.api import unique
from .conftest import Surface

QUICK = timedelta(milliseconds=10)


async def test_wait_returns_the_start_and_end_of_a_completed_job(surface: Surface) -> None:
    kind = unique("done")
    job = await surface.create_job(unique("job"), stages=[NewStage(type=kind, tasks=[NewTask()])])
    assert (job.start_time, job.end_time, job.reason) == (None, None, None)
    task = await surface.dequeue(kind)
    assert task is not None
    await surface.complete(task.id, lease_id=task.lease_id)

    done = await surface.wait(job.id, poll_interval=QUICK, timeout=timedelta(seconds=5))
    assert done.status is JobStatus.COMPLETED
    assert done.start_time is not None and done.end_time is not None
    assert done.start_time <= done.end_time
    assert (done.reason, done.failed_task_id, done.failed_stage_id) == (None, None, None)
    [stage] = await surface.get_job_stages(job.id)
    assert stage.start_time == done.start_time and stage.end_time is not None


async def test_wait_returns_why_a_job_failed_and_which_task_failed_it(surface: Surface) -> None:
    kind = unique("fails")
    job = await surface.create_job(
        unique("job"),
        stages=[NewStage(type=kind, tasks=[NewTask()]), NewStage(type=unique("next"))],
    )
    task = await surface.dequeue(kind)
    assert task is not None
    await surface.fail(task.id, lease_id=task.lease_id, reason="no such tile")

    failed = await surface.wait(job.id, poll_interval=QUICK, timeout=timedelta(seconds=5))
    assert failed.status is JobStatus.FAILED
    assert failed.reason == "no such tile"
    assert failed.failed_task_id == task.id
    assert failed.failed_stage_id == task.stage_id
    assert failed.end_time is not None
    first, second = await surface.get_job_stages(job.id)
    assert (first.status, first.reason) == (StageStatus.FAILED, "no such tile")
    assert (second.status, second.reason, second.end_time) == (StageStatus.CREATED, None, None)


async def test_wait_returns_who_aborted_a_job(surface: Surface) -> None:
    kind = unique("aborted")
    job = await surface.create_job(unique("job"), stages=[NewStage(type=kind, tasks=[NewTask()])])
    await surface.abort(job.id)

    aborted = await surface.wait(job.id, poll_interval=QUICK, timeout=timedelta(seconds=5))
    assert (aborted.status, aborted.reason) == (JobStatus.ABORTED, "aborted by user")
    assert aborted.start_time is None and aborted.end_time is not None
    [stage] = await surface.get_job_stages(job.id)
    assert (stage.status, stage.reason) == (StageStatus.ABORTED, "job aborted")
