"""A handler's `ctx.logger` is made when first used (a Worker makes a context for every
task), and an attempt's start and end lines are written only when the handler's logger
takes INFO: whichever way, the lines a handler's logger writes are the same."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from jobnik_sdk import ConsumerClient, Job, Stage, TaskContext
from jobnik_sdk._attempt import Attempt

from ..support.sdk_tasks import a_claimed_task

pytestmark = pytest.mark.unit


def a_context(logger: logging.Logger) -> TaskContext:
    now = datetime.now(UTC)
    job = Job(id=uuid.uuid4(), name="j", status="IN_PROGRESS", creation_time=now, update_time=now)
    stage = Stage(id=uuid.uuid4(), job_id=job.id, type="resize", order=1, status="IN_PROGRESS")
    task = a_claimed_task(stage_id=stage.id, data={"n": 1})
    return TaskContext(
        task=task, job=job, stage=stage, client=cast(ConsumerClient, None), logger=logger
    )


def test_the_logger_names_the_task_its_job_and_stage_type(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger("tests.ctx.names")
    ctx = a_context(logger)
    with caplog.at_level(logging.INFO, logger.name):
        ctx.logger.info("hello %s", "there")
    [record] = caplog.records
    assert record.getMessage() == (f"[resize task {ctx.task.id} of job {ctx.job.id}] hello there")
    assert (record.task_id, record.job_id, record.stage_type) == (  # type: ignore[attr-defined]
        str(ctx.task.id),
        str(ctx.job.id),
        "resize",
    )
    assert ctx.logger is ctx.logger  # made once


def test_a_logger_given_in_its_place_is_used_and_asked_for_its_level() -> None:
    ctx = a_context(logging.getLogger("tests.ctx.replaced"))
    quiet = logging.getLogger("tests.ctx.quiet")
    quiet.setLevel(logging.ERROR)
    mine = logging.LoggerAdapter(quiet)
    ctx.logger = mine
    assert ctx.logger is mine
    assert not ctx._logs_at(logging.INFO)
    assert ctx._logs_at(logging.ERROR)


@pytest.mark.parametrize("level", [logging.INFO, logging.WARNING])
async def test_an_attempt_says_when_it_starts_and_ends_only_at_info(
    level: int, caplog: pytest.LogCaptureFixture
) -> None:
    logger = logging.getLogger(f"tests.ctx.attempt.{level}")
    ctx = a_context(logger)
    attempt = Attempt(ctx.task, log=logger, on_progress=lambda: None)
    seen: list[Any] = []

    async def handler(data: Any, ctx: TaskContext) -> dict[str, int]:
        seen.append(data)
        ctx.logger.warning("working")
        return {"done": 1}

    with caplog.at_level(level, logger.name):
        result = await attempt.run(handler, lambda task: task.data, ctx)

    assert result == {"done": 1}
    assert seen == [{"n": 1}]
    lines = [r.getMessage().split("] ", 1)[1] for r in caplog.records if r.name == logger.name]
    if level == logging.INFO:
        assert lines[0] == "started (attempt 1 of 1)"
        assert lines[1] == "working"
        assert lines[2].startswith("done in ")
        assert len(lines) == 3
    else:
        assert lines == ["working"]
