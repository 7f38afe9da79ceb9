"""A retry policy's non-retryable error types and jitter, from the SDK: the Worker
names each failure's exception class, so a handler raising a type its task's policy
names fails the task for good while another error is tried again; the policy's new
fields travel both ways. Against the FakeJobnik and the manager on PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from jobnik_sdk import NewStage, NewTask, Task, TaskContext, TaskReport, TaskRetryPolicy, TaskStatus

from ..support.api import unique
from ..support.workers import worker
from .conftest import Surface

DEADLINE = 10.0


class TileMissingError(Exception):
    """What a handler raises when its input can never be rendered."""


async def one_task(surface: Surface, stage: NewStage) -> Task:
    job = await surface.create_job(unique("job"), stages=[stage])
    assert job.stages is not None and job.stages[0].tasks is not None
    return job.stages[0].tasks[0]


async def settled(surface: Surface, task_id: Any) -> Task:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        task = await surface.get_task(task_id)
        if task.status in (TaskStatus.FAILED, TaskStatus.COMPLETED):
            return task
        await asyncio.sleep(0.02)
    raise AssertionError("the task did not settle")


async def test_a_handler_error_the_policy_names_fails_the_task_at_once(
    surface: Surface,
) -> None:
    kind = unique("named")
    policy = TaskRetryPolicy(
        initial_delay=timedelta(0), non_retryable_errors=("TileMissingError",), jitter=0.25
    )
    # Two jobs: the first task's failure ends its job, and would abort a sibling.
    missing, flaky = [
        await one_task(
            surface, NewStage(type=kind, retry_policy=policy, tasks=[NewTask(max_attempts=5)])
        )
        for _ in range(2)
    ]
    assert missing.retry_policy == policy
    runs: dict[Any, int] = {}

    async def render(data: dict[str, Any], ctx: TaskContext) -> None:
        runs[ctx.task.id] = runs.get(ctx.task.id, 0) + 1
        if ctx.task.id == missing.id:
            raise TileMissingError("no such tile: 12/2048/1361")
        if runs[ctx.task.id] < 3:
            raise OSError("the tile server hung up")

    async with worker(surface, kind, render):
        ended, done = await settled(surface, missing.id), await settled(surface, flaky.id)
    assert (ended.status, ended.attempts, runs[missing.id]) == (TaskStatus.FAILED, 1, 1)
    assert ended.reason == "TileMissingError: no such tile: 12/2048/1361"
    assert (done.status, done.attempts, runs[flaky.id]) == (TaskStatus.COMPLETED, 2, 3)


async def test_a_report_by_hand_may_name_its_error_type(surface: Surface) -> None:
    kind = unique("by-hand")
    policy = TaskRetryPolicy(initial_delay=timedelta(0), non_retryable_errors=("SchemaError",))
    await surface.create_job(
        unique("job"),
        stages=[NewStage(type=kind, tasks=[NewTask(max_attempts=3, retry_policy=policy)])],
    )
    (claimed,) = await surface.claim([kind])
    failed = await surface.fail(claimed.id, lease_id=claimed.lease_id, error_type="SchemaError")
    assert (failed.status, failed.attempts, failed.reason) == (TaskStatus.FAILED, 1, "SchemaError")


def test_bad_policies_and_reports_are_refused_before_they_are_sent() -> None:
    with pytest.raises(ValidationError):
        TaskRetryPolicy(initial_delay=timedelta(seconds=1), jitter=1.5)
    with pytest.raises(ValidationError):
        TaskRetryPolicy(initial_delay=timedelta(seconds=1), non_retryable_errors=("E",) * 51)
    with pytest.raises(ValidationError):
        TaskReport.model_validate(
            {"task_id": "t", "status": "RETRIED", "retry_after": 1, "error_type": "E"}
        )
    assert TaskRetryPolicy(initial_delay=timedelta(seconds=1)).retries("AnyError")
    named = TaskRetryPolicy(initial_delay=timedelta(seconds=1), non_retryable_errors=("KeyError",))
    assert not named.retries("KeyError") and named.retries("ValueError")
    assert TaskReport.failed("t", error_type="KeyError").body() == {
        "status": "FAILED",
        "errorType": "KeyError",
    }
