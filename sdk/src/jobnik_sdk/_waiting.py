"""Polling a job until it finishes."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta

from ._exceptions import WaitTimeoutError
from ._models import Job

ProgressCallback = Callable[[Job], Awaitable[None] | None]


async def wait_for_job(
    get_job: Callable[[], Awaitable[Job]],
    *,
    poll_interval: timedelta,
    timeout: timedelta | None,  # noqa: ASYNC109 (see JobnikClient.wait)
    on_progress: ProgressCallback | None,
) -> Job:
    """Poll until the job is COMPLETED, FAILED or ABORTED and return it.

    `on_progress` sees the job the first time and whenever its status or percentage
    has changed since the last call.
    """
    if poll_interval <= timedelta(0):
        raise ValueError("poll_interval must be positive")
    deadline = None if timeout is None else time.monotonic() + timeout.total_seconds()
    last: tuple[object, int] | None = None
    while True:
        job = await get_job()
        seen = (job.status, job.percentage)
        if on_progress is not None and seen != last:
            outcome = on_progress(job)
            if inspect.isawaitable(outcome):
                await outcome
        last = seen
        if job.status.is_final:
            return job
        delay = poll_interval.total_seconds()
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeoutError(
                    f"job {job.id} is still {job.status} ({job.percentage}%) after {timeout}"
                )
            delay = min(delay, remaining)
        await asyncio.sleep(delay)
