"""Batch heartbeats and claims that wait for work, against the manager (SQLite and
PostgreSQL, through the SDK in-process) and the FakeJobnik, with the same expectations."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from jobnik_sdk import (
    JobnikValidationError,
    JobStatus,
    NewStage,
    NewTask,
    TaskHeartbeat,
    TaskStatus,
)

from ..support.api import unique
from .conftest import Surface


async def test_heartbeat_many_answers_each_lease_on_its_own(surface: Surface) -> None:
    kind = unique("beats")
    job = await surface.create_job(
        unique("job"), stages=[NewStage(type=kind, tasks=[NewTask(), NewTask()])]
    )
    first, second = await surface.claim(kind, limit=2, lease=timedelta(seconds=30))
    assert first.lease_id is not None and second.lease_id is not None
    before = datetime.now(UTC)

    answers = await surface.heartbeat_many(
        [
            TaskHeartbeat(task_id=first.id, lease_id=first.lease_id, progress=30),
            TaskHeartbeat(task_id=second.id, lease_id=uuid.uuid4()),
            TaskHeartbeat(task_id=uuid.uuid4(), lease_id=uuid.uuid4()),
        ],
        lease=timedelta(minutes=2),
    )
    assert [a.ok for a in answers] == [True, False, False]
    assert answers[0].task_id == first.id and answers[1].task_id == second.id
    renewed = answers[0].lease_expires_at
    assert renewed is not None
    assert timedelta(seconds=100) < renewed - before < timedelta(seconds=140)
    assert (answers[0].cancel_requested, answers[0].job_status) == (False, JobStatus.IN_PROGRESS)
    assert answers[1].error is not None and answers[1].error.code == "LEASE_LOST"
    assert answers[2].error is not None and answers[2].error.code == "TASK_NOT_FOUND"
    # The refused ones changed nothing; the good one took its progress.
    stored = await surface.get_task(first.id)
    assert (stored.progress, stored.status) == (30, TaskStatus.IN_PROGRESS)
    assert (await surface.get_task(second.id)).status is TaskStatus.IN_PROGRESS

    await surface.abort(job.id)
    [aborted] = await surface.heartbeat_many(
        [TaskHeartbeat(task_id=first.id, lease_id=first.lease_id)]
    )
    assert (aborted.ok, aborted.cancel_requested) == (True, True)

    with pytest.raises(JobnikValidationError):
        await surface.heartbeat_many([])


async def test_a_claim_that_waits_is_answered_when_work_becomes_ready(surface: Surface) -> None:
    kind = unique("wait")
    # Nothing is ready: the claim waits its time out and answers empty.
    assert await surface.claim(kind, wait=timedelta(milliseconds=200)) == []

    waiting = asyncio.create_task(surface.claim(kind, limit=5, wait=timedelta(seconds=30)))
    await asyncio.sleep(0.1)  # let the claim find nothing and start waiting
    assert not waiting.done()
    job = await surface.create_job(
        unique("job"), stages=[NewStage(type=kind, tasks=[NewTask(data={"n": 1})])]
    )
    async with asyncio.timeout(10):
        [task] = await waiting
    assert (task.data, task.status) == ({"n": 1}, TaskStatus.IN_PROGRESS)
    assert task.lease_id is not None
    assert (await surface.get_job(job.id)).status is JobStatus.IN_PROGRESS

    with pytest.raises(JobnikValidationError):
        await surface.claim(kind, wait=timedelta(seconds=61))
