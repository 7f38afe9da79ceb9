"""A worker process whose handler leaves marker files, so a test can see when a task
started, finished or was cancelled: `<dir>/<task id>.<event>.<pid>` holding the time."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from jobnik_sdk import Backoff, JobnikClient, TaskContext, Worker

MARKERS = Path(os.environ.get("MARKER_DIR", "."))


def mark(ctx: TaskContext, event: str) -> None:
    (MARKERS / f"{ctx.task.id}.{event}.{os.getpid()}").write_text(repr(time.time()))


async def handle(data: dict[str, Any], ctx: TaskContext) -> None:
    mark(ctx, "started")
    try:
        await asyncio.sleep(float(data.get("seconds", 0)))
    except asyncio.CancelledError:
        mark(ctx, "cancelled")
        raise
    mark(ctx, "finished")


async def main() -> None:
    client = JobnikClient(os.environ["MARKER_MANAGER"])
    worker = Worker(
        client,
        stage_types=os.environ["MARKER_STAGE_TYPES"].split(","),
        handler=handle,
        concurrency=int(os.environ.get("MARKER_CONCURRENCY", "1")),
        lease=timedelta(seconds=float(os.environ.get("MARKER_LEASE", "2"))),
        heartbeat_interval=timedelta(seconds=float(os.environ.get("MARKER_HEARTBEAT", "0.5"))),
        poll_backoff=Backoff(
            initial=timedelta(milliseconds=50), maximum=timedelta(milliseconds=200)
        ),
        name=os.environ.get("MARKER_NAME"),
        amqp_url=os.environ.get("MARKER_AMQP") or None,
    )
    try:
        await worker.run()
    finally:
        await client.aclose()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    asyncio.run(main())
