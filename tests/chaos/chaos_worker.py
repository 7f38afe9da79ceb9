"""A worker process for the chaos test: SDK Worker with a 2 s lease, its requests sent to
the deployment's one URL (the balancer in front of the replicas) with the worker token in
CHAOS_TOKEN (none on a deployment without authentication)."""

from __future__ import annotations

import asyncio
import logging
import os
import random
from datetime import timedelta
from typing import Any

from jobnik_sdk import JobnikClient, TaskContext

from ..support.worker_main import run_worker


async def handle(data: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    # Long enough that SIGKILLs land mid-task, short enough for 2,000 tasks.
    await asyncio.sleep(random.uniform(0.01, 0.08))
    return {"seen": data["i"]}


def connect() -> JobnikClient:
    return JobnikClient(os.environ["CHAOS_MANAGER_URL"], token=os.environ.get("CHAOS_TOKEN"))


if __name__ == "__main__":
    run_worker(
        connect,
        log_level=logging.WARNING,
        stage_types=os.environ["CHAOS_STAGE_TYPES"].split(","),
        handler=handle,
        concurrency=4,
        lease=timedelta(seconds=2),
        heartbeat_interval=timedelta(milliseconds=500),
        poll_ms=(20, 200),
        name=f"chaos-{os.getpid()}",
    )
