"""Building a handler's context, and running a handler once, as a worker would."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import update

from jobnik_manager.db.models import TASKS

from .._client import JobnikClient
from .._consumer import ClaimedTasks
from .._context import TaskContext
from .._handler import Handler, data_binder
from .._models import NewStage, NewTask
from . import _loop
from ._fake import FAKE_URL, FakeJobnik, FakeManager


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
    task = NewTask(
        data=dict(data or {}),
        user_metadata=dict(user_metadata or {}),
        max_attempts=max_attempts,
        timeout_seconds=timeout_seconds,
    )
    stage = NewStage(type=stage_type, tasks=[task])
    job = dict(name=job_name, data=dict(job_data or {}), stages=[stage])
    claimed = _loop.wait_on_manager_loop(_claimed(fake.manager, job, attempts))
    return TaskContext(
        task=claimed.items[0],
        job=claimed.jobs[0],
        stage=claimed.stages[0],
        client=fake,
        logger=logger,
    )


async def _claimed(manager: FakeManager, job: dict[str, Any], attempts: int) -> ClaimedTasks:
    """The job created and its one task claimed, after `attempts` failed attempts."""
    async with JobnikClient(FAKE_URL, transport=manager.transport) as client:
        created = await client.create_job(**job)
        [stage] = created.stages or []
        [task] = stage.tasks or []
        stage_type, task_id = stage.type, task.id
        if attempts:
            await _set_attempts(manager, task_id, attempts)
        claimed = await client.claim_with_context(stage_type)
    if [t.id for t in claimed.items] != [task_id]:
        raise ValueError(f"another {stage_type!r} task was ready in the given client")
    return claimed


async def _set_attempts(manager: FakeManager, task_id: uuid.UUID, attempts: int) -> None:
    # The attempts a task has spent are written by failures alone, which would each
    # need a claim and a report (and a retry delay to wait out): written here directly.
    statement = update(TASKS).where(TASKS.c.id == task_id).values(attempts=attempts)

    async def work(s: Any) -> None:
        await s.execute(statement)

    await manager._served.database.transaction(work)


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
