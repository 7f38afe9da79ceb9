"""Building a handler's context, and running a handler once, as a worker would."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from .._context import TaskContext
from .._handler import Handler, data_binder
from .._models import Job, Stage, Task
from ._fake import FakeJobnik
from ._requests import JobIn, StageIn, TaskIn
from ._rows import job_out, stage_out


def make_context(
    data: Mapping[str, Any] | None = None,
    *,
    stage_type: str = "test-stage",
    user_metadata: Mapping[str, Any] | None = None,
    attempts: int = 0,
    max_attempts: int = 1,
    timeout_seconds: float | None = None,
    job_name: str = "test-job",
    job_data: Mapping[str, Any] | None = None,
    client: FakeJobnik | None = None,
    logger: logging.Logger | None = None,
) -> TaskContext:
    """A TaskContext for a task with `data`, claimed (IN_PROGRESS) in a one-stage job.

    `attempts` is how many attempts already failed, so `ctx.attempt` is one more;
    `timeout_seconds` is the task's time limit (a Worker stops its handler then).
    The job, stage and task live in `client`'s fake manager (a new FakeJobnik unless
    given), where `ctx.update_progress` and `ctx.set_user_metadata` write.
    """
    fake = client if client is not None else FakeJobnik()
    if not 0 <= attempts < max_attempts:
        raise ValueError("attempts counts failed attempts: 0 <= attempts < max_attempts")
    state = fake.manager._state
    task_spec = TaskIn(
        data=dict(data or {}),
        user_metadata=dict(user_metadata or {}),
        max_attempts=max_attempts,
        timeout_seconds=timeout_seconds,
    )
    job = state.create_job(
        JobIn(
            name=job_name,
            data=dict(job_data or {}),
            stages=[StageIn(type=stage_type, data={}, tasks=[task_spec])],
        )
    )
    stage = job.stages[0]
    task = stage.tasks[0]
    task.attempts = attempts
    claimed = state.claim([stage_type], limit=1, lease=None, worker=None)
    if claimed != [task]:
        raise ValueError(f"another {stage_type!r} task was ready in the given client")
    return TaskContext(
        task=Task.model_validate(task, from_attributes=True),
        job=Job.model_validate(job_out(job)),
        stage=Stage.model_validate(stage_out(stage)),
        client=fake,
        logger=logger,
    )


async def run_handler(
    handler: Handler[Any],
    data: Mapping[str, Any] | None = None,
    *,
    data_model: Any = None,
    context: TaskContext | None = None,
    **context_options: Any,
) -> TaskContext:
    """Run `handler` once on `data` the way a Worker would: validate the data into the
    handler's annotated type (NonRetryableError if it does not fit), build a context,
    await the handler. Exceptions from the handler propagate. Returns the context.

    `context_options` go to `make_context`; or pass a ready `context`.
    """
    ctx = context if context is not None else make_context(data, **context_options)
    argument = data_binder(handler, data_model)(ctx.task)
    await handler(argument, ctx)
    return ctx
