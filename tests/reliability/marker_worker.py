"""A worker process whose handler leaves marker files, so a test can see when a task
started, finished or was cancelled: `<dir>/<task id>.<event>.<pid>` holding the time.
Heartbeats are numbered as their answers come back: a cancelled handler's marker holds
the number of the last one answered, and `<task id>.cancel-asked.<pid>` the number of
the first whose answer asked to cancel that task."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from jobnik_sdk import HeartbeatOutcome, JobnikClient, TaskContext, TaskHeartbeat

from ..support.worker_main import run_worker

MARKERS = Path(os.environ.get("MARKER_DIR", "."))


def mark(task_id: object, event: str, value: float | None = None) -> None:
    path = MARKERS / f"{task_id}.{event}.{os.getpid()}"
    path.write_text(repr(time.time() if value is None else value))


class NumberedHeartbeats(JobnikClient):
    answered = 0

    async def heartbeat_many(
        self, heartbeats: Sequence[TaskHeartbeat], *, lease: timedelta | None = None
    ) -> list[HeartbeatOutcome]:
        answers = await super().heartbeat_many(heartbeats, lease=lease)
        NumberedHeartbeats.answered += 1
        for answer in answers:
            asked = MARKERS / f"{answer.task_id}.cancel-asked.{os.getpid()}"
            if answer.cancel_requested and not asked.exists():
                mark(answer.task_id, "cancel-asked", NumberedHeartbeats.answered)
        return answers


async def handle(data: dict[str, Any], ctx: TaskContext) -> None:
    mark(ctx.task.id, "started")
    try:
        await asyncio.sleep(float(data.get("seconds", 0)))
    except asyncio.CancelledError:
        mark(ctx.task.id, "cancelled", NumberedHeartbeats.answered)
        raise
    mark(ctx.task.id, "finished")


if __name__ == "__main__":
    run_worker(
        lambda: NumberedHeartbeats(
            os.environ["MARKER_MANAGER"], token=os.environ.get("MARKER_TOKEN") or None
        ),
        stage_types=os.environ["MARKER_STAGE_TYPES"].split(","),
        handler=handle,
        concurrency=int(os.environ.get("MARKER_CONCURRENCY", "1")),
        lease=timedelta(seconds=float(os.environ.get("MARKER_LEASE", "2"))),
        heartbeat_interval=timedelta(seconds=float(os.environ.get("MARKER_HEARTBEAT", "0.5"))),
        poll_ms=(50, 200),
        name=os.environ.get("MARKER_NAME"),
        amqp_url=os.environ.get("MARKER_AMQP") or None,
        shutdown_grace=timedelta(seconds=float(os.environ.get("MARKER_GRACE", "30"))),
    )
