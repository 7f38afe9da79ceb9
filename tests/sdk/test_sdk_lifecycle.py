"""The lifecycle extensions through the SDK, against the manager (SQLite and PostgreSQL,
in-process) and the FakeJobnik with the same expectations: jobs by status, cancelling a
task, replaying a failed job, schedules and deadlines at creation, a stage's allowance
and time limit, and a Worker whose handlers emit events, report progress in words and
are stopped at their time limit."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import jobnik_sdk as sdk
from jobnik_sdk import JobStatus, NewStage, NewTask, TaskContext, TaskStatus, Worker

from ..support.api import unique
from .conftest import Surface

QUICK = sdk.Backoff(initial=timedelta(milliseconds=5), maximum=timedelta(milliseconds=20))
SOON = timedelta(seconds=10)


def _worker(surface: Surface, kind: str, handler: Any) -> Worker[Any]:
    """A Worker whose heartbeats are far apart: what a test sees comes from elsewhere."""
    return Worker(
        surface,
        stage_types=kind,
        handler=handler,
        poll_backoff=QUICK,
        handle_signals=False,
        lease=timedelta(minutes=5),
        heartbeat_interval=timedelta(seconds=30),
    )


async def _job(surface: Surface, kind: str, *tasks: NewTask, **options: Any) -> Any:
    return await surface.create_job(
        unique("job"), stages=[NewStage(type=kind, tasks=list(tasks) or [NewTask()])], **options
    )


async def test_jobs_are_listed_by_status(surface: Surface) -> None:
    name, kind = unique("listed"), unique("k")
    pending = await surface.create_job(name, stages=[NewStage(type=kind, tasks=[NewTask()])])
    aborted = await surface.create_job(name)
    await surface.abort(aborted.id)
    page = await surface.list_jobs(name=name, status=JobStatus.ABORTED)
    assert [j.id for j in page.items] == [aborted.id]
    both = [
        j.id
        async for j in surface.iter_jobs(name=name, status=[JobStatus.PENDING, JobStatus.ABORTED])
    ]
    assert both == [pending.id, aborted.id]


async def test_a_task_is_cancelled_and_a_failed_job_replayed(surface: Surface) -> None:
    kind = unique("cancel")
    job = await _job(surface, kind, NewTask(), NewTask(), NewTask())
    first = await surface.dequeue(kind)
    assert first is not None
    waiting = next(t for t in job.stages[0].tasks if t.id != first.id)
    cancelled = await surface.cancel_task(waiting.id, reason="not needed")
    assert (cancelled.status, cancelled.reason) == (TaskStatus.ABORTED, "not needed")
    await surface.fail(first.id, lease_id=first.lease_id, reason="boom")
    failed = await surface.get_job(job.id)
    assert (failed.status, failed.reason, failed.failed_task_id) == (
        JobStatus.FAILED,
        "boom",
        first.id,
    )
    replayed = await surface.retry_job(job.id)
    assert replayed.status is JobStatus.IN_PROGRESS and replayed.reason is None
    with pytest.raises(sdk.ConflictError) as refused:
        await surface.retry_job(job.id)
    assert refused.value.code == "JOB_NOT_FAILED"
    for _ in range(3):  # the failed one, the aborted-with-the-stage one, the cancelled one
        task = await surface.dequeue(kind)
        assert task is not None
        await surface.complete(task.id, lease_id=task.lease_id)
    assert (await surface.get_job(job.id)).status is JobStatus.COMPLETED


async def test_schedules_deadlines_allowances_and_limits_are_set_at_creation(
    surface: Surface,
) -> None:
    later = datetime.now(UTC) + timedelta(days=1)
    job = await surface.create_job(
        unique("job"),
        not_before=later,
        deadline=later + timedelta(hours=1),
        stages=[NewStage(type=unique("k"), tasks=[NewTask(timeout_seconds=30)])],
    )
    assert job.not_before == later and job.deadline == later + timedelta(hours=1)
    assert job.stages is not None and job.stages[0].tasks is not None
    assert job.stages[0].tasks[0].not_before == later
    assert job.stages[0].tasks[0].timeout_seconds == 30
    stage = await surface.add_stage(
        job.id, unique("k"), allowed_failures=2, timeout_seconds=60, tasks=[NewTask()]
    )
    assert (stage.allowed_failures, stage.timeout_seconds) == (2, 60)
    assert stage.tasks is not None and stage.tasks[0].timeout_seconds == 60
    with pytest.raises(ValueError, match="time zone"):
        await surface.create_job(unique("job"), not_before=datetime.now())


async def test_a_worker_emits_events_and_progress_in_words(surface: Surface) -> None:
    kind = unique("worded")
    job = await _job(surface, kind)
    told = asyncio.Event()

    async def handler(data: dict[str, Any], ctx: TaskContext) -> None:
        await ctx.emit("tile.rendered", "zoom 3", level="warning", tiles=12)
        await ctx.update_progress(40, message="writing tiles")
        await told.wait()

    async with _worker(surface, kind, handler):
        [task] = job.stages[0].tasks
        for _ in range(500):
            seen = await surface.get_task(task.id)
            if seen.progress_message is not None:
                break
            await asyncio.sleep(0.01)
        assert (seen.progress, seen.progress_message) == (40, "writing tiles")
        told.set()
        done = await surface.wait(job.id, timeout=SOON, poll_interval=timedelta(milliseconds=10))
    assert done.status is JobStatus.COMPLETED
    added = [e async for e in surface.iter_events(job.id) if e.name is not None]
    assert [(e.name, e.message, e.level, e.fields) for e in added] == [
        ("tile.rendered", "zoom 3", "warning", {"tiles": 12})
    ]
    assert (await surface.get_task(task.id)).progress == 100


async def test_a_worker_stops_a_handler_at_its_time_limit(surface: Surface) -> None:
    kind = unique("limited")
    job = await _job(surface, kind, NewTask(timeout_seconds=0.3))
    stopped = asyncio.Event()

    async def hangs(data: dict[str, Any], ctx: TaskContext) -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            stopped.set()
            raise

    async with _worker(surface, kind, hangs):
        began = asyncio.get_running_loop().time()
        await asyncio.wait_for(stopped.wait(), 5)
        # Stopped at its limit, not at the next heartbeat (30 s away).
        assert asyncio.get_running_loop().time() - began < 2
    # The worker reported nothing of it: the task is as the manager left it, running
    # until its maintenance tick times it out (the fake does so at its next call).
    [task] = job.stages[0].tasks
    settled = [
        (e.to_status, e.reason)
        async for e in surface.iter_events(job.id)
        if e.task_id == task.id and e.from_status == "IN_PROGRESS"
    ]
    assert settled in ([], [(TaskStatus.FAILED, "timed out")])


async def test_heartbeats_carry_counted_progress_and_words(surface: Surface) -> None:
    kind = unique("counted")
    await _job(surface, kind, NewTask(), NewTask())
    first, second = await surface.claim(kind, limit=2)
    assert first.lease_id is not None and second.lease_id is not None
    answers = await surface.heartbeat_many(
        [
            sdk.TaskHeartbeat(task_id=first.id, lease_id=first.lease_id, current=3, total=4),
            sdk.TaskHeartbeat(task_id=second.id, lease_id=second.lease_id, message="warming up"),
        ]
    )
    assert all(a.ok for a in answers)
    await surface.heartbeat(first.id, first.lease_id, message="three of four")
    one, two = await surface.get_task(first.id), await surface.get_task(second.id)
    assert (one.progress, one.progress_message) == (75, "three of four")
    assert (two.progress, two.progress_message) == (None, "warming up")
