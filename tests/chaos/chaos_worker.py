"""A worker process for the chaos test: SDK Worker with a 2 s lease, requests spread
round-robin over the manager replicas given in CHAOS_MANAGERS (comma-separated)."""

from __future__ import annotations

import asyncio
import logging
import os
import random
from datetime import timedelta
from typing import Any

from jobnik_sdk import JobnikClient, TaskContext

from ..support.worker_main import run_worker
from .round_robin import RoundRobinTransport


async def handle(data: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    # Long enough that SIGKILLs land mid-task, short enough for 2,000 tasks.
    await asyncio.sleep(random.uniform(0.01, 0.08))
    return {"seen": data["i"]}


def connect() -> JobnikClient:
    managers = os.environ["CHAOS_MANAGERS"].split(",")
    return JobnikClient(managers[0], transport=RoundRobinTransport(managers))


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
